//! Which row (and cell) of the condition tables of SPEC §1.1.3 (writes) and
//! §1.1.4 (reads) each recorded `occ` operation exercised, judged from the
//! outside: the request (method, condition headers), the answer (status,
//! ETag, Last-Modified) and, where those two leave it open (a 412 to an
//! `If-Match` write: a different ETag, or no item?), whether the item
//! existed as the rest of the history shows it. `overcast run occ
//! --coverage` and `overcast sweep occ --coverage` print the table.

use super::check::{not_executed, OccHistory};
use super::history::{Call, Outcome};
use overcast_harness::coverage::{Coverage, Row, Tables};
use overcast_sim::history::OpRecord;
use std::collections::BTreeMap;

/// The rows, in SPEC order: §1.1.3 step 1 and step 2, then §1.1.4; plus
/// the unconditional writes and plain reads of a missing item, which the
/// tables leave implicit.
pub const ROWS: &[Row] = &[
    Row {
        id: "W1.several_etags",
        spec: "§1.1.3 step 1: more than one ETag in If-Match or If-None-Match → 400",
        unreachable: None,
        cells: &["several ETags → 400"],
        unreachable_cells: &[],
    },
    Row {
        id: "W1.three_headers",
        spec: "§1.1.3 step 1: more than 2 condition headers → 400",
        unreachable: None,
        cells: &["three or four headers → 400"],
        unreachable_cells: &[],
    },
    Row {
        id: "W1.illegal_pair",
        spec: "§1.1.3 step 1: a pair other than {If-Match, If-Unmodified-Since} or {If-None-Match, If-Modified-Since} → 400",
        unreachable: None,
        cells: &["illegal pair → 400"],
        unreachable_cells: &[],
    },
    Row {
        id: "W2.if_none_match_etag",
        spec: "§1.1.3 order 1: If-None-Match: <etag>",
        unreachable: None,
        cells: &["exists, ETag equal → 412", "exists, ETag differs → proceed", "absent → proceed (put 201, delete 404)"],
        unreachable_cells: &[],
    },
    Row {
        id: "W2.if_none_match_any",
        spec: "§1.1.3 order 1: If-None-Match: *",
        unreachable: None,
        cells: &["exists → 409 (put)", "exists → 412 (delete)", "absent → proceed (put 201, delete 404)"],
        unreachable_cells: &[],
    },
    Row {
        id: "W2.if_match",
        spec: "§1.1.3 order 2: If-Match: <etag> or *",
        unreachable: None,
        cells: &["exists, * or ETag equal → proceed", "exists, ETag differs → 412", "absent → 412"],
        unreachable_cells: &[],
    },
    Row {
        id: "W2.if_modified_since",
        spec: "§1.1.3 order 3: If-Modified-Since: t",
        unreachable: None,
        cells: &["exists, lastModified <= t → 412", "exists, lastModified > t → proceed", "absent → proceed (put 201, delete 404)"],
        unreachable_cells: &[],
    },
    Row {
        id: "W2.if_unmodified_since",
        spec: "§1.1.3 order 4: If-Unmodified-Since: t",
        unreachable: None,
        cells: &["exists, t < lastModified → 412", "exists, lastModified <= t → proceed", "absent → proceed (put 201, delete 404)"],
        unreachable_cells: &[],
    },
    Row {
        id: "W.unconditional",
        spec: "§1.1.1 no condition header: last writer wins",
        unreachable: None,
        cells: &["put of an existing item → 201", "put of a missing item → 201", "delete of an existing item → 202", "delete of a missing item → 404"],
        unreachable_cells: &[],
    },
    Row {
        id: "W.old_reads",
        spec: "§1.1.3 reads before version 2013-08-15 (write semantics)",
        unreachable: Some(
            "by design: the model serves one protocol version, whose reads follow §1.1.4",
        ),
        cells: &[],
        unreachable_cells: &[],
    },
    Row {
        id: "R.several_dates",
        spec: "§1.1.4 several values in one If-(Un)Modified-Since header → 400",
        unreachable: None,
        cells: &["→ 400"],
        unreachable_cells: &[],
    },
    Row {
        id: "R.absent_if_match",
        spec: "§1.1.4 resource absent and If-Match present → 404",
        unreachable: None,
        cells: &["→ 404"],
        unreachable_cells: &[],
    },
    Row {
        id: "R.if_none_match_any",
        spec: "§1.1.4 If-None-Match: * on a read → 400",
        unreachable: None,
        cells: &["→ 400"],
        unreachable_cells: &[],
    },
    Row {
        id: "R.precondition_false",
        spec: "§1.1.4 If-Match false, or If-Unmodified-Since false → 412",
        unreachable: None,
        cells: &["If-Match false", "If-Unmodified-Since false"],
        unreachable_cells: &[],
    },
    Row {
        id: "R.if_none_match_false",
        spec: "§1.1.4 If-None-Match false and If-Modified-Since not true → 304",
        unreachable: None,
        cells: &["alone", "with the other condition sent"],
        unreachable_cells: &[],
    },
    Row {
        id: "R.if_modified_since_false",
        spec: "§1.1.4 If-Modified-Since false and If-None-Match not true → 304",
        unreachable: None,
        cells: &["alone", "with the other condition sent"],
        unreachable_cells: &[],
    },
    Row {
        id: "R.otherwise",
        spec: "§1.1.4 otherwise → 200",
        unreachable: None,
        cells: &["no condition → 200", "conditions held → 200"],
        unreachable_cells: &[],
    },
    Row {
        id: "R.absent",
        spec: "§1.1.4 (implicit) resource absent, no If-Match → 404",
        unreachable: None,
        cells: &["→ 404"],
        unreachable_cells: &[],
    },
];

