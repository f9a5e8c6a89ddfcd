//! The unique-values pass: whenever it decides, it agrees with the search
//! and, on small keys, with the brute force; on the one-key mix of get, put,
//! cas and conditional put without versions in the answers it decides every
//! seed, both verdicts, within a step budget no search could decide them in;
//! and its reports name a minimal failing sub-history, re-checked by the
//! search.

use overcast_lin::brute::brute_check;
use overcast_lin::gen::{generate, unique_mix, GenOptions, Generated, Injection};
use overcast_lin::kv::{KvInput, KvOutput, KvSpec, Val};
use overcast_lin::unique::pass_verdict;
use overcast_lin::{check, Failure, Operation, Options, Report, Spec, Verdict};
use proptest::prelude::*;

type Op = Operation<KvInput, KvOutput>;

/// The search alone (no fast path, no pass), sequential, within `steps`.
fn search_only(steps: u64) -> Options {
    Options {
        parallel: false,
        fast_path: false,
        unique_values: false,
        explain: false,
        max_steps: Some(steps),
        ..Options::default()
    }
}

/// A history at `clients` clients with one fault or none (0 none, 1 stale
/// read, 2 phantom value, 3 lost write).
#[allow(clippy::too_many_arguments)]
fn history(
    seed: u64,
    ops: usize,
    clients: usize,
    keys: usize,
    fault: u8,
    unknown: f64,
    cputs: bool,
    short: bool,
) -> Generated {
    generate(&GenOptions {
        seed,
        ops,
        clients,
        keys,
        versions: false,
        conditional_puts: cputs,
        unknown_writes: unknown,
        unknown_reads: unknown / 2.0,
        duration: if short { (1, 30) } else { (10, 1000) },
        think: if short { (0, 3) } else { (0, 100) },
        stale_read: fault == 1,
        phantom_value: fault == 2,
        lost_write: fault == 3,
        ..GenOptions::default()
    })
}

fn verdict_of(linearizable: bool) -> Verdict {
    if linearizable {
        Verdict::Linearizable
    } else {
        Verdict::NotLinearizable
    }
}

fn ops_per_key(ops: &[Op]) -> usize {
    let mut n: std::collections::BTreeMap<&str, usize> = Default::default();
    for o in ops {
        *n.entry(&o.key).or_default() += 1;
    }
    n.values().copied().max().unwrap_or(0)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]
    #[test]
    fn the_pass_agrees_with_the_search_and_the_brute_force(
        seed in any::<u64>(),
        clients in 8usize..=64,
        ops in 3usize..=40,
        keys in 1usize..=3,
        fault in 0u8..4,
        unknown in prop_oneof![Just(0.0), Just(0.05), Just(0.3)],
        cputs in any::<bool>(),
        short in any::<bool>(),
    ) {
        let g = history(seed, ops, clients, keys, fault, unknown, cputs, short);
        let pass = pass_verdict(&g.spec, &g.ops);
        let search = check(&g.spec, &g.ops, &search_only(2_000_000)).verdict;
        let full = check(&g.spec, &g.ops, &Options {
            parallel: false,
            max_steps: Some(2_000_000),
            ..Options::default()
        }).verdict;
        if let Some(v) = pass {
            // What the pass decides, `check` says.
            prop_assert_eq!(full, v, "{:#?}", g.ops);
            if search != Verdict::Unknown {
                prop_assert_eq!(search, v, "{:#?}", g.ops);
            }
        }
        if search != Verdict::Unknown && full != Verdict::Unknown {
            prop_assert_eq!(search, full, "{:#?}", g.ops);
        }
        if ops_per_key(&g.ops) <= 11 {
            let brute = verdict_of(brute_check(&g.spec, &g.ops));
            if let Some(v) = pass {
                prop_assert_eq!(v, brute, "{:#?}", g.ops);
            }
            prop_assert_eq!(full, brute, "{:#?}", g.ops);
        }
    }
}

