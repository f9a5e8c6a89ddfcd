//! The CLI on bad input: one clear line on stderr and exit code 2, never a panic.

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

fn assert_bad_input(args: &[&str], needle: &str) {
    let (code, _out, err) = overcast(args);
    assert_eq!(code, 2, "{args:?}: stderr {err}");
    assert!(
        err.contains(needle),
        "{args:?}: stderr {err:?} lacks {needle:?}"
    );
    assert!(!err.contains("panicked"), "{args:?}: {err}");
}

#[test]
fn bad_input_gets_one_line_and_exit_2() {
    let dir = std::env::temp_dir().join(format!("overcast-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    };
    assert_bad_input(&["run", "nope", "--seed", "1"], "unknown scenario 'nope'");
    assert_bad_input(
        &["run", "occ", "--seed", "1", "--bug", "nope"],
        "unknown bug 'nope'",
    );
    assert_bad_input(&["run", "occ", "--seed", "x"], "invalid value");
    assert_bad_input(&["sweep", "occ", "--seeds", "5..2"], "is empty");
    assert_bad_input(&["sweep", "occ", "--seeds", "a..b"], "not a number");
    assert_bad_input(&["sweep", "nope", "--seeds", "0..2"], "unknown scenario");
    assert_bad_input(&["bugs", "--bug", "nope"], "unknown bug 'nope'");
    assert_bad_input(&["replay", "/no/such/file.json"], "cannot read");
    let malformed = write("malformed.json", "{ not json");
    assert_bad_input(&["replay", &malformed], "not JSON");
    let mut s: serde_json::Value = serde_json::from_str(
        &overcast_scenarios::scenario::Scenario::named("occ", 1)
            .unwrap()
            .to_json(),
    )
    .unwrap();
    s["extra_field"] = serde_json::json!(true);
    let unknown = write("unknown-field.json", &s.to_string());
    assert_bad_input(&["replay", &unknown], "extra_field");
    assert_bad_input(&["frobnicate"], "unrecognized subcommand");
    for (_, _, err) in [
        overcast(&["run", "nope"]),
        overcast(&["sweep", "occ", "--seeds", "9..1"]),
    ] {
        assert_eq!(err.trim().lines().count(), 1, "one line: {err:?}");
    }
}

#[test]
fn run_prints_its_seed_first_and_passes() {
    let (code, out, err) = overcast(&["run", "occ", "--seed", "7"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.starts_with("overcast: scenario occ seed 7"), "{out}");
    assert!(out.contains("verdict PASS"), "{out}");
}

#[test]
fn a_failing_run_exits_1_and_prints_the_replay_command() {
    let (code, out, _) = overcast(&["run", "occ", "--seed", "0", "--bug", "skip_if_match"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("verdict VIOLATION"), "{out}");
    assert!(
        out.contains(
            "cargo run --release -- replay target/overcast/failures/occ-seed0-skip_if_match.json"
        ),
        "{out}"
    );
    assert!(
        out.contains("cargo run --release -- run occ --seed 0 --bug skip_if_match"),
        "{out}"
    ); // The saved file carries the scenario, the outcome and its own replay command.
    let saved: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string("target/overcast/failures/occ-seed0-skip_if_match.json").unwrap(),
    )
    .unwrap();
    assert_eq!(
        saved["replay"],
        "cargo run --release -- replay target/overcast/failures/occ-seed0-skip_if_match.json"
    );
    assert_eq!(saved["outcome"]["property"], "linearizability");
}
