//! The checks of `occ`: linearizability of every item against the
//! reference spec (E2–E5), ETag freshness (E1), and retry discipline
//! (R1–R3, [`super::retry`]), each a [`Checker`] of the run's history.

use super::history::{Call, Outcome};
use super::retry::{check_retries, RetryCase, RetryRules, Surfaced};
use super::spec::{ItemOp, ItemResult, ItemSpec};
use overcast_model::partition::Effect;
use overcast_model::retry::RetryOptions;
use overcast_model::store;
use overcast_sim::check::fresh::check_fresh;
use overcast_sim::check::{Checked, Checker, Verdict, Violation};
use overcast_sim::history::History;
use overcast_sim::lin::{self, Operation};
use overcast_sim::world::{WorldEvent, WorldOutcome};
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::hash::BuildHasherDefault;

/// std's SipHash with its fixed default keys: the same hashes in every run.
type FixedState = BuildHasherDefault<std::collections::hash_map::DefaultHasher>;

/// The history `occ` records.
pub type OccHistory = History<Call, Outcome>;

/// Linearizability of every item against [`ItemSpec`].
pub struct Linearizability {
    /// The checker's options (budgets count steps in a run).
    pub options: lin::Options,
    /// A title for the HTML report.
    pub title: String,
}

impl Checker<OccHistory> for Linearizability {
    fn properties(&self) -> &'static [&'static str] {
        &["linearizability"]
    }

    fn check(&self, history: &OccHistory) -> Checked {
        let (history, lost) = without_lost_items(history);
        let (ops, _) = to_lin_ops(&history);
        let report = lin::check(&ItemSpec, &ops, &self.options);
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
                violations: vec![Violation {
                    property: "linearizability".into(),
                    message: match &report.failure {
                        Some(f) => format!("item {}: {}", f.key, f.sentence),
                        None => "not linearizable".into(),
                    },
                    ops: report
                        .failure
                        .as_ref()
                        .map(|f| f.ops.iter().map(|o| o.id).collect())
                        .unwrap_or_default(),
                }],
            },
        };
        let mut checked =
            Checked::new(verdict).with_note(format!("{} items{}", report.keys, lost_note(&lost)));
        if report.failure.is_some() {
            checked.explanation = Some(report.to_text());
            checked.html = Some(report.to_html(&self.title));
        }
        checked
    }
}

/// E1: every successful write's ETag is new for its item, and one ETag
/// always names one version.
pub struct EtagFreshness;

impl Checker<OccHistory> for EtagFreshness {
    fn properties(&self) -> &'static [&'static str] {
        &["E1"]
    }

    fn check(&self, history: &OccHistory) -> Checked {
        let (history, lost) = without_lost_items(history);
        let (_, e1) = etag_versions(&history);
        let checked = Checked::new(Verdict::from_violations(e1.into_iter().collect()));
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
                    store::Effect::ItemWritten { key, .. } | store::Effect::ItemDeleted { key, .. },
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
            what: format!("{LOST_ITEM}{item} on {node}"),
        })
        .collect()
}

/// The history without the items a lying disk lost writes of, and those items.
fn without_lost_items(history: &OccHistory) -> (Cow<'_, OccHistory>, BTreeSet<String>) {
    let lost: BTreeSet<String> = history
        .events
        .iter()
        .filter_map(|e| e.what.strip_prefix(LOST_ITEM))
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

/// R1–R3, from each operation's attempt log.
pub struct RetryDiscipline {
    /// The SDK's budgets the run used.
    pub retry: RetryOptions,
}

impl Checker<OccHistory> for RetryDiscipline {
    fn properties(&self) -> &'static [&'static str] {
        &["R1", "R2", "R3"]
    }

    fn check(&self, history: &OccHistory) -> Checked {
        let rules = RetryRules {
            max_rate_limited_retries: self.retry.max_rate_limited_retries,
            max_rate_limited_wait_ms: self.retry.max_rate_limited_wait.as_millis() as u64,
        };
        let cases = history.ops.iter().map(|o| RetryCase {
            op: o.id,
            idempotent: o.call.op == "read",
            attempts: &o.attempts,
            surfaced: match &o.result {
                None => Surfaced::Unknown,
                Some(Outcome::TimedOut) => Surfaced::TimedOut,
                Some(Outcome::Response { status, .. }) => Surfaced::Status(*status),
            },
        });
        Checked::new(Verdict::from_violations(
            check_retries(&rules, cases).into_iter().collect(),
        ))
    }
}

