//! Text analysis for intent recognition: the same analysis for a user's query and for a card's
//! name, keywords, description and examples, so both meet in one term space.
//!
//! - Text is normalized per character (full-width ASCII to ASCII, lower case, `’` to `'`), keeping
//!   a map back to byte offsets of the original text.
//! - Chinese runs are segmented with jieba (search mode: words and their dictionary sub-words),
//!   plus character bigrams (robust to segmentation differences); stop words and function
//!   characters are dropped.
//! - Latin runs are split into words, lower-cased, stop words dropped, stemmed (Snowball English);
//!   words holding digits (codes, amounts) are left to the entity extractors.
//! - Concepts of the built-in lexicon (`concepts.txt`) are added as `#concept` terms: Chinese
//!   terms as substrings, English terms as whole stemmed words or phrases.
//!
//! Pure and deterministic; the segmenter, stemmer and lexicon are built once per process.

use foldhash::{HashMap, HashMapExt, HashSet};
use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, MatchKind};

/// What a term is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokKind {
    /// A word (Chinese segment or stemmed Latin word).
    Word,
    /// A Chinese character bigram.
    Bigram,
    /// A single Chinese character (morpheme overlap: 病 in 生病 and 病假).
    Char,
    /// A concept of the built-in lexicon (`#name`).
    Concept,
}

/// One term of an analyzed text, with its byte span in the original text.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    /// The term: a word, a bigram or `#concept`.
    pub term: String,
    /// What it is.
    pub kind: TokKind,
    /// Byte offset of its start in the original text.
    pub start: usize,
    /// Byte offset of its end in the original text.
    pub end: usize,
}

/// An English phrase of the lexicon: its stems and the concepts it means.
type Phrase = (Vec<String>, Vec<u16>);

/// A normalized text with the map back to the original's byte offsets.
#[derive(Debug, Clone)]
pub struct Normalized {
    /// Lower-cased, full-width folded text (one char per original char).
    pub text: String,
    /// For each byte of `text` (plus one past the end), the original byte offset.
    map: Vec<usize>,
}

impl Normalized {
    /// Normalizes `text`.
    pub fn new(text: &str) -> Self {
        let mut out = String::with_capacity(text.len());
        let mut map = Vec::with_capacity(text.len() + 1);
        for (i, c) in text.char_indices() {
            let n = fold(c);
            let before = out.len();
            out.push(n);
            map.extend(std::iter::repeat_n(i, out.len() - before));
        }
        map.push(text.len());
        Self { text: out, map }
    }

    /// The original byte offset of normalized byte offset `i`.
    pub fn orig(&self, i: usize) -> usize {
        self.map.get(i).copied().unwrap_or_else(|| self.map.last().copied().unwrap_or(0))
    }
}

fn fold(c: char) -> char {
    let c = match c {
        '\u{ff01}'..='\u{ff5e}' => char::from_u32(c as u32 - 0xfee0).unwrap_or(c),
        '\u{3000}' => ' ',
        '’' | '‘' | '`' => '\'',
        _ => c,
    };
    let mut lower = c.to_lowercase();
    match (lower.next(), lower.next()) {
        (Some(l), None) => l,
        _ => c,
    }
}

/// `true` for a CJK ideograph.
pub fn is_han(c: char) -> bool {
    matches!(c, '\u{4e00}'..='\u{9fff}' | '\u{3400}'..='\u{4dbf}' | '\u{f900}'..='\u{faff}' | '\u{20000}'..='\u{2ffff}')
}

fn is_latin(c: char) -> bool {
    c.is_alphanumeric() && !is_han(c) && !matches!(c, '\u{3040}'..='\u{30ff}' | '\u{ac00}'..='\u{d7af}')
}

static JIEBA: LazyLock<jieba_rs::Jieba> = LazyLock::new(jieba_rs::Jieba::new);
static STEMMER: LazyLock<rust_stemmers::Stemmer> =
    LazyLock::new(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English));

/// Stems one lower-case English word, but for the words Snowball cuts down to a different,
/// common word (`OVERSTEMMED`: "apartment" is no "apart", "business" no "busy").
pub fn stem(word: &str) -> String {
    if let Some(&(_, kept)) = OVERSTEMMED.iter().find(|(w, _)| *w == word) {
        return kept.to_string();
    }
    STEMMER.stem(word).into_owned()
}

/// Words whose Snowball stem is (the stem of) another common word of different meaning, with
/// the stem they keep instead: "take it apart" met an apartment card, "I'm busy" a business
/// one, an internal fault an international move, paying in instalments an installation, a
/// chipped corner a processor chip.
const OVERSTEMMED: &[(&str, &str)] = &[
    ("apartment", "apartment"),
    ("apartments", "apartment"),
    ("business", "business"),
    ("businesses", "business"),
    ("international", "international"),
    ("internationally", "international"),
    ("university", "university"),
    ("universities", "university"),
    ("experiment", "experiment"),
    ("experiments", "experiment"),
    ("instalment", "instalment"),
    ("instalments", "instalment"),
    ("installment", "instalment"),
    ("installments", "instalment"),
    ("chipped", "chipped"),
];

/// The stem a word is matched by: possessive `'s` dropped, and every negated auxiliary
/// (don't, doesn't, won't, can't, isn't, cannot…) the one stem `not`, so "doesn't fit",
/// "don't fit" and "does not fit" meet.
fn word_stem(word: &str) -> String {
    if word.ends_with("n't") || word == "cannot" {
        return "not".to_string();
    }
    stem(word.strip_suffix("'s").unwrap_or(word))
}

/// Words a lexicon phrase may have between its own ("send *them* back", "pick *me* up").
const PHRASE_FILLER: &[&str] = &[
    "it", "them", "this", "that", "these", "those", "me", "him", "her", "us", "my", "your", "our", "their", "his",
    "its", "a", "an", "the", "some", "do", "doe",
];

