//! Conformance scripts: every script under `scenarios/scripts/` passes; a wrong
//! expectation fails at its step with a readable line; a malformed script exits
//! 2 naming the step and the field; and no shipped expectation is vacuous (each
//! status, and each ETag comparison, turns the run into a failure at that very
//! step when it is changed).

use overcast_scenarios::script::format::Step;
use overcast_scenarios::script::{self, run_script, Script, ScriptOutcome, SCRIPT_SEED};
use std::path::{Path, PathBuf};
use std::process::Command;

fn overcast(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_overcast"))
        .args(args)
        .output()
        .expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn script_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/scripts")
}

fn shipped() -> Vec<(PathBuf, String)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(script_dir())
        .expect("scenarios/scripts exists")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 8, "scripts: {files:?}");
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("readable");
            (p, text)
        })
        .collect()
}

fn parsed(text: &str, path: &Path) -> Script {
    script::parse(text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn temp_file(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("overcast-scripts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let p = dir.join(name);
    std::fs::write(&p, text).expect("written");
    p.to_string_lossy().into_owned()
}

#[test]
fn every_shipped_script_passes_through_the_library_and_the_command() {
    let mut args = vec!["script".to_string()];
    for (path, text) in shipped() {
        let outcome = run_script(&parsed(&text, &path), SCRIPT_SEED);
        assert!(outcome.passed(), "{}: {outcome:?}", path.display());
        args.push(path.to_string_lossy().into_owned());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = overcast(&args);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        out.lines().count(),
        args.len() - 1,
        "one line per script: {out}"
    );
    assert!(out.lines().all(|l| l.contains(": passed (")), "{out}");
}

#[test]
fn scripts_pass_for_other_seeds_too() {
    for (path, text) in shipped() {
        let s = parsed(&text, &path);
        for seed in [2, 77, 12345] {
            let outcome = run_script(&s, seed);
            assert!(
                outcome.passed(),
                "{} seed {seed}: {outcome:?}",
                path.display()
            );
        }
    }
}

#[test]
fn a_script_with_one_wrong_expectation_fails_at_that_step_with_a_readable_line() {
    let text = std::fs::read_to_string(script_dir().join("seed002_optimistic.json")).unwrap();
    // Step 5 is the upload with the original ETag: 412 in truth.
    let wrong = text.replacen(
        r#""expect": {"status": 412"#,
        r#""expect": {"status": 200"#,
        1,
    );
    assert_ne!(wrong, text);
    let file = temp_file("wrong.json", &wrong);
    let (code, out, err) = overcast(&["script", &file]);
    assert_eq!(code, 1, "{out}{err}");
    let line = out.trim();
    assert!(
        line.contains("differs at step 5: put_blob samples/sample-blob.txt"),
        "{line}"
    );
    assert!(
        line.contains("If-Match: \"0x8D"),
        "the captured ETag is shown: {line}"
    );
    assert!(line.contains("expected 200"), "{line}");
    assert!(line.contains("got 412 ConditionNotMet"), "{line}");
    assert!(line.contains("status 412 is not 200"), "{line}");

    let (code, out, _) = overcast(&["script", "--json", &file]);
    assert_eq!(code, 1);
    let o: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
    assert_eq!(o["verdict"], "differs");
    assert_eq!(o["step"], 5);
    assert_eq!(o["file"], file.as_str());
}

#[test]
fn a_malformed_script_exits_2_naming_the_step_and_the_field() {
    let text = std::fs::read_to_string(script_dir().join("seed002_optimistic.json")).unwrap();
    let cases = [
        (
            text.replacen(
                r#""error_code": "ConditionNotMet""#,
                r#""error_kode": "ConditionNotMet""#,
                1,
            ),
            "step 5, field `put_blob.expect.error_kode`",
            "error_kode",
        ),
        (
            text.replacen(r#""if_match": "$original""#, r#""if_match": "$origin""#, 1),
            "step 5, field `put_blob.if_match`",
            "$origin is used before any step captures it",
        ),
        (
            text.replacen(r#""status": 201"#, r#""status": "201""#, 1),
            "step 1, field `put_blob.expect.status`",
            "invalid type",
        ),
        (
            text.replacen(r#"{"get_blob""#, r#"{"get_blop""#, 1),
            "step 2",
            "get_blop",
        ),
        (
            text.replacen("overcast-script/1", "overcast-script/9", 1),
            "field `format`",
            "is not `overcast-script/1`",
        ),
    ];
    for (i, (bad, place, what)) in cases.iter().enumerate() {
        assert_ne!(bad, &text, "case {i} changed nothing");
        let file = temp_file(&format!("malformed{i}.json"), bad);
        let (code, out, err) = overcast(&["script", &file]);
        assert_eq!(code, 2, "case {i}: {out}{err}");
        assert!(err.contains(place), "case {i}: {err:?} lacks {place:?}");
        assert!(err.contains(what), "case {i}: {err:?} lacks {what:?}");
    }
    // Exit 2 wins over a differing script.
    let good = script_dir().join("seed002_optimistic.json");
    let wrong = temp_file(
        "wrong2.json",
        &text.replacen(r#""status": 412"#, r#""status": 200"#, 1),
    );
    let bad = temp_file("bad2.json", &cases[0].0);
    let (code, _, _) = overcast(&["script", good.to_str().unwrap(), &wrong, &bad]);
    assert_eq!(code, 2);
}

/// The request steps of a script with their expectation, as mutable JSON.
fn request_steps(doc: &serde_json::Value) -> Vec<(usize, String)> {
    doc["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .enumerate()
        .filter_map(|(i, step)| {
            let (kind, body) = step.as_object()?.iter().next()?;
            body.get("expect").map(|_| (i, kind.clone()))
        })
        .collect()
}

fn run_doc(doc: &serde_json::Value) -> ScriptOutcome {
    let text = serde_json::to_string(doc).expect("serialises");
    script::run_text(&text).expect("still well-formed")
}

fn fails_at(outcome: &ScriptOutcome, step: usize) -> bool {
    matches!(outcome, ScriptOutcome::Differs(d) if d.step == step)
}

#[test]
fn changing_any_shipped_status_or_etag_comparison_fails_the_script_at_that_step() {
    let mut mutants = 0;
    for (path, text) in shipped() {
        let doc: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        for (i, kind) in request_steps(&doc) {
            let expect = &doc["steps"][i][&kind]["expect"];
            if let Some(status) = expect["status"].as_u64() {
                let mut m = doc.clone();
                m["steps"][i][&kind]["expect"]["status"] = (status + 1).into();
                let outcome = run_doc(&m);
                assert!(
                    fails_at(&outcome, i + 1),
                    "{} step {}: {outcome:?}",
                    path.display(),
                    i + 1
                );
                mutants += 1;
            }
            if let Some(etag) = expect["etag"].as_str() {
                let flipped = if let Some(n) = etag.strip_prefix("same as ") {
                    format!("different from {n}")
                } else if let Some(n) = etag.strip_prefix("different from ") {
                    format!("same as {n}")
                } else if etag == "fresh" {
                    "absent".to_string()
                } else {
                    continue;
                };
                let mut m = doc.clone();
                m["steps"][i][&kind]["expect"]["etag"] = flipped.into();
                let outcome = run_doc(&m);
                assert!(
                    fails_at(&outcome, i + 1),
                    "{} step {}: {outcome:?}",
                    path.display(),
                    i + 1
                );
                mutants += 1;
            }
        }
    }
    assert!(mutants > 100, "only {mutants} mutants");
}

/// Runs shipped script `name` with seeded bug `bug` on; returns the difference.
fn differs_with_bug(name: &str, bug: &str) -> overcast_scenarios::script::Difference {
    let path = script_dir().join(name);
    let mut s = parsed(&std::fs::read_to_string(&path).unwrap(), &path);
    s.bugs = vec![bug.into()];
    match run_script(&s, SCRIPT_SEED) {
        ScriptOutcome::Differs(d) => d,
        other => panic!("{name} with {bug}: {other:?}"),
    }
}

#[test]
fn seeded_model_bugs_make_the_scripts_that_pin_them_fail() {
    // skip_if_match: the upload with the stale original ETag succeeds.
    let d = differs_with_bug("seed002_optimistic.json", "skip_if_match");
    assert_eq!(d.step, 5, "{d:?}");
    assert!(d.got.starts_with("200"), "{d:?}");
    // etag_reuse: the re-created blob gets an ETag it had before.
    let d = differs_with_bug("blob_write_conditions_absent.json", "etag_reuse");
    assert_eq!(d.step, 12, "{d:?}");
    assert!(d.why.contains("is not fresh"), "{d:?}");
}

#[test]
fn crash_steps_really_restart_the_server_from_its_log() {
    let path = script_dir().join("blob_recovery.json");
    let s = parsed(&std::fs::read_to_string(&path).unwrap(), &path);
    assert_eq!(
        s.steps
            .iter()
            .filter(|s| matches!(s, Step::CrashServer(_)))
            .count(),
        2
    );
    // Restart 1 replays the first put; restart 2 replays it, the second put and the delete.
    assert_eq!(
        run_script(&s, SCRIPT_SEED),
        ScriptOutcome::Passed {
            steps: 12,
            restarts: 2,
            replayed: 4
        }
    );
}

#[test]
fn the_readme_example_script_passes() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README");
    let section = readme
        .find("### The format (`overcast-script/1`)")
        .expect("the format section");
    let start = section + readme[section..].find("```json\n").expect("an example") + 8;
    let end = start + readme[start..].find("```").expect("its end");
    let outcome = script::run_text(&readme[start..end]).expect("well-formed");
    assert!(outcome.passed(), "{outcome:?}");
}
