//! Checks the one-key, version-less, unique-value histories of
//! [`overcast_lin::gen::unique_mix`] seed by seed, linearizable and with one
//! stale read, and prints each verdict, its time and its search steps.
//! `cargo run --release -p overcast-lin --example unique_mix -- [SEEDS] [OPS] [CLIENTS]`

use overcast_lin::gen::{generate, unique_mix};
use overcast_lin::kv::{KvInput, KvOutput};
use overcast_lin::{check, Options};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let seeds = args.first().copied().unwrap_or(50);
    let ops = args.get(1).copied().unwrap_or(1000) as usize;
    let clients = args.get(2).copied().unwrap_or(48) as usize;
    let secs: f64 = std::env::var("BUDGET_S")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20.0);
    let opts = Options {
        time_budget: Some(Duration::from_secs_f64(secs)),
        ..Options::default()
    };
    for seed in 0..seeds {
        for stale in [false, true] {
            let g = generate(&unique_mix(seed, ops, clients, stale));
            let mut n = [0usize; 6];
            for o in &g.ops {
                match (&o.input, &o.output) {
                    (KvInput::Cas { .. }, Some(KvOutput::Cond { ok: true, .. })) => n[0] += 1,
                    (KvInput::Cas { .. }, Some(KvOutput::Cond { ok: false, .. })) => n[1] += 1,
                    (KvInput::Cput { .. }, Some(KvOutput::Cond { ok: true, .. })) => n[2] += 1,
                    (KvInput::Cput { .. }, Some(KvOutput::Cond { ok: false, .. })) => n[3] += 1,
                    (KvInput::Put { .. }, _) => n[4] += 1,
                    _ => n[5] += 1,
                }
            }
            if std::env::var_os("DIAG").is_some() {
                println!(
                    "  {}",
                    overcast_lin::unique::diagnose(&g.spec, "k0", &g.ops)
                );
            }
            let t = Instant::now();
            let r = check(&g.spec, &g.ops, &opts);
            if std::env::var_os("REPORT").is_some() && r.failure.is_some() {
                print!("{}", r.to_text());
            }
            println!(
                "seed {seed:2} {:5} {:>18} {:8.3}s steps {:>10}  cas ok/fail {}/{} cput ok/fail {}/{} puts {} gets {}",
                if stale { "stale" } else { "ok" },
                r.verdict.as_str(),
                t.elapsed().as_secs_f64(),
                r.max_key_steps,
                n[0], n[1], n[2], n[3], n[4], n[5]
            );
        }
    }
}
