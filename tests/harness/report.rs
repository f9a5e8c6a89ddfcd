//! The failure page: every registered scenario draws one for a failing run
//! (here each with a seeded bug and a seed known to catch it), it is written
//! beside the saved failure, self-contained, names the violated property and
//! shows simulated seconds, never the history's raw nanoseconds; a passing
//! run has none. Every page opens on its failure: what the violation names
//! is marked on its lanes, the drawing starts on the violation's window, the
//! checker's focused account comes before the lanes, and no Rust `Debug`
//! text reaches the page or the summary.

use overcast_harness::report::write_page_beside;
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
    // Seed 1: seed 0's counterexample has no settled operations before it.
    let r = run("occ", 1, "skip_if_match");
    let page = assert_is_a_failure_page(&r);
    assert!(page.contains("How item k0 got there"));
    // The checker's own report is embedded, with the settled operations
    // that left the key in its start state, in seconds.
    assert!(page.contains("the checker&#39;s full report"));
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
        .ends_with("occ-seed1-skip_if_match.html"));
    assert_eq!(std::fs::read_to_string(&html).expect("read"), page);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failing_leases_run_draws_each_holders_lease_as_the_server_saw_it_and_as_it_believed() {
    let r = run("leases", 52, "lease_expiry_on_client_clock");
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
    // Seed 30's clients crash and restart: a restarted client is a new
    // history client (8 client nodes, so a client numbered 8 or more is a
    // later life of one), but its calls belong on its node's lane, and every
    // lane an operation is drawn on is a node of the run.
    let r = run("regions", 30, "stale_read_after_failover");
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
    // A later life's client number is tied to its node in the facts.
    assert!(page.contains("their client n is node client-(n mod 8)"));
    for op in data["ops"].as_array().expect("ops") {
        let lane = op["lane"].as_str().expect("lane");
        assert!(nodes.contains(&lane), "op {} drawn on {lane}", op["id"]);
    }
}

/// One failing run per scenario: a seeded bug of the scenario (from the bug
/// table) and an early seed that catches it, with the property it breaks.
const FAILING: &[(&str, u64, &str)] = &[
    ("occ", 0, "skip_if_match"),
    ("leases", 36, "lease_expiry_on_client_clock"),
    ("leases", 1, "renew_after_write"),
    ("cosmos", 0, "upsert_if_match_absent_412"),
    ("search", 0, "search_if_none_match_ignored"),
    ("queues", 0, "poll_returns_reserved"),
    ("queues", 0, "delete_current_queue"),
    ("feed", 0, "checkpoint_before_delegate"),
    ("feed", 0, "feed_shows_deletes"),
    ("regions", 1, "commit_before_quorum"),
    ("occ-replicated", 1, "commit_before_quorum"),
];

/// Rust `Debug` text a person should never read: `Some(`, `None`, a
/// struct's `Name { field:`, or a list of quoted strings (`["a", "b"]`, on
/// a page `[&quot;a&quot;`).
fn debug_syntax(text: &str) -> Option<String> {
    for quoted_list in ["[\"", "[&quot;"] {
        if let Some(i) = text.find(quoted_list) {
            return Some(text[i.saturating_sub(60)..(i + 40).min(text.len())].to_string());
        }
    }
    if let Some(i) = text.find("Some(") {
        return Some(text[i.saturating_sub(60)..(i + 40).min(text.len())].to_string());
    }
    for (i, _) in text.match_indices("None") {
        let before = text[..i].chars().next_back();
        let after = text[i + 4..].chars().next();
        let word = |c: char| c.is_alphanumeric() || c == '-' || c == '_';
        if !before.is_some_and(word) && !after.is_some_and(word) {
            return Some(text[i.saturating_sub(60)..(i + 40).min(text.len())].to_string());
        }
    }
    let b = text.as_bytes();
    for (i, _) in text.match_indices(" { ") {
        // `Name { field:` — a capitalised word before, `word:` after.
        let start = text[..i]
            .rfind(|c: char| !c.is_alphanumeric())
            .map_or(0, |k| k + 1);
        let name = &text[start..i];
        let rest = &text[i + 3..];
        let field_end = rest.find(|c: char| !(c.is_ascii_lowercase() || c == '_'));
        let is_field = field_end.is_some_and(|k| k > 0 && rest[k..].starts_with(':'));
        if name.len() > 1 && b[start].is_ascii_uppercase() && is_field {
            return Some(text[start.saturating_sub(30)..(i + 40).min(text.len())].to_string());
        }
    }
    None
}

