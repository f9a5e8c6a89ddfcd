//! R6 and the region rows of SPEC §4.1, judged from the SDK's `Route`
//! events (joined to their call by session and [`RegionCall::seq`]) and the
//! ops' attempts.
//!
//! What SPEC states (the default [`RoutingBounds`]):
//! - 503 (and 500 on reads, 410/1022, a 410 window run out): one retry on
//!   the next region (`MaxServiceUnavailableRetryCount = 1`, one budget),
//!   reads only: a write that got 503 is not sent again (single-write);
//! - 404/1002: `MaxSessionTokenRetryCount = 2` region retries (single-write),
//!   and a read that gives up with 404/1002 has tried the write region
//!   since its first 404/1002 (in-region retries may come first);
//! - connection errors / 403: up to `MaxRetryCount = 120` failovers;
//! - 410: the caller never sees a 410 (after the 30 s window it is a 503);
//!   410/0 refreshes the addresses, 410/1007 and 410/1008 the partition map,
//!   410/1000 the container map and is retried twice (the third is a 503),
//!   410/1022 is a 503 at once (no retry in the region);
//! - a region marked unavailable is moved to the end of the list until its
//!   time is up: a read's first attempt does not go to a marked region
//!   unless every region is marked (later attempts of the call walk the
//!   list, whose end holds the marked regions).
//!
//! Model choices of this checker (not SPEC): a region move is counted
//! against the budget of the status of the attempt before it; the 410
//! window runs from the first attempt of a streak of 410s in one region
//! (an attempt that ended otherwise, e.g. a connection error the SDK failed
//! over from, starts a new transport request and so a new window);
//! times allow `slack_ms` for the client's clock drift and event
//! recording; the unavailable mark is judged for session and eventual
//! reads only (a single-write account has one write region, which writes
//! keep using, and in this model a strong read is served by the primary,
//! so it goes there too); the set of regions is every region the history
//! names; the write region is where writes succeeded, and a session may
//! also take a region its own writes were sent to for it (a stale account
//! view; with no successful write the 404/1002 rule is not judged). A `Route` event's `local_ms` is the client's clock at the
//! decision (an attempt: its send), which is what marks are judged on.
//!
//! [`RegionCall::seq`]: super::history::RegionCall::seq

use super::history::{
    route, session_of, Consistency, RegionEvent, RegionOp, RegionOutcome, RegionsHistory,
};
use crate::kit::retry::{
    asked_wait_ms, clock_slack_ns, overlap_ns, WindowSchedule, DEFAULT_RETRY_AFTER_MS, MS,
    TIMER_SLACK_NS,
};
use overcast_model::retry;
use overcast_sim::check::{Checked, Checker, Evidence, EvidenceRow, Verdict, Violation};
use overcast_sim::history::{AttemptResult, NodeEvent};
use overcast_sim::timeline::{clock_secs, secs};
use std::collections::{BTreeMap, BTreeSet};

/// The bounds the routing checker holds the SDK to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoutingBounds {
    /// Cross-region retries after 503/500/410 (`MaxServiceUnavailableRetryCount`).
    pub unavailable_retries: u32,
    /// Region retries after 404/1002 (`MaxSessionTokenRetryCount`).
    pub session_region_retries: u32,
    /// Failovers after connection errors and 403 (`MaxRetryCount`).
    pub failovers: u32,
    /// Retries after 410/1000 in one region.
    pub name_cache_retries: u32,
    /// The 410 retry window, ms (30 s; the scenario may scale it).
    pub gone_window_ms: u64,
    /// How long a region that answered 403/1008 stays at the end of the
    /// list, ms of the client's clock (5 min; the scenario scales it).
    pub unavailable_ms: u64,
    /// Tolerance on times, ms (a choice of this checker).
    pub slack_ms: u64,
    /// The wait before a failover retry, ms (`RetryIntervalInMS`, 1 s; the
    /// scenario scales it).
    pub failover_wait_ms: u64,
}

