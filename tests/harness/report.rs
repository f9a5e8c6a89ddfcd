//! The failure page: every registered scenario draws one for a failing run
//! (here each with a seeded bug and a seed known to catch it), it is written
//! beside the saved failure, self-contained, names the violated property and
//! shows simulated seconds, never the history's raw nanoseconds; a passing
//! run has none.

use overcast_harness::run::{run_with, RunResult};
use overcast_harness::saved::save_failure;
use overcast_harness::scenario::Scenario;
use overcast_scenarios::CATALOGUE;

fn run(name: &str, seed: u64, bug: &str) -> RunResult {
    let def = CATALOGUE.find(name).expect("registered");
    let mut s = Scenario::new(def, seed);
    s.bugs = vec![bug.to_string()];
    run_with(def, &s)
}

/// Every invocation and return time of the history, in ns, as written in its JSON.
fn history_times(r: &RunResult) -> Vec<u64> {
    let doc: serde_json::Value = serde_json::from_str(&r.history.to_json()).expect("json");
    let mut out = Vec::new();
    for o in doc["ops"].as_array().expect("ops") {
        for k in ["invoke_ns", "return_ns"] {
            if let Some(t) = o[k].as_u64() {
                out.push(t);
            }
        }
    }
    out
}

/// The drawing's data embedded in the page.
fn page_data(page: &str) -> serde_json::Value {
    let start = r#"<script type="application/json" id="tl-data">"#;
    let at = page.find(start).expect("the data") + start.len();
    let end = at + page[at..].find("</script>").expect("its end");
    serde_json::from_str(&page[at..end]).expect("the data is JSON")
}

fn assert_is_a_failure_page(r: &RunResult) -> String {
    assert!(!r.passed(), "the run should fail: {}", r.summary());
    let page = r.html().expect("a failing run has a page").to_string();
    let property = r.first_property().expect("a property");
    assert!(
        page.contains(&format!("{} {property}", r.outcome.word())),
        "the page names the violated property {property}"
    );
    let outside_svg_namespace = page.replace("http://www.w3.org/2000/svg", "");
    assert!(
        !outside_svg_namespace.contains("http://") && !outside_svg_namespace.contains("https://"),
        "the page loads nothing from the network"
    );
    assert!(!page.contains("<script src") && !page.contains("<link"));
    let times = history_times(r);
    assert!(!times.is_empty());
    for t in times.iter().filter(|&&t| t >= 1_000_000) {
        assert!(
            !page.contains(&t.to_string()),
            "the page shows the raw time {t} ns"
        );
    }
    // Some operation's invocation, in seconds, is on the page.
    assert!(
        times
            .iter()
            .any(|&t| page.contains(&format!("{:.3} s", t as f64 / 1e9))),
        "the page shows times in seconds"
    );
    page
}

#[test]
fn a_failing_occ_run_gets_a_page_with_the_linearizability_counterexample_in_seconds() {
    let r = run("occ", 0, "skip_if_match");
    let page = assert_is_a_failure_page(&r);
    assert!(page.contains("The operations it names"));
    // The checker's own report is embedded, with the settled operations
    // that left the key in its start state, in seconds.
    assert!(page.contains("the checker&#39;s own report"));
    assert!(page.contains("How the key got there"));
    assert!(!page.contains("earlier operations"));
    // Every call, the liveness probe's included, is on a node's lane.
    let data = page_data(&page);
    let nodes: Vec<&str> = data["lanes"]
        .as_array()
        .expect("lanes")
        .iter()
        .filter(|l| !l["note"].as_str().unwrap_or("").is_empty())
        .map(|l| l["id"].as_str().expect("id"))
        .collect();
    for op in data["ops"].as_array().expect("ops") {
        let lane = op["lane"].as_str().expect("lane");
        assert!(nodes.contains(&lane), "op {} drawn on {lane}", op["id"]);
    }
    assert!(data["ops"]
        .as_array()
        .expect("ops")
        .iter()
        .any(|o| o["lane"] == "probe-0"));
    let dir = std::env::temp_dir().join(format!("overcast-report-{}", std::process::id()));
    let files = save_failure(CATALOGUE.find("occ").unwrap(), &r, &dir).expect("saved");
    let html = files.html.expect("the page is written beside the failure");
    assert!(html
        .to_string_lossy()
        .ends_with("occ-seed0-skip_if_match.html"));
    assert_eq!(std::fs::read_to_string(&html).expect("read"), page);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failing_leases_run_draws_each_holders_lease_as_the_server_saw_it_and_as_it_believed() {
    let r = run("leases", 25, "lease_expiry_on_client_clock");
    let page = assert_is_a_failure_page(&r);
    assert_eq!(r.first_property(), Some("L9".into()));
    assert!(page.contains("server's view") && page.contains("↳ belief"));
    assert!(page.contains(r#""kind":"held""#) && page.contains(r#""kind":"believed""#));
    // The two holders' beliefs the violation names are highlighted.
    let data = page_data(&page);
    let mut lanes: Vec<&str> = data["spans"]
        .as_array()
        .expect("spans")
        .iter()
        .filter(|s| s["kind"] == "believed" && s["hl"] == true)
        .map(|s| s["lane"].as_str().expect("lane"))
        .collect();
    lanes.dedup();
    assert!(
        lanes.len() >= 2,
        "both holders' beliefs are highlighted: {lanes:?}"
    );
    assert!(!data["clocks"].as_array().expect("clocks").is_empty());
}

#[test]
fn failing_cosmos_and_search_runs_get_a_page_too() {
    assert_is_a_failure_page(&run("cosmos", 0, "upsert_if_match_absent_412"));
    assert_is_a_failure_page(&run("search", 0, "search_if_none_match_ignored"));
}

#[test]
fn a_passing_run_has_no_page() {
    let def = CATALOGUE.find("occ").expect("registered");
    let r = run_with(def, &Scenario::new(def, 1));
    assert!(r.passed(), "{}", r.summary());
    assert!(r.page.is_none() && r.html().is_none());
}

#[test]
fn a_restarted_clients_operations_are_drawn_on_its_nodes_lane() {
    // Seed 14's clients crash and restart: a restarted client is a new
    // history client (client-6's third life is client 22), but its calls
    // belong on client-7's lane, and every lane an operation is drawn on is
    // a node of the run.
    let r = run("regions", 14, "stale_read_after_failover");
    let page = assert_is_a_failure_page(&r);
    let doc: serde_json::Value = serde_json::from_str(&r.history.to_json()).expect("json");
    let clients: Vec<u64> = doc["ops"]
        .as_array()
        .expect("ops")
        .iter()
        .map(|o| o["client"].as_u64().expect("client"))
        .collect();
    assert!(
        clients.iter().any(|&c| c >= 8),
        "the run has a restarted client (8 client nodes)"
    );
    let data = page_data(&page);
    let nodes: Vec<&str> = data["lanes"]
        .as_array()
        .expect("lanes")
        .iter()
        .filter(|l| l["note"].as_str().is_some_and(|n| n.starts_with("client")))
        .map(|l| l["id"].as_str().expect("id"))
        .collect();
    assert_eq!(nodes.len(), 8, "one lane per client node: {nodes:?}");
    // The checkers' "client 22" is tied to its node in the facts.
    assert!(page.contains("their client n is node client-(n mod 8)"));
    for op in data["ops"].as_array().expect("ops") {
        let lane = op["lane"].as_str().expect("lane");
        assert!(nodes.contains(&lane), "op {} drawn on {lane}", op["id"]);
    }
}
