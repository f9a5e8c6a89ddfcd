//! The checker against the brute-force reference on many small random
//! histories, and against generated histories with a known verdict.

use overcast_sim::lin::brute::brute_check;
use overcast_sim::lin::gen::{generate, GenOptions};
use overcast_sim::lin::kv::{KvInput, KvOutput, KvSpec, KvState, Val};
use overcast_sim::lin::{check, Operation, Options, Spec, Verdict};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::time::Duration;

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

type Op = Operation<KvInput, KvOutput>;

/// splitmix64: a tiny deterministic generator (the root package has no rand).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn range(&mut self, lo: i64, hi_incl: i64) -> i64 {
        lo + self.below((hi_incl - lo + 1) as u64) as i64
    }
    fn bool(&mut self, p: f64) -> bool {
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
}

/// A small random history: half of the time the outputs come from a hidden
/// linearization, otherwise one output is perturbed; some outcomes unknown.
fn small_history(seed: u64) -> (KvSpec, Vec<Op>) {
    let mut rng = Rng(seed);
    let versions = rng.bool(0.5);
    let n = rng.range(1, 8) as usize;
    let nkeys = if rng.bool(0.2) { 2 } else { 1 };
    let vals = ["a", "b", "c"];
    let val = |rng: &mut Rng| Val::from(vals[rng.below(3) as usize]);
    let mut init = BTreeMap::new();
    if rng.bool(0.3) {
        init.insert(
            "k0".to_string(),
            KvState {
                value: Some(val(&mut rng)),
                version: if versions { rng.below(3) } else { 0 },
            },
        );
    }
    let spec = KvSpec {
        init,
        track_versions: versions,
    };
    let mut ops: Vec<Op> = Vec::new();
    for i in 0..n {
        let call = rng.range(0, 19);
        let ret = call + rng.range(0, 9);
        let input = match rng.below(if versions { 4 } else { 3 }) {
            0 => KvInput::Get,
            1 => KvInput::Put {
                value: val(&mut rng),
            },
            2 => KvInput::Cas {
                expect: if rng.bool(0.3) {
                    None
                } else {
                    Some(val(&mut rng))
                },
                value: val(&mut rng),
            },
            _ => KvInput::Cput {
                expect_version: rng.below(4),
                value: val(&mut rng),
            },
        };
        ops.push(Operation {
            id: i as u64,
            client: i as u64,
            key: format!("k{}", rng.below(nkeys)),
            input,
            invoke: call,
            ret: Some(ret),
            output: None,
        });
    }
    // Hidden linearization points; replay.
    let mut points: Vec<(i64, usize)> = ops
        .iter()
        .enumerate()
        .map(|(i, o)| (rng.range(o.invoke, o.ret.unwrap_or(o.invoke)), i))
        .collect();
    points.sort();
    let mut states: BTreeMap<String, KvState> = BTreeMap::new();
    for &(_, i) in &points {
        let o = &ops[i];
        let s = states
            .entry(o.key.clone())
            .or_insert_with(|| spec.init(&o.key))
            .clone();
        let mut v = |x: u64| {
            if versions && rng.bool(0.8) {
                Some(x)
            } else {
                None
            }
        };
        let (ns, out) = match &o.input {
            KvInput::Get => (
                s.clone(),
                KvOutput::Get {
                    value: s.value.clone(),
                    version: v(s.version),
                },
            ),
            KvInput::Put { value } | KvInput::Append { value } => {
                let ns = KvState {
                    value: Some(value.clone()),
                    version: if versions { s.version + 1 } else { 0 },
                };
                let ver = v(ns.version);
                (ns, KvOutput::Put { version: ver })
            }
            KvInput::Cas { expect, value } => {
                let ok = expect == &s.value;
                let ns = if ok {
                    KvState {
                        value: Some(value.clone()),
                        version: if versions { s.version + 1 } else { 0 },
                    }
                } else {
                    s.clone()
                };
                let ver = v(ns.version);
                (ns, KvOutput::Cond { ok, version: ver })
            }
            KvInput::Cput {
                expect_version,
                value,
            } => {
                let ok = expect_version == &s.version;
                let ns = if ok {
                    KvState {
                        value: Some(value.clone()),
                        version: s.version + 1,
                    }
                } else {
                    s.clone()
                };
                let ver = v(ns.version);
                (ns, KvOutput::Cond { ok, version: ver })
            }
        };
        states.insert(o.key.clone(), ns);
        ops[i].output = Some(out);
    }
    // Perturb one output half of the time.
    if rng.bool(0.5) {
        let i = rng.below(n as u64) as usize;
        let o = &mut ops[i];
        o.output = match o.output.take() {
            Some(KvOutput::Get { version, .. }) => Some(KvOutput::Get {
                value: if rng.bool(0.2) {
                    None
                } else {
                    Some(val(&mut rng))
                },
                version: version.map(|x| x + rng.below(2)),
            }),
            Some(KvOutput::Cond { ok, version }) => Some(KvOutput::Cond {
                ok: if rng.bool(0.7) { !ok } else { ok },
                version,
            }),
            Some(KvOutput::Put { version }) => Some(KvOutput::Put {
                version: version.map(|x| x + 1),
            }),
            None => None,
        };
    }
    // Unknown outcomes: the op may have taken effect or not.
    for o in ops.iter_mut() {
        if rng.bool(0.15) {
            o.output = None;
            if rng.bool(0.5) {
                o.ret = None;
            }
        }
    }
    (spec, ops)
}