/// The pass decides every unique-value history of the generator here, at
/// 2 to 64 clients, with unknown outcomes, conditional puts and every
/// fault; and never disagrees with the search.
#[test]
fn the_pass_decides_every_generated_history() {
    let (mut decided, mut total) = (0, 0);
    for seed in 0..600u64 {
        let clients = [2, 4, 8, 16, 32, 64][(seed % 6) as usize];
        let ops = [8, 30, 100, 300][(seed / 6 % 4) as usize];
        let fault = (seed / 24 % 4) as u8;
        let unknown = [0.0, 0.05, 0.3][(seed / 96 % 3) as usize];
        let g = history(
            seed,
            ops,
            clients,
            1,
            fault,
            unknown,
            seed % 2 == 0,
            seed % 5 == 0,
        );
        total += 1;
        let Some(v) = pass_verdict(&g.spec, &g.ops) else {
            continue;
        };
        decided += 1;
        if ops <= 100 {
            let search = check(&g.spec, &g.ops, &search_only(300_000)).verdict;
            if search != Verdict::Unknown {
                assert_eq!(search, v, "seed {seed}");
            }
        }
    }
    assert_eq!(decided, total, "decided {decided} of {total}");
}

/// Keys whose values repeat keep the search; the others in the same file
/// are decided by the pass.
#[test]
fn mixed_files_are_decided_key_by_key() {
    for seed in 0..20u64 {
        let mut g = history(seed, 60, 8, 2, (seed % 2) as u8, 0.0, false, false);
        // Key k1 writes only "a" and "b" (reads follow), so values repeat.
        let mut k1: Vec<Op> = Vec::new();
        let mut rest: Vec<Op> = Vec::new();
        for o in g.ops.drain(..) {
            if o.key == "k1" {
                k1.push(o);
            } else {
                rest.push(o);
            }
        }
        let mut t = rest
            .iter()
            .map(|o| o.ret.unwrap_or(o.invoke))
            .max()
            .unwrap_or(0)
            + 1;
        let mut cur: Option<Val> = None;
        for i in 0..30u64 {
            let v = Val::from(if i % 2 == 0 { "a" } else { "b" });
            let (input, output) = if i % 3 == 2 {
                (
                    KvInput::Get,
                    KvOutput::Get {
                        value: cur.clone(),
                        version: None,
                    },
                )
            } else {
                cur = Some(v.clone());
                (KvInput::Put { value: v }, KvOutput::Put { version: None })
            };
            rest.push(Operation {
                id: 10_000 + i,
                client: 99,
                key: "k1".into(),
                input,
                invoke: t,
                ret: Some(t + 5),
                output: Some(output),
            });
            t += 10;
        }
        let k0: Vec<Op> = rest.iter().filter(|o| o.key == "k0").cloned().collect();
        let k1: Vec<Op> = rest.iter().filter(|o| o.key == "k1").cloned().collect();
        assert_eq!(pass_verdict(&g.spec, &k1), None, "repeated values");
        let v0 = pass_verdict(&g.spec, &k0).expect("the pass decides k0");
        let r = check(&g.spec, &rest, &Options::default());
        assert_eq!(r.verdict, v0, "seed {seed}");
        assert_eq!(
            r.verdict,
            check(&g.spec, &rest, &search_only(50_000_000)).verdict
        );
    }
}

/// With a step budget no search could decide them in: every seed of the
/// mix at 1,000 operations and 48 clients, linearizable and with each
/// injected violation (a stale read, a phantom value, a lost write), gets
/// its verdict; and ten seeds of each at 10,000 operations and 32 clients.
#[test]
fn every_seed_of_the_mix_is_decided_within_a_step_budget() {
    let budget = Options {
        max_steps: Some(10_000),
        parallel: false,
        ..Options::default()
    };
    for (seeds, ops, clients) in [(50, 1000, 48), (10, 10_000, 32)] {
        for seed in 0..seeds {
            for injection in [None].into_iter().chain(Injection::ALL.map(Some)) {
                let g = generate(&unique_mix(seed, ops, clients, false).with(injection));
                let what = format!("seed {seed} {ops} ops {clients} clients {injection:?}");
                assert_eq!(
                    injection.is_some(),
                    g.violation().is_some(),
                    "{what}: not placed"
                );
                let want = if injection.is_some() {
                    Verdict::NotLinearizable
                } else {
                    Verdict::Linearizable
                };
                let r = check(&g.spec, &g.ops, &budget);
                assert_eq!(r.verdict, want, "{what}");
                if injection.is_some() {
                    let f = r.failure.as_ref().expect("a failure");
                    assert!(f.sub_history_checked, "{what}: {}", r.to_text());
                }
            }
        }
    }
}

