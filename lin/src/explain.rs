//! Turning a failed search (or a version certificate) into a [`Failure`]: a
//! small failing sub-history, the longest partial linearization, and a
//! sentence.

use super::report::{Failure, OpView, Step};
use super::search::{self, FailInfo, KOp, Limits, Outcome};
use super::spec::{Claim, Spec};
use super::versioned::Certificate;
use super::{Operation, Options};
use std::time::{Duration, Instant};

fn copy<'a, I, O>(k: &KOp<'a, I, O>) -> KOp<'a, I, O> {
    KOp {
        input: k.input,
        output: k.output,
        call: k.call,
        ret: k.ret,
        read_only: k.read_only,
        claim: k.claim,
    }
}

fn soon(deadline: Option<Instant>, d: Duration) -> Instant {
    let t = Instant::now() + d;
    deadline.map_or(t, |x| x.min(t))
}

fn run<P: Spec>(
    spec: &P,
    init: &P::State,
    ops: &[KOp<'_, P::Input, P::Output>],
    opts: &Options,
    until: Instant,
    paths: bool,
) -> Option<Box<FailInfo<P::State>>> {
    let limits = Limits {
        deadline: Some(until),
        memory: opts.memory_budget,
        cancel: None,
        record_paths: paths,
        frontier_cap: opts.frontier_cap,
    };
    match search::search(spec, init, ops, &limits) {
        Outcome::Fail(f) => Some(f),
        _ => None,
    }
}

/// Builds the failure report from a failed search over the key's operations.
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
    // The window: from the last point where every linearization agreed on one
    // configuration, up to the failing return.
    type Start<S> = (S, Option<usize>, Vec<usize>, usize);
    let (start, settled_at, placed, of): Start<P::State> = match &info.snapshot {
        Some(s) if s.event != usize::MAX => {
            (s.state.clone(), Some(s.event), s.placed.clone(), s.of)
        }
        _ => (init.clone(), None, Vec::new(), 1),
    };
    let mut window: Vec<usize> = (0..n)
        .filter(|&o| call_pos[o] < info.event)
        .filter(|&o| match settled_at {
            None => true,
            Some(se) => ret_pos[o] > se && !placed.contains(&o),
        })
        .collect();
    window.sort_by_key(|&o| (kops[o].call, o));
    let settled_before = n - window.len() - (0..n).filter(|&o| call_pos[o] >= info.event).count();

    let mut final_info: Option<Box<FailInfo<P::State>>> = None;
    if opts.explain {
        let t0 = Instant::now();
        let sub: Vec<KOp<'_, P::Input, P::Output>> =
            window.iter().map(|&o| copy(&kops[o])).collect();
        let until = soon(deadline, Duration::from_secs(1));
        if run(spec, &start, &sub, opts, until, false).is_some() {
            // Drop read-only operations that are not needed for the failure,
            // while a check of the window is cheap.
            let t_end = if t0.elapsed() < Duration::from_millis(20) {
                soon(deadline, Duration::from_millis(600))
            } else {
                Instant::now()
            };
            let mut i = 0;
            let mut tries = 0;
            while i < window.len() && tries < 400 && Instant::now() < t_end {
                let o = window[i];
                if !kops[o].read_only {
                    i += 1;
                    continue;
                }
                tries += 1;
                let trial: Vec<usize> = window.iter().copied().filter(|&p| p != o).collect();
                let sub: Vec<_> = trial.iter().map(|&p| copy(&kops[p])).collect();
                if run(spec, &start, &sub, opts, t_end, false).is_some() {
                    window = trial;
                } else {
                    i += 1;
                }
            }
            let sub: Vec<_> = window.iter().map(|&p| copy(&kops[p])).collect();
            let until = soon(deadline, Duration::from_secs(1));
            final_info = run(spec, &start, &sub, opts, until, true);
        }
    }
    type Found<S> = (usize, Vec<(usize, S)>, Vec<S>);
    let (failing, longest, states): Found<P::State> = match &final_info {
        Some(f) => (f.op, f.longest.clone(), f.states.clone()),
        None => (
            window.iter().position(|&o| o == info.op).unwrap_or(0),
            Vec::new(),
            info.states.clone(),
        ),
    };
    let views: Vec<OpView> = window
        .iter()
        .map(|&o| view(spec, ops, kops, orig, o))
        .collect();
    let x = &kops[window.get(failing).copied().unwrap_or(info.op)];
    let xv = &views[failing.min(views.len().saturating_sub(1))];
    let need = x
        .output
        .and_then(|out| spec.describe_need(x.input, out))
        .unwrap_or_else(|| "a state in which its output is possible".to_string());
    let state_words: Vec<String> = states.iter().map(|s| spec.describe_state(s)).collect();
    let sentence = format!(
        "operation #{} by client {} ({}, {}) cannot be placed before it returns: it needs {}, but no order of the operations invoked before its return reaches such a state (the key is then in {}, and no pending operation leads from there to what it needs).",
        xv.id,
        xv.client,
        xv.text,
        interval_words(xv),
        need,
        if state_words.is_empty() {
            "no possible state".to_string()
        } else {
            join_or(&state_words)
        }
    );
    Failure {
        key: key.to_string(),
        sentence,
        start_state: if of > 1 {
            format!(
                "{} (one of {of} configurations possible at that point; every one fails)",
                spec.describe_state(&start)
            )
        } else {
            spec.describe_state(&start)
        },
        settled_before,
        ops: views,
        failing,
        linearization: longest
            .iter()
            .map(|(op, s)| Step {
                op: *op,
                state: spec.describe_state(s),
            })
            .collect(),
        possible_states: state_words,
    }
}

