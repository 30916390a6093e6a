//! The Fluent catalog: the shipped `.ftl` files (embedded), operator overrides, lookups.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

use fluent_bundle::concurrent::FluentBundle;
use fluent_bundle::{FluentArgs, FluentResource, FluentValue};
use fluent_syntax::ast;
use unic_langid::LanguageIdentifier;

use super::Lang;

type Bundle = FluentBundle<Arc<FluentResource>>;

/// The shipped catalog: `(language, file, source)`, embedded at build time.
const SHIPPED: &[(Lang, &str, &str)] = &[
    (Lang::Zh, "zh-CN/stages.ftl", include_str!("../../locales/zh-CN/stages.ftl")),
    (Lang::Zh, "zh-CN/answers.ftl", include_str!("../../locales/zh-CN/answers.ftl")),
    (Lang::Zh, "zh-CN/errors.ftl", include_str!("../../locales/zh-CN/errors.ftl")),
    (Lang::En, "en/stages.ftl", include_str!("../../locales/en/stages.ftl")),
    (Lang::En, "en/answers.ftl", include_str!("../../locales/en/answers.ftl")),
    (Lang::En, "en/errors.ftl", include_str!("../../locales/en/errors.ftl")),
];

/// The shipped files, parsed once. A syntax error (which a unit test rules out) is logged and the
/// file's valid entries are kept.
static SHIPPED_RESOURCES: LazyLock<Vec<(Lang, Arc<FluentResource>)>> = LazyLock::new(|| {
    SHIPPED
        .iter()
        .map(|(lang, file, source)| {
            let resource = FluentResource::try_new((*source).to_string()).unwrap_or_else(|(resource, errors)| {
                tracing::error!(file, ?errors, "the shipped text catalog does not parse");
                resource
            });
            (*lang, Arc::new(resource))
        })
        .collect()
});

/// Messages (with their placeholders) and terms of the shipped catalog, per language.
static SHIPPED_INDEX: LazyLock<[Index; 2]> = LazyLock::new(|| {
    Lang::ALL.map(|lang| {
        let mut index = Index::default();
        for (_, resource) in SHIPPED_RESOURCES.iter().filter(|(l, _)| *l == lang) {
            index.add(resource);
        }
        index
    })
});

static SHIPPED_TEXTS: LazyLock<Arc<Texts>> = LazyLock::new(|| Arc::new(Texts::build(&[])));

/// What a catalog defines: message id -> the placeholders (`$name`) its value uses; term ids.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Index {
    pub(crate) messages: BTreeMap<String, BTreeSet<String>>,
    pub(crate) terms: BTreeSet<String>,
}

impl Index {
    fn add(&mut self, resource: &FluentResource) {
        for entry in resource.entries() {
            match entry {
                ast::Entry::Message(m) => {
                    let mut vars = BTreeSet::new();
                    if let Some(value) = &m.value {
                        placeholders(value, &mut vars);
                    }
                    self.messages.insert(m.id.name.to_string(), vars);
                }
                ast::Entry::Term(t) => {
                    self.terms.insert(t.id.name.to_string());
                }
                _ => {}
            }
        }
    }
}

/// The placeholders a pattern uses, selectors and variants included.
fn placeholders(pattern: &ast::Pattern<&str>, out: &mut BTreeSet<String>) {
    for element in &pattern.elements {
        if let ast::PatternElement::Placeable { expression } = element {
            expression_vars(expression, out);
        }
    }
}

fn expression_vars(expression: &ast::Expression<&str>, out: &mut BTreeSet<String>) {
    match expression {
        ast::Expression::Select { selector, variants } => {
            inline_vars(selector, out);
            for v in variants {
                placeholders(&v.value, out);
            }
        }
        ast::Expression::Inline(inline) => inline_vars(inline, out),
    }
}

fn inline_vars(inline: &ast::InlineExpression<&str>, out: &mut BTreeSet<String>) {
    match inline {
        ast::InlineExpression::VariableReference { id } => {
            out.insert(id.name.to_string());
        }
        ast::InlineExpression::FunctionReference { arguments, .. } => {
            for a in &arguments.positional {
                inline_vars(a, out);
            }
            for a in &arguments.named {
                inline_vars(&a.value, out);
            }
        }
        ast::InlineExpression::Placeable { expression } => expression_vars(expression, out),
        _ => {}
    }
}

