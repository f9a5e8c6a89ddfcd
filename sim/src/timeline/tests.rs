//! Tests of the timeline: lanes, marks and the rendered page.
use super::*;
use crate::faults::{Fault, FaultEvent};

fn ev(at_ms: u64, what: &str) -> WorldEvent {
    WorldEvent {
        at_ns: at_ms * 1_000_000,
        what: Happening::read(what),
    }
}

#[test]
fn crashes_pauses_partitions_and_skewed_clocks_become_spans_bands_and_lines() {
    let topo = Topology::new(vec![
        crate::world::Role::new("server", 1).with_disk().crashable(),
        crate::world::Role::new("client", 2).awaited(),
    ]);
    let mut plan = FaultPlan::none();
    plan.clocks.insert(
        "client-1".into(),
        ClockSkew {
            offset_ms: -1800,
            drift_ppm: 0,
            steps: vec![(2_000, 500)],
            rate_changes: Vec::new(),
        },
    );
    plan.events.push(FaultEvent {
        at_ms: 1,
        fault: Fault::Pause {
            node: "server-0".into(),
            for_ms: 5,
        },
    });
    let events = vec![
        ev(1_000, "crash server-0 for 500 ms"),
        ev(1_500, "restart server-0"),
        ev(
            2_000,
            "partition [\"server-0\"] <-> [\"client-0\"] for 4000 ms",
        ),
        ev(3_000, "heal"),
        ev(4_000, "end"),
    ];
    let mut t = Timeline::new("t", 4_000_000_000);
    let lost = BTreeMap::from([("server-0".to_string(), 2)]);
    t.add_world(&topo, &plan, &events, &lost);
    assert_eq!(t.lanes.len(), 3);
    assert_eq!(t.spans.len(), 1);
    assert_eq!(
        (t.spans[0].start_ns, t.spans[0].end_ns),
        (1_000_000_000, Some(1_500_000_000))
    );
    // The partition ends at the heal, not at its planned end.
    assert_eq!(t.bands[0].end_ns, 3_000_000_000);
    assert_eq!(t.clocks.len(), 1);
    let pts = &t.clocks[0].points;
    assert_eq!(pts[0], (0, -1800.0));
    assert_eq!(pts.last().copied(), Some((4_000_000_000, -1300.0)));
    assert!(t
        .marks
        .iter()
        .any(|m| m.lane == "server-0" && m.at_ns == 1_000_000_000));
}

#[test]
fn the_page_is_self_contained_and_shows_seconds() {
    let mut t = Timeline::new("occ seed 3: linearizability violated", 2_500_000_000);
    t.lane("client-0", "client-0", "client");
    let op = OpRecord {
        id: 7,
        client: 0,
        key: "k".to_string(),
        call: "put",
        invoke_ns: 1_234_567_891,
        return_ns: Some(1_240_000_000),
        result: Some(200u16),
        attempts: vec![],
    };
    let lost = OpRecord {
        id: 8,
        invoke_ns: 2_000_000_000,
        return_ns: None,
        result: None,
        ..op.clone()
    };
    t.add_ops(
        [&op, &lost],
        |_| "client-0".into(),
        |o| (format!("{} k", o.call), Tone::Ok),
    );
    t.highlight.insert(7);
    t.findings.push(Finding {
        property: "linearizability".into(),
        kind: "VIOLATION".into(),
        message: "item k: <b> read saw a value never written".into(),
    });
    let page = t.to_html();
    assert!(page.contains("VIOLATION linearizability"));
    assert!(page.contains("1.235 s"));
    assert!(!page.contains("1234567891"));
    assert!(!page.contains("<b> read"), "text is escaped");
    assert_eq!(t.ops[1].tone, Tone::Unknown);
    assert_eq!(t.focus(), Some((1_234_567_891, 1_240_000_000)));
    let without_ns = page.replace("http://www.w3.org/2000/svg", "");
    assert!(!without_ns.contains("http://") && !without_ns.contains("https://"));
    assert!(!page.contains("<script src") && !page.contains("<link"));
}

