//! The checks of `occ`: linearizability of every item against the
//! reference spec (E2–E5), ETag freshness (E1), and retry discipline
//! (R1–R3, [`super::retry`]), each a [`Checker`] of the run's history.

use super::history::{Call, OccEvent, Outcome};
use super::spec::{Cond, ItemOp, ItemResult, ItemSpec, Match, Orphan, Tag};
use super::workload::is_probe;
use crate::kit::retry::{check_retries, window_wait_overrun, RetryCase, RetryRules, Surfaced};
use crate::kit::words::{lin_checked, same_op};
use overcast_model::partition::Effect;
use overcast_model::retry::RetryOptions;
use overcast_model::store;
use overcast_model::wire;
use overcast_sim::check::fresh::check_fresh;
use overcast_sim::check::LIVENESS;
use overcast_sim::check::{Checked, Checker, Verdict, Violation};
use overcast_sim::disk::DiskFault;
use overcast_sim::history::{AttemptResult, History, OpRecord};
use overcast_sim::lin::{self, Operation};
use overcast_sim::world::{Happening, WorldEvent, WorldOutcome};
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::BuildHasherDefault;

/// FxHash: fixed, so the same hashes in every run, and cheaper than SipHash
/// on the checker's short string keys (these maps are only looked up, never
/// iterated).
type FixedState = BuildHasherDefault<rustc_hash::FxHasher>;

/// The history `occ` records (with its servers' log events, D1).
pub type OccHistory = History<Call, Outcome, OccEvent, overcast_model::durability::LogEvent>;

/// Linearizability of every item against [`ItemSpec`].
pub struct Linearizability {
    /// The checker's options (budgets count steps in a run).
    pub options: lin::Options,
    /// A title for the HTML report.
    pub title: String,
}

impl Checker<OccHistory> for Linearizability {
    fn properties(&self) -> &'static [overcast_sim::check::Property] {
        &[crate::kit::properties::LINEARIZABILITY]
    }

    fn check(&self, history: &OccHistory) -> Checked {
        let (history, lost) = without_lost_items(history);
        let report = check_items(&history, &self.options);
        lin_checked(&report, &self.title, &same_op)
            .with_note(format!("{} items{}", report.keys, lost_note(&lost)))
            .partly(!lost.is_empty())
    }
}

/// E1: every successful write's ETag is new for its item, and one ETag
/// never stands for two bodies.
pub struct EtagFreshness;

impl Checker<OccHistory> for EtagFreshness {
    fn properties(&self) -> &'static [overcast_sim::check::Property] {
        &[crate::kit::properties::E1]
    }

    fn check(&self, history: &OccHistory) -> Checked {
        let (history, lost) = without_lost_items(history);
        let checked = Checked::new(Verdict::from_violations(e1(&history).into_iter().collect()))
            .partly(!lost.is_empty());
        match lost_note(&lost) {
            note if note.is_empty() => checked,
            note => checked.with_note(note.trim_start_matches(", ").to_string()),
        }
    }
}

/// The start of the world event that names an item whose acknowledged write
/// a lying disk lost (`*`: a lost write that does not decode, any item).
pub const LOST_ITEM: &str = "lying disk lost an acknowledged write of item ";

/// How the verdict tells data lost by an injected lying disk from data
/// served wrong: the world keeps the bytes each lying sync dropped in a power
/// failure; they are decoded here into the items they wrote, named in the
/// history as world events. Those items' histories are not checked for
/// linearizability or E1 (their loss is expected and reported in the
/// checks' notes); every other item is. A correct log serves nothing it
/// cannot vouch for (a hole in the middle of the log makes the server
/// unavailable); only a loss at the very end of the log is invisible to it,
/// and that is the lying disk's, not the model's.
pub fn lost_item_events(world: &WorldOutcome) -> Vec<WorldEvent> {
    let mut items = BTreeSet::new();
    for (node, w) in &world.lost_writes {
        let s = overcast_model::wal::scan_fragment(&w.bytes);
        if s.valid < w.bytes.len() {
            items.insert(("*".to_string(), node.clone()));
        }
        for r in s.records {
            #[allow(unreachable_patterns)]
            let key = match &r.effect {
                Effect::Store(
                    store::Effect::ItemWritten { key, .. }
                    | store::Effect::ItemWrittenWithMetadata { key, .. }
                    | store::Effect::ItemDeleted { key, .. },
                ) => &key.id,
                _ => continue,
            };
            items.insert((key.clone(), node.clone()));
        }
    }
    items
        .into_iter()
        .map(|(item, node)| WorldEvent {
            at_ns: world.sim_ns,
            what: Happening::Note(format!("{LOST_ITEM}{item} on {node}")),
        })
        .collect()
}

