//! Every history of the corpora in `lin/tests/data` gets its `meta.expected` verdict
//! from the checker crate alone (the workspace's `tests/lin_corpus.rs` does
//! the same through `overcast_sim::lin`), in parallel and, per key,
//! sequentially without the version-aware fast path.

use overcast_lin::{check, kv::parse_kvhist, Options, Verdict};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
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
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data"));
    let mut all = Vec::new();
    files(dir, &mut all);
    assert!(
        all.len() >= 120,
        "expected the whole corpus under {}, found {} files",
        dir.display(),
        all.len()
    );
    let mut wrong = Vec::new();
    for f in &all {
        let text = std::fs::read_to_string(f).expect("read history");
        let h = parse_kvhist(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for (parallel, fast_path) in [(true, true), (false, false)] {
            let opts = Options {
                parallel,
                fast_path,
                time_budget: Some(Duration::from_secs(60)),
                ..Options::default()
            };
            let r = check(&h.spec, &h.ops, &opts);
            if r.verdict.as_str() != h.expected.as_deref().unwrap_or("?") {
                wrong.push(format!(
                    "{} (parallel {parallel}, fast path {fast_path}): got {}, expected {:?}",
                    f.display(),
                    r.verdict,
                    h.expected
                ));
            }
            if r.verdict == Verdict::NotLinearizable {
                let fl = r.failure.as_ref().expect("a failure report");
                assert!(!fl.ops.is_empty() && fl.failing < fl.ops.len());
                assert!(!fl.sentence.is_empty());
            }
        }
    }
    assert!(wrong.is_empty(), "wrong verdicts:\n{}", wrong.join("\n"));
}