fn join_or(v: &[String]) -> String {
    if v.len() <= 4 {
        v.join(" or ")
    } else {
        format!("{} or … ({} states)", v[..4].join(" or "), v.len())
    }
}

fn interval_words(v: &OpView) -> String {
    match v.ret {
        Some(r) => format!("invoked at {}, returned at {}", v.invoke, r),
        None => format!("invoked at {}, no response", v.invoke),
    }
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

/// Builds the failure report from a version certificate: tries the search for
/// a full explanation first, and falls back to the certificate's two
/// operations.
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
    if opts.explain {
        // Any sub-history holding both certificate operations, started at a
        // version no later than the one `later` needs, fails too: search a
        // window from a state the greedy witness reaches at that version.
        let c = cert.version_needed;
        if let Some(at) = super::versioned::state_at(spec, init, kops, c) {
            let sc = at.state;
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
            let idx: Vec<usize> = (0..kops.len()).filter(|&i| keep(i)).collect();
            let sub: Vec<KOp<'_, P::Input, P::Output>> =
                idx.iter().map(|&i| copy(&kops[i])).collect();
            let sub_orig: Vec<usize> = idx.iter().map(|&i| orig[i]).collect();
            let until = soon(deadline, Duration::from_millis(800));
            if let Some(info) = run(spec, &sc, &sub, opts, until, false) {
                let mut f =
                    from_search(spec, key, ops, &sub, &sub_orig, &sc, &info, opts, deadline);
                f.settled_before += kops.len() - sub.len();
                return f;
            }
        }
    }
    let mut idx: Vec<usize> = cert.earlier.into_iter().chain([cert.later]).collect();
    idx.sort_by_key(|&o| (kops[o].call, o));
    let views: Vec<OpView> = idx
        .iter()
        .map(|&o| view(spec, ops, kops, orig, o))
        .collect();
    let failing = idx.iter().position(|&o| o == cert.later).unwrap_or(0);
    let b = &views[failing];
    let why = match cert.earlier {
        Some(a) => {
            let av = &views[idx.iter().position(|&o| o == a).unwrap_or(0)];
            format!(
                "operation #{} ({}, returned at {}) had already left the key at version {} before it was invoked at {}; versions never go back",
                av.id,
                av.text,
                av.ret.map_or("?".to_string(), |r| r.to_string()),
                cert.version_before,
                b.invoke
            )
        }
        None => format!("the key starts at version {}", cert.version_before),
    };
    Failure {
        key: key.to_string(),
        sentence: format!(
            "operation #{} by client {} ({}, {}) cannot be placed: it needs version {}, but {}.",
            b.id,
            b.client,
            b.text,
            interval_words(b),
            cert.version_needed,
            why
        ),
        start_state: spec.describe_state(init),
        settled_before: 0,
        ops: views,
        failing,
        linearization: Vec::new(),
        possible_states: vec![format!("version ≥ {}", cert.version_before)],
    }
}
