//! Tests of `overcast_scenarios::services::occ::coverage`.
use overcast_scenarios::services::occ::check::OccHistory;
use overcast_scenarios::services::occ::coverage::*;
use overcast_scenarios::services::occ::history::{Call, Outcome};
use overcast_sim::history::OpRecord;

fn op(
    id: u64,
    op: &str,
    span: (u64, u64),
    if_match: Option<&str>,
    status: u16,
) -> OpRecord<Call, Outcome> {
    OpRecord {
        id,
        client: id as usize,
        key: "k0".into(),
        call: Call {
            op: op.into(),
            item: "k0".into(),
            body: (op == "put").then(|| "b".to_string()),
            if_match: if_match.map(str::to_string),
            if_none_match: None,
            if_modified_since: None,
            if_unmodified_since: None,
            operation: None,
            cancel_after_ms: None,
        },
        invoke_ns: span.0,
        return_ns: Some(span.1),
        result: Some(Outcome::Response {
            status,
            etag: None,
            version: None,
            body: None,
            last_modified: None,
        }),
        attempts: Vec::new(),
    }
}

fn cells_of(ops: Vec<OpRecord<Call, Outcome>>) -> Vec<(&'static str, String)> {
    let h = OccHistory::of_ops(ops);
    of(&h).cells.into_keys().collect()
}

#[test]
fn a_412_to_an_if_match_write_takes_its_cell_from_the_last_answer_before_it() {
    // Read 404, then a put with If-Match answered 412: the item was absent.
    let absent = cells_of(vec![
        op(0, "read", (0, 10), None, 404),
        op(1, "put", (20, 30), Some("\"0x1\""), 412),
    ]);
    assert!(
        absent.contains(&("W2.if_match", "absent → 412".to_string())),
        "{absent:?}"
    );
    // Read 200, then the same 412: another ETag.
    let differs = cells_of(vec![
        op(0, "read", (0, 10), None, 200),
        op(1, "put", (20, 30), Some("\"0x1\""), 412),
    ]);
    assert!(
        differs.contains(&("W2.if_match", "exists, ETag differs → 412".to_string())),
        "{differs:?}"
    );
    // A blind write overlapping the span: the history does not say.
    let open = cells_of(vec![
        op(0, "read", (0, 10), None, 404),
        op(2, "put", (5, 25), None, 201),
        op(1, "put", (20, 30), Some("\"0x1\""), 412),
    ]);
    assert!(
        open.contains(&(
            "W2.if_match",
            "412, existence not known from the history".to_string()
        )),
        "{open:?}"
    );
}

#[test]
fn a_304_read_is_placed_by_which_condition_its_answer_shows_false() {
    let mut read = op(0, "read", (0, 10), None, 304);
    read.call.if_none_match = Some("\"0x9\"".into());
    read.call.if_modified_since = Some(vec![5_000]);
    read.result = Some(Outcome::Response {
        status: 304,
        etag: Some("\"0x1\"".into()),
        version: None,
        body: None,
        last_modified: Some(4_000),
    });
    let cells = cells_of(vec![read]);
    assert_eq!(
        cells,
        vec![(
            "R.if_modified_since_false",
            "with the other condition sent".to_string()
        )]
    );
}
