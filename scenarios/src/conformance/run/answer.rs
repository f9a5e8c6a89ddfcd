//! An answer as the script sees it: the fields a script can check, whatever
//! service gave them ([`Observed`], turned from the service's response), the
//! checks of those fields against the step's [`Expect`], the captures an
//! answer binds, what it leaves seen for `fresh`, and both sides written as
//! lines for a report.

use super::words::{describe_waits, metadata_words, short, status_name};
use super::{date, lookup, State, Target};
use crate::conformance::format::{
    parse_lease_duration, CancelledExpect, Captured, Compare, Expect, Field, ItemExpect,
    LeaseDurationExpect, WaitExpect,
};
use crate::conformance::time::format_rfc1123;
use overcast_model::conditions::{ETag, Millis};
use overcast_model::feed::FeedRange;
use overcast_model::lease::{self, LeaseResponse, LeaseState};
use overcast_model::partition::Response;
use overcast_model::queue::{ItemStatus, OperationView};
use overcast_model::retry::{CancelledEffect, FinalOutcome};
use overcast_model::search::ResourceKind;
use overcast_model::store::Metadata;
use std::collections::BTreeSet;

/// The answer fields a script can check, whatever service gave them.
#[derive(Default)]
pub(super) struct Observed {
    status: u16,
    error_code: Option<String>,
    etag: Option<ETag>,
    last_modified: Option<Millis>,
    body: Option<String>,
    /// A blob's metadata (Get Blob and Get Blob Properties 200s).
    metadata: Option<Metadata>,
    /// A lease service answer.
    lease: Option<LeaseResponse>,
    /// A Search resource: its kind and entries.
    entries: Option<(ResourceKind, BTreeSet<String>)>,
    /// A Cosmos batch's per-operation results.
    results: Option<Vec<Observed>>,
    /// A queue item's status after a push or an index.
    item_status: Option<ItemStatus>,
    /// A poll's items or a feed page's, in order.
    items: Option<Vec<ObservedItem>>,
    /// A long-running operation.
    operation: Option<OperationView>,
    /// A feed page's continuation (200 and 304).
    continuation: Option<u64>,
    /// A feed answer's sub-status.
    sub_status: Option<u32>,
    /// Feed ranges: the container's, a split's children, a 410's children.
    ranges: Option<Vec<FeedRange>>,
}

/// One item of a poll or a feed page, with the fields its service answers.
struct ObservedItem {
    /// The queue item's name, the feed item's `id`.
    id: String,
    /// Queue: the indexed version (bytes); feed: the item's version.
    version: String,
    status: Option<ItemStatus>,
    queue: Option<String>,
    payload: Option<String>,
    partition_key: Option<String>,
    body: Option<String>,
    /// Feed: `_lsn`.
    lsn: Option<u64>,
}

impl ObservedItem {
    fn describe(&self) -> String {
        let mut out = self.id.clone();
        let mut fields = Vec::new();
        if let Some(s) = self.status {
            fields.push(status_name(s).to_string());
        }
        if let Some(pk) = &self.partition_key {
            fields.push(format!("pk {pk:?}"));
        }
        fields.push(format!("version {:?}", self.version));
        if let Some(q) = &self.queue {
            fields.push(format!("queue {}", short(q)));
        }
        if let Some(p) = self.payload.as_ref().filter(|p| !p.is_empty()) {
            fields.push(format!("payload {}", short(p)));
        }
        if let Some(l) = self.lsn {
            fields.push(format!("lsn {l}"));
        }
        out += &format!(" ({})", fields.join(", "));
        out
    }
}