/// The search alone cannot decide the mix within that budget: the verdicts
/// above are the pass's.
#[test]
fn without_the_pass_the_same_budget_gives_unknown() {
    let g = generate(&unique_mix(0, 1000, 48, false));
    let off = Options {
        max_steps: Some(10_000),
        parallel: false,
        unique_values: false,
        ..Options::default()
    };
    assert_eq!(check(&g.spec, &g.ops, &off).verdict, Verdict::Unknown);
}

/// The operations `f` names, from the history.
fn sub_history(ops: &[Op], f: &Failure) -> Vec<Op> {
    f.ops
        .iter()
        .map(|v| {
            ops.iter()
                .find(|o| o.id == v.id)
                .cloned()
                .expect("the report names operations of the history")
        })
        .collect()
}

/// The writes `x` needs to be placed at all, values being unique: the
/// write of the value it reads or expects, the write of the value that one
/// expects, and so on.
fn supply_chain(ops: &[Op], x: &Op) -> Vec<u64> {
    let needs = |o: &Op| match (&o.input, &o.output) {
        (KvInput::Get, Some(KvOutput::Get { value, .. })) => value.clone(),
        (KvInput::Cas { expect, .. }, _) => expect.clone(),
        _ => None,
    };
    let mut chain = Vec::new();
    let mut want = needs(x);
    while let Some(v) = want {
        let Some(w) = ops.iter().find(|o| match &o.input {
            KvInput::Put { value } | KvInput::Cas { value, .. } | KvInput::Cput { value, .. } => {
                *value == v
            }
            _ => false,
        }) else {
            break;
        };
        if chain.contains(&w.id) {
            break;
        }
        chain.push(w.id);
        want = needs(w);
    }
    chain
}

/// Checks what a report of the pass promises: its sub-history, from the
/// initial state, fails in a search at the operation named (the one the
/// sentence names), and without any one operation other than the named one
/// and the writes of what it needs (transitively), it does not.
fn assert_report_is_true(spec: &KvSpec, ops: &[Op], r: &Report, what: &str) -> u64 {
    assert_eq!(r.verdict, Verdict::NotLinearizable, "{what}");
    let f = r.failure.as_ref().expect("a failure");
    assert!(f.sub_history_checked, "{what}: {}", r.to_text());
    let x = f.ops[f.failing].id;
    assert!(
        f.sentence.starts_with(&format!("operation #{x} ")),
        "{what}: {}",
        f.sentence
    );
    let key = &f.key;
    let init = spec.init(key);
    assert_eq!(f.start_state, spec.describe_state(&init), "{what}");
    let sub = sub_history(ops, f);
    let again = check(spec, &sub, &search_only(10_000_000));
    assert_eq!(
        again.verdict,
        Verdict::NotLinearizable,
        "{what}: {}",
        r.to_text()
    );
    let named = |r: &Report| r.failure.as_ref().map(|f| f.ops[f.failing].id);
    assert_eq!(named(&again), Some(x), "{what}: {}", r.to_text());
    let xo = sub.iter().find(|o| o.id == x).expect("named op");
    let chain = supply_chain(&sub, xo);
    let gives = |o: &Op| {
        chain.contains(&o.id)
            || !spec.is_read_only(&o.input, o.output.as_ref())
                && !spec.step(&init, &xo.input, xo.output.as_ref()).is_legal()
                && {
                    let mut any = false;
                    spec.step(&init, &o.input, o.output.as_ref()).for_each(|s| {
                        any |= spec.step(&s, &xo.input, xo.output.as_ref()).is_legal()
                    });
                    any
                }
    };
    for o in &sub {
        if o.id == x || gives(o) {
            continue;
        }
        let less: Vec<Op> = sub.iter().filter(|p| p.id != o.id).cloned().collect();
        let r2 = check(spec, &less, &search_only(10_000_000));
        assert_ne!(r2.verdict, Verdict::Unknown, "{what}");
        assert_ne!(
            named(&r2),
            Some(x),
            "{what}: #{} could be left out of\n{}",
            o.id,
            r.to_text()
        );
    }
    x
}

