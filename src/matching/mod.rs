//! Text matching compiled once per registry snapshot and applied per turn: the layer under both
//! the registry (which compiles it) and the planner
//! (which applies it). Pure: no IO, no clock.
//!
//! - [`terms`]: CJK-aware term matching of keywords, names and examples.
//! - [`extract`]: semantic-key extractors (`extract:` rules of a capability card).
//! - [`dates`]: relative and Chinese dates and times, for the date/time extractors.
//! - [`assign`](mod@assign): which value of a text goes to which of several keys of one card.
//! - [`tokenize`]: text analysis (jieba segmentation, bigrams, stemming, concept lexicon).
//! - [`recognize`]: the scoring recognizer (which cards a query asks for, with evidence).
//! - [`semantic`]: a sentence encoder (USE-m3: text to a 512-dim unit vector; feature `semantic`).
//! - `semantic_stage` (feature `semantic`): the second stage for queries the recognizer is not
//!   confident about, by meaning (a sentence encoder over the cards' texts).

pub mod advice;
pub mod assign;
pub mod dates;
pub mod extract;
pub mod recognize;
#[cfg(feature = "semantic")]
pub mod semantic;
#[cfg(feature = "semantic")]
pub mod semantic_stage;
pub mod terms;
pub mod tokenize;

pub use assign::{assign, KeyRule};
pub use extract::Extractor;
pub use recognize::{CardScore, Evidence, OwnSpan, Recognition, Recognizer, Selected};
pub use terms::{find_term, find_term_all, normalize, LexiconMatcher, Term, TermMatcher};

/// Serializes a confidence (0..1, an `f32`) as a number with two decimals: `0.3`, never the
/// `f32`'s widened digits (`0.30000001192092896`). For `#[serde(serialize_with)]`.
///
/// # Errors
/// Those of the serializer.
pub fn serialize_confidence<S: serde::Serializer>(x: &f32, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((f64::from(*x) * 100.0).round() / 100.0)
}
