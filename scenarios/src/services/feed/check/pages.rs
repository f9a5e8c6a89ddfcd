//! CF10's judge of a pull page's content: a 200 page holds what the log
//! held after its token, in its range, as of one read point. Written apart
//! from the model: the range a key falls in is computed here again from the
//! documented hash ([`reference_epk`]).
//!
//! At read point `L` (a log position), the latest-version feed of a range
//! after token `from` is, for each key of the range, its latest change up to
//! `L` when that change is a write after `from` (a key whose latest change
//! is a delete is not in it). A page read from `from`, answered when the log
//! ended at `E`, with continuation `C`, is right when its items come in LSN
//! order and, for some read point `L` with `C ≤ L ≤ E`, it is exactly the
//! feed at `L` up to `C`: nothing after its continuation, nothing up to it
//! left out. A page the page-size hint cut has `C` below `L` (between
//! LSNs: a batch stays whole); a page not cut has `C = L`, or any `C` below
//! it that leaves nothing out (the next read goes on from there).
//!
//! The read point is not held to the writes acknowledged before the read
//! began (the server makes a record visible when its sync commits it, which
//! the log does not record): a page that is right for an older read point
//! passes here, and CF10's 304 rule is what judges staleness. A page whose
//! read saw a server recover, or that holds a version the durable log does
//! not (CF1's), is not judged.

use super::{key_of, secs, violation, Committed, ITEMS};
use crate::services::feed::history::{FeedEvent, FeedHistory};
use overcast_model::cosmos::ItemChange;
use overcast_model::feed::{FeedEffect, FeedItem};
use overcast_model::partition::Effect;
use overcast_sim::check::{Evidence, EvidenceRow, Violation};
use std::collections::{BTreeMap, BTreeSet};

/// A partition key's EPK as the docs define it: the xor of the four bytes
/// of the 32-bit FNV-1a hash of its bytes (an EPK in `0..256`).
pub fn reference_epk(partition_key: &str) -> u32 {
    let h = partition_key.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    h.to_le_bytes().iter().fold(0, |e, b| e ^ u32::from(*b))
}

/// An item of a page as the judge compares it: LSN, partition key, id, version, body.
type PageItem = (u64, String, String, u64, String);

fn page_item(i: &FeedItem) -> PageItem {
    (
        i.lsn,
        i.partition_key.clone(),
        i.id.clone(),
        i.version,
        i.body.clone(),
    )
}

/// Each key of range `[min, max)` with its latest change up to `at` (a
/// write's item, or `None` for a delete).
fn latest_at(
    items: &[Committed],
    min: u32,
    max: u32,
    at: u64,
) -> BTreeMap<(String, String), Option<PageItem>> {
    let mut latest = BTreeMap::new();
    for c in items.iter().filter(|c| c.lsn <= at) {
        apply(&mut latest, c, min, max);
    }
    latest
}

/// Records change `c` in `latest` if its key is in range `[min, max)`.
fn apply(
    latest: &mut BTreeMap<(String, String), Option<PageItem>>,
    c: &Committed,
    min: u32,
    max: u32,
) {
    let key = key_of(&c.change);
    let e = reference_epk(&key.partition_key);
    if e < min || e >= max {
        return;
    }
    latest.insert((key.partition_key.clone(), key.id.clone()), written(c));
}

/// The item change `c` writes, as a page holds it; `None` for a delete.
fn written(c: &Committed) -> Option<PageItem> {
    match &c.change {
        ItemChange::Written { key, item } => Some((
            c.lsn,
            key.partition_key.clone(),
            key.id.clone(),
            item.version,
            item.body.clone(),
        )),
        ItemChange::Deleted { .. } => None,
    }
}

/// The latest-version feed after `from` up to `upto` of what `latest` holds.
fn feed_of(
    latest: &BTreeMap<(String, String), Option<PageItem>>,
    from: u64,
    upto: u64,
) -> BTreeSet<PageItem> {
    latest
        .values()
        .flatten()
        .filter(|i| i.0 > from && i.0 <= upto)
        .cloned()
        .collect()
}