/// The compiled catalog of every language: the shipped messages, maybe with operator overrides.
/// Cheap to share (`Arc`), `Send + Sync`.
pub struct Texts {
    bundles: [Bundle; 2],
    /// The word lists of simple intents: shipped, plus the operator's `lexicons.txt`.
    lexicons: super::Lexicons,
    /// How many override files were applied.
    override_files: usize,
}

impl fmt::Debug for Texts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Texts").field("override_files", &self.override_files).finish_non_exhaustive()
    }
}

impl Texts {
    /// The shipped catalog (built once).
    pub fn shipped() -> Arc<Texts> {
        SHIPPED_TEXTS.clone()
    }

    /// The shipped catalog with the overrides in `dir` applied: `<dir>/<locale>/*.ftl`, where
    /// `<locale>` is `zh-CN` or `en`. An override may only redefine messages (and terms) of the
    /// shipped catalog, with no placeholder the shipped message is not given.
    ///
    /// # Errors
    /// Every problem found, each with its file and, where it has one, line and column.
    pub fn with_overrides(dir: &Path) -> Result<Texts, Vec<TextError>> {
        let (files, mut errors) = read_overrides(dir);
        match Self::from_overrides(&files) {
            Ok(texts) if errors.is_empty() => Ok(texts),
            Ok(_) => Err(errors),
            Err(more) => {
                errors.extend(more);
                Err(errors)
            }
        }
    }

    /// The shipped catalog with `files` (as read by [`read_overrides`]) applied, in order.
    /// Used by the config loader, which hashes and watches the files it read.
    ///
    /// # Errors
    /// As [`Texts::with_overrides`].
    pub fn from_overrides(files: &[OverrideFile]) -> Result<Texts, Vec<TextError>> {
        let mut errors = Vec::new();
        let mut resources = Vec::with_capacity(files.len());
        // (language, id) -> the file that overrides it.
        let mut seen: BTreeMap<(usize, String), &Path> = BTreeMap::new();
        for file in files {
            let resource = match FluentResource::try_new(file.source.clone()) {
                Ok(r) => r,
                Err((r, parse_errors)) => {
                    for e in parse_errors {
                        errors.push(TextError::at(
                            &file.path,
                            &file.source,
                            e.pos.start,
                            format!("Fluent syntax: {e}"),
                        ));
                    }
                    r
                }
            };
            let shipped = &SHIPPED_INDEX[file.lang.index()];
            for entry in resource.entries() {
                let (id, shown) = match entry {
                    ast::Entry::Message(m) => (m.id.name, m.id.name.to_string()),
                    ast::Entry::Term(t) => (t.id.name, format!("-{}", t.id.name)),
                    _ => continue,
                };
                let err = |message: String| TextError::of_entry(&file.path, &file.source, &shown, message);
                if let Some(other) = seen.insert((file.lang.index(), shown.clone()), &file.path) {
                    errors.push(err(format!("`{shown}` is already overridden in {}", other.display())));
                }
                match entry {
                    ast::Entry::Message(m) => {
                        let Some(given) = shipped.messages.get(id) else {
                            errors.push(err(format!(
                                "`{id}` is not a message of the shipped catalog ({}); only existing messages can be overridden",
                                file.lang.locale()
                            )));
                            continue;
                        };
                        let Some(value) = &m.value else {
                            errors.push(err(format!("`{id}` has no value")));
                            continue;
                        };
                        let mut used = BTreeSet::new();
                        placeholders(value, &mut used);
                        let unknown: Vec<String> = used.difference(given).map(|v| format!("${v}")).collect();
                        if !unknown.is_empty() {
                            let given: Vec<String> = given.iter().map(|v| format!("${v}")).collect();
                            errors.push(err(format!(
                                "`{id}` uses {}, which it is not given (it is given: {})",
                                unknown.join(", "),
                                if given.is_empty() { "nothing".to_string() } else { given.join(", ") }
                            )));
                        }
                    }
                    _ => {
                        if !shipped.terms.contains(id) {
                            errors.push(err(format!(
                                "`-{id}` is not a term of the shipped catalog ({})",
                                file.lang.locale()
                            )));
                        }
                    }
                }
            }
            resources.push((file.lang, Arc::new(resource)));
        }
        if errors.is_empty() {
            Ok(Self::build(&resources))
        } else {
            Err(errors)
        }
    }