/// The tables `occ`'s coverage counts.
pub const TABLES: Tables = Tables {
    title: "coverage of SPEC §1.1.3 / §1.1.4 (row, cell, operations)",
    rows: ROWS,
    unplaced: "unknown outcomes, \"not executed\" statuses (SPEC §4), container creation",
};

/// The coverage of one history.
pub fn of(history: &OccHistory) -> Coverage {
    let mut c = Coverage::new(TABLES);
    let mut by_item: BTreeMap<&str, Vec<&OpRecord<Call, Outcome>>> = BTreeMap::new();
    for o in &history.ops {
        by_item.entry(o.call.item.as_str()).or_default().push(o);
    }
    for ops in by_item.values() {
        for (i, o) in ops.iter().enumerate() {
            match classify(o, || existed(ops, i)) {
                Some((row, cell)) => c.count(row, cell),
                None => c.unplaced += 1,
            }
        }
    }
    c
}

/// The ETags a header lists (`None` for `*`).
fn tags(header: &str) -> Option<Vec<&str>> {
    match header.trim() {
        "*" => None,
        list => Some(
            list.split(',')
                .map(|t| t.trim().trim_matches('"'))
                .collect(),
        ),
    }
}

/// Whether an ETag header lists more than one ETag.
fn several(header: &Option<String>) -> bool {
    header
        .as_deref()
        .and_then(tags)
        .is_some_and(|t| t.len() > 1)
}

/// Whether a date header lists more than one date.
fn several_dates(d: &Option<Vec<u64>>) -> bool {
    d.as_ref().is_some_and(|d| d.len() > 1)
}

