//! Measures the unique-values pass on generated one-key histories (2 to 64
//! clients, 5 to 400 operations, unknown outcomes, conditional puts, every
//! fault the generator injects): how many it decides, whether it agrees
//! with the search (and the brute force on the smallest), and why it
//! leaves the others. `SHOW=SEED` prints one history and what the pass
//! finds on it.
//! `cargo run --release -p overcast-lin --features measure --example pass_stats -- [COUNT] [FIRST_SEED]`
use overcast_lin::brute::brute_check;
use overcast_lin::gen::{generate, GenOptions};
use overcast_lin::unique::{diagnose, pass_verdict};
use overcast_lin::{check, Options, Verdict};

fn opts_of(seed: u64) -> GenOptions {
    let clients = [2, 4, 8, 16, 32, 64][(seed % 6) as usize];
    let ops = [5, 8, 12, 30, 100, 400][(seed / 6 % 6) as usize];
    let fault = (seed / 36 % 4) as u8;
    let unknown = [0.0, 0.05, 0.3][(seed / 144 % 3) as usize];
    let cputs = seed / 432 % 2 == 1;
    let dur = [(10, 1000), (1, 30), (100, 100)][(seed / 864 % 3) as usize];
    GenOptions {
        seed,
        ops,
        clients,
        keys: 1,
        versions: false,
        conditional_puts: cputs,
        unknown_writes: unknown,
        unknown_reads: unknown / 2.0,
        duration: dur,
        think: (0, dur.1 / 10),
        stale_read: fault == 1,
        phantom_value: fault == 2,
        lost_write: fault == 3,
        ..GenOptions::default()
    }
}

fn main() {
    if let Ok(seed) = std::env::var("SHOW") {
        let g = generate(&opts_of(seed.parse().expect("a seed")));
        for (i, o) in g.ops.iter().enumerate() {
            println!(
                "{i:4} c{:3} [{:6}, {:?}] {:?} -> {:?}",
                o.client, o.invoke, o.ret, o.input, o.output
            );
        }
        println!("{}", diagnose(&g.spec, "k0", &g.ops));
        return;
    }
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2592);
    let from: u64 = std::env::args()
        .nth(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(0);
    let (mut decided, mut undecided, mut compared) = (0, 0, 0);
    for seed in from..from + n {
        let o = opts_of(seed);
        let g = generate(&o);
        let v = pass_verdict(&g.spec, &g.ops);
        let search = check(
            &g.spec,
            &g.ops,
            &Options {
                unique_values: false,
                fast_path: false,
                explain: false,
                parallel: false,
                max_steps: Some(5_000_000),
                ..Default::default()
            },
        )
        .verdict;
        match v {
            Some(v) => {
                decided += 1;
                if search != Verdict::Unknown {
                    compared += 1;
                    assert_eq!(v, search, "seed {seed} {o:?}");
                }
                if g.ops.len() <= 8 {
                    assert_eq!(
                        brute_check(&g.spec, &g.ops),
                        v == Verdict::Linearizable,
                        "seed {seed}"
                    );
                }
            }
            None => {
                undecided += 1;
                println!(
                    "seed {seed} clients {} ops {} unknown {} cputs {} dur {:?}: {} (search {search:?})",
                    o.clients,
                    o.ops,
                    o.unknown_writes,
                    o.conditional_puts,
                    o.duration,
                    diagnose(&g.spec, "k0", &g.ops)
                );
            }
        }
    }
    println!("decided {decided}, undecided {undecided}, compared with the search {compared}");
}
