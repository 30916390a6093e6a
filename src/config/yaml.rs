//! Reading the config's YAML into a `serde_json::Value`, incrementally for large files.
//!
//! A hot reload of a 1,000-agent file (600 KiB) spent most of its time parsing YAML that had not
//! changed: one edited card re-parsed a thousand. [`parse`] cuts the top-level `agents:` list
//! into one text per agent, parses each text on its own and memoizes the result by text (bounded:
//! [`MEMO_CAPACITY`] bytes of text), so a reload parses only the agents whose text changed, plus
//! the rest of the file.
//!
//! The cut is made only where it is certain to mean what the whole file means, and the whole
//! file is parsed as before otherwise:
//! - files under [`MIN_CHUNKED`] bytes (nothing to gain);
//! - files with an anchor, alias, tag or merge key (`&`, `*`, `!` anywhere, even inside a
//!   string: such a file is just parsed whole), a tab, a directive or a document marker;
//! - unless there is exactly one `agents:` line at column 0 whose list items all start at one
//!   indentation (`- ` at that column), every other line of the list being blank, a comment or
//!   indented deeper;
//! - and whenever a piece fails to parse or does not parse to what it should (one list item;
//!   a mapping with an empty `agents` list for the rest), so that every syntax error is reported
//!   by the whole-file parse, with its line and column in the file.

use std::sync::{Arc, LazyLock};

use serde_json::Value;

/// Files smaller than this (bytes) are always parsed whole.
pub const MIN_CHUNKED: usize = 64 * 1024;

/// How much agent text (bytes of YAML) [`parse`] keeps parsed: 8 MiB, about 13,000 agents of
/// 600 bytes (the generated 1,000-agent bench file holds 600 KiB).
pub const MEMO_CAPACITY: u64 = 8 * 1024 * 1024;

/// Parsed agent items by their exact text (the item's lines as written, indentation included),
/// weighed by the text's length.
static MEMO: LazyLock<moka::sync::Cache<String, Arc<Value>>> = LazyLock::new(|| {
    moka::sync::Cache::builder()
        .max_capacity(MEMO_CAPACITY)
        .weigher(|text: &String, _| u32::try_from(text.len()).unwrap_or(u32::MAX))
        .build()
});

/// The config text as a JSON value, exactly as `serde_yaml_ng::from_str::<Value>(text)` gives it
/// (see the module docs for when it is parsed in pieces).
///
/// # Errors
/// The whole-file parse's error (with its line and column), whenever the text is not valid YAML
/// or not representable as JSON.
pub fn parse(text: &str) -> Result<Value, serde_yaml_ng::Error> {
    if let Some(value) = chunked(text, MIN_CHUNKED) {
        return Ok(value);
    }
    serde_yaml_ng::from_str(text)
}

/// The pieces of a file: everything but the agents list, and each agent item's text.
struct Cut<'t> {
    /// The file with the agents list's items left out (`agents:` then `[]`).
    rest: String,
    items: Vec<&'t str>,
}

fn chunked(text: &str, min: usize) -> Option<Value> {
    let cut = cut(text, min)?;
    let mut rest: Value = serde_yaml_ng::from_str(&cut.rest).ok()?;
    let Some(Value::Array(empty)) = rest.get("agents") else { return None };
    if !empty.is_empty() {
        return None;
    }
    let mut agents = Vec::with_capacity(cut.items.len());
    for item in cut.items {
        let parsed = match MEMO.get(item) {
            Some(v) => v,
            None => {
                let v: Value = serde_yaml_ng::from_str(item).ok()?;
                let v = match v {
                    Value::Array(mut one) if one.len() == 1 => Arc::new(one.remove(0)),
                    _ => return None,
                };
                MEMO.insert(item.to_string(), v.clone());
                v
            }
        };
        agents.push(Value::clone(&parsed));
    }
    *rest.get_mut("agents")? = Value::Array(agents);
    Some(rest)
}

/// Finds the agents list's items, or `None` when the file is not one [`parse`] cuts (files under
/// `min` bytes included).
fn cut(text: &str, min: usize) -> Option<Cut<'_>> {
    if text.len() < min || text.contains(['&', '*', '!', '\t', '\r']) {
        return None;
    }
    let mut agents_line = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end();
        if bare.starts_with("---") || bare.starts_with("...") || bare.starts_with('%') {
            return None;
        }
        if line_is_agents_key(bare) {
            if agents_line.is_some() {
                return None;
            }
            agents_line = Some((offset, offset + line.len()));
        }
        offset += line.len();
    }
    let (key_start, list_start) = agents_line?;
    // The list runs to the next line at column 0 that is not blank, a comment or an item.
    let mut indent = None;
    let mut starts = Vec::new();
    let mut end = text.len();
    let mut at = list_start;
    for line in text[list_start..].split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', ' ']);
        // YAML indents with spaces only (a tab anywhere already sent the file to the whole parse).
        let content = bare.trim_start_matches(' ');
        let depth = bare.len() - content.len();
        if content.is_empty() || content.starts_with('#') {
            at += line.len();
            continue;
        }
        if depth == 0 && !content.starts_with('-') {
            end = at;
            break;
        }
        let item = content == "-" || content.starts_with("- ");
        match indent {
            None if item => indent = Some(depth),
            None => return None,
            Some(_) => {}
        }
        let n = indent?;
        if depth < n || (depth == n && !item) {
            return None;
        }
        if depth == n {
            starts.push(at);
        }
        at += line.len();
    }
    if starts.is_empty() {
        return None;
    }
    let items = starts.iter().zip(starts.iter().skip(1).chain(std::iter::once(&end))).map(|(&s, &e)| &text[s..e]);
    let mut rest = String::with_capacity(key_start + 16 + text.len() - end);
    rest.push_str(&text[..key_start]);
    rest.push_str("agents: []\n");
    rest.push_str(&text[end..]);
    Some(Cut { rest, items: items.collect() })
}

