//! Retry discipline judged from the servers' side (SPEC §4.5, R1–R3): what
//! each server received of an operation's attempts, held to the rules the
//! client-side checks ([`crate::kit::retry`]) hold the SDK's own log to.

use super::check::OccHistory;
use super::history::{OccEvent, Outcome};
use crate::kit::retry::*;
use overcast_model::retry::{self, RetryOptions};
use overcast_model::wire::OperationId;
use overcast_sim::check::{Checked, Checker, Evidence, EvidenceRow, Verdict, Violation};
use overcast_sim::history::AttemptResult;
use overcast_sim::timeline::secs;
use std::collections::BTreeMap;
use std::time::Duration;

/// One attempt of an operation as a server received it: the first copy of
/// its request id (a duplicated datagram is the same attempt).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeenAttempt {
    /// The server node that received it, without its incarnation (`server-1`).
    pub server: String,
    /// The attempt's request id (the SDK's attempts of an operation have
    /// increasing ids).
    pub req_id: u64,
    /// When the SDK sent it, true ns, as stamped on the request.
    pub sent_ns: u64,
    /// Received, true ns.
    pub at_ns: u64,
    /// Answered, true ns (the receipt time when never answered).
    pub answered_ns: u64,
    /// A write.
    pub write: bool,
    /// The status answered; `None` when never answered.
    pub status: Option<u16>,
    /// The sub-status of a transient answer.
    pub sub_status: u32,
    /// The `x-ms-retry-after-ms` sent, if any.
    pub retry_after_ms: Option<u64>,
}

/// The rules the servers' side judges by: the SDK options the run used
/// (SPEC §4.1–§4.3). No other bound is needed: every attempt carries the
/// instant the SDK sent it, so the client's own spacing of its sends is
/// measured, not guessed from when they arrived.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerSideRules {
    /// The SDK's budgets, windows, request timeout, regions.
    pub retry: RetryOptions,
}

/// The SDK's attempts of one logical operation as the servers saw them, in
/// request-id order, with what the caller was told.
#[derive(Clone, Debug)]
pub struct ServerCase<'a> {
    /// The history's operation id, when the operation is in the history.
    pub op: Option<u64>,
    /// The seen attempts, by increasing request id.
    pub attempts: &'a [SeenAttempt],
    /// What the caller was told; `None` when the call did not return a
    /// status (an unknown outcome, or its client crashed).
    pub surfaced: Option<Surfaced>,
    /// When the call was invoked, true ns (no attempt of it was sent
    /// earlier); `None` when the operation is not in the history.
    pub invoke_ns: Option<u64>,
    /// When the call returned, true ns.
    pub return_ns: Option<u64>,
    /// When the caller cancelled the call, true ns, if it asked to: no
    /// attempt of it may be sent from then on.
    pub cancel_ns: Option<u64>,
    /// The SDK's log has a refused connect for the call: an attempt that no
    /// server can see, sent (or rather not) at once, so the servers' side
    /// cannot tell that the last attempt it saw was the last one.
    pub refused: bool,
}

/// The 410 window's transient answers: a 410 the transport retries (not
/// 410/1022, which is 503 at once) or a 449.
fn is_window(a: &SeenAttempt) -> bool {
    matches!(
        (a.status, a.sub_status),
        (Some(449), _) | (Some(410), 0..=1021) | (Some(410), 1023..)
    )
}

/// A 503 to the caller at once: a 503, or a 410/1022 `LeaseNotFound`.
fn is_unavailable(a: &SeenAttempt) -> bool {
    matches!((a.status, a.sub_status), (Some(503), _) | (Some(410), 1022))
}

fn status_words(a: &SeenAttempt) -> String {
    match (a.status, a.sub_status, a.retry_after_ms) {
        (None, ..) => "no answer".into(),
        (Some(429), _, None) => "429 without a retry-after".into(),
        (Some(429), _, Some(ms)) => format!("429 with retry-after {ms} ms"),
        (Some(s), 0, _) => s.to_string(),
        (Some(s), sub, _) => format!("{s}/{sub}"),
    }
}