/// The index past the last word of `stems` matched from `words[k]` on, with at most two filler
/// words in between.
fn match_phrase(stems: &[String], words: &[Word], k: usize) -> Option<usize> {
    let (mut i, mut skipped) = (k, 0);
    for (n, s) in stems.iter().enumerate() {
        loop {
            let w = words.get(i)?;
            if w.stem == *s {
                break;
            }
            if n == 0 || skipped == 2 || !PHRASE_FILLER.contains(&w.stem.as_str()) {
                return None;
            }
            skipped += 1;
            i += 1;
        }
        i += 1;
    }
    Some(i)
}

const ZH_STOP: &[&str] = &[
    "的",
    "了",
    "吗",
    "呢",
    "吧",
    "啊",
    "呀",
    "哦",
    "嘛",
    "么",
    "我",
    "我们",
    "你",
    "您",
    "你们",
    "他",
    "她",
    "它",
    "他们",
    "帮",
    "帮我",
    "帮忙",
    "请",
    "请问",
    "一下",
    "麻烦",
    "给",
    "给我",
    "把",
    "被",
    "让",
    "是",
    "在",
    "有",
    "和",
    "与",
    "及",
    "或",
    "或者",
    "就",
    "都",
    "也",
    "还",
    "又",
    "很",
    "太",
    "这",
    "那",
    "这个",
    "那个",
    "一个",
    "个",
    "些",
    "什么",
    "怎么",
    "怎么样",
    "如何",
    "多少",
    "哪",
    "哪里",
    "哪儿",
    "哪个",
    "几",
    "能",
    "能不能",
    "可以",
    "可不可以",
    "要",
    "想",
    "想要",
    "需要",
    "我想",
    "我要",
    "一",
    "二",
    "两",
    "今天",
    "明天",
    "后天",
    "大后天",
    "昨天",
    "现在",
    "下",
    "上",
    "去",
    "来",
    "到",
    "看",
    "看看",
    "看一下",
    "查",
    "查下",
    "查一下",
    "一下子",
    "好",
    "好的",
    "谢谢",
    "你好",
    "您好",
    "吗？",
    "呢？",
    "嗯",
    "下周",
    "这周",
    "本周",
    "周末",
    "今年",
    "明年",
    "最近",
    "这几天",
    "一点",
    "有没有",
    "是不是",
    "会不会",
    "的话",
    "然后",
    "顺便",
    "另外",
    "还有",
    "并且",
    "同时",
    "再",
    "只",
    "只是",
    "就是",
    "时候",
    "一张",
    "一个人",
    "个人",
    "不",
    "没",
    "没有",
    "别",
    "不用",
    "不要",
    "其他",
    "自己",
    "所以",
    "因为",
];

const STOP_CHARS: &str = "的了吗呢吧啊呀哦嘛么我你您他她它是在和与及或就都也还又很这那个些一把被让给请帮";

/// Characters too common to be evidence on their own.
const CHAR_STOP: &str = "不没有要想能会可以去来到上下中大小多少几什么怎样吗呢啊吧了过着得地所为之其天年月日号点分今明后前时候里边面家人们自己再还";

const EN_STOP: &[&str] = &[
    "a",
    "an",
    "the",
    "i",
    "i'm",
    "im",
    "me",
    "my",
    "mine",
    "we",
    "us",
    "our",
    "you",
    "your",
    "he",
    "she",
    "it",
    "it's",
    "its",
    "they",
    "them",
    "their",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "am",
    "do",
    "does",
    "did",
    "doing",
    "have",
    "has",
    "had",
    "will",
    "would",
    "can",
    "could",
    "should",
    "shall",
    "may",
    "might",
    "must",
    "please",
    "help",
    "want",
    "wanna",
    "need",
    "like",
    "to",
    "of",
    "in",
    "on",
    "at",
    "for",
    "from",
    "with",
    "by",
    "about",
    "as",
    "into",
    "and",
    "or",
    "but",
    "if",
    "so",
    "that",
    "this",
    "these",
    "those",
    "what",
    "what's",
    "whats",
    "which",
    "who",
    "whom",
    "whose",
    "when",
    "where",
    "why",
    "how",
    "there",
    "here",
    "any",
    "some",
    "get",
    "got",
    "just",
    "also",
    "then",
    "than",
    "too",
    "very",
    "much",
    "many",
    "more",
    "most",
    "tomorrow",
    "today",
    "tonight",
    "yesterday",
    "now",
    "next",
    "last",
    "week",
    "weekend",
    "day",
    "days",
    "month",
    "year",
    "morning",
    "afternoon",
    "evening",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "let",
    "let's",
    "know",
    "tell",
    "show",
    "check",
    "look",
    "see",
    "find",
    "go",
    "going",
    "make",
    "give",
    "take",
    "put",
    "again",
    "still",
    "only",
    "up",
    "out",
    "over",
    "not",
    "no",
    "don't",
    "dont",
    "doesn't",
    "won't",
    "can't",
    "cant",
    "instead",
    "rather",
    "hi",
    "hello",
    "hey",
    "thanks",
    "thank",
    "ok",
    "okay",
    "yes",
    "someone",
    "something",
    "somewhere",
    "anything",
    "one",
    "two",
    "three",
    "it'll",
    "i'd",
    "i'll",
    "i've",
    "there's",
    "is there",
    "via",
    "mr",
    "ms",
    "sir",
    "madam",
    "dear",
    "kindly",
    "right",
    // Words of no topic: "any spots left" is no "from the left"; "go together", "already done".
    "left",
    "together",
    "already",
    "really",
    "actually",
    "maybe",
    "even",
    "ever",
    "else",
    "new",
    "old",
    "time",
    "times",
];

static ZH_STOPS: LazyLock<HashSet<&'static str>> = LazyLock::new(|| ZH_STOP.iter().copied().collect());
static EN_STOPS: LazyLock<HashSet<&'static str>> = LazyLock::new(|| EN_STOP.iter().copied().collect());

