//! Linearizability checking, generic over a small sequential [`Spec`].
//!
//! The entry point is [`check`]: it splits a history by key
//! (P-compositionality), checks the keys in parallel (stopping at the first
//! illegal one), and returns a [`Report`] with the verdict and, when the
//! history is not linearizable, a small failing sub-history, the longest
//! partial linearization and a sentence naming the operation that cannot be
//! placed. [`Report::to_text`] and [`Report::to_html`] render it.
//!
//! Per key, when no two operations write the same value, a unique-values
//! pass ([`unique`]) decides in O(n log n) from the values alone when the
//! spec gives a register view ([`Spec::register`]) and the key has a few
//! operations or more ([`Options::unique_min_ops`]); a version-aware fast
//! path ([`versioned`]) decides in near-linear time when the spec gives
//! version claims ([`Spec::claim`]); otherwise, or when neither settles it,
//! an exact search runs (just-in-time linearization with merged
//! configurations, see `search`).
//! Time and memory budgets give [`Verdict::Unknown`], never a wrong verdict.
//!
//! [`kv`] holds the key-value spec of the kvhist/1 format and its parser,
//! [`brute`] a brute-force reference checker, [`gen`] a history generator.
//!
//! ```ignore
//! use overcast_lin::{check, kv, Options, Verdict};
//! let h = kv::parse_kvhist(&std::fs::read_to_string("history.json")?)?;
//! let report = check(&h.spec, &h.ops, &Options::default());
//! if report.verdict == Verdict::NotLinearizable {
//!     print!("{}", report.to_text());
//!     std::fs::write("report.html", report.to_html("history.json"))?;
//! }
//! ```
//!
//! A spec of one's own implements [`Spec`] (`init`, `step`, and optionally
//! `is_read_only`, `register` for the unique-values pass, and `version_of`
//! with `claim` for the version-aware fast path); operations are
//! [`Operation`]s whose `output: None` means an unknown outcome. A register
//! of integers:
//!
//! ```
//! use overcast_lin::{check, Next, Operation, Options, Spec, Verdict};
//! enum Op { Write(i64), Read }
//! struct Register;
//! impl Spec for Register {
//!     type State = i64;
//!     type Input = Op;
//!     type Output = i64; // a read's value (a write answers 0)
//!     fn init(&self, _key: &str) -> i64 { 0 }
//!     fn step(&self, s: &i64, op: &Op, out: Option<&i64>) -> Next<i64> {
//!         match op {
//!             Op::Write(v) => Next::One(*v),
//!             Op::Read => match out {
//!                 Some(seen) if seen != s => Next::Illegal,
//!                 _ => Next::One(*s),
//!             },
//!         }
//!     }
//! }
//! # impl std::fmt::Debug for Op {
//! #     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
//! #         match self { Op::Write(v) => write!(f, "write {v}"), Op::Read => write!(f, "read") }
//! #     }
//! # }
//! let op = |id, input, invoke, ret, output| Operation {
//!     id, client: id, key: "x".into(), input, invoke, ret: Some(ret), output: Some(output),
//! };
//! // The read starts after the write returned, yet sees the old value.
//! let h = [op(0, Op::Write(1), 0, 10, 0), op(1, Op::Read, 11, 12, 0)];
//! let report = check(&Register, &h, &Options::default());
//! assert_eq!(report.verdict, Verdict::NotLinearizable);
//! ```

#![deny(missing_docs)]

mod bits;
pub mod brute;
mod explain;
pub mod gen;
pub mod kv;
mod report;
mod search;
mod spec;
pub mod unique;
pub mod versioned;

pub use report::{esc as html_escape, Failure, OpView, Report, Step, TimeUnit, Verdict};
pub use spec::{
    Claim, DeadStates, Guard, LastObserver, Next, RegisterOp, RegisterView, Spec, ValueOf,
    ValueUse, Values,
};

use search::{KOp, Limits, Outcome};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// One operation of a history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operation<I, O> {
    /// An identifier, for reports only.
    pub id: u64,
    /// The client (process) that issued it, for reports only.
    pub client: u64,
    /// The key it touches: the unit of partitioning.
    pub key: String,
    /// What was asked.
    pub input: I,
    /// Invocation time (any clock; only the order matters).
    pub invoke: i64,
    /// Return time; `None` if no response was ever seen.
    pub ret: Option<i64>,
    /// The observed output; `None` if the outcome is unknown. An operation
    /// with an unknown outcome may take effect at any single instant after
    /// its invocation, or never (its `ret` is then ignored); a read-only one
    /// ([`Spec::is_read_only`]) constrains nothing and is dropped. An
    /// operation with an output but no `ret` must be placed somewhere after
    /// its invocation.
    pub output: Option<O>,
}

