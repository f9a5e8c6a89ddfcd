//! The failure report is true and deterministic: its sub-history is itself
//! not linearizable from the start state it prints, it is minimal under
//! single-operation removal, it holds the injected stale read whenever that
//! read alone breaks the history, and it does not depend on the machine's
//! load.

use overcast_lin::gen::{generate, GenOptions, Generated};
use overcast_lin::kv::{KvInput, KvOutput, KvSpec, KvState, Val, OVERWRITTEN};
use overcast_lin::{check, Failure, Operation, Options, Report, Spec, Verdict};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

type Op = Operation<KvInput, KvOutput>;

/// Sequential, without the fast path (so the operation named is the first
/// one the search cannot place) and without explanations (fast).
fn plain() -> Options {
    Options {
        parallel: false,
        fast_path: false,
        explain: false,
        max_steps: Some(100_000_000),
        ..Options::default()
    }
}

fn deterministic() -> Options {
    Options {
        parallel: false,
        max_steps: Some(100_000_000),
        ..Options::default()
    }
}

/// The id of the operation a failure names.
fn named(f: &Failure) -> u64 {
    f.ops[f.failing].id
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

/// The state `f.start_state` describes, found among the states the history
/// can produce (any value written, absent, or the search's stand-in for a
/// value no remaining operation reads, at any version up to the number of
/// operations).
fn start_state(spec: &KvSpec, ops: &[Op], f: &Failure) -> KvState {
    let text = f
        .start_state
        .split(" (one of ")
        .next()
        .unwrap_or(&f.start_state);
    // The search's canonical state: a value no later operation reads.
    let mut values: Vec<Option<Val>> = vec![None, Some(Val::from(OVERWRITTEN))];
    for o in ops {
        if let KvInput::Put { value } | KvInput::Cas { value, .. } | KvInput::Cput { value, .. } =
            &o.input
        {
            values.push(Some(value.clone()));
        }
    }
    let versions = if spec.track_versions {
        0..=ops.len() as u64
    } else {
        0..=0
    };
    for version in versions {
        for value in &values {
            let s = KvState {
                value: value.clone(),
                version,
            };
            if spec.describe_state(&s) == text {
                return s;
            }
        }
    }
    panic!("no state is described as {text:?}")
}

/// The history `ops` of one key, from `start`.
fn from_start(spec: &KvSpec, key: &str, start: &KvState) -> KvSpec {
    let mut s = spec.clone();
    s.init.insert(key.to_string(), start.clone());
    s
}

/// Checks everything the report of a bad generated history promises.
fn assert_explanation_is_true(g: &Generated, what: &str) -> Report {
    let r = check(&g.spec, &g.ops, &deterministic());
    assert_eq!(r.verdict, Verdict::NotLinearizable, "{what}");
    let f = r.failure.clone().expect("a failure");
    assert!(f.sub_history_checked, "{what}: {}", r.to_text());
    let x = named(&f);
    // The sentence names the same operation as the sub-history.
    assert!(
        f.sentence.starts_with(&format!("operation #{x} ")),
        "{what}"
    );
    let sub = sub_history(&g.ops, &f);
    let start = start_state(&g.spec, &g.ops, &f);
    let spec = from_start(&g.spec, &f.key, &start);
    // The sub-history is not linearizable from its start, and the search of
    // it cannot place the operation named.
    let again = check(&spec, &sub, &plain());
    assert_eq!(
        again.verdict,
        Verdict::NotLinearizable,
        "{what}: {}",
        r.to_text()
    );
    assert_eq!(named(again.failure.as_ref().expect("failure")), x, "{what}");
    // Minimal: without any one other operation, it is linearizable, or
    // another operation is the one that cannot be placed; except the writes
    // kept because they give what the named operation needs.
    let xo = sub.iter().find(|o| o.id == x).expect("named op");
    let gives = |o: &Op| {
        !spec.is_read_only(&o.input, o.output.as_ref())
            && !spec.step(&start, &xo.input, xo.output.as_ref()).is_legal()
            && {
                let mut any = false;
                spec.step(&start, &o.input, o.output.as_ref())
                    .for_each(|s| any |= spec.step(&s, &xo.input, xo.output.as_ref()).is_legal());
                any
            }
    };
    for (v, o) in f.ops.iter().zip(&sub) {
        if v.id == x || gives(o) {
            continue;
        }
        let less: Vec<Op> = sub.iter().filter(|o| o.id != v.id).cloned().collect();
        let r2 = check(&spec, &less, &plain());
        assert_ne!(r2.verdict, Verdict::Unknown, "{what}");
        if let Some(f2) = &r2.failure {
            assert_ne!(
                named(f2),
                x,
                "{what}: #{} could be left out of\n{}",
                v.id,
                r.to_text()
            );
        }
    }
    // The injected stale read is in it whenever that read alone breaks the
    // history.
    if let Some(id) = g.stale_read {
        let without: Vec<Op> = g.ops.iter().filter(|o| o.id != id).cloned().collect();
        if check(&g.spec, &without, &plain()).verdict == Verdict::Linearizable {
            assert!(
                f.ops.iter().any(|o| o.id == id),
                "{what}: stale read #{id} missing from\n{}",
                r.to_text()
            );
        }
    }
    r
}

fn bad(seed: u64, ops: usize, clients: usize, versions: bool) -> Generated {
    generate(&GenOptions {
        seed,
        ops,
        clients,
        keys: 1,
        versions,
        unknown_writes: 0.02,
        stale_read: true,
        ..GenOptions::default()
    })
}

#[test]
fn explanations_of_random_bad_histories_are_true_and_minimal() {
    let mut checked = 0;
    for seed in 0..60u64 {
        let ops = [20, 60, 150][(seed % 3) as usize];
        let clients = [3, 8, 16][(seed / 3 % 3) as usize];
        let versions = seed % 2 == 0;
        let g = bad(seed, ops, clients, versions);
        if g.stale_read.is_none() {
            continue;
        }
        let what = format!("seed {seed} ops {ops} clients {clients} versions {versions}");
        assert_explanation_is_true(&g, &what);
        checked += 1;
    }
    assert!(checked > 40, "only {checked} bad histories");
}

#[test]
fn explanations_at_48_clients_are_true_and_minimal() {
    // Wide histories: the search drops configurations doomed by an
    // overwritten value, so the operation where the last one died is often
    // a write that can be placed; the report must still name the stale read.
    let mut checked = 0;
    for seed in 0..8u64 {
        let versions = seed % 2 == 1;
        let g = bad(seed, 400, 48, versions);
        if g.stale_read.is_none() {
            continue;
        }
        let what = format!("seed {seed} ops 400 clients 48 versions {versions}");
        assert_explanation_is_true(&g, &what);
        checked += 1;
    }
    assert!(checked >= 6, "only {checked} bad histories");
}

#[test]
fn explanations_name_the_stale_read_at_24_to_48_clients_and_at_10k_ops() {
    for (ops, clients) in [(1000, 48), (1000, 32), (1000, 24), (10_000, 8)] {
        let g = generate(&GenOptions {
            seed: 1,
            ops,
            clients,
            versions: false,
            unknown_writes: 0.01,
            stale_read: true,
            ..GenOptions::default()
        });
        let id = g.stale_read.expect("a stale read was injected");
        let what = format!("{ops} ops {clients} clients");
        let r = assert_explanation_is_true(&g, &what);
        let f = r.failure.expect("failure");
        assert_eq!(named(&f), id, "{what}: {}", f.sentence);
    }
}

#[test]
fn the_same_history_gets_the_same_report_on_a_busy_machine() {
    let g = generate(&GenOptions {
        seed: 1,
        ops: 1000,
        clients: 24,
        versions: false,
        unknown_writes: 0.01,
        stale_read: true,
        ..GenOptions::default()
    });
    let quiet = check(&g.spec, &g.ops, &deterministic());
    let stop = Arc::new(AtomicBool::new(false));
    let busy: Vec<_> = (0..4)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                }
                x
            })
        })
        .collect();
    let loaded = std::thread::spawn({
        let g = g.clone();
        move || check(&g.spec, &g.ops, &deterministic())
    })
    .join()
    .expect("check on a busy machine");
    stop.store(true, Ordering::Relaxed);
    for b in busy {
        let _ = b.join();
    }
    assert_eq!(quiet.verdict, Verdict::NotLinearizable);
    assert_eq!(loaded.verdict, quiet.verdict);
    assert_eq!(loaded.failure, quiet.failure);
    assert_eq!(loaded.max_key_steps, quiet.max_key_steps);
}