/// The version each (item, ETag) names, from the successful responses that
/// carried both: looked up, never iterated (a fixed hasher; ETags share a
/// long prefix, which makes ordered lookups slow).
type VersionMap<'a> = HashMap<(&'a str, &'a str), (u64, u64), FixedState>;

/// The ETag-to-version map and E1 (freshness and one version per ETag).
fn etag_versions(history: &OccHistory) -> (VersionMap<'_>, Option<Violation>) {
    let mut version_of: VersionMap<'_> = HashMap::default();
    let mut e1 = None;
    let mut produced = Vec::new();
    for o in &history.ops {
        if let Some(Outcome::Response {
            status: 200 | 201,
            etag: Some(e),
            version: Some(v),
            ..
        }) = &o.result
        {
            if o.call.op == "put" {
                produced.push((o.key.as_str(), e.as_str(), o.id));
            }
            let (first_v, first_op) = *version_of
                .entry((o.key.as_str(), e.as_str()))
                .or_insert((*v, o.id));
            if first_v != *v && e1.is_none() {
                e1 = Some(Violation {
                    property: "E1".into(),
                    message: format!("item {}: the ETag {e} named version {first_v} (op {first_op}) and version {v} (op {})", o.key, o.id),
                    ops: vec![first_op, o.id],
                });
            }
        }
    }
    (version_of, check_fresh("E1", produced).or(e1))
}

