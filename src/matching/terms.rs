//! Lexical matching prepared once per registry load: [`Term`]s matched CJK-aware (a term with
//! non-ASCII characters matches as a substring, an ASCII term only as a whole word, ignoring
//! case), a card's [`TermMatcher`] (keywords, name, examples), the simple-intent word lists'
//! [`LexiconMatcher`] and [`normalize`].

use aho_corasick::AhoCorasick;

use crate::text::{Lexicon, Lexicons};

/// A prepared search term: lower-cased, with its script class.
#[derive(Debug, Clone)]
pub struct Term {
    lower: String,
    word: bool,
}

impl Term {
    /// Prepares `text` for [`find_term`].
    pub fn new(text: &str) -> Self {
        let lower = text.trim().to_lowercase();
        let word = lower.is_ascii();
        Self { lower, word }
    }

    /// Length in bytes of the lower-cased term.
    pub fn len(&self) -> usize {
        self.lower.len()
    }

    /// `true` for an empty term (never matches).
    pub fn is_empty(&self) -> bool {
        self.lower.is_empty()
    }

    /// The lower-cased term, as searched for.
    pub fn text(&self) -> &str {
        &self.lower
    }

    /// Whether a match at `start` (byte offset in `lower_text`) stands as the term's match: any
    /// substring for a CJK term, a whole word (no ASCII letter or digit either side) for an
    /// ASCII one.
    pub fn matches_at(&self, lower_text: &str, start: usize) -> bool {
        if !self.word {
            return true;
        }
        let bytes = lower_text.as_bytes();
        let end = start + self.lower.len();
        let before_ok = start == 0 || !bytes[start - 1].is_ascii_alphanumeric();
        let after_ok = end >= bytes.len() || !bytes[end].is_ascii_alphanumeric();
        before_ok && after_ok
    }
}

/// Byte offset of the first match of `term` in `lower_text` (already lower-cased): substring for
/// CJK terms, whole word for ASCII terms.
pub fn find_term(lower_text: &str, term: &Term) -> Option<usize> {
    find_term_all(lower_text, term).next()
}

/// Byte offsets of every match of `term` in `lower_text`, as [`find_term`] matches.
pub fn find_term_all<'a>(lower_text: &'a str, term: &'a Term) -> impl Iterator<Item = usize> + 'a {
    let pattern = if term.is_empty() { None } else { Some(term.lower.as_str()) };
    pattern
        .into_iter()
        .flat_map(move |p| lower_text.match_indices(p).map(|(i, _)| i))
        .filter(move |&i| term.matches_at(lower_text, i))
}

/// An agent's keywords, name and examples, prepared once per registry load.
#[derive(Debug, Clone)]
pub struct TermMatcher {
    terms: Vec<Term>,
    examples: Vec<String>,
}

impl TermMatcher {
    /// Prepares `terms` (keywords and name) and `examples` (matched whole, ignoring case,
    /// whitespace and punctuation).
    pub fn new<'a>(terms: impl IntoIterator<Item = &'a String>, examples: &[String]) -> Self {
        Self {
            terms: terms.into_iter().map(|t| Term::new(t)).filter(|t| !t.is_empty()).collect(),
            examples: examples.iter().map(|e| normalize(e)).collect(),
        }
    }

    /// Byte offset of the first match in `lower_text`, if any.
    pub fn find(&self, lower_text: &str, normalized: &str) -> Option<usize> {
        let by_term = self.terms.iter().filter_map(|t| find_term(lower_text, t)).min();
        by_term.or_else(|| self.examples.iter().any(|e| e == normalized).then_some(0))
    }
}

/// Lower-case, drop whitespace and punctuation: the key used for example matching.
pub fn normalize(text: &str) -> String {
    text.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
}

/// The simple-intent word lists of a snapshot's texts ([`crate::text::Lexicons`]), prepared
/// once per registry load.
#[derive(Debug, Clone)]
pub struct LexiconMatcher {
    /// Per [`Lexicon`], in [`Lexicon::ALL`] order: one automaton over all its terms (`None` for
    /// an empty list) and the terms, by pattern id.
    lists: Vec<Option<(AhoCorasick, Vec<Term>)>>,
}

impl LexiconMatcher {
    /// Prepares every list of `lexicons`.
    pub fn new(lexicons: &Lexicons) -> Self {
        let lists = Lexicon::ALL
            .iter()
            .map(|l| {
                let terms: Vec<Term> =
                    lexicons.words(*l).iter().map(|w| Term::new(w)).filter(|t| !t.is_empty()).collect();
                let automaton = AhoCorasick::new(terms.iter().map(Term::text)).ok()?;
                (!terms.is_empty()).then_some((automaton, terms))
            })
            .collect();
        Self { lists }
    }