    fn build(overrides: &[(Lang, Arc<FluentResource>)]) -> Texts {
        let bundles = Lang::ALL.map(|lang| {
            let locale: LanguageIdentifier = lang.locale().parse().unwrap_or_default();
            let mut bundle = Bundle::new_concurrent(vec![locale]);
            bundle.set_use_isolating(false);
            for (_, resource) in SHIPPED_RESOURCES.iter().filter(|(l, _)| *l == lang) {
                if let Err(errors) = bundle.add_resource(resource.clone()) {
                    tracing::error!(locale = lang.locale(), ?errors, "the shipped text catalog defines an id twice");
                }
            }
            for (_, resource) in overrides.iter().filter(|(l, _)| *l == lang) {
                bundle.add_resource_overriding(resource.clone());
            }
            bundle
        });
        Texts { bundles, lexicons: super::Lexicons::shipped().clone(), override_files: overrides.len() }
    }

    /// The message `id` in `lang`, with its placeholders filled from `args`
    /// (`&[("count", n.into())]`). A missing id gives the id itself and a formatting problem
    /// (a missing argument) gives the text with `{$name}` in place; both are logged, never a
    /// panic.
    pub fn get(&self, lang: Lang, id: &str, args: &[(&str, FluentValue<'_>)]) -> String {
        let bundle = &self.bundles[lang.index()];
        let Some(pattern) = bundle.get_message(id).and_then(|m| m.value()) else {
            tracing::warn!(id, locale = lang.locale(), "no such message in the text catalog");
            return id.to_string();
        };
        let args = (!args.is_empty()).then(|| {
            let mut fluent = FluentArgs::with_capacity(args.len());
            for (name, value) in args {
                fluent.set(*name, value.clone());
            }
            fluent
        });
        let mut errors = Vec::new();
        let text = bundle.format_pattern(pattern, args.as_ref(), &mut errors);
        if !errors.is_empty() {
            tracing::warn!(id, locale = lang.locale(), ?errors, "a text of the catalog did not format cleanly");
        }
        text.into_owned()
    }

    /// The word lists of simple intents (greeting, thanks, cancel words, …).
    pub fn lexicons(&self) -> &super::Lexicons {
        &self.lexicons
    }

    /// These texts with the words of the operator's lexicon file (`<texts_dir>/lexicons.txt`,
    /// read from `path`) added to the shipped lists.
    ///
    /// # Errors
    /// Every line of `source` that is not a list of a known name, with its line.
    pub fn with_lexicon_file(mut self, path: &Path, source: &str) -> Result<Texts, Vec<TextError>> {
        self.lexicons.add(path, source)?;
        Ok(self)
    }

    /// `true` when the catalog has a message `id` (in every language).
    pub fn has(&self, id: &str) -> bool {
        self.bundles.iter().all(|b| b.has_message(id))
    }
}

/// One override file as read from `texts_dir`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverrideFile {
    /// The language of its locale directory.
    pub lang: Lang,
    /// Where it was read.
    pub path: PathBuf,
    /// Its text.
    pub source: String,
}

/// Reads the override files under `dir`: `<dir>/<locale>/*.ftl`, locales and files in name
/// order. Other files are ignored, and so are entries whose name starts with `.` (such as the
/// `..data` links of a Kubernetes volume). Returns the files read and the problems met: a missing
/// directory, an unknown locale directory, a `.ftl` file outside one, an unreadable file.
pub fn read_overrides(dir: &Path) -> (Vec<OverrideFile>, Vec<TextError>) {
    let whole =
        |path: &Path, message: String| TextError { file: path.to_path_buf(), line: None, column: None, message };
    let entries = |dir: &Path| -> Result<Vec<PathBuf>, TextError> {
        let read = std::fs::read_dir(dir).map_err(|e| whole(dir, format!("cannot read the texts directory: {e}")))?;
        let mut paths: Vec<PathBuf> = read
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| !p.file_name().and_then(|n| n.to_str()).unwrap_or(".").starts_with('.'))
            .collect();
        paths.sort();
        Ok(paths)
    };
    let mut errors = Vec::new();
    let mut files = Vec::new();
    let is_ftl = |p: &Path| p.extension().is_some_and(|e| e == "ftl");
    let top = match entries(dir) {
        Ok(paths) => paths,
        Err(e) => return (files, vec![e]),
    };
    for path in top {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        if !path.is_dir() {
            if is_ftl(&path) {
                errors.push(whole(&path, "a .ftl file belongs in a locale directory (zh-CN/, en/)".to_string()));
            }
            continue;
        }
        let Some(lang) = Lang::from_locale(&name) else {
            let known: Vec<&str> = Lang::ALL.iter().map(|l| l.locale()).collect();
            errors.push(whole(&path, format!("{name:?} is not a locale of the catalog ({})", known.join(", "))));
            continue;
        };
        let paths = match entries(&path) {
            Ok(paths) => paths,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        for file in paths.into_iter().filter(|p| is_ftl(p)) {
            match crate::files::read_text(&file, crate::files::MAX_FILE_BYTES) {
                Ok(source) => files.push(OverrideFile { lang, path: file, source }),
                Err(e) => errors.push(whole(&file, format!("cannot read: {e}"))),
            }
        }
    }
    (files, errors)
}

/// A problem in an override file (or the texts directory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextError {
    /// The file or directory.
    pub file: PathBuf,
    /// 1-based line, when the problem has one.
    pub line: Option<usize>,
    /// 1-based column, with `line`.
    pub column: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl TextError {
    /// At byte `offset` of `source`.
    fn at(file: &Path, source: &str, offset: usize, message: String) -> Self {
        let mut end = offset.min(source.len());
        while !source.is_char_boundary(end) {
            end -= 1;
        }
        let before = &source[..end];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().unwrap_or_default().chars().count() + 1;
        Self { file: file.to_path_buf(), line: Some(line), column: Some(column), message }
    }

    /// At the line defining `id` (`id =` at the start of a line).
    fn of_entry(file: &Path, source: &str, id: &str, message: String) -> Self {
        let line =
            source.lines().position(|l| l.strip_prefix(id).is_some_and(|rest| rest.trim_start().starts_with('=')));
        Self { file: file.to_path_buf(), line: line.map(|l| l + 1), column: line.map(|_| 1), message }
    }
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "{}:{l}:{c}: {}", self.file.display(), self.message),
            _ => write!(f, "{}: {}", self.file.display(), self.message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped_index(lang: Lang) -> &'static Index {
        &SHIPPED_INDEX[lang.index()]
    }