/// Turns the history into the checker's operations (ETags replaced by the
/// versions they name), and checks E1 on the way: every successful write's
/// ETag is new for its item, and one ETag always names one version.
pub fn to_lin_ops(history: &OccHistory) -> (Vec<Operation<ItemOp, ItemResult>>, Option<Violation>) {
    let (version_of, e1) = etag_versions(history);
    let mut ops = Vec::new();
    for o in &history.ops {
        let version = |etag: &Option<String>| {
            etag.as_ref()
                .and_then(|e| version_of.get(&(o.key.as_str(), e.as_str())).map(|v| v.0))
        };
        let input = match o.call.op.as_str() {
            "read" => match &o.call.if_none_match {
                None => ItemOp::Read,
                Some(_) => match version(&o.call.if_none_match) {
                    Some(v) => ItemOp::ReadIfNoneMatch(v),
                    None => continue,
                },
            },
            "put" => match (&o.call.if_match, &o.call.if_none_match, &o.call.body) {
                (None, None, Some(b)) => ItemOp::Put(b.clone()),
                (None, Some(star), Some(b)) if star == "*" => ItemOp::Create(b.clone()),
                (Some(_), None, Some(b)) => match version(&o.call.if_match) {
                    Some(v) => ItemOp::PutIfVersion(v, b.clone()),
                    None => continue,
                },
                _ => continue,
            },
            "delete" => match &o.call.if_match {
                None => ItemOp::Delete,
                Some(_) => match version(&o.call.if_match) {
                    Some(v) => ItemOp::DeleteIfVersion(v),
                    None => continue,
                },
            },
            _ => continue,
        };
        let output = match &o.result {
            None => None,
            Some(Outcome::TimedOut) => continue,
            Some(Outcome::Response {
                status,
                body,
                version,
                ..
            }) => Some(match (&input, status) {
                (ItemOp::Read, 200) => {
                    ItemResult::Present(body.clone().unwrap_or_default(), version.unwrap_or(0))
                }
                (ItemOp::ReadIfNoneMatch(_), 200) => {
                    ItemResult::Present(body.clone().unwrap_or_default(), version.unwrap_or(0))
                }
                (ItemOp::Read | ItemOp::ReadIfNoneMatch(_), 404) => ItemResult::Absent,
                (ItemOp::ReadIfNoneMatch(_), 304) => ItemResult::NotModified,
                (ItemOp::Read | ItemOp::ReadIfNoneMatch(_), _) => continue,
                (_, 200..=202) => ItemResult::Ok(*version),
                (_, 412) => ItemResult::PreconditionFailed,
                (_, 409) => ItemResult::Conflict,
                (ItemOp::Delete, 404) => ItemResult::NotFound,
                // 429, 449, 503 (and 410 surfaced as 503): rejected, not executed.
                _ => continue,
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
    (ops, e1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use overcast_model::conditions::ETag;
    use overcast_model::store::{Item, ItemKey};
    use overcast_model::wal::{encode, LogRecord};
    use overcast_sim::disk::LostWrite;
    use overcast_sim::history::OpRecord;

    fn op(id: u64, key: &str, put: Option<&str>, result: Outcome) -> OpRecord<Call, Outcome> {
        OpRecord {
            id,
            client: id as usize,
            key: key.into(),
            call: Call {
                op: if put.is_some() { "put" } else { "read" }.into(),
                item: key.into(),
                body: put.map(str::to_string),
                if_match: None,
                if_none_match: None,
            },
            invoke_ns: id * 10,
            return_ns: Some(id * 10 + 5),
            result: Some(result),
            attempts: vec![],
        }
    }

    fn ok(status: u16, version: u64, body: Option<&str>) -> Outcome {
        Outcome::Response {
            status,
            etag: Some(ETag::from_version(version).0),
            version: Some(version),
            body: body.map(str::to_string),
        }
    }

    /// k1 is written (acknowledged), then a read after a restart sees it
    /// absent: a violation, unless a lying disk is known to have lost it.
    fn history_losing(key: &str) -> OccHistory {
        History {
            version: overcast_sim::history::HISTORY_VERSION,
            ops: vec![
                op(1, key, Some("a"), ok(201, 1, None)),
                op(
                    2,
                    key,
                    None,
                    Outcome::Response {
                        status: 404,
                        etag: None,
                        version: None,
                        body: None,
                    },
                ),
                op(3, "k2", Some("b"), ok(201, 1, None)),
                op(4, "k2", None, ok(200, 1, Some("b"))),
            ],
            events: vec![],
            node_events: vec![],
        }
    }

    fn lin() -> Linearizability {
        Linearizability {
            options: lin::Options::default(),
            title: "t".into(),
        }
    }

    #[test]
    fn a_loss_named_by_the_lying_disk_is_reported_and_any_other_is_a_violation() {
        let record = LogRecord {
            partition: 0,
            lsn: 1,
            effect: Effect::Store(store::Effect::ItemWritten {
                key: ItemKey::new("docs", "k1", "k1"),
                item: Item {
                    body: "a".into(),
                    etag: ETag::from_version(1),
                    last_modified: 0,
                    version: 1,
                },
            }),
        };
        let world = WorldOutcome {
            lost_writes: vec![(
                "server-0".into(),
                LostWrite {
                    offset: 0,
                    bytes: encode(1, &record),
                },
            )],
            ..WorldOutcome::default()
        };
        let events = lost_item_events(&world);
        assert_eq!(events.len(), 1);
        assert!(
            events[0].what.ends_with("k1 on server-0"),
            "{}",
            events[0].what
        );

        let mut h = history_losing("k1");
        assert!(matches!(lin().check(&h).verdict(), Verdict::Broken { .. }));
        h.events = events.clone();
        let checked = lin().check(&h);
        assert_eq!(checked.verdict(), &Verdict::Held);
        assert!(checked.note.contains("not checked: k1"), "{}", checked.note);

        // A loss of another item is still a violation.
        let mut h = history_losing("k3");
        h.events = events;
        assert!(matches!(lin().check(&h).verdict(), Verdict::Broken { .. }));
    }
}
