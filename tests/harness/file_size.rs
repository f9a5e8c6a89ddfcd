//! The size rule: no source file of a crate is over 1,000 lines unless its
//! `//!` header says why, in a line starting with [`REASON`]. A long file is
//! usually two things that want to be apart; when it is one thing, the
//! reader is told so before scrolling.

use std::path::{Path, PathBuf};

/// The most lines a source file has without a stated reason.
const MAX_LINES: usize = 1_000;

/// How a header states the reason for a long file.
const REASON: &str = "//! Long because";

/// The crates' source folders (tests, benches and examples apart).
const SOURCE_DIRS: &[&str] = &[
    "src",
    "sim/src",
    "lin/src",
    "model/src",
    "harness/src",
    "scenarios/src",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Each file of `files` over [`MAX_LINES`] whose header gives no reason, with
/// its length.
fn long_without_reason(files: &[(String, String)]) -> Vec<String> {
    files
        .iter()
        .filter_map(|(name, text)| {
            let lines = text.lines().count();
            let header_gives_reason = text
                .lines()
                .take_while(|l| l.starts_with("//!"))
                .any(|l| l.starts_with(REASON));
            (lines > MAX_LINES && !header_gives_reason).then(|| format!("{name}: {lines} lines"))
        })
        .collect()
}

#[test]
fn no_source_file_is_long_without_a_reason() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    for dir in SOURCE_DIRS {
        rust_files(&root.join(dir), &mut paths);
    }
    assert!(paths.len() > 100, "found only {} source files", paths.len());
    let files: Vec<(String, String)> = paths
        .iter()
        .map(|p| {
            let name = p.strip_prefix(root).unwrap().display().to_string();
            (name, std::fs::read_to_string(p).unwrap())
        })
        .collect();
    let long = long_without_reason(&files);
    assert!(
        long.is_empty(),
        "over {MAX_LINES} lines without a `{REASON} …` line in the //! header \
         (split the file, or say why it is one thing):\n{}",
        long.join("\n")
    );
}

#[test]
fn the_rule_sees_a_long_file_and_accepts_a_reason() {
    let body = "fn f() {}\n".repeat(MAX_LINES);
    let bare = format!("//! A module.\n{body}");
    let reasoned = format!("//! A module.\n{REASON} it is one state machine.\n{body}");
    let short = "//! A module.\nfn f() {}\n".to_string();
    let files = vec![
        ("bare.rs".to_string(), bare),
        ("reasoned.rs".to_string(), reasoned),
        ("short.rs".to_string(), short),
    ];
    assert_eq!(long_without_reason(&files), vec!["bare.rs: 1001 lines"]);
}

/// A crate whose manifest sets `test = false` has no unit-test program:
/// a `#[test]` or `#[cfg(test)]` left in its source would never run. Its
/// tests live in the root package's test programs instead.
#[test]
fn a_crate_without_a_unit_test_program_holds_no_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut checked = 0;
    for dir in SOURCE_DIRS {
        let crate_dir = root.join(dir).parent().unwrap().to_path_buf();
        let manifest = std::fs::read_to_string(crate_dir.join("Cargo.toml")).unwrap();
        if !manifest
            .lines()
            .any(|l| l.trim().replace(' ', "") == "test=false")
        {
            continue;
        }
        checked += 1;
        let mut files = Vec::new();
        rust_files(&root.join(dir), &mut files);
        let holding: Vec<String> = files
            .iter()
            .filter(|f| {
                let text = std::fs::read_to_string(f).unwrap();
                text.contains("#[test]") || text.contains("#[cfg(test)]")
            })
            .map(|f| f.display().to_string())
            .collect();
        assert!(
            holding.is_empty(),
            "{dir} is built with `test = false`, so these tests would never run: {holding:?}"
        );
    }
    assert!(
        checked > 0,
        "no crate is built without its unit-test program"
    );
}
