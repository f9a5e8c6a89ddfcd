//! The `feed` checks (SPEC §3.4, CF1–CF10), judged from the server's durable
//! log (every committed item version and lease document, with its LSN) and
//! the hosts' and the pull reader's events:
//!
//! - CF3 at-least-once: every item's final version (not deleted at the end)
//!   was passed to a delegate call that returned successfully. Exempt, and
//!   counted as such: a version at or before the LSN that a read of a lease
//!   without a checkpoint resolved its start option to (the start anchor /
//!   first-batch case, §3.3.7). A failure says what is missing and why, in words.
//! - CF1 no phantoms: every delivered or pulled item is a committed version.
//! - CF2 per-key order: within one lease stream of one process (from an
//!   acquisition to its end), a partition key's LSNs never go back.
//! - CF5: a lease's committed continuation never moves back.
//! - CF6 fencing: a committed continuation change was written by the owner the
//!   server had; after a rejected checkpoint the host delivers nothing more
//!   for that lease until it acquires it again.
//! - CF4: a committed checkpoint follows a successful delegate return for
//!   exactly that page, on the same host.
//! - CF9: a split's child lease starts at or before the parent's checkpoint.
//! - CF7 (at the end): the leases tile the key space and every one is owned by a host.
//! - CF8 (at the end): owned counts are balanced, and no lease changed hands
//!   in the last expiration + acquire interval of the quiet phase.
//! - CF11 and CF12 (as each lease write is logged): a host that split a
//!   lease works it no more; a lease's timestamp is its writer's clock
//!   ([`lease_writes`]).
//! - CF13 (at a host's first read of a lease it acquired): it reads from
//!   the stored checkpoint ([`resume`]).
//! - CF10: a pull read answered 304 only if nothing committed before it in its
//!   range after its token is still in the feed.
//!
//! Long because `analyse` is one walk of the history in time order whose
//! rules share its state (what each host holds, delivered and checkpointed
//! at that moment); the accounts it writes and its tests are beside it.

use super::history::{FeedCall, FeedEvent, FeedHistory};
use super::properties::*;
use super::{FeedParams, ITEMS, LEASES};
use overcast_model::cosmos::{CosmosEffect, ItemChange};
use overcast_model::feed::{FeedEffect, FeedItem, KEY_SPACE};
use overcast_model::feed_processor::{LeaseDoc, ProcessorEvent, ProcessorOptions};
use overcast_model::partition::Effect;
use overcast_sim::check::{Checked, Checker, Evidence, EvidenceRow, Verdict, Violation};
use overcast_sim::check::{Property, SharedAnalysis};
use overcast_sim::timeline::{node_lane, secs};
use std::collections::{BTreeMap, BTreeSet};

mod accounts;
mod lease_writes;
mod pages;
mod resume;
use accounts::{
    final_account, final_since, lease_account, lease_rows, lsn_words, missing, page_step,
    pages_account,
};
pub use pages::reference_epk;

/// One committed item write or delete, from the durable log.
#[derive(Clone, Debug)]
struct Committed {
    at_ns: u64,
    lsn: u64,
    change: ItemChange,
}

/// An item's key in the monitored container: (partition key, id).
type Key = (String, String);

/// A lease document version in the durable log.
#[derive(Clone, Debug)]
pub struct LeaseVersion {
    /// When it was logged, true ns.
    pub at_ns: u64,
    /// The document (`None`: deleted).
    pub doc: Option<LeaseDoc>,
}

/// Every lease document's versions in the durable log, by lease id.
pub fn lease_log(h: &FeedHistory) -> BTreeMap<String, Vec<LeaseVersion>> {
    let mut leases: BTreeMap<String, Vec<LeaseVersion>> = BTreeMap::new();
    for (at_ns, _, effect) in durable_log(h) {
        for c in changes(&effect) {
            let key = key_of(c);
            if key.container == LEASES && key.id.contains("..") {
                let doc = match c {
                    ItemChange::Written { item, .. } => LeaseDoc::from_body(&item.body),
                    ItemChange::Deleted { .. } => None,
                };
                leases
                    .entry(key.id.clone())
                    .or_default()
                    .push(LeaseVersion { at_ns, doc });
            }
        }
    }
    leases
}