/// The built-in concept lexicon, compiled.
struct Lexicon {
    /// Chinese terms (substring match) and, per pattern, its concepts.
    zh: AhoCorasick,
    zh_concepts: Vec<Vec<u16>>,
    /// English single stems -> concepts.
    en_words: HashMap<String, Vec<u16>>,
    /// English words matched by surface form only (`=train`) -> concepts.
    en_exact: HashMap<String, Vec<u16>>,
    /// English phrases: first stem -> (stems, concepts).
    en_phrases: HashMap<String, Vec<Phrase>>,
    /// Concept names.
    names: Vec<String>,
    /// Concepts marked `~` in the lexicon: actions and facets (booking, status, price), not topics.
    generic: Vec<String>,
    /// Chinese terms written with a gap (`把…修`): the first part, then the second within
    /// [`GAP_CHARS`] characters of the same clause (Chinese puts objects and complements inside
    /// a verb phrase: 把空调修一下, 哪个拍照好): their first parts in one automaton, and per
    /// first part its (second part, concept) pairs.
    zh_gap_heads: AhoCorasick,
    zh_gap_tails: Vec<Vec<(String, u16)>>,
}

/// Most characters between the two parts of a gapped lexicon term.
const GAP_CHARS: usize = 6;

/// Names of the lexicon's generic concepts (actions and facets such as `booking`, `status`,
/// `price`): a query about them is not about a topic of its own.
pub fn generic_concepts() -> Vec<String> {
    LEXICON.generic.clone()
}

static LEXICON: LazyLock<Lexicon> = LazyLock::new(|| compile_lexicon(include_str!("concepts.txt")));

fn compile_lexicon(text: &str) -> Lexicon {
    let mut names: Vec<String> = Vec::new();
    let mut generic: Vec<String> = Vec::new();
    let mut zh: HashMap<String, Vec<u16>> = HashMap::new();
    let mut en_words: HashMap<String, Vec<u16>> = HashMap::new();
    let mut en_exact: HashMap<String, Vec<u16>> = HashMap::new();
    let mut en_phrases: HashMap<String, Vec<Phrase>> = HashMap::new();
    let mut zh_gapped: Vec<(String, String, u16)> = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let Some((name, terms)) = line.split_once(':') else { continue };
        let id = names.len() as u16;
        let name = name.trim();
        let name = match name.strip_prefix('~') {
            Some(n) => {
                generic.push(n.to_string());
                n
            }
            None => name,
        };
        names.push(name.to_string());
        for raw in terms.split(',').map(str::trim) {
            if let Some((a, b)) = raw.split_once('…') {
                let (a, b) = (Normalized::new(a).text, Normalized::new(b).text);
                if !a.is_empty() && !b.is_empty() {
                    zh_gapped.push((a, b, id));
                }
            }
        }
        for term in terms
            .split(',')
            .filter(|t| !t.contains('…'))
            .map(|t| Normalized::new(t.trim()).text)
            .filter(|t| !t.is_empty())
        {
            if term.chars().any(is_han) {
                let v = zh.entry(term).or_default();
                if !v.contains(&id) {
                    v.push(id);
                }
                continue;
            }
            // `=word`: that surface form only, not every word of its stem ("=train" is no
            // "training").
            if let Some(surface) = term.strip_prefix('=') {
                let v = en_exact.entry(surface.trim().to_string()).or_default();
                if !v.contains(&id) {
                    v.push(id);
                }
                continue;
            }
            let stems: Vec<String> = latin_words(&term).into_iter().map(|(w, _, _)| word_stem(&w)).collect();
            match stems.len() {
                0 => {}
                1 => {
                    let v = en_words.entry(stems[0].clone()).or_default();
                    if !v.contains(&id) {
                        v.push(id);
                    }
                }
                _ => {
                    let v = en_phrases.entry(stems[0].clone()).or_default();
                    match v.iter_mut().find(|(s, _)| *s == stems) {
                        Some((_, ids)) if !ids.contains(&id) => ids.push(id),
                        Some(_) => {}
                        None => v.push((stems, vec![id])),
                    }
                }
            }
        }
    }
    let (patterns, zh_concepts): (Vec<String>, Vec<Vec<u16>>) = zh.into_iter().unzip();
    let zh =
        AhoCorasick::builder().match_kind(MatchKind::Standard).build(&patterns).expect("the concept lexicon compiles");
    let mut heads: Vec<String> = Vec::new();
    let mut zh_gap_tails: Vec<Vec<(String, u16)>> = Vec::new();
    for (a, b, id) in zh_gapped {
        match heads.iter().position(|h| *h == a) {
            Some(i) => zh_gap_tails[i].push((b, id)),
            None => {
                heads.push(a);
                zh_gap_tails.push(vec![(b, id)]);
            }
        }
    }
    let zh_gap_heads = AhoCorasick::new(&heads).expect("the gapped terms compile");
    Lexicon { zh, zh_concepts, en_words, en_exact, en_phrases, names, generic, zh_gap_heads, zh_gap_tails }
}

/// Whether `text` (normalized) holds Latin words only, each a stop word or a stop word with a
/// contraction ("i'll", "we'd"): a subject and an auxiliary, no content.
pub fn function_words_only(text: &str) -> bool {
    // Cheap first: a subject and an auxiliary are a few short Latin words.
    if text.len() > 24 || !text.is_ascii() {
        return false;
    }
    let words = latin_words(text);
    let letters = text.chars().filter(|c| c.is_alphanumeric()).count();
    !words.is_empty()
        && letters == words.iter().map(|(w, _, _)| w.chars().filter(|c| c.is_alphanumeric()).count()).sum::<usize>()
        && words.iter().all(|(w, _, _)| EN_STOPS.contains(w.split('\'').next().unwrap_or(w)))
}