/// How [`check`] runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// Give up (verdict Unknown) when the search of one key has taken this
    /// many steps (spec steps and configurations expanded). Counted per key,
    /// so the verdict and the report do not depend on the machine, its load
    /// or `parallel`. Default: none.
    pub max_steps: Option<u64>,
    /// Give up (verdict Unknown) after this long. Not deterministic: the same
    /// history may get a verdict on one machine and Unknown on a slower one;
    /// for checking files (`overcast check --timeout`), never inside a run.
    /// Default: none.
    pub time_budget: Option<Duration>,
    /// Give up (verdict Unknown) when the search's estimated memory exceeds
    /// this many bytes. Default: 4 GiB.
    pub memory_budget: usize,
    /// Check keys in parallel on the rayon pool. Default: true.
    pub parallel: bool,
    /// Use the version-aware fast path when the spec gives claims. Default: true.
    pub fast_path: bool,
    /// Use the unique-values pass ([`unique`]) on keys whose written values
    /// are all distinct, when the spec gives a register view
    /// ([`Spec::register`]). Default: true.
    pub unique_values: bool,
    /// Keys of fewer operations than this skip the unique-values pass: the
    /// search decides them in a handful of configurations, sooner than the
    /// pass sets up its blocks (and the same goes for their reports).
    /// Default: 6.
    pub unique_min_ops: usize,
    /// Shrink the failing sub-history and record the longest partial
    /// linearization for the report. Default: true.
    pub explain: bool,
    /// The search goes breadth-first (exact, memory-bounded by the
    /// frontier) and continues depth-first from the frontier when it holds
    /// more configurations than this (finds a linearization sooner when the
    /// state space is wide). Default: 20 000.
    pub frontier_cap: usize,
    /// What the operations' times count, for the report's words (the check
    /// itself only compares them). Default: [`TimeUnit::Raw`].
    pub time_unit: TimeUnit,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_steps: None,
            time_budget: None,
            memory_budget: 4 << 30,
            parallel: true,
            fast_path: true,
            unique_values: true,
            unique_min_ops: 6,
            explain: true,
            frontier_cap: 20_000,
            time_unit: TimeUnit::Raw,
        }
    }
}

/// The result of checking one key, and the search steps it took.
enum KeyResult {
    Ok(u64),
    Fail(Box<Failure>, u64),
    GaveUp(String, u64),
}

const CANCELLED: &str = "cancelled";

/// Below this many operations the keys are checked one after another even
/// when `opts.parallel`: starting the pool's threads costs more CPU time and
/// memory than such a history takes to check (Porcupine's small kv logs and
/// the examples: well under a millisecond each).
const PARALLEL_MIN_OPS: usize = 1024;

