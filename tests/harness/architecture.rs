//! The architecture, as tests that fail on a violation.
//!
//! - Crates: the arrows point one way: `overcast -> scenarios -> {harness,
//!   sim, model}`, `harness -> sim -> lin`; `harness` never depends on
//!   `model`; `model` never depends on `sim`, nor `sim` on `model`; `lin`
//!   (the linearizability checker) depends on no other overcast crate and not
//!   on madsim.
//! - Scenarios: no service's folder (`scenarios/src/services/X/`) names
//!   another service; what services share (`scenarios/src/kit/`) and the
//!   generic machinery (the `harness` crate) name no service at all.
//! - Modules: no circle of imports between the modules of `model/src` or of
//!   `scenarios/src` (see [`module_graph`] for what counts as an edge).
//! - Docs: the crates listed in [`DOCUMENTED`] deny `missing_docs`.
//!
//! The source rules read the files as tokens (comments, strings and
//! character literals skipped), not as text: a doc comment may speak of any
//! module. The naming rules read the tests too; the circle rule reads the
//! code that ships.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The names of the dependencies of each workspace member, by package name.
fn workspace_deps() -> BTreeMap<String, Vec<String>> {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["name"].as_str().unwrap().to_string())
                .collect();
            (p["name"].as_str().unwrap().to_string(), deps)
        })
        .collect()
}

#[test]
fn model_and_sim_do_not_know_each_other() {
    let deps = workspace_deps();
    let deps_of = |name: &str| {
        deps.get(name)
            .unwrap_or_else(|| panic!("{name} is a member"))
    };
    let model = deps_of("overcast-model");
    let sim = deps_of("overcast-sim");
    let lin = deps_of("overcast-lin");
    let scenarios = deps_of("overcast-scenarios");
    assert!(
        !model.iter().any(|d| d.starts_with("overcast")),
        "model depends on {model:?}"
    );
    assert!(
        !sim.iter()
            .any(|d| d.starts_with("overcast") && d != "overcast-lin"),
        "sim depends on {sim:?}"
    );
    assert!(
        !lin.iter()
            .any(|d| d.starts_with("overcast") || d.starts_with("madsim")),
        "lin depends on {lin:?}"
    );
    assert!(
        scenarios.contains(&"overcast-model".to_string())
            && scenarios.contains(&"overcast-sim".to_string())
    );
}

#[test]
fn the_harness_does_not_know_the_model() {
    let deps = workspace_deps();
    let harness = &deps["overcast-harness"];
    assert!(
        !harness
            .iter()
            .any(|d| d.starts_with("overcast") && d != "overcast-sim" && d != "overcast-lin"),
        "harness depends on {harness:?}: it may know the engine (sim, and lin under it) only"
    );
}

// ---------------------------------------------------------------------------
// Reading Rust sources as tokens.

/// A token of Rust source, as far as these rules need: identifiers, `::`,
/// and single punctuation characters. Literals and comments are dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Ident(String),
    PathSep,
    Punct(char),
}

