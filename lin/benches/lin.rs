//! Benchmarks of the linearizability checker (criterion):
//! `cargo bench -p overcast-lin --features measure --bench lin`.

use criterion::{criterion_group, criterion_main, Criterion};
use overcast_lin::gen::{
    bench_cases, generate, unique_mix, unknown_write_chains, Generated, Injection,
};
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

/// The same without the unique-values pass (the baseline it is measured
/// against).
fn no_unique() -> Options {
    Options {
        unique_values: false,
        ..opts()
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
        for (name, o) in [
            ("etcd_102_histories", opts()),
            ("etcd_102_histories_no_unique", no_unique()),
        ] {
            g.bench_function(name, |b| {
                b.iter(|| {
                    for h in &hs {
                        let r = check(&h.spec, &h.ops, &o);
                        assert_eq!(r.verdict, expected(h));
                    }
                })
            });
        }
    }

    // The small files, as files (parsing included): the examples and
    // Porcupine's kv logs at 1 and 10 clients.
    let small: Vec<(String, String)> = corpus("examples")
        .into_iter()
        .chain(
            corpus("porcupine-kv")
                .into_iter()
                .filter(|(stem, _)| !stem.starts_with("c50")),
        )
        .collect();
    for (suffix, o) in [("", opts()), ("_no_unique", no_unique())] {
        let name = format!("examples_and_kv_c01_c10_{}_files{suffix}", small.len());
        g.bench_function(&name, |b| {
            b.iter(|| {
                for (stem, text) in &small {
                    let h = parse_kvhist(text).expect("parse");
                    let r = check(&h.spec, &h.ops, &o);
                    assert_eq!(r.verdict, expected(&h), "{stem}");
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
        for (suffix, o) in [("", opts()), ("_no_unique", no_unique())] {
            let name = format!("porcupine_kv_{}{suffix}", stem.replace('-', "_"));
            g.bench_function(&name, |b| {
                b.iter(|| {
                    let h = parse_kvhist(&text).expect("parse");
                    let r = check(&h.spec, &h.ops, &o);
                    assert_eq!(Ok(r.verdict), want, "{name}");
                })
            });
        }
    }

    for (name, gen_opts) in bench_cases() {
        let stale = gen_opts.stale_read;
        let h = generate(&gen_opts);
        let want = if stale {
            Verdict::NotLinearizable
        } else {
            Verdict::Linearizable
        };
        for (suffix, o) in [("", opts()), ("_no_unique", no_unique())] {
            let name = format!("{name}{suffix}");
            g.bench_function(&name, |b| {
                b.iter(|| {
                    let r = check(&h.spec, &h.ops, &o);
                    assert_eq!(r.verdict, want, "{name}");
                })
            });
        }
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
    // One key, 48 clients, no versions in the answers, every value unique
    // (get 50%, put 20%, cas 15%, cput 15%): seed 1 beside the search
    // alone (one of the seeds it decides, in about a second), then every
    // one of 50 seeds, linearizable and with one stale read, each checked
    // on its own, then with a phantom value and with a lost write; and
    // 10,000 operations at 32 clients.
    for stale in [false, true] {
        let h = generate(&unique_mix(1, 1000, 48, stale));
        let want = if stale {
            Verdict::NotLinearizable
        } else {
            Verdict::Linearizable
        };
        let kind = if stale { "bad" } else { "ok" };
        for (suffix, o) in [("", opts()), ("_no_unique", no_unique())] {
            let name = format!("unique_mix_1000_ops_48_clients_seed_1_{kind}{suffix}");
            g.bench_function(&name, |b| {
                b.iter(|| {
                    let r = check(&h.spec, &h.ops, &o);
                    assert_eq!(r.verdict, want, "{name}");
                })
            });
        }
    }
    for (ops, clients, seeds) in [(1000, 48, 50u64), (10_000, 32, 10)] {
        let hs: Vec<_> = (0..seeds)
            .flat_map(|seed| {
                [false, true].map(|stale| generate(&unique_mix(seed, ops, clients, stale)))
            })
            .collect();
        let name = format!("unique_mix_{ops}_ops_{clients}_clients_{seeds}_seeds_ok_and_bad");
        bench_all(&mut g, &name, hs);
        // The same seeds with a phantom value, then with a lost write.
        let hs: Vec<_> = (0..seeds)
            .flat_map(|seed| {
                [Injection::PhantomValue, Injection::LostWrite]
                    .map(|i| generate(&unique_mix(seed, ops, clients, false).with(Some(i))))
            })
            .collect();
        let name = format!("unique_mix_{ops}_ops_{clients}_clients_{seeds}_seeds_phantom_and_lost");
        bench_all(&mut g, &name, hs);
    }
    g.finish();
}

/// Checks every history of `hs`, each on its own, expecting the verdict
/// the generator knows.
fn bench_all(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    hs: Vec<Generated>,
) {
    g.bench_function(name, |b| {
        b.iter(|| {
            for h in &hs {
                let r = check(&h.spec, &h.ops, &opts());
                let want = if h.violation().is_some() {
                    Verdict::NotLinearizable
                } else {
                    Verdict::Linearizable
                };
                assert_eq!(r.verdict, want, "{name}");
            }
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
