//! Benchmarks of the linearizability checker (criterion):
//! `cargo bench -p overcast-lin --bench lin`.

use criterion::{criterion_group, criterion_main, Criterion};
use overcast_lin::gen::{bench_cases, generate, unknown_write_chains};
use overcast_lin::kv::{parse_kvhist, to_kvhist, KvHistory};
use overcast_lin::{check, Options, Verdict};
use std::path::Path;
use std::time::Duration;

/// The files of one corpus of `lin/tests/data`, by name, with their text.
fn corpus(name: &str) -> Vec<(String, String)> {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data")).join(name);
    let mut files: Vec<_> = match std::fs::read_dir(dir) {
        Ok(d) => d.filter_map(|e| e.ok().map(|e| e.path())).collect(),
        Err(e) => panic!("the corpus {name} is missing: {e}"),
    };
    files.sort();
    files
        .iter()
        .filter_map(|f| {
            let stem = f.file_stem()?.to_string_lossy().into_owned();
            Some((stem, std::fs::read_to_string(f).ok()?))
        })
        .collect()
}

fn etcd() -> Vec<KvHistory> {
    corpus("porcupine-etcd")
        .iter()
        .filter_map(|(_, text)| parse_kvhist(text).ok())
        .collect()
}

/// The verdict a kvhist/1 file expects (`meta.expected`).
fn expected(h: &KvHistory) -> Verdict {
    match h.expected.as_deref() {
        Some("not_linearizable") => Verdict::NotLinearizable,
        _ => Verdict::Linearizable,
    }
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
        eprintln!("!!! lin/tests/data/porcupine-etcd is empty: etcd bench skipped !!!");
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

    // Porcupine's multi-key kv logs (50 clients, with append), as files:
    // parsing included.
    for (stem, text) in corpus("porcupine-kv") {
        if !stem.starts_with("c50") {
            continue;
        }
        let want = parse_kvhist(&text).map(|h| expected(&h));
        if stem == "c50-bad" {
            // Its key "0" alone (the search could not decide it before the
            // dead-state view; the whole log is decided by another key).
            let h = parse_kvhist(&text).expect("parse");
            let ops: Vec<_> = h.ops.iter().filter(|o| o.key == "0").cloned().collect();
            g.bench_function("porcupine_kv_c50_bad_key_0_alone", |b| {
                b.iter(|| {
                    let r = check(&h.spec, &ops, &opts());
                    assert_eq!(r.verdict, Verdict::NotLinearizable);
                })
            });
        }
        let name = format!("porcupine_kv_{}", stem.replace('-', "_"));
        g.bench_function(&name, |b| {
            b.iter(|| {
                let h = parse_kvhist(&text).expect("parse");
                let r = check(&h.spec, &h.ops, &opts());
                assert_eq!(Ok(r.verdict), want, "{name}");
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
        if gen_opts.keys > 1 {
            // End to end as `overcast check` does it: the kvhist/1 text is
            // parsed, then checked.
            let text = to_kvhist(&h.spec, &h.ops, None);
            let name = format!("{name}_from_json");
            g.bench_function(&name, |b| {
                b.iter(|| {
                    let h = parse_kvhist(&text).expect("parse");
                    let r = check(&h.spec, &h.ops, &opts());
                    assert_eq!(r.verdict, want, "{name}");
                })
            });
        }
    }
    for (ops, label) in [(1_000, "1k"), (30_000, "30k"), (100_000, "100k")] {
        for bad in [false, true] {
            let h = unknown_write_chains(7, ops, bad);
            let want = if bad {
                Verdict::NotLinearizable
            } else {
                Verdict::Linearizable
            };
            let name = format!(
                "unknown_write_chains_{label}_{}",
                if bad { "bad" } else { "ok" }
            );
            g.bench_function(&name, |b| {
                b.iter(|| {
                    let r = check(&h.spec, &h.ops, &opts());
                    assert_eq!(r.verdict, want, "{name}");
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