impl Default for RoutingBounds {
    /// The values SPEC §4.1 states, with 1 s of slack.
    fn default() -> Self {
        RoutingBounds {
            unavailable_retries: 1,
            session_region_retries: 2,
            failovers: 120,
            name_cache_retries: 2,
            gone_window_ms: 30_000,
            unavailable_ms: 300_000,
            slack_ms: 1_000,
            failover_wait_ms: 1_000,
        }
    }
}

/// The R6 / §4.1 region-rows checker.
#[derive(Clone, Copy, Debug, Default)]
pub struct Routing {
    /// The bounds.
    pub bounds: RoutingBounds,
    /// The run's client nodes: names the node of each history client, whose
    /// paused spans stretch a correct SDK's waits.
    pub client_nodes: usize,
}

/// One `attempt` event, flattened.
struct Attempt<'a> {
    /// Index of the event in the op's route events.
    at: usize,
    region: &'a str,
    status: u16,
    sub_status: u16,
    /// True send time (ns) from the op's attempts, when they align.
    sent_ns: Option<u64>,
    /// The client's clock at the send, ms (the event's `local_ms`).
    local_ms: u64,
}

/// A region mark: region, from and until (client clock, ms), the true time
/// it was made, and the op that made it.
struct Mark<'a> {
    region: &'a str,
    from_ms: u64,
    until_ms: u64,
    at_ns: u64,
    op_id: u64,
    status: u16,
    sub_status: u16,
}