fn verdict_of(spec: &KvSpec, ops: &[Op], fast: bool, frontier_cap: usize) -> Verdict {
    let opts = Options {
        fast_path: fast,
        frontier_cap,
        parallel: false,
        time_budget: Some(Duration::from_secs(10)),
        ..Options::default()
    };
    check(spec, ops, &opts).verdict
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(20000)))]

    #[test]
    fn agrees_with_brute_force(seed in any::<u64>()) {
        let (spec, ops) = small_history(seed);
        let expected = if brute_check(&spec, &ops) { Verdict::Linearizable } else { Verdict::NotLinearizable };
        prop_assert_eq!(verdict_of(&spec, &ops, true, 20_000), expected, "seed {} ops {:#?}", seed, ops);
        prop_assert_eq!(verdict_of(&spec, &ops, false, 20_000), expected, "no fast path; seed {} ops {:#?}", seed, ops);
        prop_assert_eq!(verdict_of(&spec, &ops, false, 0), expected, "depth-first; seed {} ops {:#?}", seed, ops);
    }
}

#[test]
fn brute_force_corpus_is_mixed() {
    // The random histories exercise both verdicts (else the test above proves little).
    let mut yes = 0;
    let mut no = 0;
    for seed in 0..400 {
        let (spec, ops) = small_history(seed);
        if brute_check(&spec, &ops) {
            yes += 1;
        } else {
            no += 1;
        }
    }
    assert!(yes > 100 && no > 60, "yes {yes} no {no}");
}

/// Checks one generated shape, good and bad; returns whether a stale read
/// could be injected.
fn gen_case(
    ops: usize,
    clients: usize,
    keys: usize,
    versions: bool,
    unknown: f64,
    seed: u64,
) -> bool {
    let mut injected = false;
    for stale in [false, true] {
        let g = generate(&GenOptions {
            seed,
            ops,
            clients,
            keys,
            versions,
            unknown_writes: unknown,
            unknown_reads: unknown,
            stale_read: stale,
            ..GenOptions::default()
        });
        let opts = Options {
            time_budget: Some(Duration::from_secs(30)),
            ..Options::default()
        };
        let r = check(&g.spec, &g.ops, &opts);
        let what = format!("ops {ops} clients {clients} keys {keys} versions {versions} unknown {unknown} seed {seed}");
        if !stale {
            assert_eq!(r.verdict, Verdict::Linearizable, "{what}: {}", r.to_text());
        } else if let Some(id) = g.stale_read {
            injected = true;
            assert_eq!(
                r.verdict,
                Verdict::NotLinearizable,
                "{what} (stale read #{id})"
            );
            let f = r.failure.expect("failure");
            assert!(
                f.ops.iter().any(|o| o.id == id) || f.sentence.contains(&format!("#{id} ")),
                "{what}: {}",
                f.sentence
            );
        }
    }
    injected
}

#[test]
fn generated_histories_small() {
    for seed in 0..40 {
        for &(ops, clients) in &[(10, 2), (30, 3), (60, 5)] {
            for versions in [false, true] {
                for unknown in [0.0, 0.1] {
                    gen_case(
                        ops,
                        clients,
                        1 + (seed as usize % 3),
                        versions,
                        unknown,
                        seed,
                    );
                }
            }
        }
    }
}

#[test]
fn generated_histories_medium() {
    for seed in 0..6 {
        for &(ops, clients, keys) in &[(300, 8, 1), (500, 16, 4), (1000, 12, 1)] {
            for versions in [false, true] {
                assert!(
                    gen_case(ops, clients, keys, versions, 0.02, seed),
                    "no stale read injected"
                );
            }
        }
    }
}

#[test]
fn generated_histories_large_versioned() {
    assert!(gen_case(20_000, 32, 1, true, 0.01, 7));
    assert!(gen_case(20_000, 16, 100, false, 0.01, 8));
}

#[test]
fn generated_histories_with_versionless_puts() {
    // Puts whose output omits the version must be fitted into the version
    // order by the fast path (or decided by the search).
    for (seed, ops, clients, versionless) in [
        (1, 200, 4, 0.3),
        (2, 1000, 8, 0.3),
        (3, 3000, 16, 0.3),
        (4, 20_000, 32, 0.1),
    ] {
        for stale in [false, true] {
            let g = generate(&GenOptions {
                seed,
                ops,
                clients,
                versions: true,
                unknown_writes: 0.01,
                versionless_puts: versionless,
                stale_read: stale,
                ..GenOptions::default()
            });
            let r = check(
                &g.spec,
                &g.ops,
                &Options {
                    time_budget: Some(Duration::from_secs(20)),
                    ..Options::default()
                },
            );
            let want = if stale && g.stale_read.is_some() {
                Verdict::NotLinearizable
            } else {
                Verdict::Linearizable
            };
            assert_eq!(
                r.verdict,
                want,
                "seed {seed} ops {ops} stale {stale}: {}",
                r.to_text()
            );
            eprintln!(
                "versionless puts: {ops} ops, stale {stale}: {} ms",
                r.elapsed.as_millis()
            );
        }
    }
}