impl Observed {
    /// The fields of `response` (answering a `kind` step) a script can check.
    pub(super) fn of(status: u16, response: Option<&Response>, kind: &str) -> Observed {
        let mut o = Observed {
            status,
            ..Observed::default()
        };
        match response {
            None => {}
            Some(Response::Store(r)) => {
                o.error_code = r.error_code.clone();
                if let Some(item) = &r.item {
                    o.etag = Some(item.etag.clone());
                    o.last_modified = Some(item.last_modified);
                    o.body = item.body.clone();
                    o.metadata = item.metadata.clone();
                }
            }
            Some(Response::Lease(r)) => {
                o.error_code = r.error_code.clone();
                o.lease = Some(r.clone());
            }
            Some(Response::Cosmos(r)) => {
                let view =
                    |status: u16, item: Option<&overcast_model::cosmos::CosmosItemView>| Observed {
                        status,
                        etag: item.map(|i| i.etag.clone()),
                        body: item.and_then(|i| i.body.clone()),
                        ..Observed::default()
                    };
                if let Some(item) = r.item() {
                    o.etag = Some(item.etag.clone());
                    o.body = item.body.clone();
                }
                o.results = Some(
                    r.results
                        .iter()
                        .map(|x| view(x.status, x.item.as_ref()))
                        .collect(),
                );
            }
            Some(Response::Search(r)) => {
                if let Some(res) = &r.resource {
                    o.etag = Some(res.etag.clone());
                    o.entries = Some((res.kind, res.entries.clone()));
                }
            }
            Some(Response::Queue(r)) => {
                o.error_code = r.error.clone();
                o.item_status = r.item_status;
                o.operation = r.operation.clone();
                o.items = (kind == "queue_poll").then(|| {
                    r.items
                        .iter()
                        .map(|i| ObservedItem {
                            id: i.name.clone(),
                            version: i.version.clone(),
                            status: Some(i.status),
                            queue: Some(i.queue.clone()),
                            payload: Some(i.payload.clone()),
                            partition_key: None,
                            body: None,
                            lsn: None,
                        })
                        .collect()
                });
            }
            Some(Response::Feed(r)) => {
                // The change feed layer's own status: a split range's 410/1002
                // travels through the transport as a delivered answer
                // (`FeedResponse::transport_status`), and the pull iterator sees the 410.
                o.status = r.status;
                o.sub_status = Some(r.sub_status);
                if matches!(r.status, 200 | 304) {
                    o.continuation = Some(r.continuation);
                }
                o.ranges = Some(r.ranges.clone());
                o.items = (kind == "feed_read").then(|| {
                    r.items
                        .iter()
                        .map(|i| ObservedItem {
                            id: i.id.clone(),
                            version: i.version.to_string(),
                            status: None,
                            queue: None,
                            payload: None,
                            partition_key: Some(i.partition_key.clone()),
                            body: Some(i.body.clone()),
                            lsn: Some(i.lsn),
                        })
                        .collect()
                });
            }
            // A service with no script steps of its own: its status alone.
            #[allow(unreachable_patterns)]
            Some(_) => {}
        }
        o
    }

    fn describe(&self) -> String {
        let mut out = String::new();
        if let Some(code) = &self.error_code {
            out += &format!(" {code}");
        }
        if let Some(e) = &self.etag {
            out += &format!(", etag {e}");
        }
        if let Some(t) = self.last_modified {
            out += &format!(", last_modified {}", format_rfc1123(t));
        }
        if let Some(m) = &self.metadata {
            out += &format!(", metadata {}", metadata_words(m));
        }
        if let Some(l) = &self.lease {
            if let Some(id) = &l.lease_id {
                out += &format!(", lease id {id}");
            }
            out += &format!(
                ", lease {} ({})",
                state_name(l.state),
                if l.state.is_locked() {
                    "locked"
                } else {
                    "unlocked"
                }
            );
            match l.duration {
                Some(lease::LeaseDuration::Infinite) => out += ", duration infinite",
                Some(lease::LeaseDuration::Fixed(s)) => out += &format!(", duration {s}s"),
                None => {}
            }
            if let Some(t) = l.lease_time_s {
                out += &format!(", lease time {t}s");
            }
        }
        if let Some((kind, entries)) = &self.entries {
            let list: Vec<&str> = entries.iter().map(String::as_str).collect();
            let what = match kind {
                ResourceKind::Index => "fields",
                ResourceKind::SynonymMap => "synonyms",
            };
            out += &format!(", {what} [{}]", list.join(", "));
        }
        if self.etag.is_some() || self.body.is_some() {
            match &self.body {
                Some(b) => out += &format!(", body {b:?}"),
                None if self.lease.is_none() && self.entries.is_none() => out += ", no body",
                None => {}
            }
        }
        if let Some(s) = self.item_status {
            out += &format!(", item {}", status_name(s));
        }
        if let Some(op) = &self.operation {
            out += &format!(
                ", operation {} ({})",
                op.name,
                if op.done { "done" } else { "not done" }
            );
        }
        if let Some(s) = self.sub_status.filter(|s| *s != 0) {
            out += &format!(", sub-status {s}");
        }
        if let Some(items) = &self.items {
            let each: Vec<String> = items.iter().map(ObservedItem::describe).collect();
            out += &format!(", items [{}]", each.join(", "));
        }
        if let Some(c) = self.continuation {
            out += &format!(", continuation {c}");
        }
        if let Some(ranges) = self.ranges.as_ref().filter(|r| !r.is_empty()) {
            let each: Vec<String> = ranges.iter().map(|r| format!("{} {r}", r.id)).collect();
            out += &format!(", ranges [{}]", each.join(", "));
        }
        if let Some(results) = &self.results {
            if results.len() > 1 || self.etag.is_none() {
                let each: Vec<String> = results
                    .iter()
                    .map(|r| format!("{}{}", r.status, r.describe()))
                    .collect();
                out += &format!(", results [{}]", each.join(" | "));
            }
        }
        out
    }
}

