//! The search's value reductions (a register without versions at
//! many clients): merged states of values nobody can observe any more, one
//! try among interchangeable writes of such values, and dropped
//! configurations that overwrote a value still needed. Checked against the
//! brute force on small generated histories (both verdicts), and on the
//! 48-client shape of the benchmark in both verdicts.

use overcast_lin::brute::brute_check;
use overcast_lin::gen::{generate, GenOptions};
use overcast_lin::kv::{KvInput, KvOutput};
use overcast_lin::{check, Options, Verdict};
use proptest::prelude::*;

fn opts(explain: bool) -> Options {
    Options {
        parallel: false,
        explain,
        max_steps: Some(50_000_000),
        ..Options::default()
    }
}

/// A small generated history without versions (values unique per write),
/// with many concurrent clients; when `misread` is given, one read returns
/// the value of another write instead (often a violation, sometimes not).
fn small(
    seed: u64,
    ops: usize,
    clients: usize,
    unknown: f64,
    stale: bool,
    misread: Option<usize>,
) -> overcast_lin::gen::Generated {
    let mut g = generate(&GenOptions {
        seed,
        ops,
        clients,
        keys: 1,
        versions: false,
        unknown_writes: unknown,
        unknown_reads: unknown / 2.0,
        stale_read: stale,
        ..GenOptions::default()
    });
    if let Some(k) = misread {
        let writes: Vec<_> = g
            .ops
            .iter()
            .filter_map(|o| match &o.input {
                KvInput::Put { value } | KvInput::Cas { value, .. } => Some(value.clone()),
                _ => None,
            })
            .collect();
        let reads: Vec<usize> = (0..g.ops.len())
            .filter(|&i| matches!(g.ops[i].output, Some(KvOutput::Get { .. })))
            .collect();
        if !writes.is_empty() && !reads.is_empty() {
            let r = reads[k % reads.len()];
            g.ops[r].output = Some(KvOutput::Get {
                value: Some(writes[(k / 7) % writes.len()].clone()),
                version: None,
            });
        }
    }
    g
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn the_value_reductions_agree_with_brute_force(
        seed in any::<u64>(),
        ops in 4usize..10,
        clients in 3usize..7,
        unknown in prop_oneof![Just(0.0), Just(0.2)],
        stale in any::<bool>(),
        misread in proptest::option::of(0usize..1000),
    ) {
        let g = small(seed, ops, clients, unknown, stale, misread);
        let want = if brute_check(&g.spec, &g.ops) {
            Verdict::Linearizable
        } else {
            Verdict::NotLinearizable
        };
        for explain in [false, true] {
            let r = check(&g.spec, &g.ops, &opts(explain));
            prop_assert_eq!(r.verdict, want, "seed {} explain {} ops {:#?}", seed, explain, g.ops);
        }
    }
}

#[test]
fn the_small_histories_of_the_cross_check_have_both_verdicts() {
    let (mut yes, mut no) = (0, 0);
    for seed in 0..300u64 {
        let misread = (seed % 2 == 0).then_some(seed as usize * 13);
        let g = small(seed, 8, 5, 0.1, seed % 3 == 0, misread);
        if brute_check(&g.spec, &g.ops) {
            yes += 1;
        } else {
            no += 1;
        }
    }
    assert!(yes > 60 && no > 25, "yes {yes} no {no}");
}

#[test]
fn one_key_1000_ops_48_clients_without_versions_is_decided_in_both_verdicts() {
    for stale in [false, true] {
        let g = generate(&GenOptions {
            seed: 1,
            ops: 1000,
            clients: 48,
            keys: 1,
            versions: false,
            unknown_writes: 0.01,
            stale_read: stale,
            ..GenOptions::default()
        });
        let want = if stale {
            Verdict::NotLinearizable
        } else {
            Verdict::Linearizable
        };
        let r = check(&g.spec, &g.ops, &opts(false));
        assert_eq!(r.verdict, want, "stale {stale}: {:?}", r.unknown_reason);
    }
}
