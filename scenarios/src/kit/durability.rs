//! D1, durability before acknowledgement, judged from the record: every
//! node with a log reports, as it goes, each sync of it that completed (and
//! what the log then holds durably), each sync that failed, what every
//! start-up read back, and each reply that acknowledges an effect with the
//! log position the effect needs durable ([`overcast_model::durability`]).
//! [`LogSink`] keeps those reports for a run (the history's `log_events`);
//! [`Durability`] judges them: no acknowledgement leaves before a
//! successful sync covers its position on its own node, or, for a
//! replicated write, on a quorum of the replica set's copies.
//!
//! Why a record and not a crash: a reply released a moment before its sync
//! is lost only if a crash lands in that moment, which a run rarely has; the
//! order of the reply and the sync is in every run.
//!
//! How it judges, event by event in the order they happened:
//!
//! - A node's log (one of its incarnation's: the WAL, or its copy of one
//!   partition's log) is durable as its last `recovered` or `synced` says.
//!   A failed sync breaks it: what it was to make durable may be gone, and
//!   no later sync brings it back, so no position past what was durable
//!   before the failure counts as covered until the node reads its disk
//!   again (`recovered`).
//! - An acknowledgement without a quorum is covered when its node's log is
//!   durable through its position (that position of its term).
//! - An acknowledgement with a quorum (a primary's answer to a replicated
//!   write) is covered when that many of the voters' copies have held its
//!   position durably (each copy counts from the first `synced` or
//!   `recovered` that holds it, in any incarnation of its node).
//!
//! A violation names the reply, the position, when the reply left and when
//! a sync covered it (or that none ever did). A history without log events
//! (one recorded before they existed) is undecided: D1 never passes a
//! history it could not judge.

use overcast_model::durability::{
    LogEvent, LogId, LogObserver, LogPos, LogReport, Quorum, Reply, TermRun,
};
use overcast_sim::check::{Checked, Checker, Evidence, EvidenceRow, Property, Verdict, Violation};
use overcast_sim::history::{History, NodeEvent};
use overcast_sim::timeline::{secs, span_words};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// D1: no reply that acknowledges an effect leaves a node before a successful sync has made the effect's log position durable (on a quorum of the replica set's copies, for a replicated write).
pub const D1: Property = Property::new(
    "D1",
    "no reply that acknowledges an effect leaves a node before a successful sync has made the effect's log position durable (on a quorum of the replica set's copies, for a replicated write)",
);

/// The violations told one by one; the others are counted in the first.
pub const TOLD: usize = 3;

/// Where the nodes of one run report their log events: one shared record,
/// in the order the events happened.
#[derive(Clone, Default)]
pub struct LogSink(Arc<Mutex<Vec<NodeEvent<LogEvent>>>>);

impl LogSink {
    /// A new, empty record.
    pub fn new() -> LogSink {
        LogSink::default()
    }

    /// The observer for node `node` (its incarnation name), reporting here.
    pub fn report(&self, node: impl Into<String>) -> LogReport {
        LogReport::to(Arc::new(NodeLog {
            node: node.into(),
            sink: self.clone(),
        }))
    }

    /// Everything reported so far, taken out.
    pub fn take(&self) -> Vec<NodeEvent<LogEvent>> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// One node's observer.
struct NodeLog {
    node: String,
    sink: LogSink,
}

impl LogObserver for NodeLog {
    fn on_log(&self, local_ms: u64, event: LogEvent) {
        let at_ns = overcast_sim::world::now_ns();
        self.sink
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(NodeEvent {
                node: self.node.clone(),
                at_ns,
                local_ms,
                event,
            });
    }
}

/// An acknowledgement as the checker saw it: what a scenario's link reads
/// to find the operation it answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Acknowledgement {
    /// The node that sent it (its incarnation name).
    pub node: String,
    /// When it left, true ns.
    pub at_ns: u64,
    /// Its log.
    pub log: LogId,
    /// The reply.
    pub reply: Reply,
    /// The position it needs durable.
    pub needs: LogPos,
}

/// How a scenario finds the history operation an acknowledgement answered.
pub type Link<H> = fn(&H, &Acknowledgement) -> Option<u64>;

