//! The search's dead-state view (`Spec::dead_states`) on keys with appends:
//! a value that no remaining get reads a value starting with, and no
//! remaining compare-and-set expects one of, is merged into one dead state.
//! Checked against the brute force on small random histories with appends
//! (both verdicts, values that are prefixes of one another, unknown
//! outcomes), and on the key of Porcupine's c50-bad log that the search
//! could not decide alone.

use overcast_lin::brute::brute_check;
use overcast_lin::kv::{parse_kvhist, KvInput, KvOutput, KvSpec, KvState, Val};
use overcast_lin::{check, Operation, Options, Spec, Verdict};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

fn opts(explain: bool) -> Options {
    Options {
        parallel: false,
        explain,
        max_steps: Some(5_000_000),
        ..Options::default()
    }
}

/// A small one-key history with appends of one-letter values (so that
/// different orders can build the same value, and values are prefixes of
/// one another), gets, puts and compare-and-sets. Outputs come from a real
/// sequential run at random points inside each interval; then, sometimes,
/// one get's answer is replaced by another plausible value (often a
/// violation, sometimes not), and some writes lose their outcome.
fn small_with_appends(seed: u64) -> (KvSpec, Vec<Operation<KvInput, KvOutput>>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n = rng.gen_range(3..=8usize);
    let clients = rng.gen_range(2..=4u64);
    let letters = ["a", "b", "c"];
    let mut spec = KvSpec::default();
    if rng.gen_bool(0.5) {
        spec.init.insert(
            "k".into(),
            KvState {
                value: Some(Val::from("")),
                version: 0,
            },
        );
    }
    // Each client runs its operations one after another.
    let mut free_at = vec![0i64; clients as usize];
    let mut ops = Vec::new();
    for id in 0..n as u64 {
        let c = rng.gen_range(0..clients);
        let call = free_at[c as usize] + rng.gen_range(0..4i64);
        let ret = call + rng.gen_range(1..12i64);
        free_at[c as usize] = ret + 1;
        let letter = |rng: &mut ChaCha8Rng| Val::from(letters[rng.gen_range(0..3usize)]);
        let input = match rng.gen_range(0..10u32) {
            0..=3 => KvInput::Get,
            4..=7 => KvInput::Append {
                value: letter(&mut rng),
            },
            8 => KvInput::Put {
                value: letter(&mut rng),
            },
            _ => KvInput::Cas {
                expect: Some(Val::from(
                    ["", "a", "ab", "b", "ba"][rng.gen_range(0..5usize)],
                )),
                value: letter(&mut rng),
            },
        };
        ops.push(Operation {
            id,
            client: c,
            key: "k".into(),
            input,
            invoke: call,
            ret: Some(ret),
            output: None,
        });
    }
    // A sequential run in the order of random points inside the intervals.
    let mut at: Vec<(i64, usize)> = ops
        .iter()
        .enumerate()
        .map(|(i, o)| (rng.gen_range(o.invoke..=o.ret.unwrap_or(o.invoke)), i))
        .collect();
    at.sort();
    let mut state = spec.init("k");
    for &(_, i) in &at {
        let o = &mut ops[i];
        let out = match &o.input {
            KvInput::Get => KvOutput::Get {
                value: state.value.clone(),
                version: None,
            },
            KvInput::Put { .. } | KvInput::Append { .. } => KvOutput::Put { version: None },
            KvInput::Cas { expect, .. } => KvOutput::Cond {
                ok: *expect == state.value,
                version: None,
            },
            KvInput::Cput { .. } => unreachable!(),
        };
        let unknown = !matches!(o.input, KvInput::Get) && rng.gen_bool(0.15);
        if unknown && rng.gen_bool(0.5) {
            continue; // never took effect
        }
        let overcast_lin::Next::One(next) = spec.step(&state, &o.input, Some(&out)) else {
            unreachable!("a sequential run is legal");
        };
        state = next;
        if unknown {
            if rng.gen_bool(0.5) {
                o.ret = None;
            }
        } else {
            o.output = Some(out);
        }
    }
    if rng.gen_bool(0.5) {
        let gets: Vec<usize> = (0..ops.len())
            .filter(|&i| matches!(ops[i].output, Some(KvOutput::Get { .. })))
            .collect();
        if !gets.is_empty() {
            let g = gets[rng.gen_range(0..gets.len())];
            let v = ["", "a", "b", "ab", "ba", "abc", "ca", "aa"][rng.gen_range(0..8usize)];
            ops[g].output = Some(KvOutput::Get {
                value: Some(Val::from(v)),
                version: None,
            });
        }
    }
    (spec, ops)
}

#[test]
fn the_dead_state_view_agrees_with_brute_force_on_appends() {
    let (mut yes, mut no) = (0, 0);
    for seed in 0..20_000u64 {
        let (spec, ops) = small_with_appends(seed);
        let want = if brute_check(&spec, &ops) {
            yes += 1;
            Verdict::Linearizable
        } else {
            no += 1;
            Verdict::NotLinearizable
        };
        // Breadth-first, and depth-first from the start (frontier cap 0).
        for (explain, frontier_cap) in [(false, 20_000), (true, 20_000), (false, 0)] {
            let r = check(
                &spec,
                &ops,
                &Options {
                    frontier_cap,
                    ..opts(explain)
                },
            );
            assert_eq!(
                r.verdict,
                want,
                "seed {seed} explain {explain} cap {frontier_cap}: {ops:#?}\n{}",
                r.to_text()
            );
        }
    }
    assert!(yes > 4000 && no > 4000, "yes {yes} no {no}");
}

/// Porcupine's c50-bad kv log, only the operations of key "0" (230: gets,
/// appends and puts, 50 clients): its search ran out of 30 s before the
/// dead-state view; now it is decided within a step budget.
#[test]
fn key_0_of_porcupines_c50_bad_log_is_decided_alone() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/porcupine-kv/c50-bad.json"
    );
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let h = parse_kvhist(&text).expect("parse");
    let by_key: BTreeMap<&str, usize> = h.ops.iter().fold(BTreeMap::new(), |mut m, o| {
        *m.entry(o.key.as_str()).or_default() += 1;
        m
    });
    assert_eq!(by_key.get("0"), Some(&230));
    for key in by_key.keys() {
        let ops: Vec<_> = h.ops.iter().filter(|o| o.key == *key).cloned().collect();
        let r = check(
            &h.spec,
            &ops,
            &Options {
                max_steps: Some(2_000_000),
                ..opts(true)
            },
        );
        assert_eq!(
            r.verdict,
            Verdict::NotLinearizable,
            "key {key}: {:?}",
            r.unknown_reason
        );
        assert!(r.max_key_steps < 500_000, "key {key}: {}", r.max_key_steps);
    }
}
