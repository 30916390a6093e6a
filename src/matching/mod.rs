//! Text matching compiled once per registry snapshot and applied per turn: the layer under both
//! the registry (which compiles it) and the planner
//! (which applies it). Pure: no IO, no clock.
//!
//! - [`terms`]: CJK-aware term matching of keywords, names and examples.
//! - [`extract`]: semantic-key extractors (`extract:` rules of a capability card).
//! - [`tokenize`]: text analysis (jieba segmentation, bigrams, stemming, concept lexicon).
//! - [`recognize`]: the scoring recognizer (which cards a query asks for, with evidence).

pub mod extract;
pub mod recognize;
pub mod terms;
pub mod tokenize;

pub use extract::Extractor;
pub use recognize::{CardScore, Evidence, Recognition, Recognizer, Selected};
pub use terms::{find_term, normalize, Term, TermMatcher};
