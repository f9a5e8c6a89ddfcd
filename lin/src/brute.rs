//! A brute-force reference checker: tries every order of the operations that
//! respects real time (and every subset of the unknown-outcome operations).
//! Exponential; for testing the real checker on histories of up to about
//! eight operations per key.

use super::spec::Spec;
use super::Operation;
use std::collections::BTreeMap;

/// True iff every key's sub-history has a linearization. Shares nothing with
/// the real checker but the [`Spec`].
pub fn brute_check<P: Spec>(spec: &P, ops: &[Operation<P::Input, P::Output>]) -> bool {
    type Ops<'a, P> = Vec<&'a Operation<<P as Spec>::Input, <P as Spec>::Output>>;
    let mut by_key: BTreeMap<&str, Ops<'_, P>> = BTreeMap::new();
    for o in ops {
        by_key.entry(&o.key).or_default().push(o);
    }
    by_key.into_iter().all(|(k, v)| {
        let mut placed = vec![false; v.len()];
        let known = v.iter().filter(|o| o.output.is_some()).count();
        rec(spec, &v, &mut placed, &spec.init(k), known)
    })
}

/// The end of an operation's interval: unknown outcomes and missing returns
/// are open-ended.
fn end<I, O>(o: &Operation<I, O>) -> i64 {
    match (&o.output, o.ret) {
        (Some(_), Some(r)) => r,
        _ => i64::MAX,
    }
}

fn rec<P: Spec>(
    spec: &P,
    ops: &[&Operation<P::Input, P::Output>],
    placed: &mut [bool],
    state: &P::State,
    known_left: usize,
) -> bool {
    if known_left == 0 {
        return true;
    }
    for i in 0..ops.len() {
        if placed[i] {
            continue;
        }
        // i may go next only if no unplaced operation precedes it.
        let blocked = (0..ops.len()).any(|j| j != i && !placed[j] && end(ops[j]) < ops[i].invoke);
        if blocked {
            continue;
        }
        let mut nexts = Vec::new();
        spec.step(state, &ops[i].input, ops[i].output.as_ref())
            .for_each(|n| nexts.push(n));
        let left = known_left - usize::from(ops[i].output.is_some());
        placed[i] = true;
        for n in &nexts {
            if rec(spec, ops, placed, n, left) {
                placed[i] = false;
                return true;
            }
        }
        placed[i] = false;
    }
    false
}
