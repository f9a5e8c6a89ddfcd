//! Turning a failed search (or a version certificate) into a [`Failure`]: a
//! small failing sub-history, the longest partial linearization, and a
//! sentence.

use super::report::{Failure, OpView, Step};
use super::search::{self, FailInfo, KOp, Limits, Outcome};
use super::spec::Spec;
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
    let (start, settled_at, placed, of): (P::State, Option<usize>, Vec<usize>, usize) =
        match &info.snapshot {
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
        let sub: Vec<KOp<'_, P::Input, P::Output>> =
            window.iter().map(|&o| copy(&kops[o])).collect();
        if run(
            spec,
            &start,
            &sub,
            opts,
            soon(deadline, Duration::from_secs(2)),
            false,
        )
        .is_some()
        {
            // Drop read-only operations that are not needed for the failure.
            let t_end = soon(deadline, Duration::from_millis(1500));
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
            final_info = run(
                spec,
                &start,
                &sub,
                opts,
                soon(deadline, Duration::from_secs(2)),
                true,
            );
        }
    }
    let (failing, longest, states): (usize, Vec<(usize, P::State)>, Vec<P::State>) =
        match &final_info {
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
        .map_or_else(
            || "a state in which its output is possible".to_string(),
            |n| n,
        );
    let state_words: Vec<String> = states.iter().map(|s| spec.describe_state(s)).collect();
    let sentence = format!(
        "operation #{} by client {} ({}, {}) cannot be placed before it returns: it needs {}, but every order of the operations before its return leaves the key in {}.",
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
        if let Some(info) = run(
            spec,
            init,
            kops,
            opts,
            soon(deadline, Duration::from_secs(3)),
            false,
        ) {
            return from_search(spec, key, ops, kops, orig, init, &info, opts, deadline);
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