    #[test]
    fn the_shipped_catalog_parses_without_duplicates() {
        for (lang, file, source) in SHIPPED {
            if let Err((_, errors)) = FluentResource::try_new((*source).to_string()) {
                panic!("{file} ({}) does not parse: {errors:?}", lang.locale());
            }
        }
        for lang in Lang::ALL {
            let mut bundle = Bundle::new_concurrent(vec![]);
            for (_, resource) in SHIPPED_RESOURCES.iter().filter(|(l, _)| *l == lang) {
                bundle.add_resource(resource.clone()).unwrap_or_else(|e| panic!("{}: {e:?}", lang.locale()));
            }
        }
    }

    /// (a) every id of one locale exists in the other; (b) with the same placeholders.
    #[test]
    fn every_locale_has_every_message_with_the_same_placeholders() {
        let zh = shipped_index(Lang::Zh);
        let en = shipped_index(Lang::En);
        let zh_ids: BTreeSet<&String> = zh.messages.keys().collect();
        let en_ids: BTreeSet<&String> = en.messages.keys().collect();
        assert_eq!(zh_ids.difference(&en_ids).collect::<Vec<_>>(), Vec::<&&String>::new(), "only in zh-CN");
        assert_eq!(en_ids.difference(&zh_ids).collect::<Vec<_>>(), Vec::<&&String>::new(), "only in en");
        assert_eq!(zh.terms, en.terms, "terms");
        for (id, vars) in &zh.messages {
            assert_eq!(Some(vars), en.messages.get(id), "placeholders of {id}: zh-CN vs en");
        }
        assert!(zh.messages.len() > 40, "the catalog is loaded");
    }