impl Checker<RegionsHistory> for Routing {
    fn properties(&self) -> &'static [overcast_sim::check::Property] {
        &[crate::services::regions::properties::R6]
    }

    fn check(&self, history: &RegionsHistory) -> Checked {
        let ops: BTreeMap<(String, u64), &RegionOp> = history
            .ops
            .iter()
            .map(|o| ((session_of(o), o.call.seq), o))
            .collect();
        let mut routes: BTreeMap<(&str, u64), Vec<&NodeEvent<RegionEvent>>> = BTreeMap::new();
        let mut regions: BTreeSet<&str> = BTreeSet::new();
        for e in &history.node_events {
            match &e.event {
                RegionEvent::Route { op_id, region, .. } => {
                    routes.entry((&e.node, *op_id)).or_default().push(e);
                    regions.insert(region);
                }
                RegionEvent::Final { region, .. } => {
                    regions.insert(region);
                }
                RegionEvent::Primary { .. }
                | RegionEvent::Applied { .. }
                | RegionEvent::Refused { .. } => {}
            }
        }
        for op in &history.ops {
            if let Some(RegionOutcome::Ok { region, .. }) = &op.result {
                regions.insert(region);
            }
        }
        let mut violations = Vec::new();
        let mut unaligned = 0;
        for op in &history.ops {
            if let Some(RegionOutcome::Failed {
                status: 410,
                sub_status,
                ..
            }) = &op.result
            {
                violations.push(v(
                    op,
                    format!("the caller saw 410/{sub_status}; SPEC §4.1: after the 410 window the caller sees 503"),
                ));
            }
        }
        // The write region: wherever writes succeed (a single-write
        // account has one). A session may also believe another region is
        // (a stale account view): the regions its writes were sent to.
        let mut write_region: BTreeSet<&str> = BTreeSet::new();
        for op in history.ops.iter().filter(|o| o.call.is_write()) {
            if let Some(RegionOutcome::Ok { region, .. }) = &op.result {
                write_region.insert(region);
            }
        }
        let mut believed: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for (&(node, op_id), events) in &routes {
            if ops
                .get(&(node.to_string(), op_id))
                .is_some_and(|o| o.call.is_write())
            {
                for a in attempts_of_events(events) {
                    believed.entry(node).or_default().insert(a.region);
                }
            }
        }
        let mut marks: BTreeMap<&str, Vec<Mark>> = BTreeMap::new();
        let (mut judged, mut gave_up_1002) = (0, 0usize);
        let mut paused: BTreeMap<usize, Vec<(u64, u64)>> = BTreeMap::new();
        let mut waits_judged = 0usize;
        // Each op with its route events and attempts, in session and call order.
        let mut calls = Vec::new();
        for (&(node, op_id), events) in &routes {
            let Some(op) = ops.get(&(node.to_string(), op_id)) else {
                continue;
            };
            judged += 1;
            let attempts = attempts_of(op, events);
            if attempts.iter().any(|a| a.sent_ns.is_none()) {
                unaligned += 1;
            }
            let spans = paused.entry(op.client).or_insert_with(|| {
                let node = overcast_harness::registry::client_node(
                    super::RegionsRole::Client,
                    op.client,
                    self.client_nodes,
                );
                overcast_sim::timeline::paused_spans(&history.events, &node)
            });
            self.check_op(op, events, &attempts, spans, &mut violations);
            if attempts.iter().all(|a| a.sent_ns.is_some()) {
                waits_judged += attempts.len().saturating_sub(1);
                if let Some(what) = self.wait_out_of_row(op, &attempts, spans) {
                    violations.push(v(op, what));
                }
            }
            if !write_region.is_empty() {
                let believed = believed.get(node);
                gave_up_1002 +=
                    check_session_retry(op, &attempts, &write_region, believed, &mut violations)
                        as usize;
            }
            for e in events {
                if let RegionEvent::Route {
                    what,
                    region,
                    status,
                    sub_status,
                    for_ms: Some(for_ms),
                    ..
                } = &e.event
                {
                    if what == route::MARK_UNAVAILABLE {
                        marks.entry(node).or_default().push(Mark {
                            region,
                            from_ms: e.local_ms,
                            until_ms: e.local_ms + for_ms,
                            at_ns: e.at_ns,
                            op_id: op.id,
                            status: *status,
                            sub_status: *sub_status,
                        });
                    }
                }
            }
            calls.push((node, *op, events, attempts));
        }
        // Marks are judged across a session's ops: a later read must not go
        // to a region still marked unavailable.
        for (node, op, events, attempts) in &calls {
            let Some(marks) = marks.get(node) else {
                continue;
            };
            if op.call.is_write() || op.call.consistency == Consistency::Strong {
                continue;
            }
            // The first attempt goes to the head of the list; a retry walks on.
            if let Some(a) = attempts.first() {
                let sent_ns = a.sent_ns.unwrap_or(events[a.at].at_ns);
                // The SDK keeps one mark per region, the newest: marks of
                // earlier calls in recording order, the last one per region.
                let mut latest: BTreeMap<&str, &Mark> = BTreeMap::new();
                for m in marks
                    .iter()
                    .filter(|m| m.op_id != op.id && m.at_ns <= sent_ns)
                {
                    latest.insert(m.region, m);
                }
                // The slack counts for the SDK both ways: the region it used
                // must surely have been marked, and every other region counts
                // as marked if it may still have been.
                let marked: BTreeSet<&str> = latest
                    .values()
                    .filter(|m| a.local_ms < m.until_ms + self.bounds.slack_ms)
                    .map(|m| m.region)
                    .collect();
                let Some(m) = latest.get(a.region).copied().filter(|m| {
                    m.from_ms <= a.local_ms && a.local_ms + self.bounds.slack_ms < m.until_ms
                }) else {
                    continue;
                };
                if regions.iter().all(|r| marked.contains(r)) {
                    continue;
                }
                violations.push(v(
                    op,
                    format!(
                        "an attempt went to region {} at {} on the client's clock, but op {} had marked it \
                         unavailable at {} (after {}/{}) until {}, and not every region was marked \
                         (SPEC §4.1: an unavailable region is moved to the end of the list)",
                        a.region,
                        clock_secs(a.local_ms),
                        m.op_id,
                        clock_secs(m.from_ms),
                        m.status,
                        m.sub_status,
                        clock_secs(m.until_ms)
                    ),
                ));
            }
        }
        // SPEC §4.1, 403/1008 (the region is being removed from the
        // account): the region is marked unavailable and the read goes to
        // the next preferred region. Judged from the answers, not from the
        // SDK's marks: after a read attempt answered 403/1008 by a region,
        // neither the call's next attempt nor a later read's first attempt
        // of the session goes there within the unavailable time on the
        // client's clock, unless every other region may be marked then (the
        // SDK's marks, with the slack). Other retries walk the list, whose
        // end holds the marked regions, so they are not judged here.
        // Per session: (region, answered on the client's clock, op, answered
        // in simulated time).
        let mut removed: BTreeMap<&str, Vec<(&str, u64, u64, u64)>> = BTreeMap::new();
        let mut removals_seen = 0usize;
        for (node, op, events, attempts) in &calls {
            if op.call.is_write() || op.call.consistency == Consistency::Strong {
                continue;
            }
            for (i, a) in attempts.iter().enumerate() {
                let at_ns = events[a.at].at_ns;
                let after_removal =
                    i > 0 && (attempts[i - 1].status, attempts[i - 1].sub_status) == (403, 1008);
                let earlier = if i == 0 || after_removal {
                    removed.get(node).map_or(&[][..], Vec::as_slice)
                } else {
                    &[]
                };
                // Each answer replaces the region's mark, so the newest
                // answer of a region decides until when it is marked (a
                // clock stepped back since an older one makes it end sooner).
                let newest: BTreeMap<&str, (u64, u64, u64)> = earlier
                    .iter()
                    .map(|&(region, from_ms, by, answered_ns)| (region, (from_ms, by, answered_ns)))
                    .collect();
                for (&region, &(from_ms, by, answered_ns)) in &newest {
                    let within = a.region == region
                        && a.local_ms >= from_ms
                        && a.local_ms + self.bounds.slack_ms < from_ms + self.bounds.unavailable_ms;
                    if !within {
                        continue;
                    }
                    let mut latest: BTreeMap<&str, &Mark> = BTreeMap::new();
                    for m in marks
                        .get(node)
                        .into_iter()
                        .flatten()
                        .filter(|m| m.at_ns <= at_ns)
                    {
                        latest.insert(m.region, m);
                    }
                    // A later mark of the region for the whole unavailable
                    // time (say after a timeout there) replaces the one the
                    // answer asked for, in the SDK as in the real one, which
                    // keeps one per region: on a clock stepped back since, it
                    // ends sooner. First attempts are judged against it by
                    // the mark rule above.
                    let remarked = latest.get(region).is_some_and(|m| {
                        m.at_ns > answered_ns
                            && m.until_ms - m.from_ms >= self.bounds.unavailable_ms
                            && a.local_ms + self.bounds.slack_ms >= m.until_ms
                    });
                    if remarked {
                        continue;
                    }
                    let all_marked = regions.iter().all(|r| {
                        *r == region
                            || latest
                                .get(r)
                                .is_some_and(|m| a.local_ms < m.until_ms + self.bounds.slack_ms)
                    });
                    // A first attempt into a region the SDK itself marked
                    // (in an earlier call) is reported by the mark rule above.
                    let reported = i == 0
                        && latest.get(region).is_some_and(|m| {
                            m.op_id != op.id
                                && m.from_ms <= a.local_ms
                                && a.local_ms + self.bounds.slack_ms < m.until_ms
                        });
                    if !all_marked && !reported {
                        violations.push(v(
                            op,
                            format!(
                                "a read attempt went to region {region} at {} on the client's clock, but \
                                 {region} had answered op {by}'s attempt 403/1008 at {} (the region \
                                 is being removed; SPEC §4.1: mark it unavailable for {} ms and retry on the \
                                 next preferred region), and not every other region was marked",
                                clock_secs(a.local_ms),
                                clock_secs(from_ms),
                                self.bounds.unavailable_ms
                            ),
                        ));
                    }
                }
                if (a.status, a.sub_status) == (403, 1008) {
                    removals_seen += 1;
                    // The SDK marks the region when the answer comes, on its
                    // clock then, which a step may have set back since the
                    // send: the earlier of the send and the next decision.
                    let answered_ms = events
                        .get(a.at + 1)
                        .map_or(a.local_ms, |e| e.local_ms.min(a.local_ms));
                    removed.entry(node).or_default().push((
                        a.region,
                        answered_ms,
                        op.id,
                        events[a.at].at_ns,
                    ));
                }
            }
        }
        let mut note = format!("{judged} ops with routing events, {waits_judged} waits judged");
        if removals_seen > 0 {
            note.push_str(&format!(
                ", {removals_seen} read attempts answered 403/1008"
            ));
        }
        if gave_up_1002 > 0 {
            note.push_str(&format!(
                ", {gave_up_1002} session reads that gave up with 404/1002 judged for the write region"
            ));
        }
        if unaligned > 0 {
            note.push_str(&format!(
                "; {unaligned} whose attempt events do not match their attempts (410 window not judged)"
            ));
        }
        let violations = violations
            .into_iter()
            .map(|v| {
                let op = v
                    .ops
                    .first()
                    .and_then(|id| history.ops.iter().find(|o| o.id == *id));
                match op {
                    Some(op) => {
                        let session = session_of(op);
                        let events = routes
                            .get(&(session.as_str(), op.call.seq))
                            .map_or(&[][..], Vec::as_slice);
                        let account = route_account(op, events, &v.message);
                        v.with_evidence(account)
                    }
                    None => v,
                }
            })
            .collect();
        Checked::new(Verdict::from_violations(violations))
            .with_note(note)
            .partly(unaligned > 0)
    }
}