/// Latin words of `text` (already normalized) with their byte spans: runs of letters and digits,
/// an apostrophe inside a word kept (`won't`).
fn latin_words(text: &str) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (k, &(i, c)) in chars.iter().enumerate() {
        let inner_apostrophe = c == '\''
            && start.is_some()
            && chars.get(k + 1).is_some_and(|&(_, n)| is_latin(n))
            && k > 0
            && is_latin(chars[k - 1].1);
        if is_latin(c) || inner_apostrophe {
            start.get_or_insert(i);
        } else if let Some(s) = start.take() {
            out.push((text[s..i].to_string(), s, i));
        }
    }
    if let Some(s) = start {
        out.push((text[s..].to_string(), s, text.len()));
    }
    out
}

/// A Latin word as seen by negation and phrase matching: surface (lower case) and stem.
#[derive(Debug, Clone)]
pub struct Word {
    /// Lower-case surface form.
    pub surface: String,
    /// Snowball stem.
    pub stem: String,
    /// Byte span in the normalized text.
    pub start: usize,
    /// End of the span.
    pub end: usize,
}

/// The particles of English phrasal verbs whose closed compound is a noun of its own
/// ("checkout", "setup", "rollback"). Not "in" and "on": as prepositions they follow any word
/// ("rain in Shanghai"); their compounds ("login", "check-in") are phrases of the lexicon.
const PARTICLES: &[&str] = &["out", "up", "off", "down", "back", "over"];

/// A word that can head a phrasal verb: three letters or more, letters only (a stop word too:
/// "check", "set" and "pick" are common verbs; a join no card spells, such as "wasout", meets
/// nothing).
fn is_plain_word(w: &Word) -> bool {
    w.surface.len() >= 3 && w.surface.chars().all(|c| c.is_ascii_alphabetic())
}

/// Every Latin word of a normalized text (stop words included).
pub fn words(norm: &str) -> Vec<Word> {
    latin_words(norm).into_iter().map(|(w, s, e)| Word { stem: word_stem(&w), surface: w, start: s, end: e }).collect()
}

/// Analyzes `text` into terms (words, bigrams, concepts) with byte spans in `text`.
pub fn analyze(text: &str) -> Vec<Token> {
    let norm = Normalized::new(text);
    analyze_normalized(&norm)
}

/// [`analyze`] on an already normalized text; spans are mapped back to the original.
pub fn analyze_normalized(norm: &Normalized) -> Vec<Token> {
    let text = norm.text.as_str();
    let mut out = Vec::new();
    let push = |out: &mut Vec<Token>, term: String, kind: TokKind, s: usize, e: usize| {
        out.push(Token { term, kind, start: norm.orig(s), end: norm.orig(e) });
    };
    // Chinese runs.
    let mut run_start: Option<usize> = None;
    let mut runs = Vec::new();
    for (i, c) in text.char_indices() {
        if is_han(c) {
            run_start.get_or_insert(i);
        } else if let Some(s) = run_start.take() {
            runs.push((s, i));
        }
    }
    if let Some(s) = run_start {
        runs.push((s, text.len()));
    }
    for &(s, e) in &runs {
        let run = &text[s..e];
        for t in JIEBA.cut_for_search(run, false) {
            // A word made only of function and very common characters (不了, 什么时候, 家人) is
            // no evidence of a capability.
            let common = |c: char| STOP_CHARS.contains(c) || CHAR_STOP.contains(c);
            if ZH_STOPS.contains(t.word) || t.word.chars().all(common) {
                continue;
            }
            push(&mut out, t.word.to_string(), TokKind::Word, s + t.byte_start, s + t.byte_end);
        }
        let chars: Vec<(usize, char)> = run.char_indices().collect();
        for &(i, c) in &chars {
            if !STOP_CHARS.contains(c) && !CHAR_STOP.contains(c) {
                push(&mut out, format!("'{c}"), TokKind::Char, s + i, s + i + c.len_utf8());
            }
        }
        for w in chars.windows(2) {
            let (a, b) = (w[0].1, w[1].1);
            let end = s + w[1].0 + b.len_utf8();
            if STOP_CHARS.contains(a) || STOP_CHARS.contains(b) || ZH_STOPS.contains(&text[s + w[0].0..end]) {
                continue;
            }
            push(&mut out, format!("{a}{b}"), TokKind::Bigram, s + w[0].0, end);
        }
    }
    // Latin words.
    let words = words(text);
    for w in &words {
        if w.surface.chars().any(|c| c.is_ascii_digit()) || EN_STOPS.contains(w.surface.as_str()) || w.stem.len() < 2 {
            continue;
        }
        push(&mut out, w.stem.clone(), TokKind::Word, w.start, w.end);
    }
    // A phrasal verb is also its closed compound ("check out" / "check-out" / "checkout", "back
    // up" / "backup", "pick up" / "pickup"), so either spelling meets the other.
    for pair in words.windows(2) {
        let (verb, particle) = (&pair[0], &pair[1]);
        let adjacent = particle.start - verb.end <= 1;
        if adjacent && PARTICLES.contains(&particle.surface.as_str()) && is_plain_word(verb) {
            let joined = word_stem(&format!("{}{}", verb.surface, particle.surface));
            push(&mut out, joined, TokKind::Word, verb.start, particle.end);
        }
    }
    // Concepts.
    let lex = &*LEXICON;
    for (s, e, id) in zh_concepts(lex, text) {
        push(&mut out, format!("#{}", lex.names[id as usize]), TokKind::Concept, s, e);
    }
    for (k, w) in words.iter().enumerate() {
        for &id in lex.en_words.get(&w.stem).into_iter().chain(lex.en_exact.get(&w.surface)).flatten() {
            push(&mut out, format!("#{}", lex.names[id as usize]), TokKind::Concept, w.start, w.end);
        }
        if let Some(phrases) = lex.en_phrases.get(&w.stem) {
            for (stems, ids) in phrases {
                if let Some(past) = match_phrase(stems, &words, k) {
                    let end = words[past - 1].end;
                    for &id in ids {
                        push(&mut out, format!("#{}", lex.names[id as usize]), TokKind::Concept, w.start, end);
                    }
                }
            }
        }
    }
    out
}

