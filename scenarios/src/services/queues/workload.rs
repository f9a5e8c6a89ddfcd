//! The `queues` workload: the repository the connectors traverse (shared by
//! every node, changed during the run by the editor), the editor itself, the
//! connectors' observer (their calls become history operations, their reports
//! node events), and the server's log device, which records every log record
//! as the server's view of what happened.

use super::history::{Call, Outcome, QueueEvent, QueueRecorder};
use super::QueuesParams;
use crate::kit::attempts::attempt;
use crate::kit::bridge::ClockAdapter;
use crate::kit::draws::unit_stream;
use overcast_model::client::{sim_now_ns, CallResult};
use overcast_model::connector::{ConnectorEvent, ConnectorObserver, Doc, Repository, Source};
use overcast_model::env::Clock;
use overcast_model::queue::{QueueRequest, QueueResponse};
use overcast_sim::history::{OpRecord, Slot};
use rand::Rng;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The repository's state.
#[derive(Debug, Default)]
struct RepoState {
    docs: BTreeMap<String, Doc>,
    /// Change sequence: one per change.
    seq: u64,
    /// `(seq, id)` of every change.
    changes: Vec<(u64, String)>,
    /// Documents ever created (the next id).
    created: u64,
}

/// The repository: shared by every node of a run (an external system the
/// connectors reach without the simulated network).
#[derive(Clone, Debug, Default)]
pub struct SimRepository(Arc<Mutex<RepoState>>);

/// The content of revision `rev` of document `id`.
pub fn content(id: &str, rev: u64) -> String {
    format!("{id} revision {rev}")
}

impl SimRepository {
    /// A repository with `docs` documents at revision 1.
    pub fn new(docs: usize) -> SimRepository {
        let repo = SimRepository::default();
        for _ in 0..docs {
            repo.add();
        }
        repo
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RepoState> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every document now.
    pub fn docs(&self) -> Vec<Doc> {
        self.lock().docs.values().cloned().collect()
    }

    /// Adds a new document; returns it.
    pub fn add(&self) -> Doc {
        let id = format!("d{:03}", self.lock().created);
        self.insert(&id).expect("a fresh id")
    }

    /// Adds document `id` at revision 1 (`None`: it is there already).
    pub fn insert(&self, id: &str) -> Option<Doc> {
        let mut s = self.lock();
        if s.docs.contains_key(id) {
            return None;
        }
        s.created += 1;
        let doc = Doc {
            content: content(id, 1),
            id: id.to_string(),
            rev: 1,
        };
        s.seq += 1;
        let seq = s.seq;
        s.changes.push((seq, id.to_string()));
        s.docs.insert(id.to_string(), doc.clone());
        Some(doc)
    }

    /// Changes document `id` (a new revision); returns it.
    pub fn change(&self, id: &str) -> Option<Doc> {
        let mut s = self.lock();
        let doc = s.docs.get_mut(id)?;
        doc.rev += 1;
        doc.content = content(id, doc.rev);
        let doc = doc.clone();
        s.seq += 1;
        let seq = s.seq;
        s.changes.push((seq, id.to_string()));
        Some(doc)
    }

    /// Removes document `id`; returns its last revision.
    pub fn remove(&self, id: &str) -> Option<u64> {
        let mut s = self.lock();
        let doc = s.docs.remove(id)?;
        s.seq += 1;
        let seq = s.seq;
        s.changes.push((seq, id.to_string()));
        Some(doc.rev)
    }
}

impl Repository for SimRepository {
    fn ids_after(&self, after: Option<&str>, limit: usize) -> Vec<String> {
        let s = self.lock();
        s.docs
            .keys()
            .filter(|id| after.is_none_or(|a| id.as_str() > a))
            .take(limit)
            .cloned()
            .collect()
    }

    fn get(&self, id: &str) -> (Option<Doc>, u64) {
        let s = self.lock();
        (s.docs.get(id).cloned(), s.seq)
    }

