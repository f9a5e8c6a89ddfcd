//! Every history of the corpora in `lin/tests/data` gets its `meta.expected` verdict.

use overcast_sim::lin::{check, kv::parse_kvhist, Options, Verdict};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The corpora: a missing folder fails the test rather than skipping it.
fn corpus() -> PathBuf {
    let p = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/lin/tests/data")).to_path_buf();
    assert!(
        p.is_dir(),
        "the history corpora are missing: {}",
        p.display()
    );
    p
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read corpus dir")
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|e| e == "json") {
            out.push(p);
        }
    }
}

#[test]
fn every_shared_history_gets_its_expected_verdict() {
    let dir = corpus();
    let mut all = Vec::new();
    files(&dir, &mut all);
    assert!(
        all.len() >= 120,
        "expected the whole corpus, found {} files",
        all.len()
    );
    let opts = Options {
        time_budget: Some(Duration::from_secs(60)),
        ..Options::default()
    };
    let mut wrong = Vec::new();
    for f in &all {
        let text = std::fs::read_to_string(f).expect("read history");
        let h = parse_kvhist(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let expected = match h.expected.as_deref() {
            Some("linearizable") => Verdict::Linearizable,
            Some("not_linearizable") => Verdict::NotLinearizable,
            other => panic!("{}: meta.expected is {other:?}", f.display()),
        };
        let r = check(&h.spec, &h.ops, &opts);
        if r.verdict != expected {
            wrong.push(format!(
                "{}: got {} expected {}",
                f.display(),
                r.verdict,
                expected
            ));
        }
        if r.verdict == Verdict::NotLinearizable {
            let fl = r.failure.as_ref().expect("a failure report");
            assert!(
                !fl.ops.is_empty() && fl.failing < fl.ops.len(),
                "{}",
                f.display()
            );
            assert!(!fl.sentence.is_empty());
        }
    }
    assert!(wrong.is_empty(), "wrong verdicts:\n{}", wrong.join("\n"));
}

#[test]
fn etcd_histories_agree_without_the_fast_path_and_sequentially() {
    let dir = corpus();
    let mut all = Vec::new();
    files(&dir.join("examples"), &mut all);
    let opts = Options {
        parallel: false,
        fast_path: false,
        time_budget: Some(Duration::from_secs(60)),
        ..Options::default()
    };
    for f in &all {
        let h = parse_kvhist(&std::fs::read_to_string(f).expect("read")).expect("parse");
        let r = check(&h.spec, &h.ops, &opts);
        assert_eq!(
            r.verdict.as_str(),
            h.expected.as_deref().unwrap_or("?"),
            "{}",
            f.display()
        );
    }
}