/// The lexicon's concepts found in the Chinese of `text`: `(start, end, concept)`. Matches may
/// overlap ("什么时候到期" holds both 什么时候到 and 到期), but a match inside a longer one
/// meaning the same concept is not counted again.
fn zh_concepts(lex: &Lexicon, text: &str) -> Vec<(usize, usize, u16)> {
    let mut found: Vec<(usize, usize, u16)> = Vec::new();
    for m in lex.zh.find_overlapping_iter(text) {
        for &id in &lex.zh_concepts[m.pattern().as_usize()] {
            found.push((m.start(), m.end(), id));
        }
    }

    // Longest first, so a contained match of the same concept meets its container.
    found.sort_by(|a, b| (b.1 - b.0).cmp(&(a.1 - a.0)).then(a.0.cmp(&b.0)));
    let mut kept: Vec<(usize, usize, u16)> = Vec::with_capacity(found.len());
    for f in found {
        if !kept.iter().any(|k| k.2 == f.2 && k.0 <= f.0 && f.1 <= k.1) {
            kept.push(f);
        }
    }
    // Gapped terms only where the same concept was not already found in their span (plain
    // terms are more precise, and two of them count as two mentions).
    for head in lex.zh_gap_heads.find_overlapping_iter(text) {
        for (b, id) in &lex.zh_gap_tails[head.pattern().as_usize()] {
            if let Some(end) = gapped_end(&text[head.end()..], b) {
                let (start, end) = (head.start(), head.end() + end);
                if !kept.iter().any(|k| k.2 == *id && k.0 < end && start < k.1) {
                    kept.push((start, end, *id));
                }
            }
        }
    }
    kept.sort_by_key(|k| (k.0, k.1));
    kept
}