/// Checks `ops` for linearizability against `spec`, key by key.
///
/// The verdict is deterministic (except where a time budget runs out). Keys
/// are checked in parallel when `opts.parallel` (histories of fewer than 1,024
/// operations go key by key all the same); the first key found illegal
/// stops the others, and the failing key that comes first in key order among
/// those that finished is reported (with several illegal keys, which one is
/// named may depend on timing; run with `parallel: false` for a fixed choice).
pub fn check<P: Spec>(spec: &P, ops: &[Operation<P::Input, P::Output>], opts: &Options) -> Report {
    let start = Instant::now();
    let deadline = opts.time_budget.map(|d| start + d);
    // Group by key (a hash map for speed; sorted afterwards, so the order
    // never depends on hashing). Indices are kept in 32 bits: these lists
    // hold every operation of the history for the whole check.
    let mut at: rustc_hash::FxHashMap<&str, usize> = rustc_hash::FxHashMap::default();
    let mut keys: Vec<(&str, Vec<OpIndex>)> = Vec::new();
    for (i, o) in ops.iter().enumerate() {
        let k = *at.entry(o.key.as_str()).or_insert_with(|| {
            keys.push((o.key.as_str(), Vec::new()));
            keys.len() - 1
        });
        keys[k].1.push(op_index(i));
    }
    drop(at);
    keys.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let first_fail = AtomicUsize::new(usize::MAX);
    let run_key = |ki: usize| -> KeyResult {
        let cancel = || first_fail.load(Ordering::Relaxed) != usize::MAX;
        let failed = || {
            first_fail.fetch_min(ki, Ordering::Relaxed);
        };
        check_key(
            spec,
            keys[ki].0,
            ops,
            &keys[ki].1,
            opts,
            deadline,
            &cancel,
            &failed,
        )
    };
    let parallel = opts.parallel && keys.len() > 1 && ops.len() >= PARALLEL_MIN_OPS;
    let results: Vec<KeyResult> = if parallel {
        // Workers take keys in key order from a shared counter, so that every
        // core is on a different key and a quick failure stops a slow key.
        let next = AtomicUsize::new(0);
        let slots: Vec<std::sync::Mutex<Option<KeyResult>>> = (0..keys.len())
            .map(|_| std::sync::Mutex::new(None))
            .collect();
        let workers = rayon::current_num_threads().clamp(1, keys.len());
        rayon::scope(|sc| {
            for _ in 0..workers {
                sc.spawn(|_| loop {
                    let ki = next.fetch_add(1, Ordering::Relaxed);
                    if ki >= keys.len() {
                        break;
                    }
                    let r = if first_fail.load(Ordering::Relaxed) != usize::MAX {
                        KeyResult::GaveUp(CANCELLED.into(), 0)
                    } else {
                        run_key(ki)
                    };
                    if let Ok(mut g) = slots[ki].lock() {
                        *g = Some(r);
                    }
                });
            }
        });
        slots
            .into_iter()
            .map(|m| {
                m.into_inner()
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| KeyResult::GaveUp(CANCELLED.into(), 0))
            })
            .collect()
    } else {
        let mut v = Vec::with_capacity(keys.len());
        for ki in 0..keys.len() {
            let r = run_key(ki);
            let stop = matches!(r, KeyResult::Fail(..));
            v.push(r);
            if stop {
                break;
            }
        }
        v
    };
    let mut verdict = Verdict::Linearizable;
    let mut failure = None;
    let mut unknown_reason = None;
    let mut checked = 0;
    let mut max_key_steps = 0;
    for (ki, r) in results.into_iter().enumerate() {
        match r {
            KeyResult::Ok(steps) => {
                checked += 1;
                max_key_steps = max_key_steps.max(steps);
            }
            KeyResult::Fail(f, steps) => {
                checked += 1;
                max_key_steps = max_key_steps.max(steps);
                if failure.is_none() {
                    failure = Some(*f);
                }
                verdict = Verdict::NotLinearizable;
            }
            KeyResult::GaveUp(why, _) if failure.is_some() || why == CANCELLED => {}
            KeyResult::GaveUp(why, steps) => {
                max_key_steps = max_key_steps.max(steps);
                if unknown_reason.is_none() {
                    unknown_reason = Some(format!("key {:?}: {why}", keys[ki].0));
                }
                if verdict != Verdict::NotLinearizable {
                    verdict = Verdict::Unknown;
                }
            }
        }
    }
    if verdict != Verdict::Unknown {
        unknown_reason = None;
    }
    Report {
        verdict,
        ops: ops.len(),
        keys: keys.len(),
        keys_checked: checked,
        elapsed: start.elapsed(),
        max_key_steps,
        unknown_reason,
        failure,
        time_unit: opts.time_unit,
    }
}

/// A key's operations as the search sees them, and their history indices.
pub(crate) type KeyOps<'a, P> = (
    Vec<KOp<'a, <P as Spec>::Input, <P as Spec>::Output>>,
    Vec<usize>,
);

/// An operation's index in the history, in 32 bits (a history of more
/// than 2^32 operations does not fit in memory anyway).
pub(crate) type OpIndex = u32;

/// `i` as an [`OpIndex`].
pub(crate) fn op_index(i: usize) -> OpIndex {
    OpIndex::try_from(i).expect("a history of fewer than 2^32 operations")
}