/// How sure the servers' side is that the client heard `x`'s answer before
/// its next send of the operation (which came at or before `y`'s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Heard {
    /// `y` was sent sooner than the request timeout after `x`: the client
    /// did not time out on `x` (a timed-out or unsendable attempt waits the
    /// whole timeout), so it heard `x`'s one answer.
    Surely,
    /// A write answered, re-sent the timeout or later after `x`: either the
    /// client heard `x`, or it re-sent a write after a timeout, which SPEC
    /// §4.1 row 408 forbids. A rule broken here is reported as R1.
    OrR1,
    /// The client may have timed out on `x` (or `x` was never answered).
    Unknown,
}

/// An operation's attempts as the servers received them, as the focused
/// account of a violation judged from their side: when the SDK sent each
/// (true time), where and when it arrived, and what it was answered; the
/// caller's answer last.
fn seen_account(case: &ServerCase<'_>) -> Evidence {
    let mut rows: Vec<EvidenceRow> = case
        .attempts
        .iter()
        .map(|x| EvidenceRow {
            op: None,
            cells: vec![
                format!("{} #{}", if x.write { "write" } else { "read" }, x.req_id),
                secs(x.sent_ns),
                format!("{} at {}", x.server, secs(x.at_ns)),
                status_words(x),
            ],
            marked: false,
        })
        .collect();
    rows.push(EvidenceRow {
        op: case.op,
        cells: vec![
            "the caller".to_string(),
            case.return_ns.map_or(String::new(), secs),
            String::new(),
            case.surfaced
                .map_or("no status (an unknown outcome)".to_string(), |s| {
                    format!("told {s}")
                }),
        ],
        marked: true,
    });
    Evidence {
        title: match case.op {
            Some(op) => format!("The attempts of operation #{op} as the servers saw them"),
            None => "The attempts of an operation as the servers saw them".to_string(),
        },
        lead: vec![
            "Each request of the operation a server received (its first copy), when the SDK sent it and what the server answered, in true simulated time; then what the caller was told.".to_string(),
        ],
        columns: ["request", "sent", "received", "answer"]
            .map(String::from)
            .to_vec(),
        rows,
        notes: Vec::new(),
    }
}

/// A violation judged from the servers' side: it names the operation when
/// the history has it, and each attempt where a server received it.
fn seen_violation(case: &ServerCase<'_>, property: &'static str, message: String) -> Violation {
    let mut v = Violation::new(property, message)
        .with_ops(case.op)
        .with_evidence(seen_account(case));
    for x in case.attempts {
        v = v.at(
            x.server.clone(),
            x.at_ns,
            format!(
                "{} #{} received",
                if x.write { "write" } else { "read" },
                x.req_id
            ),
        );
    }
    v
}

impl ServerSideRules {
    /// Whether the client heard `x`'s answer before sending again; `y` is
    /// a later attempt of the same operation.
    fn heard(&self, x: &SeenAttempt, y: &SeenAttempt) -> Heard {
        let timeout = self.retry.request_timeout.as_nanos() as u64;
        match x.status {
            None => Heard::Unknown,
            Some(_) if y.sent_ns < x.sent_ns.saturating_add(timeout) => Heard::Surely,
            Some(_) if x.write && y.write => Heard::OrR1,
            Some(_) => Heard::Unknown,
        }
    }

    /// 503 retries the SDK may make for this kind of operation (SPEC §4.1 row 503).
    fn unavailable_retries(&self, write: bool) -> u32 {
        let o = &self.retry;
        if o.preferred_regions < 2 || (write && !o.multi_write) {
            0
        } else {
            o.max_service_unavailable_retries
        }
    }

