//! The words a person reads of a run: ETags and request conditions in a
//! few characters for a failure page's labels, and a linearizability
//! report told as a check's verdict: its violation, its focused account and
//! its text.

use crate::kit::properties::LINEARIZABILITY;
use overcast_sim::check::{Checked, Evidence, EvidenceRow, Verdict, Violation};
use overcast_sim::history::OpRecord;
use overcast_sim::lin;
use overcast_sim::timeline::secs;

/// An ETag in a few characters for a bar's label: `"0x8D0000000000002A"` → `…002A`.
pub fn short_etag(etag: &str) -> String {
    let t = etag.trim_matches('"');
    if t == "*" || t.chars().count() <= 6 {
        return t.to_string();
    }
    let tail: String = t.chars().skip(t.chars().count() - 4).collect();
    format!("…{tail}")
}

/// ` If-Match …002A` / ` If-None-Match *`: a request's conditions, shortly.
pub fn conditions_words(if_match: Option<&str>, if_none_match: Option<&str>) -> String {
    let mut w = String::new();
    if let Some(m) = if_match {
        w += &format!(" If-Match {}", short_etag(m));
    }
    if let Some(m) = if_none_match {
        w += &format!(" If-None-Match {}", short_etag(m));
    }
    w
}

/// The calls on the key of the operations a violation names (`named`, the
/// first one's key), from the first of them invoked to the last returned
/// (at most twelve, the named ones always), each with when it ran in true
/// time and what it asked and was answered (`words`), the named ones
/// marked: the focused account of a violation about a few calls on one
/// resource (E1, a lost field, a batch read).
pub fn calls_account<C, R>(
    ops: &[OpRecord<C, R>],
    named: &[u64],
    words: impl Fn(&C, Option<&R>) -> String,
    title: String,
    lead: String,
) -> Evidence {
    let of = |id: &u64| ops.iter().find(|o| o.id == *id);
    let key = named.first().and_then(of).map(|o| o.key.clone());
    let from = named
        .iter()
        .filter_map(of)
        .map(|o| o.invoke_ns)
        .min()
        .unwrap_or(0);
    let to = named
        .iter()
        .filter_map(of)
        .map(|o| o.return_ns.unwrap_or(o.invoke_ns))
        .max()
        .unwrap_or(0);
    let mut shown: Vec<&OpRecord<C, R>> = ops
        .iter()
        .filter(|o| {
            named.contains(&o.id)
                || (Some(&o.key) == key.as_ref() && o.invoke_ns >= from && o.invoke_ns <= to)
        })
        .collect();
    // Too many between: the named ones and their nearest neighbours.
    while shown.len() > 12 {
        let Some(i) = shown.iter().rposition(|o| !named.contains(&o.id)) else {
            break;
        };
        shown.remove(i);
    }
    Evidence {
        title,
        lead: vec![lead],
        columns: ["operation", "ran", "call and answer"]
            .map(String::from)
            .to_vec(),
        rows: shown
            .into_iter()
            .map(|o| EvidenceRow {
                op: Some(o.id),
                cells: vec![
                    format!("#{}", o.id),
                    format!(
                        "{}–{}",
                        secs(o.invoke_ns),
                        o.return_ns.map_or("no answer".to_string(), secs)
                    ),
                    words(&o.call, o.result.as_ref()),
                ],
                marked: named.contains(&o.id),
            })
            .collect(),
        notes: Vec::new(),
    }
}

/// How a linearizability report names a checker's operation: the history
/// operation it belongs to and its name in words (`#94`, or `#94 step 2`
/// for one step of a batch).
pub type LinOpName<'a> = &'a dyn Fn(u64) -> (u64, String);

/// The name of a checker operation whose id is its history operation's.
pub fn same_op(id: u64) -> (u64, String) {
    (id, format!("#{id}"))
}

/// `text` with every `operation #ID ` of the failure's operations said by
/// `name` (a batch's step ids become their operation's).
fn renamed(f: &lin::Failure, text: &str, name: LinOpName<'_>) -> String {
    let mut out = text.to_string();
    for o in f.ops.iter().chain(&f.settled) {
        let (_, n) = name(o.id);
        out = out.replace(&format!("operation #{} ", o.id), &format!("operation {n} "));
    }
    out
}

/// The violation of a report that is not linearizable, in the words of
/// `what` (`item`): the failing operation first among its operations, then
/// the rest of the failing sub-history (latest first), then the settled
/// operations that left the item where the sub-history starts; with the
/// focused account ([`lin_evidence`]).
pub fn lin_violation(report: &lin::Report, what: &str, name: LinOpName<'_>) -> Violation {
    let Some(f) = &report.failure else {
        return Violation::new(LINEARIZABILITY.id, "not linearizable");
    };
    let mut ops: Vec<u64> = Vec::new();
    let mut push = |id: u64| {
        let (op, _) = name(id);
        if !ops.contains(&op) {
            ops.push(op);
        }
    };
    if let Some(o) = f.ops.get(f.failing) {
        push(o.id);
    }
    for o in f.ops.iter().rev() {
        push(o.id);
    }
    for o in f.settled.iter().rev() {
        push(o.id);
    }
    Violation::new(
        LINEARIZABILITY.id,
        format!("{what} {}: {}", f.key, renamed(f, &f.sentence, name)),
    )
    .with_ops(ops)
    .with_evidence(lin_evidence(report, f, what, name))
}

