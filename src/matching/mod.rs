//! Text matching compiled once per registry snapshot and applied per turn: the layer under both
//! the registry (which compiles it) and the planner
//! (which applies it). Pure: no IO, no clock.
//!
//! - [`terms`]: CJK-aware term matching of keywords, names and examples.
//! - [`extract`]: semantic-key extractors (`extract:` rules of a capability card).

pub mod extract;
pub mod terms;

pub use extract::Extractor;
pub use terms::{find_term, normalize, Term, TermMatcher};
