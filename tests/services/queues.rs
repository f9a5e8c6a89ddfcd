//! The `queues` scenario end to end: each checker catches the seeded bug it
//! is meant for, the end-to-end and Q4 checks fail on doctored histories, none
//! fires on the unmodified model, the final pass decides the end-to-end
//! property, and a seed replays exactly.

use crate::budget::within_and_past_budget;
use overcast_harness::registry::DynScenario;
use overcast_harness::run::run_with;
use overcast_harness::scenario::Scenario;
use overcast_model::queue::{ItemStatus, QueueRequest};
use overcast_scenarios::services::queues::check::checkers;
use overcast_scenarios::services::queues::history::{QueueEvent, QueueHistory};
use overcast_scenarios::CATALOGUE;
use overcast_sim::check::{Outcome, Verdict};
use overcast_sim::history::NodeEvent;

fn queues() -> &'static dyn DynScenario {
    CATALOGUE.find("queues").expect("queues is registered")
}

fn with_bug(seed: u64, bug: &str) -> Scenario {
    let mut s = Scenario::new(queues(), seed);
    s.bugs = vec![bug.to_string()];
    s
}

/// The broken properties of one checker run over `h`.
fn broken(h: &QueueHistory, property: &str) -> bool {
    checkers()
        .iter()
        .filter(|c| c.properties()[0].id == property)
        .any(|c| matches!(c.check(h).verdict(), Verdict::Broken { .. }))
}

fn history(seed: u64) -> QueueHistory {
    let r = run_with(queues(), &Scenario::new(queues(), seed));
    assert!(r.passed(), "seed {seed}: {}", r.summary());
    serde_json::from_str(&r.history.to_json()).expect("a queues history")
}

#[test]
fn each_queue_checker_catches_its_bug_and_none_fires_on_the_unmodified_model() {
    for (bug, property) in [
        ("poll_returns_reserved", "Q2"),
        ("poll_ignores_priority", "Q1"),
        ("delete_current_queue", "Q7"),
        ("delete_current_queue", "end-to-end"),
        ("traverse_without_waiting", "Q8"),
        ("index_ignores_version", "Q6"),
        ("checkpoint_before_push", "Q9"),
        ("reservation_never_expires", "Q3"),
        ("requeue_keeps_time", "Q5"),
        ("stale_refusal_taken_as_done", "Q9"),
    ] {
        let caught = (0..200).any(|seed| {
            run_with(queues(), &with_bug(seed, bug))
                .violations()
                .iter()
                .any(|v| v.property == property)
        });
        assert!(caught, "{property} never caught {bug} in 200 seeds");
    }
    for seed in 0..100 {
        let r = run_with(queues(), &Scenario::new(queues(), seed));
        assert!(r.passed(), "seed {seed}: {}", r.summary());
    }
}

#[test]
fn a_wrong_status_after_a_push_breaks_q4_and_nothing_else() {
    let mut h = history(3);
    assert!(!broken(&h, "Q4"));
    let doctored = h.node_events.iter_mut().find_map(|e| match &mut e.event {
        QueueEvent::Logged { effect, .. }
            if matches!(effect.request, Some(QueueRequest::Push { .. }))
                && effect.completed.is_empty() =>
        {
            let item = &mut effect.items[0].1;
            item.status = if item.status == ItemStatus::Error {
                ItemStatus::Accepted
            } else {
                ItemStatus::Error
            };
            Some(())
        }
        _ => None,
    });
    assert!(doctored.is_some(), "the run logged a push");
    assert!(broken(&h, "Q4"));
    assert!(!broken(&h, "Q8") && !broken(&h, "Q9"));
}

#[test]
fn a_document_the_index_never_saw_breaks_the_end_to_end_property() {
    let mut h = history(4);
    assert!(!broken(&h, "end-to-end"));
    let last = h.node_events.last().map_or(0, |e| e.at_ns);
    // The repository changed after the final traversals read it.
    h.node_events.push(NodeEvent {
        node: "editor-0".into(),
        at_ns: last + 1,
        local_ms: 0,
        event: QueueEvent::Repo {
            id: "d999".into(),
            rev: 1,
            content: Some("d999 revision 1".into()),
            seq: 0,
        },
    });
    assert!(broken(&h, "end-to-end"));
}

#[test]
fn the_final_pass_decides_the_end_to_end_property_and_the_checks_see_real_work() {
    let r = run_with(queues(), &Scenario::new(queues(), 1));
    assert!(r.passed(), "{}", r.summary());
    let note = |p: &str| {
        r.checks
            .iter()
            .find(|c| c.name() == p)
            .map(|c| c.checked.note.clone())
            .unwrap_or_default()
    };
    assert!(
        note("end-to-end").ends_with("documents"),
        "{}",
        note("end-to-end")
    );
    assert!(!note("Q9").starts_with("0 "), "{}", note("Q9"));
    assert!(!note("Q7").contains(" 0 deletes"), "{}", note("Q7"));
    assert!(!note("Q1").starts_with("0 "), "{}", note("Q1"));
}

