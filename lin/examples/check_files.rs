//! Checks kvhist/1 files and prints verdict, parse and check times: a quick
//! measuring tool for the checker alone (`overcast check` is the real CLI).
//! `cargo run --release -p overcast-lin --features measure --example check_files -- FILE...`

use overcast_lin::{check, kv::parse_kvhist, Options};
use std::time::{Duration, Instant};

fn main() {
    let opts = Options {
        time_budget: Some(Duration::from_secs(30)),
        explain: std::env::var_os("NO_EXPLAIN").is_none(),
        unique_values: std::env::var_os("NO_UNIQUE").is_none(),
        frontier_cap: std::env::var("FRONTIER_CAP")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(Options::default().frontier_cap),
        ..Options::default()
    };
    if let Ok(g) = std::env::var("GEN") {
        // GEN=ops,clients,keys,seed,unknown,stale: check one generated history.
        let v: Vec<f64> = g.split(',').filter_map(|x| x.parse().ok()).collect();
        let h = overcast_lin::gen::generate(&overcast_lin::gen::GenOptions {
            ops: v[0] as usize,
            clients: v[1] as usize,
            keys: v[2] as usize,
            seed: v[3] as u64,
            unknown_writes: v[4],
            unknown_reads: v[4],
            stale_read: v[5] != 0.0,
            versions: false,
            ..Default::default()
        });
        for o in &h.ops {
            println!("{o:?}");
        }
        let r = check(&h.spec, &h.ops, &opts);
        println!("{}", r.to_text());
    }
    if let Ok(dir) = std::env::var("DUMP_BENCH_CASES") {
        // DUMP_BENCH_CASES=DIR: write the criterion bench's generated
        // histories as kvhist/1 files (to time them one by one).
        for (name, g) in overcast_lin::gen::bench_cases() {
            let h = overcast_lin::gen::generate(&g);
            let expected = if g.stale_read {
                "not_linearizable"
            } else {
                "linearizable"
            };
            let text = overcast_lin::kv::to_kvhist(&h.spec, &h.ops, Some(expected));
            let path = format!("{dir}/{name}.json");
            if let Err(e) = std::fs::write(&path, text) {
                eprintln!("{path}: {e}");
            }
        }
    }
    for f in std::env::args().skip(1) {
        let t0 = Instant::now();
        let text = match std::fs::read_to_string(&f) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{f}: {e}");
                continue;
            }
        };
        let h = match parse_kvhist(&text) {
            Ok(h) => h,
            Err(e) => {
                eprintln!("{f}: {e}");
                continue;
            }
        };
        let parsed = t0.elapsed();
        if std::env::var_os("PARSE_ONLY").is_some() {
            // PARSE_ONLY=1: time the reading alone.
            println!("{f}: {} ops, parse {parsed:?}", h.ops.len());
            continue;
        }
        let r = check(&h.spec, &h.ops, &opts);
        println!(
            "{f}: {} (expected {}) parse {:?} check {:?} steps {} {}",
            r.verdict,
            h.expected.as_deref().unwrap_or("?"),
            parsed,
            r.elapsed,
            r.max_key_steps,
            r.unknown_reason.clone().unwrap_or_default()
        );
        if std::env::var_os("SHOW").is_some() {
            print!("{}", r.to_text());
        }
    }
}