/// The focused account of a linearizability failure: how the item got into
/// the state its failing sub-history starts from (the settled operations
/// that last changed it), the sub-history with the operation that cannot be
/// placed marked, the longest order found and the states the item may be
/// in before that operation.
pub fn lin_evidence(
    report: &lin::Report,
    f: &lin::Failure,
    what: &str,
    name: LinOpName<'_>,
) -> Evidence {
    let unit = report.time_unit;
    let row = |o: &lin::OpView, role: &str, marked: bool| EvidenceRow {
        op: Some(name(o.id).0),
        cells: vec![
            name(o.id).1,
            format!("client {}", o.client),
            unit.show(o.invoke),
            o.ret
                .map_or("no answer (unknown outcome)".into(), |r| unit.show(r)),
            o.text.clone(),
            role.to_string(),
        ],
        marked,
    };
    let mut rows: Vec<EvidenceRow> = f
        .settled
        .iter()
        .map(|o| row(o, "settled: left the item so", false))
        .collect();
    for (i, o) in f.ops.iter().enumerate() {
        let failing = i == f.failing;
        rows.push(row(
            o,
            if failing {
                "cannot be placed"
            } else {
                "in the failing sub-history"
            },
            failing,
        ));
    }
    // The failing operation's sentence is the violation's own words, shown
    // above this account: the account starts where they end.
    let lead = vec![if f.settled_before > 0 {
        format!(
            "Before the failing sub-history {} operations on {what} {} were settled; those that last changed it left it as {}.",
            f.settled_before, f.key, f.start_state
        )
    } else {
        format!("The {what} starts as {}.", f.start_state)
    }];
    let mut notes = Vec::new();
    if !f.sub_history_checked {
        notes.push("No failing sub-history was confirmed within the explanation's budget: these are the operations involved.".into());
    }
    let order: Vec<String> = f
        .linearization
        .iter()
        .map(|st| format!("{} (then {})", name(f.ops[st.op].id).1, st.state))
        .collect();
    notes.push(if order.is_empty() {
        "No operation of the sub-history can be placed first.".to_string()
    } else {
        format!("The longest order found: {}.", order.join(", "))
    });
    if !f.possible_states.is_empty() {
        notes.push(format!(
            "Where the failing operation must take effect, the {what} can only be {}.",
            f.possible_states.join(" or ")
        ));
    }
    Evidence {
        title: format!("How {what} {} got there", f.key),
        lead,
        columns: ["op", "by", "invoked", "returned", "what it did", "its part"]
            .map(String::from)
            .to_vec(),
        rows,
        notes,
    }
}

/// The text a linearizability checker prints after the summary: the
/// report's, with its first line saying what its count counts (steps on
/// items: a batch has one per item, and the checks' own reads count too),
/// so that it is never read as the run's count of operations.
pub fn lin_text(report: &lin::Report, what: &str, name: LinOpName<'_>) -> String {
    let text = report.to_text();
    let rest = text.split_once('\n').map_or("", |(_, r)| r);
    let verdict = match report.verdict {
        lin::Verdict::Linearizable => "LINEARIZABLE",
        lin::Verdict::NotLinearizable => "NOT LINEARIZABLE",
        lin::Verdict::Unknown => "UNKNOWN",
    };
    let first = format!(
        "{verdict} ({} steps on {} {what}s judged, {} decided)",
        report.ops, report.keys, report.keys_checked
    );
    let rest = match &report.failure {
        Some(f) => renamed(f, rest, name),
        None => rest.to_string(),
    };
    format!("{first}\n{rest}")
}

/// The checker's verdict on a linearizability report, with its explanation;
/// `name` says which history operation each checker operation belongs to
/// ([`LinOpName`]).
pub fn lin_checked(report: &lin::Report, title: &str, name: LinOpName<'_>) -> Checked {
    let verdict = match report.verdict {
        lin::Verdict::Linearizable => Verdict::Held,
        lin::Verdict::Unknown => Verdict::Undecided {
            reason: format!(
                "the linearizability search gave up: {}",
                report
                    .unknown_reason
                    .as_deref()
                    .unwrap_or("budget exhausted")
            ),
        },
        lin::Verdict::NotLinearizable => Verdict::Broken {
            violations: vec![lin_violation(report, "item", name)],
        },
    };
    let mut checked = Checked::new(verdict).with_note(format!("{} items", report.keys));
    if report.failure.is_some() {
        checked.explanation = Some(lin_text(report, "item", name));
        checked.html = Some(report.to_html(title));
    }
    checked
}