/// Whether a page holding `page` with continuation `continuation`, read
/// from `from` on `[min, max)` and answered when the log ended at LSN
/// `end`, is the feed at some read point (see the module's doc). Read
/// points from the continuation on are tried in log order, a batch whole.
fn page_fits(
    items: &[Committed],
    (min, max, from): (u32, u32, u64),
    page: &BTreeSet<PageItem>,
    continuation: u64,
    end: u64,
) -> bool {
    if continuation > end || page.iter().any(|i| i.0 > continuation) {
        return false;
    }
    let mut latest = latest_at(items, min, max, continuation);
    if *page == feed_of(&latest, from, continuation) {
        return true;
    }
    let mut later = items
        .iter()
        .filter(|c| c.lsn > continuation && c.lsn <= end)
        .peekable();
    while let Some(c) = later.next() {
        apply(&mut latest, c, min, max);
        if later.peek().is_some_and(|n| n.lsn == c.lsn) {
            continue; // a batch is seen whole
        }
        if *page == feed_of(&latest, from, continuation) {
            return true;
        }
    }
    false
}

/// Judges every 200 pull page of `h` against the durable log (`log`: time,
/// LSN, effect) and the monitored container's changes in it (`items`).
/// Returns the number of pages judged and of those left to other rules (a
/// recovery during the read, a version the log lacks, a key twice).
pub(super) fn judge_pull_pages(
    h: &FeedHistory,
    log: &[(u64, u64, Effect)],
    items: &[Committed],
    v: &mut Vec<Violation>,
) -> (usize, usize) {
    let recoveries: Vec<u64> = h
        .node_events
        .iter()
        .filter(|e| matches!(e.event, FeedEvent::Recovered { .. }))
        .map(|e| e.at_ns)
        .collect();
    let committed: BTreeSet<PageItem> = items.iter().filter_map(written).collect();
    let (mut judged, mut left) = (0, 0);
    for e in &h.node_events {
        let FeedEvent::Pull {
            min,
            max,
            from,
            begin_ns,
            status: 200,
            items: got,
            continuation,
            ..
        } = &e.event
        else {
            continue;
        };
        let (begin, end) = (*begin_ns, e.at_ns);
        if recoveries.iter().any(|r| begin <= *r && *r <= end) {
            left += 1;
            continue;
        }
        let page: BTreeSet<PageItem> = got.iter().map(page_item).collect();
        if page.len() != got.len() || !page.is_subset(&committed) {
            left += 1; // a key twice (CF2's), or a version the log lacks (CF1's)
            continue;
        }
        judged += 1;
        let end_lsn = log
            .iter()
            .filter(|(at, ..)| *at <= end)
            .map(|(_, lsn, _)| *lsn)
            .max()
            .unwrap_or(0);
        let in_order = got.windows(2).all(|w| w[0].lsn <= w[1].lsn);
        if in_order && page_fits(items, (*min, *max, *from), &page, *continuation, end_lsn) {
            continue;
        }
        let feed = feed_of(&latest_at(items, *min, *max, end_lsn), *from, u64::MAX);
        let missing: Vec<&PageItem> = feed
            .iter()
            .filter(|i| i.0 <= *continuation && !page.contains(*i))
            .collect();
        let why = if !in_order {
            "its items are not in LSN order".to_string()
        } else if let Some(m) = missing.first() {
            format!(
                "it skips {}/{} version {} (lsn {}), which its continuation {continuation} passes",
                m.1, m.2, m.3, m.0
            )
        } else {
            format!(
                "no read point up to lsn {end_lsn} gives this page and continuation {continuation}"
            )
        };
        let rows = feed
            .iter()
            .map(|i| EvidenceRow {
                op: None,
                cells: vec![
                    format!("lsn {}", i.0),
                    format!("{}/{} version {}", i.1, i.2, i.3),
                    if page.contains(i) {
                        "in the page"
                    } else {
                        "not in the page"
                    }
                    .to_string(),
                ],
                marked: !page.contains(i) && i.0 <= *continuation,
            })
            .collect();
        v.push(
            violation(
                "CF10",
                format!(
                    "{} read range [{min:02X}-{max:02X}) after lsn {from} at {} and got {} items with continuation {continuation}, but {why}",
                    e.node,
                    secs(begin),
                    got.len(),
                ),
            )
            .during(e.node.clone(), begin, end, format!("page after lsn {from}"))
            .with_evidence(Evidence {
                title: format!("Range {min:02X}-{max:02X} after lsn {from}, as of lsn {end_lsn}"),
                lead: vec![format!(
                    "Each item's latest committed version in the range after lsn {from} when the read was answered, and whether the page held it:"
                )],
                columns: ["lsn", "item", "page"].map(String::from).to_vec(),
                rows,
                notes: Vec::new(),
            }),
        );
    }
    (judged, left)
}

