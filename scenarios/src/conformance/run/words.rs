//! What a script expects and what it got, written as lines for a report:
//! an expectation, a list of waits, a queue item's status, a long text cut
//! short.

use crate::conformance::format::{Expect, ItemExpect};
use overcast_model::queue::ItemStatus;
use overcast_model::store::Metadata;

/// A queue item status as scripts write it.
pub(super) fn status_name(s: ItemStatus) -> &'static str {
    match s {
        ItemStatus::Error => "ERROR",
        ItemStatus::Modified => "MODIFIED",
        ItemStatus::NewItem => "NEW_ITEM",
        ItemStatus::Accepted => "ACCEPTED",
    }
}

/// A text for a message: long ones (the argument limits) abbreviated.
pub(super) fn short(s: &str) -> String {
    const MAX: usize = 40;
    if s.chars().count() <= MAX {
        format!("{s:?}")
    } else {
        let head: String = s.chars().take(8).collect();
        format!("{head:?}… ({} chars)", s.chars().count())
    }
}

/// An expected item as text.
fn describe_item_expect(i: &ItemExpect) -> String {
    match i {
        ItemExpect::Id(id) => id.clone(),
        ItemExpect::Fields(f) => {
            let mut fields = Vec::new();
            if let Some(s) = f.status {
                fields.push(status_name(s).to_string());
            }
            if let Some(pk) = &f.partition_key {
                fields.push(format!("pk {pk:?}"));
            }
            if let Some(v) = &f.version {
                fields.push(format!("version {:?}", v.to_string()));
            }
            if let Some(q) = &f.queue {
                fields.push(format!("queue {}", short(q)));
            }
            if let Some(p) = &f.payload {
                fields.push(format!("payload {}", short(p)));
            }
            if let Some(b) = &f.body {
                fields.push(format!("body {b:?}"));
            }
            format!("{} ({})", f.id, fields.join(", "))
        }
    }
}

/// Waits as a line: `[0, 5, 25] ms`.
pub(super) fn describe_waits(waits: &[u64]) -> String {
    let ms: Vec<String> = waits.iter().map(u64::to_string).collect();
    format!("[{}] ms", ms.join(", "))
}

/// The expectation as a line.
pub(super) fn describe_expect(e: &Expect) -> String {
    let mut parts = Vec::new();
    if let Some(s) = e.status {
        parts.push(s.to_string());
    }
    if let Some(c) = &e.error_code {
        parts.push(c.clone());
    }
    if let Some(c) = e.cancelled {
        parts.push(format!("cancelled, {c:?}"));
    }
    if let Some(u) = e.unknown_outcome {
        parts.push(
            if u {
                "outcome unknown"
            } else {
                "outcome known"
            }
            .into(),
        );
    }
    if let Some(a) = e.attempts {
        parts.push(format!("{a} attempt(s)"));
    }
    if let Some(w) = &e.waits {
        parts.push(format!("waits [{}] ms", w.join(", ")));
    }
    if let Some(r) = &e.regions {
        parts.push(format!("regions [{}]", r.join(", ")));
    }
    for (name, v) in [
        ("etag", &e.etag),
        ("last_modified", &e.last_modified),
        ("lease id", &e.lease_id),
        ("lease", &e.lease_state),
        ("lease status", &e.lease_status),
        ("duration", &e.lease_duration),
    ] {
        if let Some(v) = v {
            parts.push(format!("{name} {v}"));
        }
    }
    if let Some(t) = e.lease_time {
        parts.push(format!("lease time {t}s"));
    }
    for (name, v) in [("fields", &e.fields), ("synonyms", &e.synonyms)] {
        if let Some(v) = v {
            parts.push(format!("{name} [{}]", v.join(", ")));
        }
    }
    if let Some(b) = &e.body {
        parts.push(format!("body {b:?}"));
    }
    if e.no_body == Some(true) {
        parts.push("no body".into());
    }
    match e.no_error_code {
        Some(true) => parts.push("no error code".into()),
        Some(false) => parts.push("an error code".into()),
        None => {}
    }
    if let Some(m) = &e.metadata {
        parts.push(format!("metadata {}", metadata_words(m)));
    }
    if let Some(results) = &e.results {
        let each: Vec<String> = results.iter().map(describe_expect).collect();
        parts.push(format!("results [{}]", each.join(" | ")));
    }
    if let Some(s) = e.item_status {
        parts.push(format!("item {}", status_name(s)));
    }
    if let Some(o) = &e.operation {
        parts.push(format!("operation {o}"));
    }
    if let Some(d) = e.done {
        parts.push(if d { "done" } else { "not done" }.into());
    }
    if let Some(s) = e.sub_status {
        parts.push(format!("sub-status {s}"));
    }
    if let Some(items) = &e.items {
        let each: Vec<String> = items.iter().map(describe_item_expect).collect();
        parts.push(format!("items [{}]", each.join(", ")));
    }
    if let Some(c) = &e.continuation {
        parts.push(format!("continuation {c}"));
    }
    if let Some(r) = &e.ranges {
        let ids: Vec<String> = r.iter().map(u32::to_string).collect();
        parts.push(format!("ranges [{}]", ids.join(", ")));
    }
    let mut out = parts.join(", ");
    if !e.any_of.is_empty() {
        let alts: Vec<String> = e.any_of.iter().map(describe_expect).collect();
        if !out.is_empty() {
            out += ", and ";
        }
        out += &format!("one of [{}]", alts.join(" | "));
    }
    if out.is_empty() {
        out = "anything".into();
    }
    out
}

/// Metadata as `{name: value, ...}` (`{}` for none).
pub(super) fn metadata_words(m: &Metadata) -> String {
    let pairs: Vec<String> = m.iter().map(|(k, v)| format!("{k}: {v:?}")).collect();
    format!("{{{}}}", pairs.join(", "))
}