/// The D1 checker over a history of type `H` (any history with log events);
/// with a link, a violation names the operation the reply answered.
pub struct Durability<H> {
    link: Option<Link<H>>,
}

impl<H> Durability<H> {
    /// A checker that names replies by their node and request.
    pub fn new() -> Durability<H> {
        Durability { link: None }
    }

    /// A checker that also names the operation each reply answered.
    pub fn linking(link: Link<H>) -> Durability<H> {
        Durability { link: Some(link) }
    }
}

impl<H> Default for Durability<H> {
    fn default() -> Self {
        Self::new()
    }
}

impl<C, R, E> Checker<History<C, R, E, LogEvent>> for Durability<History<C, R, E, LogEvent>> {
    fn properties(&self) -> &'static [Property] {
        std::slice::from_ref(&D1)
    }

    fn check(&self, history: &History<C, R, E, LogEvent>) -> Checked {
        let judged = judge(&history.log_events);
        if history.log_events.is_empty() {
            // Every node with a log reports what it read back when it starts:
            // an empty record is a history from before log events existed,
            // and D1 has nothing to judge it by.
            return Checked::new(Verdict::Undecided {
                reason: "the history records no log events (it predates them), so no acknowledgement can be judged".into(),
            });
        }
        let note = judged.note();
        let link = |a: &Acknowledgement| self.link.and_then(|l| l(history, a));
        Checked::new(Verdict::from_violations(judged.violations(link))).with_note(note)
    }
}

/// One acknowledgement that left before its position was durable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Early {
    /// The acknowledgement.
    pub ack: Acknowledgement,
    /// The quorum it needed, if it is a replicated write's.
    pub quorum: Option<Quorum>,
    /// How far its node's log was durable when it left (its last position),
    /// or, with a quorum, the voters holding its position then.
    pub then: Then,
    /// When (and on which node) a sync first covered it afterwards, if one did.
    pub covered: Option<(u64, String)>,
    /// Why nothing could cover it: a failed sync (when, true ns) since the
    /// node last read its disk.
    pub broken_at: Option<u64>,
}

/// What was durable when an early acknowledgement left.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Then {
    /// Its node's log was durable through this position (none: nothing
    /// durable), as the sync (or start-up) at this time left it.
    Own {
        /// The last durable position and its term.
        through: Option<LogPos>,
        /// When the log last became so durable, if it ever did.
        since_ns: Option<u64>,
    },
    /// These voters held its position durably (replica id, node, since when).
    Holders(Vec<(u32, String, u64)>),
}

/// What D1 found in a record of log events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Judged {
    /// Acknowledgements judged.
    pub acks: u64,
    /// Successful syncs read.
    pub syncs: u64,
    /// Logs (node incarnation and log) that reported anything.
    pub logs: usize,
    /// The acknowledgements that left early, in the order they left.
    pub early: Vec<Early>,
}

/// The last position of `runs` (0 for an empty log).
fn end(runs: &[TermRun]) -> u64 {
    runs.last().map_or(0, |r| r.through)
}

/// The term of position `lsn` in `runs`, if the log reaches it.
pub fn term_at(runs: &[TermRun], lsn: u64) -> Option<u64> {
    if lsn == 0 {
        return None;
    }
    let i = runs.partition_point(|r| r.through < lsn);
    runs.get(i).map(|r| r.term)
}

/// How many positions from the first `a` and `b` agree on.
fn common_prefix(a: &[TermRun], b: &[TermRun]) -> u64 {
    let (mut i, mut j, mut at) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        if a[i].term != b[j].term {
            return at;
        }
        at = a[i].through.min(b[j].through);
        if a[i].through == at {
            i += 1;
        }
        if b[j].through == at {
            j += 1;
        }
    }
    at
}

/// Whether `runs` holds position `p` (of its term).
fn holds(runs: &[TermRun], p: LogPos) -> bool {
    term_at(runs, p.lsn) == Some(p.term)
}