    fn changes_since(&self, seq: u64) -> (Vec<String>, u64) {
        let s = self.lock();
        let mut ids: Vec<String> = s
            .changes
            .iter()
            .filter(|(n, _)| *n > seq)
            .map(|(_, id)| id.clone())
            .collect();
        ids.sort();
        ids.dedup();
        (ids, s.seq)
    }
}

/// The editor: records the initial documents, then adds, changes and
/// removes documents until the deadline.
///
/// Each change draws from a stream of its own (`kit::draws`), and picks its
/// document from the documents there would be had every earlier change
/// been made (`planned`: the initial ones, plus each earlier change's add,
/// less its removal), not from the repository: a change left out of a
/// shrunk run moves no other change's draws or document. A change of a
/// document whose add was left out (or a second removal) changes nothing.
pub async fn editor(
    p: &QueuesParams,
    repo: &SimRepository,
    rec: &QueueRecorder,
    name: &str,
    mut changes: impl Rng,
    deadline: Duration,
) {
    let event = |id: &str, rev: u64, content: Option<String>| {
        let e = QueueEvent::Repo {
            id: id.to_string(),
            rev,
            content,
            // The editor is the repository's only writer: the sequence now
            // is this change's.
            seq: repo.get(id).1,
        };
        rec.event(name.to_string(), sim_now_ns() / 1_000_000, e);
    };
    let mut planned: Vec<String> = Vec::new();
    for d in repo.docs() {
        event(&d.id, d.rev, Some(d.content));
        planned.push(d.id);
    }
    // Added documents are named by the change that adds them, after the
    // initial ones (whatever earlier changes were left out).
    let mut next_id = planned.len();
    let deadline_ns = deadline.as_nanos() as u64;
    for n in 0..p.edits {
        let mut rng = unit_stream(&mut changes);
        let (lo, hi) = p.edit_ms;
        madsim::time::sleep(Duration::from_millis(rng.gen_range(lo..=hi.max(lo)).max(1))).await;
        if sim_now_ns() >= deadline_ns {
            break;
        }
        let draw: f64 = rng.gen();
        let add = planned.len() < 2 || draw < p.add_share;
        let pick = rng.gen_range(0..planned.len().max(1));
        let id = if add {
            next_id += 1;
            format!("d{:03}", next_id - 1)
        } else {
            planned[pick].clone()
        };
        let remove = !add && draw < p.add_share + p.remove_share;
        if add {
            planned.push(id.clone());
        } else if remove {
            planned.remove(pick);
        }
        overcast_harness::ops::about(name, n, &id);
        if overcast_harness::ops::skipped(name, n).await {
            continue;
        }
        if add {
            if let Some(d) = repo.insert(&id) {
                event(&d.id, d.rev, Some(d.content));
            }
        } else if remove {
            if let Some(rev) = repo.remove(&id) {
                event(&id, rev, None);
            }
        } else if let Some(d) = repo.change(&id) {
            event(&d.id, d.rev, Some(d.content));
        }
    }
}

/// The connectors' observer: calls become history operations, reports
/// become node events of the incarnation.
pub struct Observer {
    /// The recorder.
    pub rec: QueueRecorder,
    /// The `client` number its calls carry.
    pub id: usize,
    /// The incarnation's name.
    pub name: String,
    /// The connector's clock (the events' local time).
    pub clock: ClockAdapter,
    slots: RefCell<BTreeMap<u64, Slot>>,
    next: Cell<u64>,
    /// Calls asked about so far, by source and key (their skip numbers).
    asked: RefCell<BTreeMap<(String, String), usize>>,
    /// The number of the call just asked about and kept, which
    /// [`ConnectorObserver::begin`] names the call's socket by.
    kept: Cell<Option<usize>>,
}

impl Observer {
    /// An observer recording into `rec` as client `id`, node `name`.
    pub fn new(rec: QueueRecorder, id: usize, name: String, clock: ClockAdapter) -> Observer {
        Observer {
            rec,
            id,
            name,
            clock,
            slots: RefCell::new(BTreeMap::new()),
            next: Cell::new(0),
            asked: RefCell::new(BTreeMap::new()),
            kept: Cell::new(None),
        }
    }
}

/// The history key of a request: its item or queue.
pub fn key_of(req: &QueueRequest) -> String {
    match req {
        QueueRequest::Push { item, .. } => item.name.clone(),
        QueueRequest::Index { name, .. } | QueueRequest::Delete { name, .. } => name.clone(),
        QueueRequest::Poll { queue, .. }
        | QueueRequest::Unreserve { queue, .. }
        | QueueRequest::DeleteQueueItems { queue, .. } => queue.clone().unwrap_or_default(),
        QueueRequest::GetOperation { operation, .. } => operation.clone(),
        QueueRequest::CreateDatasource { datasource, .. } => datasource.clone(),
    }
}

impl ConnectorObserver for Observer {
    fn begin(&self, req: &QueueRequest, source: Source, from: Option<SocketAddr>) -> u64 {
        // The call's requests (and the replies to them) are named by the
        // call, not by whatever call another task of the connector asked
        // about last; a call not asked about (setup, the final pass) by none.
        let kept = self.kept.take();
        if let Some(from) = from {
            overcast_harness::ops::name_socket(&self.name, from.port(), kept);
        }
        let slot = self.rec.begin(OpRecord {
            id: 0,
            client: self.id,
            key: key_of(req),
            call: Call {
                node: self.name.clone(),
                source,
                request: req.clone(),
            },
            invoke_ns: sim_now_ns(),
            return_ns: None,
            result: None,
            attempts: Vec::new(),
        });
        let token = self.next.get();
        self.next.set(token + 1);
        self.slots.borrow_mut().insert(token, slot);
        token
    }

    fn end(&self, token: u64, r: &CallResult<QueueResponse>) {
        let Some(slot) = self.slots.borrow_mut().remove(&token) else {
            return;
        };
        let attempts = r.attempts.iter().map(attempt).collect();
        self.rec
            .complete(slot, Some(r.return_ns), Outcome::from_call(r), attempts);
    }

    fn skipped(&self, req: &QueueRequest, source: Source) -> bool {
        let (source, key) = (format!("{source:?}"), key_of(req));
        let nth = {
            let mut asked = self.asked.borrow_mut();
            let n = asked.entry((source.clone(), key.clone())).or_default();
            *n += 1;
            *n - 1
        };
        let number = overcast_harness::ops::call_number(&source, &key, nth);
        overcast_harness::ops::about(&self.name, number, &key);
        let skipped = overcast_harness::ops::skipped_call(&self.name, number);
        self.kept.set((!skipped).then_some(number));
        skipped
    }

    fn event(&self, e: ConnectorEvent) {
        self.rec.event(
            self.name.clone(),
            self.clock.now_ms(),
            QueueEvent::Connector(e),
        );
    }
}
