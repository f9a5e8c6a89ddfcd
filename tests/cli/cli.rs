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