/// SPEC §4.1, 404/1002: a session read that reached a region lacking its
/// token is retried in that region for a while, then on the write region
/// (single-write accounts). So the caller sees 404/1002 only after an
/// attempt at or after the first 404/1002 went to the write region (or to
/// a region the session may believe is: `believed`). Returns whether the op
/// was one that gave up so.
fn check_session_retry(
    op: &RegionOp,
    attempts: &[Attempt],
    write_region: &BTreeSet<&str>,
    believed: Option<&BTreeSet<&str>>,
    violations: &mut Vec<Violation>,
) -> bool {
    let gave_up = matches!(
        op.result,
        Some(RegionOutcome::Failed {
            status: 404,
            sub_status: 1002,
            ..
        })
    );
    let Some(first) = attempts
        .iter()
        .position(|a| (a.status, a.sub_status) == (404, 1002))
        .filter(|_| gave_up)
    else {
        return false;
    };
    if attempts[first..]
        .iter()
        .any(|a| write_region.contains(a.region) || believed.is_some_and(|b| b.contains(a.region)))
    {
        return true;
    }
    let tried: BTreeSet<&str> = attempts[first..].iter().map(|a| a.region).collect();
    violations.push(v(
        op,
        format!(
            "the caller saw 404/1002 after {} attempts from the first 404/1002 on, all in {}, none in the write region {}; \
             SPEC §4.1: after its in-region retries a session read is retried on the write region",
            attempts.len() - first,
            tried.into_iter().collect::<Vec<_>>().join(", "),
            write_region
                .union(believed.unwrap_or(&BTreeSet::new()))
                .copied()
                .collect::<Vec<_>>()
                .join(" or ")
        ),
    ));
    true
}

