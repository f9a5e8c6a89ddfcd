//! Benchmarks of the linearizability checker (criterion):
//! `cargo bench -p overcast-lin --bench lin`.

use criterion::{criterion_group, criterion_main, Criterion};
use overcast_lin::gen::{bench_cases, generate};
use overcast_lin::kv::{parse_kvhist, KvHistory};
use overcast_lin::{check, Options, Verdict};
use std::path::Path;
use std::time::Duration;

fn etcd() -> Vec<KvHistory> {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/histories/porcupine-etcd"
    ));
    let mut files: Vec<_> = match std::fs::read_dir(dir) {
        Ok(d) => d.filter_map(|e| e.ok().map(|e| e.path())).collect(),
        Err(_) => return Vec::new(),
    };
    files.sort();
    files
        .iter()
        .filter_map(|f| parse_kvhist(&std::fs::read_to_string(f).ok()?).ok())
        .collect()
}

fn opts() -> Options {
    Options {
        time_budget: Some(Duration::from_secs(60)),
        ..Options::default()
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("lin");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(5))
        .warm_up_time(Duration::from_millis(500));

    let hs = etcd();
    if hs.is_empty() {
        eprintln!("!!! ../shared/histories/porcupine-etcd not found: etcd bench skipped !!!");
    } else {
        g.bench_function("etcd_102_histories", |b| {
            b.iter(|| {
                for h in &hs {
                    let r = check(&h.spec, &h.ops, &opts());
                    assert_ne!(r.verdict, Verdict::Unknown);
                }
            })
        });
    }

    for (name, gen_opts) in bench_cases() {
        let stale = gen_opts.stale_read;
        let h = generate(&gen_opts);
        let want = if stale {
            Verdict::NotLinearizable
        } else {
            Verdict::Linearizable
        };
        g.bench_function(name, |b| {
            b.iter(|| {
                let r = check(&h.spec, &h.ops, &opts());
                assert_eq!(r.verdict, want, "{name}");
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
