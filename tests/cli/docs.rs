//! The documentation is tested like code: every console example in the
//! README and the book runs and prints what it shows, every relative link
//! resolves, nothing points outside the repository, the seeded-bugs
//! reference page is the bug table rendered, and the README gives CI's test
//! command word for word.
//!
//! `OVERCAST_BLESS=1 cargo test --release --test docs` rewrites the
//! seeded-bugs page from the table.

use overcast_scenarios::bugs::{hunt_profile, BUGS};
use overcast_scenarios::CATALOGUE;
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The repository's root (the root package's manifest folder).
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The files under `dir` (sorted, recursively, leaving out `target/` and
/// `.git/`) that `keep` accepts.
fn files_under(dir: &Path, keep: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    fn walk(dir: &Path, keep: &dyn Fn(&Path) -> bool, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            let name = path.file_name().unwrap_or_default();
            if name == "target" || name == ".git" {
                continue;
            }
            if path.is_dir() {
                walk(&path, keep, out);
            } else if keep(&path) {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, keep, &mut files);
    files
}

/// The markdown files the tests read: the README and every page of the book.
fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    files.extend(files_under(&root().join("docs/src"), &|p| {
        p.extension().is_some_and(|x| x == "md")
    }));
    files
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Whether `text` holds a fenced block trycmd runs: ```console without `ignore`.
fn has_console_example(text: &str) -> bool {
    text.lines().any(|l| {
        let info = l.trim_start().trim_start_matches('`');
        l.trim_start().starts_with("```")
            && info.split(',').next() == Some("console")
            && !info.split(',').any(|w| w == "ignore")
    })
}

/// Every ```console block of the README and the book runs, each file in a
/// folder of its own (the repository's files linked in, so that paths such
/// as `scenarios/scripts/…` work, and `target/overcast/` written there).
#[test]
fn console_examples_run_and_print_what_they_show() {
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("docs-examples");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let cases = trycmd::TestCases::new();
    cases
        .register_bin("overcast", Path::new(env!("CARGO_BIN_EXE_overcast")))
        .timeout(std::time::Duration::from_secs(120));
    let mut count = 0;
    for file in markdown_files() {
        let text = read(&file);
        if !has_console_example(&text) {
            continue;
        }
        let relative = file.strip_prefix(root()).unwrap();
        let flat = relative.to_string_lossy().replace(['/', '\\'], "__");
        let copy = work.join(&flat);
        let case_dir = copy.with_extension("in");
        std::fs::create_dir_all(&case_dir).unwrap();
        for entry in std::fs::read_dir(root()).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name();
            if name != "target" && name != ".git" {
                link(&entry.path(), &case_dir.join(&name));
            }
        }
        std::fs::write(&copy, text).unwrap();
        eprintln!("{} runs as {}", relative.display(), copy.display());
        cases.case(&copy);
        count += 1;
    }
    assert!(count > 0, "no console example found");
    cases.run();
}

#[cfg(unix)]
fn link(from: &Path, to: &Path) {
    std::os::unix::fs::symlink(from, to).unwrap();
}

#[cfg(not(unix))]
fn link(from: &Path, to: &Path) {
    if from.is_dir() {
        std::os::windows::fs::symlink_dir(from, to).unwrap();
    } else {
        std::os::windows::fs::symlink_file(from, to).unwrap();
    }
}

/// mdBook's id for a heading (`id_from_content` in mdbook-html), which
/// GitHub's anchors agree with for the headings of this book.
fn heading_id(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            c if c.is_alphanumeric() || c == '_' || c == '-' => Some(c),
            c if c.is_whitespace() => Some('-'),
            _ => None,
        })
        .collect()
}

/// The anchors a page's headings get, duplicates numbered as mdBook does.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    let mut heading: Option<String> = None;
    for event in Parser::new_ext(text, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let id = heading_id(&heading.take().unwrap_or_default());
                let mut unique = id.clone();
                let mut n = 1;
                while !ids.insert(unique.clone()) {
                    unique = format!("{id}-{n}");
                    n += 1;
                }
            }
            _ => {}
        }
    }
    ids
}

/// The link targets of a page, and the files its `{{#include}}`s name.
fn targets(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Parser::new_ext(text, Options::ENABLE_TABLES)
        .filter_map(|event| match event {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                Some(dest_url.to_string())
            }
            _ => None,
        })
        .collect();
    for part in text.split("{{#include ").skip(1) {
        if let Some(end) = part.find("}}") {
            out.push(part[..end].trim().to_string());
        }
    }
    out
}