/// The operations of one key, as the search sees them, with their indices
/// into the history.
pub(crate) fn key_ops<'a, P: Spec>(
    spec: &P,
    ops: &'a [Operation<P::Input, P::Output>],
    idx: &[OpIndex],
) -> KeyOps<'a, P> {
    let mut kops = Vec::with_capacity(idx.len());
    let mut orig = Vec::with_capacity(idx.len());
    for &i in idx {
        let i = i as usize;
        let o = &ops[i];
        let output = o.output.as_ref();
        let ro = spec.is_read_only(&o.input, output);
        if output.is_none() && ro {
            continue; // an unusable read constrains nothing
        }
        let ret = output.map(|_| o.ret.unwrap_or(i64::MAX));
        kops.push(KOp {
            input: &o.input,
            output,
            call: o.invoke,
            ret,
            read_only: ro && output.is_some(),
            claim: output.map_or(Claim::None, |out| spec.claim(&o.input, out)),
            blind: false,
        });
        orig.push(i);
    }
    let io: Vec<_> = kops.iter().map(|k| (k.input, k.output)).collect();
    for (k, blind) in kops.iter_mut().zip(spec.blind_writes(&io)) {
        k.blind = blind && k.output.is_none();
    }
    (kops, orig)
}

#[allow(clippy::too_many_arguments)]
fn check_key<P: Spec>(
    spec: &P,
    key: &str,
    ops: &[Operation<P::Input, P::Output>],
    idx: &[OpIndex],
    opts: &Options,
    deadline: Option<Instant>,
    cancel: &(dyn Fn() -> bool + Sync),
    failed: &dyn Fn(),
) -> KeyResult {
    let (kops, orig) = key_ops(spec, ops, idx);
    let init = spec.init(key);
    let limits = Limits {
        deadline,
        max_steps: opts.max_steps,
        memory: opts.memory_budget,
        cancel: Some(cancel),
        record_paths: false,
        prune: true,
        stop_after: None,
        frontier_cap: opts.frontier_cap,
        doom_until: 0,
    };
    // Unique values first: where they apply they decide in one pass, and
    // the claims of a few conditional puts rarely settle a key alone.
    if opts.unique_values && kops.len() >= opts.unique_min_ops {
        match unique::decide(spec, &init, &kops) {
            unique::Decision::Linearizable => return KeyResult::Ok(0),
            unique::Decision::Refuted(r) => {
                failed();
                return KeyResult::Fail(
                    Box::new(explain::from_refutation(
                        spec, key, ops, &kops, &orig, &init, &r, opts, deadline,
                    )),
                    0,
                );
            }
            unique::Decision::Undecided => {}
        }
    }
    if opts.fast_path && kops.iter().any(|o| o.claim != Claim::None) {
        match versioned::decide(spec, &init, &kops) {
            versioned::Decision::Linearizable => return KeyResult::Ok(0),
            versioned::Decision::Refuted(cert) => {
                failed();
                return KeyResult::Fail(
                    Box::new(explain::from_certificate(
                        spec, key, ops, &kops, &orig, &init, &cert, opts, deadline,
                    )),
                    0,
                );
            }
            versioned::Decision::Undecided => {}
        }
    }
    match search::search(spec, &init, &kops, &limits) {
        (Outcome::Ok, steps) => KeyResult::Ok(steps),
        (Outcome::GaveUp(r), steps) => KeyResult::GaveUp(r, steps),
        (Outcome::Fail(mut info), steps) => {
            failed();
            if info.pruned && !info.version_pruned {
                // Only configurations doomed by an overwritten value were
                // dropped: the operation that doomed them is the one that
                // cannot be placed, if a search of the history cut at its
                // return confirms it.
                if let Some(i) = explain::confirm_doomed(spec, &init, &kops, &info, &limits) {
                    info = i;
                }
            }
            if info.pruned {
                // Pruning may name an operation that could be placed (where
                // the last surviving configuration died): search again
                // without it, within the explanation's budget.
                // Not cancellable: this key's own failure sets the flag.
                let exact = Limits {
                    prune: false,
                    doom_until: info.event,
                    max_steps: Some(explain::CHECK_STEPS * 5),
                    cancel: None,
                    ..limits
                };
                if let (Outcome::Fail(i), _) = search::search(spec, &init, &kops, &exact) {
                    info = i;
                }
            }
            KeyResult::Fail(
                Box::new(explain::from_search(
                    spec, key, ops, &kops, &orig, &init, &info, opts, deadline,
                )),
                steps,
            )
        }
    }
}