/// `src` as tokens, without comments (doc comments included), string, byte
/// string, raw string and character literals, lifetimes and numbers.
fn tokens(src: &str) -> Vec<Tok> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let n = c.len();
    // Skips a quoted literal starting at the opening quote `c[i]`.
    let skip_quoted = |mut i: usize| -> usize {
        i += 1;
        while i < n && c[i] != '"' {
            if c[i] == '\\' {
                i += 1;
            }
            i += 1;
        }
        i + 1
    };
    // Skips a raw string starting at `r`, if it is one.
    let skip_raw = |i: usize| -> Option<usize> {
        let mut j = i + 1;
        let mut hashes = 0;
        while j < n && c[j] == '#' {
            hashes += 1;
            j += 1;
        }
        if j >= n || c[j] != '"' {
            return None;
        }
        j += 1;
        loop {
            if j >= n {
                return Some(n);
            }
            if c[j] == '"' && (0..hashes).all(|k| j + 1 + k < n && c[j + 1 + k] == '#') {
                return Some(j + 1 + hashes);
            }
            j += 1;
        }
    };
    while i < n {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && i + 1 < n && c[i + 1] == '/' {
            while i < n && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && i + 1 < n && c[i + 1] == '*' {
            let mut depth = 0;
            while i < n {
                if c[i] == '/' && i + 1 < n && c[i + 1] == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && i + 1 < n && c[i + 1] == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if ch == '"' {
            i = skip_quoted(i);
        } else if (ch == 'r' || ch == 'b') && (i == 0 || !is_ident_char(c[i - 1])) && {
            let r = if ch == 'b' && i + 1 < n && c[i + 1] == 'r' {
                i + 1
            } else {
                i
            };
            c[r] == 'r' && skip_raw(r).is_some()
        } {
            let r = if ch == 'b' { i + 1 } else { i };
            i = skip_raw(r).unwrap();
        } else if ch == 'b' && i + 1 < n && c[i + 1] == '"' && (i == 0 || !is_ident_char(c[i - 1]))
        {
            i = skip_quoted(i + 1);
        } else if ch == '\'' || (ch == 'b' && i + 1 < n && c[i + 1] == '\'') {
            let q = if ch == 'b' { i + 1 } else { i };
            if q + 1 < n && c[q + 1] == '\\' {
                // An escaped character literal: to its closing quote.
                let mut j = q + 2;
                while j < n && c[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
            } else if q + 2 < n && c[q + 2] == '\'' {
                i = q + 3;
            } else {
                // A lifetime or a label: drop the quote, keep nothing.
                i = q + 1;
                while i < n && is_ident_char(c[i]) {
                    i += 1;
                }
            }
        } else if ch.is_ascii_digit() {
            while i < n && (is_ident_char(c[i]) || c[i] == '.') {
                if c[i] == '.' && !(i + 1 < n && c[i + 1].is_ascii_digit()) {
                    break;
                }
                i += 1;
            }
        } else if is_ident_char(ch) {
            let start = i;
            while i < n && is_ident_char(c[i]) {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            out.push(Tok::Ident(word.trim_start_matches("r#").to_string()));
        } else if ch == ':' && i + 1 < n && c[i + 1] == ':' {
            out.push(Tok::PathSep);
            i += 2;
        } else {
            out.push(Tok::Punct(ch));
            i += 1;
        }
    }
    out
}

fn is_ident_char(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_'
}

/// One path named in a file: its segments as written, and the inline
/// module (inside the file) it was written in.
#[derive(Clone, Debug)]
struct NamedPath {
    segments: Vec<String>,
    /// The inline modules (`mod name { ... }`) around it, outermost first.
    inline: Vec<String>,
}

/// Which code a rule reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Code {
    /// The code that ships: `#[cfg(test)]` items and files left out.
    Shipped,
    /// Everything, the tests included.
    WithTests,
}

/// What one file names: every path of two or more segments (and the one
/// segment paths of `use` trees), outside `#[cfg(test)]` items unless
/// `Code::WithTests`; and the child modules it declares `#[cfg(test)]`
/// (test-only files).
#[derive(Debug, Default)]
struct Scan {
    paths: Vec<NamedPath>,
    test_children: Vec<String>,
}

fn scan(src: &str, code: Code) -> Scan {
    let t = tokens(src);
    let mut scan = Scan::default();
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    let ident = |k: usize| match t.get(k) {
        Some(Tok::Ident(s)) => Some(s.as_str()),
        _ => None,
    };
    while i < t.len() {
        // `#[cfg(test)]`: skip the item it guards.
        if t[i] == Tok::Punct('#')
            && t.get(i + 1) == Some(&Tok::Punct('['))
            && ident(i + 2) == Some("cfg")
            && t.get(i + 3) == Some(&Tok::Punct('('))
            && ident(i + 4) == Some("test")
            && t.get(i + 5) == Some(&Tok::Punct(')'))
            && t.get(i + 6) == Some(&Tok::Punct(']'))
        {
            let mut j = i + 7;
            // A `mod name;` declared for tests only: its file is left out.
            let mut k = j;
            while t.get(k) == Some(&Tok::Punct('#')) {
                k = skip_group(&t, k + 1);
            }
            if ident(k) == Some("pub") {
                k += 1;
            }
            if ident(k) == Some("mod") && t.get(k + 2) == Some(&Tok::Punct(';')) {
                scan.test_children.push(ident(k + 1).unwrap().to_string());
            }
            if code == Code::WithTests {
                i = j;
                continue;
            }
            let mut d = 0usize;
            while j < t.len() {
                match &t[j] {
                    Tok::Punct('{') | Tok::Punct('(') | Tok::Punct('[') => d += 1,
                    Tok::Punct('}') | Tok::Punct(')') | Tok::Punct(']') => {
                        d -= 1;
                        if d == 0 && t[j] == Tok::Punct('}') {
                            break;
                        }
                    }
                    Tok::Punct(';') if d == 0 => break,
                    _ => {}
                }
                j += 1;
            }
            i = j + 1;
            continue;
        }
        match &t[i] {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth -= 1;
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            Tok::Ident(w) if w == "mod" => {
                if let (Some(name), Some(Tok::Punct('{'))) = (ident(i + 1), t.get(i + 2)) {
                    inline.push((name.to_string(), depth));
                    depth += 1;
                    i += 3;
                    continue;
                }
            }
            _ => {}
        }
        let inline_names = || inline.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        let after_sep = i > 0 && t[i - 1] == Tok::PathSep;
        if ident(i) == Some("use") && !after_sep {
            let mut paths = Vec::new();
            let end = use_tree(&t, i + 1, Vec::new(), &mut paths);
            for segments in paths {
                scan.paths.push(NamedPath {
                    segments,
                    inline: inline_names(),
                });
            }
            i = end;
            continue;
        }
        if ident(i).is_some() && !after_sep && t.get(i + 1) == Some(&Tok::PathSep) {
            let mut segments = vec![ident(i).unwrap().to_string()];
            let mut j = i + 1;
            while t.get(j) == Some(&Tok::PathSep) {
                match ident(j + 1) {
                    Some(s) => {
                        segments.push(s.to_string());
                        j += 2;
                    }
                    None => break,
                }
            }
            scan.paths.push(NamedPath {
                segments,
                inline: inline_names(),
            });
            i = j;
            continue;
        }
        i += 1;
    }
    scan
}

/// The index after the bracketed group that starts at `t[open]`.
fn skip_group(t: &[Tok], open: usize) -> usize {
    let mut d = 0usize;
    let mut j = open;
    while j < t.len() {
        match t[j] {
            Tok::Punct('{') | Tok::Punct('(') | Tok::Punct('[') => d += 1,
            Tok::Punct('}') | Tok::Punct(')') | Tok::Punct(']') => {
                d -= 1;
                if d == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    j
}

/// Parses the use tree at `t[i]` under `prefix`, pushing every full path it
/// names (`a::{self, b::C}` names `a` and `a::b::C`); returns the index
/// after it (after the `;` at the top level).
fn use_tree(t: &[Tok], mut i: usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let mut path = prefix;
    if t.get(i) == Some(&Tok::PathSep) {
        i += 1;
    }
    loop {
        match t.get(i) {
            Some(Tok::Ident(s)) if s == "self" && !path.is_empty() => {
                i += 1;
            }
            Some(Tok::Ident(s)) if s == "as" => {
                i += 2;
            }
            Some(Tok::Ident(s)) => {
                path.push(s.clone());
                i += 1;
            }
            Some(Tok::PathSep) => i += 1,
            Some(Tok::Punct('{')) => {
                i += 1;
                loop {
                    i = use_tree(t, i, path.clone(), out);
                    match t.get(i) {
                        Some(Tok::Punct(',')) => i += 1,
                        Some(Tok::Punct('}')) => {
                            i += 1;
                            break;
                        }
                        _ => return i,
                    }
                    if t.get(i) == Some(&Tok::Punct('}')) {
                        i += 1;
                        break;
                    }
                }
                return if t.get(i) == Some(&Tok::Punct(';')) {
                    i + 1
                } else {
                    i
                };
            }
            Some(Tok::Punct('*')) => {
                i += 1;
            }
            Some(Tok::Punct(';')) => {
                out.push(path);
                return i + 1;
            }
            _ => {
                // `,` or `}`: the end of a branch of a tree.
                out.push(path);
                return i;
            }
        }
    }
}

// ---------------------------------------------------------------------------
// A crate's modules.

/// One source file of a crate: its module path (`[]` for the crate root,
/// `["services", "occ"]` for `services/occ/mod.rs` or `services/occ.rs`).
struct ModuleFile {
    rel: PathBuf,
    module: Vec<String>,
    scan: Scan,
}

/// The files of the crate whose sources are under `src` (its root is
/// `lib.rs`), test-only files left out unless `Code::WithTests`.
fn crate_files(src: &Path, code: Code) -> Vec<ModuleFile> {
    let mut files = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let rel = p.strip_prefix(src).unwrap().to_path_buf();
                let mut module: Vec<String> = rel
                    .with_extension("")
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if matches!(
                    module.last().map(String::as_str),
                    Some("mod") | Some("lib") | Some("main")
                ) {
                    module.pop();
                }
                let text = std::fs::read_to_string(&p).unwrap();
                files.push(ModuleFile {
                    rel,
                    module,
                    scan: scan(&text, code),
                });
            }
        }
    }
    files.sort_by(|a, b| a.module.cmp(&b.module));
    let test_only: Vec<Vec<String>> = files
        .iter()
        .flat_map(|f| {
            f.scan.test_children.iter().map(|c| {
                let mut m = f.module.clone();
                m.push(c.clone());
                m
            })
        })
        .collect();
    if code == Code::Shipped {
        files.retain(|f| !test_only.iter().any(|t| f.module.starts_with(t)));
    }
    files
}

/// The module of the crate a path written in `file` names, if it names one
/// of the crate's (by `crate::`, `super::`, `self::`, or a child module's
/// name): the deepest module (file) the path reaches.
fn resolve(
    modules: &BTreeSet<Vec<String>>,
    file: &ModuleFile,
    path: &NamedPath,
) -> Option<Vec<String>> {
    let mut here = file.module.clone();
    here.extend(path.inline.iter().cloned());
    let mut segs = path.segments.iter().peekable();
    let mut at = match segs.peek().map(|s| s.as_str()) {
        Some("crate") => {
            segs.next();
            Vec::new()
        }
        Some("self") => {
            segs.next();
            here
        }
        Some("super") => here,
        Some(first) => {
            let mut child = here.clone();
            child.push(first.to_string());
            if !modules.contains(&child) {
                return None;
            }
            here
        }
        None => return None,
    };
    while segs.peek().map(|s| s.as_str()) == Some("super") {
        segs.next();
        at.pop();
    }
    // Inline modules are no files: the file that holds them.
    while !modules.contains(&at) {
        at.pop();
    }
    for s in segs {
        let mut next = at.clone();
        next.push(s.clone());
        if modules.contains(&next) {
            at = next;
        } else {
            break;
        }
    }
    Some(at)
}

/// An import of one module by another, with where it was written.
struct Edge {
    from: Vec<String>,
    to: Vec<String>,
    file: PathBuf,
    path: String,
}

/// Every import between two modules of the crate under `src`.
fn module_edges(src: &Path) -> Vec<Edge> {
    let files = crate_files(src, Code::Shipped);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| f.module.clone()).collect();
    let mut edges = Vec::new();
    for f in &files {
        for p in &f.scan.paths {
            if let Some(to) = resolve(&modules, f, p) {
                if to != f.module {
                    edges.push(Edge {
                        from: f.module.clone(),
                        to,
                        file: f.rel.clone(),
                        path: p.segments.join("::"),
                    });
                }
            }
        }
    }
    edges
}

/// The graph of one folder: `(child A, child B)` -> the imports behind the
/// edge A -> B (`"file names path"`).
type FolderGraph = BTreeMap<(String, String), Vec<String>>;

/// The circles of imports between the modules of the crate under `src`.
///
/// The graph is taken one folder at a time. In a folder (the crate root,
/// or a module with children), the nodes are its child modules, each with
/// everything below it: `services/occ/mod.rs` and `services/occ/check.rs`
/// are the one node `occ` in `services`. An import from a module below
/// child A to a module below child B (A ≠ B) is an edge A -> B of that
/// folder's graph. Imports between a module and its own parent or child
/// (`super::Params` in a child, `pub use check::Checked` in its `mod.rs`)
/// are no edges: a `mod.rs` and its children are one unit to the outside,
/// and an import of a parent's re-export is an edge to that parent. Each
/// folder's graph must have no circle.
///
/// What is read: every path that starts with `crate::`, `super::`, `self::`
/// or a child module's name, in `use` items and in code, resolved to the
/// deepest module it names (`crate::services::store::ItemKey` names
/// `services::store`). Left out: comments (doc links included) and
/// `#[cfg(test)]` items and files (a unit test may drive its module
/// together with the modules above it).
fn module_graph(src: &Path) -> Vec<String> {
    let mut graphs: BTreeMap<Vec<String>, FolderGraph> = BTreeMap::new();
    for e in module_edges(src) {
        let common = e.from.iter().zip(&e.to).take_while(|(a, b)| a == b).count();
        if common == e.from.len() || common == e.to.len() {
            continue; // a module and its ancestor
        }
        let folder = e.from[..common].to_vec();
        let key = (e.from[common].clone(), e.to[common].clone());
        graphs
            .entry(folder)
            .or_default()
            .entry(key)
            .or_default()
            .push(format!("{} names {}", e.file.display(), e.path));
    }
    let mut circles = Vec::new();
    for (folder, edges) in &graphs {
        let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (a, b) in edges.keys() {
            next.entry(a).or_default().push(b);
        }
        for component in strongly_connected(&next) {
            let circle = shortest_circle(&next, &component);
            let mut why = Vec::new();
            for pair in circle.windows(2) {
                let witnesses = &edges[&(pair[0].to_string(), pair[1].to_string())];
                let shown: Vec<&str> = witnesses.iter().take(3).map(String::as_str).collect();
                let more = witnesses.len() - shown.len();
                why.push(format!(
                    "  {} -> {}: {}{}",
                    pair[0],
                    pair[1],
                    shown.join("; "),
                    if more > 0 {
                        format!(" (and {more} more)")
                    } else {
                        String::new()
                    }
                ));
            }
            circles.push(format!(
                "in {}/{}: {} (of the modules {} that reach each other)\n{}",
                src.display(),
                folder.join("/"),
                circle.join(" -> "),
                component.join(", "),
                why.join("\n")
            ));
        }
    }
    circles
}

/// The shortest circle through the nodes of `component` (a strongly
/// connected component): its nodes, the first repeated at the end.
fn shortest_circle<'a>(
    next: &BTreeMap<&'a str, Vec<&'a str>>,
    component: &[&'a str],
) -> Vec<&'a str> {
    let inside: BTreeSet<&str> = component.iter().copied().collect();
    let mut best: Option<Vec<&str>> = None;
    for &start in component {
        // Breadth first from `start` back to it, inside the component.
        let mut parent: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut found = None;
        while let Some(v) = queue.pop_front() {
            for &w in next.get(v).into_iter().flatten() {
                if !inside.contains(w) {
                    continue;
                }
                if w == start {
                    found = Some(v);
                    break;
                }
                if !parent.contains_key(w) {
                    parent.insert(w, v);
                    queue.push_back(w);
                }
            }
            if found.is_some() {
                break;
            }
        }
        let Some(mut v) = found else { continue };
        // Walk back from the node before `start` to `start`, then turn it round.
        let mut path = Vec::new();
        while v != start {
            path.push(v);
            v = parent.get(v).copied().unwrap_or(start);
        }
        path.push(start);
        path.reverse();
        path.push(start);
        let shorter = match &best {
            None => true,
            Some(b) => path.len() < b.len(),
        };
        if shorter {
            best = Some(path);
        }
    }
    best.expect("a strongly connected component has a circle")
}

/// The strongly connected components of more than one node (Tarjan).
fn strongly_connected<'a>(next: &BTreeMap<&'a str, Vec<&'a str>>) -> Vec<Vec<&'a str>> {
    struct State<'a> {
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        on_stack: BTreeSet<&'a str>,
        stack: Vec<&'a str>,
        out: Vec<Vec<&'a str>>,
    }
    fn visit<'a>(v: &'a str, next: &BTreeMap<&'a str, Vec<&'a str>>, s: &mut State<'a>) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        for &w in next.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(w, next, s);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on_stack.remove(w);
                component.push(w);
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        on_stack: BTreeSet::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for &v in next.keys() {
        if !s.index.contains_key(v) {
            visit(v, next, &mut s);
        }
    }
    s.out
}