fn state_name(s: LeaseState) -> &'static str {
    match s {
        LeaseState::Available => "available",
        LeaseState::Leased => "leased",
        LeaseState::Expired => "expired",
        LeaseState::Breaking => "breaking",
        LeaseState::Broken => "broken",
    }
}

/// One answer as the script sees it.
pub(super) struct Answer {
    pub(super) outcome: FinalOutcome,
    pub(super) attempts: usize,
    /// The wait before each retry, ms of the client's clock.
    pub(super) waits: Vec<u64>,
    /// The region of each attempt (through an `account`'s multi-region client).
    pub(super) regions: Option<Vec<String>>,
    pub(super) observed: Observed,
}

impl Answer {
    fn status(&self) -> u16 {
        match self.outcome {
            FinalOutcome::Response { status } | FinalOutcome::Unknown { status } => status,
            // A cancelled call has no status.
            FinalOutcome::Cancelled { .. } => 0,
        }
    }

    /// An unknown outcome: a write that may have run (a cancelled call whose
    /// attempt was in flight is one).
    fn unknown(&self) -> bool {
        matches!(
            self.outcome,
            FinalOutcome::Unknown { .. }
                | FinalOutcome::Cancelled {
                    effect: CancelledEffect::Unknown
                }
        )
    }

    /// What the call did, if its caller cancelled it.
    fn cancelled(&self) -> Option<CancelledExpect> {
        match self.outcome {
            FinalOutcome::Cancelled {
                effect: CancelledEffect::NotRun,
            } => Some(CancelledExpect::NotRun),
            FinalOutcome::Cancelled {
                effect: CancelledEffect::Unknown,
            } => Some(CancelledExpect::Unknown),
            _ => None,
        }
    }

    pub(super) fn describe(&self) -> String {
        let mut out = self.observed.status.to_string();
        if self.observed.status != self.status() {
            out += &format!(" (delivered as {})", self.status());
        }
        if let Some(c) = self.cancelled() {
            out += &format!(" (cancelled, {c:?})");
        } else if self.unknown() {
            out += " (outcome unknown)";
        }
        out += &self.observed.describe();
        out += &format!(", {} attempt(s)", self.attempts);
        if !self.waits.is_empty() {
            out += &format!(", waits {}", describe_waits(&self.waits));
        }
        if let Some(r) = &self.regions {
            out += &format!(", regions [{}]", r.join(", "));
        }
        out
    }
}