/// The reports of the mix's injected violations: true, minimal, and
/// naming the injected operation whenever it alone breaks the history (as
/// the one that fails, for a stale read or a phantom value).
#[test]
fn reports_of_the_mix_name_a_minimal_contradiction() {
    for seed in 0..30u64 {
        let (ops, clients) = [(1000, 48), (200, 8), (60, 16)][(seed % 3) as usize];
        let injection = Injection::ALL[(seed / 3 % 3) as usize];
        let g = generate(&unique_mix(seed, ops, clients, false).with(Some(injection)));
        let Some(id) = g.violation() else {
            continue;
        };
        let what = format!("seed {seed} {ops} ops {clients} clients {injection:?}");
        let r = check(&g.spec, &g.ops, &Options::default());
        let x = assert_report_is_true(&g.spec, &g.ops, &r, &what);
        let without: Vec<Op> = g.ops.iter().filter(|o| o.id != id).cloned().collect();
        if pass_verdict(&g.spec, &without) == Some(Verdict::Linearizable) {
            let f = r.failure.as_ref().expect("a failure");
            assert!(f.ops.iter().any(|o| o.id == id), "{what}: {}", r.to_text());
            if injection != Injection::LostWrite {
                assert_eq!(x, id, "{what}: {}", r.to_text());
            }
        }
        if std::env::var_os("SHOW_REPORTS").is_some() {
            println!("{what}\n{}", r.to_text());
        }
    }
}

fn op(id: u64, input: KvInput, invoke: i64, ret: i64, output: KvOutput) -> Op {
    Operation {
        id,
        client: id,
        key: "x".into(),
        input,
        invoke,
        ret: Some(ret),
        output: Some(output),
    }
}

fn put(id: u64, v: &str, invoke: i64, ret: i64) -> Op {
    op(
        id,
        KvInput::Put { value: v.into() },
        invoke,
        ret,
        KvOutput::Put { version: None },
    )
}

fn get(id: u64, v: Option<&str>, invoke: i64, ret: i64) -> Op {
    op(
        id,
        KvInput::Get,
        invoke,
        ret,
        KvOutput::Get {
            value: v.map(Val::from),
            version: None,
        },
    )
}

fn cas(id: u64, expect: Option<&str>, v: &str, invoke: i64, ret: i64, ok: bool) -> Op {
    op(
        id,
        KvInput::Cas {
            expect: expect.map(Val::from),
            value: v.into(),
        },
        invoke,
        ret,
        KvOutput::Cond { ok, version: None },
    )
}

