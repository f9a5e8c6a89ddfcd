//! Conformance scripts: every script under `scenarios/scripts/` passes; a wrong
//! expectation fails at its step with a readable line; a malformed script exits
//! 2 naming the step and the field; and no shipped expectation is vacuous (each
//! status, and each ETag comparison, turns the run into a failure at that very
//! step when it is changed).

use overcast_scenarios::conformance::format::Step;
use overcast_scenarios::conformance::{self, run_script, Script, ScriptOutcome, SCRIPT_SEED};
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
    conformance::parse(text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
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
    conformance::run_text(&text).expect("still well-formed")
}

fn fails_at(outcome: &ScriptOutcome, step: usize) -> bool {
    matches!(outcome, ScriptOutcome::Differs(d) if d.step == step)
}

/// Asserts that the script `doc` (from `path`) with its request step `i`
/// (of `kind`) expecting `value` for `field` fails at that step.
fn assert_mutant_fails(
    doc: &serde_json::Value,
    i: usize,
    kind: &str,
    field: &str,
    value: serde_json::Value,
    path: &std::path::Path,
) {
    let mut m = doc.clone();
    m["steps"][i][kind]["expect"][field] = value;
    let outcome = run_doc(&m);
    assert!(
        fails_at(&outcome, i + 1),
        "{} step {} {field}: {outcome:?}",
        path.display(),
        i + 1
    );
}

#[test]
fn changing_any_shipped_status_or_etag_comparison_fails_the_script_at_that_step() {
    let mut mutants = 0;
    for (path, text) in shipped() {
        let doc: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        for (i, kind) in request_steps(&doc) {
            let expect = &doc["steps"][i][&kind]["expect"];
            if let Some(status) = expect["status"].as_u64() {
                assert_mutant_fails(&doc, i, &kind, "status", (status + 1).into(), &path);
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
                assert_mutant_fails(&doc, i, &kind, "etag", flipped.into(), &path);
                mutants += 1;
            }
        }
    }
    assert!(mutants > 100, "only {mutants} mutants");
}

/// Runs shipped script `name` with seeded bug `bug` on; returns the difference.
fn differs_with_bug(name: &str, bug: &str) -> overcast_scenarios::conformance::Difference {
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
    assert!(d.got.starts_with("201"), "{d:?}");
    // etag_reuse: the re-created blob gets an ETag it had before.
    let d = differs_with_bug("blob_write_conditions_absent.json", "etag_reuse");
    assert_eq!(d.step, 12, "{d:?}");
    assert!(d.why.contains("is not fresh"), "{d:?}");
}

#[test]
fn seeded_retry_bugs_make_the_sdk_retries_script_fail_on_its_waits() {
    // The unmodified model passes it (every shipped script does); each bug
    // breaks the step whose waits SPEC §4.1 / §4.2 fixes.
    for (bug, step, why) in [
        (
            "ignore_retry_after",
            3,
            "wait 1 before attempt 2 was 1 ms, not 100 ms",
        ),
        (
            "retry_after_stretched",
            3,
            "wait 1 before attempt 2 was 1000 ms, not 100 ms",
        ),
        (
            "retry_with_on_gone_backoff",
            7,
            "wait 2 before attempt 3 was 1000 ms, not 11..14 ms",
        ),
        (
            "gone_backoff_stretched",
            9,
            "wait 2 before attempt 3 was 10000 ms, not 1000 ms",
        ),
    ] {
        let d = differs_with_bug("sdk_retries.json", bug);
        assert_eq!(d.step, step, "{bug}: {d:?}");
        assert!(d.why.contains(why), "{bug}: {d:?}");
    }
    // A write re-sent after a 408 is caught by its attempts.
    let d = differs_with_bug("sdk_retries.json", "retry_write_after_timeout");
    assert_eq!(d.step, 18, "{d:?}");
    // A write whose connect was refused, told unknown instead of retried.
    let d = differs_with_bug("sdk_retries.json", "not_sent_taken_as_unknown");
    assert_eq!(d.step, 62, "{d:?}");
    assert!(d.why.contains("the outcome is unknown"), "{d:?}");
    // A cancel of a write in flight taken for its timeout: not a cancel.
    let d = differs_with_bug("sdk_retries.json", "retry_after_cancel");
    assert_eq!(d.step, 65, "{d:?}");
    assert!(d.why.contains("the call was not cancelled"), "{d:?}");
}