    /// Judges one operation from the servers' side; the first broken rule.
    /// Every wait is measured from the server's answer to the SDK's next
    /// send: the client heard the answer no sooner than it was sent, so a
    /// correct SDK's wait can only look longer than it was, never shorter.
    pub fn check(&self, case: &ServerCase<'_>) -> Option<Violation> {
        let v =
            |property: &'static str, message: String| Some(seen_violation(case, property, message));
        let a = case.attempts;
        let name = |x: &SeenAttempt| {
            format!(
                "{} #{} (sent at {:.3} s, seen by {} at {:.3} s)",
                if x.write { "write" } else { "read" },
                x.req_id,
                x.sent_ns as f64 / 1e9,
                x.server,
                x.at_ns as f64 / 1e9
            )
        };
        let op = case
            .op
            .map_or("an operation".to_string(), |o| format!("op {o}"));
        if let Some(cancel_ns) = case.cancel_ns {
            if let Some(y) = a.iter().find(|y| y.sent_ns >= cancel_ns) {
                return v(
                    "R1",
                    format!(
                        "{op}: the servers saw {} sent after the caller cancelled the call at {:.3} s; a cancelled call ends at once and sends nothing more",
                        name(y),
                        cancel_ns as f64 / 1e9
                    ),
                );
            }
        }
        let (mut throttled_retries, mut throttled_wait_ms) = (0u32, 0u64);
        let mut unavailable_retries = 0u32;
        // The transport window (one region: one window per operation): whether
        // it has retried, how many 410, 449 and 410/1000 retries it has surely
        // made, and a lower bound on the window it has used up.
        let (mut window_retried, mut gone_backoffs, mut retry_with_backoffs) = (false, 0u32, 0u32);
        let mut name_cache_stale = 0u32;
        let mut window_used_ns = 0u64;
        let one_window = self.retry.preferred_regions < 2;
        for w in a.windows(2) {
            let (x, y) = (&w[0], &w[1]);
            let gap_ns = y.sent_ns.saturating_sub(x.answered_ns);
            let gap_ms = gap_ns / MS;
            // R1: a write is re-sent only after an answer that says it did not run.
            if x.write {
                let retryable = matches!(x.status, Some(429 | 449))
                    || (is_window(x))
                    || (is_unavailable(x) && self.unavailable_retries(true) > 0);
                if !retryable {
                    return v(
                        "R1",
                        format!(
                            "{op}: the servers saw the write re-sent ({}) after {} answered {}; a write is re-sent only after 429, 449, 410 (SPEC §4.5 R1)",
                            name(y),
                            name(x),
                            status_words(x)
                        ),
                    );
                }
            }
            let heard = self.heard(x, y);
            // A read that may have timed out on `x` still retried in the 410
            // window when `x` was a window answer or none: a read's timeout is
            // retried as a 410 (SPEC §4.1 row 408), so either way its backoff is
            // owed, from the earlier of the answer and the timeout.
            let read_window = !x.write && one_window && (x.status.is_none() || is_window(x));
            if heard == Heard::Unknown && !read_window {
                // The client may have timed out on `x`: none of the rules below
                // can be judged for this pair (and the window may have moved on).
                window_retried |= is_window(x);
                continue;
            }
            // A broken rule after an answer that was surely heard is the rule's;
            // after a write's answer that may not have been, R1 (see `Heard`).
            let (r2, r3) = match heard {
                Heard::OrR1 => ("R1", "R1"),
                _ => ("R2", "R3"),
            };
            let or_r1 = if heard == Heard::OrR1 {
                " (or, since it came the request timeout or later after it, the write was re-sent after a timeout, SPEC §4.1 row 408)"
            } else {
                ""
            };
            match x.status {
                Some(429) => {
                    let asked = asked_wait_ms(x.retry_after_ms);
                    if gap_ns < asked * MS {
                        return v(
                            r2,
                            format!(
                                "{op}: {} was sent {gap_ms} ms after {} was answered {}; SPEC §4.2 asks for {asked} ms{or_r1}",
                                name(y),
                                name(x),
                                status_words(x)
                            ),
                        );
                    }
                    throttled_retries += 1;
                    throttled_wait_ms += asked;
                    let o = &self.retry;
                    if asked >= o.max_rate_limited_wait.as_millis() as u64 {
                        return v(
                            r2,
                            format!(
                                "{op}: {} was retried ({}) although it asked for {asked} ms, not less than the budget of {} ms (SPEC §4.2){or_r1}",
                                name(x),
                                name(y),
                                o.max_rate_limited_wait.as_millis()
                            ),
                        );
                    }
                    if throttled_retries > o.max_rate_limited_retries {
                        return v(
                            r2,
                            format!(
                                "{op}: the servers saw {throttled_retries} retries after answered 429s (the last {}), over the budget of {} (SPEC §4.2){or_r1}",
                                name(y),
                                o.max_rate_limited_retries
                            ),
                        );
                    }
                    if throttled_wait_ms > o.max_rate_limited_wait.as_millis() as u64 {
                        return v(
                            r2,
                            format!(
                                "{op}: the 429s answered asked for {throttled_wait_ms} ms in all before {}, over the budget of {} ms (SPEC §4.2){or_r1}",
                                name(y),
                                o.max_rate_limited_wait.as_millis()
                            ),
                        );
                    }
                }
                _ if is_unavailable(x) => {
                    unavailable_retries += 1;
                    let allowed = self.unavailable_retries(x.write);
                    if unavailable_retries > allowed {
                        return v(
                            if x.write { "R1" } else { r3 },
                            format!(
                                "{op}: {} answered {}, then the servers saw {}; SPEC §4.1 allows {allowed} retr{} after a 503 here",
                                name(x),
                                status_words(x),
                                name(y),
                                if allowed == 1 { "y" } else { "ies" }
                            ),
                        );
                    }
                }
                _ if one_window && (is_window(x) || heard == Heard::Unknown) => {
                    // SPEC §4.1 rows 410 and 449: the first retry in the window is
                    // immediate, later ones wait their backoff (410: 1 s doubling
                    // to 15 s; 449: 10 ms doubling to 1 s, plus a 1–4 ms salt),
                    // cut to what is left of the window, and none once nothing is
                    // left.
                    let is_449 = x.status == Some(449) && heard != Heard::Unknown;
                    // When the client heard `x`, it did so no sooner than `x` was
                    // answered; when it may have timed out, no sooner than the
                    // earlier of that and the request timeout after the send.
                    let timeout = self.retry.request_timeout.as_nanos() as u64;
                    let base_ns = match (heard, x.status) {
                        (Heard::Unknown, Some(_)) => x.answered_ns.min(x.sent_ns + timeout),
                        (Heard::Unknown, None) => x.sent_ns + timeout,
                        _ => x.answered_ns,
                    };
                    let gap_ns = y.sent_ns.saturating_sub(base_ns);
                    let gap_ms = gap_ns / MS;
                    let window = if is_449 {
                        self.retry.retry_with_window
                    } else {
                        self.retry.gone_window
                    }
                    .as_nanos() as u64;
                    if window_retried {
                        if window_used_ns >= window {
                            return v(
                                r3,
                                format!(
                                    "{op}: {} was retried ({}) although the backoffs the servers saw had already used up the {} s window (SPEC §4.1 row 410: then 503){or_r1}",
                                    name(x),
                                    name(y),
                                    window / 1_000_000_000
                                ),
                            );
                        }
                        // The backoffs seen are at most the ones the SDK used, and
                        // a backoff only grows with their number: a lower bound.
                        let backoff = if is_449 {
                            let b = retry::RETRY_WITH_INITIAL_BACKOFF
                                .saturating_mul(1 << retry_with_backoffs.min(16))
                                + Duration::from_millis(retry::RETRY_WITH_SALT_MS.0);
                            retry_with_backoffs += 1;
                            b.min(retry::RETRY_WITH_MAX_BACKOFF)
                        } else {
                            let b = retry::GONE_INITIAL_BACKOFF
                                .saturating_mul(1 << gone_backoffs.min(16))
                                .min(retry::GONE_MAX_BACKOFF);
                            gone_backoffs += 1;
                            b
                        };
                        let backoff = backoff.as_nanos() as u64;
                        // The delay is the backoff cut to what is left of the
                        // window, and the window used when `x` was heard is at
                        // most the time since the call was invoked (the SPEC's
                        // window counts time since the first attempt; the model's
                        // counts its delays and timeouts, no more). So a delay
                        // shorter than the backoff leaves `y` sent the window or
                        // later after the invocation: before that, the backoff
                        // is owed in full.
                        let least = match case.invoke_ns {
                            Some(invoke) if y.sent_ns < invoke.saturating_add(window) => backoff,
                            _ => 0,
                        };
                        if gap_ns < least {
                            return v(
                                r3,
                                format!(
                                    "{op}: {} was sent {gap_ms} ms after {} was answered {}{}; SPEC §4.1 asks for a backoff of at least {} ms there{or_r1}",
                                    name(y),
                                    name(x),
                                    status_words(x),
                                    if heard == Heard::Unknown {
                                        " (or timed out)"
                                    } else {
                                        ""
                                    },
                                    least / MS
                                ),
                            );
                        }
                        // Used after this delay: at least the backoff seen added,
                        // or the whole window when the delay was cut to it.
                        window_used_ns = window_used_ns.saturating_add(backoff).min(window);
                    }
                    if heard != Heard::Unknown
                        && x.status == Some(410)
                        && x.sub_status == retry::sub_status::NAME_CACHE_IS_STALE
                    {
                        name_cache_stale += 1;
                        if name_cache_stale > retry::MAX_NAME_CACHE_STALE_RETRIES {
                            return v(
                                r3,
                                format!(
                                    "{op}: {} answered {} was retried ({}): the servers saw {name_cache_stale} retries after 410/1000, and SPEC §4.1 row 410 retries it twice, the third is 503{or_r1}",
                                    name(x),
                                    status_words(x),
                                    name(y)
                                ),
                            );
                        }
                    }
                    window_retried = true;
                }
                Some(s) if !is_window(x) && s != 429 => {
                    // A final status, heard: the SDK does not retry it (SPEC §4.1).
                    // (A 500 on a read may be retried in another region.)
                    let cross_region_500 =
                        s == 500 && !x.write && self.unavailable_retries(false) > 0;
                    if !cross_region_500 {
                        return v(
                            if x.write { "R1" } else { r3 },
                            format!(
                                "{op}: {} answered {}, a final status the SDK does not retry, yet the servers saw {}",
                                name(x),
                                status_words(x),
                                name(y)
                            ),
                        );
                    }
                }
                _ => {}
            }
        }
        self.check_surfaced(case, &op)
            .map(|message| seen_violation(case, "R3", message))
    }