/// Every string value in `v`, however deep.
fn strings_in(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|i| strings_in(i, out)),
        serde_json::Value::Object(fields) => fields.values().for_each(|i| strings_in(i, out)),
        _ => {}
    }
}

/// The page without its scripts: the drawing's code and its data (JSON,
/// whose lists are quoted strings), not text a person reads as written.
fn page_text(page: &str) -> String {
    let mut text = page.to_string();
    while let Some(a) = text.find("<script") {
        let b = a + text[a..].find("</script>").expect("a closed script");
        text.replace_range(a..b + "</script>".len(), "");
    }
    text
}

#[test]
fn the_debug_check_finds_what_it_looks_for() {
    assert!(debug_syntax("left Some(Lease { id: 5 })").is_some());
    assert!(debug_syntax("state None, then").is_some());
    assert!(debug_syntax("a RefLease { expire_ms: 3 }").is_some());
    assert!(debug_syntax("lease 5f3c… (fixed 15 s, broken); NoneSuch {x}").is_none());
    assert!(debug_syntax("put k1 If-None-Match * → 412").is_none());
    assert!(debug_syntax(r#"last fault: partition ["a", "b"] <-> ["c"]"#).is_some());
    assert!(debug_syntax("partition [&quot;a&quot;] &lt;-&gt;").is_some());
    assert!(debug_syntax("partition a, b ⇹ c for 5 ms; range [40-80)").is_none());
}

#[test]
fn a_fault_quoted_in_a_message_names_its_nodes_in_plain_lists() {
    // The feed's CF3 message quotes the owner's last fault, here a partition
    // (the hunt's first catch of this bug in swarm mode).
    let def = CATALOGUE.find("feed").expect("registered");
    let s = overcast_harness::hunt::hunt_scenario_in(def, 1, "page_cut_splits_batch", true);
    let r = run_with(def, &s);
    let summary = r.summary();
    assert!(
        summary.contains("last fault of host-4 at 29.684 s: partition "),
        "{summary}"
    );
    assert_eq!(debug_syntax(&summary), None);
    let page = assert_page_opens_on_its_failure(&r, "feed seed 1 swarm page_cut_splits_batch");
    assert!(page.message.contains(" ⇹ "), "{}", page.message);
}

#[test]
fn the_queue_item_s_path_marks_the_poll_whose_reservation_was_crossed() {
    let r = run("queues", 0, "poll_returns_reserved");
    let lead = assert_page_opens_on_its_failure(&r, "queues seed 0 poll_returns_reserved");
    assert_eq!(lead.property.as_str(), "Q2", "{}", lead.message);
    let account = lead.evidence.expect("an account");
    let marked: Vec<&Vec<String>> = account
        .rows
        .iter()
        .filter(|r| r.marked)
        .map(|r| &r.cells)
        .collect();
    assert_eq!(marked.len(), 2, "{marked:?}");
    // The earlier poll reserved d002; the later one returned it anyway.
    assert!(marked[0][1].starts_with("poll ") && marked[1][1].starts_with("poll "));
    assert!(
        marked[0][2].contains("reserved until 28.400 s true"),
        "{marked:?}"
    );
    assert_eq!(account.rows.last().map(|r| r.marked), Some(true));
    // The message tells the reservation's end as the path does.
    assert!(
        lead.message
            .contains("reserved until 28.400 s true, 28.814 s on server-0's clock"),
        "{}",
        lead.message
    );
}

#[test]
fn a_cosmos_batch_s_operations_are_named_by_their_step_and_a_delete_by_its_204() {
    let r = run("cosmos", 5, "upsert_if_match_absent_412");
    let lead = assert_page_opens_on_its_failure(&r, "cosmos seed 5 upsert_if_match_absent_412");
    // #165 is a batch whose second step is the upsert; #6 a create; #59 one delete.
    assert!(
        lead.message.contains("operation #165 step 2 by client 4"),
        "{}",
        lead.message
    );
    let account = lead.evidence.expect("an account");
    let firsts: Vec<&str> = account.rows.iter().map(|r| r.cells[0].as_str()).collect();
    assert_eq!(firsts, ["#6", "#59", "#165 step 2"], "{account:?}");
    assert!(
        account.rows[1].cells.iter().any(|c| c == "delete → 204"),
        "{account:?}"
    );
}

#[test]
fn the_replicas_account_marks_the_entry_the_log_did_not_keep() {
    // Two readers applied an uncommitted entry of term 2 at LSN 12; a
    // failover replaced it with term 8's, which every replica then applied.
    let r = run("regions", 16, "learner_reads_uncommitted");
    let lead = assert_page_opens_on_its_failure(&r, "regions seed 16 learner_reads_uncommitted");
    let account = lead.evidence.expect("an account");
    let rows: Vec<(&str, bool)> = account
        .rows
        .iter()
        .map(|r| (r.cells[2].as_str(), r.marked))
        .collect();
    assert!(rows.iter().any(|(_, marked)| *marked), "{rows:?}");
    for (entry, marked) in &rows {
        assert_eq!(
            *marked,
            entry.starts_with("term 2 "),
            "the uncommitted term-2 rows are marked, the term-8 rows not: {rows:?}"
        );
    }
    let words = account.lead.join(" ");
    assert!(
        words.contains("reader-1, reader-0 applied term 2 (digest 704bd531) at LSN 12 from 20.437 s, an entry the log did not keep")
            && words.contains("applied an uncommitted entry"),
        "{words}"
    );
}

#[test]
fn every_scenario_opens_its_failure_page_on_the_violation_with_its_account_first() {
    let mut scenarios: Vec<&str> = FAILING.iter().map(|f| f.0).collect();
    scenarios.dedup();
    for name in CATALOGUE.names() {
        assert!(scenarios.contains(&name), "{name} has no failing run here");
    }
    for &(name, seed, bug) in FAILING {
        let info = overcast_scenarios::bugs::find(bug).expect("in the bug table");
        assert!(info.scenarios.contains(&name), "{bug} belongs to {name}");
        let r = run(name, seed, bug);
        assert_page_opens_on_its_failure(&r, &format!("{name} seed {seed} {bug}"));
    }
}

/// Every seeded bug of the table with the first seed its hunt catches it on
/// (`overcast bugs --json --no-shrink`, the mix without swarm): the run is
/// the bug's hunt scenario on that seed.
const FIRST_CATCH: &[(&str, u64)] = &[
    ("skip_if_match", 0),
    // Seed 0's first named call spans too narrow a sliver of its view to
    // open the page on; 1 is the next catch.
    ("retry_write_after_timeout", 1),
    ("not_sent_taken_as_unknown", 1),
    ("retry_after_cancel", 0),
    ("retry_after_stretched", 0),
    ("ignore_retry_after", 0),
    ("retry_with_on_gone_backoff", 20),
    ("transport_retries_throttled", 0),
    // The first catches, seeds 0 and 1, name first a write that spans too
    // narrow a sliver of its view to open the page on; 2 is the next.
    ("ack_before_sync", 2),
    ("group_commit_off_by_one", 0),
    ("read_unsynced", 29),
    ("etag_reuse", 0),
    ("no_dedup", 0),
    ("retry_fsync_after_error", 0),
    ("skip_crc_on_replay", 5),
    ("torn_tail_as_end", 39),
    ("dedup_without_session", 0),
    ("rmw_blind_fallback", 2),
    ("replace_answers_200", 0),
    ("same_body_keeps_etag", 0),
    ("restart_drops_partition", 0),
    ("last_modified_rounded", 0),
    ("lease_expiry_on_client_clock", 36),
    ("lease_trust_full_duration", 36),
    ("break_ignores_period", 0),
    ("renew_after_write", 1),
    ("write_without_lease_check", 0),
    ("acquire_not_idempotent_retry", 0),
    ("lease_id_reuse", 1),
    ("container_delete_ignores_lease", 1),
    ("renew_refused_when_expired", 3),
    ("write_blocked_by_lapsed_lease", 6),
    ("repair_skips_checksum", 154),
    ("mirror_ack_after_one_copy", 67),
    ("upsert_if_match_absent_412", 0),
    ("replace_missing_412", 0),
    ("batch_partial_commit", 0),
    ("cosmos_upsert_keeps_etag", 0),
    ("search_concurrent_update_not_serialized", 0),
    ("search_sdk_ignores_only_if_unchanged", 3),
    ("search_if_none_match_ignored", 0),
    ("poll_returns_reserved", 0),
    ("poll_ignores_priority", 0),
    ("delete_current_queue", 0),
    ("traverse_without_waiting", 0),
    ("index_ignores_version", 1),
    ("checkpoint_before_push", 0),
    ("reservation_never_expires", 1),
    ("requeue_keeps_time", 0),
    // Seed 2's first named item spans too narrow a sliver of its view to
    // open the page on; 4 is the next catch.
    ("stale_refusal_taken_as_done", 4),
    ("checkpoint_before_delegate", 0),
    ("checkpoint_without_owner_check", 0),
    ("resume_from_memory", 0),
    ("drop_batch_on_delegate_error", 0),
    ("split_loses_continuation", 0),
    ("expiry_on_wrong_clock", 0),
    ("page_cut_splits_batch", 4),
    ("page_cut_keeps_log_end", 0),
    ("split_range_still_served", 0),
    ("split_keeps_parent", 0),
    ("feed_shows_deletes", 0),
    ("page_sorted_by_id", 0),
    ("lagging_replica_304", 0),
    ("session_token_ignored", 1),
    ("failover_loses_committed", 0),
    // The first catch, seed 0, names first a write that spans too narrow a
    // sliver of its view to open the page on; 1 is the next.
    ("commit_before_quorum", 1),
    ("replica_ack_before_sync", 0),
    ("stale_read_after_failover", 28),
    ("leader_lease_no_skew_margin", 21),
    ("session_token_merged_min", 1),
    ("region_retry_loop", 0),
    ("vote_twice", 19),
    // The first catch, seed 0, names first an operation that spans too narrow a
    // sliver of its view to open the page on; 1 is the next.
    ("learner_reads_uncommitted", 1),
    ("removed_region_retried", 0),
    ("gone_backoff_stretched", 0),
    ("session_loop_waits_stretched", 1),
    ("failover_waits_stretched", 0),
    ("read_fails_over_at_once", 0),
    ("metadata_ignores_lease", 0),
    ("metadata_keeps_etag", 0),
    ("head_ignores_if_match", 0),
];

#[test]
fn every_seeded_bug_s_page_opens_on_its_violation_with_an_account_and_no_debug_text() {
    for b in overcast_scenarios::bugs::BUGS {
        assert!(
            FIRST_CATCH.iter().any(|(n, _)| *n == b.name),
            "{} has a seed here",
            b.name
        );
    }
    for &(bug, seed) in FIRST_CATCH {
        let info = overcast_scenarios::bugs::find(bug).expect("in the bug table");
        let name = info.scenarios[0];
        let def = CATALOGUE.find(name).expect("registered");
        let what = format!("{name} seed {seed} {bug}");
        let r = run_with(def, &overcast_harness::hunt::hunt_scenario(def, seed, bug));
        let lead = assert_page_opens_on_its_failure(&r, &what);
        assert!(
            lead.evidence.is_some(),
            "{what}: [{}] carries no account: {}",
            lead.property,
            lead.message
        );
    }
}

/// Asserts that `r`'s failure page opens on its failure: what the leading
/// violation names is marked, the view lies on its window, the focused
/// account comes before the lanes, no Debug text reaches the page or the
/// summary, and every check is named once and says what it means. The
/// leading violation.
fn assert_page_opens_on_its_failure(r: &RunResult, what: &str) -> overcast_sim::check::Violation {
    {
        let page = assert_is_a_failure_page(r);
        let lead = r
            .violations()
            .into_iter()
            .find(|v| Some(v.property) == r.first_property())
            .expect("the violation that names the outcome")
            .clone();
        assert!(
            !lead.ops.is_empty() || !lead.moments.is_empty(),
            "{what}: [{}] names no operation or moment: {}",
            lead.property,
            lead.message
        );
        let data = page_data(&page);
        // (a) What it names is marked: its operations on their lanes as
        // the lead (2), its moments as highlighted marks or spans.
        for id in &lead.ops {
            let op = data["ops"]
                .as_array()
                .expect("ops")
                .iter()
                .find(|o| o["id"] == *id)
                .unwrap_or_else(|| panic!("{what}: op {id} is drawn"));
            assert_eq!(op["hl"], 2, "{what}: op {id} is marked as named");
        }
        let marked_moments = data["marks"]
            .as_array()
            .expect("marks")
            .iter()
            .chain(data["spans"].as_array().expect("spans"))
            .filter(|m| m["hl"] == true)
            .count();
        assert!(
            marked_moments >= lead.moments.len(),
            "{what}: its {} moments are marked ({marked_moments} marked)",
            lead.moments.len()
        );
        // (b) The drawing opens on the violation's window: the view lies on
        // the window, holds its first named item, and that item is not a
        // sliver of it.
        let pair = |v: &serde_json::Value| (v[0].as_f64().unwrap(), v[1].as_f64().unwrap());
        let (fa, fb) = pair(&data["focus"]);
        let (va, vb) = pair(&data["view"]);
        let end = data["end"].as_f64().unwrap();
        assert!(
            va <= fb && vb >= fa,
            "{what}: view {va}–{vb} on window {fa}–{fb}"
        );
        assert!(
            vb - va < end * 0.5,
            "{what}: the view {va}–{vb} is not the whole run ({end})"
        );
        let first = match lead.ops.first() {
            Some(id) => {
                let op = data["ops"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|o| o["id"] == *id)
                    .unwrap();
                let a = op["a"].as_f64().unwrap();
                (a, op["b"].as_f64().unwrap_or(a))
            }
            None => {
                let m = &lead.moments[0];
                (m.start_ns as f64 / 1e9, m.end_ns as f64 / 1e9)
            }
        };
        assert!(
            va <= first.0 && vb >= first.0,
            "{what}: the first named item at {} s is in the view {va}–{vb}",
            first.0
        );
        assert!(
            (first.1 - first.0).min(vb - va) * 200.0 >= (vb - va) || first.1 == first.0,
            "{what}: the first named item ({}–{}) is a sliver of the view {va}–{vb}",
            first.0,
            first.1
        );
        assert!(
            page.contains("toViolation()"),
            "the script opens on the view"
        );
        // (c) The focused account comes before the lanes.
        let lanes = page.find("id=\"tl\"").expect("the lanes");
        let account = page
            .find("<section class=\"evidence\">")
            .or_else(|| page.find("The operations it names"))
            .unwrap_or_else(|| panic!("{what}: a focused account"));
        assert!(
            account < lanes,
            "{what}: the account comes before the lanes"
        );
        if lead.evidence.is_some() {
            assert!(page.find("<section class=\"evidence\">").unwrap() < lanes);
        }
        // (d) No Debug text on the page or in the summary.
        let text = page_text(&page);
        if let Some(bad) = debug_syntax(&text) {
            panic!("{what}: Debug text on the page: …{bad}…");
        }
        // Nor in the words the drawing shows (labels and hover details).
        let mut shown = Vec::new();
        strings_in(&data, &mut shown);
        for words in shown {
            if let Some(bad) = debug_syntax(&words) {
                panic!("{what}: Debug text in the drawing: …{bad}…");
            }
        }
        if let Some(bad) = debug_syntax(&r.summary()) {
            panic!("{what}: Debug text in the summary: …{bad}…");
        }
        // Every check is named once, and says what it means.
        let names: Vec<String> = r.checks.iter().map(|c| c.title()).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{what}: check names {names:?}");
        for c in &r.checks {
            for p in c.properties {
                assert!(
                    page.contains(&overcast_sim::timeline::esc(p.meaning)),
                    "{what}: the page says what {} means",
                    p.id
                );
            }
        }
        lead
    }
}

#[test]
fn the_summary_and_the_page_count_the_operations_alike_and_faults_are_only_faults() {
    let r = run("occ", 0, "skip_if_match");
    let count = r.op_count();
    assert!(count.checks > 0, "occ's probe makes calls of its own");
    assert_eq!(
        count.client + count.checks,
        r.history.ops(),
        "the two parts make the whole history"
    );
    assert_eq!(
        count.client,
        r.history.workload_ops(),
        "what a shrink counts"
    );
    let words = count.to_string();
    assert!(r.summary().contains(&format!("ops     {words}")));
    let page = r.html().expect("a page");
    assert!(page.contains(&overcast_sim::timeline::esc(&words)));
    // Counters that are not faults are not counted as faults.
    assert!(r.counters.contains_key("max_unsynced_records"));
    let faults_line = r
        .summary()
        .lines()
        .find(|l| l.starts_with("faults"))
        .expect("faults line")
        .to_string();
    assert!(
        !faults_line.contains("max_unsynced_records"),
        "{faults_line}"
    );
    assert!(
        r.summary().contains("max_unsynced_records×"),
        "on the counted line"
    );
    let injected: u64 = r.world.faults.values().sum::<u64>()
        + r.counters
            .iter()
            .filter(|(k, _)| overcast_harness::run::is_fault(k))
            .map(|(_, n)| n)
            .sum::<u64>();
    assert!(faults_line.starts_with(&format!("faults  {injected} injected")));
}

#[test]
fn a_run_s_page_is_written_beside_a_saved_file_as_shrink_and_replay_do() {
    let r = run("occ", 0, "skip_if_match");
    let dir = std::env::temp_dir().join(format!("overcast-beside-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let saved = dir.join("occ-seed0-skip_if_match.shrunk.json");
    let page = write_page_beside(&r, &saved)
        .expect("written")
        .expect("a failing run has a page");
    assert_eq!(page, dir.join("occ-seed0-skip_if_match.shrunk.html"));
    assert_eq!(std::fs::read_to_string(&page).unwrap(), r.html().unwrap());
    let def = CATALOGUE.find("occ").unwrap();
    let passing = run_with(def, &Scenario::new(def, 1));
    assert!(write_page_beside(&passing, &dir.join("pass.json"))
        .unwrap()
        .is_none());
    let _ = std::fs::remove_dir_all(&dir);
}