/// One log of one node incarnation, as the record has told it so far.
#[derive(Default)]
struct OwnLog {
    /// Its durable content.
    durable: Vec<TermRun>,
    /// When it became so (the last `synced` or `recovered`).
    since_ns: Option<u64>,
    /// A sync failed at this time since the node last read its disk.
    broken_at: Option<u64>,
    /// Early acknowledgements (indexes into `Judged::early`) not yet covered.
    open: Vec<usize>,
}

/// A replica's copy of one partition's log, across its node's incarnations.
#[derive(Default)]
struct ReplicaCopy {
    /// Its durable content, as last told.
    durable: Vec<TermRun>,
    /// When each position (and its term) first became durable, and on
    /// which incarnation.
    first: HashMap<LogPos, (u64, String)>,
}

/// A replicated write answered before a quorum held it, still short.
struct OpenQuorum {
    /// Index into `Judged::early`.
    early: usize,
    partition: u32,
    needs: LogPos,
    quorum: Quorum,
}

/// Judges a record of log events (in the order they happened; a stable
/// sort by time keeps a record that is already so as it is).
pub fn judge(events: &[NodeEvent<LogEvent>]) -> Judged {
    let mut order: Vec<&NodeEvent<LogEvent>> = events.iter().collect();
    order.sort_by_key(|e| e.at_ns);
    let mut out = Judged::default();
    let mut own: BTreeMap<(String, LogId), OwnLog> = BTreeMap::new();
    let mut copies: BTreeMap<(u32, u32), ReplicaCopy> = BTreeMap::new();
    let mut open_quorums: Vec<OpenQuorum> = Vec::new();
    for e in order {
        let key = (e.node.clone(), e.event.log());
        match &e.event {
            LogEvent::Recovered { log, durable } | LogEvent::Synced { log, durable } => {
                let recovered = matches!(e.event, LogEvent::Recovered { .. });
                let st = own.entry(key).or_default();
                if recovered {
                    st.broken_at = None;
                    // What a crash or a failed sync took is never covered
                    // by this incarnation's syncs.
                    st.open.clear();
                } else {
                    out.syncs += 1;
                }
                if st.broken_at.is_some() {
                    continue;
                }
                st.durable = durable.clone();
                st.since_ns = Some(e.at_ns);
                let durable = &st.durable;
                st.open.retain(|&i| {
                    let covered = holds(durable, out.early[i].ack.needs);
                    if covered {
                        out.early[i].covered = Some((e.at_ns, e.node.clone()));
                    }
                    !covered
                });
                if let LogId::Replica { partition, replica } = log {
                    let copy = copies.entry((*partition, *replica)).or_default();
                    // The positions it holds now that it did not hold as last told.
                    for lsn in common_prefix(&copy.durable, durable) + 1..=end(durable) {
                        if let Some(term) = term_at(durable, lsn) {
                            copy.first
                                .entry(LogPos { lsn, term })
                                .or_insert_with(|| (e.at_ns, e.node.clone()));
                        }
                    }
                    copy.durable = durable.clone();
                    let copies = &copies;
                    open_quorums.retain(|q| {
                        if q.partition != *partition {
                            return true;
                        }
                        let n = holders(copies, q.partition, q.needs, &q.quorum.voters).len();
                        if n >= q.quorum.needed as usize {
                            out.early[q.early].covered = Some((e.at_ns, e.node.clone()));
                            return false;
                        }
                        true
                    });
                }
            }
            LogEvent::SyncFailed { .. } => {
                let st = own.entry(key).or_default();
                st.broken_at.get_or_insert(e.at_ns);
            }
            LogEvent::Acked {
                log,
                reply,
                needs,
                quorum,
            } => {
                out.acks += 1;
                let ack = Acknowledgement {
                    node: e.node.clone(),
                    at_ns: e.at_ns,
                    log: *log,
                    reply: *reply,
                    needs: *needs,
                };
                match (quorum, log) {
                    (Some(q), LogId::Replica { partition, .. }) => {
                        let held = holders(&copies, *partition, *needs, &q.voters);
                        if held.len() >= q.needed as usize {
                            continue;
                        }
                        out.early.push(Early {
                            ack,
                            quorum: Some(q.clone()),
                            then: Then::Holders(held),
                            covered: None,
                            broken_at: None,
                        });
                        open_quorums.push(OpenQuorum {
                            early: out.early.len() - 1,
                            partition: *partition,
                            needs: *needs,
                            quorum: q.clone(),
                        });
                    }
                    _ => {
                        let st = own.entry(key).or_default();
                        // What was durable before a failed sync stays so.
                        if holds(&st.durable, *needs) {
                            continue;
                        }
                        let through = st.durable.last().map(|r| LogPos {
                            lsn: r.through,
                            term: r.term,
                        });
                        out.early.push(Early {
                            ack,
                            quorum: None,
                            then: Then::Own {
                                through,
                                since_ns: st.since_ns,
                            },
                            covered: None,
                            broken_at: st.broken_at,
                        });
                        if st.broken_at.is_none() {
                            st.open.push(out.early.len() - 1);
                        }
                    }
                }
            }
        }
    }
    out.logs = own.len();
    out
}

