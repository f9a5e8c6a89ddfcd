//! Tests of `lin/src/brute.rs`.

use overcast_lin::brute::*;
use overcast_lin::gen::{generate, GenOptions};
use overcast_lin::{check, Options, Verdict};

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