/// What marks, in the history's world events, a server whose disk the plan
/// damaged in a way that can leave a log recovery cannot read.
pub const DAMAGED_DISK: &str = "disk damaged on ";

/// One event per server whose disk had a write flipped, misdirected or lost
/// by the plan: only those may refuse service by design (a corrupt log); an
/// unavailable server whose disk was never damaged corrupted its own log.
pub fn damaged_disk_events(world: &WorldOutcome) -> Vec<WorldEvent> {
    world
        .disk_faults
        .iter()
        .filter_map(|(node, kinds)| {
            let damage: Vec<String> = DiskFault::corrupting_in(kinds)
                .into_iter()
                .map(|(k, n)| format!("{}×{n}", k.name()))
                .collect();
            (!damage.is_empty()).then(|| WorldEvent {
                at_ns: world.sim_ns,
                what: Happening::Note(format!("{DAMAGED_DISK}{node}: {}", damage.join(", "))),
            })
        })
        .collect()
}

/// The servers whose disk the plan damaged (see [`damaged_disk_events`]).
fn damaged_servers(history: &OccHistory) -> BTreeSet<String> {
    history
        .events
        .iter()
        .filter_map(|e| e.what.note()?.strip_prefix(DAMAGED_DISK))
        .filter_map(|rest| rest.split(':').next())
        .map(str::to_string)
        .collect()
}

/// The history without the items a lying disk lost writes of, and those items.
fn without_lost_items(history: &OccHistory) -> (Cow<'_, OccHistory>, BTreeSet<String>) {
    let lost: BTreeSet<String> = history
        .events
        .iter()
        .filter_map(|e| e.what.note()?.strip_prefix(LOST_ITEM))
        .filter_map(|rest| rest.split(" on ").next())
        .map(str::to_string)
        .collect();
    if lost.is_empty() {
        return (Cow::Borrowed(history), lost);
    }
    let mut h = history.clone();
    h.ops
        .retain(|o| !lost.contains("*") && !lost.contains(&o.key));
    (Cow::Owned(h), lost)
}

/// ", not checked: k1, k3 (a lying disk lost acknowledged writes)" or "".
fn lost_note(lost: &BTreeSet<String>) -> String {
    if lost.is_empty() {
        return String::new();
    }
    format!(
        ", not checked: {} (a lying disk lost acknowledged writes)",
        lost.iter().cloned().collect::<Vec<_>>().join(", ")
    )
}

/// R1–R3, from each operation's attempt log; and R3's upper bound on the
/// waits of the transport window ([`window_wait_overrun`]), allowing for
/// the spans in which the world held the client's node paused.
pub struct RetryDiscipline {
    /// The SDK's budgets the run used.
    pub retry: RetryOptions,
    /// The run's client nodes (`OccParams::clients`): names the node of
    /// each history client ([`overcast_harness::registry::client_node`]).
    pub clients: usize,
}