/// The row and cell of one operation; `existed` says (when the answer does
/// not) whether the item existed when the operation took effect.
fn classify(
    o: &OpRecord<Call, Outcome>,
    existed: impl Fn() -> Option<bool>,
) -> Option<(&'static str, String)> {
    let Some(Outcome::Response {
        status,
        etag,
        last_modified,
        ..
    }) = &o.result
    else {
        return None;
    };
    let status = *status;
    if not_executed(status) {
        return None;
    }
    let c = &o.call;
    let other = |row: &'static str| Some((row, format!("other status {status}")));
    match c.op.as_str() {
        // A HEAD follows Get Blob's table (§1.1.4).
        "read" | "head" => classify_read(c, status, etag.as_deref(), *last_modified),
        "put" | "delete" => {
            let put = c.op == "put";
            let headers = usize::from(c.if_match.is_some())
                + usize::from(c.if_none_match.is_some())
                + usize::from(c.if_modified_since.is_some())
                + usize::from(c.if_unmodified_since.is_some());
            let legal_pair = (c.if_match.is_some() && c.if_unmodified_since.is_some())
                || (c.if_none_match.is_some() && c.if_modified_since.is_some());
            // Step 1, before any state is read.
            let step1 = if several(&c.if_match) || several(&c.if_none_match) {
                Some(("W1.several_etags", "several ETags"))
            } else if several_dates(&c.if_modified_since) || several_dates(&c.if_unmodified_since) {
                Some((
                    "W1.several_etags",
                    "several dates (the reference spec's reading)",
                ))
            } else if headers > 2 {
                Some(("W1.three_headers", "three or four headers"))
            } else if headers == 2 && !legal_pair {
                Some(("W1.illegal_pair", "illegal pair"))
            } else {
                None
            };
            if let Some((row, cell)) = step1 {
                return if status == 400 {
                    Some((row, format!("{cell} → 400")))
                } else {
                    other(row)
                };
            }
            // Outcomes that say existence: delete 202 (existed, proceeded),
            // delete 404 (absent, proceeded). A put answers 201 either way,
            // so the history says whether its item existed.
            let put_existed = (put && status == 201).then(&existed).flatten();
            let proceeded_existing =
                matches!((put, status), (false, 202)) || put_existed == Some(true);
            let proceeded_absent =
                matches!((put, status), (false, 404)) || put_existed == Some(false);
            let proceeded_unknown = put && status == 201 && put_existed.is_none();
            let absent = "absent → proceed (put 201, delete 404)";
            let unknown = "proceed (put 201), existence not known from the history";
            if let Some(inm) = &c.if_none_match {
                let row = if inm.trim() == "*" {
                    "W2.if_none_match_any"
                } else {
                    "W2.if_none_match_etag"
                };
                let cell = match (row, status) {
                    ("W2.if_none_match_any", 409) if put => "exists → 409 (put)",
                    ("W2.if_none_match_any", 412) if !put => "exists → 412 (delete)",
                    ("W2.if_none_match_etag", 412) => "exists, ETag equal → 412",
                    ("W2.if_none_match_etag", _) if proceeded_existing => {
                        "exists, ETag differs → proceed"
                    }
                    _ if proceeded_absent => absent,
                    _ if proceeded_unknown => unknown,
                    _ => return other(row),
                };
                return Some((row, cell.into()));
            }
            if let Some(im) = &c.if_match {
                let row = "W2.if_match";
                // If-Match proceeds only on an existing item.
                let cell = if matches!((put, status), (true, 201) | (false, 202)) {
                    "exists, * or ETag equal → proceed"
                } else if status == 412 {
                    match (im.trim() == "*", existed()) {
                        // `*` matches every existing item.
                        (true, _) | (false, Some(false)) => "absent → 412",
                        (false, Some(true)) => "exists, ETag differs → 412",
                        (false, None) => "412, existence not known from the history",
                    }
                } else {
                    return other(row);
                };
                return Some((row, cell.into()));
            }
            let date = |row: &'static str, refused: &str, passed: &str| {
                let cell = if status == 412 {
                    refused.to_string()
                } else if proceeded_existing {
                    passed.to_string()
                } else if proceeded_absent {
                    absent.to_string()
                } else if proceeded_unknown {
                    unknown.to_string()
                } else {
                    return other(row);
                };
                Some((row, cell))
            };
            if c.if_modified_since.is_some() {
                return date(
                    "W2.if_modified_since",
                    "exists, lastModified <= t → 412",
                    "exists, lastModified > t → proceed",
                );
            }
            if c.if_unmodified_since.is_some() {
                return date(
                    "W2.if_unmodified_since",
                    "exists, t < lastModified → 412",
                    "exists, lastModified <= t → proceed",
                );
            }
            let cell = match (put, status) {
                (true, 201) if proceeded_existing => "put of an existing item → 201",
                (true, 201) if proceeded_absent => "put of a missing item → 201",
                (true, 201) => "put → 201, existence not known from the history",
                (false, 202) => "delete of an existing item → 202",
                (false, 404) => "delete of a missing item → 404",
                _ => return other("W.unconditional"),
            };
            Some(("W.unconditional", cell.into()))
        }
        _ => None,
    }
}

