//! The focused accounts of `occ`'s violations, in the store's words: every
//! answer that carried an ETag (E1), the calls around an increment that did
//! not end up once in its counter, and the probe's calls on an item it could
//! not finish.

use super::OccHistory;
use crate::kit::retry::attempt_words;
use crate::kit::words::calls_account;
use crate::services::occ::history::{words, Outcome};
use crate::services::occ::workload::is_probe;
use overcast_sim::check::{Evidence, EvidenceRow};
use overcast_sim::history::Attempt;
use overcast_sim::timeline::secs;

/// Every answer that carried ETag `etag` for item `key`, as the focused
/// account of an E1 violation: the operation, when it returned, what it was
/// and the body it stood for; the operations the violation names marked.
pub(super) fn etag_account(history: &OccHistory, key: &str, etag: &str, named: &[u64]) -> Evidence {
    let rows: Vec<EvidenceRow> = history
        .ops
        .iter()
        .filter(|o| o.key == key)
        .filter_map(|o| match &o.result {
            Some(Outcome::Response {
                status,
                etag: Some(e),
                body,
                ..
            }) if e == etag => {
                let shown = if o.call.op == "put" {
                    o.call.body.as_deref()
                } else {
                    body.as_deref()
                };
                Some(EvidenceRow {
                    op: Some(o.id),
                    cells: vec![
                        format!("#{}", o.id),
                        o.return_ns.map_or(String::new(), secs),
                        format!("{} → {status}", o.call.op),
                        shown.unwrap_or("").to_string(),
                    ],
                    marked: named.contains(&o.id),
                })
            }
            _ => None,
        })
        .take(10)
        .collect();
    Evidence {
        title: format!("The ETag {etag} of {key}"),
        lead: vec![format!(
            "Every answer about {key} that carried the ETag {etag}, with the body it stood for: an ETag is new with every write and stands for one body."
        )],
        columns: ["operation", "returned", "call", "body"]
            .map(String::from)
            .to_vec(),
        rows,
        notes: Vec::new(),
    }
}

/// The calls on counter `item` from the write that carried increment
/// `token` to the probe's final read (the operations `named`, marked: with
/// the write that first left it out, when known), each
/// with whether its body holds the token: the focused account of an
/// increment that is not in the final body exactly once.
pub(super) fn increment_account(
    history: &OccHistory,
    item: &str,
    token: &str,
    named: &[u64],
) -> Evidence {
    let holds = |body: Option<&str>| {
        let n = body.map_or(0, |b| b.split_whitespace().filter(|t| *t == token).count());
        match n {
            0 => format!("; its body lacks {token}"),
            1 => format!("; its body holds {token}"),
            n => format!("; its body holds {token} {n} times"),
        }
    };
    calls_account(
        &history.ops,
        named,
        |c, r| {
            let body = match (c.op.as_str(), r) {
                ("put", _) => Some(c.body.as_deref()),
                ("read", Some(Outcome::Response { body, .. })) => Some(body.as_deref()),
                _ => None,
            };
            words(c, r).0 + &body.map_or(String::new(), holds)
        },
        format!("The increment {token} of {item}"),
        format!(
            "The calls on {item} from the write that carried the increment {token} to the probe's final read (at most twelve, the nearest to that write, and the write that first left it out): every write of a counter appends its token to the body it read, so an acknowledged increment is in every later body once."
        ),
    )
}

/// The probe's calls on `item` (every one of them, the operations `named`
/// marked), with the restarts of `server`, the server that serves it: the
/// focused account of an item the probe could not read and write within
/// its bound.
pub(super) fn probe_account(
    history: &OccHistory,
    item: &str,
    server: &str,
    restarts: &[u64],
    named: &[u64],
) -> Evidence {
    let calls: Vec<u64> = history
        .ops
        .iter()
        .filter(|o| is_probe(o.client) && o.key == item)
        .map(|o| o.id)
        .collect();
    // Every probe call goes in (none is left out for the ones between);
    // only those the violation names stay marked below.
    let mut account = calls_account(
        &history.ops,
        &calls,
        |c, r| words(c, r).0,
        format!("The probe's calls on {item}"),
        format!(
            "Every call the probe made on {item} after the heal, each with the attempts the SDK made in it (the first and last three of a long run); {server} serves {item}."
        ),
    );
    for row in &mut account.rows {
        row.marked = row.op.is_some_and(|id| named.contains(&id));
        if let Some(o) = row
            .op
            .and_then(|id| history.ops.iter().find(|o| o.id == id))
        {
            let said = |a: &Attempt| format!("{} {}", secs(a.sent_ns), attempt_words(&a.result));
            let n = o.attempts.len();
            // A call retried for long: its first and last attempts.
            row.cells.push(match n {
                0 => "none ended".to_string(),
                1..=6 => o.attempts.iter().map(said).collect::<Vec<_>>().join(", "),
                _ => format!(
                    "{}, … {} more, {}",
                    o.attempts[..3]
                        .iter()
                        .map(said)
                        .collect::<Vec<_>>()
                        .join(", "),
                    n - 6,
                    o.attempts[n - 3..]
                        .iter()
                        .map(said)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
    }
    account.columns.push("attempts (sent, answer)".to_string());
    if !restarts.is_empty() {
        account.notes.push(format!(
            "{server} restarted at {}.",
            restarts
                .iter()
                .map(|t| secs(*t))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    account
}
