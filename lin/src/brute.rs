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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::{generate, GenOptions};
    use crate::{check, Options, Verdict};

    #[test]
    fn breadth_first_depth_first_and_brute_force_agree_on_small_generated_histories() {
        let mut bad = 0;
        for seed in 0..600u64 {
            let g = generate(&GenOptions {
                seed,
                ops: 4 + (seed % 5) as usize,
                clients: 2 + (seed % 3) as usize,
                keys: 1,
                versions: seed % 4 < 2,
                unknown_writes: 0.2,
                unknown_reads: 0.1,
                duration: (1, 30),
                think: (0, 10),
                stale_read: seed % 2 == 1,
                versionless_puts: 0.3,
                conditional_puts: false,
                phantom_value: false,
                lost_write: false,
            });
            let want = brute_check(&g.spec, &g.ops);
            bad += usize::from(!want);
            for cap in [0, 20_000] {
                for fast_path in [false, true] {
                    let opts = Options {
                        frontier_cap: cap,
                        fast_path,
                        parallel: false,
                        ..Options::default()
                    };
                    let got = check(&g.spec, &g.ops, &opts).verdict;
                    assert_eq!(
                        got == Verdict::Linearizable,
                        want,
                        "seed {seed} cap {cap} fast {fast_path}: {:#?}",
                        g.ops
                    );
                }
            }
        }
        assert!(bad > 25, "only {bad} non-linearizable histories");
    }
}
