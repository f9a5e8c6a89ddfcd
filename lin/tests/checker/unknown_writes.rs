//! Interchangeable unknown writes: a version written by a
//! timed-out put that nobody reads, then versions written by timed-out
//! compare-and-sets that depend on it, while older timed-out puts that never
//! took effect are still pending. Decided in both verdicts, by the version
//! path and by the exact search, and in agreement with the brute force.

use overcast_lin::brute::brute_check;
use overcast_lin::gen::unknown_write_chains;
use overcast_lin::kv::{KvInput, KvOutput, KvSpec, Val};
use overcast_lin::{check, Operation, Options, Verdict};

fn opts(fast_path: bool) -> Options {
    Options {
        parallel: false,
        fast_path,
        max_steps: Some(50_000_000),
        ..Options::default()
    }
}

#[test]
fn chains_of_unknown_writes_are_decided_at_1k_30k_and_100k_ops_in_both_verdicts() {
    for ops in [1_000, 30_000, 100_000] {
        for bad in [false, true] {
            let g = unknown_write_chains(7, ops, bad);
            let want = if bad {
                Verdict::NotLinearizable
            } else {
                Verdict::Linearizable
            };
            let r = check(&g.spec, &g.ops, &opts(true));
            assert_eq!(r.verdict, want, "{ops} ops bad={bad}: {}", r.to_text());
            if bad {
                let f = r.failure.expect("failure");
                assert_eq!(f.ops[f.failing].id, g.stale_read.expect("injected"));
            }
        }
    }
}

#[test]
fn the_exact_search_decides_chains_of_unknown_writes_at_1k_ops() {
    for seed in 0..5 {
        for bad in [false, true] {
            let g = unknown_write_chains(seed, 1_000, bad);
            let r = check(&g.spec, &g.ops, &opts(false));
            let want = if bad {
                Verdict::NotLinearizable
            } else {
                Verdict::Linearizable
            };
            assert_eq!(r.verdict, want, "seed {seed} bad={bad}: {}", r.to_text());
        }
    }
}

fn v(s: &str) -> Val {
    Val::from(s)
}

/// `blind` timed-out puts that never take effect, then put w0, cas w0→w1,
/// cas w1→w2 (all timed out), then a get that sees `seen` at `version`.
fn chain(blind: usize, seen: &str, version: u64) -> Vec<Operation<KvInput, KvOutput>> {
    let mut ops = Vec::new();
    let mut op = |input: KvInput, invoke: i64, ret: Option<i64>, output: Option<KvOutput>| {
        let id = ops.len() as u64;
        ops.push(Operation {
            id,
            client: id,
            key: "k".into(),
            input,
            invoke,
            ret,
            output,
        });
    };
    op(
        KvInput::Put { value: v("a") },
        0,
        Some(5),
        Some(KvOutput::Put { version: Some(1) }),
    );
    for i in 0..blind {
        op(
            KvInput::Put {
                value: v(&format!("b{i}")),
            },
            10 + i as i64,
            None,
            None,
        );
    }
    op(KvInput::Put { value: v("w0") }, 20, None, None);
    op(
        KvInput::Cas {
            expect: Some(v("w0")),
            value: v("w1"),
        },
        21,
        None,
        None,
    );
    op(
        KvInput::Cas {
            expect: Some(v("w1")),
            value: v("w2"),
        },
        22,
        None,
        None,
    );
    op(
        KvInput::Get,
        30,
        Some(35),
        Some(KvOutput::Get {
            value: Some(v(seen)),
            version: Some(version),
        }),
    );
    ops
}

#[test]
fn a_chain_put_cas_cas_read_passes_and_its_broken_forms_fail_as_the_brute_force_says() {
    let spec = KvSpec {
        track_versions: true,
        ..KvSpec::default()
    };
    for blind in [0, 2, 5] {
        for (seen, version, ok) in [
            ("w2", 4, true),
            ("w1", 3, true),
            ("w0", 2, true),
            ("w2", 3, false),
            // A put that never answered may also have landed before w0.
            ("w1", 4, blind > 0),
            ("w2", 5, blind > 0),
            ("w2", 6, blind > 1),
            ("b0", 2, blind > 0),
            ("b1", 3, blind > 1),
            ("b1", 5, blind > 1),
            // Past the last version any order of the writes can reach.
            ("b1", blind as u64 + 5, false),
            ("w0", 1, false),
        ] {
            let ops = chain(blind, seen, version);
            if blind <= 2 {
                assert_eq!(
                    brute_check(&spec, &ops),
                    ok,
                    "brute: blind {blind} {seen}@{version}"
                );
            }
            for fast_path in [true, false] {
                let r = check(&spec, &ops, &opts(fast_path));
                assert_eq!(
                    r.verdict == Verdict::Linearizable,
                    ok,
                    "blind {blind} {seen}@{version} fast {fast_path}: {}",
                    r.to_text()
                );
            }
        }
    }
}