/// The voters among `voters` whose copy of `partition` has held `needs`
/// durably: replica id, the incarnation, since when.
fn holders(
    copies: &BTreeMap<(u32, u32), ReplicaCopy>,
    partition: u32,
    needs: LogPos,
    voters: &[u32],
) -> Vec<(u32, String, u64)> {
    voters
        .iter()
        .filter_map(|v| {
            let (at, node) = copies.get(&(partition, *v))?.first.get(&needs)?;
            Some((*v, node.clone(), *at))
        })
        .collect()
}

impl Judged {
    /// The summary's few words.
    pub fn note(&self) -> String {
        let early = if self.early.is_empty() {
            String::new()
        } else {
            format!(", {} before their sync", self.early.len())
        };
        let s = |n: u64| if n == 1 { "" } else { "s" };
        format!(
            "{} acknowledgement{}, {} sync{} on {} log{}{early}",
            self.acks,
            s(self.acks),
            self.syncs,
            s(self.syncs),
            self.logs,
            s(self.logs as u64)
        )
    }

    /// The violations: the first few early acknowledgements, each told
    /// (`link` names the operation a reply answered, when it can).
    pub fn violations(&self, link: impl Fn(&Acknowledgement) -> Option<u64>) -> Vec<Violation> {
        let total = self.early.len();
        self.early
            .iter()
            .take(TOLD)
            .enumerate()
            .map(|(i, e)| violation(e, link(&e.ack), (i == 0).then_some(total)))
            .collect()
    }
}

/// The log in words: `its log`, `its copy of partition 3's log`.
fn log_words(log: LogId) -> String {
    match log {
        LogId::Wal => "its log".to_string(),
        LogId::Replica { partition, .. } => format!("its copy of partition {partition}'s log"),
    }
}

/// A position in words: `record 57`, `entry 41 (term 3)`.
fn pos_words(log: LogId, p: LogPos) -> String {
    match log {
        LogId::Wal => format!("record {}", p.lsn),
        LogId::Replica { .. } => format!("entry {} (term {})", p.lsn, p.term),
    }
}

/// What the node did, in words: `answered operation #102 (request 23)`.
fn reply_words(reply: Reply, op: Option<u64>) -> String {
    match (reply, op) {
        (Reply::Attempt { req_id, .. }, Some(id)) => {
            format!("answered operation #{id} (request {req_id})")
        }
        (Reply::Attempt { operation, req_id }, None) => format!(
            "answered request {req_id} (operation {} of SDK session {})",
            operation.op, operation.session
        ),
        (Reply::Write { session, req_id }, Some(id)) => {
            format!("answered operation #{id} (write request {req_id} of session {session})")
        }
        (Reply::Write { session, req_id }, None) => {
            format!("answered write request {req_id} of session {session}")
        }
        (Reply::Append { to, seq }, _) => {
            format!("acknowledged the append of round {seq} to replica {to}")
        }
    }
}