/// Judges each answered pull read's status against the splits in the log
/// (`log`: time, LSN, effect): a read of a range the log had split before
/// the read began is answered 410 (the reader then reads its children), and
/// a 410 answers only a range the log had split by the time it came.
/// Returns the number of reads judged.
pub(super) fn judge_split_answers(
    h: &FeedHistory,
    log: &[(u64, u64, Effect)],
    v: &mut Vec<Violation>,
) -> usize {
    // Each split range's split: when, and its children's ids.
    let mut split_at: BTreeMap<u32, (u64, Vec<u32>)> = BTreeMap::new();
    for (at, _, effect) in log {
        if let Effect::Feed(FeedEffect::Split {
            container,
            parent,
            children,
        }) = effect
        {
            if container == ITEMS {
                let ids = children.iter().map(|c| c.id).collect();
                split_at.entry(parent.id).or_insert((*at, ids));
            }
        }
    }
    let mut judged = 0;
    for e in &h.node_events {
        let FeedEvent::Pull {
            range,
            from,
            begin_ns,
            status,
            ..
        } = &e.event
        else {
            continue;
        };
        let (begin, end) = (*begin_ns, e.at_ns);
        let split = split_at.get(range).map(|(t, _)| *t);
        let wrong = match status {
            410 if !matches!(split, Some(t) if t <= end) => Some(format!(
                "the log had not split range {range} when the answer came"
            )),
            200 | 304 => split.filter(|t| *t < begin).map(|t| {
                format!(
                    "the log split range {range} at {}, before the read began: a read of a split range answers 410",
                    secs(t)
                )
            }),
            _ => None,
        };
        if *status != 0 {
            judged += 1;
        }
        if let Some(why) = wrong {
            let mut found = violation(
                "CF10",
                format!(
                    "{} read range {range} after lsn {from} at {} and was answered {status}, but {why}",
                    e.node,
                    secs(begin)
                ),
            )
            .during(e.node.clone(), begin, end, format!("read of range {range}"));
            let mut rows = Vec::new();
            if let Some((t, children)) = split_at.get(range) {
                found = found.at("server-0", *t, format!("range {range} split"));
                let ids: Vec<String> = children.iter().map(u32::to_string).collect();
                rows.push((
                    *t,
                    EvidenceRow {
                        op: None,
                        cells: vec![
                            secs(*t),
                            format!(
                                "the log splits range {range} into ranges {}",
                                ids.join(" and ")
                            ),
                        ],
                        marked: false,
                    },
                ));
            }
            rows.push((
                begin,
                EvidenceRow {
                    op: None,
                    cells: vec![
                        format!("{} – {}", secs(begin), secs(end)),
                        format!(
                            "{} reads range {range} after lsn {from}: answered {status}",
                            e.node
                        ),
                    ],
                    marked: true,
                },
            ));
            rows.sort_by_key(|(at, _)| *at);
            let rows = rows.into_iter().map(|(_, row)| row).collect();
            v.push(found.with_evidence(Evidence {
                title: format!("Range {range} and its split"),
                lead: vec![format!(
                    "The log's split of range {range}, if any, and the read: a read of a range split before it began is answered 410."
                )],
                columns: ["when", "what"].map(String::from).to_vec(),
                rows,
                notes: Vec::new(),
            }));
        }
    }
    judged
}