#[test]
fn the_finding_that_names_the_outcome_is_shown_and_the_others_are_folded_under_one_line() {
    let mut t = Timeline::new("feed seed 0: CF4 violation", 1_000_000_000);
    for i in 0..10 {
        t.findings.push(Finding {
            property: "CF4".into(),
            kind: "VIOLATION".into(),
            message: format!("checkpoint {i} before its delegate returned"),
        });
    }
    t.findings.push(Finding {
        property: "CF1".into(),
        kind: "VIOLATION".into(),
        message: "a change never delivered".into(),
    });
    t.checks.push(CheckLine {
        name: "CF4".into(),
        verdict: "BROKEN ×10".into(),
        note: "12 checkpoints".into(),
        properties: vec![("CF4".into(), "a checkpoint follows its delegate".into())],
    });
    let page = t.to_html();
    let fold = page
        .find("<details class=\"more\"><summary>10 more findings: CF4 ×9, CF1 ×1</summary>")
        .expect("the ten after the first are folded under one line");
    assert!(page.find("checkpoint 0 ").expect("first shown") < fold);
    assert!(page.find("checkpoint 1 ").expect("second folded") > fold);
    assert!(page.contains("checkpoint 9 ") && page.contains("a change never delivered"));
    assert_eq!(page.matches("<details class=\"more\">").count(), 1);
    // The property's meaning is its tooltip, and the checks say it too.
    assert!(page.contains("title=\"a checkpoint follows its delegate\">VIOLATION CF4"));
    assert!(page.find("The checks").expect("checks") > page.find("id=\"tl\"").unwrap());
}

fn bar(id: u64, a_ms: u64, b_ms: u64) -> OpBar {
    OpBar {
        id,
        lane: "client-0".into(),
        start_ns: a_ms * 1_000_000,
        end_ns: Some(b_ms * 1_000_000),
        label: format!("op {id}"),
        detail: String::new(),
        tone: Tone::Ok,
    }
}

#[test]
fn the_page_opens_on_the_lead_operation_when_the_named_ones_lie_far_apart() {
    // A 15 ms put at 0.269 s and a read at 61.6 s: a window spanning both
    // would make each a sliver; the view keeps the first and its neighbours.
    let mut t = Timeline::new("t", 125_000_000_000);
    t.ops = vec![
        bar(77, 269, 284),
        bar(52, 152, 176),
        bar(1316, 61_642, 61_651),
    ];
    t.highlight.extend([77, 52, 1316]);
    t.lead = vec![77, 52, 1316];
    t.window = Some((152_000_000, 61_651_000_000));
    let (a, b) = t.view().expect("a view");
    assert!(
        a <= 152_000_000 && b >= 284_000_000,
        "the put and its neighbour are in view"
    );
    assert!(b < 61_642_000_000, "the far read is a step away");
    assert!(
        (b - a) / 15_000_000 <= VIEW_SHORTEST * 2,
        "the put is not a sliver"
    );
    // Close together, everything is in view.
    t.ops[2] = bar(1316, 300, 310);
    t.window = Some((152_000_000, 310_000_000));
    let (a, b) = t.view().expect("a view");
    assert!(a <= 152_000_000 && b >= 310_000_000);
}

#[test]
fn a_moment_a_violation_names_is_marked_on_its_lane_and_opens_the_page() {
    let mut t = Timeline::new("t", 70_000_000_000);
    t.lane("host-1", "host-1", "host");
    let m = Moment {
        lane: "host-1#1".into(),
        start_ns: 6_600_000_000,
        end_ns: 6_600_000_000,
        label: "checkpoint lsn 56".into(),
    };
    t.add_moment(&m, "CF4", true);
    assert_eq!(t.marks[0].lane, "host-1");
    assert!(t.marks[0].highlight);
    let (a, b) = t.view().expect("a view");
    assert!(a < 6_600_000_000 && b > 6_600_000_000);
    assert!(b - a < 2_000_000_000, "zoomed in on the instant: {a}..{b}");
    let data = t.data();
    assert!(data["view"].is_array() && data["focus"].is_array());
}