/// The names the crate root under `src` re-exports (`pub use a::{b, c}`
/// re-exports `b` and `c`).
fn root_reexports(src: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let t = tokens(&text);
    let mut names = BTreeSet::new();
    for i in 0..t.len() {
        if t[i] == Tok::Ident("pub".into()) && t.get(i + 1) == Some(&Tok::Ident("use".into())) {
            let mut paths = Vec::new();
            use_tree(&t, i + 2, Vec::new(), &mut paths);
            names.extend(paths.into_iter().filter_map(|p| p.last().cloned()));
        }
    }
    names
}

/// Imports inside the crate under `src` that go through the crate root's
/// re-exports (`crate::store` for `crate::services::store`): they would hide
/// the edge to the module that defines the item.
fn imports_through_root_reexports(src: &Path) -> Vec<String> {
    let reexported = root_reexports(src);
    let mut found = Vec::new();
    for f in crate_files(src, Code::Shipped) {
        for p in &f.scan.paths {
            if p.segments.first().map(String::as_str) == Some("crate")
                && p.segments.get(1).is_some_and(|s| reexported.contains(s))
            {
                found.push(format!(
                    "{} names {}",
                    f.rel.display(),
                    p.segments.join("::")
                ));
            }
        }
    }
    found
}

#[test]
fn the_model_has_no_circle_of_imports() {
    let src = root().join("model/src");
    let circles = module_graph(&src);
    assert!(circles.is_empty(), "circles:\n{}", circles.join("\n"));
    let through = imports_through_root_reexports(&src);
    assert!(
        through.is_empty(),
        "the model's own files name the crate root's re-exports (kept for the \
         other crates) instead of the module:\n{}",
        through.join("\n")
    );
}