/// Every relative link (and image, and include) in the README and the book
/// names a file of the repository that exists, and a `#anchor` names a
/// heading of its page.
#[test]
fn relative_links_resolve_inside_the_repository() {
    let repo = root().canonicalize().unwrap();
    let mut broken = Vec::new();
    for file in markdown_files() {
        let text = read(&file);
        for target in targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let resolved = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            let place = format!("{}: {target}", file.strip_prefix(root()).unwrap().display());
            match resolved.canonicalize() {
                Err(_) => broken.push(format!("{place}: no such file")),
                Ok(full) if !full.starts_with(&repo) => {
                    broken.push(format!("{place}: outside the repository"))
                }
                Ok(full) => {
                    if let Some(anchor) = anchor {
                        let is_page = full.extension().is_some_and(|x| x == "md");
                        if is_page && !anchors(&read(&full)).contains(anchor) {
                            broken.push(format!("{place}: no heading has this anchor"));
                        }
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The seeded-bugs page's words around the generated tables.
const SEEDED_BUGS_HEAD: &str = "\
# Seeded bugs

<!-- Generated from the bug table (`overcast_scenarios::bugs::BUGS`) by
tests/cli/docs.rs; do not edit by hand. After changing the table, rewrite this
page with `OVERCAST_BLESS=1 cargo test --release --test docs`. -->

A seeded bug is a realistic mistake the model can be switched into. Each is
off by default and switched on by name (`--bug NAME` on `run` and `sweep`,
`bugs` in a saved file or a conformance script); `overcast bugs` must find
every one, and the unmodified model must pass every seed. A bug belongs to
the scenarios listed; the bug hunt runs it in the first, under its hunt
profile and in swarm mode, and the first property a failing run breaks
must be one of those it is caught by.

";

const SEEDED_BUGS_TAIL: &str = "
How many seeds each bug takes to find and how small its counterexample
shrinks, as last measured: [the bug hunt's figures](../lab/bug-hunt.md).
Adding a bug: [Writing your own scenario](../guides/new-scenario.md#seeded-bugs).
";

/// The seeded-bugs page as the bug table and the registry give it.
fn render_seeded_bugs() -> String {
    let cell = |s: &str| s.replace('|', "\\|");
    let mut page = String::from(SEEDED_BUGS_HEAD);
    page.push_str("| bug | what it does | scenarios | caught by | hunted under |\n");
    page.push_str("|---|---|---|---|---|\n");
    for bug in BUGS {
        writeln!(
            page,
            "| `{}` | {} | {} | {} | {} |",
            bug.name,
            cell(bug.what),
            bug.scenarios.join(", "),
            bug.caught_by.join(", "),
            hunt_profile(bug.name)
        )
        .unwrap();
    }
    page.push_str("\n## By scenario\n\n| scenario | its bugs |\n|---|---|\n");
    for scenario in CATALOGUE.scenarios {
        let names: Vec<String> = scenario
            .bugs()
            .iter()
            .map(|b| format!("`{}`", b.name))
            .collect();
        let name = scenario.name();
        writeln!(
            page,
            "| [{name}](scenarios/{name}.md) | {} |",
            names.join(", ")
        )
        .unwrap();
    }
    page.push_str(SEEDED_BUGS_TAIL);
    page
}

/// `docs/src/reference/seeded-bugs.md` is the bug table rendered, so the
/// page cannot drift from the table.
#[test]
fn the_seeded_bugs_page_is_the_bug_table() {
    let path = root().join("docs/src/reference/seeded-bugs.md");
    let want = render_seeded_bugs();
    if std::env::var_os("OVERCAST_BLESS").is_some() {
        std::fs::write(&path, &want).unwrap();
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{} differs from the bug table; rewrite it with \
         `OVERCAST_BLESS=1 cargo test --release --test docs`",
        path.display()
    );
}

/// The README gives the test command CI runs, word for word, and stays a
/// front door.
#[test]
fn the_readme_gives_cis_test_command_and_stays_short() {
    let command = "cargo test --release --workspace";
    let readme = read(&root().join("README.md"));
    let ci = read(&root().join(".ci/run"));
    assert!(
        ci.lines().any(|l| l.trim() == command),
        ".ci/run no longer runs `{command}`"
    );
    assert!(
        readme.lines().any(|l| l.trim() == command),
        "the README no longer gives `{command}` on a line of its own"
    );
    let lines = readme.lines().count();
    assert!(
        lines <= 200,
        "the README has {lines} lines; the book is for the rest"
    );
}

/// The README counts the seeded bugs `overcast bugs` hunts as the bug table does.
#[test]
fn the_readme_counts_the_bug_table() {
    let readme = read(&root().join("README.md")).replace('\n', " ");
    let said = format!("The {} seeded bugs", BUGS.len());
    assert!(
        readme.contains(&said),
        "the README does not say \"{said}\" (the bug table holds {})",
        BUGS.len()
    );
}

/// The repository's text files (sources, manifests, scripts, markdown and
/// JSON), outside `target/` and `.git/`.
fn text_files() -> Vec<PathBuf> {
    files_under(root(), &|p| {
        p.extension().is_some_and(|x| {
            ["rs", "md", "toml", "json", "sh", "yml", "yaml", "txt"]
                .iter()
                .any(|e| x == *e)
        }) || p.file_name().is_some_and(|n| n == "run")
    })
}

/// Nothing in the repository points outside it: no sibling folder the
/// project once read its specification and history corpora from, and no
/// file of it, which a reader of a clone cannot follow.
#[test]
fn no_text_points_outside_the_repository() {
    // Spelled in pieces so that this file does not name them itself.
    let outside = [
        concat!("../", "shared"),
        concat!("SPEC", ".md"),
        concat!("FORMAT", ".md"),
    ];
    let mut found = Vec::new();
    let files = text_files();
    assert!(files.len() > 100, "{} files", files.len());
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            for o in outside.iter().filter(|o| line.contains(*o)) {
                found.push(format!(
                    "{}:{}: {o}",
                    file.strip_prefix(root()).unwrap().display(),
                    n + 1
                ));
            }
        }
    }
    assert!(found.is_empty(), "points outside:\n{}", found.join("\n"));
}

/// The book's summary names every page under docs/src, so none is left out
/// of the built book.
#[test]
fn every_page_of_the_book_is_in_its_summary() {
    let src = root().join("docs/src");
    let summary = read(&src.join("SUMMARY.md"));
    let listed: BTreeSet<PathBuf> = targets(&summary)
        .iter()
        .map(|t| src.join(t.split('#').next().unwrap()))
        .collect();
    let missing: Vec<String> = markdown_files()
        .into_iter()
        .filter(|f| f.starts_with(&src) && !f.ends_with("SUMMARY.md") && !listed.contains(f))
        .map(|f| f.strip_prefix(root()).unwrap().display().to_string())
        .collect();
    assert!(missing.is_empty(), "not in SUMMARY.md: {missing:?}");
}

/// The fenced blocks of a language in a page, in order.
fn fenced(text: &str, lang: &str) -> Vec<String> {
    let open = format!("```{lang}\n");
    text.split(open.as_str())
        .skip(1)
        .map(|b| b.split("```").next().unwrap().to_string())
        .collect()
}

/// The README's CI recipes (which `tests/cli/cli.rs` runs) are the CI guide's,
/// word for word.
#[test]
fn the_readme_and_the_ci_guide_give_the_same_recipes() {
    let readme = fenced(&read(&root().join("README.md")), "yaml");
    let guide = fenced(&read(&root().join("docs/src/guides/ci.md")), "yaml");
    assert_eq!(readme.len(), 2, "the README gives two recipes");
    assert_eq!(readme, guide, "README.md and docs/src/guides/ci.md differ");
}

/// Every source file the docs name (a path into one of the project's crates
/// ending in `.rs`, with or without a `:line`) exists, so a move of the code
/// cannot leave the book pointing at files that are gone.
#[test]
fn every_source_file_the_docs_name_exists() {
    let crates = [
        "model/",
        "sim/",
        "lin/",
        "scenarios/",
        "harness/",
        "src/",
        "tests/",
    ];
    let mut missing = Vec::new();
    let mut named = 0;
    for file in markdown_files() {
        let text = read(&file);
        for span in text.split('`').skip(1).step_by(2) {
            let path = span.split(':').next().unwrap_or(span);
            if !crates.iter().any(|c| path.starts_with(c))
                || !path.ends_with(".rs")
                || path.contains(char::is_whitespace)
            {
                continue;
            }
            named += 1;
            if !root().join(path).exists() {
                missing.push(format!(
                    "{}: {path}",
                    file.strip_prefix(root()).unwrap().display()
                ));
            }
        }
    }
    assert!(
        named > 50,
        "only {named} source files named: the scan is broken"
    );
    assert!(
        missing.is_empty(),
        "named but missing:\n{}",
        missing.join("\n")
    );
}