    /// R3 from the servers' side: when the last attempt the servers saw was
    /// surely the last one sent and its answer was heard, the caller was
    /// told what SPEC §4.1 says for it.
    fn check_surfaced(&self, case: &ServerCase<'_>, op: &str) -> Option<String> {
        let (Some(surfaced), Some(return_ns)) = (case.surfaced, case.return_ns) else {
            return None;
        };
        // A refused connect reaches no server and takes no time: the call may
        // have gone on after the last attempt seen. So may a cancel.
        if case.refused || surfaced == Surfaced::CancelledNotRun {
            return None;
        }
        let last = case.attempts.last()?;
        let status = last.status?;
        // The call returned sooner than the request timeout after `last` was
        // sent: it did not time out on `last`, so it heard its answer, and it
        // sent nothing after it (a later attempt that no server saw would
        // have waited out its own timeout before the call returned).
        let timeout = self.retry.request_timeout.as_nanos() as u64;
        if return_ns >= last.sent_ns.saturating_add(timeout) {
            return None;
        }
        let window_449 = case.attempts.iter().any(|a| a.status == Some(449));
        let expected: Vec<Surfaced> = match status {
            408 if last.write => vec![Surfaced::Unknown],
            410 if last.sub_status == 1022 => vec![Surfaced::Status(503)],
            410 | 449 if window_449 => vec![Surfaced::Status(449), Surfaced::Status(503)],
            410 => vec![Surfaced::Status(503)],
            s => vec![Surfaced::Status(s)],
        };
        if !expected.contains(&surfaced) {
            return Some(format!(
                "{op}: the last attempt the servers saw (#{} sent at {:.3} s, seen by {}) was answered {} and the call returned {:.3} ms after it was sent, sooner than the request timeout, so its answer was heard and nothing was sent after it; the caller was told {surfaced:?}, SPEC §4.1 says {expected:?}",
                last.req_id,
                last.sent_ns as f64 / 1e9,
                last.server,
                status_words(last),
                (return_ns - last.sent_ns) as f64 / 1e6,
            ));
        }
        self.gave_up_early(case, op, return_ns, window_449)
    }