/// The op's `attempt` events, with send times from its attempts when the
/// two lists have the same length.
fn attempts_of<'a>(op: &RegionOp, events: &[&'a NodeEvent<RegionEvent>]) -> Vec<Attempt<'a>> {
    let mut out = attempts_of_events(events);
    if out.len() == op.attempts.len() {
        for (a, sent) in out.iter_mut().zip(&op.attempts) {
            a.sent_ns = Some(sent.sent_ns);
        }
    }
    out
}

/// The `attempt` events among an op's route events, without send times.
fn attempts_of_events<'a>(events: &[&'a NodeEvent<RegionEvent>]) -> Vec<Attempt<'a>> {
    events
        .iter()
        .enumerate()
        .filter_map(|(at, e)| match &e.event {
            RegionEvent::Route {
                what,
                region,
                status,
                sub_status,
                ..
            } if what == route::ATTEMPT => Some(Attempt {
                at,
                region,
                status: *status,
                sub_status: *sub_status,
                sent_ns: None,
                local_ms: e.local_ms,
            }),
            _ => None,
        })
        .collect()
}

/// An operation's routing decisions and attempts as the SDK logged them,
/// as the focused account of an R6 violation: when (true time, with the
/// client's own clock beside it), what it did, the region and the answer;
/// the attempts to a region the violation names marked.
fn route_account(op: &RegionOp, events: &[&NodeEvent<RegionEvent>], message: &str) -> Evidence {
    let rows = events
        .iter()
        .filter_map(|e| match &e.event {
            RegionEvent::Route {
                what,
                region,
                status,
                sub_status,
                for_ms,
                ..
            } => Some(EvidenceRow {
                op: None,
                cells: vec![
                    format!(
                        "{} true, {} on the client's clock",
                        secs(e.at_ns),
                        clock_secs(e.local_ms)
                    ),
                    match for_ms {
                        Some(ms) => format!("{} for {ms} ms", what.replace('_', " ")),
                        None => what.replace('_', " "),
                    },
                    region.clone(),
                    match (status, sub_status) {
                        (0, _) if what == route::ATTEMPT => "no answer".to_string(),
                        (0, _) => String::new(),
                        (s, 0) => s.to_string(),
                        (s, sub) => format!("{s}/{sub}"),
                    },
                ],
                marked: what == route::ATTEMPT && message.contains(&format!("region {region} ")),
            }),
            _ => None,
        })
        .collect();
    Evidence {
        title: format!("How operation #{} was routed", op.id),
        lead: vec![format!(
            "Every routing step of {} op #{} of item {} as the SDK logged it: the region list, its marks and its attempts (SPEC §4.1).",
            op.call.op, op.id, op.call.item
        )],
        columns: ["when", "step", "region", "answer"]
            .map(String::from)
            .to_vec(),
        rows,
        notes: Vec::new(),
    }
}