/// §1.1.4 for a read, from its headers and answer (a 304 carries the
/// current ETag and Last-Modified, which say which condition was false).
fn classify_read(
    c: &Call,
    status: u16,
    etag: Option<&str>,
    last_modified: Option<u64>,
) -> Option<(&'static str, String)> {
    let other = |row: &'static str| Some((row, format!("other status {status}")));
    let any_condition = c.if_match.is_some()
        || c.if_none_match.is_some()
        || c.if_modified_since.is_some()
        || c.if_unmodified_since.is_some();
    if several_dates(&c.if_modified_since) || several_dates(&c.if_unmodified_since) {
        return match status {
            400 => Some(("R.several_dates", "→ 400".into())),
            _ => other("R.several_dates"),
        };
    }
    if c.if_none_match.as_deref().map(str::trim) == Some("*") {
        return match status {
            400 => Some(("R.if_none_match_any", "→ 400".into())),
            _ => other("R.if_none_match_any"),
        };
    }
    match status {
        404 if c.if_match.is_some() => Some(("R.absent_if_match", "→ 404".into())),
        404 => Some(("R.absent", "→ 404".into())),
        412 => {
            let cell = match (c.if_match.is_some(), c.if_unmodified_since.is_some()) {
                (true, false) => "If-Match false",
                (false, true) => "If-Unmodified-Since false",
                _ => "If-Match or If-Unmodified-Since false",
            };
            Some(("R.precondition_false", cell.into()))
        }
        304 => {
            // Which condition was false, from the answer's ETag and date.
            let inm_false = match (c.if_none_match.as_deref().and_then(tags), etag) {
                (Some(t), Some(e)) => t.contains(&e.trim_matches('"')),
                _ => false,
            };
            let ims_false = match (
                c.if_modified_since.as_ref().and_then(|d| d.first()),
                last_modified,
            ) {
                (Some(t), Some(lm)) => lm / 1000 <= t / 1000,
                _ => false,
            };
            let with_other = |other_sent: bool| {
                if other_sent {
                    "with the other condition sent".to_string()
                } else {
                    "alone".to_string()
                }
            };
            if inm_false {
                Some((
                    "R.if_none_match_false",
                    with_other(c.if_modified_since.is_some()),
                ))
            } else if ims_false {
                Some((
                    "R.if_modified_since_false",
                    with_other(c.if_none_match.is_some()),
                ))
            } else {
                other("R.otherwise")
            }
        }
        200 if any_condition => Some(("R.otherwise", "conditions held → 200".into())),
        200 => Some(("R.otherwise", "no condition → 200".into())),
        _ => other("R.otherwise"),
    }
}

/// What an answered operation says about whether the item exists once it
/// took effect (`None`: nothing).
fn reveals(o: &OpRecord<Call, Outcome>) -> Option<bool> {
    let Some(Outcome::Response { status, .. }) = &o.result else {
        return None;
    };
    match (o.call.op.as_str(), status) {
        ("read" | "head", 200 | 304 | 412) | ("put", 200 | 201 | 409) | ("set_metadata", 200) => {
            Some(true)
        }
        ("read" | "head" | "set_metadata", 404) | ("delete", 202 | 404) => Some(false),
        _ => None,
    }
}

/// Whether a write may have changed the item (answered 2xx, or unknown).
fn may_mutate(o: &OpRecord<Call, Outcome>) -> bool {
    match (&o.call.op[..], &o.result) {
        ("put" | "delete", None) => true,
        ("put" | "delete", Some(Outcome::Response { status, .. })) => {
            matches!(status, 200..=202)
        }
        _ => false,
    }
}

/// Whether item `ops[i]`'s item existed when it took effect, as the history
/// shows it: the latest operation that ended before `ops[i]` began and whose
/// answer says whether the item exists, provided that no write that may have
/// changed the item overlaps the span between the two (otherwise unknown).
/// Before any write, the item is absent.
fn existed(ops: &[&OpRecord<Call, Outcome>], i: usize) -> Option<bool> {
    let me = ops[i];
    let end = me.return_ns.unwrap_or(u64::MAX);
    let witness = ops
        .iter()
        .enumerate()
        .filter(|(j, o)| *j != i && o.return_ns.is_some_and(|r| r < me.invoke_ns))
        .filter_map(|(j, o)| reveals(o).map(|e| (j, o, e)))
        .max_by_key(|(_, o, _)| o.return_ns);
    let (from, skip, state) = match witness {
        Some((j, o, e)) => (o.invoke_ns, Some(j), e),
        None => (0, None, false),
    };
    let disturbed = ops.iter().enumerate().any(|(j, o)| {
        j != i
            && Some(j) != skip
            && may_mutate(o)
            && o.invoke_ns < end
            && o.return_ns.unwrap_or(u64::MAX) > from
    });
    (!disturbed).then_some(state)
}