/// Records what an answer showed, for later `fresh` comparisons.
pub(super) fn remember(o: &Observed, target: &Target, state: &mut State) {
    let mut seen = |resource: &str, etag: &Option<ETag>| {
        if let Some(e) = etag {
            state
                .seen
                .entry(resource.to_string())
                .or_default()
                .insert(e.unquoted().to_string());
        }
    };
    seen(&target.resource, &o.etag);
    // Operation names are "seen" like ETags, for `fresh`.
    if let Some(op) = &o.operation {
        seen(&target.resource, &Some(ETag(op.name.clone())));
    }
    if let Some(results) = &o.results {
        for (r, resource) in results.iter().zip(&target.per_op) {
            seen(resource, &r.etag);
        }
    }
    let ids = o
        .lease
        .as_ref()
        .and_then(|l| l.lease_id.clone())
        .into_iter()
        .chain(target.proposed.clone());
    for id in ids {
        state
            .seen_leases
            .entry(target.resource.clone())
            .or_default()
            .insert(id);
    }
}

/// Checks `answer` against `e`; on success binds the captures (the top
/// level's and the matching alternative's).
pub(super) fn check(
    e: &Expect,
    answer: &Answer,
    target: &Target,
    state: &mut State,
) -> Result<(), String> {
    check_answer(e, answer, target, state)?;
    if !e.any_of.is_empty() {
        let mut whys = Vec::new();
        let mut matched = None;
        for alt in &e.any_of {
            match check_answer(alt, answer, target, state) {
                Ok(()) => {
                    matched = Some(alt);
                    break;
                }
                Err(why) => whys.push(why),
            }
        }
        let Some(alt) = matched else {
            return Err(format!("no alternative holds: {}", whys.join("; ")));
        };
        capture(alt, &answer.observed, state)?;
    }
    capture(e, &answer.observed, state)?;
    if let (Some(results), Some(got)) = (&e.results, &answer.observed.results) {
        for (r, o) in results.iter().zip(got) {
            capture(r, o, state)?;
        }
    }
    Ok(())
}

fn capture(e: &Expect, o: &Observed, state: &mut State) -> Result<(), String> {
    for (field, name) in &e.capture {
        let value = match Field::parse(field) {
            Some(Field::Etag) => o.etag.as_ref().map(|e| Captured::Etag(e.0.clone())),
            Some(Field::LastModified) => o.last_modified.map(Captured::Time),
            Some(Field::LeaseId) => o
                .lease
                .as_ref()
                .and_then(|l| l.lease_id.clone())
                .map(Captured::LeaseId),
            Some(Field::Operation) => o
                .operation
                .as_ref()
                .map(|op| Captured::Operation(op.name.clone())),
            Some(Field::Continuation) => o.continuation.map(Captured::Continuation),
            Some(Field::Item(n)) => o
                .items
                .as_ref()
                .and_then(|items| items.get(n))
                .map(|i| Captured::Item(i.id.clone())),
            Some(Field::Range(n)) => o
                .ranges
                .as_ref()
                .and_then(|r| r.get(n))
                .map(|r| Captured::Range(r.id)),
            None => None,
        };
        let Some(value) = value else {
            return Err(format!("capture {name}: the answer has no {field}"));
        };
        state.captured.insert(name.clone(), value);
    }
    Ok(())
}

/// The answer-level fields (unknown outcome, attempts), then the observed ones.
fn check_answer(e: &Expect, a: &Answer, target: &Target, state: &State) -> Result<(), String> {
    if e.cancelled != a.cancelled() && (e.cancelled.is_some() || a.cancelled().is_some()) {
        return Err(match a.cancelled() {
            Some(c) => format!("the call was cancelled ({c:?})"),
            None => "the call was not cancelled".into(),
        });
    }
    if let Some(u) = e.unknown_outcome {
        if a.unknown() != u {
            return Err(format!(
                "the outcome is {}known",
                if a.unknown() { "un" } else { "" }
            ));
        }
    }
    if let Some(n) = e.attempts {
        if a.attempts != n {
            return Err(format!("{} attempt(s), not {n}", a.attempts));
        }
    }
    if let Some(waits) = &e.waits {
        if a.waits.len() != waits.len() {
            return Err(format!(
                "{} wait(s) {}, not {}",
                a.waits.len(),
                describe_waits(&a.waits),
                waits.len()
            ));
        }
        for (i, (w, got)) in waits.iter().zip(&a.waits).enumerate() {
            // Validated with the script.
            let want = WaitExpect::parse(w).map_err(|m| format!("waits[{i}]: {m}"))?;
            if !want.holds(*got) {
                return Err(format!(
                    "wait {} before attempt {} was {got} ms, not {w} ms",
                    i + 1,
                    i + 2
                ));
            }
        }
    }
    e.check_regions(a.regions.as_deref())?;
    check_fields(e, &a.observed, &target.resource, state)?;
    if let Some(results) = &e.results {
        let Some(got) = &a.observed.results else {
            return Err("the answer has no per-operation results".into());
        };
        if got.len() != results.len() {
            return Err(format!("{} results, not {}", got.len(), results.len()));
        }
        for (i, ((r, o), resource)) in results.iter().zip(got).zip(&target.per_op).enumerate() {
            check_fields(r, o, resource, state).map_err(|why| format!("result {i}: {why}"))?;
        }
    }
    Ok(())
}