/// The violation one early acknowledgement is; `total`, on the first, is
/// how many there were in all.
fn violation(e: &Early, op: Option<u64>, total: Option<usize>) -> Violation {
    let a = &e.ack;
    let did = reply_words(a.reply, op);
    let pos = pos_words(a.log, a.needs);
    let acknowledging = match (a.log, &e.quorum) {
        (LogId::Wal, _) => format!("acknowledging the write's {pos} of its log"),
        (LogId::Replica { partition, .. }, Some(_)) => {
            format!("acknowledging {pos} of partition {partition}'s log")
        }
        (LogId::Replica { partition, .. }, None) => {
            format!("claiming {pos} of partition {partition}'s log durable")
        }
    };
    let row = |op: Option<u64>, at: String, node: &str, what: String, marked: bool| EvidenceRow {
        op,
        cells: vec![at, node.to_string(), what],
        marked,
    };
    let mut rows = Vec::new();
    let then = match (&e.then, &e.quorum) {
        (Then::Own { through, since_ns }, _) => {
            let through = through.map_or("nothing".to_string(), |t| pos_words(a.log, t));
            if let Some(since) = since_ns {
                rows.push(row(
                    None,
                    secs(*since),
                    &a.node,
                    format!(
                        "{} is durable through {through}",
                        capitalise(&log_words(a.log))
                    ),
                    false,
                ));
            }
            format!("when {} was durable through {through}", log_words(a.log))
        }
        (Then::Holders(held), q) => {
            for (v, node, at) in held {
                rows.push(row(
                    None,
                    secs(*at),
                    node,
                    format!("Replica {v}'s copy holds {pos} durably"),
                    false,
                ));
            }
            match q {
                Some(q) => format!(
                    "when {} of the {} voters' copies held it durably ({} needed)",
                    held.len(),
                    q.voters.len(),
                    q.needed
                ),
                None => format!("when {} copies held it durably", held.len()),
            }
        }
    };
    if let Some(at) = e.broken_at {
        rows.push(row(
            None,
            secs(at),
            &a.node,
            format!("A sync of {} fails", log_words(a.log)),
            false,
        ));
    }
    rows.push(row(
        op,
        secs(a.at_ns),
        &a.node,
        format!("It {did}, {acknowledging}"),
        true,
    ));
    let after = match (&e.covered, e.broken_at) {
        (Some((at, node)), _) => {
            let late = span_words(at.saturating_sub(a.at_ns));
            if e.quorum.is_some() {
                rows.push(row(
                    None,
                    secs(*at),
                    node,
                    format!("A quorum of copies holds {pos} durably"),
                    false,
                ));
                format!(
                    "a quorum of copies held it durably only at {} ({node}'s sync), {late} after the answer",
                    secs(*at)
                )
            } else {
                rows.push(row(
                    None,
                    secs(*at),
                    node,
                    format!("A sync makes {pos} durable"),
                    false,
                ));
                format!(
                    "the sync that made it durable completed at {}, {late} after the reply",
                    secs(*at)
                )
            }
        }
        (None, Some(at)) => format!(
            "never synced: a sync of {} had failed at {}, and no later sync brings back what a failed one was to write",
            log_words(a.log),
            secs(at)
        ),
        (None, None) if e.quorum.is_some() => {
            "never synced on a quorum: no quorum of copies ever held it durably".to_string()
        }
        (None, None) => format!(
            "never synced: no sync of {} by {} covered it",
            log_words(a.log),
            a.node
        ),
    };
    if e.covered.is_none() {
        rows.push(row(
            None,
            "never".into(),
            &a.node,
            format!("No sync makes {pos} durable"),
            false,
        ));
    }
    let message = format!(
        "{} {did} at {}, {acknowledging}, {then}; {after}",
        a.node,
        secs(a.at_ns),
    );
    let mut notes = Vec::new();
    if let Some(n) = total.filter(|n| *n > 1) {
        notes.push(format!(
            "{n} acknowledgements in all left before a sync covered them (the first {} are told).",
            n.min(TOLD)
        ));
    }
    let mut v = Violation::new(D1.id, message.clone())
        .at(&a.node, a.at_ns, "acknowledged before its sync")
        .with_ops(op);
    if let Some((at, node)) = &e.covered {
        v = v.at(node, *at, "synced");
    }
    v.with_evidence(Evidence {
        title: "D1: an acknowledgement before the sync that covers it".into(),
        lead: vec![message],
        columns: vec!["time".into(), "node".into(), "what".into()],
        rows,
        notes,
    })
}

/// `s` with its first letter capitalised.
fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}