impl Checker<OccHistory> for RetryDiscipline {
    fn properties(&self) -> &'static [overcast_sim::check::Property] {
        &[
            crate::kit::properties::R1,
            crate::kit::properties::R2,
            crate::kit::properties::R3,
        ]
    }

    fn label(&self) -> &'static str {
        "client"
    }

    fn check(&self, history: &OccHistory) -> Checked {
        let rules = RetryRules {
            max_rate_limited_retries: self.retry.max_rate_limited_retries,
            max_rate_limited_wait_ms: self.retry.max_rate_limited_wait.as_millis() as u64,
        };
        let cases = history.ops.iter().map(|o| RetryCase {
            op: o.id,
            idempotent: !o.call.is_write(),
            attempts: &o.attempts,
            surfaced: match &o.result {
                None => Surfaced::Unknown,
                Some(Outcome::TimedOut) => Surfaced::TimedOut,
                Some(Outcome::CancelledNotRun) => Surfaced::CancelledNotRun,
                Some(Outcome::Response { status, .. }) => Surfaced::Status(*status),
            },
            cancel_ns: o.call.cancel_ns(o.invoke_ns),
        });
        let violation = check_retries(&rules, cases).or_else(|| {
            let mut paused: BTreeMap<usize, Vec<(u64, u64)>> = BTreeMap::new();
            history.ops.iter().find_map(|o| {
                let spans = paused.entry(o.client).or_insert_with(|| {
                    let node = overcast_harness::registry::client_node(
                        OccRole::Client,
                        o.client,
                        self.clients,
                    );
                    overcast_sim::timeline::paused_spans(&history.events, &node)
                });
                window_wait_overrun(o.id, &o.attempts, spans)
            })
        });
        Checked::new(Verdict::from_violations(violation.into_iter().collect()))
    }
}

/// Where the probe ran: the window after the heal in which it had to
/// finish, and which items live on which server.
#[derive(Clone, Debug)]
pub struct ProbeSetup {
    /// Servers in the run (partition `p` is on server `p % servers`).
    pub servers: usize,
    /// Partitions in the run.
    pub partitions: u32,
    /// Every item the probe must reach.
    pub items: Vec<String>,
    /// The bound, ms after the probe's start.
    pub bound_ms: u64,
}

impl ProbeSetup {
    /// The server node (`server-1`) that holds `item`'s partition.
    fn server_of(&self, item: &str) -> String {
        let p = wire::partition_of(item, self.partitions) as usize;
        format!("server-{}", p % self.servers.max(1))
    }

    /// When the probe started (its first call) and the end of its bound.
    fn window(&self, history: &OccHistory) -> Option<(u64, u64)> {
        let start = history
            .ops
            .iter()
            .filter(|o| is_probe(o.client))
            .map(|o| o.invoke_ns)
            .min()?;
        Some((start, start + self.bound_ms * 1_000_000))
    }
}

/// A server that declared itself unavailable by design (its log found
/// corrupt), from the history's node events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// When it became unavailable, true ns.
    pub since_ns: u64,
    /// Why, as the server said.
    pub reason: String,
}

/// The servers (by node name without incarnation, `server-1`) that were
/// unavailable by design at some instant of `[from_ns, to_ns]`, each with
/// the start of that unavailability and its reason. A server is unavailable
/// from an [`OccEvent::Unavailable`] until its next [`OccEvent::Serving`],
/// and only a server whose disk the plan damaged counts ([`DAMAGED_DISK`]).
pub fn unavailable_between(
    history: &OccHistory,
    from_ns: u64,
    to_ns: u64,
) -> BTreeMap<String, Refusal> {
    let mut open: BTreeMap<&str, Refusal> = BTreeMap::new();
    let mut found = BTreeMap::new();
    let damaged = damaged_servers(history);
    for e in &history.node_events {
        if e.at_ns > to_ns {
            break;
        }
        let server = e.node.split('#').next().unwrap_or(&e.node);
        // Only a damaged disk excuses a refusal; any other is the model's.
        if !damaged.contains(server) {
            continue;
        }
        match &e.event {
            OccEvent::Unavailable { reason } => {
                open.entry(server).or_insert(Refusal {
                    since_ns: e.at_ns,
                    reason: reason.clone(),
                });
            }
            OccEvent::Received(_) => {}
            OccEvent::Serving { .. } => {
                if let Some(r) = open.remove(server) {
                    if e.at_ns >= from_ns {
                        found.entry(server.to_string()).or_insert(r);
                    }
                }
            }
        }
    }
    for (server, r) in open {
        found.entry(server.to_string()).or_insert(r);
    }
    found
}