#[test]
fn seeded_region_bugs_make_the_sdk_regions_script_fail_where_a_region_is_marked() {
    // A read's 403/1008 in west must send it to east, west marked; both bugs
    // send it back to west (the policy's route, or the client's list).
    for bug in ["removed_region_retried", "region_retry_loop"] {
        let d = differs_with_bug("sdk_regions.json", bug);
        assert_eq!(d.step, 27, "{bug}: {d:?}");
        assert!(
            d.why
                .contains("the attempts went to [west, west], not [west, east]"),
            "{bug}: {d:?}"
        );
    }
    // The waits of the failover and of the session loop: each slip breaks
    // the first step that pins its row's waits.
    for (bug, step, why) in [
        (
            "failover_waits_stretched",
            27,
            "wait 1 before attempt 2 was 10000 ms, not 1000 ms",
        ),
        (
            "read_fails_over_at_once",
            27,
            "wait 1 before attempt 2 was 0 ms, not 1000 ms",
        ),
        ("session_loop_waits_stretched", 31, "7 attempt(s), not 16"),
    ] {
        let d = differs_with_bug("sdk_regions.json", bug);
        assert_eq!(d.step, step, "{bug}: {d:?}");
        assert!(d.why.contains(why), "{bug}: {d:?}");
    }
    // A write sent without an answer is re-sent: the 408 becomes a 200.
    let d = differs_with_bug("sdk_regions.json", "retry_write_after_timeout");
    assert_eq!(d.step, 40, "{d:?}");
    assert!(d.why.contains("the outcome is known"), "{d:?}");
}