/// Compares `got` with a `fresh` / `same as` / ... expectation `v` of `field`;
/// `seen` holds the values seen before on the resource, `literal` says whether a
/// literal equals `got`.
fn compare_value(
    v: &str,
    field: Field,
    got: Option<&str>,
    seen: Option<&BTreeSet<String>>,
    state: &State,
    literal: impl Fn(&str, &str) -> bool,
) -> Result<bool, String> {
    let captured = |n: &str| match state.captured.get(n) {
        Some(Captured::Etag(e)) => Some(ETag(e.clone()).unquoted().to_string()),
        Some(Captured::LeaseId(l)) | Some(Captured::Operation(l)) | Some(Captured::Item(l)) => {
            Some(l.clone())
        }
        Some(Captured::Continuation(c)) => Some(c.to_string()),
        Some(Captured::Range(r)) => Some(r.to_string()),
        _ => None,
    };
    Ok(match Compare::parse(v, field)? {
        Compare::Fresh => got.is_some_and(|g| !seen.is_some_and(|s| s.contains(g))),
        Compare::SameAs(n) => got.is_some_and(|g| Some(g.to_string()) == captured(&n)),
        Compare::DifferentFrom(n) => got.is_some_and(|g| Some(g.to_string()) != captured(&n)),
        Compare::Present => got.is_some(),
        Compare::Absent => got.is_none(),
        Compare::Literal(l) => got.is_some_and(|g| literal(g, &l)),
    })
}