/// "k3, k5 not judged: server-1 unavailable since 12.3 s (reason)", one
/// clause per server, for the items `excused` maps to their server.
fn excused_note(
    excused: &BTreeMap<String, Vec<&str>>,
    refusals: &BTreeMap<String, Refusal>,
) -> String {
    excused
        .iter()
        .map(|(server, items)| {
            let r = &refusals[server];
            format!(
                "{} not judged: {server} unavailable since {} ({})",
                items.join(", "),
                secs(r.since_ns),
                r.reason
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The application's invariant over the counter items (`n0`, ...), judged
/// on the probe's final read after the heal: every acknowledged increment's
/// token is in the body exactly once, every unknown one at most once, and no
/// other token is there. A counter the probe could not read because its
/// server was unavailable by design during the probe is not judged, and the
/// note says so; items a lying disk lost writes of are not judged either.
pub struct Increments {
    /// Where the probe ran.
    pub probe: ProbeSetup,
}

/// What became of one increment token, from the puts that carried it.
#[derive(Clone, Copy, Debug, Default)]
struct TokenFate {
    acked: bool,
    unknown: bool,
    /// The last put that carried it and was acknowledged or may have applied.
    put: Option<u64>,
}

impl Checker<OccHistory> for Increments {
    fn properties(&self) -> &'static [overcast_sim::check::Property] {
        &[crate::services::occ::properties::INCREMENTS]
    }

    fn check(&self, history: &OccHistory) -> Checked {
        let (history, lost) = without_lost_items(history);
        let mut fates: BTreeMap<&str, BTreeMap<&str, TokenFate>> = BTreeMap::new();
        let mut finals: BTreeMap<&str, &OpRecord<Call, Outcome>> = BTreeMap::new();
        for o in &history.ops {
            if !o.key.starts_with('n') {
                continue;
            }
            if is_probe(o.client) {
                if o.call.op == "read"
                    && matches!(
                        o.result,
                        Some(Outcome::Response {
                            status: 200 | 404,
                            ..
                        })
                    )
                    && finals
                        .get(o.key.as_str())
                        .is_none_or(|f| f.invoke_ns < o.invoke_ns)
                {
                    finals.insert(&o.key, o);
                }
                continue;
            }
            let Some(token) = o
                .call
                .body
                .as_deref()
                .and_then(|b| b.split_whitespace().last())
            else {
                continue;
            };
            let fate = fates.entry(&o.key).or_default().entry(token).or_default();
            match &o.result {
                None => {
                    fate.unknown = true;
                    fate.put = Some(o.id);
                }
                Some(Outcome::Response {
                    status: 200 | 201, ..
                }) => {
                    fate.acked = true;
                    fate.put = Some(o.id);
                }
                _ => {}
            }
        }
        let refusals = match self.probe.window(&history) {
            Some((from, to)) => unavailable_between(&history, from, to),
            None => BTreeMap::new(),
        };
        let mut excused: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        let mut judged = 0;
        let mut violations = Vec::new();
        for (item, tokens) in &fates {
            let Some(last) = finals.get(item) else {
                let server = self.probe.server_of(item);
                if refusals.contains_key(&server) {
                    excused.entry(server).or_default().push(item);
                    continue;
                }
                return Checked::new(Verdict::Undecided {
                    reason: format!("the probe never read {item} after the heal"),
                });
            };
            judged += 1;
            let body = match &last.result {
                Some(Outcome::Response { body, .. }) => body.as_deref().unwrap_or(""),
                _ => "",
            };
            let mut count: BTreeMap<&str, usize> = BTreeMap::new();
            for t in body.split_whitespace() {
                *count.entry(t).or_default() += 1;
            }
            let mut bad = |message: String, token: &str, put: Option<u64>, dropped: Option<u64>| {
                let named: Vec<u64> = put.into_iter().chain(dropped).chain([last.id]).collect();
                violations.push(
                    Violation::new(crate::services::occ::properties::INCREMENTS.id, message)
                        .with_evidence(increment_account(&history, item, token, &named))
                        .with_ops(named),
                )
            };
            for (token, fate) in tokens {
                let n = count.get(token).copied().unwrap_or(0);
                let by = fate.put.map_or(String::new(), |p| format!(" by op {p}"));
                if fate.acked && n != 1 {
                    let dropped = (n == 0)
                        .then(|| fate.put.and_then(|p| dropped_by(&history, item, token, p)))
                        .flatten();
                    let how = dropped.map_or(String::new(), |(op, v)| {
                        format!("; op {op}'s write of version {v} was the first to leave it out")
                    });
                    bad(format!("{item}: the increment {token} was acknowledged{by}, but the final body (op {}) holds it {n} times{how}", last.id), token, fate.put, dropped.map(|(op, _)| op));
                } else if !fate.acked && fate.unknown && n > 1 {
                    bad(format!("{item}: the increment {token} (outcome unknown{by}) is in the final body (op {}) {n} times", last.id), token, fate.put, None);
                }
            }
            for (token, n) in &count {
                let known = tokens.get(token).is_some_and(|f| f.acked || f.unknown);
                if !known {
                    bad(format!("{item}: the final body (op {}) holds {token} ({n} times), which no write that may have applied carried", last.id), token, None, None);
                }
            }
        }
        let note = [
            format!("{judged} counters"),
            excused_note(&excused, &refusals),
            lost_note(&lost).trim_start_matches(", ").to_string(),
        ]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
        if fates.is_empty() {
            // Nothing to judge is not a pass the check earned: say so.
            return Checked::new(Verdict::Held).with_note("no increments in this run".to_string());
        }
        if judged == 0 && violations.is_empty() {
            return Checked::new(Verdict::Undecided {
                reason: format!("no counter could be judged: {note}"),
            });
        }
        Checked::new(Verdict::from_violations(violations))
            .with_note(note)
            .partly(!excused.is_empty() || !lost.is_empty())
    }
}

/// The acknowledged write of counter `item` that first left increment
/// `token` out after op `put` wrote it: the lowest version above `put`'s
/// whose body lacks the token, as `(op, version)`.
fn dropped_by(history: &OccHistory, item: &str, token: &str, put: u64) -> Option<(u64, u64)> {
    let version = |o: &OpRecord<Call, Outcome>| match &o.result {
        Some(Outcome::Response {
            status: 200 | 201,
            version: Some(v),
            ..
        }) => Some(*v),
        _ => None,
    };
    let written = history.ops.iter().find(|o| o.id == put).and_then(version)?;
    history
        .ops
        .iter()
        .filter(|o| o.key == item && o.call.op == "put")
        .filter(|o| {
            !o.call
                .body
                .as_deref()
                .is_some_and(|b| b.split_whitespace().any(|t| t == token))
        })
        .filter_map(|o| version(o).filter(|v| *v > written).map(|v| (v, o.id)))
        .min()
        .map(|(v, op)| (op, v))
}

/// Liveness after the heal: the probe read and conditionally wrote every
/// item within its bound. A failure names the item, the operation pending,
/// what the probe last heard and from which server. An item whose server
/// was unavailable by design during the probe (its log corrupt, a typed
/// node event) is not judged, and the note says so; any other
/// unavailability is a failure.
pub struct ProbeLiveness {
    /// Where the probe ran.
    pub probe: ProbeSetup,
}

use crate::services::occ::OccRole;
use overcast_sim::timeline::secs;

impl Checker<OccHistory> for ProbeLiveness {
    fn properties(&self) -> &'static [overcast_sim::check::Property] {
        &[LIVENESS]
    }

    fn label(&self) -> &'static str {
        "probe"
    }

    fn check(&self, history: &OccHistory) -> Checked {
        let probe: Vec<&OpRecord<Call, Outcome>> =
            history.ops.iter().filter(|o| is_probe(o.client)).collect();
        let violation =
            |message: String, ops: Vec<u64>| Violation::new(LIVENESS.id, message).with_ops(ops);
        let at = |what: Happening| {
            history
                .events
                .iter()
                .find(|e| e.what == what)
                .map(|e| e.at_ns)
        };
        let run_end = at(Happening::End).unwrap_or(u64::MAX);
        let Some((start, end)) = self.probe.window(history) else {
            let quiet = run_end.saturating_sub(at(Happening::Heal).unwrap_or(0));
            if quiet < self.probe.bound_ms * 1_000_000 {
                return Checked::new(Verdict::Undecided {
                    reason: format!(
                        "the run ended {} after the heal, before the probe started (the quiet phase is shorter than the probe's bound of {} ms)",
                        secs(quiet),
                        self.probe.bound_ms
                    ),
                });
            }
            return Checked::new(Verdict::Broken {
                violations: vec![
                    violation("the probe never ran after the heal".into(), vec![]).during(
                        "",
                        at(Happening::Heal).unwrap_or(0),
                        run_end.min(u64::MAX / 2),
                        "no probe after the heal",
                    ),
                ],
            });
        };
        let refusals = unavailable_between(history, start, end);
        let mut excused: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        let mut judged = 0;
        let mut violations = Vec::new();
        for item in &self.probe.items {
            let ops: Vec<_> = probe.iter().filter(|o| &o.key == item).collect();
            let done = |op: &str, ok: &[u16]| {
                ops.iter().any(|o| {
                    o.call.op == op
                        && o.return_ns.is_some_and(|r| r <= end)
                        && matches!(&o.result, Some(Outcome::Response { status, .. }) if ok.contains(status))
                })
            };
            let pending = if !done("read", &[200, 404]) {
                "read"
            } else if !done("put", &[200, 201]) {
                "conditional write"
            } else {
                judged += 1;
                continue;
            };
            let name = self.probe.server_of(item);
            if refusals.contains_key(&name) {
                excused.entry(name).or_default().push(item);
                continue;
            }
            judged += 1;
            if run_end < end {
                return Checked::new(Verdict::Undecided {
                    reason: format!(
                        "the run ended {} after the probe started, before its bound of {} ms (the quiet phase is too short)",
                        secs(run_end - start),
                        self.probe.bound_ms
                    ),
                });
            }
            let since = ops.first().map_or(end, |o| o.invoke_ns);
            let heard = match ops.last() {
                None => format!("the probe never reached it ({name} serves it)"),
                Some(o) => match o.attempts.last() {
                    None => format!(
                        "its last call (from {}) had no answer by the end of the run ({name} serves it)",
                        secs(o.invoke_ns)
                    ),
                    Some(a) => match &a.result {
                        AttemptResult::Timeout | AttemptResult::Cancelled => format!(
                            "its last attempt (at {}) timed out waiting for {name}",
                            secs(a.sent_ns)
                        ),
                        AttemptResult::NotSent => format!(
                            "its last attempt (at {}) was refused: {name} did not listen",
                            secs(a.sent_ns)
                        ),
                        AttemptResult::Status { status, .. } => {
                            format!(
                                "its last attempt (at {}) was answered {status} by {name}",
                                secs(a.sent_ns)
                            )
                        }
                    },
                },
            };
            let restarts: Vec<u64> = history
                .events
                .iter()
                .filter(|e| matches!(&e.what, Happening::Restart(n) if *n == name))
                .map(|e| e.at_ns)
                .collect();
            let restarted = restarts.last().map_or(String::new(), |t| {
                format!(", which restarted at {}", secs(*t))
            });
            let named: Vec<u64> = ops.last().map(|o| vec![o.id]).unwrap_or_default();
            violations.push(
                violation(
                    format!(
                        "probe: {pending} of {item} pending since {} (bound {} ms after the probe started at {}); {heard}{restarted}",
                        secs(since.min(end)),
                        self.probe.bound_ms,
                        secs(start),
                    ),
                    named.clone(),
                )
                .with_evidence(probe_account(history, item, &name, &restarts, &named))
                .during(
                    name.clone(),
                    since.min(end),
                    run_end.min(end.max(since)),
                    format!("{pending} of {item} pending"),
                ),
            );
        }
        let note = excused_note(&excused, &refusals);
        if judged == 0 {
            return Checked::new(Verdict::Undecided {
                reason: format!("no item could be judged: {note}"),
            });
        }
        let checked =
            Checked::new(Verdict::from_violations(violations)).partly(!excused.is_empty());
        if note.is_empty() {
            checked
        } else {
            checked.with_note(note)
        }
    }
}

/// Checks every item of the history against [`ItemSpec`]. The checker's
/// version claims come from the model's version numbers; a "linearizable"
/// verdict is a witness replayed through [`ItemSpec`]'s steps (ETags, bodies,
/// statuses and dates only), and any other verdict is confirmed by a search
/// without claims, so no verdict rests on those numbers.
pub fn check_items(history: &OccHistory, options: &lin::Options) -> lin::Report {
    let (ops, mut spec) = to_lin_ops(history);
    spec.use_hints = true;
    let report = lin::check(&spec, &ops, options);
    if report.verdict == lin::Verdict::Linearizable {
        return report;
    }
    spec.use_hints = false;
    lin::check(&spec, &ops, options)
}

/// E1 from the responses alone: every successful write's ETag (a put's or a
/// Set Blob Metadata's) is new for its item, and one ETag never shows two
/// bodies (equal ETag ⇔ same version). Set Blob Metadata keeps the body, so
/// its new ETag is judged for freshness only: its answer shows no body.
fn e1(history: &OccHistory) -> Option<Violation> {
    let mut produced = Vec::new();
    let mut body_of: HashMap<(&str, &str), (&str, u64), FixedState> = HashMap::default();
    for o in &history.ops {
        let Some(Outcome::Response {
            status,
            etag: Some(e),
            body,
            ..
        }) = &o.result
        else {
            continue;
        };
        let shown = match (o.call.op.as_str(), status) {
            ("put", 200 | 201) => {
                produced.push((o.key.as_str(), e.as_str(), o.id));
                o.call.body.as_deref()
            }
            ("set_metadata", 200) => {
                produced.push((o.key.as_str(), e.as_str(), o.id));
                None
            }
            ("read", 200) => body.as_deref(),
            _ => None,
        };
        let Some(shown) = shown else { continue };
        let (first, first_op) = *body_of
            .entry((o.key.as_str(), e.as_str()))
            .or_insert((shown, o.id));
        if first != shown {
            return Some(
                Violation::new(
                    "E1",
                    format!(
                        "item {}: the ETag {e} stood for the body {first:?} (op {first_op}) and for {shown:?} (op {})",
                        o.key, o.id
                    ),
                )
                .with_ops([o.id, first_op])
                .with_evidence(etag_account(history, &o.key, e, &[o.id, first_op])),
            );
        }
    }
    check_fresh("E1", produced).map(|v| {
        // The put that got an ETag again: its item and ETag.
        let again = history.ops.iter().find(|o| v.ops.first() == Some(&o.id));
        match again.and_then(|o| match &o.result {
            Some(Outcome::Response { etag: Some(e), .. }) => Some((o.key.as_str(), e.as_str())),
            _ => None,
        }) {
            Some((key, e)) => {
                let account = etag_account(history, key, e, &v.ops);
                v.with_evidence(account)
            }
            None => v,
        }
    })
}

/// The version the model says each (item, ETag) is, from the responses that
/// carried both: a hint for the fast path, never judged.
type Hints<'a> = HashMap<(&'a str, &'a str), u64, FixedState>;

/// Interns ETags (quotes ignored) into [`Tag`]s.
#[derive(Default)]
struct Interner<'a> {
    ids: HashMap<&'a str, Tag, FixedState>,
    names: Vec<String>,
}