#[test]
fn the_scenarios_have_no_circle_of_imports() {
    let src = root().join("scenarios/src");
    let circles = module_graph(&src);
    assert!(circles.is_empty(), "circles:\n{}", circles.join("\n"));
}

#[test]
fn the_module_graph_finds_a_circle() {
    let dir = std::env::temp_dir().join(format!("overcast-architecture-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("a")).unwrap();
    let write = |p: &str, s: &str| std::fs::write(src.join(p), s).unwrap();
    write("lib.rs", "mod a;\nmod b;\nmod c;\n");
    write("a/mod.rs", "mod x;\npub use x::X;\n");
    // A child naming its parent and the parent its child: no edge.
    write(
        "a/x.rs",
        "use super::X as _;\n/// crate::c is only a comment\npub struct X(crate::b::B);\n",
    );
    write(
        "b.rs",
        "use crate::{c::{self, C}};\npub struct B;\n#[cfg(test)]\nmod tests { use crate::a::X; }\n",
    );
    write(
        "c.rs",
        "pub struct C(super::a::X);\nconst S: &str = \"crate::b\";\n",
    );
    let circles = module_graph(&src);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(circles.len(), 1, "{circles:?}");
    assert!(
        circles[0].contains("a -> b -> c -> a")
            && circles[0].contains("a/x.rs names crate::b::B")
            && circles[0].contains("b.rs names crate::c")
            && circles[0].contains("c.rs names super::a::X"),
        "{}",
        circles[0]
    );
}

// ---------------------------------------------------------------------------
// Scenarios: services, kit and harness.

/// The service folders under `scenarios/src/services/`.
fn scenario_services() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("scenarios/src/services"))
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            p.is_dir()
                .then(|| p.file_name().unwrap().to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    names
}

#[test]
fn no_service_names_another() {
    let src = root().join("scenarios/src");
    let files = crate_files(&src, Code::WithTests);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| f.module.clone()).collect();
    let services = scenario_services();
    assert!(services.len() >= 7, "the services: {services:?}");
    let mut found = Vec::new();
    for f in &files {
        let [first, own, ..] = f.module.as_slice() else {
            continue;
        };
        if first != "services" {
            continue;
        }
        for p in &f.scan.paths {
            let Some(to) = resolve(&modules, f, p) else {
                continue;
            };
            if let [first, other, ..] = to.as_slice() {
                if first == "services" && other != own {
                    found.push(format!(
                        "{} names {}",
                        f.rel.display(),
                        p.segments.join("::")
                    ));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "a service's folder names another service (put what they share in kit/):\n{}",
        found.join("\n")
    );
}

/// The paths in the files under `dir` that name a scenario service: a path
/// through `services`, or with a service's name as a module, unless it is a
/// path into the model (`overcast_model::feed::...` is the model's feed).
fn paths_naming_a_service(dir: &Path, services: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for f in crate_files(dir, Code::WithTests) {
        for p in &f.scan.paths {
            if p.segments.first().map(String::as_str) == Some("overcast_model") {
                continue;
            }
            // The last segment is an item, not a module.
            let modules = &p.segments[..p.segments.len().saturating_sub(1)];
            if modules
                .iter()
                .any(|s| s == "services" || services.contains(s))
            {
                found.push(format!(
                    "{}/{} names {}",
                    dir.display(),
                    f.rel.display(),
                    p.segments.join("::")
                ));
            }
        }
    }
    found
}

#[test]
fn the_kit_and_the_harness_name_no_service() {
    let services = scenario_services();
    let mut found = paths_naming_a_service(&root().join("scenarios/src/kit"), &services);
    found.extend(paths_naming_a_service(
        &root().join("harness/src"),
        &services,
    ));
    assert!(
        found.is_empty(),
        "shared code names a service:\n{}",
        found.join("\n")
    );
}

// ---------------------------------------------------------------------------
// Docs.

/// The crates (by their root file) that deny `missing_docs`: every crate
/// but `lin` (its docs are complete as well; it is to follow).
const DOCUMENTED: &[&str] = &[
    "model/src/lib.rs",
    "sim/src/lib.rs",
    "harness/src/lib.rs",
    "scenarios/src/lib.rs",
    "src/main.rs",
];

#[test]
fn documented_crates_deny_missing_docs() {
    let workspace_lints = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let workspace_denies = workspace_lints
        .lines()
        .any(|l| l.replace(' ', "").starts_with("missing_docs=\"deny\""));
    for rootfile in DOCUMENTED {
        let text = std::fs::read_to_string(root().join(rootfile)).unwrap();
        let t = tokens(&text);
        let denies = t.windows(7).any(|w| {
            w == [
                Tok::Punct('#'),
                Tok::Punct('!'),
                Tok::Punct('['),
                Tok::Ident("deny".into()),
                Tok::Punct('('),
                Tok::Ident("missing_docs".into()),
                Tok::Punct(')'),
            ]
        });
        assert!(
            denies || workspace_denies,
            "{rootfile} does not deny missing_docs (`#![deny(missing_docs)]`)"
        );
    }
}

/// Every dependency's features, as `cargo tree` resolves them for `edges`
/// (`package version [features]` lines).
fn resolved_features(edges: &str) -> BTreeSet<String> {
    let out = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--workspace",
            "--offline",
            "--locked",
            "--prefix",
            "none",
        ])
        .args(["-e", edges, "-f", "{p} [{f}]"])
        .current_dir(root())
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim_end_matches(" (*)").to_string())
        .collect()
}

/// `cargo run --release` after `cargo test --release` builds nothing again:
/// every crate the CLI's build uses is resolved with the same features as in
/// the test build, whose dev-dependencies turn more on (the root package
/// names those features).
#[test]
fn tests_and_the_cli_share_one_build_of_every_dependency() {
    let normal = resolved_features("normal,build");
    let with_dev = resolved_features("normal,build,dev");
    let differ: Vec<&String> = normal.difference(&with_dev).collect();
    assert!(
        differ.is_empty(),
        "resolved with other features in the test build (name them in the root Cargo.toml): {differ:?}"
    );
}