#[test]
fn changing_any_shipped_regions_expectation_fails_the_script_at_that_step() {
    let mut mutants = 0;
    for (path, text) in shipped() {
        let doc: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        let Some(account) = doc["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .find_map(|s| s.get("account"))
        else {
            continue;
        };
        let names: Vec<&str> = account["regions"]
            .as_array()
            .expect("regions")
            .iter()
            .map(|r| r.as_str().expect("a name"))
            .collect();
        for (i, kind) in request_steps(&doc) {
            let Some(regions) = doc["steps"][i][&kind]["expect"]["regions"].as_array() else {
                continue;
            };
            // The last attempt's region: the account's next one instead.
            let mut list = regions.clone();
            let last = list.pop().expect("one region per attempt");
            let at = names
                .iter()
                .position(|n| Some(*n) == last.as_str())
                .expect("a region");
            list.push(names[(at + 1) % names.len()].into());
            assert_mutant_fails(&doc, i, &kind, "regions", list.into(), &path);
            mutants += 1;
        }
    }
    assert!(mutants >= 20, "only {mutants} mutants");
}

#[test]
fn an_account_step_is_checked_before_the_run() {
    let base = std::fs::read_to_string(script_dir().join("sdk_regions.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&base).unwrap();
    for (step, path, value, message) in [
        (
            1,
            "account.multi_write",
            serde_json::json!({"account": {"regions": ["west", "east"], "multi_write": true}}),
            "single-write accounts only",
        ),
        (
            1,
            "account.stale_write_region",
            serde_json::json!({"account": {"regions": ["west", "east"], "stale_write_region": "west"}}),
            "after the first",
        ),
        (
            3,
            "account",
            serde_json::json!({"account": {"regions": ["west", "east"]}}),
            "one account per script",
        ),
        (
            26,
            "inject.region",
            serde_json::json!({"inject": {"status": 403, "sub_status": 1008, "region": "south"}}),
            "`south` is not a region of the account",
        ),
        (
            26,
            "inject.retry_after_ms",
            serde_json::json!({"inject": {"status": 429, "retry_after_ms": 10}}),
            "without x-ms-retry-after-ms",
        ),
        (
            26,
            "inject.status",
            serde_json::json!({"inject": {"status": "connection_error", "sub_status": 3}}),
            "a connection error has no answer",
        ),
    ] {
        let mut m = doc.clone();
        m["steps"][step - 1] = value;
        let e = conformance::run_text(&serde_json::to_string(&m).unwrap()).expect_err("malformed");
        assert_eq!(e.step, Some(step), "{e}");
        assert_eq!(e.field, path, "{e}");
        assert!(e.message.contains(message), "{e}");
    }
    // A regions expectation without an account, and one that counts other
    // attempts than the step's.
    let retries = std::fs::read_to_string(script_dir().join("sdk_retries.json")).unwrap();
    let mut m: serde_json::Value = serde_json::from_str(&retries).unwrap();
    m["steps"][2]["cosmos_read"]["expect"]["regions"] = serde_json::json!(["west"]);
    let e = conformance::run_text(&m.to_string()).expect_err("malformed");
    assert!(e.message.contains("after an `account` step"), "{e}");
    let mut m = doc.clone();
    m["steps"][1]["cosmos_create"]["expect"]["regions"] = serde_json::json!(["west"]);
    let e = conformance::run_text(&m.to_string()).expect_err("malformed");
    assert!(e.message.contains("one per attempt"), "{e}");
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

/// The book's page of the script format, whose examples these tests run.
fn format_page() -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/reference/script-format.md"),
    )
    .expect("the script format's page")
}

#[test]
fn the_format_pages_example_script_passes() {
    let readme = format_page();
    let section = readme
        .find("# The script format (`overcast-script/1`)")
        .expect("the format page's title");
    let start = section + readme[section..].find("```json\n").expect("an example") + 8;
    let end = start + readme[start..].find("```").expect("its end");
    let outcome = conformance::run_text(&readme[start..end]).expect("well-formed");
    assert!(outcome.passed(), "{outcome:?}");
}

/// The state a lease cell starts from (its column), when the cell has one to check.
type Cell = (String, Option<&'static str>);

/// Every cell of SPEC §2.2–§2.7 and every row of §1.2 and §1.3 that the shipped
/// scripts must reach (by their `covers` tags), with the lease state a cell's
/// step must start from, when the cell names one.
fn required_cells() -> Vec<Cell> {
    let mut cells: Vec<Cell> = Vec::new();
    let mut add = |name: &str, state: Option<&'static str>| cells.push((name.to_string(), state));
    const STATES: [&str; 5] = ["available", "leased", "breaking", "broken", "expired"];
    for row in [
        "acquire none",
        "acquire A",
        "acquire B",
        "renew A",
        "renew B",
        "change A to C",
        "change B to A",
        "change B to C",
        "release A",
        "release B",
        "break",
    ] {
        for state in STATES {
            add(&format!("2.3 {row} / {state}"), Some(state));
        }
    }
    // §2.6: the write forgot the id, so the renew finds no lease.
    add("2.3 renew A / expired after a write", Some("available"));
    for (case, state) in [
        ("fixed / absent", "leased"),
        ("fixed / 0", "leased"),
        ("fixed / p", "leased"),
        ("infinite / absent", "leased"),
        ("infinite / 0", "leased"),
        ("infinite / p", "leased"),
        ("breaking / absent", "breaking"),
        ("breaking / 0", "breaking"),
        ("breaking / p shorter", "breaking"),
        ("breaking / p longer", "breaking"),
        ("no acquire before the break takes effect", "breaking"),
        ("writes with A pass while breaking", "breaking"),
        ("broken at the break time", "broken"),
    ] {
        add(&format!("2.4 {case}"), Some(state));
    }
    for op in ["write", "read"] {
        add(&format!("2.5 {op} none / available"), Some("available"));
        add(&format!("2.5 {op} id / available"), Some("available"));
        for state in &STATES[1..] {
            for id in ["none", "A", "B"] {
                add(&format!("2.5 {op} {id} / {state}"), Some(state));
            }
        }
    }
    add(
        "2.5 the lease is checked before If-None-Match: *",
        Some("leased"),
    );
    add("2.5 a write with A keeps breaking", Some("breaking"));
    add("2.5 creating a blob with a lease id", Some("available"));
    for name in [
        "2.2 acquire without a duration",
        "2.2 duration out of range",
        "2.2 proposed id not a GUID",
        "2.2 lease id required",
        "2.2 change needs a proposed id",
        "2.2 break period out of range",
        "2.2 only a re-acquire changes the duration",
        "2.2 the blob must exist",
        "2.2 lease actions take the condition headers",
        "2.6 a write clears an expired lease",
        "2.6 a write clears a broken lease",
        "2.6 a write with A keeps the lease",
        "2.6 deleting the blob destroys its lease",
        "2.7 the same action table",
        "2.7 durations and break periods validated",
        "2.7 delete of a locked container without an id",
        "2.7 blob writes ignore the container lease",
        "2.7 deleting a container destroys its blobs' leases",
        "2.7 a missing container is 404",
    ] {
        add(name, None);
    }
    for (name, state) in [
        (
            "2.7 other operations need no id on a locked container",
            "leased",
        ),
        ("2.7 another operation with a wrong id", "leased"),
        (
            "2.7 another operation with an id while none is held",
            "broken",
        ),
        ("2.7 delete of a locked container with a wrong id", "leased"),
        ("2.7 delete with an id while none is held", "broken"),
        (
            "2.7 delete of an unlocked container without an id",
            "broken",
        ),
        ("2.7 delete of a locked container with its id", "leased"),
        ("2.7 Set Metadata keeps an expired lease", "expired"),
    ] {
        add(name, Some(state));
    }
    for name in [
        "1.3 read of a missing item is 404",
        "1.3 create of a new id is 201",
        "1.3 create of an existing id is 409",
        "1.3 read with if-none-match equal is 304",
        "1.3 read with if-none-match other is 200",
        "1.3 replace with if-match equal is applied",
        "1.3 replace with if-match other is 412",
        "1.3 replace without if-match is applied",
        "1.3 of two updates from one version, one wins",
        "1.3 every update regenerates _etag",
        "1.3 upsert with if-match other on an existing item is 412",
        "1.3 upsert with if-match equal on an existing item replaces",
        "1.3 upsert with if-match on a missing item creates",
        "1.3 delete with if-match other is 412",
        "1.3 delete with if-match equal is applied",
        "1.3 delete of a missing item is 404",
        "1.3 delete of a missing item with if-match is 404",
        "1.3 replace of a missing item is 404",
        "1.3 replace of a missing item with if-match is 404",
        "1.3 a batch commits all its operations",
        "1.3 batch operations take if-match",
        "1.3 a failed batch commits nothing",
        "1.2 indexes carry ETags",
        "1.2 synonym maps carry ETags",
        "1.2 the ETag changes on every update",
        "1.2 a mismatched If-Match is 412",
        "1.2 If-Match with the current ETag is applied",
        "1.2 If-Match: * on an existing resource is applied",
        "1.2 If-Match on a missing resource is 412",
        "1.2 If-None-Match: * on an existing resource is 412",
        "1.2 If-None-Match: * creates a missing resource",
        "1.2 If-None-Match with the current ETag is 412",
        "1.2 If-None-Match with another ETag is applied",
        "1.2 no header: last writer wins",
        "1.2 a definition never sent has a blank ETag",
        "1.2 the SDK sends If-Match only with onlyIfUnchanged",
        "1.2 seed 000: without onlyIfUnchanged the stale update is 400",
        "1.2 seed 000: with onlyIfUnchanged the stale update is 412",
        "1.2 an update that drops an index field is 400",
        "1.2 a synonym map's rules may be replaced freely",
        "1.2 an update while another is applied is 409",
        "1.2 DELETE with the current ETag is applied",
        "1.2 DELETE of a missing resource is 404",
        "1.2 ETags are never reused",
    ] {
        add(name, None);
    }
    // §5.2: every row of the push table in both columns, and the rules around it.
    for row in [
        "MODIFIED",
        "NOT_MODIFIED",
        "REPOSITORY_ERROR",
        "REQUEUE",
        "UNSPECIFIED",
        "no queue",
        "queue q",
    ] {
        for column in ["absent", "present"] {
            add(&format!("5.2 {row} / {column}"), None);
        }
    }
    for name in [
        "5.2 hashes / absent",
        "5.2 hashes equal / present",
        "5.2 hashes different / present",
        "5.2 hashes different / NEW_ITEM stays",
        "5.2 type with a hash is 400",
        "5.2 repositoryError without REPOSITORY_ERROR is 400",
        "5.2 NOT_MODIFIED unreserves",
        "5.2 MODIFIED keeps the reservation",
        "5.2 hash pushes keep the reservation",
        "5.2 REPOSITORY_ERROR waits for its backoff",
        "5.2 the backoff doubles",
        "5.2 REQUEUE of an unreserved item is refused",
        "5.2 relabelling a reserved item keeps its reservation",
        "5.3 limit defaults to 20",
        "5.3 limit above 100 is 400",
        "5.3 limit 100 is accepted",
        "5.3 queue defaults to default",
        "5.3 empty statuses = all",
        "5.3 status filter",
        "5.3 priority ERROR > MODIFIED > NEW_ITEM > ACCEPTED",
        "5.3 oldest first within a status",
        "5.3 a poll returns min(limit, eligible)",
        "5.3 polled items are reserved",
        "5.3 a lost poll still reserved its items",
        "5.3 returned items carry version, payload, status, queue",
        "5.3 reservation ends after 4 h",
        "5.3 REQUEUE goes to the back of its status",
        "5.4 index inserts an absent item ACCEPTED",
        "5.4 index needs a greater version (bytewise)",
        "5.4 a stale index changes nothing",
        "5.4 index accepts and unreserves",
        "5.4 index sets the queue",
        "5.4 unreserve frees its queue's items",
        "5.4 unreserve leaves other queues",
        "5.4 deleteQueueItems answers an operation not yet done",
        "5.4 getOperation shows it done",
        "5.4 deleteQueueItems deletes the items labelled at its start",
        "5.4 an item labelled after the start survives",
        "5.4 delete needs a greater version",
        "5.4 delete of a missing item is 404",
        "5.4 a deleted item is not polled",
        "5.4 re-indexing a soft-deleted item needs a greater version",
        "5.4 after the soft delete the version no longer applies",
        "5.4 argument limits are 400: queue",
        "5.4 argument limits are 400: payload",
        "5.4 argument limits are 400: hash",
        "5.4 argument limits are 400: version",
        "3.1 only the latest version of an item is in the feed",
        "3.1 deletes are not captured",
        "3.1 changes come in modification order",
        "3.2 GetFeedRanges lists one range per physical partition",
        "3.2 start from the beginning",
        "3.2 start from now",
        "3.2 start from a point in time",
        "3.2 start from a continuation token",
        "3.2 a partition key's feed range",
        "3.2 no new changes is 304",
        "3.2 the page-size hint caps a page",
        "3.2 a batch may exceed the page-size hint",
        "3.2 a continuation token never expires",
        "3.2 a split range answers 410 with sub-status 1002/1007 and its children",
        "3.2 the children resume from the parent's continuation",
    ] {
        add(name, None);
    }
    // SPEC §4.1 row by row (and sub-status by sub-status), §4.2's 429
    // budget, §4.3's unknown outcome and §4.4's region list, as the SDK
    // scripts pin them (`sdk_retries`, `sdk_retry_budgets`, `sdk_regions`).
    for name in [
        "4.1 400 not retried",
        "4.1 401 not retried",
        "4.1 403 not retried",
        "4.1 403/3 failover to the write region",
        "4.1 403/1008 read: next preferred region, the region marked unavailable",
        "4.1 403/1008 single-write write: not retried",
        "4.1 403/1008 strong read: back to the write region",
        "4.1 404 not retried",
        "4.1 404/1002 session loop in the region",
        "4.1 404/1002 then the write region",
        "4.1 404/1002 at most 2 retries on the write region",
        "4.1 408 from the server: never retried",
        "4.1 408 write: not re-sent, outcome unknown",
        "4.1 408 read timeout: retried as a 410",
        "4.1 408 write not sent: retried as a 410",
        "R1 cancelled with an attempt in flight: outcome unknown, not re-sent",
        "R1 cancelled while waiting to retry: not run, not re-sent",
        "4.1 409 not retried",
        "4.1 410 transport retries: at once, then 1 s doubling",
        "4.1 410 after its 30 s window: 503",
        "4.1 410/1007 retried like 410",
        "4.1 410/1008 retried like 410",
        "4.1 410/1000 retried twice, the third is 503",
        "4.1 410/1022 503 at once",
        "4.1 410/1022 then the 503's cross-region retry",
        "4.1 410/1002 retried like 410",
        "4.1 412 not retried",
        "4.1 413 not retried",
        "4.1 429 retried after the retry-after",
        "4.1 429/3092 single-write: a plain 429",
        "4.1 449 at once, then 10 ms doubling with a salt",
        "4.1 449 after its 30 s window: 449",
        "4.1 500 read: one cross-region retry",
        "4.1 500 write: not retried",
        "4.1 503 read: one retry on the next preferred region",
        "4.1 503 read: one retry only",
        "4.1 503 write on a single-write account: not retried",
        "4.1 503 with one region: not retried",
        "4.1 503 strong read: one effective region, not retried",
        "4.1 503 transport-generated on a write: outcome unknown",
        "4.1 HttpRequestException read: a 1 s wait, the next region, the region marked unavailable",
        "4.2 each delay is the retry-after",
        "4.2 no retry-after waits 5 s",
        "4.2 at most 9 retries",
        "4.2 at most 30 s of waits",
        "4.2 writes are retried on 429 too",
        "4.3 a timed-out write's outcome is unknown",
        "4.4 an unavailable region moves to the end of the list",
        "4.4 an unavailable region is back after 5 min",
    ] {
        add(name, None);
    }
    cells
}

/// The `covers` tags of one step (its expectation's, its alternatives' and its
/// batch results'), with the step's index.
fn covers_of(doc: &serde_json::Value) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, kind) in request_steps(doc) {
        let expect = &doc["steps"][i][&kind]["expect"];
        let mut tags = |e: &serde_json::Value| {
            for t in e["covers"].as_array().into_iter().flatten() {
                out.push((i, t.as_str().expect("a tag is a string").to_string()));
            }
        };
        tags(expect);
        for alt in expect["any_of"].as_array().into_iter().flatten() {
            tags(alt);
        }
    }
    out
}

#[test]
fn every_lease_table_cell_every_search_cosmos_queue_and_pull_model_row_is_reached_by_some_script() {
    let required = required_cells();
    let mut reached: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (path, text) in shipped() {
        let doc: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        for (i, tag) in covers_of(&doc) {
            assert!(
                required.iter().any(|(c, _)| *c == tag),
                "{name} step {}: `{tag}` is no known cell",
                i + 1
            );
            reached
                .entry(tag)
                .or_default()
                .push(format!("{name} step {}", i + 1));
        }
    }
    let missing: Vec<&str> = required
        .iter()
        .map(|(c, _)| c.as_str())
        .filter(|c| !reached.contains_key(*c))
        .collect();
    assert!(missing.is_empty(), "no script reaches: {missing:#?}");
    // The listing, for `cargo test -- --nocapture`: which steps reach each cell.
    for (cell, steps) in &reached {
        println!("{cell}: {}", steps.join(", "));
    }
    assert!(required.len() >= 240, "{} cells", required.len());
}

/// A step that shows the lease state of the resource step `step` addresses
/// without changing it: a break with an invalid period is refused (400)
/// before any state is read, and the answer reports the state.
fn probe(step: &serde_json::Value, state: &str) -> serde_json::Value {
    let (kind, body) = step
        .as_object()
        .and_then(|o| o.iter().next())
        .expect("a step");
    let container = body["container"].clone();
    let expect = serde_json::json!({"status": 400, "error_code": "InvalidHeaderValue", "lease_state": state});
    match (kind.as_str(), body.get("blob")) {
        ("lease_container" | "delete_container" | "set_container_metadata", _) => {
            serde_json::json!(
                {"lease_container": {"container": container, "action": "break", "break_period": 61, "expect": expect}}
            )
        }
        (_, Some(blob)) => serde_json::json!(
            {"lease_blob": {"container": container, "blob": blob, "action": "break", "break_period": 61, "expect": expect}}
        ),
        _ => panic!("no lease to probe for {kind}"),
    }
}

/// `doc` with a probe before every step whose cells name a lease state.
fn with_state_probes(doc: &serde_json::Value, cells: &[Cell]) -> (serde_json::Value, usize) {
    let mut states: std::collections::BTreeMap<usize, &str> = Default::default();
    for (i, tag) in covers_of(doc) {
        if let Some((_, Some(state))) = cells.iter().find(|(c, _)| *c == tag) {
            let before = states.insert(i, state);
            assert!(
                before.is_none_or(|b| b == *state),
                "step {} claims cells of two states",
                i + 1
            );
        }
    }
    let mut probed = doc.clone();
    let steps = probed["steps"].as_array_mut().expect("steps");
    for (&i, state) in states.iter().rev() {
        let p = probe(&steps[i], state);
        steps.insert(i, p);
    }
    (probed, states.len())
}

#[test]
fn each_lease_cell_a_step_claims_starts_from_the_state_of_its_column() {
    let cells = required_cells();
    let mut probes = 0;
    for (path, text) in shipped() {
        let doc: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        let (probed, n) = with_state_probes(&doc, &cells);
        if n == 0 {
            continue;
        }
        probes += n;
        let outcome = run_doc(&probed);
        assert!(outcome.passed(), "{}: {outcome:?}", path.display());
    }
    assert!(probes >= 100, "only {probes} probes");
}

#[test]
fn a_cell_claimed_by_a_step_in_another_state_is_caught_by_its_probe() {
    let text = std::fs::read_to_string(script_dir().join("lease_actions_leased.json")).unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    // Step 3 is an acquire on the leased blob; claim it for the available column.
    let expect = &mut doc["steps"][2]["lease_blob"]["expect"];
    assert_eq!(expect["covers"][0], "2.3 acquire none / leased");
    expect["covers"] = serde_json::json!(["2.3 acquire none / available"]);
    let (probed, n) = with_state_probes(&doc, &required_cells());
    assert!(n > 0);
    match run_doc(&probed) {
        ScriptOutcome::Differs(d) => {
            assert_eq!(d.step, 3, "{d:?}");
            assert!(
                d.why.contains("lease state leased is not available"),
                "{d:?}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn seeded_lease_cosmos_and_search_bugs_make_the_scripts_that_pin_them_fail() {
    for (script, bug, step) in [
        ("lease_blob_use.json", "write_without_lease_check", 12),
        ("lease_break_timing.json", "break_ignores_period", 4),
        ("lease_actions_expired.json", "renew_after_write", 30),
        ("lease_actions_available.json", "lease_id_reuse", 23),
        ("lease_container.json", "container_delete_ignores_lease", 8),
        ("cosmos_items.json", "upsert_if_match_absent_412", 13),
        ("cosmos_items.json", "replace_missing_412", 20),
        ("cosmos_items.json", "cosmos_upsert_keeps_etag", 12),
        ("cosmos_batch.json", "batch_partial_commit", 3),
        (
            "search_resources.json",
            "search_concurrent_update_not_serialized",
            4,
        ),
        ("search_resources.json", "search_if_none_match_ignored", 7),
        (
            "seed000_index_update_with_only_if_unchanged.json",
            "search_sdk_ignores_only_if_unchanged",
            7,
        ),
    ] {
        let d = differs_with_bug(script, bug);
        assert_eq!(d.step, step, "{script} with {bug}: {d:?}");
    }
}

#[test]
fn seeded_queue_and_change_feed_bugs_make_the_scripts_that_pin_them_fail() {
    for (script, bug, step, why) in [
        (
            "queue_push.json",
            "poll_returns_reserved",
            7,
            "items [a] are not []",
        ),
        (
            "queue_poll.json",
            "poll_ignores_priority",
            12,
            "are not [err1, mod1, new1, new2, acc1]",
        ),
        (
            "queue_poll.json",
            "reservation_never_expires",
            17,
            "items [] are not [acc1]",
        ),
        (
            "queue_poll.json",
            "requeue_keeps_time",
            30,
            "items [r1, r2, r3] are not [r2, r3, r1]",
        ),
        (
            "queue_methods.json",
            "index_ignores_version",
            4,
            "status 200 is not 400",
        ),
        (
            "feed_pull.json",
            "page_cut_splits_batch",
            20,
            "items [x] are not [x, y, z]",
        ),
    ] {
        let d = differs_with_bug(script, bug);
        assert_eq!(d.step, step, "{script} with {bug}: {d:?}");
        assert!(d.why.contains(why), "{script} with {bug}: {d:?}");
    }
}

#[test]
fn the_format_pages_examples_of_every_service_and_of_injected_answers_pass() {
    let readme = format_page();
    let from = readme
        .find("Examples, one per service")
        .expect("the examples");
    let to = readme.len();
    let mut blocks = 0;
    let mut rest = &readme[from..to];
    while let Some(i) = rest.find("```json\n") {
        let start = i + 8;
        let end = start + rest[start..].find("```").expect("its end");
        let text = format!(
            r#"{{"format": "overcast-script/1", "name": "README example", "containers": ["c"], "steps": [{}]}}"#,
            &rest[start..end]
        );
        let outcome =
            conformance::run_text(&text).unwrap_or_else(|e| panic!("block {blocks}: {e}"));
        assert!(outcome.passed(), "block {blocks}: {outcome:?}");
        blocks += 1;
        rest = &rest[end + 3..];
    }
    assert_eq!(blocks, 7);
}

/// A changed copy of expectation field `field` holding `v`, or `None` when
/// the test has no mutation for it.
fn mutated(field: &str, v: &serde_json::Value) -> Option<serde_json::Value> {
    use serde_json::json;
    let s = v.as_str();
    Some(match field {
        "error_code" => json!(format!("{}X", s?)),
        "body" => json!(format!("{}!", s?)),
        "lease_time" => json!(v.as_u64()? + 1),
        "lease_state" => json!(if s? == "leased" { "expired" } else { "leased" }),
        "lease_status" => json!(if s? == "locked" { "unlocked" } else { "locked" }),
        "lease_duration" => json!(match s? {
            "infinite" => "fixed",
            "fixed" | "absent" => "infinite",
            secs =>
                return Some(json!(format!(
                    "{}s",
                    secs.trim_end_matches('s').parse::<u32>().ok()? + 1
                ))),
        }),
        "lease_id" => {
            let s = s?;
            if let Some(n) = s.strip_prefix("same as ") {
                json!(format!("different from {n}"))
            } else if let Some(n) = s.strip_prefix("different from ") {
                json!(format!("same as {n}"))
            } else if s == "fresh" || s == "present" {
                json!("absent")
            } else if s == "absent" {
                json!("present")
            } else {
                json!("dddddddd-dddd-4ddd-8ddd-dddddddddddd")
            }
        }
        "fields" | "synonyms" => {
            let mut list = v.as_array()?.clone();
            list.push(json!("zzz"));
            json!(list)
        }
        // Items: one fewer, or one more when none is expected.
        "items" => {
            let mut list = v.as_array()?.clone();
            if list.pop().is_none() {
                list.push(json!("zzz"));
            }
            json!(list)
        }
        "ranges" => {
            let mut list = v.as_array()?.clone();
            list.push(json!(99));
            json!(list)
        }
        "item_status" => json!(if s? == "MODIFIED" {
            "ACCEPTED"
        } else {
            "MODIFIED"
        }),
        "done" => json!(!v.as_bool()?),
        // The last wait: just past its range (the count stays, as it must
        // match the attempts).
        "waits" => {
            let mut list = v.as_array()?.clone();
            let last = list.pop()?;
            let hi = last
                .as_str()?
                .rsplit("..")
                .next()?
                .trim()
                .parse::<u64>()
                .ok()?;
            list.push(json!((hi + 1).to_string()));
            json!(list)
        }
        "sub_status" => json!(v.as_u64()? + 1),
        "operation" | "continuation" => {
            let s = s?;
            if let Some(n) = s.strip_prefix("same as ") {
                json!(format!("different from {n}"))
            } else if let Some(n) = s.strip_prefix("different from ") {
                json!(format!("same as {n}"))
            } else if s == "fresh" || s == "present" {
                json!("absent")
            } else {
                return None;
            }
        }
        _ => return None,
    })
}

#[test]
fn changing_any_shipped_lease_field_error_code_body_definition_batch_result_or_queue_and_feed_answer_fails_the_script_at_that_step(
) {
    let mut mutants = 0;
    for (path, text) in shipped() {
        let doc: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        for (i, kind) in request_steps(&doc) {
            let expect = doc["steps"][i][&kind]["expect"].clone();
            let fields = expect.as_object().expect("an object").clone();
            for (field, v) in &fields {
                let Some(m) = mutated(field, v) else { continue };
                assert_mutant_fails(&doc, i, &kind, field, m, &path);
                mutants += 1;
            }
            for (j, r) in expect["results"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
            {
                let mut d = doc.clone();
                let status = r["status"].as_u64().expect("each result pins its status");
                d["steps"][i][&kind]["expect"]["results"][j]["status"] = (status + 1).into();
                let outcome = run_doc(&d);
                assert!(
                    fails_at(&outcome, i + 1),
                    "{} step {} result {j}: {outcome:?}",
                    path.display(),
                    i + 1
                );
                mutants += 1;
            }
        }
    }
    assert!(mutants > 300, "only {mutants} mutants");
}