fn check_fields(e: &Expect, o: &Observed, resource: &str, state: &State) -> Result<(), String> {
    if let Some(s) = e.status {
        if o.status != s {
            return Err(format!("status {} is not {s}", o.status));
        }
    }
    let code = o.error_code.as_deref();
    if let Some(c) = &e.error_code {
        if code != Some(c.as_str()) {
            return Err(format!(
                "error code {} is not {c}",
                code.unwrap_or("(none)")
            ));
        }
    }
    if let Some(v) = &e.etag {
        let got = o.etag.as_ref().map(|g| g.unquoted());
        let ok = compare_value(
            v,
            Field::Etag,
            got,
            state.seen.get(resource),
            state,
            |g, l| g == ETag::quoted(l).unquoted(),
        )?;
        if !ok {
            let got = got.map_or("no etag".to_string(), |g| format!("etag \"{g}\""));
            return Err(format!("{got} is not {v}"));
        }
    }
    if let Some(v) = &e.last_modified {
        // Last-Modified is a date header: whole seconds.
        let got = o.last_modified.map(|t| t / 1000);
        let secs = |t: Millis| t / 1000;
        let ok = match Compare::parse(v, Field::LastModified)? {
            Compare::SameAs(n) => got.is_some() && got == captured_time(state, &n).map(secs),
            Compare::DifferentFrom(n) => got.is_some() && got != captured_time(state, &n).map(secs),
            Compare::Present => got.is_some(),
            Compare::Absent => got.is_none(),
            Compare::Literal(l) => got.is_some() && got == Some(secs(date(&l, state)?)),
            Compare::Fresh => false,
        };
        if !ok {
            let got = o.last_modified.map_or("no last_modified".to_string(), |t| {
                format!("last_modified {}", format_rfc1123(t))
            });
            return Err(format!("{got} is not {v}"));
        }
    }
    let lease = o.lease.as_ref();
    if let Some(v) = &e.lease_id {
        let got = lease.and_then(|l| l.lease_id.as_deref());
        let ok = compare_value(
            v,
            Field::LeaseId,
            got,
            state.seen_leases.get(resource),
            state,
            |g, l| lease::parse_guid(l).is_some_and(|l| l == g),
        )?;
        if !ok {
            return Err(format!(
                "{} is not {v}",
                got.map_or("no lease id".to_string(), |g| format!("lease id {g}"))
            ));
        }
    }
    if let Some(v) = &e.lease_state {
        let got = lease.map(|l| state_name(l.state));
        if got != Some(v.as_str()) {
            return Err(format!(
                "lease state {} is not {v}",
                got.unwrap_or("(none)")
            ));
        }
    }
    if let Some(v) = &e.lease_status {
        let got = lease.map(|l| {
            if l.state.is_locked() {
                "locked"
            } else {
                "unlocked"
            }
        });
        if got != Some(v.as_str()) {
            return Err(format!(
                "lease status {} is not {v}",
                got.unwrap_or("(none)")
            ));
        }
    }
    if let Some(v) = &e.lease_duration {
        let got = lease.and_then(|l| l.duration);
        let ok = match parse_lease_duration(v)? {
            LeaseDurationExpect::Infinite => got == Some(lease::LeaseDuration::Infinite),
            LeaseDurationExpect::Fixed(None) => {
                matches!(got, Some(lease::LeaseDuration::Fixed(_)))
            }
            LeaseDurationExpect::Fixed(Some(s)) => got == Some(lease::LeaseDuration::Fixed(s)),
            LeaseDurationExpect::Absent => lease.is_some() && got.is_none(),
        };
        if !ok {
            return Err(format!("lease duration {got:?} is not {v}"));
        }
    }
    if let Some(t) = e.lease_time {
        let got = lease.and_then(|l| l.lease_time_s);
        if got != Some(t) {
            return Err(format!("lease time {got:?} is not {t}s"));
        }
    }
    for (want_kind, v, what) in [
        (ResourceKind::Index, &e.fields, "fields"),
        (ResourceKind::SynonymMap, &e.synonyms, "synonyms"),
    ] {
        let Some(v) = v else { continue };
        let want: BTreeSet<String> = v.iter().cloned().collect();
        let ok = o
            .entries
            .as_ref()
            .is_some_and(|(k, got)| *k == want_kind && *got == want);
        if !ok {
            return Err(format!("the answer's {what} are not [{}]", v.join(", ")));
        }
    }
    check_queue_and_feed_fields(e, o, resource, state)?;
    let body = o.body.as_deref();
    if let Some(b) = &e.body {
        if body != Some(b.as_str()) {
            return Err(format!("body {body:?} is not {b:?}"));
        }
    }
    if let Some(no) = e.no_body {
        if body.is_none() != no {
            return Err(format!("body {body:?}"));
        }
    }
    if let Some(no) = e.no_error_code {
        if code.is_none() != no {
            return Err(match code {
                Some(c) => format!("error code {c} where none was expected"),
                None => "no error code where one was expected".to_string(),
            });
        }
    }
    if let Some(m) = &e.metadata {
        if o.metadata.as_ref() != Some(m) {
            return Err(format!(
                "{} is not metadata {}",
                o.metadata
                    .as_ref()
                    .map_or("no metadata".to_string(), |g| format!(
                        "metadata {}",
                        metadata_words(g)
                    )),
                metadata_words(m)
            ));
        }
    }
    Ok(())
}