    #[test]
    fn formats_plain_text_without_isolation_marks() {
        let t = Texts::shipped();
        assert_eq!(t.get(Lang::En, "stage-intent-started", &[]), "Understanding your request…");
        assert_eq!(t.get(Lang::Zh, "stage-intent-started", &[]), "正在理解您的需求…");
        assert_eq!(t.get(Lang::En, "stage-intent-found", &[("count", 2.into())]), "Found 2 request(s).");
        assert_eq!(t.get(Lang::Zh, "stage-intent-found", &[("count", 1.into())]), "识别到 1 项需求。");
        assert_eq!(
            t.get(Lang::En, "plan-runnable-and-blocked", &[("tasks", "a; b".into()), ("blocked", 1.into())]),
            "On it: a; b. 1 more step(s) need a few details from you."
        );
        assert_eq!(t.get(Lang::En, "list-separator", &[]), "; ");
        assert_eq!(t.get(Lang::En, "summary-example-separator", &[]), ", ");
        assert_eq!(t.get(Lang::Zh, "list-separator", &[]), "；");
        assert_eq!(t.get(Lang::En, "blocked-ask", &[("keys", "- a\n- b".into())]), "To go on, I need:\n- a\n- b");
        assert_eq!(t.get(Lang::En, "blocked-ask", &[("keys", "".into())]), "To go on, I need:\n");
        assert_eq!(
            t.get(Lang::En, "direct-greeting", &[("capabilities", "- x".into())]),
            "Hello! I'm your assistant. I can help you with:\n- x\nWhat can I do for you?"
        );
        assert_eq!(
            t.get(Lang::Zh, "answer-expired-note", &[("tasks", "订酒店".into()), ("answer", "好".into())]),
            "（您之前的请求「订酒店」等待补充信息超时，已自动取消。）\n好"
        );
        assert_eq!(
            t.get(Lang::En, "summary-needed-hint", &[("examples", "x, y".into())]),
            "Just reply, for example: \"x, y\", or fill in the form."
        );
        assert!(t.get(Lang::Zh, "dispatch-status", &[]).starts_with("服务返回了无法使用的结果（服务暂时不可用）"));
        assert_eq!(t.get(Lang::En, "list-item", &[("text", "done".into())]), "- done");
    }

    #[test]
    fn a_missing_id_or_argument_is_no_panic() {
        let t = Texts::shipped();
        assert_eq!(t.get(Lang::En, "no-such-message", &[]), "no-such-message");
        assert!(t.get(Lang::En, "stage-dispatch-started", &[]).starts_with("Working on: "));
        assert!(t.has("stage-intent-started"));
        assert!(!t.has("no-such-message"));
        assert!(!t.has("-dispatch-unusable"), "terms are not messages");
    }