/// The hosts' events, per node (incarnation), in order, with their times.
type HostEvents<'a> = BTreeMap<&'a str, Vec<(u64, &'a ProcessorEvent)>>;

/// What the analysis found.
struct Analysis {
    violations: Vec<Violation>,
    notes: BTreeMap<&'static str, String>,
    /// Properties only partly judged (their note says why).
    partly: BTreeSet<&'static str>,
}

/// The properties judged on the state at the end of the run, once the
/// hosts have settled: they need the quiet phase [`settle_ns`] long after
/// the last disturbance ([`short_quiet_phase`]), but for CF3 on a version
/// every lease covering it has checkpointed past.
pub const END_OF_RUN: [&str; 3] = ["CF3", "CF7", "CF8"];

/// How long the hosts need, after the last disturbance, before the state
/// at the end says anything, ns: SPEC §3.4's quiescence (a lease
/// expiration, then an acquire interval and a pass, one request timeout,
/// per lease and one more), then a poll and its read, and the delegate's
/// longest run.
pub fn settle_ns(p: &FeedParams, leases: usize) -> u64 {
    let o = super::scaled_options(p, "h");
    let pass_ms = p.retry.request_timeout.as_millis() as u64;
    let ms = o.expiration_ms
        + (leases as u64 + 1) * (o.acquire_ms + pass_ms)
        + o.poll_ms
        + pass_ms
        + p.delegate_ms.1;
    ms * 1_000_000
}

/// When the hosts were last disturbed, ns: the end of the last fault (a
/// crashed node's restart, a partition's or a pause's end, a clock rate's
/// end, the heal), the last committed write of an item, the last host call
/// left out.
fn disturbed_until(h: &FeedHistory, items: &[Committed]) -> u64 {
    use overcast_sim::happening::Happening;
    let faults = h.events.iter().filter_map(|e| {
        let lasts_ms = match &e.what {
            Happening::Crash { down_ms: ms, .. }
            | Happening::Pause { for_ms: ms, .. }
            | Happening::Partition { for_ms: ms, .. }
            | Happening::ClockRate { for_ms: ms, .. } => *ms,
            Happening::End | Happening::Note(_) | Happening::Isolate { .. } => return None,
            _ => 0,
        };
        Some(e.at_ns + lasts_ms * 1_000_000)
    });
    let left_out = h
        .node_events
        .iter()
        .filter(|e| matches!(e.event, FeedEvent::LeftOut { .. }))
        .map(|e| e.at_ns);
    faults
        .chain(left_out)
        .chain(items.iter().map(|c| c.at_ns))
        .max()
        .unwrap_or(0)
}

/// Why the end-of-run properties cannot be judged on `h`: its quiet phase
/// ended less than [`settle_ns`] after the last disturbance
/// ([`disturbed_until`]). `None` when they can (every unshrunk run: its
/// quiet phase is far longer).
fn short_quiet_phase(
    h: &FeedHistory,
    p: &FeedParams,
    items: &[Committed],
    leases: usize,
    end_ns: u64,
) -> Option<String> {
    let from = disturbed_until(h, items);
    let need = settle_ns(p, leases);
    (end_ns < from + need).then(|| {
        format!(
            "the run ended {} after the last disturbance (at {}), short of the {} the hosts need to settle",
            secs(end_ns.saturating_sub(from)),
            secs(from),
            secs(need)
        )
    })
}

/// Why the end-of-run properties cannot be judged when the server refused
/// service (every copy of its log corrupt, past the fault budget): from then
/// on no host could read, deliver or take a lease, and an undelivered change
/// or an unbalanced lease says nothing of the processor.
fn refused_service(h: &FeedHistory) -> Option<String> {
    h.node_events.iter().find_map(|e| match &e.event {
        FeedEvent::Refused { reason } => Some(format!(
            "{} refused service from {} ({reason})",
            e.node,
            secs(e.at_ns)
        )),
        _ => None,
    })
}

/// The operations' client number of host `host` (`host-2`).
fn host_client(p: &FeedParams, host: &str) -> Option<usize> {
    host.strip_prefix("host-")
        .and_then(|i| i.parse::<usize>().ok())
        .map(|i| p.writers + 1 + i)
}

/// When the lease write that the server logged at `logged` was sent by
/// `host`: the earliest invocation of its lease writes (a replace or a
/// create) that returned after the log time. `None` when no such call
/// returned (one cut short by a crash is not recorded, so it says nothing
/// of when it was sent).
fn write_sent_at(h: &FeedHistory, p: &FeedParams, host: &str, logged: u64) -> Option<u64> {
    let client = host_client(p, host);
    h.ops
        .iter()
        .filter(|o| Some(o.client) == client)
        .filter(|o| {
            matches!(&o.call, FeedCall::Host { what } if what.starts_with("replace") || what.starts_with("create"))
        })
        .filter(|o| o.invoke_ns <= logged && o.return_ns.is_some_and(|r| r >= logged))
        .map(|o| o.invoke_ns)
        .min()
}

/// The versions of lease `token`'s document.
fn versions_of(
    leases: &BTreeMap<String, Vec<LeaseVersion>>,
    token: u32,
) -> Option<&Vec<LeaseVersion>> {
    let suffix = format!("..{token}");
    leases
        .iter()
        .find(|(id, _)| id.ends_with(&suffix))
        .map(|(_, vs)| vs)
}

fn violation(property: &'static str, message: String) -> Violation {
    Violation::new(property, message)
}

/// The lane of the page a host's processing of its leases is drawn on
/// (`host-3:processing` for `host-3#1`, [`super::timeline`]).
fn processing(node: &str) -> String {
    format!("{}:processing", node_lane(node))
}

/// The lane of the page a host's ownership in the lease log is drawn on.
fn owned(host: &str) -> String {
    format!("{}:owned", node_lane(host))
}

/// The durable log: records appended, cut back at each recovery to what it kept.
fn durable_log(h: &FeedHistory) -> Vec<(u64, u64, Effect)> {
    let mut log: Vec<(u64, u64, Effect)> = Vec::new();
    for e in &h.node_events {
        match &e.event {
            FeedEvent::Logged { lsn, effect } => log.push((e.at_ns, *lsn, effect.clone())),
            FeedEvent::Recovered { kept } => log.truncate(*kept as usize),
            _ => {}
        }
    }
    log
}

fn changes(effect: &Effect) -> Vec<&ItemChange> {
    match effect {
        Effect::Cosmos(CosmosEffect::Item(c)) => vec![c],
        Effect::Cosmos(CosmosEffect::Batch(cs)) => cs.iter().collect(),
        _ => Vec::new(),
    }
}

fn key_of(c: &ItemChange) -> &overcast_model::cosmos::ItemKey {
    match c {
        ItemChange::Written { key, .. } | ItemChange::Deleted { key, .. } => key,
    }
}

fn analyse(h: &FeedHistory, p: &FeedParams) -> Analysis {
    let mut v = Vec::new();
    let mut notes = BTreeMap::new();
    let mut partly = BTreeSet::new();
    let log = durable_log(h);
    let end_ns = h
        .events
        .iter()
        .map(|e| e.at_ns)
        .chain(h.node_events.iter().map(|e| e.at_ns))
        .max()
        .unwrap_or(0);
    // Where the drawing of the run ends (the world's end): a host may report
    // a little after it, and what is judged at the end is named there.
    let drawn_end_ns = h
        .events
        .iter()
        .map(|e| e.at_ns)
        .max()
        .map_or(end_ns, |w| w.min(end_ns));

    // The monitored container's writes and deletes, and the lease documents.
    let mut items: Vec<Committed> = Vec::new();
    let leases = lease_log(h);
    let mut splits = 0usize;
    for (at_ns, lsn, effect) in &log {
        if let Effect::Feed(FeedEffect::Split { .. }) = effect {
            splits += 1;
        }
        for c in changes(effect) {
            let key = key_of(c);
            if key.container == ITEMS {
                items.push(Committed {
                    at_ns: *at_ns,
                    lsn: *lsn,
                    change: c.clone(),
                });
            }
        }
    }
    let mut versions: BTreeMap<(Key, u64), (u64, String)> = BTreeMap::new();
    let mut final_items: BTreeMap<Key, Option<(u64, u64)>> = BTreeMap::new();
    for c in &items {
        match &c.change {
            ItemChange::Written { key, item } => {
                let k = (key.partition_key.clone(), key.id.clone());
                versions.insert((k.clone(), item.version), (c.lsn, item.body.clone()));
                final_items.insert(k, Some((item.version, c.lsn)));
            }
            ItemChange::Deleted { key, .. } => {
                final_items.insert((key.partition_key.clone(), key.id.clone()), None);
            }
        }
    }
    // Every range a lease ever covered, by token.
    let mut ranges: BTreeMap<u32, (u32, u32)> = BTreeMap::new();
    for d in leases.values().flatten().filter_map(|l| l.doc.as_ref()) {
        ranges.insert(d.token, (d.min, d.max));
    }

    // Host events per node (incarnation), in order.
    let mut by_node: HostEvents = BTreeMap::new();
    for e in &h.node_events {
        if let FeedEvent::Host(pe) = &e.event {
            by_node
                .entry(e.node.as_str())
                .or_default()
                .push((e.at_ns, pe));
        }
    }

    // CF1: deliveries and pulled items are committed versions.
    let phantom = |who: &str, lane: String, at_ns: u64, i: &FeedItem| -> Option<Violation> {
        let k = (i.partition_key.clone(), i.id.clone());
        // The item's changes in the durable log up to the delivery.
        let logged = || -> Vec<EvidenceRow> {
            let mut rows: Vec<EvidenceRow> = items
                .iter()
                .filter(|c| {
                    let key = key_of(&c.change);
                    c.at_ns <= at_ns && key.partition_key == i.partition_key && key.id == i.id
                })
                .map(|c| EvidenceRow {
                    op: None,
                    cells: vec![
                        secs(c.at_ns),
                        format!("lsn {}", c.lsn),
                        match &c.change {
                            ItemChange::Written { item, .. } => {
                                format!("version {} written", item.version)
                            }
                            ItemChange::Deleted { .. } => "deleted".to_string(),
                        },
                    ],
                    marked: false,
                })
                .collect();
            rows.push(EvidenceRow {
                op: None,
                cells: vec![
                    secs(at_ns),
                    format!("lsn {}", i.lsn),
                    format!("{who} got version {}: not in the log", i.version),
                ],
                marked: true,
            });
            rows
        };
        match versions.get(&(k, i.version)) {
            Some((lsn, body)) if *lsn == i.lsn && *body == i.body => None,
            _ => Some(
                violation(
                    "CF1",
                    format!(
                        "{who} got item {}/{} version {} (lsn {}) at {}, which the durable log never committed",
                        i.partition_key,
                        i.id,
                        i.version,
                        i.lsn,
                        secs(at_ns)
                    ),
                )
                .at(lane, at_ns, format!("got {}/{} v{}", i.partition_key, i.id, i.version))
                .with_evidence(Evidence {
                    title: format!("{}/{} in the durable log", i.partition_key, i.id),
                    lead: vec![format!(
                        "Every committed change of {}/{} up to the delivery, and what {who} got:",
                        i.partition_key, i.id
                    )],
                    columns: ["when", "lsn", "what"].map(String::from).to_vec(),
                    rows: logged(),
                    notes: Vec::new(),
                }),
            ),
        }
    };
    let mut delivered = 0usize;
    for (node, events) in &by_node {
        for (at_ns, e) in events {
            if let ProcessorEvent::Delivered { items, .. } = e {
                delivered += items.len();
                v.extend(
                    items
                        .iter()
                        .filter_map(|i| phantom(node, processing(node), *at_ns, i)),
                );
            }
        }
    }
    for e in &h.node_events {
        if let FeedEvent::Pull { items, .. } = &e.event {
            v.extend(
                items
                    .iter()
                    .filter_map(|i| phantom(&e.node, e.node.clone(), e.at_ns, i)),
            );
        }
    }
    notes.insert("CF1", format!("{delivered} items delivered"));

    // CF2, CF4, CF6(b) and the successful deliveries, per node.
    let mut ok_delivered: BTreeSet<(Key, u64)> = BTreeSet::new();
    // Versions handed to a delegate that had not returned when the run
    // ended: a run cut short may yet see them delivered.
    let mut in_flight: BTreeSet<(Key, u64)> = BTreeSet::new();
    let mut exempt_after: BTreeMap<u32, u64> = BTreeMap::new();
    let mut checkpoints = 0usize;
    for (node, events) in &by_node {
        let mut last_lsn: BTreeMap<(u32, String), u64> = BTreeMap::new();
        let mut pending: BTreeMap<u32, Vec<FeedItem>> = BTreeMap::new();
        let mut last_done: BTreeMap<u32, (bool, u64)> = BTreeMap::new();
        let mut fenced: BTreeSet<u32> = BTreeSet::new();
        // Each lease's deliveries, delegate returns and checkpoints on this
        // node, in words, for a CF4 violation's account.
        let steps: Vec<(u64, u32, String)> = events
            .iter()
            .filter_map(|(at_ns, e)| {
                let (lease, words) = page_step(e)?;
                Some((*at_ns, lease, words))
            })
            .collect();
        for (at_ns, e) in events {
            match e {
                ProcessorEvent::Acquired { lease, .. } => {
                    last_lsn.retain(|(l, _), _| l != lease);
                    fenced.remove(lease);
                }
                ProcessorEvent::Read {
                    lease,
                    from: None,
                    start_lsn: Some(s),
                    ..
                } => {
                    let e = exempt_after.entry(*lease).or_default();
                    *e = (*e).max(*s);
                }
                ProcessorEvent::Delivered { lease, items, .. } => {
                    if fenced.contains(lease) {
                        v.push(
                            violation(
                                "CF6",
                                format!(
                                    "{node} delivered a batch of lease {lease} at {} after its checkpoint of that lease was rejected",
                                    secs(*at_ns)
                                ),
                            )
                            .at(processing(node), *at_ns, format!("delivered lease {lease}"))
                            .with_evidence(pages_account(
                                node,
                                *lease,
                                &steps,
                                *at_ns,
                                &|w| w.starts_with("handed"),
                                "its pages around the delivery".to_string(),
                                format!(
                                    "What {node} did with lease {lease} up to the delivery: after a rejected checkpoint a host delivers nothing more of that lease until it acquires it again."
                                ),
                            )),
                        );
                    }
                    for i in items {
                        let slot = last_lsn
                            .entry((*lease, i.partition_key.clone()))
                            .or_default();
                        if i.lsn < *slot {
                            v.push(
                                violation(
                                    "CF2",
                                    format!(
                                        "{node}: lease {lease} delivered partition key {} at lsn {} after lsn {} in one stream, at {}",
                                        i.partition_key,
                                        i.lsn,
                                        slot,
                                        secs(*at_ns)
                                    ),
                                )
                                .at(processing(node), *at_ns, format!("lsn {} after {slot}", i.lsn))
                                .with_evidence(pages_account(
                                    node,
                                    *lease,
                                    &steps,
                                    *at_ns,
                                    &|w| w.starts_with("handed"),
                                    "its pages up to the delivery".to_string(),
                                    format!(
                                        "What {node} did with lease {lease} since it acquired it, up to the page that delivered partition key {} at lsn {} after lsn {slot}: within one stream a key's LSNs never go back.",
                                        i.partition_key, i.lsn
                                    ),
                                )),
                            );
                        }
                        *slot = (*slot).max(i.lsn);
                    }
                    pending.insert(*lease, items.clone());
                }
                ProcessorEvent::DelegateDone {
                    lease,
                    ok,
                    continuation,
                } => {
                    let returned = pending.remove(lease).unwrap_or_default();
                    if *ok {
                        for i in returned {
                            ok_delivered.insert(((i.partition_key, i.id), i.version));
                        }
                    }
                    last_done.insert(*lease, (*ok, *continuation));
                }
                ProcessorEvent::Checkpoint {
                    lease,
                    continuation,
                    ok,
                } => {
                    if !*ok {
                        fenced.insert(*lease);
                        last_done.remove(lease);
                        continue;
                    }
                    checkpoints += 1;
                    let cf4 = |message: String| {
                        violation("CF4", message)
                            .at(
                                processing(node),
                                *at_ns,
                                format!("checkpoint lsn {continuation}"),
                            )
                            .with_evidence(pages_account(
                                node,
                                *lease,
                                &steps,
                                *at_ns,
                                &|w| w.starts_with("checkpointed"),
                                "its pages around the checkpoint".to_string(),
                                format!(
                                    "What {node} did with lease {lease} around its checkpoint at lsn {continuation}: a checkpoint may only follow its delegate's return on that page."
                                ),
                            ))
                    };
                    match last_done.remove(lease) {
                        Some((true, c)) if c == *continuation => {}
                        Some((true, c)) => v.push(cf4(
                            format!("{node} checkpointed lease {lease} at lsn {continuation} at {}, but its delegate had returned the page up to lsn {c}", secs(*at_ns)),
                        )),
                        Some((false, _)) => v.push(cf4(
                            format!("{node} checkpointed lease {lease} at lsn {continuation} at {} after its delegate threw on that page", secs(*at_ns)),
                        )),
                        None => v.push(cf4(
                            format!("{node} checkpointed lease {lease} at lsn {continuation} at {} with no delegate return for that page before it", secs(*at_ns)),
                        )),
                    }
                }
                _ => {}
            }
        }
        in_flight.extend(
            pending
                .into_values()
                .flatten()
                .map(|i| ((i.partition_key, i.id), i.version)),
        );
    }
    notes.insert("CF4", format!("{checkpoints} checkpoints"));

    // CF5, CF6(a), CF9: the lease documents' versions in the durable log.
    for (id, vs) in &leases {
        let mut prev: Option<&LeaseDoc> = None;
        for (idx, lv) in vs.iter().enumerate() {
            let Some(doc) = lv.doc.as_ref() else {
                prev = None;
                continue;
            };
            // The document's versions around this one.
            let around = || {
                lease_rows(
                    doc.token,
                    &vs[idx.saturating_sub(5)..(idx + 3).min(vs.len())],
                    lv.at_ns,
                )
            };
            if let Some(pd) = prev {
                if doc.continuation < pd.continuation {
                    v.push(
                        violation(
                            "CF5",
                            format!(
                                "lease {} moved its checkpoint back from {} to {} at {} (written by {})",
                                doc.token,
                                lsn_words(pd.continuation),
                                lsn_words(doc.continuation),
                                secs(lv.at_ns),
                                doc.by
                            ),
                        )
                        .at(owned(&doc.by), lv.at_ns, format!("checkpoint back to {}", lsn_words(doc.continuation)))
                        .with_evidence(lease_account(
                            format!("Lease {} in the durable log", doc.token),
                            format!(
                                "The versions of lease {}'s document around the one that moved its checkpoint back: a committed checkpoint never moves back.",
                                doc.token
                            ),
                            around(),
                        )),
                    );
                }
                if doc.continuation != pd.continuation
                    && pd.owner.as_deref() != Some(doc.by.as_str())
                {
                    v.push(
                        violation(
                            "CF6",
                            format!(
                                "a checkpoint of lease {} to {} by {} stuck at {} while the lease was owned by {}",
                                doc.token,
                                lsn_words(doc.continuation),
                                doc.by,
                                secs(lv.at_ns),
                                pd.owner.as_deref().unwrap_or("nobody")
                            ),
                        )
                        .at(owned(&doc.by), lv.at_ns, format!("checkpoint by {}", doc.by))
                        .with_evidence(lease_account(
                            format!("Lease {} in the durable log", doc.token),
                            format!(
                                "The versions of lease {}'s document around the checkpoint {} wrote: only the owner the server has may change a lease's checkpoint.",
                                doc.token, doc.by
                            ),
                            around(),
                        )),
                    );
                }
            } else if let Some(parent) = doc.parent {
                // A child's first version: at or before the parent's checkpoint then.
                let parent_id = id.rsplit_once("..").map(|(p, _)| format!("{p}..{parent}"));
                let parent_vs = parent_id.and_then(|pid| leases.get(&pid));
                let parent_cp = parent_vs
                    .and_then(|pvs| {
                        pvs.iter()
                            .rev()
                            .filter(|x| x.at_ns <= lv.at_ns)
                            .find_map(|x| x.doc.as_ref())
                            .map(|d| d.continuation)
                    })
                    .flatten();
                if doc.continuation.is_some() && doc.continuation > parent_cp {
                    v.push(
                        violation(
                            "CF9",
                            format!(
                                "split: child lease {} of lease {parent} starts at {} (written at {} by {}), after the parent's checkpoint {}, so the changes between are skipped",
                                doc.token,
                                lsn_words(doc.continuation),
                                secs(lv.at_ns),
                                doc.by,
                                lsn_words(parent_cp)
                            ),
                        )
                        .at(owned(&doc.by), lv.at_ns, format!("child lease {}", doc.token))
                        .with_evidence({
                            let before: Vec<&LeaseVersion> = parent_vs
                                .map(|pvs| pvs.iter().filter(|x| x.at_ns <= lv.at_ns).collect())
                                .unwrap_or_default();
                            let mut rows =
                                lease_rows(parent, before[before.len().saturating_sub(4)..].iter().copied(), u64::MAX);
                            rows.extend(lease_rows(doc.token, [lv], lv.at_ns));
                            lease_account(
                                format!("The split of lease {parent}"),
                                format!(
                                    "Lease {parent}'s last versions before its child lease {} was written, then the child's first version: a child starts at or before its parent's checkpoint.",
                                    doc.token
                                ),
                                rows,
                            )
                        }),
                    );
                }
            }
            prev = Some(doc);
        }
    }
    notes.insert("CF9", format!("{splits} splits"));

    // The final lease documents.
    let final_leases: Vec<&LeaseDoc> = leases
        .values()
        .filter_map(|vs| vs.last().and_then(|l| l.doc.as_ref()))
        .collect();
    let hosts: Vec<String> = (0..p.hosts).map(|i| format!("host-{i}")).collect();

    // The premise of the end-of-run properties: the hosts had time to
    // settle and deliver after the last thing that disturbed them. A run
    // whose quiet phase falls short of it (a shrunk one) is not judged on
    // them (below): a change not yet delivered is not a lost one, nor a
    // lease not yet taken back an unowned one.
    let short =
        short_quiet_phase(h, p, &items, final_leases.len(), end_ns).or_else(|| refused_service(h));

    // CF3: every final version delivered to a delegate that returned.
    let mut exempt = 0usize;
    let mut live = 0usize;
    let mut lost_for_good = 0usize;
    for (k, fin) in &final_items {
        let Some((version, lsn)) = fin else {
            continue;
        };
        live += 1;
        if ok_delivered.contains(&(k.clone(), *version)) {
            continue;
        }
        let e = reference_epk(&k.0);
        let anchored = exempt_after.iter().any(|(token, s)| {
            ranges
                .get(token)
                .is_some_and(|(lo, hi)| *lo <= e && e < *hi && *lsn <= *s)
        });
        if anchored {
            exempt += 1;
            continue;
        }
        // Short of the premise, only a version every lease covering it at
        // the end has checkpointed past, with no delegate call still
        // holding it, is judged: no host reads it again (checkpoints only
        // move forward, CF5, and a split's children start at the
        // parent's), so it is lost however soon the run ended.
        if short.is_some() {
            let mut covering = final_leases
                .iter()
                .filter(|d| d.min <= e && e < d.max)
                .peekable();
            let passed = covering.peek().is_some()
                && covering.all(|d| d.continuation.is_some_and(|c| c >= *lsn))
                && !in_flight.contains(&(k.clone(), *version));
            if !passed {
                continue;
            }
            lost_for_good += 1;
        }
        let committed_ns = items.iter().find(|c| c.lsn == *lsn).map_or(0, |c| c.at_ns);
        v.push(missing(
            h,
            k,
            *version,
            *lsn,
            committed_ns,
            &final_leases,
            end_ns,
        ));
    }
    notes.insert(
        "CF3",
        format!("{live} final versions; {exempt} exempt (before a start anchor, §3.3.7)"),
    );

    // CF7 and CF8 at the end.
    let mut tiles: Vec<(u32, u32, u32)> = final_leases
        .iter()
        .map(|d| (d.min, d.max, d.token))
        .collect();
    tiles.sort_unstable();
    // What is judged at the end is named where it came to be: when a lease
    // got the range or the owner it ends with (never past the drawing).
    let since = |token: u32| {
        final_since(&leases, token).map(|(c, o)| (c.min(drawn_end_ns), o.min(drawn_end_ns)))
    };
    let mut at = 0;
    for (min, max, token) in &tiles {
        if *min != at {
            // The lease before it in key order: where the one at fault
            // overlaps it or leaves a gap after it.
            let before = tiles
                .iter()
                .find(|(m, x, t)| *x == at && m < min && t != token)
                .map(|(_, _, t)| *t);
            let mut created: Vec<(u64, u32)> = [Some(*token), before]
                .into_iter()
                .flatten()
                .map(|t| (since(t).map_or(drawn_end_ns, |s| s.0), t))
                .collect();
            // The later one first: since then the two do not tile.
            created.sort_by_key(|(c, t)| (std::cmp::Reverse(*c), *t));
            let mut cf7 = violation(
                "CF7",
                format!(
                    "at the end the leases do not tile the key space: lease {token} starts at {min:02X}, expected {at:02X} ({})",
                    if *min < at { "overlap" } else { "gap" }
                ),
            );
            for (c, t) in &created {
                cf7 = cf7.at("", *c, format!("lease {t} created as it ends"));
            }
            v.push(
                cf7
                .with_evidence(final_account(
                    &final_leases,
                    format!(
                        "Every lease at the end and its range: the ranges tile the key space 00-{KEY_SPACE:02X}, each starting where the one before it ends. Lease {token} starts at {min:02X}, where {at:02X} was expected; it and the lease before it are marked."
                    ),
                    &|d| d.token == *token || Some(d.token) == before,
                )),
            );
        }
        at = at.max(*max);
    }
    if at != KEY_SPACE {
        v.push(
            violation(
                "CF7",
                format!("at the end the leases stop at {at:02X}, before the end of the key space"),
            )
            .at(
                "",
                tiles
                    .iter()
                    .find(|(_, x, _)| *x == at)
                    .and_then(|(_, _, t)| since(*t))
                    .map_or(drawn_end_ns, |s| s.0),
                format!("the last lease, ending at {at:02X}, created"),
            )
            .with_evidence(final_account(
                &final_leases,
                format!(
                    "Every lease at the end and its range: the ranges tile the key space 00-{KEY_SPACE:02X}, but none goes past {at:02X}; the lease that ends there is marked."
                ),
                &|d| d.max == at,
            )),
        );
    }
    // Ownership at the end is a quiescence property like balance: judged
    // below only once the hosts have settled (a failed acquire in the quiet
    // phase releases the old owner's copy, SPEC §3.3.4, and the lease is
    // taken again within an acquire interval).
    let mut unowned = Vec::new();
    for d in &final_leases {
        if !d.owner.as_ref().is_some_and(|o| hosts.contains(o)) {
            unowned.push(
                violation(
                    "CF7",
                    format!(
                        "at the end lease {} is owned by {}, not by a live host",
                        d.token,
                        d.owner.as_deref().unwrap_or("nobody")
                    ),
                )
                .at(
                    d.owner.as_deref().map_or(String::new(), owned),
                    since(d.token).map_or(drawn_end_ns, |s| s.1),
                    format!(
                        "lease {} owned by {} from here",
                        d.token,
                        d.owner.as_deref().unwrap_or("nobody")
                    ),
                )
                .with_evidence(final_account(
                    &final_leases,
                    format!(
                        "Every lease at the end and its owner; the live hosts are {}. Each lease is owned by one of them.",
                        hosts.join(", ")
                    ),
                    &|x| !x.owner.as_ref().is_some_and(|o| hosts.contains(o)),
                )),
            );
        }
    }
    notes.insert("CF7", format!("{} leases at the end", final_leases.len()));
    let n = final_leases.len();
    let hn = hosts.len();
    let mut counts: BTreeMap<&str, usize> = hosts.iter().map(|h| (h.as_str(), 0)).collect();
    for d in &final_leases {
        if let Some(c) = d.owner.as_deref().and_then(|o| counts.get_mut(o)) {
            *c += 1;
        }
    }
    let mut imbalance = None;
    if n > 0 && hn > 0 {
        let (lo, hi) = if n >= hn {
            (n / hn, n.div_ceil(hn))
        } else {
            (0, 1)
        };
        let off_hosts: Vec<&str> = counts
            .iter()
            .filter(|(_, c)| **c < lo || **c > hi)
            .map(|(h, _)| *h)
            .collect();
        let off: Vec<String> = off_hosts
            .iter()
            .map(|h| format!("{h} owns {}", counts[h]))
            .collect();
        if !off.is_empty() {
            // When the leases of the hosts outside the bounds (of every host
            // when those own none) came to their final owners, latest first.
            let of_off: Vec<&&LeaseDoc> = final_leases
                .iter()
                .filter(|d| d.owner.as_deref().is_some_and(|o| off_hosts.contains(&o)))
                .collect();
            let mut taken: Vec<(u64, &LeaseDoc)> = if of_off.is_empty() {
                final_leases.to_vec()
            } else {
                of_off.into_iter().copied().collect()
            }
            .into_iter()
            .map(|d| (since(d.token).map_or(drawn_end_ns, |s| s.1), d))
            .collect();
            taken.sort_by_key(|(at, d)| (std::cmp::Reverse(*at), d.token));
            let mut cf8 = violation(
                "CF8",
                format!(
                    "at quiescence {n} leases over {hn} hosts are not balanced ({lo}–{hi} each): {}",
                    off.join(", ")
                ),
            );
            for (at, d) in taken.iter().take(6) {
                let owner = d.owner.as_deref().unwrap_or("nobody");
                cf8 = cf8.at(
                    owned(owner),
                    *at,
                    format!("{owner} owns lease {} from here", d.token),
                );
            }
            imbalance = Some(
                cf8
                .with_evidence(final_account(
                    &final_leases,
                    format!(
                        "Every lease at quiescence and its owner: over {hn} hosts each owns {lo}–{hi}; the leases of the hosts outside that are marked."
                    ),
                    &|x| x.owner.as_deref().is_some_and(|o| off_hosts.contains(&o)),
                )),
            );
        }
    }
    let o = ProcessorOptions::scaled("h", p.time_scale);
    let window_ns = (o.expiration_ms + o.acquire_ms) * 1_000_000;
    // Takeovers from another host: of a lease its owner had not written for
    // an expiration (its renewals were lost: the network still drops
    // datagrams after the heal), or steals of live ones.
    // Two hosts' clocks differ by at most twice the largest offset plus
    // twice the largest drift (±200 ppm, `adjust_plan`) over the run.
    let skew_ns = 2 * super::max_offset_ms(p) as u64 * 1_000_000 + 2 * end_ns / 5_000;
    let mut takeovers: Vec<(u64, bool, String)> = Vec::new();
    // When the owner wrote a version, as far as its expiry goes: the
    // invocation of its call that the server logged then (the document's
    // `timestamp` is read from the owner's clock before that call is sent,
    // and the call may take up to its timeouts and retries to land); the
    // log time where no such call is known. True times only: the document's
    // own timestamp is what a bug may get wrong.
    let written_from =
        |host: &str, logged: u64| write_sent_at(h, p, host, logged).unwrap_or(logged);
    for (node, es) in &by_node {
        for (at, e) in es {
            let ProcessorEvent::Acquired {
                lease,
                from: Some(f),
                seen_timestamp,
                ..
            } = e
            else {
                continue;
            };
            if node.starts_with(f.as_str()) {
                continue;
            }
            // The owner's write the taker judged: the version its balancer
            // read (by its timestamp), not the newest one before the acquire.
            // A renewal that landed between the balancer's list and its
            // Acquire does not make the lease the balancer saw any younger:
            // Acquire replaces it anyway, as the owner is unchanged (§3.3.4).
            let last_write = versions_of(&leases, *lease).and_then(|vs| {
                let by_owner =
                    |x: &&LeaseVersion| x.at_ns < *at && x.doc.as_ref().is_some_and(|d| d.by == *f);
                let seen = vs.iter().rev().filter(by_owner).find(|x| {
                    x.doc
                        .as_ref()
                        .is_some_and(|d| Some(d.timestamp) == *seen_timestamp)
                });
                seen.or_else(|| vs.iter().rev().find(by_owner))
                    .map(|x| written_from(f, x.at_ns))
            });
            let expired = last_write
                .is_some_and(|w| (w + o.expiration_ms * 1_000_000).saturating_sub(skew_ns) < *at);
            let what = format!("{node} took lease {lease} from {f} at {}", secs(*at));
            takeovers.push((*at, expired, what));
        }
    }
    // Takeovers the lease log shows and no host reported: an Acquire that
    // won on the server but whose answer was lost (its host never learned
    // it, so no `Acquired` event), seen from the servers' side. Judged like
    // the others, by the old owner's last write before it.
    let reported_within = p.retry.request_timeout.as_nanos() as u64;
    for (id, vs) in &leases {
        let token = id.rsplit("..").next().unwrap_or(id);
        for w in vs.windows(2) {
            let (Some(before), Some(after)) = (w[0].doc.as_ref(), w[1].doc.as_ref()) else {
                continue;
            };
            let (Some(from), Some(to)) = (before.owner.as_ref(), after.owner.as_ref()) else {
                continue;
            };
            let at = w[1].at_ns;
            if from == to || after.by != *to {
                continue;
            }
            let reported = by_node.iter().any(|(node, es)| {
                node_lane(node) == to.as_str()
                    && es.iter().any(|(t, e)| {
                        matches!(e, ProcessorEvent::Acquired { lease, .. } if lease.to_string() == token)
                            && *t >= at
                            && *t <= at + reported_within
                    })
            });
            if reported {
                continue;
            }
            // The version the taker's balancer judged is unknown (no event):
            // the oldest it can have been is the owner's last write before
            // the taker's last listing began (a renewal after that may have
            // come too late for the listing, and Acquire replaces a renewed
            // lease anyway while its owner is unchanged, §3.3.4). Judged on
            // that one: a harness that cannot tell must not blame.
            let listed = h
                .ops
                .iter()
                .filter(|o| Some(o.client) == host_client(p, to) && o.invoke_ns < at)
                .filter(|o| matches!(&o.call, FeedCall::Host { what } if what == "list leases"))
                .map(|o| o.invoke_ns)
                .max()
                .unwrap_or(at);
            let last_write = vs
                .iter()
                .rev()
                .find(|x| x.at_ns < listed && x.doc.as_ref().is_some_and(|d| d.by == *from))
                .map(|x| written_from(from, x.at_ns));
            let expired = last_write
                .is_some_and(|w| (w + o.expiration_ms * 1_000_000).saturating_sub(skew_ns) < at);
            let what = format!(
                "{to} took lease {token} from {from} at {} (its answer lost)",
                secs(at)
            );
            takeovers.push((at, expired, what));
        }
    }
    // After an expiry late in the quiet phase the hosts are still settling:
    // quiescence (CF8's premise: expiration + (N+1) × (acquire interval +
    // pass time) with no fault, SPEC §3.4) has not come, so balance is not
    // judged. A pass is taken as one request timeout (a listing that times
    // out; the acquires that follow are quick once the network is healed).
    let pass_ns = p.retry.request_timeout.as_nanos() as u64;
    let quiescence_ns = o.expiration_ms * 1_000_000
        + (final_leases.len() as u64 + 1) * (o.acquire_ms * 1_000_000 + pass_ns);
    // A host whose Acquire failed (503, 408, no answer) releases the copy
    // its balancer saw, clearing a still-present other owner (SPEC §3.3.4):
    // in the lease log, a version without owner written by a host that did
    // not own the version before it. The lease is then taken again within
    // an acquire interval, so balance waits for quiescence after it too.
    let released_from_another = leases.values().flat_map(|vs| {
        vs.windows(2).filter_map(|w| {
            let (before, after) = (w[0].doc.as_ref()?, w[1].doc.as_ref()?);
            let other = before.owner.as_ref().is_some_and(|o| *o != after.by);
            (after.owner.is_none() && other).then_some(w[1].at_ns)
        })
    });
    let late_expiry = takeovers
        .iter()
        .any(|(at, expired, _)| *expired && *at + quiescence_ns > end_ns);
    let late_release = released_from_another
        .into_iter()
        .any(|at| at + quiescence_ns > end_ns);
    let settling = late_expiry || late_release;
    let late_takeovers: Vec<&(u64, bool, String)> = takeovers
        .iter()
        .filter(|(at, expired, _)| !expired && *at + window_ns > end_ns)
        .collect();
    let late: Vec<String> = late_takeovers
        .iter()
        .map(|(_, _, what)| what.clone())
        .collect();
    if settling {
        partly.insert("CF8");
        notes.insert(
            "CF8",
            if late_expiry {
                "not judged: a lease expired late in the quiet phase (its renewals were lost)"
            } else {
                "not judged: a failed acquire released another host's lease late in the quiet phase (§3.3.4)"
            }
            .into(),
        );
        if !unowned.is_empty() {
            partly.insert("CF7");
            notes.insert(
                "CF7",
                format!(
                    "{} leases at the end; owners not judged: the hosts were still settling after a late expiry ({} without a live owner)",
                    final_leases.len(),
                    unowned.len()
                ),
            );
        }
    } else {
        v.extend(imbalance);
        v.extend(unowned);
    }
    if !settling && !late.is_empty() {
        let mut cf8 = violation(
            "CF8",
            format!(
                "leases still change hands in the last {} of the quiet phase ({} times): {}{}",
                secs(window_ns),
                late.len(),
                late[..late.len().min(6)].join("; "),
                if late.len() > 6 { "; …" } else { "" }
            ),
        );
        for (at, _, _) in &late_takeovers {
            cf8 = cf8.at("", *at, "a lease changed hands");
        }
        cf8 = cf8.with_evidence(Evidence {
            title: "Leases that changed hands late".to_string(),
            lead: vec![format!(
                "Every takeover of a live lease in the last {} of the quiet phase (expiration plus acquire interval): once quiet, no lease changes hands.",
                secs(window_ns)
            )],
            columns: ["when", "what"].map(String::from).to_vec(),
            rows: late_takeovers
                .iter()
                .map(|(at, _, what)| EvidenceRow {
                    op: None,
                    cells: vec![secs(*at), what.clone()],
                    marked: true,
                })
                .collect(),
            notes: Vec::new(),
        });
        v.push(cf8);
    }
    let counts_note = counts
        .iter()
        .map(|(h, c)| format!("{h}:{c}"))
        .collect::<Vec<_>>()
        .join(" ");
    notes.entry("CF8").or_insert(counts_note);

    // Short of the premise: CF7 and CF8 not judged, CF3 only as above.
    if let Some(why) = short {
        v.retain(|x| x.property == "CF3" || !END_OF_RUN.contains(&x.property.as_str()));
        for id in END_OF_RUN {
            partly.insert(id);
            notes.insert(id, format!("not judged: {why}"));
        }
        notes.insert(
            "CF3",
            format!(
                "{live} final versions, judged only where every lease covering the version has checkpointed past it ({lost_for_good} such never delivered): {why}"
            ),
        );
    }

    // CF10: a 304 with committed changes after the token in the range.
    let mut pulls = 0usize;
    let mut deleted_at: BTreeMap<&overcast_model::cosmos::ItemKey, Vec<u64>> = BTreeMap::new();
    for c in &items {
        if let ItemChange::Deleted { key, .. } = &c.change {
            deleted_at.entry(key).or_default().push(c.at_ns);
        }
    }
    let writes: Vec<(&Committed, u32)> = items
        .iter()
        .filter_map(|c| match &c.change {
            ItemChange::Written { key, .. } => Some((c, reference_epk(&key.partition_key))),
            ItemChange::Deleted { .. } => None,
        })
        .collect();
    for e in &h.node_events {
        let FeedEvent::Pull {
            min,
            max,
            from,
            begin_ns,
            status,
            ..
        } = &e.event
        else {
            continue;
        };
        pulls += 1;
        if *status != 304 {
            continue;
        }
        let pending = writes.iter().find(|(c, k)| {
            c.at_ns < *begin_ns
                && c.lsn > *from
                && *min <= *k
                && *k < *max
                && !deleted_at
                    .get(key_of(&c.change))
                    .is_some_and(|ds| ds.iter().any(|d| *d > c.at_ns && *d <= e.at_ns))
        });
        if let Some((c, _)) = pending {
            let key = key_of(&c.change);
            // The reader's page as an operation, to highlight on the page.
            let page_ops = h
                .ops
                .iter()
                .filter(|o| {
                    o.invoke_ns == *begin_ns
                        && matches!(&o.call, FeedCall::Pull { from: f, .. } if f == from)
                })
                .map(|o| o.id)
                .collect::<Vec<u64>>();
            v.push(
                violation(
                    "CF10",
                    format!(
                        "{} got 304 for range [{min:02X}-{max:02X}) after lsn {from} at {}, but item {}/{} was committed at lsn {} at {}",
                        e.node,
                        secs(*begin_ns),
                        key.partition_key,
                        key.id,
                        c.lsn,
                        secs(c.at_ns)
                    ),
                )
                .with_ops(page_ops.clone())
                .during(
                    e.node.clone(),
                    *begin_ns,
                    e.at_ns,
                    format!("304 after lsn {from}"),
                )
                .at("server-0", c.at_ns, format!("{}/{} committed at lsn {}", key.partition_key, key.id, c.lsn))
                .with_evidence({
                    let mut rows: Vec<EvidenceRow> = writes
                        .iter()
                        .filter(|(w, k)| w.at_ns < *begin_ns && w.lsn > *from && *min <= *k && *k < *max)
                        .take(8)
                        .map(|(w, _)| {
                            let k = key_of(&w.change);
                            EvidenceRow {
                                op: None,
                                cells: vec![
                                    secs(w.at_ns),
                                    format!("lsn {}", w.lsn),
                                    format!("{}/{} committed", k.partition_key, k.id),
                                ],
                                marked: w.lsn == c.lsn,
                            }
                        })
                        .collect();
                    rows.push(EvidenceRow {
                        op: page_ops.first().copied(),
                        cells: vec![
                            secs(e.at_ns),
                            String::new(),
                            format!("{} answered 304 (read began at {})", e.node, secs(*begin_ns)),
                        ],
                        marked: true,
                    });
                    Evidence {
                        title: format!("Range {min:02X}-{max:02X} after lsn {from}"),
                        lead: vec![format!(
                            "The writes committed in the range after lsn {from} before the read began, then the read's answer: a 304 says there were none."
                        )],
                        columns: ["when", "lsn", "what"].map(String::from).to_vec(),
                        rows,
                        notes: Vec::new(),
                    }
                }),
            );
        }
    }
    let (judged, left) = pages::judge_pull_pages(h, &log, &items, &mut v);
    let statuses = pages::judge_split_answers(h, &log, &mut v);
    notes.insert(
        "CF10",
        format!("{pulls} pull pages, {statuses} answers judged against the splits; {judged} pages of items judged item by item, {left} not (read across a recovery, or CF1's or CF2's)"),
    );
    let parents = lease_writes::judge_split_parents(h, p, &leases, &by_node, &mut v);
    notes.insert("CF11", format!("{parents} split parents"));
    let stamps = lease_writes::judge_stamps(h, p, &leases, &mut v);
    notes.insert("CF12", format!("{stamps} lease timestamps"));
    let resumes = resume::judge_resumes(&leases, &by_node, &mut v);
    notes.insert("CF13", format!("{resumes} acquisitions' first reads"));
    notes.insert("CF2", format!("{} hosts' streams", by_node.len()));
    notes.insert("CF5", format!("{} lease documents", leases.len()));
    notes.insert("CF6", format!("{} lease documents", leases.len()));
    Analysis {
        violations: v,
        notes,
        partly,
    }
}

/// One checker of the `feed` scenario: the properties it reports.
pub struct FeedRule {
    properties: &'static [Property],
    params: FeedParams,
    /// The walk of the history, shared by the rules of one run.
    analysis: SharedAnalysis<Analysis>,
}

impl Checker<FeedHistory> for FeedRule {
    fn properties(&self) -> &'static [Property] {
        self.properties
    }

    fn check(&self, h: &FeedHistory) -> Checked {
        let a = self.analysis.of(h, |h| analyse(h, &self.params));
        let mine: Vec<Violation> = a
            .violations
            .iter()
            .filter(|v| self.properties.iter().any(|p| p.id == v.property))
            .cloned()
            .collect();
        let name = self.properties[0].id.as_str();
        let note = a.notes.get(name).cloned().unwrap_or_default();
        let partly = self
            .properties
            .iter()
            .any(|p| a.partly.contains(p.id.as_str()));
        Checked::new(Verdict::from_violations(mine))
            .with_note(note)
            .partly(partly)
    }
}

/// The checkers, most important first: CF3, CF1, CF2, CF13, CF5, CF6, CF4,
/// CF9, CF11, CF12, CF7, CF8, CF10 (a property judged as it goes before the
/// ones that see the same bugs later, CF5's and the end's, so that a shrunk
/// run keeps it).
pub fn checkers(p: &FeedParams) -> Vec<FeedRule> {
    let analysis = SharedAnalysis::default();
    [
        &[CF3][..],
        &[CF1],
        &[CF2],
        &[CF13],
        &[CF5],
        &[CF6],
        &[CF4],
        &[CF9],
        &[CF11],
        &[CF12],
        &[CF7],
        &[CF8],
        &[CF10],
    ]
    .into_iter()
    .map(|properties| FeedRule {
        properties,
        params: p.clone(),
        analysis: analysis.clone(),
    })
    .collect()
}