#[test]
fn the_nodes_a_violation_names_come_first_with_their_lanes_and_the_rest_keep_their_order() {
    let mut t = Timeline::new("t", 1_000_000_000);
    for id in [
        "server-0",
        "server-1",
        "client-0",
        "client-1",
        "server-0:log",
    ] {
        t.lane(id, id, "node");
    }
    let op = OpRecord {
        id: 3,
        client: 1,
        key: "k".to_string(),
        call: "get",
        invoke_ns: 100,
        return_ns: Some(200),
        result: Some(200u16),
        attempts: vec![],
    };
    t.add_ops(
        [&op],
        |_| "client-1".into(),
        |o| (o.call.to_string(), Tone::Ok),
    );
    t.highlight.insert(3);
    t.add_moment(
        &Moment {
            lane: "server-0:log".into(),
            start_ns: 150,
            end_ns: 150,
            label: "logged".into(),
        },
        "P",
        true,
    );
    let order = |t: &Timeline| -> Vec<(String, bool)> {
        t.data()["lanes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                (
                    l["id"].as_str().unwrap().to_string(),
                    l["named"].as_bool().unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(
        order(&t),
        [
            // A node comes first with all its lanes when one of them is named.
            ("server-0".to_string(), false),
            ("client-1".to_string(), true),
            ("server-0:log".to_string(), true),
            ("server-1".to_string(), false),
            ("client-0".to_string(), false),
        ]
    );
    // With nothing named, the lanes stay as they were added.
    t.highlight.clear();
    t.marks.clear();
    assert_eq!(order(&t)[1], ("server-1".to_string(), false));
}

/// The story of a short run: its operations and faults in the order they
/// began, the named operation starred, a partition named by the lanes the
/// run has; a run with more rows than a story holds has none.
#[test]
fn a_short_run_tells_its_operations_and_faults_in_order_and_a_long_one_does_not() {
    let mut t = Timeline::new("t", 3_000_000_000);
    t.lane("client-0", "client-0", "client");
    t.lane("server-0", "server-0", "server");
    let op = |id: u64, at_ms: u64| OpRecord {
        id,
        client: 0,
        key: "k".to_string(),
        call: "put",
        invoke_ns: at_ms * 1_000_000,
        return_ns: Some(at_ms * 1_000_000 + 5_000_000),
        result: Some(200u16),
        attempts: vec![],
    };
    let (late, early) = (op(2, 2_000), op(1, 100));
    t.add_ops(
        [&late, &early],
        |_| "client-0".into(),
        |o| (format!("{} k#{}", o.call, o.id), Tone::Ok),
    );
    t.highlight.insert(2);
    t.bands.push(Band {
        from: vec!["server-0".into(), "server-7".into()],
        to: vec!["client-0".into()],
        one_way: false,
        start_ns: 1_000_000_000,
        end_ns: 1_500_000_000,
    });
    let page = t.to_html();
    let story = &page[page.find("The story").expect("a story")..];
    let first = story.find("put k#1").expect("the early put");
    let cut = story
        .find("partition: server-0 | client-0")
        .expect("the partition");
    let second = story.find("★ put k#2").expect("the named put, starred");
    assert!(first < cut && cut < second, "{story}");
    assert!(!story[..story.find("</table>").unwrap()].contains("server-7"));

    let many: Vec<OpRecord<&str, u16>> = (0..page::STORY_MAX_ROWS as u64 + 1)
        .map(|i| op(i, i))
        .collect();
    let mut long = Timeline::new("t", 3_000_000_000);
    long.lane("client-0", "client-0", "client");
    long.add_ops(
        many.iter(),
        |_| "client-0".into(),
        |o| (o.call.into(), Tone::Ok),
    );
    assert!(!long.to_html().contains("The story"));
}