fn v(op: &RegionOp, what: String) -> Violation {
    Violation::new(
        "R6",
        format!(
            "session {}, {} op {} of item {}: {what}",
            session_of(op),
            op.call.op,
            op.id,
            op.call.item
        ),
    )
    .with_ops([op.id])
}

impl Routing {
    /// SPEC §4.1's wait before each retry of `op`, from the row of the
    /// answer before it, judged from both sides where the row fixes it:
    ///
    /// - 404/1002 in the same region (the session loop): at most 0, 5, 25,
    ///   125, then 500 ms for the loop's first, second, ... retry (counting
    ///   every 404/1002 retry of the op, which can only overstate the step;
    ///   the region step goes at once); at least that while the op's answers
    ///   are 404/1002s of one region only, cut to what is left of the
    ///   loop's 5 s;
    /// - 503, 500, 410/1022: at once;
    /// - a failover (no answer, 403/3, 403/1008): a read waits the failover
    ///   wait before each, a write goes at once the first time and waits it
    ///   from the second failover on (both sides);
    /// - 410 and 449 in the region: at most the window's backoff
    ///   ([`WindowSchedule`]); 429: at most its retry-after.
    ///
    /// Each upper bound is widened by a tenth for clocks, the timer's 2 ms
    /// and the time the client's node was paused during the wait (`paused`);
    /// each lower bound is narrowed by 1 ms. Returns what broke, in words.
    fn wait_out_of_row(
        &self,
        op: &RegionOp,
        attempts: &[Attempt],
        paused: &[(u64, u64)],
    ) -> Option<String> {
        let failover_ns = self.bounds.failover_wait_ms * MS;
        let mut window = WindowSchedule::default();
        let (mut failovers, mut session_retries) = (0u32, 0u32);
        // The lower bound of the session loop is judged only while the op's
        // answers since its first 404/1002 (whose retry's decision, true ns,
        // starts the loop) are all 404/1002s from one region: then the
        // SDK's loop is that run, never restarted. Otherwise the loop may
        // have restarted, or may have run on across another answer.
        let mut session_run: Option<(u64, bool)> = None;
        for (i, pair) in op.attempts.windows(2).enumerate() {
            let (prev, next) = (&attempts[i], &attempts[i + 1]);
            let waited = pair[1].waited_ns;
            let decided = pair[1].sent_ns.saturating_sub(waited);
            let same_region = next.region == prev.region;
            if (prev.status, prev.sub_status) != (404, 1002) {
                session_run = session_run.map(|(start, _)| (start, false));
            }
            let (least, most, row) = match (prev.status, prev.sub_status) {
                (404, 1002) => {
                    let step = |k: u32| match k {
                        0 => 0,
                        k => (retry::SESSION_INITIAL_BACKOFF.as_nanos() as u64)
                            .saturating_mul(
                                u64::from(retry::SESSION_BACKOFF_MULTIPLIER).saturating_pow(k - 1),
                            )
                            .min(retry::SESSION_MAX_BACKOFF.as_nanos() as u64),
                    };
                    // The region step after the loop goes at once; a loop
                    // retry may land in another region too, when the list's
                    // head changed (a mark ran out) while it waited.
                    let most = step(session_retries);
                    session_retries += 1;
                    let (start, pure) = *session_run.get_or_insert((decided, true));
                    if same_region && pure {
                        let left = (retry::SESSION_WINDOW.as_nanos() as u64)
                            .saturating_sub(decided - start);
                        let least = step(session_retries - 1).min(left);
                        (least, most, "404/1002, the session loop in the region")
                    } else {
                        session_run = Some((start, false));
                        (0, most, "404/1002, the session loop or the region step")
                    }
                }
                (503 | 500, _) | (410, 1022) => (0, 0, "a retry in the next region, at once"),
                (410 | 449, _) => {
                    let most = window
                        .longest_wait(&pair[0].result)
                        .map_or(0, |d| d.as_nanos() as u64);
                    (0, most, "410/449, the transport window's backoff")
                }
                (0, _) | (403, 3 | 1008) => {
                    failovers += 1;
                    let wait = if !op.call.is_write() || failovers > 1 {
                        failover_ns
                    } else {
                        0
                    };
                    (wait, wait, "a failover (connection error, 403/3, 403/1008)")
                }
                (429, _) => {
                    let asked = match pair[0].result {
                        AttemptResult::Status { retry_after_ms, .. } => {
                            asked_wait_ms(retry_after_ms)
                        }
                        _ => DEFAULT_RETRY_AFTER_MS,
                    } * MS;
                    (0, asked, "429, the server's retry-after")
                }
                _ => continue,
            };
            let paused_ns = overlap_ns(paused, decided, pair[1].sent_ns);
            let allowed = most + clock_slack_ns(most) + TIMER_SLACK_NS + paused_ns;
            let words = |bound: &str, ns: u64| {
                format!(
                    "it waited {:.3} s before attempt {} (region {}), after attempt {} ended {}/{} in region {}; \
                     SPEC §4.1 ({row}) allows {bound} {:.3} s there",
                    waited as f64 / 1e9,
                    i + 2,
                    next.region,
                    i + 1,
                    prev.status,
                    prev.sub_status,
                    prev.region,
                    ns as f64 / 1e9
                )
            };
            if waited > allowed {
                let mut what = words("at most", most);
                if paused_ns > 0 {
                    what.push_str(&format!(
                        " (plus the {:.3} s its client was paused)",
                        paused_ns as f64 / 1e9
                    ));
                }
                return Some(what);
            }
            if waited + MS < least {
                return Some(words("no less than", least));
            }
        }
        None
    }

