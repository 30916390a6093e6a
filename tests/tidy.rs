//! Source-tree hygiene, checked by reading the files (no build needed): every module opens with a
//! `//!` doc, nothing cites documents outside the repository (a clone has only `docs/`), no
//! function in `src/` is longer than [`MAX_FN_LINES`], and the top-level modules of `src/` form
//! no import cycle. The last test prints the modules as layers
//! (`cargo test --test integration tidy -- --nocapture`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `path` relative to the repository root, with `/` separators.
fn rel(path: &Path) -> String {
    let p = path.strip_prefix(root()).unwrap_or(path);
    p.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
}

/// Every file under `dir`, sorted; hidden directories (`.venv`, …), `target` and `__pycache__`
/// are skipped.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("cannot list {}: {e}", d.display())) {
            let path = entry.expect("directory entry").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if path.is_dir() {
                if !name.starts_with('.') && name != "target" && name != "__pycache__" {
                    todo.push(path);
                }
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn rust_sources() -> Vec<PathBuf> {
    files(&root().join("src")).into_iter().filter(|p| p.extension().is_some_and(|e| e == "rs")).collect()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

#[test]
fn every_source_file_starts_with_a_module_doc() {
    let offenders: Vec<String> =
        rust_sources().into_iter().filter(|p| !read(p).trim_start().starts_with("//!")).map(|p| rel(&p)).collect();
    assert!(
        offenders.is_empty(),
        "these files do not start with a `//!` module doc saying what the module is for:\n  {}",
        offenders.join("\n  ")
    );
}

/// What citing a document outside the repository looks like (compared lower-cased).
const OUTSIDE_CITATIONS: [&str; 4] = ["design.md", "../shared", "seed 00", "seeds 00"];

#[test]
fn nothing_cites_documents_outside_the_repository() {
    let this = root().join("tests").join("tidy.rs");
    let mut scanned = files(&root().join("src"));
    scanned.extend(files(&root().join("tests")));
    scanned.extend(["README.md", "ARCHITECTURE.md"].map(|f| root().join(f)));
    let mut offenders = Vec::new();
    for path in scanned.iter().filter(|p| **p != this) {
        // Binary files cannot cite anything.
        let Ok(text) = std::fs::read_to_string(path) else { continue };
        for (n, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            if OUTSIDE_CITATIONS.iter().any(|c| lower.contains(c)) {
                offenders.push(format!("{}:{}: {}", rel(path), n + 1, line.trim()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "{} line(s) cite documents outside the repository ({}); a clone has none of them, so cite \
         the docs/*.md file that describes the behaviour instead:\n  {}",
        offenders.len(),
        OUTSIDE_CITATIONS.join(", "),
        offenders.join("\n  ")
    );
}

/// The leading identifier of `s`.
fn ident(s: &str) -> String {
    s.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
}

/// The top-level modules named by `crate::…` in non-test code: paths, `use` lines and grouped
/// imports (`use crate::{a::B, c}`). Comment lines and everything after a `#[cfg(test)]` line are
/// skipped; `$crate::` is not a reference.
fn crate_refs(text: &str) -> BTreeSet<String> {
    let code: Vec<&str> =
        text.lines().take_while(|l| l.trim() != "#[cfg(test)]").filter(|l| !l.trim_start().starts_with("//")).collect();
    let code = code.join("\n");
    let mut refs = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        if code[..at].chars().next_back().is_some_and(|c| c == '$' || c == '_' || c.is_alphanumeric()) {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        let Some(group) = rest.strip_prefix('{') else {
            refs.insert(ident(rest));
            continue;
        };
        // The head of each item of the group, up to its closing brace.
        let (mut depth, mut start) = (0usize, 0usize);
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth > 0 => depth -= 1,
                '}' | ',' if depth == 0 => {
                    refs.insert(ident(&group[start..i]));
                    if c == '}' {
                        break;
                    }
                    start = i + 1;
                }
                _ => {}
            }
        }
    }
    refs
}

#[test]
fn top_level_modules_form_no_import_cycle() {
    // Top-level module -> the modules it uses, and which files make each edge.
    let src = root().join("src");
    let top = |p: &Path| -> String {
        let first = p.strip_prefix(&src).expect("under src").components().next().expect("a component");
        first.as_os_str().to_string_lossy().trim_end_matches(".rs").to_string()
    };
    let sources: Vec<(String, PathBuf)> =
        rust_sources().into_iter().map(|p| (top(&p), p)).filter(|(m, _)| m != "lib" && m != "main").collect();
    let modules: BTreeSet<String> = sources.iter().map(|(m, _)| m.clone()).collect();
    let mut graph: BTreeMap<&str, BTreeSet<&str>> = modules.iter().map(|m| (m.as_str(), BTreeSet::new())).collect();
    let mut made_by: BTreeMap<(&str, &str), BTreeSet<String>> = BTreeMap::new();
    for (m, path) in &sources {
        for r in crate_refs(&read(path)) {
            if let Some(to) = modules.get(&r).filter(|to| *to != m) {
                graph.get_mut(m.as_str()).expect("a module").insert(to.as_str());
                made_by.entry((m.as_str(), to.as_str())).or_default().insert(rel(path));
            }
        }
    }

    // Repeated DFS: everything reachable from each module (itself included); two modules share a
    // strongly connected component when each reaches the other.
    let reach: BTreeMap<&str, BTreeSet<&str>> = graph
        .keys()
        .map(|&start| {
            let (mut seen, mut todo) = (BTreeSet::from([start]), vec![start]);
            while let Some(v) = todo.pop() {
                todo.extend(graph[v].iter().copied().filter(|&w| seen.insert(w)));
            }
            (start, seen)
        })
        .collect();
    let component = |v: &str| -> Vec<&str> { reach[v].iter().copied().filter(|w| reach[w].contains(v)).collect() };
    let components: BTreeSet<Vec<&str>> = graph.keys().map(|v| component(v)).collect();

    // Layers of the condensation: 0 uses nothing else; n uses something of layer n-1.
    let mut layer: BTreeMap<Vec<&str>, usize> = components.iter().map(|c| (c.clone(), 0)).collect();
    for _ in 0..components.len() {
        for (&v, targets) in &graph {
            for &w in targets.iter().filter(|&&w| !component(v).contains(&w)) {
                let below = layer[&component(w)] + 1;
                let l = layer.get_mut(&component(v)).expect("a component");
                *l = (*l).max(below);
            }
        }
    }
    let show = |c: &Vec<&str>| if c.len() > 1 { format!("{{{}}}", c.join(", ")) } else { c[0].to_string() };
    let mut layers = String::from("layers of src/ (each uses only lower layers; {…} = an import cycle):");
    for n in 0..=layer.values().copied().max().unwrap_or(0) {
        let here: Vec<String> = layer.iter().filter(|(_, l)| **l == n).map(|(c, _)| show(c)).collect();
        layers.push_str(&format!("\n  {n}: {}", here.join("  ")));
    }
    println!("{layers}");

    let cycles: Vec<String> = components
        .iter()
        .filter(|c| c.len() > 1)
        .map(|c| {
            let edges: Vec<String> = made_by
                .iter()
                .filter(|((from, to), _)| c.contains(from) && c.contains(to))
                .map(|((from, to), files)| {
                    format!("{from} -> {to} ({})", files.iter().cloned().collect::<Vec<_>>().join(", "))
                })
                .collect();
            format!("{}\n      {}", c.join(" <-> "), edges.join("\n      "))
        })
        .collect();
    assert!(
        cycles.is_empty(),
        "{} import cycle(s) between top-level modules of src/ (each edge: the files that make it); \
         move the shared item down a layer or invert the dependency:\n  {}",
        cycles.len(),
        cycles.join("\n  ")
    );
}

#[test]
fn tidy_reads_crate_references_from_paths_and_groups() {
    let text = "//! crate::docs_only\nuse crate::a::B;\nuse crate::{c, d::{E, F}, self};\nlet x = \
                crate::g::h();\nmacro_rules! m { () => { $crate::i } }\n// crate::j\n#[cfg(test)]\nuse crate::k;\n";
    let want: BTreeSet<String> = ["a", "c", "d", "g", "self"].map(String::from).into();
    assert_eq!(crate_refs(text), want);
}

/// The longest a function of `src/` may be, in lines from its `fn` line to its closing brace
/// (test code excluded). Functions are kept under ~80 lines; this is the hard limit.
const MAX_FN_LINES: usize = 100;

/// `(name, first line (1-based), length in lines)` of every `fn` item of `text` before its first
/// `#[cfg(test)]`: a line starting (after indentation) with `fn`, `pub fn`, `pub(…) fn`, `async
/// fn` or `pub async fn` runs until its braces balance; a declaration ending in `;` before any
/// brace (a trait method without body) is one line. Braces are counted as characters, as a quick
/// scan does (braces in strings and comments count too).
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    let lines: Vec<&str> = code.split('\n').collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(name) = fn_name(line) else { continue };
        let (mut depth, mut started, mut end) = (0i64, false, lines.len() - 1);
        for (j, l) in lines.iter().enumerate().skip(i) {
            depth += l.matches('{').count() as i64 - l.matches('}').count() as i64;
            started |= l.contains('{');
            if (started && depth <= 0) || (!started && l.trim_end().ends_with(';')) {
                end = j;
                break;
            }
        }
        out.push((name, i + 1, end - i + 1));
    }
    out
}

/// The name of the function a line starts, if it starts one.
fn fn_name(line: &str) -> Option<String> {
    let mut rest = line.trim_start();
    if let Some(r) = rest.strip_prefix("pub") {
        rest = match r.strip_prefix('(') {
            Some(r) => r.split_once(')')?.1.strip_prefix(' ')?,
            None => r.strip_prefix(' ')?,
        };
    }
    rest = rest.strip_prefix("async ").unwrap_or(rest);
    let name = ident(rest.strip_prefix("fn ")?);
    (!name.is_empty()).then_some(name)
}

#[test]
fn no_function_in_src_is_longer_than_the_limit() {
    let mut offenders = Vec::new();
    for path in rust_sources() {
        for (name, line, len) in functions(&read(&path)) {
            if len > MAX_FN_LINES {
                offenders.push(format!("{}:{line}: fn {name} is {len} lines", rel(&path)));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "{} function(s) in src/ are longer than {MAX_FN_LINES} lines; split them into helpers named for \
         what they do (keep functions under ~80 lines):\n  {}",
        offenders.len(),
        offenders.join("\n  ")
    );
}

#[test]
fn tidy_measures_functions_from_fn_line_to_closing_brace() {
    let text = "fn a() {\n    x();\n}\npub(crate) async fn b(\n    y: u8,\n) -> u8 {\n    if y > 0 { 1 } else { 2 \
                }\n}\n    fn c(&self);\npub fn d() { }\nlet f = |x| x;\n#[cfg(test)]\nfn e() {\n}\n";
    let got = functions(text);
    let want = [("a", 1, 3), ("b", 4, 5), ("c", 9, 1), ("d", 10, 1)].map(|(n, l, len)| (n.to_string(), l, len));
    assert_eq!(got, want);
}
