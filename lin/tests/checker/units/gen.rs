//! Tests of `lin/src/gen.rs`.

use overcast_lin::gen::*;
use overcast_lin::kv::{parse_kvhist, to_kvhist};
use overcast_lin::{check, Options, Verdict};

#[test]
fn generated_round_trips_through_kvhist() {
    let g = generate(&GenOptions {
        seed: 3,
        ops: 200,
        clients: 6,
        keys: 3,
        unknown_writes: 0.05,
        unknown_reads: 0.05,
        ..GenOptions::default()
    });
    let text = to_kvhist(&g.spec, &g.ops, Some("linearizable"));
    let h = parse_kvhist(&text).expect("parse");
    assert_eq!(h.ops, g.ops);
    assert_eq!(h.spec.track_versions, g.spec.track_versions);
    assert_eq!(
        check(&h.spec, &h.ops, &Options::default()).verdict,
        Verdict::Linearizable
    );
}

/// Writes the benchmark histories as kvhist/1 files into $LIN_GEN_DIR.
#[test]
#[ignore]
fn write_bench_histories() {
    let Some(dir) = std::env::var_os("LIN_GEN_DIR") else {
        return;
    };
    for (name, opts) in bench_cases() {
        let stale = opts.stale_read;
        let g = generate(&opts);
        let exp = if stale {
            "not_linearizable"
        } else {
            "linearizable"
        };
        let p = std::path::Path::new(&dir).join(format!("{name}.json"));
        std::fs::write(p, to_kvhist(&g.spec, &g.ops, Some(exp))).expect("write");
    }
}