    fn check_op(
        &self,
        op: &RegionOp,
        events: &[&NodeEvent<RegionEvent>],
        attempts: &[Attempt],
        paused: &[(u64, u64)],
        violations: &mut Vec<Violation>,
    ) {
        let b = &self.bounds;
        // SPEC §4.1, 503: writes on single-write accounts are not retried.
        if op.call.is_write() {
            if let Some(i) = attempts[..attempts.len().saturating_sub(1)]
                .iter()
                .position(|a| a.status == 503)
            {
                violations.push(v(
                    op,
                    format!(
                        "the write's attempt {} in region {} got 503 and it was sent again ({} more attempts); \
                         SPEC §4.1: writes on single-write accounts are not retried after 503",
                        i + 1,
                        attempts[i].region,
                        attempts.len() - i - 1
                    ),
                ));
            }
        }
        let (mut unavailable, mut session, mut failover) = (0u32, 0u32, 0u32);
        let mut run_start = 0;
        let mut name_cache = 0u32;
        for (i, a) in attempts.iter().enumerate() {
            if i > 0 && a.region != attempts[i - 1].region {
                let prev = &attempts[i - 1];
                match (prev.status, prev.sub_status) {
                    (503 | 500 | 410, _) => unavailable += 1,
                    (404, 1002) => session += 1,
                    (0 | 403, _) => failover += 1,
                    _ => {}
                }
                run_start = i;
                name_cache = 0;
            } else if i > 0 && attempts[i - 1].status != 410 {
                run_start = i;
            }
            if (a.status, a.sub_status) == (410, 1000) {
                name_cache += 1;
                if name_cache == b.name_cache_retries + 2 {
                    violations.push(v(
                        op,
                        format!(
                            "{name_cache} attempts in region {} ended 410/1000; SPEC §4.1: retried {} times, the next is a 503",
                            a.region, b.name_cache_retries
                        ),
                    ));
                }
            }
            let Some(next) = attempts.get(i + 1) else {
                continue;
            };
            if a.status == 410 && next.region == a.region {
                let needed = match a.sub_status {
                    0 => Some(route::REFRESH_ADDRESSES),
                    1007 | 1008 => Some(route::REFRESH_PARTITION_MAP),
                    1000 => Some(route::REFRESH_CONTAINER_MAP),
                    1022 => {
                        violations.push(v(
                            op,
                            format!(
                                "after 410/1022 in region {} it was retried in the same region; SPEC §4.1: 410/1022 is a 503 at once",
                                a.region
                            ),
                        ));
                        None
                    }
                    _ => None,
                };
                let refreshed = |w: &str| {
                    events[a.at + 1..next.at]
                        .iter()
                        .any(|e| matches!(&e.event, RegionEvent::Route { what, .. } if what == w))
                };
                if let Some(w) = needed.filter(|w| !refreshed(w)) {
                    violations.push(v(
                        op,
                        format!(
                            "after 410/{} in region {} it was retried without a {w} (R6: re-routed with a refreshed map)",
                            a.sub_status, a.region
                        ),
                    ));
                }
                if let (Some(start), Some(sent)) = (attempts[run_start].sent_ns, next.sent_ns) {
                    // Time the client's node spent paused stretches a
                    // correct SDK's window in true time.
                    let limit = (b.gone_window_ms + b.slack_ms) * 1_000_000
                        + overlap_ns(paused, start, sent);
                    if sent.saturating_sub(start) > limit {
                        violations.push(v(
                            op,
                            format!(
                                "it retried a 410 in region {} {} ms after the run's first attempt; the 410 window is {} ms",
                                a.region,
                                (sent - start) / 1_000_000,
                                b.gone_window_ms
                            ),
                        ));
                    }
                }
            }
        }
        for (n, bound, what) in [
            (
                unavailable,
                b.unavailable_retries,
                "after 503/500/410 (SPEC §4.1: MaxServiceUnavailableRetryCount)",
            ),
            (
                session,
                b.session_region_retries,
                "after 404/1002 (SPEC §4.1: MaxSessionTokenRetryCount)",
            ),
            (
                failover,
                b.failovers,
                "after connection errors or 403 (SPEC §4.1: MaxRetryCount)",
            ),
        ] {
            if n > bound {
                violations.push(v(
                    op,
                    format!("{n} cross-region retries {what}; the bound is {bound}"),
                ));
            }
        }
    }
}