/// Each kind of contradiction, on a small history: refuted by the pass, as
/// by the brute force, with a true report whose sentence says why.
#[test]
fn each_contradiction_is_refuted_with_a_true_report() {
    let spec = KvSpec::default();
    let cases: Vec<(&str, Vec<Op>, &str)> = vec![
        (
            "a value never written",
            vec![put(0, "1", 0, 10), get(1, Some("7"), 20, 30)],
            "which no operation writes",
        ),
        (
            "a read before its write",
            vec![get(0, Some("1"), 0, 5), put(1, "1", 10, 20)],
            "which only #1 writes, but returned at 5 before #1 was invoked at 10",
        ),
        (
            "two successors of one value",
            vec![
                put(0, "1", 0, 10),
                cas(1, Some("1"), "2", 20, 30, true),
                cas(2, Some("1"), "3", 25, 40, true),
            ],
            "both need the value #0 writes directly before them",
        ),
        (
            "a chain out of real-time order",
            vec![
                put(0, "1", 0, 10),
                cas(1, Some("1"), "2", 20, 30, true),
                get(2, Some("2"), 31, 35),
                get(3, Some("1"), 40, 50),
            ],
            "yet #1 returned at 30 before #3 was invoked at 40",
        ),
        (
            "a stale read",
            vec![
                put(0, "1", 0, 10),
                put(1, "2", 20, 30),
                get(2, Some("1"), 40, 50),
            ],
            "must each come first: #0 returned at 10 before #1 was invoked at 20",
        ),
        (
            "a failed compare-and-set of the only value there is",
            vec![
                put(0, "1", 0, 10),
                cas(1, Some("1"), "9", 20, 30, false),
                put(2, "2", 40, 50),
            ],
            "needs a value other than the value #0 writes, but #0 (on that value) returned at 10 before #1 was invoked at 20",
        ),
        (
            "the initial value read after a write returned",
            vec![put(0, "1", 0, 10), get(1, None, 20, 30)],
            "comes before every write",
        ),
    ];
    let cput = op(
        2,
        KvInput::Cput {
            expect_version: 1,
            value: "3".into(),
        },
        20,
        30,
        KvOutput::Cond {
            ok: true,
            version: None,
        },
    );
    let versions = KvSpec {
        track_versions: true,
        ..KvSpec::default()
    };
    let cases: Vec<(&str, Vec<Op>, &str, &KvSpec)> = cases
        .into_iter()
        .map(|(what, ops, words)| (what, ops, words, &spec))
        .chain([(
            "more writes before a conditional put than it expects",
            vec![put(0, "1", 0, 10), put(1, "2", 0, 10), cput],
            "#2 expects exactly 1 write before its block",
            &versions,
        )])
        .collect();
    for (what, ops, words, spec) in cases {
        assert!(!brute_check(spec, &ops), "{what}");
        assert_eq!(
            pass_verdict(spec, &ops),
            Some(Verdict::NotLinearizable),
            "{what}"
        );
        // (Keys this small go to the search unless asked otherwise.)
        let pass_always = Options {
            unique_min_ops: 0,
            ..Options::default()
        };
        let r = check(spec, &ops, &pass_always);
        assert_report_is_true(spec, &ops, &r, what);
        let f = r.failure.as_ref().expect("failure");
        assert!(f.sentence.contains(words), "{what}: {}", f.sentence);
        if std::env::var_os("SHOW_REPORTS").is_some() {
            println!("{}", r.to_text());
        }
    }
}

/// A failed compare-and-set constrains only the value at its point: one
/// whose interval lies in its expected value's segment, with a write that
/// may come before its return, is linearizable; without that write it is
/// not.
#[test]
fn failed_conditional_writes_only_exclude_their_value() {
    let spec = KvSpec::default();
    let ok = vec![
        put(0, "1", 0, 10),
        get(1, Some("1"), 20, 30),
        cas(2, Some("1"), "9", 25, 40, false),
        put(3, "2", 35, 60),
        get(4, Some("2"), 70, 80),
    ];
    assert!(brute_check(&spec, &ok));
    assert_eq!(pass_verdict(&spec, &ok), Some(Verdict::Linearizable));
    let bad = vec![
        put(0, "1", 0, 10),
        get(1, Some("1"), 20, 30),
        cas(2, Some("1"), "9", 25, 40, false),
        put(3, "2", 45, 60),
        get(4, Some("1"), 41, 44),
    ];
    assert!(!brute_check(&spec, &bad));
    assert_eq!(
        check(&spec, &bad, &Options::default()).verdict,
        Verdict::NotLinearizable
    );
}