    /// R3's lower bound (SPEC §4.1 row 410): a 410 the transport retries
    /// (sub-status 0, 1000, 1007 or 1008) becomes 503 only once a budget is
    /// spent: the 30 s window, or the third 410/1000. With one region (one
    /// window per call) the window is not spent sooner than it lasts (a
    /// tenth is left for clocks that run fast), and the SDK cannot have
    /// heard more 410/1000 answers than the servers sent. The caller of
    /// [`Self::check_surfaced`] has made sure the last answer was heard.
    fn gave_up_early(
        &self,
        case: &ServerCase<'_>,
        op: &str,
        return_ns: u64,
        window_449: bool,
    ) -> Option<String> {
        let last = case.attempts.last()?;
        let retried_410 = last.status == Some(410)
            && matches!(
                last.sub_status,
                retry::sub_status::NONE
                    | retry::sub_status::NAME_CACHE_IS_STALE
                    | retry::sub_status::COMPLETING_SPLIT
                    | retry::sub_status::COMPLETING_PARTITION_MIGRATION
            );
        if case.surfaced != Some(Surfaced::Status(503))
            || !retried_410
            || window_449
            || self.retry.preferred_regions >= 2
        {
            return None;
        }
        let name_cache_stale = case
            .attempts
            .iter()
            .filter(|a| {
                a.status == Some(410) && a.sub_status == retry::sub_status::NAME_CACHE_IS_STALE
            })
            .count() as u32;
        let first_ns = case.invoke_ns.unwrap_or(case.attempts[0].sent_ns);
        let took_ns = return_ns.saturating_sub(first_ns);
        let window_ns = self.retry.gone_window.as_nanos() as u64;
        (name_cache_stale <= retry::MAX_NAME_CACHE_STALE_RETRIES && took_ns < window_ns - clock_slack_ns(window_ns))
            .then(|| {
                format!(
                    "{op}: the caller was told 503 after #{} (seen by {}) answered {}, {:.3} s after the call began and after {name_cache_stale} answers 410/1000 from the servers: neither budget was spent (SPEC §4.1 row 410: 503 after {} s of 410s or after the third 410/1000), so the SDK gave up early",
                    last.req_id,
                    last.server,
                    status_words(last),
                    took_ns as f64 / 1e9,
                    window_ns / 1_000_000_000,
                )
            })
    }
}

