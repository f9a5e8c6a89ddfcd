//! Checks the one-key, version-less, unique-value histories of
//! [`overcast_lin::gen::unique_mix`] seed by seed, linearizable and with
//! each injected violation (a stale read, a phantom value, a lost write),
//! and prints per kind how many were decided, with the right verdict, and
//! the slowest check. `VERBOSE=1` prints each history's verdict, time,
//! search steps and operation mix; `REPORT=1` each failure's report.
//! `cargo run --release -p overcast-lin --features measure --example unique_mix -- [SEEDS] [OPS] [CLIENTS]`

use overcast_lin::gen::{generate, unique_mix, Injection};
use overcast_lin::kv::{KvInput, KvOutput};
use overcast_lin::{check, Options, Verdict};
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
    let verbose = std::env::var_os("VERBOSE").is_some();
    println!("{seeds} seeds, {ops} operations, {clients} clients");
    println!(
        "{:14} {:>7} {:>8} {:>8} {:>10} {:>6} {:>11} {:>11}",
        "injection", "placed", "decided", "right", "undecided", "wrong", "median (s)", "max (s)"
    );
    let mut all_right = true;
    for injection in [None].into_iter().chain(Injection::ALL.map(Some)) {
        let name = injection.map_or("none", Injection::name);
        let (mut placed, mut decided, mut right, mut undecided) = (0, 0, 0, 0);
        let mut times: Vec<f64> = Vec::new();
        for seed in 0..seeds {
            let g = generate(&unique_mix(seed, ops, clients, false).with(injection));
            placed += usize::from(g.violation().is_some());
            let want = if g.violation().is_some() {
                Verdict::NotLinearizable
            } else {
                Verdict::Linearizable
            };
            let t = Instant::now();
            let r = check(&g.spec, &g.ops, &opts);
            let secs = t.elapsed().as_secs_f64();
            times.push(secs);
            match r.verdict {
                Verdict::Unknown => undecided += 1,
                v => {
                    decided += 1;
                    right += usize::from(v == want);
                }
            }
            if std::env::var_os("REPORT").is_some() && r.failure.is_some() {
                print!("{}", r.to_text());
            }
            if verbose {
                println!(
                    "seed {seed:2} {name:13} {:>18} {secs:8.4}s steps {:>10}  {}",
                    r.verdict.as_str(),
                    r.max_key_steps,
                    mix(&g.ops)
                );
            }
        }
        times.sort_by(f64::total_cmp);
        let median = times.get(times.len() / 2).copied().unwrap_or(0.0);
        let max = times.last().copied().unwrap_or(0.0);
        all_right &= right == decided && undecided == 0;
        println!(
            "{name:14} {placed:>7} {decided:>8} {right:>8} {undecided:>10} {:>6} {median:>11.4} {max:>11.4}",
            decided - right
        );
    }
    if !all_right {
        std::process::exit(1);
    }
}

/// The operation mix of a history, in words.
fn mix(ops: &[overcast_lin::Operation<KvInput, KvOutput>]) -> String {
    let mut n = [0usize; 6];
    for o in ops {
        match (&o.input, &o.output) {
            (KvInput::Cas { .. }, Some(KvOutput::Cond { ok: true, .. })) => n[0] += 1,
            (KvInput::Cas { .. }, Some(KvOutput::Cond { ok: false, .. })) => n[1] += 1,
            (KvInput::Cput { .. }, Some(KvOutput::Cond { ok: true, .. })) => n[2] += 1,
            (KvInput::Cput { .. }, Some(KvOutput::Cond { ok: false, .. })) => n[3] += 1,
            (KvInput::Put { .. }, _) => n[4] += 1,
            _ => n[5] += 1,
        }
    }
    format!(
        "cas ok/fail {}/{} cput ok/fail {}/{} puts {} gets {}",
        n[0], n[1], n[2], n[3], n[4], n[5]
    )
}