/// One random operation of a small register history: every write has a
/// value of its own; reads, compare-and-sets and conditional puts pick
/// among the written values, the initial one, absent and one nobody
/// writes; outcomes and intervals are random.
fn random_op() -> impl Strategy<Value = (u8, u8, u8, bool, u8, i64, i64)> {
    (
        0u8..5,
        0u8..8,
        0u8..4,
        any::<bool>(),
        0u8..10,
        0i64..40,
        0i64..25,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]
    #[test]
    fn random_small_histories_agree_with_the_brute_force(
        raw in proptest::collection::vec(random_op(), 1..10),
        start in prop_oneof![Just(None), Just(Some("i"))],
        versions in any::<bool>(),
    ) {
        let mut spec = KvSpec { track_versions: versions, ..KvSpec::default() };
        if let Some(v) = start {
            spec.init.insert("x".into(), overcast_lin::kv::KvState { value: Some(v.into()), version: 0 });
        }
        let pick = |k: u8| -> Option<Val> {
            match k {
                0 => None,
                1 => Some("i".into()),
                2 => Some("zz".into()),
                k => Some(format!("w{}", k - 3).into()),
            }
        };
        let ops: Vec<Op> = raw
            .iter()
            .enumerate()
            .map(|(i, &(kind, a, ev, ok, fate, call, len))| {
                let value: Val = format!("w{i}").into();
                let (input, output) = match kind {
                    0 | 1 => (KvInput::Get, KvOutput::Get { value: pick(a), version: None }),
                    2 => (KvInput::Put { value }, KvOutput::Put { version: None }),
                    3 => (KvInput::Cas { expect: pick(a), value }, KvOutput::Cond { ok, version: None }),
                    _ if versions => (
                        KvInput::Cput { expect_version: u64::from(ev), value },
                        KvOutput::Cond { ok, version: None },
                    ),
                    _ => (KvInput::Put { value }, KvOutput::Put { version: None }),
                };
                // One in five has an unknown outcome (a write) or no usable
                // result (a read).
                let unknown = fate < 2;
                Operation {
                    id: i as u64,
                    client: i as u64,
                    key: "x".into(),
                    input,
                    invoke: call,
                    ret: (!unknown || fate == 0).then_some(call + len),
                    output: (!unknown).then_some(output),
                }
            })
            .collect();
        let brute = verdict_of(brute_check(&spec, &ops));
        if let Some(v) = pass_verdict(&spec, &ops) {
            prop_assert_eq!(v, brute, "{:#?}", ops);
        }
        let r = check(&spec, &ops, &Options { parallel: false, ..Options::default() });
        prop_assert_eq!(r.verdict, brute, "{:#?}", ops);
        // The pass on keys of any size, its reports included.
        let r = check(&spec, &ops, &Options { parallel: false, unique_min_ops: 0, ..Options::default() });
        prop_assert_eq!(r.verdict, brute, "{:#?}", ops);
    }
}

/// How many cases the property test at scale runs: `LIN_SCALE_CASES`, or
/// a few (each case is a history of thousands of operations).
fn scale_cases() -> u32 {
    std::env::var("LIN_SCALE_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(24)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(scale_cases()))]
    /// At scale: one-key histories of the generator with every written
    /// value unique, 8 to 64 clients, 1,000 to 10,000 operations, the mix
    /// with or without conditional puts, clean or with one injected stale
    /// read, phantom value or lost write. The pass decides every one, and
    /// its verdict is the generator's known one: linearizable when clean,
    /// not linearizable when a violation was placed. Where the search
    /// alone decides the same history within a step budget (it answers
    /// Unknown on most), the two agree.
    ///
    /// 24 cases by default, under a second; `LIN_SCALE_CASES=1000 cargo
    /// test --release -p overcast-lin --test checker at_scale` runs more.
    #[test]
    fn at_scale_the_pass_gives_the_known_verdict(
        seed in any::<u64>(),
        clients in 8usize..=64,
        ops in 1000usize..=10_000,
        fault in 0u8..4,
        cputs in any::<bool>(),
    ) {
        let g = history(seed, ops, clients, 1, fault, 0.0, cputs, false);
        let want = if g.violation().is_some() {
            Verdict::NotLinearizable
        } else {
            Verdict::Linearizable
        };
        prop_assert!(fault == 0 || g.violation().is_some(), "seed {}: not placed", seed);
        let pass = pass_verdict(&g.spec, &g.ops);
        prop_assert_eq!(pass, Some(want), "seed {}", seed);
        if let (Some(v), true) = (pass, ops <= 3000) {
            let search = check(&g.spec, &g.ops, &search_only(200_000)).verdict;
            if search != Verdict::Unknown {
                prop_assert_eq!(search, v, "seed {}", seed);
            }
        }
    }
}
