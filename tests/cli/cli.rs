//! The CLI as a user meets it: bad input gets one clear line on stderr and
//! exit code 2, never a panic; it lists its own scenarios, bugs and
//! properties; every command's help has an example; the commands it prints
//! work from where the user is; a run has a wall-clock budget and sizes
//! beyond a scenario's limits are refused at once; every scenario's history
//! file is checked by its own checkers; and its own lines never show Rust's
//! Debug formatting.

use overcast_scenarios::CATALOGUE;
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
        &overcast_scenarios::CATALOGUE
            .scenario("occ", 1)
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
    // The fault plan in words and units.
    assert!(
        out.contains("\nfaults  network: latency 1–10 ms, 1% of datagrams lost, 2% duplicated (1–500 ms later)"),
        "{out}"
    );
    for line in ["        disk: ", "        clocks: ", "        timed: "] {
        assert!(out.contains(line), "{line:?} not in {out}");
    }
}

#[test]
fn replay_says_in_words_how_the_outcome_differs() {
    let dir = temp_dir("differs");
    let (code, out, _) = overcast_in(
        &dir,
        Started::ByPath,
        &["run", "occ", "--seed", "0", "--bug", "skip_if_match"],
    );
    assert_eq!(code, 1, "{out}");
    let saved = dir.join("target/overcast/failures/occ-seed0-skip_if_match.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    v["scenario"]["bugs"] = serde_json::json!([]);
    let fixed = dir.join("fixed.json");
    std::fs::write(&fixed, v.to_string()).unwrap();
    let (code, out, _) = overcast_in(&dir, Started::ByPath, &["replay", "fixed.json"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        line_after(&out, "replay  "),
        "DIFFERS from the saved outcome: saved a violation of linearizability, now a pass"
    );
    let _ = std::fs::remove_dir_all(&dir);
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

#[test]
fn shards_write_json_lines_and_merge_joins_them_with_the_worst_exit_code() {
    let dir = std::env::temp_dir().join(format!("overcast-shards-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut outs = Vec::new();
    for k in 1..=2 {
        let out = dir
            .join(format!("shard-{k}"))
            .to_string_lossy()
            .into_owned();
        let shard = format!("{k}/2");
        let (code, stdout, err) = overcast(&[
            "sweep",
            "occ",
            "--seeds",
            "0..6",
            "--shard",
            &shard,
            "--out",
            &out,
            "--bug",
            "skip_if_match",
        ]);
        assert_eq!(code, 1, "{stdout}\n{err}");
        assert!(stdout.contains("3 seeds"), "{stdout}");
        outs.push(out);
    }
    let text = std::fs::read_to_string(dir.join("shard-2/results-occ-shard2-of-2.jsonl")).unwrap();
    let seeds: Vec<u64> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["seed"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(seeds, [1, 3, 5]);
    let (code, stdout, _) = overcast(&["merge", &outs[0], &outs[1]]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("occ: 6 seeds: 0 passed, 6 violations"),
        "{stdout}"
    );
    assert!(stdout.contains("saved"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sweep_shrink_saves_each_failure_shrunk_and_the_shrunk_file_replays_exactly() {
    let dir = std::env::temp_dir().join(format!("overcast-sweep-shrink-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = dir.to_string_lossy().into_owned();
    let (code, stdout, err) = overcast(&[
        "sweep",
        "occ",
        "--seeds",
        "0..1",
        "--bug",
        "skip_if_match",
        "--shrink",
        "--out",
        &out,
    ]);
    assert_eq!(code, 1, "{stdout}\n{err}");
    assert!(stdout.contains("shrunk  from "), "{stdout}");
    let line: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(dir.join("results-occ.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let (ops, shrunk_ops) = (
        line["ops"].as_u64().unwrap(),
        line["shrunk_ops"].as_u64().unwrap(),
    );
    assert!(shrunk_ops < ops, "{line}");
    let shrunk = line["shrunk"].as_str().unwrap();
    assert!(shrunk.contains("shrunk"), "{shrunk}");
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(shrunk).unwrap()).unwrap();
    assert!(saved["scenario"]["skip"].is_object(), "{saved}");
    let (code, stdout, _) = overcast(&["replay", shrunk]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("reproduced the saved outcome exactly"),
        "{stdout}"
    );
    let (_, merged, _) = overcast(&["merge", &out]);
    assert!(
        merged.contains(&format!("shrunk from {ops} to {shrunk_ops} ops")),
        "{merged}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `bugs` prints a table whose columns line up, its property column as
/// wide as the longest property's name (`state machine safety`), which
/// `failover_loses_committed` can break (its row now shows linearizability,
/// its smaller counterexample's: the regions plans came to draw disk
/// faults).
#[test]
fn the_bug_hunt_s_table_lines_up() {
    let (code, out, err) = overcast(&["bugs", "--bug", "failover_loses_committed", "--jobs", "2"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    let info = overcast_scenarios::bugs::find("failover_loses_committed").expect("a seeded bug");
    assert!(info.caught_by.iter().any(|p| lines[1].contains(p)), "{out}");
    let column =
        |line: &str, word: &str| line.find(word).unwrap_or_else(|| panic!("{word}: {line}"));
    assert!(
        column(lines[0], "mix") - column(lines[0], "property") > "state machine safety".len(),
        "the property column holds the longest name:\n{out}"
    );
    assert_eq!(
        column(lines[0], "mix"),
        column(lines[1], " both ") + 1,
        "the mix column:\n{out}"
    );
}

/// `shrink` writes the shrunk run's page beside its file and `replay` the
/// page of what it replayed, each said on a `report` line; the shrunk count
/// of operations is the one the summary and the page give.
#[test]
fn shrink_and_replay_write_the_page_of_what_they_ran() {
    let dir = temp_dir("shrink-page");
    let (code, out, err) = overcast_in(
        &dir,
        Started::ByPath,
        &["run", "occ", "--seed", "0", "--bug", "skip_if_match"],
    );
    assert_eq!(code, 1, "{out}\n{err}");
    let saved = "target/overcast/failures/occ-seed0-skip_if_match.json";
    let (code, out, err) = overcast_in(&dir, Started::ByPath, &["shrink", saved]);
    assert_eq!(code, 1, "{out}\n{err}");
    let page = "target/overcast/failures/occ-seed0-skip_if_match.shrunk.html";
    assert_eq!(line_after(&out, "report  "), page, "{out}");
    let shrunk_ops: usize = line_after(&out, "shrunk  from ")
        .split(" to ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a shrunk count in:\n{out}"));
    // Counted in words: one fault event is not "1 fault events".
    assert!(
        !out.contains(" 1 fault events") && !out.contains(" 1 ops"),
        "{out}"
    );
    let count = format!("{shrunk_ops} client operation");
    assert!(line_after(&out, "ops     ").starts_with(&count), "{out}");
    let html = std::fs::read_to_string(dir.join(page)).expect("the shrunk run's page");
    assert!(html.contains("VIOLATION linearizability"), "a failure page");
    assert!(html.contains(&count), "the page counts {count}");
    std::fs::remove_file(dir.join(page)).unwrap();
    let shrunk = "target/overcast/failures/occ-seed0-skip_if_match.shrunk.json";
    let (code, out, err) = overcast_in(&dir, Started::ByPath, &["replay", shrunk]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert_eq!(line_after(&out, "report  "), page, "{out}");
    assert!(dir.join(page).is_file(), "replay wrote the page again");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_sweep_saves_the_lowest_failing_seeds_only_and_lists_every_failure() {
    let dir = std::env::temp_dir().join(format!("overcast-save-cap-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = dir.to_string_lossy().into_owned();
    let (code, stdout, err) = overcast(&[
        "sweep",
        "occ",
        "--seeds",
        "0..4",
        "--bug",
        "skip_if_match",
        "--save-failures",
        "1",
        "--out",
        &out,
    ]);
    assert_eq!(code, 1, "{stdout}\n{err}");
    assert_eq!(stdout.matches("VIOLATION seed").count(), 4, "{stdout}");
    assert!(
        stdout.contains("3 failures not saved (--save-failures 1 keeps the lowest failing seeds)"),
        "{stdout}"
    );
    let mut files: Vec<String> = std::fs::read_dir(dir.join("failures"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".json") && !f.ends_with(".history.json"))
        .collect();
    files.sort();
    assert_eq!(files, ["occ-seed0-skip_if_match.json"]);
    let saved: Vec<bool> = std::fs::read_to_string(dir.join("results-occ.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["saved"].is_string())
        .collect();
    assert_eq!(saved, [true, false, false, false]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn four_shards_give_exactly_the_unsharded_results() {
    let dir = std::env::temp_dir().join(format!("overcast-union-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let lines = |out: &std::path::Path| -> Vec<(u64, String, String)> {
        let mut v = Vec::new();
        for e in std::fs::read_dir(out).unwrap().flatten() {
            if e.path().extension().is_some_and(|x| x == "jsonl") {
                for l in std::fs::read_to_string(e.path()).unwrap().lines() {
                    let j: serde_json::Value = serde_json::from_str(l).unwrap();
                    v.push((
                        j["seed"].as_u64().unwrap(),
                        j["outcome"].to_string(),
                        j["trace_hash"].to_string(),
                    ));
                }
            }
        }
        v.sort();
        v
    };
    let whole = dir.join("whole");
    let w = whole.to_string_lossy().into_owned();
    overcast(&[
        "sweep",
        "occ",
        "--seeds",
        "0..9",
        "--out",
        &w,
        "--bug",
        "ack_before_sync",
    ]);
    let mut union = Vec::new();
    for k in 1..=4 {
        let out = dir.join(format!("s{k}"));
        let o = out.to_string_lossy().into_owned();
        let shard = format!("{k}/4");
        overcast(&[
            "sweep",
            "occ",
            "--seeds",
            "0..9",
            "--shard",
            &shard,
            "--out",
            &o,
            "--bug",
            "ack_before_sync",
        ]);
        union.extend(lines(&out));
    }
    union.sort();
    assert_eq!(union, lines(&whole));
    assert_eq!(union.len(), 9);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The two recipes in the README (a GitHub Actions matrix and a Kubernetes
/// indexed Job) parse as YAML, and their overcast commands run as written
/// (on two seeds instead of a million).
#[test]
fn the_readme_recipes_parse_and_their_commands_run() {
    use yaml_rust2::{Yaml, YamlLoader};
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let blocks: Vec<&str> = readme
        .split("```yaml\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .collect();
    assert_eq!(blocks.len(), 2, "two recipes");
    fn strings(y: &Yaml, out: &mut Vec<String>) {
        match y {
            Yaml::String(s) => out.push(s.clone()),
            Yaml::Array(a) => a.iter().for_each(|v| strings(v, out)),
            Yaml::Hash(h) => h.iter().for_each(|(_, v)| strings(v, out)),
            _ => {}
        }
    }
    let dir = std::env::temp_dir().join(format!("overcast-recipes-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut ran = 0;
    for block in blocks {
        let docs = YamlLoader::load_from_str(block).expect("the recipe is YAML");
        let mut all = Vec::new();
        strings(&docs[0], &mut all);
        for cmd in all
            .iter()
            .filter(|s| s.contains("sweep all") || s.contains(" merge "))
        {
            // The shell's part: the shard number, the `|| true`, the glob.
            let cmd = cmd
                .replace("${{ matrix.shard }}", "1")
                .replace("$((JOB_COMPLETION_INDEX + 1))", "1")
                .replace("$JOB_COMPLETION_INDEX", "1")
                .replace(" || true", "")
                .replace("0..1000000", "0..2")
                .replace("/results/", "out/");
            let args: Vec<String> = cmd
                .split_whitespace()
                .skip_while(|w| *w != "sweep" && *w != "merge")
                .map(|w| {
                    if w.starts_with("out/") {
                        dir.join(
                            w.trim_end_matches('*').trim_end_matches('-').to_string()
                                + if w.ends_with('*') { "-1" } else { "" },
                        )
                        .to_string_lossy()
                        .into_owned()
                    } else {
                        w.to_string()
                    }
                })
                .collect();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (code, out, err) = overcast(&args);
            assert_eq!(code, 0, "{cmd}\n{out}\n{err}");
            ran += 1;
        }
    }
    assert_eq!(ran, 3, "two sweeps and a merge");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bench_prints_each_round_and_the_median_ratio_of_interleaved_runs() {
    assert_bad_input(&["bench", "--seeds", "0"], "--seeds and --rounds");
    assert_bad_input(&["bench", "nope"], "unknown scenario");
    let (code, out, err) = overcast(&["bench", "--seeds", "2", "--rounds", "2", "--jobs", "1"]);
    assert_eq!(code, 0, "{err}");
    let rounds: Vec<&str> = out.lines().filter(|l| l.starts_with("round ")).collect();
    assert_eq!(rounds.len(), 2, "{out}");
    let ratio = |line: &str| -> f64 {
        let x = line.rsplit(' ').next().unwrap().trim_end_matches('x');
        x.parse()
            .unwrap_or_else(|_| panic!("no ratio at the end of {line:?}"))
    };
    for r in &rounds {
        assert!(ratio(r) > 0.0, "{r}");
    }
    let median = out.lines().find(|l| l.starts_with("median: ")).expect(&out);
    // Two rounds: the median is the later of the two ratios in sorted order.
    let mut both: Vec<f64> = rounds.iter().map(|r| ratio(r)).collect();
    both.sort_by(f64::total_cmp);
    assert!((ratio(median) - both[1]).abs() < 0.01, "{out}");
}

/// A fresh folder under the system's temporary folder.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("overcast-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// How a test starts the binary.
enum Started {
    /// By its absolute path, with none of cargo's variables (as a user who
    /// built it and runs `target/release/overcast` would).
    ByPath,
    /// By its bare name, found on `PATH` (as after `cargo install`).
    OnPath,
    /// As `cargo run` starts it (cargo's variables naming this package).
    ByCargo,
}

/// Runs the binary in `dir`, started as `how` says.
fn overcast_in(dir: &Path, how: Started, args: &[&str]) -> (i32, String, String) {
    let bin = Path::new(env!("CARGO_BIN_EXE_overcast"));
    let mut cmd = match how {
        Started::OnPath => Command::new("overcast"),
        _ => Command::new(bin),
    };
    cmd.current_dir(dir).args(args);
    for var in ["CARGO", "CARGO_MANIFEST_DIR", "CARGO_PKG_NAME"] {
        cmd.env_remove(var);
    }
    match how {
        Started::OnPath => {
            let path =
                std::env::join_paths(std::iter::once(bin.parent().unwrap().to_path_buf()).chain(
                    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
                ))
                .unwrap();
            cmd.env("PATH", path);
        }
        Started::ByCargo => {
            cmd.env("CARGO", "cargo")
                .env("CARGO_MANIFEST_DIR", env!("CARGO_MANIFEST_DIR"))
                .env("CARGO_PKG_NAME", env!("CARGO_PKG_NAME"));
        }
        Started::ByPath => {}
    }
    let out = cmd.output().expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The rest of the line of `out` that starts with `label`.
fn line_after<'a>(out: &'a str, label: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(label))
        .unwrap_or_else(|| panic!("no line starting {label:?} in:\n{out}"))
        .trim()
}

/// Runs a printed command line with the shell, in `dir`, with `path` as PATH.
fn shell_in(dir: &Path, line: &str, path: Option<&std::ffi::OsStr>) -> (i32, String, String) {
    let mut cmd = Command::new("sh");
    cmd.current_dir(dir).arg("-c").arg(line);
    for var in ["CARGO", "CARGO_MANIFEST_DIR", "CARGO_PKG_NAME"] {
        cmd.env_remove(var);
    }
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    let out = cmd.output().expect("sh runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn list_shows_every_scenario_bug_and_property() {
    let (code, out, err) = overcast(&["list"]);
    assert_eq!(code, 0, "{err}");
    for def in CATALOGUE.scenarios {
        let head = format!("{}: {}", def.name(), def.describe());
        assert!(out.lines().any(|l| l == head), "{head:?} not in:\n{out}");
        for l in def.limits() {
            assert!(out.contains(&format!("{} {}", l.param, l.max)), "{out}");
        }
    }
    let (code, out, _) = overcast(&["list", "bugs", "leases"]);
    assert_eq!(code, 0);
    let names: Vec<&str> = out
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    let leases: Vec<&str> = CATALOGUE
        .find("leases")
        .unwrap()
        .bugs()
        .iter()
        .map(|b| b.name)
        .collect();
    assert_eq!(names, leases);
    let (_, all, _) = overcast(&["list", "bugs"]);
    assert_eq!(all.lines().count(), CATALOGUE.bugs().len() + 1, "{all}");
    let skip = all
        .lines()
        .find(|l| l.starts_with("skip_if_match "))
        .unwrap();
    assert!(
        skip.contains("occ, occ-replicated") && skip.contains("linearizability"),
        "{skip}"
    );
    assert_bad_input(&["list", "bugs", "nope"], "unknown scenario 'nope'");
    let (code, out, _) = overcast(&["list", "properties"]);
    assert_eq!(code, 0);
    let rows: Vec<&str> = out.lines().skip(1).collect();
    let properties = CATALOGUE.properties();
    assert_eq!(rows.len(), properties.len(), "{out}");
    for ((p, _), row) in properties.iter().zip(&rows) {
        assert!(row.starts_with(&format!("{} ", p.id)), "{row}");
        assert!(row.ends_with(p.meaning), "{row}");
    }
    assert!(
        out.contains("liveness") && out.contains("every scenario"),
        "{out}"
    );
}

/// Every property a scenario judges has a meaning of its own, one id means
/// one thing wherever it is judged, and the list names each once.
#[test]
fn every_property_has_a_meaning_and_appears_once() {
    let all = CATALOGUE.properties();
    assert!(all.len() > 20, "{} properties", all.len());
    for (i, (p, by)) in all.iter().enumerate() {
        assert!(!p.meaning.trim().is_empty(), "{} has no meaning", p.id);
        assert_ne!(p.meaning, p.id.as_str(), "{}'s meaning is its id", p.id);
        assert!(!by.is_empty(), "{}", p.id);
        assert!(
            all[..i].iter().all(|(q, _)| q.id != p.id),
            "{} listed twice",
            p.id
        );
    }
    for def in CATALOGUE.scenarios {
        for p in def.properties() {
            let listed = all.iter().find(|(q, _)| q.id == p.id).unwrap();
            assert!(listed.1.contains(&def.name()), "{} {}", def.name(), p.id);
        }
    }
}

#[test]
fn explore_runs_branches_saves_failures_with_their_path_and_writes_goals_over_time() {
    let dir = std::env::temp_dir().join(format!("overcast-explore-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out_dir = dir.to_string_lossy().into_owned();
    let (code, out, err) = overcast(&["explore", "leases", "--runs", "16", "--out", &out_dir]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("leases: 16 runs ("), "{out}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("explore.json")).unwrap()).unwrap();
    assert_eq!(json["runs"], 16);
    assert!(json["branched"].as_u64().unwrap() > 0, "{json}");
    let samples = json["over_time"].as_array().unwrap();
    assert_eq!(samples.last().unwrap()["runs"], 16);
    assert!(samples[0]["reached"].as_u64().unwrap() > 0, "{json}");
    // Its page draws the goals reached over the runs and lists every goal.
    let page = std::fs::read_to_string(dir.join("explore.html")).unwrap();
    assert!(
        page.contains("<svg") && page.contains("goals reached"),
        "{page}"
    );
    for g in json["goals"]["goals"].as_array().unwrap() {
        assert!(page.contains(g["id"].as_str().unwrap()), "{g} on the page");
    }

    let (code, out, err) = overcast(&[
        "explore",
        "leases",
        "--runs",
        "24",
        "--bug",
        "delete_keeps_lease",
        "--out",
        &out_dir,
    ]);
    assert_eq!(code, 1, "{out}{err}");
    let failures = json_failures(&dir);
    let branched = failures
        .iter()
        .find(|f| !f["branch"].as_array().unwrap().is_empty())
        .unwrap_or_else(|| panic!("no branched failure: {out}"));
    let saved = branched["saved"].as_str().unwrap();
    assert!(saved.contains("-branch"), "{saved}");
    let (code, replayed, err) = overcast(&["replay", saved]);
    assert_eq!(code, 1, "{replayed}{err}");
    assert!(
        replayed.contains("reproduced the saved outcome exactly"),
        "{replayed}"
    );
    assert!(replayed.contains("branch  "), "{replayed}");
    assert_bad_input(
        &["explore", "occ", "--for", "soon"],
        "--for takes a duration",
    );
    assert_bad_input(&["run", "occ", "--branch", "12"], "--branch takes NS:B");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn explore_shards_keep_their_own_seeds_and_merge_joins_their_runs_and_goals() {
    let dir = std::env::temp_dir().join(format!("overcast-explore-shards-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut outs = Vec::new();
    for k in 1..=2 {
        let out = dir
            .join(format!("shard-{k}"))
            .to_string_lossy()
            .into_owned();
        let shard = format!("{k}/2");
        let (code, stdout, err) = overcast(&[
            "explore", "leases", "--runs", "12", "--shard", &shard, "--out", &out,
        ]);
        assert_eq!(code, 0, "{stdout}\n{err}");
        assert!(stdout.contains(&format!("shard {k} of 2")), "{stdout}");
        outs.push(out);
    }
    // Each shard's fresh seeds are its own: 0, 2, 4, ... and 1, 3, 5, ...;
    // its branches are of those seeds.
    for (k, out) in outs.iter().enumerate() {
        let file = Path::new(out).join(format!("results-leases-shard{}-of-2.jsonl", k + 1));
        let text = std::fs::read_to_string(&file).unwrap();
        let runs: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(runs.len(), 12, "{text}");
        assert!(
            runs.iter()
                .all(|r| r["seed"].as_u64().unwrap() % 2 == k as u64),
            "{text}"
        );
        assert!(runs.iter().any(|r| r.get("branch").is_some()), "{text}");
        assert!(Path::new(out)
            .join(format!("goals-shard{}-of-2.json", k + 1))
            .exists());
    }
    let (code, merged, err) = overcast(&["merge", &outs[0], &outs[1]]);
    assert_eq!(code, 0, "{merged}{err}");
    assert!(merged.contains("leases: 24 seeds: 24 passed"), "{merged}");
    assert!(!merged.contains("more than one shard"), "{merged}");
    assert!(
        merged.contains("reached over 24 seeds"),
        "the goals of both shards' runs: {merged}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn merge_against_an_earlier_sweep_marks_failures_new_ongoing_and_resolved() {
    let dir = std::env::temp_dir().join(format!("overcast-against-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let sweep = |name: &str, bugs: &[&str]| {
        let out = dir.join(name).to_string_lossy().into_owned();
        // Seeds where retry_with_on_gone_backoff fails R3 on both.
        let mut args = vec!["sweep", "occ", "--seeds", "23..25", "--out", &out];
        for b in bugs {
            args.extend(["--bug", b]);
        }
        overcast(&args);
        out
    };
    // Before: a lost update (linearizability); now: a 449 backed off on the
    // 410 schedule (R3) instead.
    let before = sweep("before", &["skip_if_match"]);
    let now = sweep("now", &["retry_with_on_gone_backoff"]);
    // The property that named the outcome of the earlier sweep's seed 0.
    let text = std::fs::read_to_string(Path::new(&before).join("results-occ.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let property = first["property"].as_str().unwrap().to_string();
    assert_ne!(property, "R3", "{text}");
    let (code, merged, err) = overcast(&["merge", &now, "--against", &before]);
    assert_eq!(code, 1, "{merged}{err}");
    let line = |word: &str| {
        merged
            .lines()
            .find(|l| l.starts_with(word))
            .unwrap_or_else(|| panic!("no {word} line: {merged}"))
            .to_string()
    };
    assert!(merged.contains("against "), "{merged}");
    assert!(line("new ").contains("occ R3 on "), "{merged}");
    assert!(
        line("resolved ").contains(&format!("occ {property} on no seed now")),
        "{merged}"
    );
    assert!(
        !merged.lines().any(|l| l.starts_with("ongoing ")),
        "{merged}"
    );
    // Against itself every failure is ongoing.
    let (_, same, _) = overcast(&["merge", &now, "--against", &now]);
    assert!(same.contains("0 new, "), "{same}");
    assert!(same.lines().any(|l| l.starts_with("ongoing ")), "{same}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The failures `explore --out DIR` listed in DIR/explore.json.
fn json_failures(dir: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(dir.join("explore.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["failures"].as_array().unwrap().clone()
}

#[test]
fn every_command_s_help_has_an_example() {
    for command in [
        "run", "sweep", "explore", "merge", "replay", "shrink", "bugs", "check", "bench", "script",
        "list",
    ] {
        let (code, out, _) = overcast(&[command, "--help"]);
        assert_eq!(code, 0, "{command}");
        let example = out
            .split_once("Example")
            .unwrap_or_else(|| panic!("`{command} --help` has no example:\n{out}"))
            .1;
        assert!(
            example.contains(&format!("overcast {command}")),
            "{command}: {example}"
        );
    }
    for what in ["scenarios", "bugs", "properties"] {
        let (code, out, _) = overcast(&["list", what, "--help"]);
        assert_eq!(code, 0, "{what}");
        assert!(
            out.contains(&format!("Example:\n  overcast list {what}")),
            "{out}"
        );
    }
    let (_, run_help, _) = overcast(&["run", "--help"]);
    assert!(!run_help.contains("README"), "{run_help}");
    assert!(run_help.contains("overcast list"), "{run_help}");
    assert!(run_help.contains("--max-wall"), "{run_help}");
}

/// The replay and rerun commands a failure prints, run from the folder the
/// binary was started in, do what they say, however it was started.
#[test]
fn the_printed_commands_work_from_where_the_user_is() {
    let dir = temp_dir("printed");
    let bin = env!("CARGO_BIN_EXE_overcast");
    let (code, out, err) = overcast_in(
        &dir,
        Started::ByPath,
        &["run", "occ", "--seed", "0", "--bug", "skip_if_match"],
    );
    assert_eq!(code, 1, "{out}\n{err}");
    let replay = line_after(&out, "replay  ");
    assert_eq!(
        replay,
        format!("{bin} replay target/overcast/failures/occ-seed0-skip_if_match.json")
    );
    assert!(dir
        .join("target/overcast/failures/occ-seed0-skip_if_match.json")
        .is_file());
    let (code, again, err) = shell_in(&dir, replay, None);
    assert_eq!(code, 1, "{again}\n{err}");
    assert!(
        again.contains("replay  reproduced the saved outcome exactly"),
        "{again}"
    );
    let rerun = line_after(&out, "rerun   ");
    assert_eq!(rerun, format!("{bin} run occ --seed 0 --bug skip_if_match"));
    let (code, again, _) = shell_in(&dir, rerun, None);
    assert_eq!(code, 1, "{again}");
    assert!(again.contains("verdict VIOLATION"), "{again}");

    // Found on PATH: the bare name, which the same PATH finds again.
    let (code, out, err) = overcast_in(
        &dir,
        Started::OnPath,
        &["run", "occ", "--seed", "0", "--bug", "skip_if_match"],
    );
    assert_eq!(code, 1, "{out}\n{err}");
    let replay = line_after(&out, "replay  ");
    assert_eq!(
        replay,
        "overcast replay target/overcast/failures/occ-seed0-skip_if_match.json"
    );
    let path = std::env::join_paths(
        std::iter::once(Path::new(bin).parent().unwrap().to_path_buf()).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ),
    )
    .unwrap();
    let (code, again, err) = shell_in(&dir, replay, Some(&path));
    assert_eq!(code, 1, "{again}\n{err}");
    assert!(
        again.contains("reproduced the saved outcome exactly"),
        "{again}"
    );

    // Through cargo, outside the package's folder: cargo is told where it is.
    let (code, out, _) = overcast_in(
        &dir,
        Started::ByCargo,
        &["run", "occ", "--seed", "0", "--bug", "skip_if_match"],
    );
    assert_eq!(code, 1, "{out}");
    let replay = line_after(&out, "replay  ");
    if std::env::var_os("CARGO_TARGET_DIR").is_none() {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
        assert_eq!(
            replay,
            format!(
                "cargo run --release --manifest-path {} -- replay target/overcast/failures/occ-seed0-skip_if_match.json",
                manifest.display()
            )
        );
        // What follows `--` is the binary's own command line.
        let args: Vec<&str> = replay
            .split_once(" -- ")
            .unwrap()
            .1
            .split_whitespace()
            .collect();
        let (code, again, _) = overcast_in(&dir, Started::ByPath, &args);
        assert_eq!(code, 1, "{again}");
    }

    // A saved path given as absolute stays absolute.
    let out_dir = dir.join("out");
    let out_arg = out_dir.to_string_lossy().into_owned();
    let (code, out, _) = overcast_in(
        &dir,
        Started::ByPath,
        &[
            "sweep",
            "occ",
            "--seeds",
            "0..1",
            "--bug",
            "skip_if_match",
            "--out",
            &out_arg,
        ],
    );
    assert_eq!(code, 1, "{out}");
    let replay = line_after(&out, "replay  ");
    assert_eq!(
        replay,
        format!("{bin} replay {out_arg}/failures/occ-seed0-skip_if_match.json")
    );
    let (code, _, err) = shell_in(&std::env::temp_dir(), replay, None);
    assert_eq!(code, 1, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sweep_with_a_bug_runs_the_bug_s_scenarios_and_ends_with_a_total() {
    let dir = temp_dir("sweep-bug");
    let (code, out, err) = overcast_in(
        &dir,
        Started::ByPath,
        &[
            "sweep",
            "--bug",
            "skip_if_match",
            "--seeds",
            "0..1",
            "--save-failures",
            "0",
        ],
    );
    assert_eq!(code, 1, "{out}\n{err}");
    let swept: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("overcast: sweep "))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(swept, ["occ", "occ-replicated"], "{out}");
    let last = out.lines().last().unwrap();
    assert!(
        last.starts_with("total: 2 scenarios, 2 seeds, 2 runs in ")
            && last.ends_with(": 0 passed, 2 violations"),
        "{last}"
    );
    // One scenario: its own summary is the last line.
    let (_, out, _) = overcast_in(
        &dir,
        Started::ByPath,
        &["sweep", "cosmos", "--seeds", "0..2"],
    );
    assert!(!out.contains("total:"), "{out}");
    assert!(
        out.lines().last().unwrap().starts_with("cosmos: 2 seeds"),
        "{out}"
    );
    assert_bad_input(
        &["sweep", "--bug", "skip_if_match", "--bug", "lease_id_reuse"],
        "no scenario has all of these bugs",
    );
    assert_bad_input(
        &["sweep", "leases", "--bug", "skip_if_match"],
        "does not belong to scenario 'leases'",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_run_past_its_wall_budget_ends_with_one_line_and_exit_6() {
    let dir = temp_dir("max-wall");
    let stopped = |args: &[&str], needle: &str| {
        let (code, out, err) = overcast_in(&dir, Started::ByPath, args);
        assert_eq!(code, 6, "{args:?}\n{out}\n{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err:?}");
        assert!(err.contains(needle), "{args:?}: {err:?} lacks {needle:?}");
    };
    stopped(
        &["run", "regions", "--max-wall", "1ms"],
        "the run of regions seed 0 went on for more than --max-wall 1ms: stopped",
    );
    stopped(
        &["sweep", "occ", "--seeds", "0..4", "--max-wall", "1ms"],
        "runs it alone",
    );
    let (code, _, _) = overcast_in(
        &dir,
        Started::ByPath,
        &["run", "occ", "--seed", "0", "--bug", "skip_if_match"],
    );
    assert_eq!(code, 1);
    let saved = "target/overcast/failures/occ-seed0-skip_if_match.json";
    stopped(&["replay", saved, "--max-wall", "1ms"], "--max-wall 1ms");
    stopped(&["shrink", saved, "--max-wall", "1ms"], "--max-wall 1ms");
    // Within the budget nothing changes, and nothing is said on stderr.
    let (code, _, err) = overcast_in(&dir, Started::ByPath, &["run", "occ", "--max-wall", "5m"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_bad_input(
        &["run", "occ", "--max-wall", "soon"],
        "--max-wall takes a duration",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every limit names a size parameter of its scenario that the defaults
/// keep within it, and one more than the limit is refused in one line, in
/// a saved file too, before anything runs.
#[test]
fn sizes_beyond_a_scenario_s_limits_are_refused_at_once() {
    for def in CATALOGUE.scenarios {
        assert!(!def.limits().is_empty(), "{} has no limits", def.name());
        for l in def.limits() {
            let mut s = CATALOGUE.scenario(def.name(), 0).unwrap();
            let value = s.params.get(l.param).and_then(|v| v.as_u64());
            let value = value.unwrap_or_else(|| panic!("{}: no parameter {}", def.name(), l.param));
            assert!(
                value <= l.max,
                "{}: default {} above {}",
                def.name(),
                l.param,
                l.max
            );
            s.params[l.param] = (l.max + 1).into();
            let err = CATALOGUE.validate(&s).unwrap_err();
            assert!(
                matches!(err, overcast_harness::error::HarnessError::Params(_)),
                "a size limit is a refusal of the parameters: {err:?}"
            );
            let err = err.to_string();
            assert!(
                err.starts_with(&format!(
                    "{} is {}, more than {}",
                    l.param,
                    l.max + 1,
                    def.name()
                )),
                "{err}"
            );
            s.params[l.param] = l.max.into();
            CATALOGUE.validate(&s).unwrap_or_else(|e| panic!("{e}"));
        }
    }
    let dir = temp_dir("limits");
    let mut s: serde_json::Value =
        serde_json::from_str(&CATALOGUE.scenario("occ", 1).unwrap().to_json()).unwrap();
    s["params"]["keys"] = 100_000.into();
    let file = dir.join("occ-keys.json");
    std::fs::write(&file, s.to_string()).unwrap();
    let started = std::time::Instant::now();
    assert_bad_input(
        &["replay", &file.to_string_lossy()],
        "keys is 100000, more than occ is built for (at most 1000",
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A bug per scenario that a history checker (not liveness) catches on seed 0.
const CAUGHT_ON_SEED_0: &[(&str, &str)] = &[
    ("occ", "skip_if_match"),
    ("leases", "write_without_lease_check"),
    ("cosmos", "cosmos_upsert_keeps_etag"),
    ("search", "search_if_none_match_ignored"),
    ("queues", "poll_ignores_priority"),
    ("feed", "page_sorted_by_id"),
    ("regions", "failover_loses_committed"),
    ("occ-replicated", "failover_loses_committed"),
];

#[test]
fn check_judges_every_scenario_s_history_file_as_its_run_did() {
    let dir = temp_dir("check-histories");
    let names: Vec<&str> = CATALOGUE.names().collect();
    let covered: Vec<&str> = CAUGHT_ON_SEED_0.iter().map(|(s, _)| *s).collect();
    assert_eq!(covered, names, "one bug per scenario");
    std::thread::scope(|scope| {
        for (scenario, bug) in CAUGHT_ON_SEED_0 {
            let dir = &dir;
            scope.spawn(move || {
                let history = format!("{scenario}.history.json");
                let (code, out, err) = overcast_in(
                    dir,
                    Started::ByPath,
                    &[
                        "run",
                        scenario,
                        "--seed",
                        "0",
                        "--bug",
                        bug,
                        "--history",
                        &history,
                    ],
                );
                assert_eq!(code, 1, "{scenario}\n{out}\n{err}");
                let saved = dir.join(format!(
                    "target/overcast/failures/{scenario}-seed0-{bug}.json"
                ));
                let saved: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
                let property = saved["outcome"]["property"].as_str().unwrap().to_string();
                // The file `--history` wrote, and the one saved beside the failure.
                let beside =
                    format!("target/overcast/failures/{scenario}-seed0-{bug}.history.json");
                for file in [history.as_str(), beside.as_str()] {
                    let (code, out, err) =
                        overcast_in(dir, Started::ByPath, &["check", "--json", file]);
                    assert_eq!(code, 1, "{scenario} {file}\n{out}\n{err}");
                    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
                    assert_eq!(v["verdict"], "violation", "{v}");
                    assert_eq!(v["scenario"], *scenario, "{v}");
                    assert_eq!(v["property"], property.as_str(), "{scenario}: {v}");
                }
                let (_, text, _) = overcast_in(dir, Started::ByPath, &["check", &history]);
                assert!(
                    text.starts_with(&format!("{history}: violation ops=")),
                    "{text}"
                );
                // With --explain, every check of the scenario says what it means.
                let (_, explained, _) =
                    overcast_in(dir, Started::ByPath, &["check", "--explain", &history]);
                let meanings = explained
                    .split_once("\nwhat the checks mean\n")
                    .unwrap_or_else(|| panic!("{scenario}: no meanings in\n{explained}"))
                    .1;
                let def = CATALOGUE.find(scenario).unwrap();
                // (Liveness is judged on the run's world, not on a history.)
                for p in def
                    .properties()
                    .iter()
                    .filter(|p| p.id.as_str() != "liveness")
                {
                    assert!(
                        meanings
                            .lines()
                            .any(|l| l.trim_start().starts_with(p.id.as_str())
                                && l.ends_with(p.meaning)),
                        "{scenario}: {} is not explained in\n{meanings}",
                        p.id
                    );
                }
            });
        }
    });
    // A passing run's history passes.
    let (code, _, _) = overcast_in(
        &dir,
        Started::ByPath,
        &["run", "leases", "--seed", "3", "--history", "ok.json"],
    );
    assert_eq!(code, 0);
    let (code, out, err) = overcast_in(&dir, Started::ByPath, &["check", "ok.json"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.starts_with("ok.json: passed ops="), "{out}");
    // A saved failure is replayed, not checked.
    let saved = "target/overcast/failures/occ-seed0-skip_if_match.json";
    let (code, _, err) = overcast_in(&dir, Started::ByPath, &["check", saved]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("a saved run, not a history") && err.contains("replay"),
        "{err}"
    );
    // A history that does not say its run: which scenario's it is, and why not.
    let mut bare: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("leases.history.json")).unwrap())
            .unwrap();
    bare.as_object_mut().unwrap().remove("scenario");
    std::fs::write(dir.join("bare.json"), bare.to_string()).unwrap();
    let (code, _, err) = overcast_in(&dir, Started::ByPath, &["check", "bare.json"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("a history of leases without the run that recorded it"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether a line shows Rust's Debug formatting: `Some(`, `None`, a
/// struct's `Name { field: …`, or a list of quoted strings.
fn debug_syntax(line: &str) -> bool {
    let struct_literal = line.match_indices(" { ").any(|(i, _)| {
        let before = line[..i]
            .rsplit(|c: char| !c.is_alphanumeric())
            .next()
            .unwrap_or("");
        let after = &line[i + 3..];
        let field: String = after
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '_')
            .collect();
        before.starts_with(|c: char| c.is_ascii_uppercase())
            && !field.is_empty()
            && after[field.len()..].starts_with(':')
    });
    line.contains("Some(")
        || line
            .split(|c: char| !c.is_alphanumeric())
            .any(|w| w == "None")
        || struct_literal
        || line.contains("[\"")
}

#[test]
fn debug_syntax_is_recognised() {
    assert!(debug_syntax("x NetworkFaults { duplicate: 0.02 }"));
    assert!(debug_syntax("expected: Some(\"a\")"));
    assert!(debug_syntax("body: None"));
    assert!(debug_syntax("[\"a\", \"b\"]"));
    assert!(!debug_syntax("options swarm=off bugs=none servers=2"));
    assert!(!debug_syntax(
        "faults  network: latency 1–10 ms, 2% duplicated"
    ));
}

/// The CLI's own lines (the header, the summary's counts, verdict and
/// times, and the saved, report, replay and rerun lines) of every
/// scenario's default run, swarm run and a seeded bug's run show no Debug
/// formatting. The checkers' own words (the `checks` line's notes, the
/// violations and explanations) are the scenarios' and are not judged here.
#[test]
fn the_cli_s_own_lines_show_no_debug_formatting() {
    let dir = temp_dir("no-debug");
    let own = |line: &str| {
        [
            "overcast: ",
            "options ",
            "faults  ",
            "        network:",
            "        disk:",
            "        clocks:",
            "        timed:",
            "ops     ",
            "time    ",
            "verdict ",
            "saved   ",
            "report  ",
            "replay  ",
            "rerun   ",
        ]
        .iter()
        .any(|p| line.starts_with(p))
    };
    let outputs: Vec<(String, String)> = std::thread::scope(|scope| {
        let runs: Vec<_> = CAUGHT_ON_SEED_0
            .iter()
            .flat_map(|(scenario, bug)| {
                [
                    vec![scenario.to_string()],
                    vec![scenario.to_string(), "--swarm".into()],
                    vec![scenario.to_string(), "--bug".into(), bug.to_string()],
                ]
            })
            .map(|mut args| {
                let dir = &dir;
                args.insert(0, "run".into());
                scope.spawn(move || {
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    let (_, out, err) = overcast_in(dir, Started::ByPath, &args);
                    assert!(err.is_empty(), "{args:?}: {err}");
                    (args.join(" "), out)
                })
            })
            .collect();
        runs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut judged = 0;
    for (args, out) in &outputs {
        // The header ends where the summary starts.
        let header_end = out.lines().position(|l| l.starts_with("ops     ")).unwrap();
        for (i, line) in out.lines().enumerate() {
            if i < header_end || own(line) {
                judged += 1;
                assert!(!debug_syntax(line), "{args}: {line}");
            }
        }
    }
    assert!(judged > 24 * 8, "{judged} lines judged");
    let _ = std::fs::remove_dir_all(&dir);
}
