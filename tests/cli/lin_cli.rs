//! `overcast check` on good, bad and malformed input: verdict lines, JSON
//! lines, exit codes, HTML output.

use std::path::PathBuf;
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_overcast"))
}

fn tmp(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("overcast-lin-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write tmp");
    p
}

fn run(args: &[&str]) -> Output {
    bin()
        .arg("check")
        .args(args)
        .output()
        .expect("run overcast")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const GOOD: &str = r#"{"format":"kvhist/1","ops":[
 {"client":0,"key":"x","f":"put","value":"1","call":0,"ret":10,"out":{}},
 {"client":1,"key":"x","f":"get","call":11,"ret":12,"out":{"value":"1"}}]}"#;
const BAD: &str = r#"{"format":"kvhist/1","ops":[
 {"client":0,"key":"x","f":"put","value":"1","call":0,"ret":10,"out":{}},
 {"client":1,"key":"x","f":"get","call":11,"ret":12,"out":{"value":null}}]}"#;

fn assert_bad_input(o: &Output, needle: &str) {
    assert_eq!(o.status.code(), Some(2), "stderr: {}", stderr(o));
    let e = stderr(o);
    assert_eq!(e.trim_end().lines().count(), 1, "one line expected: {e:?}");
    assert!(e.contains(needle), "{e:?} should mention {needle:?}");
    assert!(!e.contains("panicked"), "{e}");
}

#[test]
fn good_and_bad_histories() {
    let g = tmp("good.json", GOOD);
    let o = run(&[g.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("linearizable ops=2 keys=1 ms="), "{out}");

    let b = tmp("bad.json", BAD);
    let o = run(&["--json", g.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["verdict"], "linearizable");
    assert_eq!(lines[1]["verdict"], "not_linearizable");
    for l in &lines {
        assert_eq!(l["ops"], 2);
        assert_eq!(l["keys"], 1);
        assert!(l["ms"].is_u64() && l["file"].is_string());
    }
}

#[test]
fn html_report_is_written_and_self_contained() {
    let b = tmp("bad2.json", BAD);
    let out = b.with_extension("html");
    let o = run(&["--html", out.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let html = std::fs::read_to_string(&out).expect("html written");
    assert!(
        html.contains("<svg")
            && html.contains("Not linearizable")
            && html.contains("cannot be placed")
    );
    // No network: the only URL is the SVG namespace.
    assert_eq!(
        html.matches("http").count(),
        html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
    );
    assert!(!html.contains("<script src") && !html.contains("<link"));
}

#[test]
fn malformed_json_is_exit_2_with_one_line() {
    let p = tmp("broken.json", "{\"format\":\"kvhist/1\",\"ops\":[");
    assert_bad_input(&run(&[p.to_str().unwrap()]), "not valid JSON");
}

#[test]
fn missing_file_is_exit_2_with_one_line() {
    assert_bad_input(&run(&["/nonexistent/history.json"]), "cannot read");
}

#[test]
fn out_without_ret_is_exit_2_with_one_line() {
    let p = tmp(
        "noret.json",
        r#"{"format":"kvhist/1","ops":[{"client":0,"key":"x","f":"get","call":0,"out":{"value":null}}]}"#,
    );
    assert_bad_input(&run(&[p.to_str().unwrap()]), "no \"ret\"");
}

#[test]
fn other_bad_inputs_are_exit_2() {
    for (name, text, needle) in [
        ("notobj.json", "[1,2]", "not a JSON object"),
        (
            "fmt.json",
            r#"{"format":"kvhist/9","ops":[]}"#,
            "unsupported format",
        ),
        (
            "noops.json",
            r#"{"format":"kvhist/1"}"#,
            "missing field `ops`",
        ),
        (
            "badf.json",
            r#"{"ops":[{"client":0,"key":"x","f":"inc","call":0}]}"#,
            "ops[0].f: unknown variant `inc`",
        ),
        (
            "retcall.json",
            r#"{"ops":[{"client":0,"key":"x","f":"get","call":5,"ret":1}]}"#,
            "before \"call\"",
        ),
    ] {
        let p = tmp(name, text);
        assert_bad_input(&run(&[p.to_str().unwrap()]), needle);
    }
}
