//! Turning a failed search (or a version certificate) into a [`Failure`]: a
//! small failing sub-history, re-checked before it is printed, the longest
//! partial linearization, and a sentence that holds of the full history.
//!
//! The named operation is the one the search of the full history could not
//! place before its return. The sub-history starts from a configuration the
//! search passed through, holds the named operation, and is cut at its
//! return: a search of it (without pruning) must fail exactly there. It is
//! then shrunk (delta debugging: chunks, then single operations) as long as
//! that stays true, so it never loses an operation the failure depends on.
//! Every search here is bounded in steps, never in seconds, so the same
//! history always gets the same report (a time budget, when one is given,
//! may only cut the shrinking short).
//!
//! Long because its three explanations (from a failed search, a version
//! certificate, a refutation) share the cutting and shrinking above them.

use super::report::{Failure, OpView, Step, TimeUnit};
use super::search::{self, FailInfo, KOp, Limits, Outcome, Snapshot};
use super::spec::{Claim, Spec};
use super::unique::{Contradiction, Refutation};
use super::versioned::Certificate;
use super::{Operation, Options};
use std::time::Instant;

/// Steps for one re-check of a candidate sub-history.
pub(crate) const CHECK_STEPS: u64 = 2_000_000;
/// Steps for all the shrinking of one failure.
const SHRINK_STEPS: u64 = 20_000_000;
/// Candidate sub-histories tried while shrinking one failure.
const SHRINK_TRIES: usize = 2_000;
/// Fresh shrinking budgets for narrower starts after one ran out.
const SHRINK_REFILLS: usize = 2;
/// Operations that doomed configurations a pruned search dropped, tried as
/// the one that cannot be placed.
const DOOM_CANDIDATES: usize = 4;

fn copy<'a, I, O>(k: &KOp<'a, I, O>) -> KOp<'a, I, O> {
    KOp {
        input: k.input,
        output: k.output,
        call: k.call,
        ret: k.ret,
        read_only: k.read_only,
        claim: k.claim,
        blind: k.blind,
    }
}

/// What a search of a sub-history cut at the named operation's return says.
enum Cut<S> {
    /// It fails exactly at the named operation.
    FailsAt(Box<FailInfo<S>>),
    /// It is linearizable, or fails at another operation.
    Other,
    /// The budget ran out.
    Unknown,
}

/// The budget of one explanation.
struct Budget {
    steps: u64,
    tries: usize,
    deadline: Option<Instant>,
}

impl Budget {
    fn left(&self) -> bool {
        self.steps > 0 && self.tries > 0 && !matches!(self.deadline, Some(d) if Instant::now() >= d)
    }
}