/// Every operation's attempts as the servers received them, from the
/// history's receipts: the first copy of each request id, in request-id order.
pub fn seen_attempts(history: &OccHistory) -> BTreeMap<OperationId, Vec<SeenAttempt>> {
    let mut by_op: BTreeMap<OperationId, BTreeMap<u64, SeenAttempt>> = BTreeMap::new();
    for e in &history.node_events {
        let OccEvent::Received(r) = &e.event else {
            continue;
        };
        let seen = SeenAttempt {
            server: e.node.split('#').next().unwrap_or(&e.node).to_string(),
            req_id: r.req_id,
            sent_ns: r.sent_ns,
            at_ns: r.at_ns,
            answered_ns: r.answered_ns.max(r.at_ns),
            write: r.write,
            status: r.status,
            sub_status: r.sub_status,
            retry_after_ms: r.retry_after_ms,
        };
        let attempts = by_op.entry(r.operation).or_default();
        match attempts.get(&r.req_id) {
            Some(earlier) if earlier.at_ns <= seen.at_ns => {}
            _ => {
                attempts.insert(r.req_id, seen);
            }
        }
    }
    by_op
        .into_iter()
        .map(|(op, attempts)| (op, attempts.into_values().collect()))
        .collect()
}

/// R1–R3 judged from what reached the servers (SPEC §4.1, §4.2, §4.5): the
/// servers' receipts of every attempt (`OccEvent::Received`), grouped by the
/// operation id the SDK sends on every attempt; see [`ServerSideRules::check`].
pub struct RetryFromServers {
    /// The SDK's options in the run.
    pub retry: RetryOptions,
}