/// Where `b` ends in `rest` when it starts within [`GAP_CHARS`] characters that are all letters,
/// digits or Han (no punctuation: the same clause); `None` otherwise.
fn gapped_end(rest: &str, b: &str) -> Option<usize> {
    for (skipped, (i, c)) in rest.char_indices().enumerate() {
        if rest[i..].starts_with(b) {
            return Some(i + b.len());
        }
        if skipped == GAP_CHARS || !(c.is_alphanumeric() || is_han(c)) {
            return None;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(text: &str, kind: TokKind) -> Vec<String> {
        analyze(text).into_iter().filter(|t| t.kind == kind).map(|t| t.term).collect()
    }

    /// Whether `text` holds the lexicon concept `concept`.
    fn has(text: &str, concept: &str) -> bool {
        terms(text, TokKind::Concept).iter().any(|t| t.strip_prefix('#') == Some(concept))
    }

    #[test]
    fn chinese_words_bigrams_and_concepts() {
        let words = terms("100美元换成人民币是多少", TokKind::Word);
        assert!(words.contains(&"美元".to_string()) && words.contains(&"人民币".to_string()), "{words:?}");
        assert!(!words.contains(&"是".to_string()));
        assert!(terms("把1000美元兑换成人民币", TokKind::Bigram).contains(&"换成".to_string()));
        assert!(terms("明天上海冷不冷", TokKind::Concept).contains(&"#weather".to_string()));
    }

    /// A word of the lexicon written `=word` matches that form, not its stem's other words.
    #[test]
    fn exact_lexicon_words_do_not_match_by_stem() {
        assert!(has("two train tickets", "train") && has("the trains are late", "train"));
        assert!(!has("my training hours", "train"), "training is no railway");
        assert!(has("my training hours", "training"));
    }

    #[test]
    fn latin_words_are_stemmed_and_stopped() {
        assert_eq!(terms("Will it rain in Shanghai tomorrow?", TokKind::Word), ["rain", "shanghai"]);
        let concepts = terms("Can someone pick me up at Pudong Airport?", TokKind::Concept);
        assert!(concepts.contains(&"#pickup".to_string()) && concepts.contains(&"#airport".to_string()));
        assert!(terms("flight CA1234", TokKind::Word) == ["flight"]);
        // Pausing is one facet in either language.
        assert!(terms("Can I pause my membership for a month?", TokKind::Concept).contains(&"#pause".to_string()));
        assert!(terms("年卡能不能先停掉", TokKind::Concept).contains(&"#pause".to_string()));
        // Paying by the month, however many months.
        assert!(terms("尾款能分12个月付吗", TokKind::Concept).contains(&"#loan".to_string()));
        assert!(terms("Can I spread the cost over a year?", TokKind::Concept).contains(&"#loan".to_string()));
        assert!(!terms("部分日期已约满", TokKind::Concept).contains(&"#loan".to_string()));
        // "left" of "any spots left" is no topic word.
        assert_eq!(terms("Any spots left in the yoga class?", TokKind::Word), ["spot", "yoga", "class"]);
        // A phrasal verb is also its closed compound, in either spelling.
        for q in ["Can I check out at 3pm?", "a late check-out", "late checkout"] {
            assert!(terms(q, TokKind::Word).contains(&"checkout".to_string()), "{q}");
        }
        assert!(terms("roll the database back up", TokKind::Word).contains(&"backup".to_string()));
    }

    #[test]
    fn a_word_snowball_cuts_to_another_word_keeps_its_own_stem() {
        assert_eq!(terms("take it apart", TokKind::Word), ["apart"]);
        assert_eq!(terms("our apartments", TokKind::Word), ["apartment"]);
        // Paying in instalments is no installation, a chipped corner no chip.
        assert_ne!(stem("instalments"), stem("installation"));
        assert_eq!(stem("installments"), stem("instalment"));
        assert_eq!(terms("chipped", TokKind::Word), ["chipped"]);
        assert_eq!(stem("apartment"), stem("apartments"));
        assert_ne!(stem("business"), stem("busy"));
        assert_ne!(stem("international"), stem("internal"));
        assert_eq!(stem("renting"), stem("rent"));
    }

    #[test]
    fn negated_auxiliaries_meet_and_phrases_allow_a_pronoun_between() {
        for q in ["these shoes don't fit", "the shoes doesn't fit", "the shoes do not fit"] {
            assert!(terms(q, TokKind::Concept).contains(&"#returns".to_string()), "{q}");
        }
        assert!(terms("can I send them back?", TokKind::Concept).contains(&"#returns".to_string()));
        assert!(!terms("send the report to my boss back home", TokKind::Concept).contains(&"#returns".to_string()));
    }

    #[test]
    fn spans_point_into_the_original_text() {
        let text = "ＨＯＴＥＬ 酒店";
        for t in analyze(text) {
            assert!(text.is_char_boundary(t.start) && text.is_char_boundary(t.end), "{t:?}");
        }
        let hotel = analyze(text).into_iter().find(|t| t.term == "hotel").unwrap();
        assert_eq!(&text[hotel.start..hotel.end], "ＨＯＴＥＬ");
    }

    #[test]
    fn gapped_chinese_terms_span_an_inserted_object() {
        let concepts = |t: &str| terms(t, TokKind::Concept);
        assert!(concepts("帮我把客厅的空调修一下").contains(&"#fault".to_string()));
        assert!(concepts("小米和苹果哪个拍照好").contains(&"#compare".to_string()));
        // Not across a clause boundary, not over more than six characters.
        assert!(!concepts("哪个，好").contains(&"#compare".to_string()));
        assert!(!concepts("哪个牌子的手机在晚上拍照最好").contains(&"#compare".to_string()));
        // Plain terms in the span are kept as they are (two mentions stay two).
        let spans: Vec<(usize, usize)> = analyze("水管一直在漏水")
            .into_iter()
            .filter(|t| t.term == "#home_repair")
            .map(|t| (t.start, t.end))
            .collect();
        assert_eq!(spans.len(), 2, "{spans:?}");
    }

    #[test]
    fn topic_terms_are_no_common_verbs() {
        // A single English word of a topic concept is a verb users say about anything ("check",
        // "pay", "book"): only phrases may hold it ("checking account", "pay rent").
        let lex = &*LEXICON;
        for verb in [
            "get", "take", "make", "go", "check", "save", "book", "change", "move", "keep", "stop", "pay", "send",
            "put", "run", "work", "open", "close", "show", "set", "need", "want", "call", "look", "find", "help",
            "use", "start",
        ] {
            for id in lex.en_words.get(&stem(verb)).into_iter().flatten() {
                let name = &lex.names[*id as usize];
                assert!(lex.generic.contains(name), "'{verb}' is a single word of the topic concept {name}");
            }
        }
    }

    #[test]
    fn sub_services_of_one_domain_are_told_apart() {
        assert!(has("猫毛打结了想剪一剪", "pet_grooming") && !has("猫毛打结了想剪一剪", "pet_vet"));
        assert!(has("狗狗最近不吃东西还一直吐", "pet_vet") && !has("狗狗最近不吃东西还一直吐", "pet_grooming"));
        assert!(has("下周出差一周，猫没人照顾怎么办", "pet_boarding"));
        assert!(has("My cat ran away yesterday", "lost_pet"));
        assert!(has("oil change", "car_service") && !has("oil change", "car_wash"));
        assert!(has("车太脏了想洗洗", "car_wash") && !has("车太脏了想洗洗", "car_service"));
        assert!(has("My car broke down on the highway and I need a tow", "roadside_assistance"));
        assert!(has("my landlord hasn't got the money", "rent_payment"));
        assert!(has("退租押金什么时候退", "lease") && !has("退租押金什么时候退", "rent_payment"));
        assert!(has("Can I freeze my gym membership for two months?", "gym_membership"));
        assert!(has("I have no signal at home", "mobile_signal") && !has("I have no signal at home", "mobile_data"));
        // Not on words of other services: a phone's screen film, charging on a train.
        assert!(!has("手机贴膜", "car_wash") && !has("火车上能充电吗", "ev_charging"));
        assert!(!has("how many points do I have on my license", "nail_salon"));
    }

    #[test]
    fn services_of_insurance_banking_shops_offices_and_agencies_are_told_apart() {
        // Insurance: a claim by kind, a change, a cancellation are each their own service.
        assert!(has("车被人追尾了，怎么走保险", "car_claim") && !has("车被人追尾了，怎么走保险", "property_claim"));
        assert!(has("家里水管爆了把地板泡坏了，保险赔不赔", "property_claim"));
        assert!(has("我想把保单的受益人改成我老婆", "policy_change"));
        assert!(
            has("这个保险我不想要了，能退吗", "policy_cancel") && !has("这个保险我不想要了，能退吗", "policy_renewal")
        );
        assert!(has("I want to cancel my policy during the cooling-off period", "policy_cancel"));
        assert!(!has("I want to cancel my policy during the cooling-off period", "hotel_change"));
        // Banking.
        assert!(has("新卡寄到了怎么激活", "card_activation") && !has("新卡寄到了怎么激活", "card_limit"));
        assert!(has("信用卡额度太低了想提一下", "card_limit"));
        assert!(has("给朋友转的钱一直没到账", "transfer_problem"));
        assert!(has("ATM吞了我的卡", "atm_issue") && has("My account is frozen", "account_freeze"));
        assert!(has("这个月的还款还不上了怎么办", "loan_repayment") && !has("这个月的还款还不上了怎么办", "mortgage"));
        // Shops after the order.
        assert!(has("发票抬头开错了能重开吗", "invoice_reissue"));
        assert!(has("鞋子小了想换大一码", "exchange_item") && !has("鞋子小了想换大一码", "coupon_issue"));
        assert!(has("My promo code is not working", "coupon_issue"));
        assert!(!has("我想换个密码", "exchange_item") && !has("课程兑换码在哪里", "exchange_item"));
        // Travel.
        assert!(has("想取消酒店预订", "hotel_change") && has("高铁票能改签吗", "train_change"));
        assert!(has("My luggage didn't arrive", "lost_luggage") && has("去日本要办签证吗", "visa_application"));
        // Outpatient care.
        assert!(has("我的药快吃完了，想再开点", "prescription_refill"));
        assert!(has("能不能在网上问一下医生", "telemedicine") && has("想预约个体检", "checkup"));
        // Schools.
        assert!(has("四六级什么时候报名", "exam_registration") && has("考试成绩什么时候出", "exam_result"));
        assert!(has("课没上完，剩下的钱能退吗", "course_refund") && has("网课回放看不了", "online_course"));
        assert!(has("孩子数学跟不上，想找个家教", "tutoring"));
        // Workplace: kinds of leave, payroll, attendance.
        assert!(has("我还有几天年假", "annual_leave") && !has("我还有几天年假", "sick_leave"));
        assert!(has("产假有多少天", "parental_leave") && has("My payslip is wrong", "payroll_issue"));
        assert!(
            has("昨天忘打卡了怎么补", "attendance_correction") && !has("银行卡丢了要补卡", "attendance_correction")
        );
        assert!(!has("我想问下工资多少", "payroll_issue"));
        // IT support.
        assert!(has("打印机又卡纸了", "printer_issue") && has("会议室的wifi连不上", "wifi_issue"));
        assert!(
            has("我没有这个共享文件夹的权限", "access_request")
                && has("I clicked on a suspicious link in an email", "phishing_report")
        );
        assert!(!has("手机屏幕碎了", "computer_fault"));
        // Public services.
        assert!(has("护照过期了怎么换", "passport") && !has("护照过期了怎么换", "id_card"));
        assert!(has("公积金怎么提取", "provident_fund") && has("宝宝出生了怎么上户口", "birth_registration"));
        assert!(has("个税退税什么时候到账", "tax_refund") && has("想注册一家公司", "business_license"));
        assert!(!has("Rear-ended? How do I file a claim", "tax"));
        // Homes, jobs, games, events, rides.
        assert!(has("首套房首付要多少", "property_purchase") && !has("这个月该交房租了", "property_purchase"));
        assert!(!has("知识产权纠纷", "property_purchase"));
        assert!(has("我的游戏账号被封了", "game_account") && has("游戏充值了没到账", "game_topup"));
        assert!(has("手机落在出租车上了", "ride_lost_item") && has("I left my phone in the taxi", "ride_lost_item"));
        assert!(has("司机绕路了我要投诉", "driver_complaint") && has("I was overcharged for my ride", "fare_dispute"));
    }

    #[test]
    fn brokerage_and_inpatient_services_and_situations_are_told_apart() {
        // Brokerage: account, orders, corporate actions, new shares, risk profile, money in and out.
        assert!(has("怎么把钱从证券账户转回银行卡", "brokerage_transfer"));
        assert!(has("我中签了吗，什么时候缴款", "ipo_subscription") && !has("我中签了吗，什么时候缴款", "dividend"));
        assert!(has("这只股票什么时候分红", "dividend") && !has("这只股票什么时候分红", "ipo_subscription"));
        assert!(has("风险测评过期了要重新做", "risk_assessment") && has("我想把限价单改成市价单", "stock_trading"));
        assert!(has("基金怎么赎回", "fund_trading") && !has("基金怎么赎回", "stock_trading"));
        assert!(has("I got a margin call", "margin_trading") && has("When is the ex-dividend date?", "dividend"));
        assert!(has("I want to open a brokerage account", "brokerage_account"));
        // Not on a word that merely holds the characters (一个股票, 收入金额, 探视权).
        assert!(!has("我想开个股票账户", "market_quote") && !has("收入金额不对", "brokerage_transfer"));
        // Inpatient care: admission, discharge, records, visiting, emergencies, surgery, fees.
        assert!(has("我爸要住院，怎么办住院手续", "hospital_admission"));
        assert!(!has("我爸要住院，怎么办住院手续", "discharge_billing"));
        assert!(has("什么时候能出院，出院结算在哪", "discharge_billing"));
        assert!(!has("什么时候能出院，出院结算在哪", "hospital_admission"));
        assert!(has("我要复印病历", "medical_records") && has("探视时间是几点", "hospital_visiting"));
        assert!(!has("探视权怎么争取", "hospital_visiting") && !has("我想去看病", "hospital_visiting"));
        assert!(has("半夜孩子高烧不退去哪看急诊", "emergency_care") && !has("电脑中毒了", "emergency_care"));
        assert!(has("手术排期要等多久", "surgery") && !has("技术后台登不上", "surgery"));
        assert!(has("门诊缴费在哪", "medical_fee") && has("Can I order meals for a patient?", "ward_service"));
        assert!(has("What time are visiting hours on the ward?", "hospital_visiting"));
        // Needs told as situations, without the service's name.
        assert!(has("Nothing comes out of the tap", "water_outage") && has("水龙头拧开一滴水都没有", "water_outage"));
        assert!(has("my place is a mess", "cleaning") && has("整栋楼黑了", "power_outage"));
        assert!(has("暖气片摸着冰凉", "heating_service") && has("钥匙忘在屋里了", "locksmith"));
        assert!(!has("I dropped my phone", "pest_control") && !has("I can't get in touch with support", "locksmith"));
        assert!(!has("饮水机没水了", "water_outage") && !has("手机没电了", "power_outage"));
    }

    #[test]
    fn city_reports_utilities_saas_transit_schools_and_shops_are_told_apart() {
        // City hotline: each kind of report told as the situation a resident sees.
        assert!(has("马路中间塌了一个洞", "road_damage") && has("There's a huge pothole on Elm Street", "road_damage"));
        assert!(
            has("小区门口的路灯坏了，晚上黑漆漆的", "streetlight")
                && has("Our street has been dark for days", "streetlight")
        );
        assert!(
            has("楼上半夜还在蹦迪，吵得睡不着", "noise_complaint")
                && has("The bar downstairs blasts music every night", "noise_complaint")
        );
        assert!(
            has("对面的车挡住我家门口了", "parking_obstruction")
                && has("Someone is blocking my driveway", "parking_obstruction")
        );
        assert!(
            has("垃圾桶满了好几天都没人来收", "waste_collection")
                && has("My bin wasn't emptied this week", "waste_collection")
        );
        assert!(has("小区里好多流浪狗", "stray_animal") && has("There's a stray dog with no collar", "stray_animal"));
        assert!(
            has("台风把树刮倒了", "fallen_tree") && has("A big branch is hanging over the footpath", "fallen_tree")
        );
        assert!(
            has("下完雨这段路全是水", "street_flooding")
                && has("The street floods every time it rains", "street_flooding")
        );
        assert!(
            has("附近哪里有公厕", "public_toilet")
                && has("Someone sprayed graffiti on the bus stop", "graffiti_vandalism")
        );
        assert!(has("邻居私自加盖了一层楼", "illegal_construction") && has("有人打架，要报警", "police_report"));
        // Utilities told as situations: the whole building, the meter, the smell, a bill taken twice.
        assert!(has("整栋楼都停电了", "power_outage") && has("Our whole building has no water", "water_outage"));
        assert!(has("电表走得太快了", "utility_meter") && has("Can I send you my meter reading?", "utility_meter"));
        assert!(has("厨房里有股臭鸡蛋味", "gas_service") && has("It smells like rotten eggs in here", "gas_service"));
        assert!(has("这个月电费被扣了两次", "billing_error") && has("You billed me twice this month", "billing_error"));
        // Software accounts.
        assert!(has("我们想从免费版升级到团队版", "saas_plan") && has("We need to add five more users", "saas_seats"));
        assert!(
            has("I keep getting 429 errors from the API", "api_access")
                && has("The webhook isn't firing", "integrations")
        );
        assert!(has("How can I export all my data to CSV?", "data_export"));
        assert!(
            has("Delete my personal data under GDPR", "privacy_request")
                && has("We want SSO with our company login", "sso_2fa")
        );
        // Transport.
        assert!(has("公交卡怎么充值", "transit_card") && has("I left my umbrella on the train", "transit_lost_found"));
        assert!(has("共享单车锁不上", "bike_sharing") && has("过收费站的时候ETC没反应", "highway_toll"));
        assert!(has("今天北京尾号限行几号", "traffic_restriction") && has("地铁又晚点了", "transit_disruption"));
        // Schools.
        assert!(has("孩子明年幼升小怎么报名", "school_enrollment") && has("校车今天没来", "school_bus"));
        assert!(
            has("学校午餐费怎么交", "school_meals")
                && has("I'd like to talk to my daughter's teacher", "parent_teacher")
        );
        assert!(
            has("孩子今天肚子疼，不去学校了", "child_absence")
                && has("My son is sick and won't be in school", "child_absence")
        );
        assert!(has("放学后有托管吗", "after_school"));
        // Shops.
        assert!(has("你们店开到几点", "opening_hours") && has("What time do you close on Sunday?", "opening_hours"));
        assert!(has("离我最近的门店在哪", "store_location") && has("店里还有这个鞋的货吗", "store_stock"));
        assert!(has("礼品卡余额怎么查", "gift_card") && has("These jeans are too long", "alterations"));
        assert!(
            has("I saw it cheaper on another website", "price_protection")
                && has("会员卡丢了怎么办", "shop_membership")
        );
        assert!(
            has("电梯坏了，被困在里面", "building_facilities") && has("My phone screen is cracked", "phone_repair")
        );
        assert!(has("The concert got cancelled", "event_ticket_refund"));
        // Not on words that merely hold the characters or on other services' words.
        assert!(!has("空调噪音很大", "noise_complaint") && !has("修改短信通知", "alterations"));
        assert!(!has("电子警察拍到我闯红灯", "police_report") && !has("电脑屏幕碎了", "phone_repair"));
        assert!(!has("产品密钥过期了", "api_access") && !has("I need more cat litter", "waste_collection"));
        assert!(!has("动感单车课几点开始", "bike_sharing") && !has("路由器坏了", "road_damage"));
        assert!(!has("My card was declined", "saas_billing") && !has("住院病人营养餐怎么订", "school_meals"));
        assert!(!has("加盖公章", "illegal_construction") && !has("乐园入园时间", "school_enrollment"));
        assert!(!has("Can I pick up in store?", "store_stock") && !has("加入会议", "shop_membership"));
    }

    #[test]
    fn words_of_one_service_do_not_fire_in_anothers_phrases() {
        assert!(!has("please get in touch with me", "arrival"));
        assert!(!has("book a tennis court for Sunday", "legal"));
        assert!(!has("手机没电了", "home_repair"));
        assert!(!has("how do I install the app", "credit_card") && !has("how do I install the app", "loan"));
        assert!(!has("a train ticket to Shanghai", "training"));
        assert!(!has("raise my credit limit", "course_registration"));
        assert!(!has("the driver was rude to me", "software"));
        // Their own phrases still do.
        assert!(has("can I pay in installments", "credit_card") && has("update the printer driver", "software"));
    }

    #[test]
    fn odd_input_does_not_panic() {
        for text in ["", "   ", "🙂🙂🙂", "？？！！。。", "a'", "'a", "x".repeat(5000).as_str(), "ǅ İ ß ﬁ"]
        {
            let _ = analyze(text);
        }
    }

    #[test]
    fn situations_name_their_service() {
        assert!(has("the package says delivered but nothing's at my door", "delivery"));
        assert!(has("我的快递被别人签收了", "delivery"));
        assert!(has("钱扣了但是订单显示未支付", "billing_error"));
        assert!(has("my card got eaten by the machine", "atm_issue"));
        assert!(has("打了好几次电话都没人接", "complaint"));
        assert!(has("the app keeps logging me out", "lockout"));
        assert!(has("my flight was moved to 6am and I can't make it", "flight_change"));
        assert!(has("收到的东西和图片不一样", "returns") && has("the box was empty", "parcel_claim"));
        assert!(has("there's a charge I didn't make on my card", "fraud"));
        assert!(
            has("医院的号一直挂不上", "clinic_appointment") && has("I didn't get paid this month", "payroll_issue")
        );
    }
}