/// The fields of queue and feed answers: item status, items, operation,
/// continuation, sub-status, ranges.
fn check_queue_and_feed_fields(
    e: &Expect,
    o: &Observed,
    resource: &str,
    state: &State,
) -> Result<(), String> {
    if let Some(want) = e.item_status {
        if o.item_status != Some(want) {
            return Err(format!(
                "item status {} is not {}",
                o.item_status.map_or("(none)", status_name),
                status_name(want)
            ));
        }
    }
    if let Some(v) = &e.operation {
        let got = o.operation.as_ref().map(|op| op.name.as_str());
        let ok = compare_value(
            v,
            Field::Operation,
            got,
            state.seen.get(resource),
            state,
            |g, l| g == l,
        )?;
        if !ok {
            return Err(format!(
                "{} is not {v}",
                got.map_or("no operation".to_string(), |g| format!("operation {g}"))
            ));
        }
    }
    if let Some(d) = e.done {
        let got = o.operation.as_ref().map(|op| op.done);
        if got != Some(d) {
            return Err(format!(
                "the operation is {}",
                match got {
                    Some(true) => "done",
                    Some(false) => "not done",
                    None => "absent",
                }
            ));
        }
    }
    if let Some(v) = &e.continuation {
        let got = o.continuation.map(|c| c.to_string());
        let ok = compare_value(
            v,
            Field::Continuation,
            got.as_deref(),
            None,
            state,
            |g, l| g == l.trim(),
        )?;
        if !ok {
            return Err(format!(
                "{} is not {v}",
                got.map_or("no continuation".to_string(), |g| format!(
                    "continuation {g}"
                ))
            ));
        }
    }
    if let Some(s) = e.sub_status {
        if o.sub_status != Some(s) {
            return Err(format!(
                "sub-status {} is not {s}",
                o.sub_status.map_or("(none)".to_string(), |g| g.to_string())
            ));
        }
    }
    if let Some(want) = &e.ranges {
        let got: Option<Vec<u32>> = o.ranges.as_ref().map(|r| r.iter().map(|r| r.id).collect());
        if got.as_ref() != Some(want) {
            return Err(format!("ranges {got:?} are not {want:?}"));
        }
    }
    if let Some(want) = &e.items {
        let Some(got) = &o.items else {
            return Err("the answer has no items".into());
        };
        let ids = |got: &[ObservedItem]| -> String {
            let each: Vec<&str> = got.iter().map(|i| i.id.as_str()).collect();
            format!("[{}]", each.join(", "))
        };
        let expected_id = |w: &ItemExpect| -> Result<String, String> {
            let id = w.id().trim();
            if id.starts_with('$') {
                match lookup(state, id)? {
                    Captured::Item(i) => Ok(i.clone()),
                    _ => Err(format!("{id} holds no item id")),
                }
            } else {
                Ok(id.to_string())
            }
        };
        let want_ids = want
            .iter()
            .map(expected_id)
            .collect::<Result<Vec<_>, _>>()?;
        let got_ids: Vec<&str> = got.iter().map(|i| i.id.as_str()).collect();
        if got_ids != want_ids {
            return Err(format!(
                "items {} are not [{}]",
                ids(got),
                want_ids.join(", ")
            ));
        }
        for (w, g) in want.iter().zip(got) {
            let ItemExpect::Fields(f) = w else { continue };
            let mut wrong = Vec::new();
            if f.status.is_some() && f.status != g.status {
                wrong.push(format!("status {}", g.status.map_or("(none)", status_name)));
            }
            if let Some(v) = &f.version {
                if v.to_string() != g.version {
                    wrong.push(format!("version {:?}", g.version));
                }
            }
            for (name, want, got) in [
                ("queue", &f.queue, &g.queue),
                ("payload", &f.payload, &g.payload),
                ("partition key", &f.partition_key, &g.partition_key),
                ("body", &f.body, &g.body),
            ] {
                if want.is_some() && want != got {
                    wrong.push(format!(
                        "{name} {}",
                        got.as_deref().map_or("(none)".to_string(), short)
                    ));
                }
            }
            if !wrong.is_empty() {
                return Err(format!("item {}: {}", g.id, wrong.join(", ")));
            }
        }
    }
    Ok(())
}

fn captured_time(state: &State, name: &str) -> Option<Millis> {
    match state.captured.get(name) {
        Some(Captured::Time(t)) => Some(*t),
        _ => None,
    }
}