#[test]
fn the_run_header_prints_the_time_scale() {
    let params = queues().default_params(0);
    let header = queues().header(&params);
    assert!(
        header.contains("time scale 1/2000: reservation 4 h -> 7200 ms"),
        "{header}"
    );
}

#[test]
fn a_queues_seed_replays_with_the_same_trace() {
    let a = run_with(queues(), &Scenario::new(queues(), 7));
    let b = run_with(queues(), &Scenario::new(queues(), 7));
    assert_eq!(a.trace_hash, b.trace_hash);
    assert!(a.passed() && b.passed(), "{}", a.summary());
}

/// The properties a run of `s` stopped at `stop_ms` breaks (all of them,
/// when `stop_ms` is `None`).
fn broken_when_stopped(s: &Scenario, stop_ms: Option<u64>) -> Vec<String> {
    let mut s = s.clone();
    s.stop_ms = stop_ms;
    let mut v: Vec<String> = run_with(queues(), &s)
        .violations()
        .iter()
        .map(|v| v.property.to_string())
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Q1–Q6 are declared prefix-closed, so the shrinker stops a failing run
/// soon after its violation: a run stopped anywhere may break one of them
/// only if the whole run breaks it too (no false alarm from a stop), and a
/// stop after the violation still shows it.
#[test]
fn a_stopped_queues_run_breaks_a_prefix_closed_property_only_where_the_whole_run_does() {
    let all = [
        "end-to-end",
        "Q1",
        "Q2",
        "Q3",
        "Q4",
        "Q5",
        "Q6",
        "Q7",
        "Q8",
        "Q9",
    ];
    let closed_ones: Vec<&str> = all
        .into_iter()
        .filter(|p| queues().prefix_closed(overcast_sim::check::PropertyId::new(p)))
        .collect();
    assert_eq!(closed_ones, ["Q1", "Q2", "Q3", "Q4", "Q5", "Q6"]);
    let closed = |p: &str| closed_ones.contains(&p);
    let cases = [
        (None, "Q1"),
        (Some("poll_ignores_priority"), "Q1"),
        (Some("poll_returns_reserved"), "Q2"),
        (Some("requeue_keeps_time"), "Q5"),
        (Some("index_ignores_version"), "Q6"),
    ];
    for (bug, property) in cases {
        let mut shown = bug.is_none();
        for seed in 0..6 {
            for swarm in [false, true] {
                let mut s = Scenario::new(queues(), seed);
                s.bugs = bug.map(String::from).into_iter().collect();
                s.swarm = swarm;
                let whole = broken_when_stopped(&s, None);
                let end_ms = run_with(queues(), &s).world.sim_ns / 1_000_000;
                for eighth in 1..8 {
                    let stopped = broken_when_stopped(&s, Some(end_ms * eighth / 8));
                    for p in stopped.iter().filter(|p| closed(p)) {
                        assert!(
                            whole.contains(p),
                            "{bug:?} seed {seed} swarm {swarm} stopped at {eighth}/8: {p}, not in {whole:?}"
                        );
                    }
                    shown |= stopped.iter().any(|p| p == property);
                }
            }
        }
        assert!(shown, "{bug:?}: no stopped run shows {property}");
    }
}

/// The queues server mirrors its log on two disks and the connectors'
/// checkpoint logs take no corrupting fault within the budget: every run
/// passes there. Past it, a run passes or fails loudly and gives no wrong
/// answer: a server that refused service to the end leaves liveness and
/// the end-to-end property unjudged and says why, and a connector that
/// found its checkpoint log corrupt reports it and starts its full
/// traversal over (Q9 judged as ever).
#[test]
fn past_the_budget_a_queues_run_fails_loudly_and_gives_no_wrong_answer() {
    let (mut refused, mut unjudged, mut corrupt) = (0, 0, 0);
    within_and_past_budget(
        queues(),
        0..100,
        |_| true,
        |r| {
            let (seed, summary) = (r.seed, r.past.summary());
            if summary.contains("refused service from") {
                assert!(r.exceeded, "seed {seed}");
                assert_eq!(
                    r.past.outcome,
                    Outcome::FailedLoudly,
                    "seed {seed}: {summary}"
                );
                refused += 1;
            }
            // Connector 0 may also give its final pass up and finish: liveness
            // is then judged as ever.
            if summary.contains("could not finish past the fault budget") {
                assert!(
                    summary.contains("liveness held, partly judged"),
                    "seed {seed}: {summary}"
                );
                assert!(
                    summary.contains("refused service from"),
                    "seed {seed}: {summary}"
                );
                unjudged += 1;
            }
            corrupt += usize::from(summary.contains("corrupt checkpoint logs reported"));
        },
    );
    assert!(refused > 0, "no server refused service past the budget");
    assert!(unjudged > 0, "no run left liveness unjudged");
    assert!(corrupt > 0, "no connector found its checkpoint log corrupt");
}