impl<'a> Interner<'a> {
    fn tag(&mut self, etag: &'a str) -> Tag {
        let bare = unquoted(etag);
        if let Some(t) = self.ids.get(bare) {
            return *t;
        }
        let t = self.names.len() as Tag;
        self.names.push(etag.to_string());
        self.ids.insert(bare, t);
        t
    }

    fn header(&mut self, h: &'a Option<String>) -> Option<Match> {
        h.as_deref().map(|h| match h.trim() {
            "*" => Match::Any,
            list => Match::Tags(list.split(',').map(|e| self.tag(e.trim())).collect()),
        })
    }
}

/// `etag.trim_matches('"')`, on bytes: every quote at either end removed
/// (the generic character search was a tenth of [`to_lin_ops`]).
pub fn unquoted(etag: &str) -> &str {
    let b = etag.as_bytes();
    let start = b.iter().position(|c| *c != b'"').unwrap_or(b.len());
    let end = b.iter().rposition(|c| *c != b'"').map_or(start, |i| i + 1);
    // Both ends are next to an ASCII quote or the string's ends: char boundaries.
    &etag[start..end]
}

fn seconds(ms: &Option<Vec<u64>>) -> Option<Vec<u64>> {
    ms.as_ref().map(|d| d.iter().map(|t| t / 1000).collect())
}