impl Checker<OccHistory> for RetryFromServers {
    fn properties(&self) -> &'static [overcast_sim::check::Property] {
        &[
            crate::kit::properties::R1,
            crate::kit::properties::R2,
            crate::kit::properties::R3,
        ]
    }

    fn label(&self) -> &'static str {
        "servers"
    }

    fn check(&self, history: &OccHistory) -> Checked {
        let rules = ServerSideRules {
            retry: self.retry.clone(),
        };
        let seen = seen_attempts(history);
        let ops: BTreeMap<
            OperationId,
            &overcast_sim::history::OpRecord<super::history::Call, Outcome>,
        > = history
            .ops
            .iter()
            .filter_map(|o| o.call.operation.map(|id| (id, o)))
            .collect();
        let judged: usize = seen.values().map(Vec::len).sum();
        let mut violation = None;
        for (id, attempts) in &seen {
            let op = ops.get(id);
            let case = ServerCase {
                op: op.map(|o| o.id),
                attempts,
                // An unknown outcome is recorded as no outcome, like a call cut
                // short by a crash: only calls that returned a status are judged.
                surfaced: op.and_then(|o| o.result.as_ref()).map(|r| match r {
                    Outcome::TimedOut => Surfaced::TimedOut,
                    Outcome::CancelledNotRun => Surfaced::CancelledNotRun,
                    Outcome::Response { status, .. } => Surfaced::Status(*status),
                }),
                invoke_ns: op.map(|o| o.invoke_ns),
                return_ns: op.and_then(|o| o.return_ns),
                cancel_ns: op.and_then(|o| o.call.cancel_ns(o.invoke_ns)),
                refused: op.is_some_and(|o| {
                    o.attempts
                        .iter()
                        .any(|a| a.result == AttemptResult::NotSent)
                }),
            };
            if let Some(v) = rules.check(&case) {
                violation = Some(v);
                break;
            }
        }
        Checked::new(Verdict::from_violations(violation.into_iter().collect()))
            .with_note(format!("{judged} attempts as the servers received them"))
    }
}

/// How many operations spent a retry budget, by the SDK's own attempt logs
/// (what the throttling variant is for): `r2_retries_spent`, the caller saw
/// 429 after the 9 retries (SPEC §4.2); `r2_wait_spent`, the caller saw 429
/// with fewer retries, the 30 s of waits being spent; `gone_window_spent`,
/// the caller saw 503 or 449 (or a read's timeouts) after 410s, 449s and
/// read timeouts had used up the 30 s transport window (SPEC §4.1 row 410).
pub fn budgets_spent(history: &OccHistory, options: &RetryOptions) -> [(&'static str, u64); 3] {
    let (mut retries, mut wait, mut window) = (0, 0, 0);
    let timeout = options.request_timeout.as_nanos() as u64;
    for o in &history.ops {
        let throttled = o
            .attempts
            .iter()
            .filter(|a| matches!(a.result, AttemptResult::Status { status: 429, .. }))
            .count() as u64;
        // The window's use as the SDK counts it: the delays after 410s and
        // 449s, and the timeouts.
        let mut used = 0u64;
        for w in o.attempts.windows(2) {
            match w[0].result {
                AttemptResult::Timeout => used += timeout + w[1].waited_ns,
                // A refused connect is a transport 410 (SPEC §4.1 row 408).
                AttemptResult::Status {
                    status: 410 | 449, ..
                }
                | AttemptResult::NotSent => used += w[1].waited_ns,
                _ => {}
            }
        }
        if o.attempts.last().map(|a| &a.result) == Some(&AttemptResult::Timeout) {
            used += timeout;
        }
        match o.result {
            Some(Outcome::Response { status: 429, .. }) => {
                if throttled > u64::from(options.max_rate_limited_retries) {
                    retries += 1;
                } else {
                    wait += 1;
                }
            }
            Some(Outcome::Response {
                status: 503 | 449, ..
            })
            | Some(Outcome::TimedOut)
                if used >= options.gone_window.as_nanos() as u64 =>
            {
                window += 1;
            }
            _ => {}
        }
    }
    [
        ("r2_retries_spent", retries),
        ("r2_wait_spent", wait),
        ("gone_window_spent", window),
    ]
}