/// Searches `w` (indices into `kops`, in increasing order) from `start`, cut
/// at the return of `x` (a member of `w`), without pruning: exactly, except
/// that configurations doomed by an overwritten value that die by `x`'s
/// return are dropped. If the search then fails before `x`'s return, every
/// configuration still dies by it, and the history without `x`, cut just
/// before that return, being linearizable shows that one survives until
/// then: the exact search fails exactly at `x`.
#[allow(clippy::too_many_arguments)]
fn cut_check<P: Spec>(
    spec: &P,
    start: &P::State,
    kops: &[KOp<'_, P::Input, P::Output>],
    w: &[usize],
    x: usize,
    opts: &Options,
    budget: &mut Budget,
    paths: bool,
) -> Cut<P::State> {
    let Ok(xi) = w.binary_search(&x) else {
        return Cut::Other;
    };
    let sub: Vec<KOp<'_, P::Input, P::Output>> = w.iter().map(|&o| copy(&kops[o])).collect();
    let ev = search::events(&sub);
    let Some(x_ret) = ev.iter().position(|e| e.kind == 1 && e.op as usize == xi) else {
        return Cut::Other;
    };
    let limits = Limits {
        deadline: budget.deadline,
        max_steps: Some(budget.steps.min(CHECK_STEPS)),
        memory: opts.memory_budget,
        cancel: None,
        record_paths: paths,
        prune: false,
        stop_after: Some(xi),
        frontier_cap: opts.frontier_cap,
        doom_until: x_ret,
    };
    let (outcome, steps) = search::search(spec, start, &sub, &limits);
    budget.steps = budget.steps.saturating_sub(steps.max(1));
    budget.tries = budget.tries.saturating_sub(1);
    match outcome {
        Outcome::Fail(f) if f.op == xi => Cut::FailsAt(f),
        Outcome::Fail(f) if f.pruned => {
            // The witness: w without x, up to the last return before x's.
            let Some(last) = ev[..x_ret].iter().rposition(|e| e.kind == 1) else {
                return Cut::FailsAt(f);
            };
            let stop = ev[last].op as usize;
            let without: Vec<KOp<'_, P::Input, P::Output>> = (0..sub.len())
                .filter(|&i| i != xi)
                .map(|i| copy(&sub[i]))
                .collect();
            let witness = Limits {
                record_paths: false,
                prune: true,
                stop_after: Some(stop - usize::from(stop > xi)),
                doom_until: 0,
                max_steps: Some(budget.steps.min(CHECK_STEPS)),
                ..limits
            };
            let (outcome, steps) = search::search(spec, start, &without, &witness);
            budget.steps = budget.steps.saturating_sub(steps.max(1));
            match outcome {
                Outcome::Ok => Cut::FailsAt(f),
                Outcome::GaveUp(_) => Cut::Unknown,
                Outcome::Fail(_) => Cut::Other,
            }
        }
        Outcome::GaveUp(_) => Cut::Unknown,
        _ => Cut::Other,
    }
}

/// Finds, among `info.doom_needers` (the first few tried), the operation
/// the full history cannot place, when a search pruned only configurations
/// doomed by an overwritten value: `g` is it when (a) every configuration
/// of the exact search dies by `g`'s return, and (b) one survives every
/// return before it. Then, at `g`'s return, every configuration has
/// overwritten the value `g` needs, with no operation left that could write
/// it again: the search of the full history fails exactly there.
///
/// (a) holds when `g` is the only one of them returning after the failure
/// (the exact search's configurations that outlive it descend from ones
/// doomed by `g`), or else when a search that drops only configurations
/// dying by `g`'s return fails. (b) holds when the history without `g`, cut
/// just before `g`'s return, is linearizable. Returns the findings of the
/// failed search, naming `g`.
pub(crate) fn confirm_doomed<P: Spec>(
    spec: &P,
    init: &P::State,
    kops: &[KOp<'_, P::Input, P::Output>],
    info: &FailInfo<P::State>,
    limits: &Limits<'_>,
) -> Option<Box<FailInfo<P::State>>> {
    let ev = search::events(kops);
    let mut call_pos = vec![0usize; kops.len()];
    let mut ret_pos = vec![usize::MAX; kops.len()];
    for (i, e) in ev.iter().enumerate() {
        if e.kind == 0 {
            call_pos[e.op as usize] = i;
        } else {
            ret_pos[e.op as usize] = i;
        }
    }
    let bounded = |stop_after: usize, prune: bool, doom_until: usize| Limits {
        deadline: limits.deadline,
        max_steps: Some(CHECK_STEPS * 5),
        memory: limits.memory,
        cancel: None,
        record_paths: false,
        prune,
        stop_after: Some(stop_after),
        frontier_cap: limits.frontier_cap,
        doom_until,
    };
    for &g in info.doom_needers.iter().take(DOOM_CANDIDATES) {
        let u = ret_pos[g];
        // (b): the history without g, cut before its return.
        let Some(last) = ev[..u].iter().rposition(|e| e.kind == 1) else {
            continue;
        };
        // First from the last single configuration of the failed search
        // that has not placed g (a configuration that search reached, so
        // reachable without g: a linearization from it is one of the
        // history), then from the start.
        let snapshot = info
            .snapshot
            .as_ref()
            .filter(|s| s.event != usize::MAX && s.event < last && !s.placed.contains(&g));
        let linearizable_without_g = |from: Option<&Snapshot<P::State>>| -> Option<bool> {
            let before: Vec<usize> = (0..kops.len())
                .filter(|&o| o != g && call_pos[o] < ret_pos[g])
                .filter(|&o| from.is_none_or(|s| ret_pos[o] > s.event && !s.placed.contains(&o)))
                .collect();
            let sub: Vec<KOp<'_, P::Input, P::Output>> =
                before.iter().map(|&o| copy(&kops[o])).collect();
            let stop = before.binary_search(&(ev[last].op as usize)).ok()?;
            let state = from.map_or(init, |s| &s.state);
            Some(matches!(
                search::search(spec, state, &sub, &bounded(stop, true, 0)).0,
                Outcome::Ok
            ))
        };
        let b = match snapshot {
            Some(s) if linearizable_without_g(Some(s)) == Some(true) => true,
            _ => linearizable_without_g(None)?,
        };
        if !b {
            continue;
        }
        // (a): first from the last single configuration, when every
        // configuration dropped before it dies by g's return (then every
        // order that reaches g's return passes through it), then from the
        // start.
        if info.doom_needers.iter().any(|&o| o != g) {
            let single = info
                .snapshot
                .iter()
                .chain(&info.recent)
                .filter(|s| s.event != usize::MAX && s.of == 1 && s.drops_die_by <= u)
                .max_by_key(|s| s.event);
            // Some(true): fails (a holds), Some(false): does not, None: unknown.
            let fails_by_g = |from: Option<&Snapshot<P::State>>| -> Option<bool> {
                let within: Vec<usize> = (0..kops.len())
                    .filter(|&o| call_pos[o] < ret_pos[g])
                    .filter(|&o| {
                        from.is_none_or(|s| ret_pos[o] > s.event && !s.placed.contains(&o))
                    })
                    .collect();
                let sub: Vec<KOp<'_, P::Input, P::Output>> =
                    within.iter().map(|&o| copy(&kops[o])).collect();
                let gi = within.binary_search(&g).ok()?;
                let g_ret = search::events(&sub)
                    .iter()
                    .position(|e| e.kind == 1 && e.op as usize == gi)?;
                let state = from.map_or(init, |s| &s.state);
                match search::search(spec, state, &sub, &bounded(gi, false, g_ret)).0 {
                    Outcome::Fail(_) => Some(true),
                    Outcome::Ok => Some(false),
                    Outcome::GaveUp(_) => None,
                }
            };
            let a = match single.and_then(|s| fails_by_g(Some(s))) {
                Some(a) => a,
                None => fails_by_g(None) == Some(true),
            };
            if !a {
                continue;
            }
        }
        return Some(Box::new(FailInfo {
            op: g,
            states: Vec::new(),
            longest: Vec::new(),
            snapshot: info.snapshot.clone(),
            recent: info.recent.clone(),
            pruned: false,
            version_pruned: false,
            doom_needers: vec![g],
            overwritten: true,
            event: u,
        }));
    }
    None
}

/// Whether `o`, applied to `start`, leads to a state where `x` (which is not
/// possible in `start`) is possible: a write producing what `x` needs. The
/// report keeps such writes, so that it shows why they do not help rather
/// than a start state in which `x` trivially fails.
fn gives_what_x_needs<P: Spec>(
    spec: &P,
    start: &P::State,
    kops: &[KOp<'_, P::Input, P::Output>],
    o: usize,
    x: usize,
) -> bool {
    let (a, b) = (&kops[o], &kops[x]);
    if o == x || a.read_only || spec.step(start, b.input, b.output).is_legal() {
        return false;
    }
    let mut gives = false;
    spec.step(start, a.input, a.output).for_each(|s| {
        gives |= spec.step(&s, b.input, b.output).is_legal();
    });
    gives
}

/// The guess [`explain_window`] tries before the whole window: `x`, the
/// writes of `window` that give what it needs from `start` (or that
/// `keep` names), and the
/// operations with a known output that change the state, called after one
/// of those writes returned and returning before `x` was called. `None`
/// when there is no such write, or the guess is the whole window.
fn overwrite_guess<P: Spec>(
    spec: &P,
    start: &P::State,
    kops: &[KOp<'_, P::Input, P::Output>],
    window: &[usize],
    x: usize,
    keep: &[usize],
) -> Option<Vec<usize>> {
    let gives =
        |o: usize| keep.binary_search(&o).is_ok() || gives_what_x_needs(spec, start, kops, o, x);
    let first_give = window
        .iter()
        .filter(|&&o| gives(o))
        .filter_map(|&o| kops[o].ret)
        .min()?;
    let guess: Vec<usize> = window
        .iter()
        .copied()
        .filter(|&o| {
            let k = &kops[o];
            o == x
                || gives(o)
                || (k.output.is_some()
                    && !k.read_only
                    && k.call > first_give
                    && k.ret.is_some_and(|r| r < kops[x].call))
        })
        .collect();
    (guess.len() < window.len()).then_some(guess)
}

/// Shrinks `w` (which fails at `x`) by delta debugging while it keeps failing
/// at `x`: complements of chunks first, then single operations; `x`, the
/// writes that give what it needs ([`gives_what_x_needs`]) and those of
/// `keep` (increasing) stay. With budget
/// to spare, the result is 1-minimal: removing any other one operation makes
/// it linearizable up to `x`'s return, or fail elsewhere (then the flag
/// returned is true).
#[allow(clippy::too_many_arguments)]
fn shrink<P: Spec>(
    spec: &P,
    start: &P::State,
    kops: &[KOp<'_, P::Input, P::Output>],
    mut w: Vec<usize>,
    x: usize,
    keep: &[usize],
    opts: &Options,
    budget: &mut Budget,
) -> (Vec<usize>, bool) {
    let kept: Vec<usize> = w
        .iter()
        .copied()
        .filter(|&o| keep.binary_search(&o).is_ok() || gives_what_x_needs(spec, start, kops, o, x))
        .collect();
    let mut parts = 2usize;
    loop {
        let others: Vec<usize> = w
            .iter()
            .copied()
            .filter(|&o| o != x && kept.binary_search(&o).is_err())
            .collect();
        if others.is_empty() {
            return (w, true);
        }
        if !budget.left() {
            return (w, false);
        }
        let parts_now = parts.min(others.len());
        let chunk = others.len().div_ceil(parts_now);
        let mut removed = false;
        for c in others.chunks(chunk) {
            if !budget.left() {
                return (w, false);
            }
            let trial: Vec<usize> = w
                .iter()
                .copied()
                .filter(|o| c.binary_search(o).is_err())
                .collect();
            if let Cut::FailsAt(_) = cut_check(spec, start, kops, &trial, x, opts, budget, false) {
                w = trial;
                removed = true;
                break;
            }
        }
        if removed {
            parts = parts.saturating_sub(1).max(2);
        } else if chunk == 1 {
            return (w, true);
        } else {
            parts = (parts * 2).min(others.len());
        }
    }
}

/// A confirmed failing sub-history: its operations (indices into the key's
/// operations, increasing), its start, and the final search's findings.
struct Explained<S> {
    ops: Vec<usize>,
    start: S,
    start_note: Option<usize>,
    settled_before: usize,
    settled_ops: Vec<usize>,
    info: Box<FailInfo<S>>,
}

/// Finds, checks and shrinks a failing sub-history around `x` from one of
/// the starts offered (tried in order), within one budget; the operations
/// of `keep` (increasing) stay in it.
fn explain_window<P: Spec>(
    spec: &P,
    kops: &[KOp<'_, P::Input, P::Output>],
    starts: Vec<Start<P::State>>,
    x: usize,
    keep: &[usize],
    opts: &Options,
    deadline: Option<Instant>,
) -> Option<Explained<P::State>> {
    let mut budget = Budget {
        steps: SHRINK_STEPS,
        tries: SHRINK_TRIES,
        deadline,
    };
    // Starts whose window holds a write giving what x needs first: the
    // report then shows why that write does not help.
    let (mut starts, rest): (Vec<_>, Vec<_>) = starts.into_iter().partition(|st| {
        st.window
            .iter()
            .any(|&o| gives_what_x_needs(spec, &st.state, kops, o, x))
    });
    starts.extend(rest);

    // A start whose window is too wide to shrink within the budget gives a
    // sub-history that is not minimal: then later starts (narrower windows)
    // get a fresh budget, a bounded number of times, and the first such
    // sub-history is the fallback.
    let mut fallback: Option<Explained<P::State>> = None;
    let mut refills = SHRINK_REFILLS;
    for st in starts {
        // A guess first: x, the writes that give what it needs, and the
        // state-changing operations real time puts between such a write and
        // x (a stale read's usual cause). When it fails at x it is
        // shrunk instead of the whole window: far fewer searches.
        let guess = overwrite_guess(spec, &st.state, kops, &st.window, x, keep);
        let w = match guess {
            Some(g)
                if matches!(
                    cut_check(spec, &st.state, kops, &g, x, opts, &mut budget, false),
                    Cut::FailsAt(_)
                ) =>
            {
                g
            }
            _ => {
                let w = st.window;
                match cut_check(spec, &st.state, kops, &w, x, opts, &mut budget, false) {
                    Cut::FailsAt(_) => {}
                    Cut::Other | Cut::Unknown => continue,
                }
                w
            }
        };
        let (w, minimal) = shrink(spec, &st.state, kops, w, x, keep, opts, &mut budget);
        // The final search records the longest partial linearization; it
        // is the same search as the last successful check, so it fails at x
        // again (given steps for it whatever the shrinking left).
        let mut last = Budget {
            steps: CHECK_STEPS,
            tries: 1,
            deadline: None,
        };
        if let Cut::FailsAt(info) = cut_check(spec, &st.state, kops, &w, x, opts, &mut last, true) {
            let found = Explained {
                ops: w,
                start: st.state,
                start_note: (st.of > 1).then_some(st.of),
                settled_before: st.settled,
                settled_ops: st.settled_ops,
                info,
            };
            if minimal {
                return Some(found);
            }
            if refills == 0 {
                return Some(fallback.unwrap_or(found));
            }
            refills -= 1;
            fallback.get_or_insert(found);
            budget = Budget {
                steps: SHRINK_STEPS,
                tries: SHRINK_TRIES,
                deadline,
            };
        }
    }
    fallback
}

/// A place to start a sub-history from.
struct Start<S> {
    state: S,
    /// Configurations possible there (1: every linearization agreed).
    of: usize,
    /// The key's operations not settled there that were invoked before the
    /// named operation returned (increasing).
    window: Vec<usize>,
    /// How many operations invoked before that return were settled there.
    settled: usize,
    /// Those that produced the start state (increasing): the settled ones,
    /// or the ones a witness used to reach it.
    settled_ops: Vec<usize>,
}

/// The starts a failed search offers for an explanation of the failure at
/// `x`: the last single configuration, later ones (newest first), the start.
fn starts<P: Spec>(
    kops: &[KOp<'_, P::Input, P::Output>],
    init: &P::State,
    info: &FailInfo<P::State>,
    x: usize,
) -> Vec<Start<P::State>> {
    let n = kops.len();
    let ev = search::events(kops);
    let mut call_pos = vec![0usize; n];
    let mut ret_pos = vec![usize::MAX; n];
    for (i, e) in ev.iter().enumerate() {
        if e.kind == 0 {
            call_pos[e.op as usize] = i;
        } else {
            ret_pos[e.op as usize] = i;
        }
    }
    let cut = ret_pos[x];
    let before: Vec<usize> = (0..n).filter(|&o| call_pos[o] < cut).collect();
    let from = |s: &Snapshot<P::State>| -> Start<P::State> {
        let window: Vec<usize> = before
            .iter()
            .copied()
            .filter(|&o| (s.event == usize::MAX || ret_pos[o] > s.event) && !s.placed.contains(&o))
            .collect();
        let settled_ops: Vec<usize> = before
            .iter()
            .copied()
            .filter(|o| window.binary_search(o).is_err())
            .collect();
        Start {
            state: s.state.clone(),
            of: s.of,
            settled: before.len() - window.len(),
            settled_ops,
            window,
        }
    };
    // A point where every linearization agreed makes the stronger report;
    // later ones with several configurations, smaller windows.
    let mut out = Vec::new();
    if let Some(s) = &info.snapshot {
        if s.event != usize::MAX {
            out.push(from(s));
        }
    }
    out.extend(info.recent.iter().map(from));
    out.push(Start {
        state: init.clone(),
        of: 1,
        settled: 0,
        settled_ops: Vec::new(),
        window: before,
    });
    out
}

/// Builds the failure report from a failed search over the key's operations.
/// `exact`: the search that found `info` pruned nothing, so `info.op` really
/// cannot be placed before its return (otherwise the sentence says less).
#[allow(clippy::too_many_arguments)]
pub(crate) fn from_search<P: Spec>(
    spec: &P,
    key: &str,
    ops: &[Operation<P::Input, P::Output>],
    kops: &[KOp<'_, P::Input, P::Output>],
    orig: &[usize],
    init: &P::State,
    info: &FailInfo<P::State>,
    opts: &Options,
    deadline: Option<Instant>,
) -> Failure {
    let x = info.op;
    let exact = !info.pruned;
    let found = if opts.explain {
        explain_window(
            spec,
            kops,
            starts::<P>(kops, init, info, x),
            x,
            &[],
            opts,
            deadline,
        )
    } else {
        None
    };
    let xo = &kops[x];
    let xv = view(spec, ops, kops, orig, x);
    let unit = opts.time_unit;
    let need = xo
        .output
        .and_then(|out| spec.describe_need(xo.input, out))
        .unwrap_or_else(|| "a state in which its output is possible".to_string());
    let state_words: Vec<String> = info.states.iter().map(|s| spec.describe_state(s)).collect();
    let head = format!(
        "operation #{} by client {} ({}, {})",
        xv.id,
        xv.client,
        xv.text,
        interval_words(&xv, unit)
    );
    let sentence = if info.overwritten {
        format!(
            "{head} cannot be placed before it returns: it needs {need}, but in every order of the operations invoked before its return that has been overwritten by then, and no operation that could bring it back is left."
        )
    } else if info.pruned && !info.version_pruned {
        let by: Vec<String> = info
            .doom_needers
            .iter()
            .take(4)
            .map(|&o| format!("#{}", view(spec, ops, kops, orig, o).id))
            .collect();
        format!(
            "{head} cannot be placed before it returns in any order of the operations invoked before then that keeps available every value a known operation still needs{}: each order either cannot place it, or has overwritten such a value with no operation left that could bring it back (which operation cannot be placed was not confirmed within the budget).",
            if by.is_empty() {
                String::new()
            } else {
                format!(" ({} among them)", by.join(", "))
            }
        )
    } else {
        format!(
            "{head} cannot be placed before it returns: it needs {need}, but no order of the operations invoked before its return {}reaches such a state (the key's state is then {}, and no pending operation leads from there to what it needs).",
            if exact {
                ""
            } else {
                "that leaves every pending operation a version it can still take effect at "
            },
            if state_words.is_empty() {
                "no possible state".to_string()
            } else {
                join_or(&state_words)
            }
        )
    };
    let mut f = match found {
        Some(e) => failure_of(spec, key, ops, kops, orig, x, e),
        None => unchecked(spec, key, ops, kops, orig, init, x),
    };
    f.sentence = sentence;
    f.possible_states = state_words;
    f
}

/// The report's sub-history part from a confirmed explanation.
fn failure_of<P: Spec>(
    spec: &P,
    key: &str,
    ops: &[Operation<P::Input, P::Output>],
    kops: &[KOp<'_, P::Input, P::Output>],
    orig: &[usize],
    x: usize,
    e: Explained<P::State>,
) -> Failure {
    // Shown by invocation time; the search saw them in `e.ops` order.
    let mut shown: Vec<usize> = (0..e.ops.len()).collect();
    shown.sort_by_key(|&i| (kops[e.ops[i]].call, e.ops[i]));
    let mut at = vec![0usize; e.ops.len()];
    for (pos, &i) in shown.iter().enumerate() {
        at[i] = pos;
    }
    let views: Vec<OpView> = shown
        .iter()
        .map(|&i| view(spec, ops, kops, orig, e.ops[i]))
        .collect();
    let failing = shown.iter().position(|&i| e.ops[i] == x).unwrap_or(0);
    Failure {
        key: key.to_string(),
        sentence: String::new(),
        start_state: match e.start_note {
            Some(of) => format!(
                "{} (one of {of} configurations possible at that point)",
                spec.describe_state(&e.start)
            ),
            None => spec.describe_state(&e.start),
        },
        settled_before: e.settled_before,
        settled: settled_views(spec, ops, kops, orig, &e.settled_ops),
        ops: views,
        failing,
        sub_history_checked: true,
        linearization: e
            .info
            .longest
            .iter()
            .map(|(op, s)| Step {
                op: at[*op],
                state: spec.describe_state(s),
            })
            .collect(),
        possible_states: Vec::new(),
    }
}

/// The report's sub-history part when no failing sub-history was confirmed
/// within the budget (or none was asked for): the named operation alone.
fn unchecked<P: Spec>(
    spec: &P,
    key: &str,
    ops: &[Operation<P::Input, P::Output>],
    kops: &[KOp<'_, P::Input, P::Output>],
    orig: &[usize],
    init: &P::State,
    x: usize,
) -> Failure {
    Failure {
        key: key.to_string(),
        sentence: String::new(),
        start_state: spec.describe_state(init),
        settled_before: 0,
        settled: Vec::new(),
        ops: vec![view(spec, ops, kops, orig, x)],
        failing: 0,
        sub_history_checked: false,
        linearization: Vec::new(),
        possible_states: Vec::new(),
    }
}

fn join_or(v: &[String]) -> String {
    if v.len() <= 4 {
        v.join(" or ")
    } else {
        format!("{} or … ({} states)", v[..4].join(" or "), v.len())
    }
}

fn interval_words(v: &OpView, unit: TimeUnit) -> String {
    match v.ret {
        Some(r) => format!(
            "invoked at {}, returned at {}",
            unit.show(v.invoke),
            unit.show(r)
        ),
        None => format!("invoked at {}, no response", unit.show(v.invoke)),
    }
}

/// Settled operations worth showing (by invocation time): the last three
/// that changed the key, and the last one of each kind (the first word of
/// its description: the last write, the last delete), so that a reader sees
/// why the key is in the state the sub-history starts from.
fn settled_views<P: Spec>(
    spec: &P,
    ops: &[Operation<P::Input, P::Output>],
    kops: &[KOp<'_, P::Input, P::Output>],
    orig: &[usize],
    settled: &[usize],
) -> Vec<OpView> {
    let mut changing: Vec<usize> = settled
        .iter()
        .copied()
        .filter(|&o| !kops[o].read_only && kops[o].output.is_some())
        .collect();
    changing.sort_by_key(|&o| (kops[o].call, o));
    let mut keep: Vec<usize> = changing.iter().rev().take(3).copied().collect();
    let mut kinds: Vec<String> = Vec::new();
    for &o in changing.iter().rev() {
        let text = spec.describe_op(&ops[orig[o]].input, ops[orig[o]].output.as_ref());
        let kind = text.split_whitespace().next().unwrap_or("").to_string();
        if !kinds.contains(&kind) {
            kinds.push(kind);
            keep.push(o);
        }
    }
    keep.sort_by_key(|&o| (kops[o].call, o));
    keep.dedup();
    keep.into_iter()
        .map(|o| view(spec, ops, kops, orig, o))
        .collect()
}

fn view<P: Spec>(
    spec: &P,
    ops: &[Operation<P::Input, P::Output>],
    kops: &[KOp<'_, P::Input, P::Output>],
    orig: &[usize],
    k: usize,
) -> OpView {
    let o = &ops[orig[k]];
    OpView {
        id: o.id,
        client: o.client,
        invoke: o.invoke,
        ret: kops[k].ret.filter(|&r| r != i64::MAX),
        text: spec.describe_op(&o.input, o.output.as_ref()),
    }
}

/// Builds the failure report from a version certificate. The sentence is the
/// certificate's (true of the full history by construction); the
/// sub-history is searched for from a state the greedy witness reaches at
/// the version the later operation needs, and shown only if a search of it
/// fails at that operation. Otherwise the two certificate operations are
/// shown, unchecked as a sub-history.
#[allow(clippy::too_many_arguments)]
pub(crate) fn from_certificate<P: Spec>(
    spec: &P,
    key: &str,
    ops: &[Operation<P::Input, P::Output>],
    kops: &[KOp<'_, P::Input, P::Output>],
    orig: &[usize],
    init: &P::State,
    cert: &Certificate,
    opts: &Options,
    deadline: Option<Instant>,
) -> Failure {
    let mut found = None;
    if opts.explain {
        // Any sub-history holding both certificate operations, started at a
        // version no later than the one `later` needs, fails too: search a
        // window from a state the greedy witness reaches at that version.
        let c = cert.version_needed;
        if let Some(at) = super::versioned::state_at(spec, init, kops, c) {
            let b = &kops[cert.later];
            let t_end = b.ret.unwrap_or(i64::MAX);
            let mut t0 = b.call;
            if let Some(a) = cert.earlier {
                t0 = t0.min(kops[a].call);
            }
            for o in kops {
                if o.output.is_some() && o.claim == Claim::Produced(c + 1) {
                    t0 = t0.min(o.call);
                }
            }
            let horizon = t0.saturating_sub(t_end.saturating_sub(t0).saturating_mul(4));
            let keep = |i: usize| -> bool {
                let o = &kops[i];
                if i == cert.later || Some(i) == cert.earlier {
                    return true;
                }
                if o.call > t_end {
                    return false;
                }
                let end = o.ret.unwrap_or(i64::MAX);
                match (o.output.is_some(), o.claim) {
                    (true, Claim::Produced(v)) => v > c,
                    (true, Claim::At(v)) => v >= c,
                    (true, Claim::None) => end >= t0 && !at.used[i],
                    // Unknown outcomes not used to reach version c may
                    // still take effect (the recent ones are shown; leaving
                    // optional operations out keeps the window failing).
                    (false, _) => !at.used[i] && o.call >= horizon,
                }
            };
            let window: Vec<usize> = (0..kops.len()).filter(|&i| keep(i)).collect();
            let settled = window.len();
            let settled_ops: Vec<usize> = (0..kops.len())
                .filter(|&i| at.used[i] && window.binary_search(&i).is_err())
                .collect();
            let start = Start {
                state: at.state,
                of: 1,
                settled: kops.len() - settled,
                settled_ops,
                window,
            };
            found = explain_window(spec, kops, vec![start], cert.later, &[], opts, deadline);
        }
    }
    let b = view(spec, ops, kops, orig, cert.later);
    let unit = opts.time_unit;
    let why = match cert.earlier {
        Some(a) => {
            let av = view(spec, ops, kops, orig, a);
            format!(
                "operation #{} ({}, returned at {}) had already left the key at version {} before it was invoked at {}; versions never go back",
                av.id,
                av.text,
                av.ret.map_or("?".to_string(), |r| unit.show(r)),
                cert.version_before,
                unit.show(b.invoke)
            )
        }
        None => format!("the key starts at version {}", cert.version_before),
    };
    let sentence = format!(
        "operation #{} by client {} ({}, {}) cannot be placed: it needs version {}, but {}.",
        b.id,
        b.client,
        b.text,
        interval_words(&b, unit),
        cert.version_needed,
        why
    );
    let mut f = match found {
        Some(e) => failure_of(spec, key, ops, kops, orig, cert.later, e),
        None => {
            let mut idx: Vec<usize> = cert.earlier.into_iter().chain([cert.later]).collect();
            idx.sort_by_key(|&o| (kops[o].call, o));
            Failure {
                key: key.to_string(),
                sentence: String::new(),
                start_state: spec.describe_state(init),
                settled_before: 0,
                settled: Vec::new(),
                ops: idx
                    .iter()
                    .map(|&o| view(spec, ops, kops, orig, o))
                    .collect(),
                failing: idx.iter().position(|&o| o == cert.later).unwrap_or(0),
                sub_history_checked: false,
                linearization: Vec::new(),
                possible_states: Vec::new(),
            }
        }
    };
    f.sentence = sentence;
    f.possible_states = vec![format!("version ≥ {}", cert.version_before)];
    f
}

/// Builds the failure report from a refutation of the unique-values pass.
/// The sentence is the contradiction's (true of the full history by
/// construction). The operation named is the one a search of the
/// refutation's window (from the initial state) cannot place; the window
/// is re-checked and shrunk as a failed search's is. Without a failing
/// window, the operations of the contradiction are shown, unchecked as a
/// sub-history.
#[allow(clippy::too_many_arguments)]
pub(crate) fn from_refutation<P: Spec>(
    spec: &P,
    key: &str,
    ops: &[Operation<P::Input, P::Output>],
    kops: &[KOp<'_, P::Input, P::Output>],
    orig: &[usize],
    init: &P::State,
    r: &Refutation,
    opts: &Options,
    deadline: Option<Instant>,
) -> Failure {
    let w = &r.window;
    let sub: Vec<KOp<'_, P::Input, P::Output>> = w.iter().map(|&o| copy(&kops[o])).collect();
    let limits = Limits {
        deadline,
        max_steps: Some(CHECK_STEPS),
        memory: opts.memory_budget,
        cancel: None,
        record_paths: false,
        prune: false,
        stop_after: None,
        frontier_cap: opts.frontier_cap,
        doom_until: 0,
    };
    let searched = match search::search(spec, init, &sub, &limits).0 {
        Outcome::Fail(f) => Some(w[f.op]),
        _ => None,
    };
    let x = searched.unwrap_or_else(|| r.contradiction.primary());
    let found = match searched {
        Some(x) if opts.explain => {
            let start = Start {
                state: init.clone(),
                of: 1,
                settled: 0,
                settled_ops: Vec::new(),
                window: w.clone(),
            };
            // What x needs to be placed at all stays: without it the
            // sub-history would fail at x for another reason.
            explain_window(
                spec,
                kops,
                vec![start],
                x,
                &r.supply_chain(x),
                opts,
                deadline,
            )
        }
        _ => None,
    };
    let unit = opts.time_unit;
    let v = |o: usize| view(spec, ops, kops, orig, o);
    let xv = v(x);
    let id = |o: usize| format!("#{}", v(o).id);
    let called = |o: usize| unit.show(v(o).invoke);
    let returned = |o: usize| v(o).ret.map_or("?".to_string(), |t| unit.show(t));
    let on = |o: usize| -> String {
        match r
            .value_of
            .iter()
            .find(|(p, _)| *p == o)
            .and_then(|(_, w)| *w)
        {
            Some(w) if w == o => "the value it writes".to_string(),
            Some(w) => format!("the value {} writes", id(w)),
            None => "the initial value".to_string(),
        }
    };
    let need = |o: usize| {
        kops[o]
            .output
            .and_then(|out| spec.describe_need(kops[o].input, out))
            .unwrap_or_else(|| "a value".to_string())
    };
    const ONCE: &str = "each value is written once, so the operations on one value (its write and the reads that return it) come together, with a successful compare-and-set expecting it directly after";
    let why = match r.contradiction {
        Contradiction::NeverWritten { op } => format!(
            "{} needs {}, which no operation writes and the key does not start with",
            if op == x { "it".to_string() } else { id(op) },
            need(op)
        ),
        Contradiction::ReadBeforeWrite { read, write } => format!(
            "{} needs {}, which only {} writes, but returned at {} before {} was invoked at {}",
            if read == x { "it".to_string() } else { id(read) },
            need(read),
            id(write),
            returned(read),
            id(write),
            called(write)
        ),
        Contradiction::TwoSuccessors { a, b, after } => format!(
            "{} and {} both need {} directly before them and both replace it; each value is written once, so only one of them can",
            id(a),
            id(b),
            match after {
                Some(w) => format!("the value {} writes", id(w)),
                None => "the initial value".to_string(),
            }
        ),
        Contradiction::ChainOrder { early, late } => format!(
            "{ONCE}; so {} (on {}) comes before {} (on {}), yet {} returned at {} before {} was invoked at {}",
            id(late),
            on(late),
            id(early),
            on(early),
            id(early),
            returned(early),
            id(late),
            called(late)
        ),
        Contradiction::Cycle {
            a_ret: None,
            a_call,
            b_ret,
            ..
        } => format!(
            "{ONCE}; {} (on {}) comes before every write other than those chained to the initial value, yet {} (on {}) returned at {} before {} was invoked at {}",
            id(a_call),
            on(a_call),
            id(b_ret),
            on(b_ret),
            returned(b_ret),
            id(a_call),
            called(a_call)
        ),
        Contradiction::Cycle {
            a_ret: Some(a_ret),
            a_call,
            b_ret,
            b_call,
        } => {
            let group = |p: usize, q: usize| {
                if p == q {
                    format!("{} (on {})", id(p), on(p))
                } else if on(p) == on(q) {
                    format!("{} and {} (on {})", id(p), id(q), on(p))
                } else {
                    format!("{} (on {}) and {} (on {})", id(p), on(p), id(q), on(q))
                }
            };
            format!(
                "{ONCE}; the block holding {} and the block holding {} must each come first: {} returned at {} before {} was invoked at {}, and {} returned at {} before {} was invoked at {}",
                group(a_ret, a_call),
                group(b_ret, b_call),
                id(a_ret),
                returned(a_ret),
                id(b_call),
                called(b_call),
                id(b_ret),
                returned(b_ret),
                id(a_call),
                called(a_call)
            )
        }
        Contradiction::Stuck { op, after, next } => {
            let value = match r.value_of.iter().find(|(p, _)| *p == op).and_then(|(_, w)| *w) {
                Some(w) => format!("the value {} writes", id(w)),
                None => "the initial value".to_string(),
            };
            format!(
                "{} needs a value other than {value}, but {}, and no write that could replace it was invoked before {} returned at {} ({})",
                if op == x { "it".to_string() } else { id(op) },
                match after {
                    Some(o) => format!(
                        "{} (on that value) returned at {} before {} was invoked at {}",
                        id(o),
                        returned(o),
                        id(op),
                        called(op)
                    ),
                    None => "the key starts with it".to_string(),
                },
                id(op),
                returned(op),
                match next {
                    Some(s) => format!(
                        "the compare-and-set that replaces it, {}, was invoked at {}",
                        id(s),
                        called(s)
                    ),
                    None => "every other write invoked by then belongs to a block that must come before the value's: one of its operations returned before one of the value's block was invoked".to_string(),
                }
            )
        }
        Contradiction::TooManyBefore {
            write,
            late,
            ref early,
            initial,
            writes,
            expected,
        } => {
            let list: Vec<String> = early
                .iter()
                .map(|&o| format!("{} (on {}, returned at {})", id(o), on(o), returned(o)))
                .collect();
            let n = |k: u64| format!("{k} write{}", if k == 1 { "" } else { "s" });
            format!(
                "{ONCE}; {} expects exactly {} before its block (the one of {}, invoked at {}), but {}{} returned before {} was invoked, so their blocks come first, and they hold {}",
                id(write),
                n(expected),
                id(late),
                called(late),
                match initial {
                    Some(w) => format!(
                        "the writes chained to the initial value (up to {}) come first, and ",
                        id(w)
                    ),
                    None => String::new(),
                },
                list.join(", "),
                id(late),
                n(writes)
            )
        }
    };
    let sentence = format!(
        "operation #{} by client {} ({}, {}) cannot be placed: {why}.",
        xv.id,
        xv.client,
        xv.text,
        interval_words(&xv, unit)
    );
    let mut f = match found {
        Some(e) => failure_of(spec, key, ops, kops, orig, x, e),
        None => {
            let mut idx = r.window.clone();
            idx.sort_by_key(|&o| (kops[o].call, o));
            Failure {
                key: key.to_string(),
                sentence: String::new(),
                start_state: spec.describe_state(init),
                settled_before: 0,
                settled: Vec::new(),
                ops: idx.iter().map(|&o| v(o)).collect(),
                failing: idx.iter().position(|&o| o == x).unwrap_or(0),
                sub_history_checked: false,
                linearization: Vec::new(),
                possible_states: Vec::new(),
            }
        }
    };
    f.sentence = sentence;
    f
}