/// True for a status SPEC §4 says means "not executed" (or the SDK gave
/// up without an answer): such an operation says nothing about the item.
pub fn not_executed(status: u16) -> bool {
    matches!(status, 408 | 410 | 429 | 449 | 503)
}

/// Turns the history into the checker's operations and the spec that judges
/// them (which knows the ETag strings for its reports). Only operations that
/// ended in a "not executed" status are left out; unknown outcomes stay.
pub fn to_lin_ops(history: &OccHistory) -> (Vec<Operation<ItemOp, ItemResult>>, ItemSpec) {
    let mut tags = Interner::default();
    let mut hints: Hints<'_> = HashMap::default();
    // ETags some acknowledged write produced, and every version a response showed.
    let mut acked: HashMap<(&str, Tag), (), FixedState> = HashMap::default();
    let mut shown: Vec<(&str, Orphan)> = Vec::new();
    for o in &history.ops {
        if let Some(Outcome::Response {
            status,
            etag: Some(e),
            version,
            last_modified,
            ..
        }) = &o.result
        {
            let t = tags.tag(e);
            if let Some(v) = version {
                hints.entry((o.key.as_str(), e.as_str())).or_insert(*v);
            }
            if o.call.produced(*status) {
                acked.insert((o.key.as_str(), t), ());
            } else {
                shown.push((
                    o.key.as_str(),
                    Orphan {
                        etag: t,
                        last_modified: last_modified.map(|ms| ms / 1000),
                    },
                ));
            }
        }
    }
    let mut orphans: BTreeMap<&str, Vec<Orphan>> = BTreeMap::new();
    for (key, orphan) in shown {
        if !acked.contains_key(&(key, orphan.etag)) {
            let list = orphans.entry(key).or_default();
            if !list.contains(&orphan) {
                list.push(orphan);
            }
        }
    }
    let mut ops = Vec::with_capacity(history.ops.len());
    for o in &history.ops {
        let cond = Cond {
            if_match: tags.header(&o.call.if_match),
            if_none_match: tags.header(&o.call.if_none_match),
            if_modified_since: seconds(&o.call.if_modified_since),
            if_unmodified_since: seconds(&o.call.if_unmodified_since),
        };
        let input = match (o.call.op.as_str(), &o.call.body) {
            ("read", _) => ItemOp::Read(cond),
            ("put", Some(body)) => ItemOp::Put {
                body: body.clone(),
                cond,
                orphans: if o.result.is_none() {
                    orphans.get(o.key.as_str()).cloned().unwrap_or_default()
                } else {
                    Vec::new()
                },
            },
            ("delete", _) => ItemOp::Delete(cond),
            ("head", _) => ItemOp::Head(cond),
            ("set_metadata", _) => ItemOp::SetMetadata {
                cond,
                orphans: if o.result.is_none() {
                    orphans.get(o.key.as_str()).cloned().unwrap_or_default()
                } else {
                    Vec::new()
                },
            },
            _ => continue,
        };
        let output = match &o.result {
            None => None,
            // Neither ran: left out, as a call that never happened.
            Some(Outcome::TimedOut | Outcome::CancelledNotRun) => continue,
            Some(Outcome::Response { status, .. }) if not_executed(*status) => continue,
            Some(Outcome::Response {
                status,
                etag,
                body,
                last_modified,
                ..
            }) => Some(ItemResult {
                status: *status,
                etag: etag.as_deref().map(|e| tags.tag(e)),
                body: body.clone(),
                last_modified: last_modified.map(|ms| ms / 1000),
                hint: etag
                    .as_deref()
                    .and_then(|e| hints.get(&(o.key.as_str(), e)).copied()),
            }),
        };
        ops.push(Operation {
            id: o.id,
            client: o.client as u64,
            key: o.key.clone(),
            input,
            invoke: o.invoke_ns as i64,
            ret: if output.is_some() {
                o.return_ns.map(|r| r as i64)
            } else {
                None
            },
            output,
        });
    }
    (
        ops,
        ItemSpec {
            tags: tags.names,
            use_hints: false,
        },
    )
}

mod accounts;
use accounts::{etag_account, increment_account, probe_account};