    /// `true` when `lower_text` (already lower-cased) holds a word of `lexicon` (as
    /// [`find_term`] matches: a whole word for an ASCII term). One pass over the text whatever
    /// the size of the list; overlapping matches are all seen, so a term failing the word test
    /// ("hi" in "this") hides no other.
    pub fn matches(&self, lexicon: Lexicon, lower_text: &str) -> bool {
        let index = Lexicon::ALL.iter().position(|l| *l == lexicon).unwrap_or_default();
        let Some(Some((automaton, terms))) = self.lists.get(index) else { return false };
        automaton
            .find_overlapping_iter(lower_text)
            .any(|m| terms[m.pattern().as_usize()].matches_at(lower_text, m.start()))
    }

    /// The words of `lexicon` found in `lower_text` (already lower-cased), as [`Self::matches`]
    /// finds them, as byte ranges of the text (overlapping ones included).
    pub fn find_all(&self, lexicon: Lexicon, lower_text: &str) -> Vec<std::ops::Range<usize>> {
        let index = Lexicon::ALL.iter().position(|l| *l == lexicon).unwrap_or_default();
        let Some(Some((automaton, terms))) = self.lists.get(index) else { return Vec::new() };
        automaton
            .find_overlapping_iter(lower_text)
            .filter(|m| terms[m.pattern().as_usize()].matches_at(lower_text, m.start()))
            .map(|m| m.range())
            .collect()
    }

    /// `true` when `lower_text` (already lower-cased) is, as a whole, a word of `lexicon`: the
    /// punctuation, symbols and spaces around it are ignored and inner runs of spaces count as
    /// one ("Help!", " /start ", "帮助？"). For lists that mean something only alone (`help`).
    pub fn is_whole(&self, lexicon: Lexicon, lower_text: &str) -> bool {
        let index = Lexicon::ALL.iter().position(|l| *l == lexicon).unwrap_or_default();
        let Some(Some((_, terms))) = self.lists.get(index) else { return false };
        let core = lower_text.trim_matches(|c: char| !c.is_alphanumeric());
        // Bounded: a lexicon word is short, so a long message is no word of it.
        if core.len() > 64 {
            return false;
        }
        let core = core.split_whitespace().collect::<Vec<_>>().join(" ");
        terms.iter().any(|t| t.text() == core)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cjk_substring_and_latin_words() {
        assert_eq!(find_term("帮我订北京的酒店", &Term::new("酒店")), Some(18));
        assert_eq!(find_term("book a hotel, please", &Term::new("Hotel")), Some(7));
        assert_eq!(find_term("hotels", &Term::new("hotel")), None);
        assert_eq!(find_term("订hotel", &Term::new("hotel")), Some(3));
        assert_eq!(find_term("this is it", &Term::new("hi")), None);
    }

    #[test]
    fn a_lexicon_matches_as_its_terms_do() {
        let lexicons = Lexicons::shipped();
        let m = LexiconMatcher::new(lexicons);
        assert!(m.matches(Lexicon::Cancel, "never mind"));
        assert!(m.matches(Lexicon::Cancel, "算了吧"));
        // Whole words for ASCII terms: "exit" inside "exits" is no match, and a failed
        // candidate hides no other one that overlaps it.
        assert!(!m.matches(Lexicon::Cancel, "exits of the airport"));
        assert!(m.matches(Lexicon::Cancel, "exits, exit"));
        // A whole-message list: the message is the word, punctuation and spaces aside.
        assert!(m.is_whole(Lexicon::Help, "Help!".to_lowercase().as_str()));
        assert!(m.is_whole(Lexicon::Help, " /start "));
        assert!(m.is_whole(Lexicon::Help, "i  need help?"));
        assert!(m.is_whole(Lexicon::Help, "帮助？"));
        assert!(!m.is_whole(Lexicon::Help, "help me book a hotel"));
        assert!(!m.is_whole(Lexicon::Help, "帮助我订酒店"));
        for (lexicon, text) in [(Lexicon::Cancel, "please cancel"), (Lexicon::Greeting, "hello there")] {
            let slow = lexicons.words(lexicon).iter().any(|w| find_term(text, &Term::new(w)).is_some());
            assert_eq!(m.matches(lexicon, text), slow, "{text}");
        }
    }
}