    fn write(dir: &Path, rel: &str, text: &str) {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn overrides_replace_single_messages_of_one_locale() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "en/stages.ftl", "stage-intent-started = Reading…\n-dispatch-unusable = garbage came back\n");
        write(dir.path(), "en/notes.txt", "ignored");
        write(dir.path(), "..data/ignored.ftl", "not = checked");
        let t = Texts::with_overrides(dir.path()).unwrap();
        assert_eq!(t.get(Lang::En, "stage-intent-started", &[]), "Reading…");
        assert_eq!(t.get(Lang::Zh, "stage-intent-started", &[]), "正在理解您的需求…");
        assert_eq!(t.get(Lang::En, "stage-plan-started", &[]), "Planning…", "the rest is shipped");
        assert!(t.get(Lang::En, "dispatch-protocol", &[]).starts_with("garbage came back ("), "terms too");
        // The shipped catalog itself is untouched.
        assert_eq!(Texts::shipped().get(Lang::En, "stage-intent-started", &[]), "Understanding your request…");
        assert!(Texts::with_overrides(dir.path()).is_ok(), "an empty override set is fine too");
    }

    #[test]
    fn bad_overrides_are_errors_with_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "en/a.ftl",
            "# comment\nstage-intent-started = Reading…\nno-such-message = x\nstage-dispatch-started = On { $task } for { $user }\n",
        );
        write(dir.path(), "zh-CN/b.ftl", "stage-plan-started = 规划\n\nbroken = { $x\n");
        write(dir.path(), "zh-CN/c.ftl", "stage-plan-started = 再次\n");
        write(dir.path(), "fr/c.ftl", "stage-plan-started = Planification\n");
        write(dir.path(), "stray.ftl", "x = y\n");
        let errors = Texts::with_overrides(dir.path()).unwrap_err();
        let shown: Vec<String> =
            errors.iter().map(|e| e.to_string().replace(&dir.path().display().to_string(), "")).collect();
        let has = |needle: &str| shown.iter().any(|s| s.contains(needle));
        assert!(has("/en/a.ftl:3:1: `no-such-message` is not a message of the shipped catalog (en)"), "{shown:#?}");
        assert!(
            has("/en/a.ftl:4:1: `stage-dispatch-started` uses $user, which it is not given (it is given: $task)"),
            "{shown:#?}"
        );
        assert!(has("/zh-CN/b.ftl:4:1: Fluent syntax: Expected a token starting with \"}\""), "{shown:#?}");
        assert!(has("/zh-CN/c.ftl:1:1: `stage-plan-started` is already overridden in"), "{shown:#?}");
        assert!(has("/fr: \"fr\" is not a locale of the catalog (zh-CN, en)"), "{shown:#?}");
        assert!(has("/stray.ftl: a .ftl file belongs in a locale directory"), "{shown:#?}");
        assert!(!has("stage-intent-started"), "a valid override is no error: {shown:#?}");

        let missing = Texts::with_overrides(&dir.path().join("nope")).unwrap_err();
        assert!(missing[0].message.starts_with("cannot read the texts directory"), "{missing:?}");
    }

    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// (c) every message id written in `src/` (outside this module) is in the catalog, and every
    /// message of the catalog is written somewhere in `src/`: no dead messages. An id is a string
    /// literal of lowercase words joined by `-` whose first word starts some catalog id.
    #[test]
    fn every_id_in_src_exists_and_every_message_is_used() {
        let catalog = &shipped_index(Lang::En).messages;
        let prefixes: BTreeSet<&str> = catalog.keys().filter_map(|id| id.split('-').next()).collect();
        let literal = regex::Regex::new(r#""([a-z][a-z0-9]*(?:-[a-z0-9]+)+)""#).unwrap();
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let mut used: BTreeSet<String> = BTreeSet::new();
        let mut unknown = Vec::new();
        for file in files.iter().filter(|f| !f.starts_with(src.join("text"))) {
            let code = std::fs::read_to_string(file).unwrap();
            for cap in literal.captures_iter(&code) {
                let id = &cap[1];
                if !prefixes.contains(id.split('-').next().unwrap_or_default()) {
                    continue;
                }
                if catalog.contains_key(id) {
                    used.insert(id.to_string());
                } else {
                    unknown.push(format!("{}: {id}", file.strip_prefix(&src).unwrap().display()));
                }
            }
        }
        assert!(unknown.is_empty(), "ids written in src/ but missing from the catalog: {unknown:#?}");
        let unused: Vec<&String> = catalog.keys().filter(|id| !used.contains(*id)).collect();
        assert!(unused.is_empty(), "catalog messages no code in src/ uses: {unused:#?}");
    }

    #[test]
    fn texts_are_shared_across_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Texts>();
        let t = Texts::shipped();
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let t = t.clone();
                std::thread::spawn(move || t.get(Lang::En, "stage-intent-found", &[("count", i.into())]))
            })
            .collect();
        for (i, h) in handles.into_iter().enumerate() {
            assert_eq!(h.join().unwrap(), format!("Found {i} request(s)."));
        }
    }
}