/// `agents:` at column 0 with nothing after it but spaces or a comment.
fn line_is_agents_key(bare: &str) -> bool {
    bare.strip_prefix("agents:").is_some_and(|after| {
        let after = after.trim_start();
        after.is_empty() || after.starts_with('#')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn big(agents: usize, extra: &str) -> String {
        let mut s = String::from("version: 1\n# a comment\nsupervisor:\n  port: 8080\nagents:\n");
        for i in 0..agents {
            s.push_str(&format!(
                "  # agent {i}\n  - id: agent_{i}\n    name: {{ zh: 代理{i}, en: \"Agent {i}\" }}\n    description: |\n      Line one of {i}.\n\n      - not an item, part of the text\n    keywords: [a{i}, b{i}]\n    examples:\n      - \"example {i}\"\n    enabled: {}\n{extra}\n",
                i % 2 == 0
            ));
        }
        s.push_str("widgets_map: widgets_map.json\n");
        s
    }

    #[test]
    fn the_cut_parse_equals_the_whole_parse() {
        let text = big(400, "");
        assert!(text.len() >= MIN_CHUNKED);
        let cut = cut(&text, MIN_CHUNKED).expect("cut");
        assert_eq!(cut.items.len(), 400);
        let whole: Value = serde_yaml_ng::from_str(&text).unwrap();
        assert_eq!(chunked(&text, MIN_CHUNKED).expect("chunked"), whole);
        // Keys keep their order (the rest's `agents` placeholder is replaced in place).
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&parse(&text).unwrap()), keys(&whole));
        // Once more from the memo, then with one agent changed.
        assert_eq!(parse(&text).unwrap(), whole);
        let edited = text.replacen("Line one of 7.", "Line one of seven.", 1);
        let whole: Value = serde_yaml_ng::from_str(&edited).unwrap();
        assert_eq!(parse(&edited).unwrap(), whole);
        assert_eq!(whole["agents"][7]["description"], "Line one of seven.\n\n- not an item, part of the text\n");
    }

    #[test]
    fn files_it_cannot_cut_safely_are_parsed_whole() {
        for odd in [
            big(400, "    tags: &anchor [x]"),
            big(400, "    note: \"hello!\""),
            big(400, "   bad_indent: 1"),
            big(10, ""),
            big(400, "")
                .replace("agents:\n", "agents:\n  - id: first\n    name: x\n")
                .replace("\n  # agent 0", "\nagents: []\n  # agent 0"),
        ] {
            assert!(chunked(&odd, MIN_CHUNKED).is_none(), "{}", &odd[..200]);
            let whole = serde_yaml_ng::from_str::<Value>(&odd).map_err(|e| e.to_string());
            assert_eq!(parse(&odd).map_err(|e| e.to_string()), whole);
        }
    }

    /// Every config of the repository (examples, fixtures, the demo's), cut whatever its size,
    /// parses to what the whole-file parse gives.
    #[test]
    fn every_config_in_the_repository_cuts_to_the_same_value() {
        fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() && !p.ends_with("target") && !p.ends_with("node_modules") {
                    walk(&p, out);
                } else if p.extension().is_some_and(|x| x == "yaml") {
                    out.push(p);
                }
            }
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        for dir in ["tests", "examples", "deploy", "bench"] {
            walk(&root.join(dir), &mut files);
        }
        files.push(root.join("agents_config.yaml"));
        let mut cut_files = 0;
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            let Ok(whole) = serde_yaml_ng::from_str::<Value>(&text) else { continue };
            if whole.get("agents").is_none() {
                continue;
            }
            if let Some(v) = chunked(&text, 0) {
                assert_eq!(v, whole, "{}", f.display());
                cut_files += 1;
            }
        }
        assert!(cut_files >= 8, "{cut_files}");
    }

    #[test]
    fn a_syntax_error_is_reported_by_the_whole_parse_with_its_line() {
        let text = big(400, "").replacen("  - id: agent_300\n", "  - id: agent_300\n    name: \"unclosed\n", 1);
        let err = parse(&text).unwrap_err();
        let whole = serde_yaml_ng::from_str::<Value>(&text).unwrap_err();
        assert_eq!(err.to_string(), whole.to_string());
        assert!(err.location().is_some_and(|l| l.line() > 3000), "{err}");
    }
}
