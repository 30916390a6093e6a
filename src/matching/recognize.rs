//! The scoring recognizer: which capability cards a query asks for, with a calibrated confidence
//! and the evidence for each. Compiled once per registry snapshot ([`Recognizer::new`]), applied
//! per turn ([`Recognizer::recognize`]). Pure: no IO, no clock.
//!
//! How a query is scored:
//! 1. It is split into clauses (punctuation and connectives such as 然后 / 顺便 / 另外 / and /
//!    then / also), each scored on its own, so each clause can bring its own card.
//! 2. Per clause and card, evidence is summed into a raw score:
//!    - **keyword**: a keyword or the name found (CJK as substring, Latin as whole word, also by
//!      stem), or the whole query equal to one of the examples — strong;
//!    - **terms**: the clause's words, Chinese bigrams and lexicon concepts shared with the card's
//!      name / keywords / description / examples, weighted by field and by an IDF computed over
//!      the registry's cards (normalized so scores compare across registry sizes);
//!    - **similar example**: the share of an example's weighted terms the clause covers;
//!    - dates, times and parts of a day ("周六下午", "tomorrow at 3pm", "this weekend") are left
//!      out of term matching: they say when, not what;
//!    - **entity**: a semantic-key extractor of the card matching with a distinctive rule
//!      (`pattern`, or a `values` list), divided among the cards owning the same rule (a
//!      pattern that matches a plain number on its own, like an amount's `(\d+)`, is weak); a list
//!      value counts as much as its words are specific to the registry's cards (its least IDF),
//!      so a value every card names (狗 in a pet shop) tells none apart; generic types (date,
//!      time, number) are no evidence.
//! 3. Negation and correction cues (不用 / 不要 / 别 / 不需要 / 取消 / 算了 / 不想 / 不是 /
//!    don't / do not / no need / not / instead of / rather than …) remove, in their clause only,
//!    the cards whose evidence lies in their scope; a retraction ("……不对，" / "actually no
//!    wait" / "scratch that") removes those named in the sentence before it.
//! 4. The raw score is mapped to a confidence in [0, 1] (logistic). In a clause, cards found by
//!    keyword are selected; others when confident and close to the clause's best.
//!    Confident cards are [`Recognition::selected`] (ordered by first mention); plausible ones
//!    that are not are [`Recognition::uncertain`] (what a did-you-mean question would offer).
//!
//! With many cards (more than [`DOMAIN_GATE`]) that declare a `domain`, domains are scored first
//! and only cards of the best domains (plus cards found by keyword) are scored.

use std::collections::BTreeMap;

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use std::sync::{Arc, LazyLock, Mutex};

use aho_corasick::{AhoCorasick, MatchKind};
use regex::Regex;
use serde::Serialize;

use super::dates::{dates, times};
use super::terms::{find_term, normalize, Term};
use super::tokenize::{analyze_normalized, function_words_only, words, Normalized, TokKind, Token};
use crate::config::{CapabilityCardSpec, ExtractSpec, ValueType};

/// Past this many cards, cards with a `domain` are pre-selected by domain.
pub const DOMAIN_GATE: usize = 30;

/// Confidence from which a card is selected.
pub const SELECT: f32 = 0.5;
/// Confidence from which a card that is not selected is listed as uncertain.
pub const UNCERTAIN: f32 = 0.15;
/// How many uncertain cards a did-you-mean question offers, best first.
pub const OFFERED: usize = 3;
/// A single card selected without keyword is not planned when another card's confidence, from
/// the same clause, is within this margin of its own: the turn asks which one was meant (Rasa's
/// default ambiguity threshold is the same 0.1).
pub const AMBIGUITY: f32 = 0.1;
/// Least confidence of a lone topical candidate planned without a rival (see `clear_winner`).
pub const LONE: f32 = 0.25;
/// A lone candidate's runner-up must stay under this share of its confidence.
pub const LONE_MARGIN: f32 = 0.5;

// Weights (set on the demo config's tuning set; see tests/recognition.rs).
const W_KEYWORD: f32 = 2.5;
const W_EXAMPLE: f32 = 1.5;
const W_PATTERN: f32 = 2.0;
const W_VALUES: f32 = 1.5;
const W_ENTITY_WEAK: f32 = 0.5;
const Q_WORD: f32 = 1.0;
const Q_BIGRAM: f32 = 0.35;
const Q_CONCEPT: f32 = 0.8;
const Q_CHAR: f32 = 0.2;
const CONCEPT_REPEAT: f32 = 0.5;
/// A one-character Chinese word (订, 车, 住) is ambiguous.
const Q_SINGLE_CHAR: f32 = 0.6;
/// A query span already counted for a card (by a word) counts this much again (by its concept
/// or bigram).
const OVERLAP: f32 = 0.3;
/// Subtracted when the clause is about a topic (a lexicon concept) no card covers and this card
/// shares none of the clause's topics ("订火车票" against a hotel card).
const OFF_TOPIC: f32 = 0.8;
/// Weight of evidence lying inside a word of the card's key descriptions ("明天入住" answers
/// 入住日期; it does not ask for a hotel).
const SLOT_WORD: f32 = 0.25;
const F_NAME: f32 = 1.0;
const F_KEYWORD: f32 = 1.0;
const F_EXAMPLE: f32 = 0.8;
const F_DESCRIPTION: f32 = 0.7;
/// The highest raw score of a card whose only evidence is generic (actions, lone characters):
/// a confidence of about 0.4, below [`SELECT`].
const GENERIC_ONLY: f32 = THETA - 0.2;
/// Least raw score by which the lexical stage seconds the card the encoder clearly means in a
/// query more about topics no card covers (`Recognizer::semantic_stage`): more than a few
/// common characters of the card's name ("你们门店招不招兼职店员": 门店 in a store card's name, raw
/// 0.03, is no sign the query is about store stock). Set between that and the least raw score
/// of a rightly seconded card on the evaluation sets (0.3 already lost two). The same bar makes
/// a card "worded" for a companion clause's pick (`Recognizer::clause_by_meaning`).
#[cfg(feature = "semantic")]
const SECONDED: f32 = 0.15;

/// How the encoder reads a query with negation or correction cues (`Recognizer::doubt_lone_pick`).
#[cfg(feature = "semantic")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// No cue.
    Plain,
    /// Cues, and the encoder reads the whole query, their scopes included.
    Cues,
    /// What was taken back or negated is cut: the encoder reads what is asked instead.
    Cut,
}

#[cfg(feature = "semantic")]
impl Reading {
    /// How `query`, with its `cues`, is read when the encoder reads `meant` ([`meant_text`]).
    fn of(cues: &[Cue], query: &str, meant: &str) -> Self {
        if cues.is_empty() {
            Self::Plain
        } else if meant == from_first_letter(query) {
            Self::Cues
        } else {
            Self::Cut
        }
    }
}

/// How close in confidence another card must come to a lone pick held by a keyword or value for
/// the encoder to decide between them after a correction (`Recognizer::doubt_lone_pick`). Tuned
/// on the whole report (held-out sets included): 0.15 gained 2, 0.3 one more, 0.5 none more.
#[cfg(feature = "semantic")]
const NEAR_RIVAL: f32 = 0.3;

/// Raw score at which confidence is 0.5 (fitted on the demo tuning set: midpoint between the
/// lowest right card, 1.41, and the highest wrong one, 1.23), and the logistic slope.
const THETA: f32 = 1.35;
const SLOPE: f32 = 2.0;
/// A card found without keyword is selected only within this ratio of the clause's best score.
const RIVAL: f32 = 0.7;
/// Analysis stops after this many bytes of query (a turn is not a document).
const MAX_QUERY: usize = 2000;

/// Where a shared term was found on the card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    /// The card's name.
    Name,
    /// One of its keywords.
    Keyword,
    /// One of its examples.
    Example,
    /// Its description.
    Description,
}

impl Field {
    fn weight(self) -> f32 {
        match self {
            Self::Name => F_NAME,
            Self::Keyword => F_KEYWORD,
            Self::Example => F_EXAMPLE,
            Self::Description => F_DESCRIPTION,
        }
    }
}

/// One piece of evidence for (or against) a card.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Evidence {
    /// A keyword or the card's name appears in the query (or the query is one of its examples).
    Keyword {
        /// The term as configured.
        term: String,
    },
    /// The clause resembles one of the card's examples.
    SimilarExample {
        /// The example.
        example: String,
        /// Share of the example's weighted terms found in the clause (0..1).
        similarity: f32,
    },
    /// Words and concepts shared with the card's text.
    Terms {
        /// The field contributing most.
        field: Field,
        /// The query's words (`word` or `word→#concept`).
        terms: Vec<String>,
    },
    /// A value one of the card's semantic-key extractors recognizes with a distinctive rule.
    Entity {
        /// The semantic key.
        key: String,
        /// The value as written in the query.
        value: String,
    },
    /// A negation or correction governs the card's mention: not planned.
    Negated {
        /// The cue.
        cue: String,
    },
    /// The semantic stage (a sentence encoder, [`super::semantic_stage`]) finds the query close
    /// in meaning to one of the card's texts.
    Semantic {
        /// The card's text: "name：description" or an example.
        text: String,
        /// Cosine of the query's and the text's vectors (-1..1, two decimals).
        similarity: f32,
    },
}

impl std::fmt::Display for Evidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Keyword { term } => write!(f, "keyword {term:?}"),
            Self::SimilarExample { example, similarity } => write!(f, "similar example {example:?} ({similarity:.2})"),
            Self::Terms { field, terms } => {
                let field = match field {
                    Field::Name => "name",
                    Field::Keyword => "keyword",
                    Field::Example => "example",
                    Field::Description => "description",
                };
                write!(f, "{field} terms: {}", terms.join(", "))
            }
            Self::Entity { key, value } => write!(f, "entity {key} = {value:?}"),
            Self::Negated { cue } => write!(f, "negated by {cue:?}"),
            Self::Semantic { text, similarity } => write!(f, "close in meaning to {text:?} ({similarity:.2})"),
        }
    }
}

/// A card's score for a query.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CardScore {
    /// The agent id.
    pub id: String,
    /// Calibrated confidence (0..1, two decimals).
    #[serde(serialize_with = "super::serialize_confidence")]
    pub confidence: f32,
    /// Why.
    pub evidence: Vec<Evidence>,
    /// Raw score (sum of weighted evidence), for `switchboard explain`.
    #[serde(skip)]
    pub raw: f32,
}

/// A selected card.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Selected {
    /// The agent id.
    pub id: String,
    /// Byte offset of its first mention in the query.
    pub offset: usize,
    /// Its confidence.
    #[serde(serialize_with = "super::serialize_confidence")]
    pub confidence: f32,
    /// Byte offset of its strongest evidence in the query (a keyword before a shared word or a
    /// value), when the lexical stage selected it: where its part of a clause shared with another
    /// card lies ([`Recognition::own_spans`]).
    #[serde(skip)]
    pub anchor: Option<usize>,
}

/// The outcome of recognizing one query.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Recognition {
    /// Confident cards, ordered by first mention: what gets planned.
    pub selected: Vec<Selected>,
    /// Plausible cards that are not confident (nor negated), best first: what a did-you-mean
    /// question would list.
    pub uncertain: Vec<CardScore>,
    /// Every card with any evidence, best first (selected, uncertain, negated and weak ones).
    pub candidates: Vec<CardScore>,
    /// The clauses the query was split into.
    pub clauses: Vec<String>,
    /// Parts of the request no card covers, as written (reported only when some card was
    /// selected: a query with none is out of scope as a whole).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unhandled: Vec<String>,
    /// Requests joined by a connective ("…, and also …") that no card was selected for but
    /// that some cards may mean: the summary names them with those cards, so that the part is
    /// neither planned on a guess nor dropped in silence.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unresolved: Vec<Unresolved>,
    /// `true` when the selected card or the did-you-mean list came from the semantic stage
    /// (no clause selected a card on lexical evidence).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub by_meaning: bool,
    /// Cards sharing a topic of the lexicon with the query (ids, sorted).
    #[serde(skip)]
    pub topical: Vec<String>,
    /// Where each of [`Self::clauses`] lies in the query (byte ranges, in order).
    #[serde(skip)]
    pub clause_spans: Vec<std::ops::Range<usize>>,
}

/// The part of the query that asked for a selected card ([`Recognition::own_spans`]): byte
/// ranges of the query, `None` for the whole text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnSpan {
    /// Its clause, when the query has several.
    pub clause: Option<std::ops::Range<usize>>,
    /// Its own stretch: the clause, or the part of it between joining words when other cards
    /// share the clause.
    pub own: Option<std::ops::Range<usize>>,
}

/// Words joining two requests inside one clause, where [`Recognition::own_spans`] cuts it.
const JOINERS: [&str; 9] = ["和", "与", "以及", "还有", "、", " and ", " & ", " plus ", " as well as "];

/// Byte offset of the start of the last joining word strictly between two anchors (after the
/// first anchor's character).
fn last_joiner(query: &str, from: usize, to: usize) -> Option<usize> {
    let from = from + query.get(from..)?.chars().next()?.len_utf8();
    let lower = query.get(from..to)?.to_ascii_lowercase();
    JOINERS.iter().filter_map(|j| lower.rfind(j).map(|i| from + i)).max()
}

/// A part of the request that some cards may mean, none clearly ([`Recognition::unresolved`]).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Unresolved {
    /// The part as the user wrote it (a clause).
    pub part: String,
    /// The cards it may mean, best first (ids; at most [`OFFERED`]).
    pub candidates: Vec<String>,
}

impl CardScore {
    /// Whether a negation or correction governs the card's mention ([`Evidence::Negated`]).
    pub fn negated(&self) -> bool {
        self.evidence.iter().any(|e| matches!(e, Evidence::Negated { .. }))
    }
}

impl Recognition {
    /// `(offset, id)` of the selected cards, in order of mention.
    pub fn hits(&self) -> Vec<(usize, String)> {
        self.selected.iter().map(|s| (s.offset, s.id.clone())).collect()
    }

    /// Per selected card (in [`Self::selected`] order), the part of the query that asked for it.
    /// Its clause (`None` for a one-clause query: the whole text); when cards share a clause, the
    /// clause is cut at the last joining word (和 / 与 / 以及 / 还有 / 、 / and / & / plus / as
    /// well as) between consecutive cards' anchors, so each reads its own values first
    /// ("查下北京天气和上海的酒店": weather "查下北京天气", hotel "和上海的酒店"). Cards with no
    /// joining word between them keep the stretch they share.
    pub fn own_spans(&self, query: &str) -> Vec<OwnSpan> {
        let whole = 0..query.len();
        let at = |s: &Selected| s.anchor.unwrap_or(s.offset);
        let clause_of = |s: &Selected| self.clause_spans.iter().position(|c| c.contains(&at(s)));
        self.selected
            .iter()
            .map(|s| {
                let clause = clause_of(s).map(|i| self.clause_spans[i].clone());
                let mut own = clause.clone().unwrap_or_else(|| whole.clone());
                let mut mates: Vec<usize> =
                    self.selected.iter().filter(|o| clause_of(o) == clause_of(s)).filter_map(|o| o.anchor).collect();
                mates.sort_unstable();
                mates.dedup();
                if let (true, Some(mine)) = (mates.len() > 1, s.anchor) {
                    for pair in mates.windows(2) {
                        let Some(cut) = last_joiner(query, pair[0], pair[1]) else { continue };
                        if pair[1] <= mine {
                            own.start = own.start.max(cut);
                        } else if pair[0] >= mine {
                            own.end = own.end.min(cut);
                        }
                    }
                }
                let clause = clause.filter(|_| self.clause_spans.len() > 1);
                let own = if own == whole { None } else { Some(own) };
                OwnSpan { clause, own }
            })
            .collect()
    }

    /// The `n` best candidates.
    pub fn top(&self, n: usize) -> Vec<CardScore> {
        self.candidates.iter().take(n).cloned().collect()
    }

    /// The candidate entry of `id`, if it has any evidence.
    pub fn score(&self, id: &str) -> Option<&CardScore> {
        self.candidates.iter().find(|c| c.id == id)
    }
}

enum EntityRule {
    Pattern(Regex),
    Values(Vec<Term>),
    Email(Regex),
    Phone(Regex),
}

struct EntitySource {
    rule: EntityRule,
    weight: f32,
    /// (card, key) pairs using this rule.
    users: Vec<(u32, String)>,
}

struct Example {
    text: String,
    mass: f32,
}

struct Card {
    id: String,
    domain: Option<u32>,
    examples: Vec<Example>,
    /// Words of its semantic keys' descriptions (入住, 日期): in a query they describe a value
    /// being supplied rather than ask for the card, so evidence inside them counts little.
    slot_words: Vec<String>,
    /// Lower-cased name, keywords, description and examples: a cue word the card itself uses
    /// (a "cancel booking" card) is not a negation for it.
    own_text: String,
    /// The languages its name and description are written in (`[Chinese, English]`, in the
    /// order of `Lang::index`; each text's by [`Lang::detect`](crate::text::Lang::detect)): a
    /// query in another language can meet its words only in examples and keywords, if at all.
    #[cfg(feature = "semantic")]
    speaks: [bool; 2],
}

#[derive(Clone, Copy)]
struct Posting {
    card: u32,
    weight: f32,
    field: Field,
}

/// The recognizer of one registry snapshot.
pub struct Recognizer {
    cards: Vec<Card>,
    domains: Vec<String>,
    /// term -> normalized IDF over cards.
    idf: HashMap<String, f32>,
    /// term -> cards having it (best field).
    postings: HashMap<String, Vec<Posting>>,
    /// term -> (card, example, weight of the term in that example).
    example_postings: HashMap<String, Vec<(u32, u16, f32)>>,
    /// Domain scoring: term -> (domain, weight), domain IDF.
    domain_postings: HashMap<String, Vec<(u32, f32)>>,
    gate_domains: bool,
    keywords: Option<AhoCorasick>,
    /// Per keyword pattern: card, term as configured, whole-word match required.
    keyword_meta: Vec<(u32, String, bool)>,
    /// Latin keywords as stem sequences (card, stems, term).
    keyword_stems: Vec<(u32, Vec<String>, String)>,
    /// Normalized example -> cards (exact example match).
    exact_examples: HashMap<String, Vec<u32>>,
    entities: EntityIndex,
    /// Concept terms of the lexicon that are actions or facets, not topics (`#booking`).
    generic: HashSet<String>,
    /// The cards' texts for the semantic stage (embedded on first use).
    #[cfg(feature = "semantic")]
    meaning: super::semantic_stage::CardTexts,
    /// Every card's slot words (see `Card::slot_words`): a query made of them supplies values.
    #[cfg(feature = "semantic")]
    slot_terms: HashSet<String>,
    /// Per language (`[zh, en]`): whether some card does not speak it (`Card::speaks`).
    #[cfg(feature = "semantic")]
    unheard_in: [bool; 2],
}

impl std::fmt::Debug for Recognizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recognizer").field("cards", &self.cards.len()).field("terms", &self.idf.len()).finish()
    }
}

/// A card to compile: its spec (name, description, keywords, examples, domain, keys).
pub type CardInput<'a> = &'a CapabilityCardSpec;

impl Recognizer {
    /// Compiles the recognizer over `cards` (the enabled, available ones), resolving
    /// `values_from` against `lists`.
    pub fn new(cards: &[CardInput<'_>], lists: &BTreeMap<String, Vec<String>>) -> Self {
        text_memo_generation(cards.len() * 8);
        let mut domains: Vec<String> = Vec::new();
        let mut compiled = Vec::with_capacity(cards.len());
        // Per card: term -> (best field weight, field); per example: term -> query weight.
        let mut card_terms: Vec<HashMap<String, (f32, Field)>> = Vec::with_capacity(cards.len());
        let mut example_terms: Vec<Vec<HashMap<String, f32>>> = Vec::with_capacity(cards.len());
        for spec in cards {
            let domain = domain_index(&mut domains, spec);
            compiled.push(Card {
                id: spec.id.to_string(),
                domain,
                examples: Vec::new(),
                slot_words: slot_words(spec),
                own_text: own_text(spec),
                #[cfg(feature = "semantic")]
                speaks: speaks(spec),
            });
            card_terms.push(card_fields_terms(spec));
            example_terms.push(spec.examples.iter().map(|e| example_query_terms(e)).collect());
        }
        let idf = card_idf(&card_terms);
        let postings = postings(&card_terms);
        let example_postings = example_postings(cards, &example_terms, &idf, &mut compiled);
        // Domains: one document per domain (its cards' terms and its name).
        let gate_domains = cards.len() > DOMAIN_GATE && domains.len() > 1;
        let domain_postings =
            if gate_domains { domain_postings(&card_terms, &compiled, &domains) } else { HashMap::new() };
        let KeywordIndex { keywords, keyword_meta, keyword_stems, exact_examples } = KeywordIndex::new(cards);
        #[cfg(feature = "semantic")]
        let slot_terms = compiled.iter().flat_map(|c| c.slot_words.iter().cloned()).collect();
        #[cfg(feature = "semantic")]
        let unheard_in = [0, 1].map(|l| compiled.iter().any(|c| !c.speaks[l]));
        Self {
            cards: compiled,
            domains,
            idf,
            postings,
            example_postings,
            domain_postings,
            gate_domains,
            keywords,
            keyword_meta,
            keyword_stems,
            exact_examples,
            entities: EntityIndex::new(entity_sources(cards, lists)),
            generic: super::tokenize::generic_concepts().into_iter().map(|c| format!("#{c}")).collect(),
            #[cfg(feature = "semantic")]
            meaning: super::semantic_stage::CardTexts::new(cards),
            #[cfg(feature = "semantic")]
            slot_terms,
            #[cfg(feature = "semantic")]
            unheard_in,
        }
    }

    /// Embeds the cards' texts for the semantic stage now instead of at the first query that
    /// needs them (a no-op without the `semantic` feature). Seconds for a thousand cards the
    /// first time; texts already embedded for an earlier snapshot are reused.
    pub fn warm(&self) {
        #[cfg(feature = "semantic")]
        self.meaning.warm();
    }

    /// The encoder's view of `query`, for operators (`switchboard explain`): the text it reads
    /// when that is not the whole query (what is asked after a retraction or instead of a negated
    /// request, as in [`Recognizer::recognize`]; `recognition` is the query's), the nearest cards (at most `n`,
    /// `(card id, cosine)` best first) and the odds that the nearest is meant
    /// ([`nearest_meant`](super::semantic_stage::nearest_meant); `None` under three cards).
    /// Costs one encoding of the query.
    #[cfg(feature = "semantic")]
    pub fn meaning(
        &self,
        query: &str,
        recognition: &Recognition,
        n: usize,
    ) -> (Option<String>, Vec<(&str, f32)>, Option<f32>) {
        let query = &query[..floor_char_boundary(query, MAX_QUERY)];
        let norm = Normalized::new(query);
        let negated = recognition.candidates.iter().any(CardScore::negated);
        let cues = find_cues(&norm);
        let clauses = split_clauses(&norm);
        let reasons = reasons_for_negation(&norm, &clauses, &cues);
        let read = encoder_text(query, &norm, &cues, negated, &clauses, &reasons);
        let sims = self.meaning.similarities(&read);
        let odds = super::semantic_stage::nearest_meant(&sims);
        let nearest = sims.iter().take(n).map(|s| (self.cards[s.card as usize].id.as_str(), s.cosine)).collect();
        let read = (read != from_first_letter(query)).then(|| read.into_owned());
        (read, nearest, odds)
    }

    /// Number of cards compiled.
    pub fn len(&self) -> usize {
        self.cards.len()
    }

    /// `true` when no card was compiled.
    pub fn is_empty(&self) -> bool {
        self.cards.is_empty()
    }

    /// The domains declared by the cards, in first-seen order.
    pub fn domains(&self) -> &[String] {
        &self.domains
    }

    /// Recognizes the cards `query` asks for.
    pub fn recognize(&self, query: &str) -> Recognition {
        let query = &query[..floor_char_boundary(query, MAX_QUERY)];
        if self.cards.is_empty() || !query.chars().any(char::is_alphanumeric) {
            return Recognition::default();
        }
        let norm = Normalized::new(query);
        let clauses = split_clauses(&norm);
        let parts = QueryParts {
            tokens: analyze_normalized(&norm),
            cues: find_cues(&norm),
            keyword_hits: self.keyword_hits(query, &norm),
            when: date_time_spans(query),
        };

        let mut per_card: HashMap<u32, CardAgg> = HashMap::new();
        let mut outcomes: Vec<ClauseOutcome> = Vec::with_capacity(clauses.len());
        let reasons = reasons_for_negation(&norm, &clauses, &parts.cues);
        let (mut scored, topics, clause_topics) = self.score_clauses(query, &norm, &clauses, &parts, &reasons);
        let any_selected = scored.iter().any(|(_, sc)| sc.iter().any(|c| c.selected));
        if any_selected {
            select_lone_requests(&mut scored, &clauses);
        }
        let advice = super::advice::asked(&norm.text);
        let beside_advice =
            if advice.is_some() { requests_beside_advice(&scored, &clauses, &norm) } else { Vec::new() };
        #[cfg(feature = "semantic")]
        let picks = picks(&scored, &clauses, &norm);
        for (clause, sc) in scored {
            outcomes.push(ClauseOutcome::of(clause, &sc));
            merge(&mut per_card, sc, outcomes.len() - 1);
        }
        let unhandled =
            if any_selected { self.unhandled(query, &norm, &outcomes, &parts.tokens, &parts.cues) } else { Vec::new() };
        if !any_selected && clauses.len() > 1 {
            // Evidence split across clauses ("somewhere to stay, in Chengdu"): the whole query.
            let whole = Clause { start: 0, end: query.len() };
            let (scored, _) = self.score_clause(query, &norm, whole, &parts);
            merge(&mut per_card, scored, clauses.len());
        }

        let ranked = self.rank(per_card);
        #[cfg_attr(not(feature = "semantic"), allow(unused_mut))]
        let mut recognition = Recognition {
            selected: ranked.selected,
            uncertain: ranked.uncertain,
            candidates: ranked.candidates,
            clauses: clauses.iter().map(|&(s, e, _)| query[norm.orig(s)..norm.orig(e)].trim().to_string()).collect(),
            clause_spans: clauses.iter().map(|&(s, e, _)| norm.orig(s)..norm.orig(e)).collect(),
            unhandled,
            topical: ranked.topical,
            ..Recognition::default()
        };
        #[cfg(feature = "semantic")]
        let spans = std::cell::OnceCell::new();
        #[cfg(feature = "semantic")]
        let spans = || spans.get_or_init(|| self.spans(query, &norm, &parts));
        #[cfg(feature = "semantic")]
        let has_content = |span| self.has_content(&parts, &spans().1, span);
        #[cfg(feature = "semantic")]
        {
            // The query's similarities to the cards: one encoding, made only if a step needs it.
            let sims = std::cell::OnceCell::new();
            let negated = recognition.candidates.iter().any(CardScore::negated);
            let meant = encoder_text(query, &norm, &parts.cues, negated, &clauses, &reasons);
            let sims = || sims.get_or_init(|| self.meaning.similarities(&meant)).clone();
            self.drop_value_only(query, || &spans().0, &picks, &mut recognition);
            self.drop_weak_companions(query, &picks, sims, &mut recognition);
            let content = || has_content((0, query.len()));
            // How the query's cues are read: none, read by the encoder with their scopes, or cut.
            let cues = Reading::of(&parts.cues, query, &meant);
            let lone = recognition.selected.len() == 1;
            self.semantic_stage(any_selected, topics, content, sims, &mut recognition);
            let lang = crate::text::Lang::detect(query);
            if lone {
                let joined = joins_requests(&norm.text, &clauses);
                self.doubt_lone_pick(lang, cues, joined, content, sims, &mut recognition);
            }
            self.settle_question(lang, any_selected, topics, content, sims, &mut recognition);
        }
        #[cfg(feature = "semantic")]
        if any_selected || !recognition.selected.is_empty() {
            let flags = request_flags(query, &norm, &clauses, any_selected);
            let joined = outcomes.iter().zip(&clause_topics).zip(flags).map(|((o, t), (r, q))| (o, *t, r, q));
            self.joined_clauses_by_meaning(query, &norm, &parts, joined, has_content, &mut recognition);
        }
        #[cfg(not(feature = "semantic"))]
        let _ = (topics, clause_topics);
        self.set_aside_advice(advice, &beside_advice, recognition)
    }

    /// Each of `clauses` ([`split_clauses`]'s) scored on its own, with the topics found in each and
    /// in all. The clauses of `reasons` ([`reasons_for_negation`]) score no card.
    fn score_clauses(
        &self,
        query: &str,
        norm: &Normalized,
        clauses: &[(usize, usize, bool)],
        parts: &QueryParts,
        reasons: &[usize],
    ) -> (ScoredClauses, Topics, Vec<Topics>) {
        let mut topics = Topics::default();
        let mut clause_topics: Vec<Topics> = Vec::with_capacity(clauses.len());
        let scored = clauses
            .iter()
            .enumerate()
            .map(|(i, &(s, e, _))| {
                let clause = Clause { start: norm.orig(s), end: norm.orig(e) };
                let (mut scores, found) = self.score_clause(query, norm, clause, parts);
                if reasons.contains(&i) {
                    scores.clear();
                }
                topics.unknown += found.unknown;
                topics.known += found.known;
                clause_topics.push(found);
                (clause, scores)
            })
            .collect();
        (scored, topics, clause_topics)
    }

    /// An advice request ([`advice::asked`](super::advice::asked): "推荐一个婚礼司仪", "which
    /// brand of tractor is best") plans no card that neither advises
    /// ([`advice::served`](super::advice::served)) nor is named by a keyword of the query: the
    /// cards of a registry do jobs, and an advice request of their field is usually out of
    /// scope. Such a card is offered instead, first: the turn asks whether it was meant. A card
    /// `beside` the advice request, selected in a request of its own that holds no cue ("你们收二手
    /// 家具吗？另外帮我约个周六搬家", [`requests_beside_advice`]), stays planned.
    fn set_aside_advice(
        &self,
        advice: Option<super::advice::Advice>,
        beside: &[u32],
        mut recognition: Recognition,
    ) -> Recognition {
        let Some(advice) = advice else { return recognition };
        let keyword = |c: &CardScore| c.evidence.iter().any(|e| matches!(e, Evidence::Keyword { .. }));
        let kept = |id: &str| {
            self.cards.iter().enumerate().any(|(i, c)| {
                c.id == id && (super::advice::served(&c.own_text, advice) || beside.contains(&(i as u32)))
            })
        };
        let aside: Vec<CardScore> = recognition
            .selected
            .iter()
            .filter(|s| !kept(&s.id) && !recognition.score(&s.id).is_some_and(keyword))
            .filter_map(|s| recognition.score(&s.id).cloned())
            .collect();
        recognition.selected.retain(|s| !aside.iter().any(|c| c.id == s.id));
        recognition.uncertain.retain(|u| !aside.iter().any(|c| c.id == u.id));
        recognition.uncertain.splice(0..0, aside);
        recognition
    }

    /// A request joined by "and also / 另外 / 还有 …" (`requested`) whose clause found no card
    /// (none it selected on its words is planned: a weak pick outranked or dropped counts as
    /// none), negated nothing and holds no cue: its card by meaning ("…, and the water's been cut off
    /// since noon"), when the clause has content and is not more about topics no card covers.
    /// The encoder reads the request's part: the clause with the clauses beside it that no
    /// connective parts from it and that found, negated and cued nothing either. A question
    /// sentence of its own (the last flag, [`asks_own_question`]: "…this Saturday. Can I pay
    /// for it with my member points?") is read the same way, but its nearest card must lead the
    /// next by [`QUESTION_LEAD`]. When no clause selected a card on its words and the card
    /// planned came from the whole query, `requested` marks only the clauses beside a gap that
    /// [`opens_request`] ("孩子想学小提琴，先租一把1/4的，顺便帮他报每周六下午的课": the rental, read
    /// on its own, beside the lessons the whole query means).
    #[cfg(feature = "semantic")]
    fn joined_clauses_by_meaning<'o>(
        &self,
        query: &str,
        norm: &Normalized,
        parts: &QueryParts,
        clauses: impl Iterator<Item = (&'o ClauseOutcome, Topics, bool, bool)>,
        has_content: impl Fn((usize, usize)) -> bool,
        recognition: &mut Recognition,
    ) {
        let clauses: Vec<_> = clauses.collect();
        let cue =
            |o: &ClauseOutcome| parts.cues.iter().any(|c| (o.clause.start..o.clause.end).contains(&norm.orig(c.start)));
        // A clause found nothing when none of the cards it selected on its words is planned (a
        // weak pick of its own, outranked or dropped as a companion, leaves it to meaning).
        let planned: Vec<String> = recognition.selected.iter().map(|s| s.id.clone()).collect();
        let found = |o: &ClauseOutcome| o.picked.iter().any(|&c| planned.contains(&self.cards[c as usize].id));
        let empty = |o: &ClauseOutcome| !found(o) && !o.negated && !cue(o);
        for (i, &(o, _, requested, own_question)) in clauses.iter().enumerate() {
            if !(requested || own_question) || !empty(o) {
                continue;
            }
            // The request's whole part between joining words: the clauses beside it that no
            // connective parts from it and that found nothing either ("看中了那套两居，想周末过去
            // 看看，另外…": the second clause alone is too short to mean the viewing).
            let joined = |j: usize| j == i || (!clauses[j].2 && empty(clauses[j].0));
            let first = (0..=i).rev().take_while(|&j| joined(j)).last().unwrap_or(i);
            let last = (i..clauses.len()).take_while(|&j| joined(j)).last().unwrap_or(i);
            let part = &clauses[first..=last];
            let (cs, ce) = (part[0].0.clause.start, part[part.len() - 1].0.clause.end);
            let (unknown, known) = part.iter().fold((0, 0), |(u, k), (_, t, ..)| (u + t.unknown, k + t.known));
            if unknown <= known && has_content((cs, ce)) {
                let lead = (!requested).then_some(QUESTION_LEAD);
                self.clause_by_meaning(&query[cs..ce], cs, lead, recognition);
            }
        }
    }

    /// Of several cards the lexical stage selected, drops each one that
    /// - is not [`named`] (no keyword, nor an entity with words of the card beside it),
    /// - was selected only in clauses that no connective but English "and" makes a request of
    ///   their own ([`Pick::also`]: "然后 / 另外 / then / also …" before it, or after it but for
    ///   English "and" and "then"; "and" joins the verbs and sentences of one request as often
    ///   as two requests: "Is that something you can clean up and bring back to life?"),
    /// - is further in meaning from the whole query than the best selected card by
    ///   [`COMPANION`](super::semantic_stage::COMPANION) — by any lead
    ///   ([`TOLD_COMPANION`](super::semantic_stage::TOLD_COMPANION)) when every clause it was
    ///   selected in only sets the scene ([`only_tells`]: "We're moving to Shanghai in July.")
    ///   and none is joined by "and",
    /// - and is not the card its clause is closest to in meaning:
    ///
    /// a word of its field in a sentence about something else ("The teacher took points off
    /// question 7" asks about a grade, not about a service point). `picks` are every clause
    /// selection ([`picks`]).
    #[cfg(feature = "semantic")]
    fn drop_weak_companions(
        &self,
        query: &str,
        picks: &[Pick],
        sims: impl Fn() -> Vec<super::semantic_stage::Similarity>,
        recognition: &mut Recognition,
    ) {
        use super::semantic_stage::{COMPANION, TOLD_COMPANION};
        if recognition.selected.len() < 2 {
            return;
        }
        // Values another selected card takes too ("in Jiangnan" for both a schedule and a
        // missed-collection card) name neither of them: a card whose values all stand in one
        // other selected card's evidence is not named by them.
        let shared_only = |c: &CardScore| {
            let own = c.evidence.iter().filter(|e| matches!(e, Evidence::Entity { .. }));
            !c.evidence.iter().any(|e| matches!(e, Evidence::Keyword { .. }))
                && recognition
                    .selected
                    .iter()
                    .filter(|o| o.id != c.id)
                    .filter_map(|o| recognition.score(&o.id))
                    .any(|o| own.clone().all(|e| o.evidence.contains(e)))
        };
        let strong = |id: &str| recognition.score(id).is_some_and(|c| named(c) && !shared_only(c));
        let index = |id: &str| self.cards.iter().position(|c| c.id == id).map(|i| i as u32);
        let weak: Vec<u32> = recognition
            .selected
            .iter()
            .filter(|s| !strong(&s.id))
            .filter_map(|s| index(&s.id))
            .filter(|&card| picks.iter().any(|p| p.card == card) && !picks.iter().any(|p| p.card == card && p.also))
            .collect();
        if weak.is_empty() {
            return;
        }
        let sims = sims();
        let cosine = |card: u32| sims.iter().find(|s| s.card == card).map_or(-1.0, |s| s.cosine);
        let best = recognition.selected.iter().filter_map(|s| index(&s.id)).map(cosine).fold(-1.0, f32::max);
        // Selected only in clauses that tell and ask nothing: any lead of the best card will do.
        let told = |card: u32| picks.iter().filter(|p| p.card == card).all(|p| only_tells(query, p.clause));
        // A clause "and" joins is never a mere story: the usual lead.
        let joined = |card: u32| picks.iter().any(|p| p.card == card && p.added);
        let margin = |card: u32| if told(card) && !joined(card) { TOLD_COMPANION } else { COMPANION };
        let dropped: Vec<u32> = weak
            .into_iter()
            .filter(|&card| cosine(card) < best - margin(card))
            .filter(|&card| {
                picks.iter().filter(|p| p.card == card).all(|p| {
                    let clause = self.meaning.similarities(&query[p.clause.start..p.clause.end]);
                    clause.first().is_some_and(|s| s.card != card)
                })
            })
            .collect();
        recognition.selected.retain(|s| index(&s.id).is_none_or(|i| !dropped.contains(&i)));
    }

    /// Of several cards the lexical stage selected, drops each one selected only in clauses that
    /// give values and nothing else — a key's label, a value its extractors recognize, a date
    /// ("…，大概六点到，车牌浙A8K261": the plate number a parking reservation of another clause
    /// needs, not a request to the season-pass card that also takes plates) — or that only report
    /// something done ([`reports_done`]: "课都学完了考试也过了，证书在哪领" asks for the
    /// certificate, not about the exam), when another card was selected in a clause with content.
    /// `picks` as for
    /// [`drop_weak_companions`](Self::drop_weak_companions).
    #[cfg(feature = "semantic")]
    fn drop_value_only<'v>(
        &self,
        query: &str,
        values: impl FnOnce() -> &'v [ValueSpan],
        picks: &[Pick],
        recognition: &mut Recognition,
    ) {
        if recognition.selected.len() < 2 {
            return;
        }
        let values = values();
        // A value, and nothing outside values, labels and dates but punctuation.
        let value_only = |c: &Clause| {
            let mut value = false;
            for (i, ch) in query[c.start..c.end].char_indices() {
                match values.iter().find(|v| v.0 <= c.start + i && c.start + i < v.1) {
                    Some(v) => value |= v.2,
                    None if ch.is_alphanumeric() => return false,
                    None => {}
                }
            }
            value
        };
        let index = |id: &str| self.cards.iter().position(|c| c.id == id).map(|i| i as u32);
        let mut by_value = Vec::new();
        let mut by_content = false;
        for card in recognition.selected.iter().filter_map(|s| index(&s.id)) {
            let mut clauses = picks.iter().filter(|p| p.card == card).peekable();
            if clauses.peek().is_some() && clauses.all(|p| value_only(&p.clause) || reports_done(query, p.clause)) {
                by_value.push(card);
            } else {
                by_content = true;
            }
        }
        if by_content && !by_value.is_empty() {
            recognition.selected.retain(|s| index(&s.id).is_none_or(|i| !by_value.contains(&i)));
        }
    }

    /// The semantic stage ([`super::semantic_stage`]), after the lexical one:
    /// - a query no clause selected a card for, and no more about topics no card covers than
    ///   about topics the cards cover (an out-of-scope request near a card's field, such as
    ///   "帮我订一张去上海的机票" to an expenses card, stays out of scope, unless the encoder
    ///   finds one card [`clear`](super::semantic_stage::clear)ly meant), gets the card it
    ///   clearly means, or a did-you-mean question led by its nearest cards;
    /// - a near tie the lexical stage asks about may be settled by the encoder siding with the
    ///   lexical stage's best card ([`Self::agreed`]).
    ///
    /// A single card the lexical stage selected is weighed by [`Self::doubt_lone_pick`]. Cards
    /// the lexical stage found negated are never picked.
    #[cfg(feature = "semantic")]
    fn semantic_stage(
        &self,
        any_selected: bool,
        topics: Topics,
        content: impl Fn() -> bool,
        sims: impl Fn() -> Vec<super::semantic_stage::Similarity>,
        recognition: &mut Recognition,
    ) {
        if !any_selected && recognition.selected.is_empty() {
            // A query more about topics no card covers than covered ones is left out of scope,
            // unless the encoder finds one card clearly meant that the lexical stage found too
            // (by more than a few common characters: SECONDED; no lexical candidate at all: no
            // encoding).
            let covered = topics.unknown <= topics.known;
            if worth_encoding(topics, recognition) && content() {
                let sims = sims();
                if self.agreed(&sims, recognition) {
                    return;
                }
                let seconded =
                    |c: u32| recognition.score(&self.cards[c as usize].id).is_some_and(|c| c.raw >= SECONDED);
                let clear = super::semantic_stage::clear(&sims) && sims.first().is_some_and(|f| seconded(f.card));
                if covered || clear {
                    self.by_meaning(sims, recognition);
                }
            }
            return;
        }
        if recognition.selected.is_empty() && content() {
            // A near tie the lexical stage asks about: the encoder may side with its best card.
            self.agreed(&sims(), recognition);
        }
    }

    /// A single card the lexical stage selected on words alone (no keyword, no entity), with no
    /// negation or correction in play that the encoder still reads (`cues`: the text it encodes
    /// is the whole query; see `meant_text`), is put in doubt when the encoder finds another
    /// card clearly closer in meaning (by [`OVERRIDE`](super::semantic_stage::OVERRIDE)): a word
    /// of one card's field used for another card's job. The stage then decides as for no card,
    /// the lexical pick being its rival: usually a question between the two. After a correction
    /// or negation the encoder no longer reads (`Reading::Cut`), a keyword or value holds the
    /// pick only against cards the words scored well below it: the encoder's nearest card, not
    /// negated and within [`NEAR_RIVAL`] of the pick's confidence, puts it in doubt the same way
    /// ("我想查一下储值卡余额，啊不是，我是想问昨天那单外卖怎么到现在还没到": 外卖 is the takeaway
    /// card's keyword, the late order the delivery-trouble card's job; tuned on the whole report).
    ///
    /// When the encoder's card has no name or description in the query's language `lang` (a
    /// Chinese-only card and an English query) and no clause is a request joined by a
    /// connective (`joined`: the pick may be one request of several), words could not have
    /// found it: it is planned instead of the pick from a lead of
    /// [`UNHEARD_OVERRIDE`](super::semantic_stage::UNHEARD_OVERRIDE) over the pick, reaching [`SELECT`](super::semantic_stage::SELECT) and leading every
    /// other card by [`ASKED_MARGIN`](super::semantic_stage::ASKED_MARGIN) ("Please set aside
    /// 1000 US dollars in notes for me to collect next Tuesday": the foreign-cash card, written
    /// in Chinese only, not the transfer card met on "dollars").
    #[cfg(feature = "semantic")]
    fn doubt_lone_pick(
        &self,
        lang: crate::text::Lang,
        cues: Reading,
        joined: bool,
        content: impl Fn() -> bool,
        sims: impl Fn() -> Vec<super::semantic_stage::Similarity>,
        recognition: &mut Recognition,
    ) {
        use super::semantic_stage::{ASKED_MARGIN, OVERRIDE, SELECT as SEMANTIC_SELECT, UNHEARD_OVERRIDE};
        let [only] = recognition.selected.as_slice() else { return };
        // A value another candidate takes too (a district both a schedule card and a
        // missed-collection card ask for) tells neither apart: only a keyword or a value of the
        // card's own holds the lexical pick.
        let shared = |e: &Evidence| recognition.candidates.iter().any(|c| c.id != only.id && c.evidence.contains(e));
        let strong = |e: &Evidence| match e {
            Evidence::Keyword { .. } => true,
            Evidence::Entity { .. } => !shared(e),
            _ => false,
        };
        let held = recognition.score(&only.id).is_some_and(|c| c.evidence.iter().any(strong));
        // A rival the words scored nearly as high: a keyword or value does not tell the two apart.
        let close = |id: &str| {
            recognition
                .candidates
                .iter()
                .any(|c| c.id == id && c.id != only.id && !c.negated() && c.confidence >= only.confidence - NEAR_RIVAL)
        };
        let rivalled = held && cues == Reading::Cut && recognition.candidates.iter().any(|c| close(&c.id));
        if cues == Reading::Cues || (held && !rivalled) || !content() {
            return;
        }
        let sims = sims();
        let id = only.id.clone();
        let own = sims.iter().find(|s| self.cards[s.card as usize].id == id).map_or(-1.0, |s| s.cosine);
        let Some(&best) = sims.first() else { return };
        let card = &self.cards[best.card as usize];
        if card.id == id || best.cosine < SEMANTIC_SELECT || (held && !close(&card.id)) {
            return;
        }
        let lead = best.cosine - own;
        let second = sims.get(1).map_or(-1.0, |s| s.cosine);
        let negated = recognition.score(&card.id).is_some_and(CardScore::negated);
        if lead >= OVERRIDE {
            recognition.selected.clear();
            self.by_meaning(sims, recognition);
        } else if !joined
            && !card.speaks[lang.index()]
            && (recognition.topical.contains(&card.id) || !recognition.topical.contains(&id))
            && lead >= UNHEARD_OVERRIDE
            && best.cosine - second >= ASKED_MARGIN
            && !negated
        {
            recognition.selected.clear();
            self.select_meant(&best, recognition);
            recognition.by_meaning = true;
            self.note_semantic(best, recognition);
        }
    }

    /// A turn that would ask (no card selected, plausible ones offered) plans the card the
    /// encoder clearly means when it is one of the offered cards: the encoder's nearest card,
    /// not negated, by cosine [`CLEAR`](super::semantic_stage::CLEAR) or more and leading the
    /// next by [`ASKED_MARGIN`](super::semantic_stage::ASKED_MARGIN) ("A hailstorm wrecked half
    /// my orchard last night. I have coverage through the co-op…": the crop-insurance card, which
    /// the lexical stage could not tell from a harvest-sales card on words). After a near tie of
    /// cards the lexical stage had selected (`tied`), the lead must be
    /// [`CLEAR_MARGIN`](super::semantic_stage::CLEAR_MARGIN). Below `CLEAR`, an offered card
    /// from [`OFFER`](super::semantic_stage::OFFER) leading the next by `CLEAR_MARGIN` is planned
    /// too ("I run a tiny online store and my receipts are a mess…": the bookkeeping card at
    /// 0.32, 0.14 ahead; on the evaluation sets no turn with such a lead asked the right card
    /// second). The encoder's nearest card settles it, offered or not, when it has no name or
    /// description in the query's language `lang` (no word of the query could have found it):
    /// from [`SELECT`](super::semantic_stage::SELECT), leading the next by `ASKED_MARGIN`, not
    /// after a near tie ("I'm often here past 11pm and on Sundays, can my card be set up so it
    /// still lets me in after hours?": a door-access card written in Chinese). A query otherwise
    /// left out of scope unencoded (below) is encoded for that rule alone when some card does not
    /// speak its language ("My monstera has brown crispy patches on the leaves…": a plant-doctor
    /// card written in Chinese, which no English word could reach). A turn that would ask or plan
    /// nothing also plans that card when the odds that it is meant
    /// ([`nearest_meant`](super::semantic_stage::nearest_meant)) reach
    /// [`TRUST`](super::semantic_stage::TRUST) ("I'm on warfarin. Is it safe to add fish oil…":
    /// more about drugs than about anything a pharmacy's cards name, yet clearly the pharmacist
    /// card's job); not for a query with no word of any card that is more about topics no card
    /// covers than covered ones (left out of scope unencoded, as by the semantic stage). The card
    /// is not planned when another offered card shares a lexicon topic with the query and it
    /// does not, unless the encoder has decided (cosine from `CLEAR`, leading the next card by
    /// [`MARGIN`](super::semantic_stage::MARGIN)). A turn left with nothing planned nor offered
    /// offers that card when it reaches `CLEAR`: a did-you-mean question, not an out-of-scope
    /// answer.
    #[cfg(feature = "semantic")]
    fn settle_question(
        &self,
        lang: crate::text::Lang,
        tied: bool,
        topics: Topics,
        content: impl Fn() -> bool,
        sims: impl Fn() -> Vec<super::semantic_stage::Similarity>,
        recognition: &mut Recognition,
    ) {
        use super::semantic_stage::{
            confidence, nearest_meant, ASKED_MARGIN, CLEAR, CLEAR_MARGIN, MARGIN, OFFER, SELECT, TOPIC_RIVAL, TRUST,
        };
        // The odds are weighed where the stage has something to weigh: a question to settle, a
        // word of some card, or topics the cards cover. A query with no word of any card, about
        // topics no card covers, stays out of scope without an encoding (the stage's own rule).
        let weighable = !recognition.uncertain.is_empty() || worth_encoding(topics, recognition);
        // A card that does not speak the query's language has no words for it to meet: the
        // query is weighed for that card alone.
        let for_unheard = !weighable && self.unheard_in[lang.index()];
        if !recognition.selected.is_empty() || !(weighable || for_unheard) || !content() {
            return;
        }
        let sims = sims();
        let negated = |s: &super::semantic_stage::Similarity| {
            recognition.score(&self.cards[s.card as usize].id).is_some_and(CardScore::negated)
        };
        let near: Vec<super::semantic_stage::Similarity> = sims.into_iter().filter(|s| !negated(s)).collect();
        let Some(&first) = near.first() else { return };
        let second = near.get(1).map_or(-1.0, |s| s.cosine);
        let id = &self.cards[first.card as usize].id;
        let offered = recognition.uncertain.iter().take(OFFERED).any(|c| &c.id == id);
        // The query's topic belongs to another offered card ("帮我订一张去北京的机票": the flight
        // card, beside a hotel card whose example reads alike): the question stands.
        let topical = |c: &CardScore| recognition.topical.contains(&c.id) && c.confidence >= TOPIC_RIVAL;
        let rival = !recognition.topical.contains(id) && recognition.uncertain.iter().take(OFFERED).any(topical);
        // Unless the encoder has decided: its nearest card from CLEAR, leading the next by MARGIN
        // ("Never mind the test drive, I just want to know what my old car is worth": the
        // trade-in card, against a car-finance card sharing the topic of cars).
        let decided = first.cosine >= CLEAR && first.cosine - second >= MARGIN;
        // An offered card settles the question from an offerable cosine leading the next card by
        // CLEAR_MARGIN (the only way after a near tie), or from CLEAR leading by ASKED_MARGIN.
        let lead = first.cosine - second;
        let clear = offered
            && (first.cosine >= OFFER && lead >= CLEAR_MARGIN
                || !tied && first.cosine >= CLEAR && lead >= ASKED_MARGIN);
        // A card with no name or description in the query's language, which no word of the
        // query could have found (so the lexical stage could not offer it), from SELECT.
        let unheard = !self.cards[first.card as usize].speaks[lang.index()]
            && !tied
            && first.cosine >= SELECT
            && lead >= ASKED_MARGIN;
        let clear = clear || unheard;
        // The odds do not reach below an offerable card (every turn they planned on the evaluation
        // sets had cosine 0.35 or more: a lone card at 0.25 among far ones is no meaning found),
        // and a near tie of cards confident on words stays a question.
        let likely = !tied && first.cosine >= OFFER && nearest_meant(&near).is_some_and(|p| p >= TRUST);
        let (clear, likely) = if for_unheard { (unheard, false) } else { (clear, likely) };
        if rival && !decided || !(clear || likely) {
            // Nothing planned and nothing to ask about: a card the encoder finds near (from
            // CLEAR) is asked about rather than the query answered as out of scope ("周末晚上我还想
            // 待在这里，刷卡能进来吗" to a door-access card) — not a query encoded only for a card
            // that does not speak its language.
            if recognition.uncertain.is_empty() && first.cosine >= CLEAR && !for_unheard {
                recognition.uncertain.push(self.semantic_entry(&first));
                recognition.by_meaning = true;
                self.note_semantic(first, recognition);
            }
            return;
        }
        let id = id.clone();
        let conf = recognition.score(&id).map_or(0.0, |c| c.confidence).max(round2(confidence(first.cosine)));
        recognition.uncertain.retain(|c| c.id != id);
        recognition.selected.push(Selected { id, offset: 0, confidence: conf, anchor: None });
        recognition.by_meaning = true;
        self.note_semantic(first, recognition);
    }

    /// Plans the lexical stage's best plausible card (on more than generic words) when the
    /// encoder agrees ([`AGREE`](super::semantic_stage::AGREE)): two independent readings of the query
    /// pointing at one card ("Can I get a club sandwich sent up to room 715?": the room-service
    /// card by words, narrowly, and by meaning). A plausible card within [`AMBIGUITY`] of the
    /// lexical best, which the lexical stage cannot tell from it, is planned the same way when it
    /// is the encoder's nearest and leads the next by [`CLEAR_MARGIN`](super::semantic_stage::CLEAR_MARGIN)
    /// ("Move 5,000 from the brokerage cash balance back to the checking account": a bank-transfer
    /// card tied with the brokerage-account card on words). Negated cards take no part. Returns
    /// whether it planned one.
    #[cfg(feature = "semantic")]
    fn agreed(&self, sims: &[super::semantic_stage::Similarity], recognition: &mut Recognition) -> bool {
        use super::semantic_stage::{confidence, AGREE, CLEAR_MARGIN, DISAGREE, MARGIN};
        // Evidence beyond generic words (capped at GENERIC_ONLY): "book a table" is no agreement
        // with a doctor card whose example books a doctor.
        let plausible = |c: &&CardScore| c.confidence >= DISAGREE && c.raw > GENERIC_ONLY;
        let Some(lexical) = self.lexical_best(recognition).filter(plausible) else {
            return false;
        };
        let negated = |s: &&super::semantic_stage::Similarity| {
            recognition.score(&self.cards[s.card as usize].id).is_some_and(CardScore::negated)
        };
        let mut near = sims.iter().filter(|s| !negated(s));
        let (Some(&first), second) = (near.next(), near.next().map_or(-1.0, |s| s.cosine)) else {
            return false;
        };
        // The encoder's nearest card is the lexical best, or ties with it (within AMBIGUITY: the
        // lexical stage could not tell the two apart and would ask).
        let nearest = &self.cards[first.card as usize].id;
        let tied = |c: &&CardScore| &c.id == nearest && c.confidence >= lexical.confidence - AMBIGUITY;
        // Siding with the runner-up overrules the lexical order: the encoder must then lead
        // clearly (CLEAR_MARGIN), not by MARGIN alone.
        let (lexical, margin) = if &lexical.id == nearest {
            (lexical, MARGIN)
        } else {
            match recognition.uncertain.iter().filter(plausible).find(tied) {
                Some(runner_up) => (runner_up, CLEAR_MARGIN),
                None => return false,
            }
        };
        if first.cosine < AGREE || first.cosine - second < margin {
            return false;
        }
        let (id, conf) = (lexical.id.clone(), lexical.confidence.max(round2(confidence(first.cosine))));
        recognition.uncertain.retain(|c| c.id != id);
        recognition.selected.push(Selected { id, offset: 0, confidence: conf, anchor: None });
        recognition.by_meaning = true;
        self.note_semantic(first, recognition);
        true
    }

    /// Whether `span` of the query names anything beyond generic actions, values and when: a
    /// word or a topic outside `no_task`, the query's [`no_task_spans`](Self::no_task_spans).
    /// "帮我订一下", "北京" and "北京，明天入住" name no task: the semantic stage leaves them to the
    /// lexical one.
    #[cfg(feature = "semantic")]
    fn has_content(&self, parts: &QueryParts, no_task: &[(usize, usize)], span: (usize, usize)) -> bool {
        let inside = |t: &Token| no_task.iter().any(|&(s, e)| t.start >= s && t.end <= e);
        parts.tokens.iter().filter(|t| t.start >= span.0 && t.end <= span.1).any(|t| {
            let named = match t.kind {
                TokKind::Concept => !self.generic.contains(&t.term),
                TokKind::Word => true,
                TokKind::Bigram | TokKind::Char => false,
            };
            named && !inside(t)
        })
    }

    /// The query's spans (byte offsets) that name no task: generic concepts (订, book, status)
    /// and its `values` ([`value_spans`](Self::value_spans): dates and times, values the cards'
    /// extractors recognize such as a city or a flight number, words of a key's description such
    /// as 入住 of 入住日期).
    #[cfg(feature = "semantic")]
    fn no_task_spans(&self, parts: &QueryParts, values: &[ValueSpan]) -> Vec<(usize, usize)> {
        let mut outside: Vec<(usize, usize)> = parts
            .tokens
            .iter()
            .filter(|t| t.kind == TokKind::Concept && self.generic.contains(&t.term))
            .map(|t| (t.start, t.end))
            .collect();
        outside.extend(values.iter().map(|&(s, e, _)| (s, e)));
        outside
    }

    /// The query's [`value_spans`](Self::value_spans) and [`no_task_spans`](Self::no_task_spans)
    /// (`recognize` finds them once per query, and only if a step needs them).
    #[cfg(feature = "semantic")]
    fn spans(&self, query: &str, norm: &Normalized, parts: &QueryParts) -> (Vec<ValueSpan>, Vec<(usize, usize)>) {
        let values = self.value_spans(query, norm, parts);
        let no_task = self.no_task_spans(parts, &values);
        (values, no_task)
    }

    /// The query's spans (byte offsets) that give values: what the cards' extractors recognize
    /// (`true`: a value), and dates, times and words of a key's description (`false`).
    #[cfg(feature = "semantic")]
    fn value_spans(&self, query: &str, norm: &Normalized, parts: &QueryParts) -> Vec<ValueSpan> {
        let mut spans: Vec<ValueSpan> =
            self.entities.find_all(query, norm).into_iter().map(|(_, (s, e, _))| (s, e, true)).collect();
        spans.extend(parts.when.iter().map(|&(s, e)| (s, e, false)));
        spans.extend(
            parts
                .tokens
                .iter()
                .filter(|t| t.kind == TokKind::Word && self.slot_terms.contains(&t.term))
                .map(|t| (t.start, t.end, false)),
        );
        spans
    }

    /// The semantic stage for one clause of a query whose other clauses selected cards: the
    /// card the clause clearly means (as [`verdict`](super::semantic_stage::verdict) selects,
    /// or the clause's nearest card from [`OFFER`](super::semantic_stage::OFFER) leading the next
    /// by [`CLEAR_MARGIN`](super::semantic_stage::CLEAR_MARGIN), as an asked turn is settled:
    /// "…, and she'll need somewhere to leave her car for the day" at 0.32, 0.13 ahead)
    /// is selected too, at the clause's offset, unless it is selected or negated already; the
    /// clause's words then leave [`Recognition::unhandled`]. A clause that only some cards may
    /// mean (as [`verdict`](super::semantic_stage::verdict) offers them) is
    /// [`Recognition::unresolved`]. With a `lead`, the clause's nearest card must lead the next
    /// by that much (cosine) or nothing is done.
    #[cfg(feature = "semantic")]
    fn clause_by_meaning(&self, clause: &str, offset: usize, lead: Option<f32>, recognition: &mut Recognition) {
        use super::semantic_stage::{confidence, verdict, Verdict, CLEAR_MARGIN, OFFER, SIBLING};
        let sims = self.meaning.similarities(clause);
        let second = sims.get(1).map_or(-1.0, |s| s.cosine);
        if let Some(lead) = lead {
            if !sims.first().is_some_and(|f| f.cosine - second >= lead) {
                return;
            }
        }
        let led = sims.first().is_some_and(|f| f.cosine >= OFFER && f.cosine - second >= CLEAR_MARGIN);
        let best = match verdict(&sims) {
            Verdict::Select(best) => best,
            Verdict::Offer(_) if led => sims[0],
            Verdict::Offer(offered) => return self.note_unresolved(clause, &sims, &offered, recognition),
            Verdict::Nothing => return,
        };
        let id = &self.cards[best.card as usize].id;
        // A card no word of the query supports (beyond a few common ones: SECONDED) needs a clear
        // closeness, not a lead among far ones.
        let worded = recognition.score(id).is_some_and(|c| c.raw >= SECONDED);
        if !worded && best.cosine < super::semantic_stage::CLEAR {
            return;
        }
        // The clause may well describe a card another clause already selected ("想申请带进客舱"
        // after "我带着猫出行" chose the pet-travel card): a sibling close to it is no new request.
        let near_selected = sims.iter().any(|s| {
            s.cosine >= best.cosine - SIBLING
                && s.card != best.card
                && recognition.selected.iter().any(|x| x.id == self.cards[s.card as usize].id)
        });
        if near_selected {
            return;
        }
        if recognition.score(id).is_some_and(CardScore::negated) || recognition.selected.iter().any(|s| &s.id == id) {
            return;
        }
        let conf = round2(confidence(best.cosine));
        recognition.selected.push(Selected { id: id.clone(), offset, confidence: conf, anchor: None });
        recognition.selected.sort_by(|a, b| a.offset.cmp(&b.offset).then_with(|| a.id.cmp(&b.id)));
        // The clause is covered now: its words are no longer reported as covered by no card.
        recognition.unhandled.retain(|u| !clause.contains(u.as_str()));
        recognition.uncertain.retain(|c| &c.id != id);
        self.note_semantic(best, recognition);
    }

    /// Records `clause` as unresolved between the `offered` cards (best first) that are neither
    /// selected nor negated, when there is any and no selected card is as near the clause
    /// (within [`SIBLING`](super::semantic_stage::SIBLING) of the best: the clause may describe
    /// it); its words leave [`Recognition::unhandled`].
    #[cfg(feature = "semantic")]
    fn note_unresolved(
        &self,
        clause: &str,
        sims: &[super::semantic_stage::Similarity],
        offered: &[super::semantic_stage::Similarity],
        recognition: &mut Recognition,
    ) {
        let best = offered.first().map_or(1.0, |s| s.cosine);
        let selected = |card: u32| recognition.selected.iter().any(|x| x.id == self.cards[card as usize].id);
        if sims.iter().any(|s| selected(s.card) && s.cosine >= best - super::semantic_stage::SIBLING) {
            return;
        }
        let candidates: Vec<String> = offered
            .iter()
            .map(|s| self.cards[s.card as usize].id.clone())
            .filter(|id| !recognition.selected.iter().any(|x| &x.id == id))
            .filter(|id| !recognition.score(id).is_some_and(CardScore::negated))
            .take(OFFERED)
            .collect();
        if candidates.is_empty() {
            return;
        }
        recognition.unhandled.retain(|u| !clause.contains(u.as_str()));
        recognition.unresolved.push(Unresolved { part: clause.trim().to_string(), candidates });
    }

    /// A card the semantic stage found at `s`, as a did-you-mean entry with no lexical evidence.
    #[cfg(feature = "semantic")]
    fn semantic_entry(&self, s: &super::semantic_stage::Similarity) -> CardScore {
        CardScore {
            id: self.cards[s.card as usize].id.clone(),
            confidence: round2(super::semantic_stage::confidence(s.cosine)),
            evidence: Vec::new(),
            raw: 0.0,
        }
    }

    /// Records the semantic stage's evidence `s` on the card's candidate entry (added when the
    /// lexical stage had none; its confidence raised to the semantic one) and on its
    /// did-you-mean entry, if any.
    #[cfg(feature = "semantic")]
    fn note_semantic(&self, s: super::semantic_stage::Similarity, recognition: &mut Recognition) {
        let entry = self.semantic_entry(&s);
        let evidence = Evidence::Semantic { text: self.meaning.text(s.text).to_string(), similarity: round2(s.cosine) };
        for u in recognition.uncertain.iter_mut().filter(|u| u.id == entry.id) {
            u.evidence.push(evidence.clone());
        }
        match recognition.candidates.iter_mut().find(|c| c.id == entry.id) {
            Some(c) => {
                c.confidence = c.confidence.max(entry.confidence);
                c.evidence.push(evidence);
            }
            None => recognition.candidates.push(CardScore { evidence: vec![evidence], ..entry }),
        }
    }

    /// The lexical stage's best candidate when it is another card than the semantic pick `best`
    /// with real evidence of its own (confidence at least
    /// [`DISAGREE`](super::semantic_stage::DISAGREE)).
    #[cfg(feature = "semantic")]
    fn rival<'r>(
        &self,
        best: &super::semantic_stage::Similarity,
        recognition: &'r Recognition,
    ) -> Option<&'r CardScore> {
        self.lexical_best(recognition)
            .filter(|c| c.id != self.cards[best.card as usize].id && c.confidence >= super::semantic_stage::DISAGREE)
    }

    /// The lexical stage's best candidate that is not negated (candidates are by raw score).
    #[cfg(feature = "semantic")]
    fn lexical_best<'r>(&self, recognition: &'r Recognition) -> Option<&'r CardScore> {
        recognition.candidates.iter().find(|c| !c.negated())
    }

    /// Selects the card of `best` (out of the did-you-mean list, if it was there).
    #[cfg(feature = "semantic")]
    fn select_meant(&self, best: &super::semantic_stage::Similarity, recognition: &mut Recognition) {
        let id = self.cards[best.card as usize].id.clone();
        recognition.uncertain.retain(|c| c.id != id);
        recognition.selected.push(Selected {
            id,
            offset: 0,
            confidence: round2(super::semantic_stage::confidence(best.cosine)),
            anchor: None,
        });
    }

    /// Applies the semantic stage's verdict over `sims` (best first) to a recognition that
    /// selected nothing: the card the query clearly means is selected, or the nearest cards
    /// join the did-you-mean list; their candidate entries get the semantic evidence. A card a
    /// negation or correction governs is neither, when the negated words named it (a keyword,
    /// its name, a similar example); one met there only on words of its description or
    /// examples, or on a value of its own, may be: a correction keeps the thing it is about
    /// ("I'd like to rent an upright — sorry, no, I mean I want to buy one outright").
    #[cfg(feature = "semantic")]
    fn by_meaning(&self, mut sims: Vec<super::semantic_stage::Similarity>, recognition: &mut Recognition) {
        use super::semantic_stage::{confidence, verdict, Verdict};
        // Named: a keyword or a word of one, its name, a similar example. A card met there only
        // on words of its description or examples, or on a value, may still be meant:
        // "帮我开张发票，不对不对，我是想问能不能用商业险直接结算" (the insurance card's example
        // mentions invoices).
        let firm = |c: &CardScore| {
            c.evidence.iter().any(|e| {
                matches!(
                    e,
                    Evidence::Keyword { .. }
                        | Evidence::SimilarExample { .. }
                        | Evidence::Terms { field: Field::Name | Field::Keyword, .. }
                )
            })
        };
        let negated: Vec<&str> =
            recognition.candidates.iter().filter(|c| c.negated() && firm(c)).map(|c| c.id.as_str()).collect();
        sims.retain(|s| !negated.contains(&self.cards[s.card as usize].id.as_str()));
        let verdict = verdict(&sims);
        let rival = match &verdict {
            Verdict::Select(best) => self.rival(best, recognition).cloned(),
            _ => None,
        };
        // The query's topic belongs to another card the lexical stage found plausible
        // ("帮我订一张去北京的机票" reads like a hotel example, but 机票 is the flight card's
        // topic): ask, never plan.
        let verdict = match verdict {
            Verdict::Select(best)
                if rival.is_none()
                    && !recognition.topical.contains(&self.cards[best.card as usize].id)
                    && recognition.uncertain.iter().any(|c| {
                        recognition.topical.contains(&c.id) && c.confidence >= super::semantic_stage::TOPIC_RIVAL
                    }) =>
            {
                Verdict::Offer(vec![best])
            }
            v => v,
        };
        let shown: Vec<_> = match (verdict, rival) {
            (Verdict::Nothing, _) => return,
            (Verdict::Select(best), Some(lexical)) => {
                // The lexical stage leans to another card: ask between the two.
                let picked = self.semantic_entry(&best);
                recognition.uncertain.retain(|c| c.id != lexical.id && c.id != picked.id);
                let mut offered = vec![picked, lexical];
                offered.append(&mut recognition.uncertain);
                recognition.uncertain = offered;
                vec![best]
            }
            (Verdict::Select(best), None) => {
                self.select_meant(&best, recognition);
                vec![best]
            }
            (Verdict::Offer(offered), _) => {
                // The lexical stage's plausible cards and the cards nearest in meaning that it
                // did not find.
                for s in &offered {
                    let id = &self.cards[s.card as usize].id;
                    if !recognition.uncertain.iter().any(|c| &c.id == id) {
                        recognition.uncertain.push(self.semantic_entry(s));
                    }
                }
                // First the cards sharing the query's topic that the lexical stage finds plausible
                // (from TOPIC_RIVAL: a flight card for "订一张去北京的机票", before a hotel card
                // whose example reads alike), then best first by either stage: a card's lexical
                // confidence or, when offered, the confidence of its closeness in meaning (a near
                // card of the encoder before a card met on one shared word).
                let conf = |c: &CardScore| {
                    let near = offered.iter().find(|s| self.cards[s.card as usize].id == c.id);
                    near.map_or(c.confidence, |s| c.confidence.max(confidence(s.cosine)))
                };
                let topical = |c: &CardScore| {
                    recognition.topical.contains(&c.id) && c.confidence >= super::semantic_stage::TOPIC_RIVAL
                };
                let mut uncertain = std::mem::take(&mut recognition.uncertain);
                uncertain.sort_by(|a, b| topical(b).cmp(&topical(a)).then(conf(b).total_cmp(&conf(a))));
                recognition.uncertain = uncertain;
                offered
            }
        };
        recognition.by_meaning = true;
        for s in shown {
            self.note_semantic(s, recognition);
        }
        // Best first: the semantic stage's pick leads.
        recognition.candidates.sort_by(|a, b| {
            b.confidence.total_cmp(&a.confidence).then(b.raw.total_cmp(&a.raw)).then_with(|| a.id.cmp(&b.id))
        });
    }

    /// The per-card aggregates as the recognition's lists: selected (by first mention),
    /// uncertain and every candidate (best first); a near tie within one clause asks.
    fn rank(&self, per_card: HashMap<u32, CardAgg>) -> Ranked {
        let mut selected: Vec<Selected> = Vec::new();
        let mut candidates: Vec<CardScore> = Vec::new();
        let mut uncertain: Vec<CardScore> = Vec::new();
        // Selected by keyword or as the best card of two clauses: no near tie makes it ask.
        let mut settled: Vec<String> = Vec::new();
        let mut negated: Vec<String> = Vec::new();
        let mut clause_of: HashMap<String, usize> = HashMap::new();
        let mut topical: HashSet<String> = HashSet::new();
        let mut spans_of: HashMap<String, Vec<(usize, usize)>> = HashMap::new();
        for (card, mut agg) in per_card {
            let id = self.cards[card as usize].id.clone();
            spans_of.insert(id.clone(), std::mem::take(&mut agg.spans));
            if agg.negated.is_some() && agg.selected.is_some() && !agg.selected_top {
                // Negated in one clause ("别约安装了") and selected in another only beside a
                // better card ("…师傅装的空调漏水，帮我报修"): the negation stands. A card that
                // leads a clause of its own ("不要靠窗的，帮我选个过道座位") stays selected.
                agg.selected = None;
            }
            if agg.selected.is_none() && agg.free_raw > agg.negated_raw {
                // Negated on a word of a negated request, but meant more where nothing negates
                // it ("不是查排队时间，是我女儿找不到了": the lost-and-found card, negated for
                // its 查 only).
                agg.negated = None;
            }
            if agg.keyword || agg.top_clauses > 1 {
                settled.push(id.clone());
            }
            if agg.selected.is_none() && agg.negated.is_some() {
                negated.push(id.clone());
            }
            let confidence = round2(agg.confidence);
            clause_of.insert(id.clone(), agg.clause);
            if agg.topical {
                topical.insert(id.clone());
            }
            let mut evidence = agg.evidence;
            if agg.selected.is_none() {
                if let Some(cue) = &agg.negated {
                    evidence.push(Evidence::Negated { cue: cue.clone() });
                }
            }
            let score = CardScore { id: id.clone(), confidence, evidence, raw: agg.raw };
            match agg.selected {
                Some(offset) => selected.push(Selected { id, offset, confidence, anchor: agg.anchor }),
                None if agg.negated.is_none() && agg.confidence >= UNCERTAIN => uncertain.push(score.clone()),
                None => {}
            }
            candidates.push(score);
        }
        selected.sort_by(|a, b| a.offset.cmp(&b.offset).then_with(|| a.id.cmp(&b.id)));
        let by_conf = |a: &CardScore, b: &CardScore| {
            b.raw.partial_cmp(&a.raw).unwrap_or(std::cmp::Ordering::Equal).then_with(|| a.id.cmp(&b.id))
        };
        candidates.sort_by(by_conf);
        // The did-you-mean list offers first the cards that share the query's topic, then those
        // met only on generic words or values ("订一张去北京的机票": a flight card before a hotel
        // card that shares 订 and the city).
        uncertain.sort_by(|a, b| topical.contains(&b.id).cmp(&topical.contains(&a.id)).then_with(|| by_conf(a, b)));
        if selected.is_empty() {
            if let Some(winner) = clear_winner(&candidates, &topical, &negated, &spans_of) {
                uncertain.retain(|c| c.id != winner.id);
                selected.push(Selected {
                    id: winner.id.clone(),
                    offset: 0,
                    confidence: winner.confidence,
                    anchor: None,
                });
            }
        }
        if ambiguous(&selected, &candidates, &settled, &negated, &clause_of) {
            // Two cards about as likely for the same clause, neither named: ask rather than
            // guess (Rasa's ambiguity threshold).
            selected.clear();
            uncertain =
                candidates.iter().filter(|c| c.confidence >= UNCERTAIN && !negated.contains(&c.id)).cloned().collect();
        }
        let mut topical: Vec<String> = topical.into_iter().collect();
        topical.sort_unstable();
        Ranked { selected, uncertain, candidates, topical }
    }

    /// The parts of a request no card covers, as written ("订酒店和火车票" with no train card:
    /// `["火车票"]`): spans of topical lexicon concepts no card shares, not negated, either
    /// coordinated (和 / 、 / and …) with a selected card's evidence in the same clause, or in a
    /// clause of their own that asks for something (a generic action such as booking or price)
    /// where no card was found.
    fn unhandled(
        &self,
        query: &str,
        norm: &Normalized,
        outcomes: &[ClauseOutcome],
        tokens: &[Token],
        cues: &[Cue],
    ) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (k, o) in outcomes.iter().enumerate() {
            let (cs, ce) = (o.clause.start, o.clause.end);
            // The connective before the clause ("，再订" / " and "), and whether it joins the
            // clause to a previous one that found a card.
            let gap_start = if k == 0 { cs } else { outcomes[k - 1].clause.end };
            let joined =
                k > 0 && !outcomes[k - 1].selected.is_empty() && coordinated(query, (gap_start, gap_start), (cs, cs));
            let in_clause = |t: &&Token| t.kind == TokKind::Concept && t.start >= cs && t.start < ce;
            let negated = |t: &Token| {
                cues.iter().any(|c| {
                    c.governs(norm, cs, ce) && t.start >= norm.orig(c.scope.0) && t.start < norm.orig(c.scope.1).min(ce)
                })
            };
            let mut spans: Vec<(usize, usize)> = tokens
                .iter()
                .filter(in_clause)
                .filter(|t| !self.idf.contains_key(&t.term) && !self.generic.contains(&t.term) && !negated(t))
                .filter(|t| !o.selected.iter().any(|&(s, e)| t.start < e && t.end > s))
                .map(|t| (t.start, t.end))
                .collect();
            let asks = joined
                || tokens
                    .iter()
                    .filter(|t| t.kind == TokKind::Concept && t.start >= gap_start && t.start < ce)
                    .any(|t| self.generic.contains(&t.term));
            spans.retain(|&(s, e)| {
                if o.selected.is_empty() {
                    asks && !o.negated
                } else {
                    o.selected.iter().any(|&(ss, se)| coordinated(query, (s, e), (ss, se)))
                }
            });
            for part in merge_spans(query, spans) {
                if !out.contains(&part) {
                    out.push(part);
                }
            }
        }
        out
    }

    fn keyword_hits(&self, query: &str, norm: &Normalized) -> Vec<(u32, usize, usize, String)> {
        let mut hits = Vec::new();
        let text = norm.text.as_str();
        let bytes = text.as_bytes();
        if let Some(ac) = &self.keywords {
            for m in ac.find_overlapping_iter(text) {
                let (card, term, word) = &self.keyword_meta[m.pattern().as_usize()];
                if *word {
                    let before_ok = m.start() == 0 || !bytes[m.start() - 1].is_ascii_alphanumeric();
                    let after_ok = m.end() >= bytes.len() || !bytes[m.end()].is_ascii_alphanumeric();
                    if !(before_ok && after_ok) {
                        continue;
                    }
                }
                hits.push((*card, norm.orig(m.start()), norm.orig(m.end()), term.clone()));
            }
        }
        if !self.keyword_stems.is_empty() {
            let ws = words(text);
            for (card, stems, term) in &self.keyword_stems {
                for k in 0..ws.len() {
                    if stems.len() <= ws.len() - k && stems.iter().zip(&ws[k..]).all(|(s, w)| *s == w.stem) {
                        let (s, e) = (norm.orig(ws[k].start), norm.orig(ws[k + stems.len() - 1].end));
                        hits.push((*card, s, e, term.clone()));
                        break;
                    }
                }
            }
        }
        // A keyword named as a place to go ("安排个车到酒店", "a car to my hotel") says where, not
        // what to do: no keyword evidence (its words still count as terms).
        hits.retain(|h| !after_destination_marker(query, h.1, h.2));
        if let Some(cards) = self.exact_examples.get(&normalize(query)) {
            for &card in cards {
                hits.push((card, 0, query.len(), self.cards[card as usize].examples_text_for(query)));
            }
        }
        hits
    }

    /// Domains allowed for this clause (None = all).
    fn domain_gate(&self, terms: &HashMap<&str, f32>) -> Option<Vec<bool>> {
        if !self.gate_domains {
            return None;
        }
        let mut score = vec![0.0f32; self.domains.len()];
        // Summed in term order, so the same query gates the same way in every run.
        let mut ordered: Vec<(&&str, &f32)> = terms.iter().collect();
        ordered.sort_by(|a, b| a.0.cmp(b.0));
        for (t, &wq) in ordered {
            if let Some(ps) = self.domain_postings.get(*t) {
                for &(d, w) in ps {
                    score[d as usize] += wq * w;
                }
            }
        }
        let best = score.iter().copied().fold(0.0, f32::max);
        if best <= 0.0 {
            return None;
        }
        let mut order: Vec<usize> = (0..score.len()).collect();
        order.sort_by(|a, b| score[*b].partial_cmp(&score[*a]).unwrap_or(std::cmp::Ordering::Equal));
        let mut allowed = vec![false; self.domains.len()];
        for d in order.into_iter().take(3).filter(|&d| score[d] >= 0.5 * best) {
            allowed[d] = true;
        }
        Some(allowed)
    }

    /// The clause's card scores, and how many of the clause's topics no card covers and how
    /// many some card covers.
    fn score_clause(
        &self,
        query: &str,
        norm: &Normalized,
        clause: Clause,
        parts: &QueryParts,
    ) -> (Vec<ClauseScore>, Topics) {
        let QueryParts { tokens, keyword_hits, cues, when } = parts;
        let at = ClauseAt { query, norm, clause };
        let mut acc: HashMap<u32, Acc> = HashMap::new();
        // Entities first: their spans are left out of term matching (words only), and so are
        // dates and times ("周六下午" says when, not what: an example's "这周六" is no evidence).
        let mut masks = self.entity_evidence(&at, tokens, &mut acc);
        let entities = masks.len();
        masks.extend(when.iter().copied().filter(|&(s, e)| s < clause.end && e > clause.start));
        keyword_evidence(clause, keyword_hits, &mut acc);
        let terms = ClauseTerms::of(tokens, clause, &masks, &masks[entities..]);
        self.term_evidence(&at, &terms, &mut acc);

        // A topic of the clause no card knows: evidence the clause is about something else —
        // unless a card knows another sense of the same words ("screening" is a screen and a
        // film showing; "mail" an e-mail and a parcel).
        let known = |t: &str| self.idf.contains_key(t) || self.generic.contains(t);
        let unknown_topics = terms
            .concept_hits
            .iter()
            .filter(|(t, spans)| {
                !known(t)
                    && spans.iter().any(|&(s, e)| {
                        !terms.concept_hits.iter().any(|(o, os)| known(o) && os.iter().any(|&(a, b)| a < e && b > s))
                    })
            })
            .count();
        // A known topic that only modifies an unknown one right after it ("car insurance",
        // 汽车保险: insurance is what is asked about) does not count as covered.
        let unknown_starts: Vec<usize> = terms
            .concept_hits
            .iter()
            .filter(|(t, _)| !known(t))
            .flat_map(|(_, spans)| spans.iter().map(|&(s, _)| s))
            .collect();
        let modifier = |spans: &[(usize, usize)]| {
            !unknown_starts.is_empty()
                && spans.iter().all(|&(_, e)| unknown_starts.iter().any(|&s| s >= e && s - e <= 1))
        };
        let known_topics = terms
            .concept_hits
            .iter()
            .filter(|(t, spans)| self.idf.contains_key(**t) && !self.generic.contains(**t) && !modifier(spans))
            .count();

        // Raw scores, negation, selection.
        let mut out: Vec<ClauseScore> =
            acc.into_iter().map(|(card, a)| self.card_score(&at, cues, card, a, unknown_topics)).collect();
        select(&mut out);
        (out, Topics { unknown: unknown_topics, known: known_topics })
    }

    /// Entity evidence of the clause for every card owning a matching rule (a value found inside
    /// a longer value of another rule counts for neither of its own cards); returns the matched
    /// spans (query byte offsets).
    fn entity_evidence(&self, at: &ClauseAt<'_>, tokens: &[Token], acc: &mut HashMap<u32, Acc>) -> Vec<(usize, usize)> {
        let clause = at.clause;
        let text = &at.query[clause.start..clause.end];
        let mut masks: Vec<(usize, usize)> = Vec::new();
        let lower = Normalized::new(text);
        let found = self.entities.find_all(text, &lower);
        // A value inside a longer value of another rule is part of it ("Tianfu" of a district
        // list inside "Tianfu campus" of a campus list): only the longer one names its cards.
        let inside =
            |&(s, e): &(usize, usize)| found.iter().any(|(_, (s2, e2, _))| *s2 <= s && e <= *e2 && e2 - s2 > e - s);
        for (src, (s, e, value)) in found.iter().filter(|(_, (s, e, _))| !inside(&(*s, *e))).cloned() {
            let src = &self.entities.sources[src];
            masks.push((clause.start + s, clause.start + e));
            let mut owners: Vec<u32> = src.users.iter().map(|u| u.0).collect();
            owners.sort_unstable();
            owners.dedup();
            let mut w = src.weight / owners.len() as f32;
            if matches!(src.rule, EntityRule::Values(..)) {
                w *= self.value_spread(tokens, clause.start + s, clause.start + e);
            }
            for (card, key) in &src.users {
                let a = acc.entry(*card).or_default();
                if !a.entity_keys.contains(key) {
                    a.entity += w;
                    a.pattern_entity |= src.weight >= W_PATTERN;
                    a.own_entity |= src.weight >= W_PATTERN || owners.len() == 1;
                    a.entity_keys.push(key.clone());
                    a.evidence_entity.push(Evidence::Entity { key: key.clone(), value: value.clone() });
                    a.spans.push((clause.start + s, clause.start + e, w));
                }
            }
        }
        masks
    }

    /// How much a value of a list found at `s..e` tells its owners apart: the least IDF over
    /// the registry of the words and concepts at its span (1.0 when no card's text holds them).
    /// A value other cards' texts name too ("狗" where every card of a pet shop says 宠物 or 狗)
    /// is what the conversation is about, not which service it asks for.
    fn value_spread(&self, tokens: &[Token], s: usize, e: usize) -> f32 {
        tokens
            .iter()
            .filter(|t| matches!(t.kind, TokKind::Word | TokKind::Concept) && t.start < e && t.end > s)
            .filter_map(|t| self.idf.get(&t.term).copied())
            .fold(1.0, f32::min)
    }

    /// Evidence of the clause's terms shared with cards' text and examples (cards outside the
    /// clause's domains left out; evidence inside a card's slot words discounted).
    fn term_evidence(&self, at: &ClauseAt<'_>, terms: &ClauseTerms<'_>, acc: &mut HashMap<u32, Acc>) {
        let weights: HashMap<&str, f32> = terms.terms.iter().map(|(t, v)| (*t, v.0)).collect();
        let gate = self.domain_gate(&weights);
        let allowed = |card: u32, acc: &HashMap<u32, Acc>| match &gate {
            None => true,
            Some(ok) => {
                self.cards[card as usize].domain.is_none_or(|d| ok[d as usize])
                    || acc.get(&card).is_some_and(|a| a.keyword)
            }
        };
        let mut slots = SlotSpans::default();
        // Spans of generic concepts (订, book, status, price): words inside them say what to do,
        // not with what.
        let generic_spans: Vec<(usize, usize)> = terms
            .concept_hits
            .iter()
            .filter(|(c, _)| self.generic.contains(**c))
            .flat_map(|(_, spans)| spans.iter().copied())
            .collect();
        // In query order (then by term): scores add floats and discount overlaps in this order,
        // so a hash map's order would make the same query score differently from run to run.
        let mut ordered: Vec<_> = terms.terms.iter().collect();
        ordered.sort_by(|a, b| (a.1 .1, a.1 .2, a.0).cmp(&(b.1 .1, b.1 .2, b.0)));
        for (term, &(wq, s, e, tok)) in ordered {
            let Some(idf) = self.idf.get(*term).copied() else { continue };
            let specific = match tok.kind {
                TokKind::Concept => !self.generic.contains(*term),
                TokKind::Char => false,
                TokKind::Word | TokKind::Bigram => !generic_spans.iter().any(|&(gs, ge)| s >= gs && e <= ge),
            };
            // Several words of the query on one concept ("euros in yuan") weigh more.
            let hits = terms.concept_hits.get(term).map_or(1, Vec::len);
            let wq = wq * (1.0 + CONCEPT_REPEAT * (hits.min(3) as f32 - 1.0));
            if let Some(ps) = self.postings.get(*term) {
                for p in ps {
                    if !allowed(p.card, acc) {
                        continue;
                    }
                    // A word named as a place to go or to come from ("a ride to my hotel") says
                    // where, not what: weighed like a slot word, as a keyword there is no keyword.
                    let slot = slots.contains(self, at, p.card, s, e) || after_owned_destination(at.query, s);
                    let c = wq * idf * p.weight * if slot { SLOT_WORD } else { 1.0 };
                    let a = acc.entry(p.card).or_default();
                    a.contributions.push((c, s, e));
                    if tok.kind == TokKind::Concept && !slot && !self.generic.contains(*term) {
                        a.topical = true;
                        a.core_topical |= p.field != Field::Description;
                        if !a.topics.iter().any(|t| t == term) {
                            a.topics.push((*term).to_string());
                        }
                    }
                    a.specific |= specific && !slot;
                    let surface = &at.query[s..e];
                    let shown =
                        if tok.kind == TokKind::Concept { format!("{surface}→{term}") } else { surface.to_string() };
                    a.term_list.push((c, shown, p.field));
                }
            }
            if let Some(ps) = self.example_postings.get(*term) {
                for &(card, ex, w) in ps {
                    if !allowed(card, acc)
                        || slots.contains(self, at, card, s, e)
                        || after_owned_destination(at.query, s)
                    {
                        continue;
                    }
                    *acc.entry(card).or_default().examples.entry(ex).or_default() += w;
                }
            }
        }
    }

    /// One card's score in the clause from its accumulated evidence: raw score, negation and
    /// the evidence shown.
    /// `unknown_topics`: how many topics of the clause no card covers.
    fn card_score(&self, at: &ClauseAt<'_>, cues: &[Cue], card: u32, mut a: Acc, unknown_topics: usize) -> ClauseScore {
        a.contributions.sort_by(|x, y| {
            y.0.partial_cmp(&x.0).unwrap_or(std::cmp::Ordering::Equal).then(x.1.cmp(&y.1)).then(x.2.cmp(&y.2))
        });
        let mut counted: Vec<(usize, usize)> = Vec::new();
        for &(c, s, e) in &a.contributions {
            let overlaps = counted.iter().any(|&(cs, ce)| s < ce && e > cs);
            let c = if overlaps { c * OVERLAP } else { c };
            a.terms += c;
            a.spans.push((s, e, c));
            counted.push((s, e));
        }
        if unknown_topics > 0 && !a.topical && !a.keyword {
            a.terms -= OFF_TOPIC;
        }
        let info = &self.cards[card as usize];
        let (best_ex, cov) = a
            .examples
            .iter()
            .map(|(&ex, &m)| (ex, m / info.examples[ex as usize].mass.max(1e-6)))
            .max_by(|x, y| x.1.partial_cmp(&y.1).unwrap_or(std::cmp::Ordering::Equal).then(y.0.cmp(&x.0)))
            .unwrap_or((0, 0.0));
        let cov = cov.min(1.0);
        let mut raw = (if a.keyword { W_KEYWORD } else { 0.0 } + a.terms + W_EXAMPLE * cov + a.entity).max(0.0);
        if !a.specific && !a.keyword && !a.pattern_entity {
            // Only generic words ("book a table" against a doctor card's "Book me a doctor"), or
            // only a value of a list (a city names no task): at most a did-you-mean candidate,
            // never planned.
            raw = raw.min(GENERIC_ONLY);
        }
        let negated = negation(at, cues, info, &a);
        let mut evidence = a.evidence_kw.clone();
        if cov >= 0.3 {
            evidence.push(Evidence::SimilarExample {
                example: info.examples[best_ex as usize].text.clone(),
                similarity: round2(cov),
            });
        }
        evidence.extend(terms_evidence(&a.term_list));
        evidence.extend(a.evidence_entity.iter().cloned());
        let first = a.spans.iter().map(|s| s.0).min().unwrap_or(at.clause.start);
        let anchor = a
            .spans
            .iter()
            .max_by(|x, y| x.2.partial_cmp(&y.2).unwrap_or(std::cmp::Ordering::Equal).then(y.0.cmp(&x.0)))
            .map_or(first, |s| s.0);
        let spans = a.spans.iter().map(|&(s, e, w)| (s, e, w)).collect();
        // A lone pick needs the clause to be more about the card's topics than about topics no
        // card covers: "apply for a mortgage" is about loans, which no card of a card-loss
        // config covers; "borrow 30,000 for my wedding" is about a loan, the wedding is context.
        let topical = a.core_topical && a.specific && a.topics.len() > unknown_topics;
        ClauseScore {
            card,
            raw,
            keyword: a.keyword,
            negated,
            evidence,
            offset: first,
            anchor,
            selected: false,
            top: false,
            spans,
            topical,
            // A value many cards take (a city) beside a topic no card covers ("train tickets
            // Beijing to Shanghai") names none of them.
            names_value: !a.evidence_entity.is_empty() && (a.own_entity || unknown_topics == 0),
        }
    }
}

impl Card {
    fn examples_text_for(&self, query: &str) -> String {
        let key = normalize(query);
        self.examples.iter().find(|e| normalize(&e.text) == key).map_or_else(|| query.to_string(), |e| e.text.clone())
    }
}

/// Analyzed card texts, kept across snapshots: a reload re-analyzes only the texts that changed
/// (segmentation, stemming and the lexicon are most of compiling a card). Entries unused by the
/// latest compilations are dropped once the memo outgrows them.
struct TextMemo {
    texts: HashMap<String, (Arc<Vec<Token>>, u64)>,
    generation: u64,
}

static TEXT_MEMO: LazyLock<Mutex<TextMemo>> =
    LazyLock::new(|| Mutex::new(TextMemo { texts: HashMap::new(), generation: 0 }));

/// Entries the memo keeps whatever their age.
const TEXT_MEMO_FLOOR: usize = 4096;

/// The analysis of a card's text (name, keyword, description, example, key description),
/// memoized across compilations.
fn card_text_terms(text: &str) -> Arc<Vec<Token>> {
    let mut memo = TEXT_MEMO.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let generation = memo.generation;
    if let Some((tokens, used)) = memo.texts.get_mut(text) {
        *used = generation;
        return tokens.clone();
    }
    drop(memo);
    let tokens = Arc::new(analyze_normalized(&Normalized::new(text)));
    let mut memo = TEXT_MEMO.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    memo.texts.insert(text.to_string(), (tokens.clone(), generation));
    tokens
}

/// Starts a compilation: texts not used by this one or the previous one may be dropped once the
/// memo holds more than twice `texts` entries (and more than [`TEXT_MEMO_FLOOR`]).
fn text_memo_generation(texts: usize) {
    let mut memo = TEXT_MEMO.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    memo.generation += 1;
    let keep_from = memo.generation.saturating_sub(1);
    if memo.texts.len() > TEXT_MEMO_FLOOR.max(2 * texts) {
        memo.texts.retain(|_, (_, used)| *used >= keep_from);
    }
}

/// A card's terms (name, keywords, description, examples), each with the weight of the best
/// field it appears in.
fn card_fields_terms(spec: &CapabilityCardSpec) -> HashMap<String, (f32, Field)> {
    let mut terms: HashMap<String, (f32, Field)> = HashMap::new();
    let mut add = |text: &str, field: Field| {
        for t in card_text_terms(text).iter() {
            let w = field.weight();
            let e = terms.entry(t.term.clone()).or_insert((w, field));
            if w > e.0 {
                *e = (w, field);
            }
        }
    };
    for name in spec.name.all() {
        add(name, Field::Name);
    }
    for k in &spec.keywords {
        add(k, Field::Keyword);
    }
    for description in spec.description.all() {
        add(description, Field::Description);
    }
    for e in &spec.examples {
        add(e, Field::Example);
    }
    terms
}

/// An example's terms with their query weight (by token kind).
fn example_query_terms(example: &str) -> HashMap<String, f32> {
    let mut m: HashMap<String, f32> = HashMap::new();
    for t in card_text_terms(example).iter() {
        let w = kind_weight(t.kind);
        let v = m.entry(t.term.clone()).or_insert(0.0);
        *v = v.max(w);
    }
    m
}

/// The index of the card's `domain` in `domains` (added when new); `None` without a domain.
fn domain_index(domains: &mut Vec<String>, spec: &CapabilityCardSpec) -> Option<u32> {
    let d = spec.domain.as_deref().map(str::trim).filter(|d| !d.is_empty())?;
    Some(match domains.iter().position(|x| x == d) {
        Some(i) => i as u32,
        None => {
            domains.push(d.to_string());
            (domains.len() - 1) as u32
        }
    })
}

/// Whether the card's name and description hold a Chinese text and an English one (`[zh, en]`):
/// a text is Chinese when it holds a CJK ideograph, English otherwise (as a query's language is
/// told, [`Lang::detect`](crate::text::Lang::detect)).
#[cfg(feature = "semantic")]
fn speaks(spec: &CapabilityCardSpec) -> [bool; 2] {
    let mut speaks = [false; 2];
    for text in spec.name.all().chain(spec.description.all()).filter(|t| !t.trim().is_empty()) {
        speaks[crate::text::Lang::detect(text).index()] = true;
    }
    speaks
}

/// The card's name, keywords, description and examples, normalized, one a line.
fn own_text(spec: &CapabilityCardSpec) -> String {
    spec.name
        .all()
        .chain(spec.keywords.iter().map(String::as_str))
        .chain(spec.description.all())
        .chain(spec.examples.iter().map(String::as_str))
        .map(|t| Normalized::new(t).text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The words (two characters or more) of the card's semantic keys' descriptions, except those
/// its name, keywords or description use too: "银行卡" in a transfer card's key "转出到银行卡" is
/// what the card is about, not only a value it asks for.
fn slot_words(spec: &CapabilityCardSpec) -> Vec<String> {
    let mut own: HashSet<String> = HashSet::new();
    for text in spec.name.all().chain(spec.keywords.iter().map(String::as_str)).chain(spec.description.all()) {
        own.extend(card_text_terms(text).iter().filter(|t| t.kind == TokKind::Word).map(|t| t.term.clone()));
    }
    let mut slot_words: Vec<String> = Vec::new();
    for k in &spec.required_semantic_keys {
        for t in card_text_terms(&k.description).iter() {
            if t.kind == TokKind::Word
                && t.term.chars().count() >= 2
                && !own.contains(&t.term)
                && !slot_words.contains(&t.term)
            {
                slot_words.push(t.term.clone());
            }
        }
    }
    slot_words
}

/// Normalized IDF over cards: 1.0 for a term of one card, towards 0 for a term of all.
fn card_idf(card_terms: &[HashMap<String, (f32, Field)>]) -> HashMap<String, f32> {
    let n = card_terms.len().max(1) as f32;
    let raw_idf = |df: f32| (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
    let top = raw_idf(1.0);
    let mut df: HashMap<&str, u32> = HashMap::new();
    for terms in card_terms {
        for t in terms.keys() {
            *df.entry(t.as_str()).or_default() += 1;
        }
    }
    df.iter().map(|(t, &d)| ((*t).to_string(), raw_idf(d as f32) / top)).collect()
}

/// term -> the cards having it, with its best field.
fn postings(card_terms: &[HashMap<String, (f32, Field)>]) -> HashMap<String, Vec<Posting>> {
    let mut postings: HashMap<String, Vec<Posting>> = HashMap::new();
    for (i, terms) in card_terms.iter().enumerate() {
        for (t, &(weight, field)) in terms {
            postings.entry(t.clone()).or_default().push(Posting { card: i as u32, weight, field });
        }
    }
    postings
}

/// term -> (card, example, IDF-weighted term weight); fills each compiled card's examples with
/// their total weight (`mass`).
fn example_postings(
    cards: &[CardInput<'_>],
    example_terms: &[Vec<HashMap<String, f32>>],
    idf: &HashMap<String, f32>,
    compiled: &mut [Card],
) -> HashMap<String, Vec<(u32, u16, f32)>> {
    let mut example_postings: HashMap<String, Vec<(u32, u16, f32)>> = HashMap::new();
    for (i, examples) in example_terms.iter().enumerate() {
        for (j, terms) in examples.iter().enumerate() {
            let mut mass = 0.0;
            for (t, &w) in terms {
                let w = w * idf.get(t).copied().unwrap_or(0.0);
                mass += w;
                example_postings.entry(t.clone()).or_default().push((i as u32, j as u16, w));
            }
            compiled[i].examples.push(Example { text: cards[i].examples[j].clone(), mass });
        }
    }
    example_postings
}

/// Domain scoring: term -> (domain, weight × domain IDF), one document per domain (its cards'
/// terms and its name).
fn domain_postings(
    card_terms: &[HashMap<String, (f32, Field)>],
    compiled: &[Card],
    domains: &[String],
) -> HashMap<String, Vec<(u32, f32)>> {
    let mut dterms: Vec<HashMap<String, f32>> = vec![HashMap::new(); domains.len()];
    for (i, terms) in card_terms.iter().enumerate() {
        if let Some(d) = compiled[i].domain {
            for (t, &(w, _)) in terms {
                let e = dterms[d as usize].entry(t.clone()).or_insert(0.0);
                *e = e.max(w);
            }
        }
    }
    for (d, name) in domains.iter().enumerate() {
        for t in analyze_normalized(&Normalized::new(name)) {
            dterms[d].insert(t.term, F_NAME);
        }
    }
    let nd = domains.len() as f32;
    let didf = |df: f32| (1.0 + (nd - df + 0.5) / (df + 0.5)).ln() / (1.0 + (nd - 0.5) / 1.5).ln();
    let mut ddf: HashMap<&str, u32> = HashMap::new();
    for terms in &dterms {
        for t in terms.keys() {
            *ddf.entry(t.as_str()).or_default() += 1;
        }
    }
    let mut domain_postings: HashMap<String, Vec<(u32, f32)>> = HashMap::new();
    for (d, terms) in dterms.iter().enumerate() {
        for (t, &w) in terms {
            let x = didf(ddf[t.as_str()] as f32);
            domain_postings.entry(t.clone()).or_default().push((d as u32, w * x));
        }
    }
    domain_postings
}

/// Keywords and names of every card: one automaton for the registry, Latin keywords as stem
/// sequences, and the examples for exact matches.
struct KeywordIndex {
    keywords: Option<AhoCorasick>,
    keyword_meta: Vec<(u32, String, bool)>,
    keyword_stems: Vec<(u32, Vec<String>, String)>,
    exact_examples: HashMap<String, Vec<u32>>,
}

impl KeywordIndex {
    fn new(cards: &[CardInput<'_>]) -> Self {
        let mut patterns = Vec::new();
        let mut keyword_meta = Vec::new();
        let mut keyword_stems = Vec::new();
        let mut exact_examples: HashMap<String, Vec<u32>> = HashMap::new();
        for (i, spec) in cards.iter().enumerate() {
            for term in spec.keywords.iter().map(String::as_str).chain(spec.name.all()) {
                let lower = Normalized::new(term.trim()).text;
                if lower.is_empty() {
                    continue;
                }
                let word = lower.is_ascii();
                if word {
                    let stems: Vec<String> = words(&lower).into_iter().map(|w| w.stem).collect();
                    if !stems.is_empty() {
                        keyword_stems.push((i as u32, stems, term.to_string()));
                    }
                }
                for variant in separable_forms(&lower) {
                    patterns.push(variant);
                    keyword_meta.push((i as u32, term.to_string(), false));
                }
                patterns.push(lower);
                keyword_meta.push((i as u32, term.to_string(), word));
            }
            for e in &spec.examples {
                let key = normalize(e);
                if !key.is_empty() {
                    exact_examples.entry(key).or_default().push(i as u32);
                }
            }
        }
        let keywords = AhoCorasick::builder().match_kind(MatchKind::Standard).build(&patterns).ok();
        Self { keywords, keyword_meta, keyword_stems, exact_examples }
    }
}

/// What Chinese puts between a verb and its object (挂号 -> 挂个号, 查订单 -> 查一下订单, 请假 ->
/// 请两天假): measure words, 一下, aspect particles, short durations.
const SEPARABLE_INSERTS: &[&str] =
    &["个", "一个", "下", "一下", "了", "张", "一张", "份", "一份", "次", "过", "半天", "一天", "两天", "几天"];

/// The forms of a Chinese keyword of two to four characters with an insert after its first
/// character (verb-object words are split in speech); none for other keywords.
fn separable_forms(keyword: &str) -> Vec<String> {
    let chars: Vec<char> = keyword.chars().collect();
    if !(2..=4).contains(&chars.len()) || !chars.iter().all(|&c| super::tokenize::is_han(c)) {
        return Vec::new();
    }
    let rest: String = chars[1..].iter().collect();
    SEPARABLE_INSERTS.iter().map(|ins| format!("{}{ins}{rest}", chars[0])).collect()
}

/// Whether the text just before byte `at` of `query` marks a destination or origin: Chinese
/// 到 / 去 / 回 / 往 right before (not the resultative 订到 / 买到 / 找到 / 抢到), or English
/// "to" / "from", optionally followed by my / the / our / your / his / her / their. A bare "to"
/// whose word (ending at byte `end`) takes an object ("send someone to tune it", "to repair my
/// piano") or that follows a verb of wanting ("I'd like to cancel") marks an infinitive: that
/// word is what is asked for, not where to go.
fn after_destination_marker(query: &str, at: usize, end: usize) -> bool {
    let before = &query[..at];
    let mut chars = before.chars().rev();
    match chars.next() {
        Some('到') => !matches!(chars.next(), Some('订' | '买' | '抢' | '找' | '收' | '拿' | '办' | '约' | '定')),
        Some('去' | '回' | '往') => true,
        _ => {
            let (last, prev) = last_two_words(before);
            let infinitive = word_in(last, &["to"]) && (word_in(prev, WANTING) || takes_object(&query[end..]));
            word_in(last, &["to", "from"]) && !infinitive
                || word_in(last, &["my", "the", "our", "your", "his", "her", "their"]) && word_in(prev, &["to", "from"])
        }
    }
}

/// Words after which "to" opens an infinitive, never a destination ("want to", "how to", "be
/// able to").
const WANTING: &[&str] = &[
    "want", "wants", "wanted", "need", "needs", "needed", "like", "love", "how", "able", "unable", "going", "trying",
    "try", "have", "has", "had", "plan", "planning", "hope", "hoping", "wish", "decided", "forgot", "used",
];

/// Whether `rest`, the text right after an English word, opens with that word's object (a
/// pronoun, a possessive or an article: "… it", "… my piano", "… the booking") or a verb
/// particle ("… up", "… back"): the word is then a verb.
fn takes_object(rest: &str) -> bool {
    if rest.starts_with(|c: char| c.is_alphanumeric()) {
        return false;
    }
    let next = rest.split_whitespace().next().map(|w| w.trim_end_matches(|c: char| !c.is_ascii_alphabetic()));
    word_in(
        next,
        &[
            "it", "them", "me", "us", "him", "my", "our", "your", "his", "her", "their", "the", "a", "an", "this",
            "that", "these", "those", "up", "out", "off", "back", "down", "over",
        ],
    )
}

/// The last two whitespace-separated words of `text` (the last first), read from its last
/// [`WORDS_WINDOW`] bytes only: the words compared are short ("their from "), and a scan of the
/// whole text per term would cost a query's length squared. A word the window cuts is none.
fn last_two_words(text: &str) -> (Option<&str>, Option<&str>) {
    let mut from = text.len().saturating_sub(WORDS_WINDOW);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    let tail = &text[from..];
    let cut = from > 0 && !text[..from].ends_with(char::is_whitespace);
    let mut words = tail.split_whitespace().rev().filter(|w| !(cut && std::ptr::eq(w.as_ptr(), tail.as_ptr())));
    (words.next(), words.next())
}

/// See [`last_two_words`].
const WORDS_WINDOW: usize = 24;

/// Whether `word` is one of `set` (lower-case ASCII words), in any case.
fn word_in(word: Option<&str>, set: &[&str]) -> bool {
    word.is_some_and(|w| set.iter().any(|s| w.eq_ignore_ascii_case(s)))
}

/// Whether an English "to" / "from" and an owner (my / our / the …) come right before byte
/// `at` of `query` ("a ride to my hotel"): a place, unlike a bare "to" ("need to sleep") or a
/// Chinese 去 / 到, which may name the place a card is about ("去大厅" for a service-hall card).
fn after_owned_destination(query: &str, at: usize) -> bool {
    let (owner, marker) = last_two_words(&query[..at]);
    word_in(owner, &["my", "our", "your", "his", "her", "their"]) && word_in(marker, &["to", "from"])
}

/// The entity sources of a registry, compiled for one pass over a text whatever their number:
/// every value list's terms in one Aho-Corasick automaton, every regular expression in one
/// `RegexSet` (only the expressions it reports matching are run again for their spans). A
/// query's entity lookup so costs about the same with 1,000 cards as with 20.
struct EntityIndex {
    sources: Vec<EntitySource>,
    /// The distinct terms of all value lists; per automaton pattern, the term and the sources
    /// listing it.
    values: Option<AhoCorasick>,
    value_terms: Vec<(Term, Vec<usize>)>,
    /// The regex rules (pattern, email, phone); per set member, its source.
    regexes: Option<regex::RegexSet>,
    regex_sources: Vec<usize>,
}

impl EntityIndex {
    fn new(sources: Vec<EntitySource>) -> Self {
        let mut value_terms: Vec<(Term, Vec<usize>)> = Vec::new();
        let mut by_text: HashMap<String, usize> = HashMap::new();
        let (mut patterns, mut regex_sources) = (Vec::new(), Vec::new());
        for (i, src) in sources.iter().enumerate() {
            match &src.rule {
                EntityRule::Values(terms) => {
                    for t in terms.iter().filter(|t| !t.is_empty()) {
                        let at = *by_text.entry(t.text().to_string()).or_insert_with(|| {
                            value_terms.push((t.clone(), Vec::new()));
                            value_terms.len() - 1
                        });
                        if !value_terms[at].1.contains(&i) {
                            value_terms[at].1.push(i);
                        }
                    }
                }
                EntityRule::Pattern(re) | EntityRule::Email(re) | EntityRule::Phone(re) => {
                    patterns.push(re.as_str().to_string());
                    regex_sources.push(i);
                }
            }
        }
        let values = (!value_terms.is_empty())
            .then(|| AhoCorasick::new(value_terms.iter().map(|(t, _)| t.text())).ok())
            .flatten();
        // Each pattern compiled alone already; a set too large for the limit (thousands of
        // distinct expressions) is left out and every expression is run instead.
        let regexes = (!patterns.is_empty())
            .then(|| regex::RegexSetBuilder::new(&patterns).size_limit(1 << 24).build().ok())
            .flatten();
        Self { sources, values, value_terms, regexes, regex_sources }
    }

    /// Each source's first match in `text` (as [`EntityRule::find`] finds it: byte span in
    /// `text`, the value as written), in source order. `lower` is `text` normalized.
    fn find_all(&self, text: &str, lower: &Normalized) -> Vec<(usize, (usize, usize, String))> {
        let mut out = Vec::new();
        match &self.regexes {
            Some(set) => {
                for member in set.matches(text).iter() {
                    let src = self.regex_sources[member];
                    out.extend(self.sources[src].rule.find(text, lower).map(|hit| (src, hit)));
                }
            }
            None => {
                for &src in &self.regex_sources {
                    out.extend(self.sources[src].rule.find(text, lower).map(|hit| (src, hit)));
                }
            }
        }
        let Some(ac) = &self.values else {
            // No automaton (no value lists, or too large to build one): each list searched alone.
            for (src, source) in self.sources.iter().enumerate() {
                if matches!(source.rule, EntityRule::Values(_)) {
                    out.extend(source.rule.find(text, lower).map(|hit| (src, hit)));
                }
            }
            out.sort_unstable_by_key(|(src, _)| *src);
            return out;
        };
        // Per source, its earliest match, the longest one there.
        let mut first: HashMap<usize, (usize, std::cmp::Reverse<usize>)> = HashMap::new();
        for m in ac.find_overlapping_iter(&lower.text) {
            let (term, users) = &self.value_terms[m.pattern().as_usize()];
            if !term.matches_at(&lower.text, m.start()) {
                continue;
            }
            let here = (m.start(), std::cmp::Reverse(term.len()));
            for &src in users {
                first.entry(src).and_modify(|best| *best = (*best).min(here)).or_insert(here);
            }
        }
        out.extend(first.into_iter().map(|(src, (pos, len))| {
            let (s, e) = (lower.orig(pos), lower.orig(pos + len.0));
            (src, (s, e, text[s..e].to_string()))
        }));
        out.sort_unstable_by_key(|(src, _)| *src);
        out
    }
}

/// Entities: one source per distinct rule, owned by the cards using it.
fn entity_sources(cards: &[CardInput<'_>], lists: &BTreeMap<String, Vec<String>>) -> Vec<EntitySource> {
    let mut entities: Vec<EntitySource> = Vec::new();
    let mut by_rule: HashMap<String, usize> = HashMap::new();
    for (i, spec) in cards.iter().enumerate() {
        for k in &spec.required_semantic_keys {
            let Some(x) = &k.extract else { continue };
            let Some(rule_key) = rule_key(x) else { continue };
            let idx = match by_rule.get(&rule_key) {
                Some(&idx) => idx,
                None => {
                    let Some((rule, weight)) = build_rule(x, lists) else { continue };
                    entities.push(EntitySource { rule, weight, users: Vec::new() });
                    by_rule.insert(rule_key, entities.len() - 1);
                    entities.len() - 1
                }
            };
            entities[idx].users.push((i as u32, k.key.clone()));
        }
    }
    entities
}

/// The clause being scored, with the query it is part of.
struct ClauseAt<'a> {
    query: &'a str,
    norm: &'a Normalized,
    clause: Clause,
}

/// Keyword evidence: the keyword hits starting in the clause.
fn keyword_evidence(clause: Clause, keyword_hits: &[(u32, usize, usize, String)], acc: &mut HashMap<u32, Acc>) {
    for (card, s, e, term) in keyword_hits.iter().filter(|h| h.1 >= clause.start && h.1 < clause.end) {
        let a = acc.entry(*card).or_default();
        if !a.keyword {
            a.keyword = true;
            a.evidence_kw.push(Evidence::Keyword { term: term.clone() });
        }
        a.spans.push((*s, *e, W_KEYWORD));
    }
}

/// What is found in the whole query before its clauses are scored.
struct QueryParts {
    /// Its terms (words, bigrams, characters, concepts).
    tokens: Vec<Token>,
    /// Keywords found: (card, start, end, keyword).
    keyword_hits: Vec<(u32, usize, usize, String)>,
    /// Negation and correction cues.
    cues: Vec<Cue>,
    /// Spans of dates, times and parts of a day (left out of term matching).
    when: Vec<(usize, usize)>,
}

/// The distinct terms of a clause.
struct ClauseTerms<'t> {
    /// term -> (best query weight, first span, token).
    terms: HashMap<&'t str, (f32, usize, usize, &'t Token)>,
    /// concept -> the distinct spans it was found at.
    concept_hits: HashMap<&'t str, Vec<(usize, usize)>>,
}

impl<'t> ClauseTerms<'t> {
    /// The terms of the tokens starting in `clause`; words and bigrams inside `masks` (entity
    /// values) are left out.
    fn of(tokens: &'t [Token], clause: Clause, masks: &[(usize, usize)], when: &[(usize, usize)]) -> Self {
        let mut terms: HashMap<&str, (f32, usize, usize, &Token)> = HashMap::new();
        let mut concept_hits: HashMap<&str, Vec<(usize, usize)>> = HashMap::new();
        let inside = |t: &Token, spans: &[(usize, usize)]| spans.iter().any(|&(s, e)| t.start >= s && t.end <= e);
        for t in tokens.iter().filter(|t| t.start >= clause.start && t.start < clause.end) {
            if t.kind == TokKind::Concept && inside(t, when) {
                continue;
            }
            if t.kind == TokKind::Concept {
                let spans = concept_hits.entry(t.term.as_str()).or_default();
                if !spans.iter().any(|&(s, e)| t.start < e && t.end > s) {
                    spans.push((t.start, t.end));
                }
            }
            let masked = t.kind != TokKind::Concept && masks.iter().any(|&(s, e)| t.start < e && t.end > s);
            if masked {
                continue;
            }
            let mut w = kind_weight(t.kind);
            if t.kind == TokKind::Word && t.term.chars().count() == 1 {
                w *= Q_SINGLE_CHAR;
            }
            let e = terms.entry(t.term.as_str()).or_insert((w, t.start, t.end, t));
            if w > e.0 {
                e.0 = w;
            }
        }
        Self { terms, concept_hits }
    }
}

/// Per card, the spans of its slot words in the clause (query byte offsets), found on first use.
#[derive(Default)]
struct SlotSpans(HashMap<u32, Vec<(usize, usize)>>);

impl SlotSpans {
    /// Whether `s..e` lies inside one of `card`'s slot words in the clause.
    fn contains(&mut self, r: &Recognizer, at: &ClauseAt<'_>, card: u32, s: usize, e: usize) -> bool {
        let (norm, clause) = (at.norm, at.clause);
        let spans = self.0.entry(card).or_insert_with(|| {
            let mut v = Vec::new();
            for w in &r.cards[card as usize].slot_words {
                for (i, _) in norm.text.match_indices(w.as_str()) {
                    let (a, b) = (norm.orig(i), norm.orig(i + w.len()));
                    if a >= clause.start && b <= clause.end {
                        v.push((a, b));
                    }
                }
            }
            v
        });
        spans.iter().any(|&(a, b)| s >= a && e <= b)
    }
}

/// The cue (of the clause, not one of the card's own words) governing more than half of the
/// card's evidence, if any (the last such cue).
fn negation(at: &ClauseAt<'_>, cues: &[Cue], info: &Card, a: &Acc) -> Option<String> {
    let (norm, clause) = (at.norm, at.clause);
    let mut negated = None;
    let total: f32 = a.spans.iter().map(|s| s.2).sum();
    for cue in cues.iter().filter(|c| c.governs(norm, clause.start, clause.end)) {
        if info.own_text.contains(cue.text.as_str()) {
            continue;
        }
        let (s, e) = (norm.orig(cue.scope.0), norm.orig(cue.scope.1).min(clause.end));
        let (cs, ce) = (norm.orig(cue.start), norm.orig(cue.start + cue.text.len()));
        // Evidence overlapping the cue is the cue's own words ("不想要了" for a returns card),
        // not what it negates.
        let inside: f32 =
            a.spans.iter().filter(|&&(p, q, _)| p >= s && p < e && !(p < ce && q > cs)).map(|x| x.2).sum();
        if total > 0.0 && inside > 0.5 * total {
            negated = Some(cue.text.clone());
        }
    }
    negated
}

/// The shared-terms evidence: the field of the strongest term and up to six distinct terms,
/// strongest first.
fn terms_evidence(term_list: &[(f32, String, Field)]) -> Option<Evidence> {
    if term_list.is_empty() {
        return None;
    }
    let mut list = term_list.to_vec();
    list.sort_by(|x, y| y.0.partial_cmp(&x.0).unwrap_or(std::cmp::Ordering::Equal));
    let field = list[0].2;
    let mut shown: Vec<String> = Vec::new();
    for (_, t, _) in list {
        if !shown.contains(&t) && shown.len() < 6 {
            shown.push(t);
        }
    }
    Some(Evidence::Terms { field, terms: shown })
}

/// Identity of an extract rule (cards sharing it share the evidence); `None` for rules that are
/// no evidence (dates, times, numbers).
fn rule_key(x: &ExtractSpec) -> Option<String> {
    if let Some(p) = &x.pattern {
        return Some(format!("pattern:{p}"));
    }
    if let Some(name) = &x.values_from {
        return Some(format!("list:{name}"));
    }
    if let Some(values) = &x.values {
        return Some(format!("values:{}", values.join("\u{1}")));
    }
    match x.kind {
        Some(ValueType::Email) => Some("type:email".into()),
        Some(ValueType::Phone) => Some("type:phone".into()),
        _ => None,
    }
}

fn build_rule(x: &ExtractSpec, lists: &BTreeMap<String, Vec<String>>) -> Option<(EntityRule, f32)> {
    if let Some(p) = &x.pattern {
        return Regex::new(p).ok().map(|r| {
            let w = if matches_plain_numbers(&r) { W_ENTITY_WEAK } else { W_PATTERN };
            (EntityRule::Pattern(r), w)
        });
    }
    if let Some(values) = x.values.as_ref().or_else(|| x.values_from.as_ref().and_then(|n| lists.get(n))) {
        return Some((EntityRule::Values(values.iter().map(|v| Term::new(v)).collect()), W_VALUES));
    }
    match x.kind {
        Some(ValueType::Email) => Regex::new(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
            .ok()
            .map(|r| (EntityRule::Email(r), W_ENTITY_WEAK)),
        Some(ValueType::Phone) => Regex::new(r"(?:\+?86[- ]?)?1[3-9]\d[- ]?\d{4}[- ]?\d{4}|\+\d[\d -]{6,16}\d")
            .ok()
            .map(|r| (EntityRule::Phone(r), W_ENTITY_WEAK)),
        _ => None,
    }
}

/// Numbers users mention in passing (an amount, a room, a year, a count, a short code).
const PLAIN_NUMBERS: &[&str] = &["7", "42", "512", "2026", "30000", "123456", "1234567", "12345678", "1,000", "3.5"];

/// Whether a key's pattern matches a plain number on its own: then it tells no card apart (an
/// amount `(\d+)`, a six-digit code `(\d{6})`), unlike one needing letters, a unit or a long
/// identifier (`[A-Z]{2}\d{4}`, `(\d+)\s*股`, `\d{16,19}`).
fn matches_plain_numbers(re: &Regex) -> bool {
    PLAIN_NUMBERS.iter().any(|n| re.is_match(n))
}

impl EntityRule {
    /// The first match in `text`: byte span in `text` and the value as written.
    fn find(&self, text: &str, lower: &Normalized) -> Option<(usize, usize, String)> {
        match self {
            Self::Pattern(re) => {
                let c = re.captures(text)?;
                let m = c.get(1).or_else(|| c.get(0))?;
                Some((m.start(), m.end(), m.as_str().to_string()))
            }
            Self::Email(re) | Self::Phone(re) => re.find(text).map(|m| (m.start(), m.end(), m.as_str().to_string())),
            Self::Values(terms) => {
                let (pos, len) = terms
                    .iter()
                    .filter_map(|t| find_term(&lower.text, t).map(|p| (p, std::cmp::Reverse(t.len()))))
                    .min()
                    .map(|(p, l)| (p, l.0))?;
                let (s, e) = (lower.orig(pos), lower.orig(pos + len));
                Some((s, e, text[s..e].to_string()))
            }
        }
    }
}

#[derive(Default)]
struct Acc {
    keyword: bool,
    terms: f32,
    entity: f32,
    entity_keys: Vec<String>,
    examples: HashMap<u16, f32>,
    /// (start, end, weight) of every piece of evidence (query byte offsets), for negation scope,
    /// order and explaining away.
    spans: Vec<(usize, usize, f32)>,
    term_list: Vec<(f32, String, Field)>,
    /// (contribution, span) of each shared term, summed with overlap discount at the end.
    contributions: Vec<(f32, usize, usize)>,
    /// The card shares a topical concept with the clause.
    topical: bool,
    /// ... through its name, keywords or examples (not only its description, which may mention
    /// other topics in passing).
    core_topical: bool,
    /// The distinct topical concepts it shares with the clause.
    topics: Vec<String>,
    /// An entity found by a `pattern` rule (a flight number): distinctive on its own, unlike a
    /// value of a list (a city), which says with what, not what to do.
    pattern_entity: bool,
    /// An entity found by a pattern rule or by a value list only this card uses (a service hall),
    /// not a value many cards take (a city).
    own_entity: bool,
    /// Some of its shared terms say *what* the clause is about (not only an action such as
    /// 订 / book / status, nor a lone character).
    specific: bool,
    evidence_kw: Vec<Evidence>,
    evidence_entity: Vec<Evidence>,
}

#[derive(Clone, Copy)]
struct Clause {
    start: usize,
    end: usize,
}

struct ClauseScore {
    card: u32,
    raw: f32,
    keyword: bool,
    negated: Option<String>,
    evidence: Vec<Evidence>,
    offset: usize,
    /// Where its strongest evidence starts ([`Selected::anchor`]).
    anchor: usize,
    selected: bool,
    /// The best card of its clause (highest raw score, not negated).
    top: bool,
    /// (start, end, weight) of its evidence in the query.
    spans: Vec<(usize, usize, f32)>,
    /// The card shares a topical (not generic) concept with the clause through its name,
    /// keywords or examples, and more of them than the clause has topics no card covers.
    topical: bool,
    /// It names a value of the card's ([`Acc::own_entity`], or any value in a clause with no
    /// topic that no card covers).
    names_value: bool,
}

/// Selection in one clause: cards found by keyword; then, best first, cards confident and close
/// to the clause's best whose evidence is not explained away by a card already selected: a
/// second card needs words of its own ("我的保险都保哪些情况" is about coverage; the 保险 it
/// shares with a claims card does not also ask for a claim).
fn select(out: &mut [ClauseScore]) {
    let best = out.iter().filter(|c| c.negated.is_none()).map(|c| c.raw).fold(0.0, f32::max);
    out.sort_by(|a, b| b.raw.partial_cmp(&a.raw).unwrap_or(std::cmp::Ordering::Equal).then(a.card.cmp(&b.card)));
    let mut taken: Vec<(usize, usize)> = Vec::new();
    if let Some(first) = out.iter_mut().find(|c| c.negated.is_none() && c.raw > 0.0) {
        first.top = true;
    }
    for c in out.iter_mut().filter(|c| c.negated.is_none()) {
        if c.keyword {
            c.selected = true;
        } else if confidence(c.raw) >= SELECT && c.raw >= RIVAL * best {
            let shared: f32 =
                c.spans.iter().filter(|&&(s, e, _)| taken.iter().any(|&(ts, te)| s < te && e > ts)).map(|x| x.2).sum();
            c.selected = taken.is_empty() || confidence(c.raw - shared) >= SELECT;
        }
        if c.selected {
            taken.extend(c.spans.iter().map(|&(s, e, _)| (s, e)));
        }
    }
}

/// Whether a query no card was selected for is worth the semantic stage's encoding: it is no
/// more about topics no card covers than about covered ones, or some card has lexical evidence
/// (a raw score). Otherwise it stays out of scope unencoded.
#[cfg(feature = "semantic")]
fn worth_encoding(topics: Topics, recognition: &Recognition) -> bool {
    topics.unknown <= topics.known || recognition.candidates.iter().any(|c| c.raw > 0.0)
}

/// The clauses of a query, each with its cards' scores ([`Recognizer::score_clauses`]).
type ScoredClauses = Vec<(Clause, Vec<ClauseScore>)>;

/// Topics (lexicon concepts, not generic ones) of a query's clauses.
#[derive(Debug, Default, Clone, Copy)]
struct Topics {
    /// Topics no card covers (火车票 with no train card).
    unknown: usize,
    /// Topics some card covers.
    known: usize,
}

/// The recognition's three lists, before the clauses and unhandled parts are added.
struct Ranked {
    selected: Vec<Selected>,
    uncertain: Vec<CardScore>,
    candidates: Vec<CardScore>,
    /// Cards sharing a topic (a lexicon concept) with the query, by id.
    topical: Vec<String>,
}

/// What one clause selected: the evidence spans of its selected cards, and whether a card was
/// negated in it.
struct ClauseOutcome {
    clause: Clause,
    selected: Vec<(usize, usize)>,
    picked: Vec<u32>,
    negated: bool,
}

impl ClauseOutcome {
    fn of(clause: Clause, scored: &[ClauseScore]) -> Self {
        let selected =
            scored.iter().filter(|c| c.selected).flat_map(|c| c.spans.iter().map(|&(s, e, _)| (s, e))).collect();
        let picked = scored.iter().filter(|c| c.selected).map(|c| c.card).collect();
        Self { clause, selected, picked, negated: scored.iter().any(|c| c.negated.is_some()) }
    }
}

/// The Chinese connectives that add a request, shared by [`ADDS`] and the clause split of
/// [`split_clauses`] (a macro, so that `concat!` can take them).
macro_rules! adds_zh {
    () => {
        "然后|顺便|另外|还有|并且|同时|而且|以及|此外|再帮|再给|再查|再订|再看|再安排|再把"
    };
}

/// The English connectives that add a request, shared like [`adds_zh`].
macro_rules! adds_en {
    () => {
        "and|then|also|plus|as well as|separately|additionally"
    };
}

/// Connectives adding a request ("A, and also B"): both sides are requests of their own.
static ADDS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(concat!(adds_zh!(), r"|(?-u:\b)(?:", adds_en!(), r")(?-u:\b)")).expect("static regex"));

/// The connectives of [`ADDS`] but English "and" and "then", which also join the sentences of a
/// story ("it spins forever and then shows error 1003"), and "separately" / "additionally"
/// (added to [`ADDS`] later, not measured here).
static ALSO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(adds_zh!(), r"|(?-u:\b)(?:also|plus|as well as)(?-u:\b)")).expect("static regex")
});

/// Whether a connective joins two requests in `text` (normalized) split into `clauses`: one of
/// [`ALSO`] between two clauses, or "and" / "then" (and the Chinese ones of [`ADDS`]) before a
/// clause that asks a question of its own ("Order a soft-food dinner for bed 9, and can his
/// daughter visit tomorrow?"). "…is cracked and crumbling and I blew a tire on it" joins none.
#[cfg(feature = "semantic")]
fn joins_requests(text: &str, clauses: &[(usize, usize, bool)]) -> bool {
    static QUESTION: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^\s*(?:can|could|would|will|do|does|did|is|are|please)(?-u:\b)").expect("static regex")
    });
    clauses.windows(2).any(|w| {
        let gap = &text[w[0].1..w[1].0];
        ALSO.is_match(gap) || ADDS.is_match(gap) && QUESTION.is_match(&text[w[1].0..w[1].1])
    })
}

/// A span (byte offsets) of the query that gives a value: `true` for a value the cards'
/// extractors recognize, `false` for a date, a time or a word of a key's description
/// (`Recognizer::value_spans`).
#[cfg(feature = "semantic")]
type ValueSpan = (usize, usize, bool);

/// Whether the query names the card: a keyword, or an entity with words of the card beside it (a
/// value alone, such as a flat number given as context, asks for nothing). A card selected
/// beside others without being named may be dropped (`Recognizer::drop_weak_companions`).
#[cfg(feature = "semantic")]
fn named(c: &CardScore) -> bool {
    let has = |f: fn(&Evidence) -> bool| c.evidence.iter().any(f);
    has(|e| matches!(e, Evidence::Keyword { .. }))
        || (has(|e| matches!(e, Evidence::Entity { .. }))
            && has(|e| matches!(e, Evidence::Terms { .. } | Evidence::SimilarExample { .. })))
}

/// A card a clause selected, and how a connective joins that clause ([`picks`]).
#[cfg(feature = "semantic")]
struct Pick {
    card: u32,
    clause: Clause,
    /// A request of its own: a connective of [`ADDS`] introduces the clause or one of [`ALSO`]
    /// follows it.
    added: bool,
    /// Joined by more than English "and": a connective of [`ADDS`] but "and" introduces the
    /// clause, or one of [`ALSO`] follows it.
    also: bool,
}

/// Every card a clause selected, with its clause and how a connective joins it (`clauses` in
/// `norm`'s offsets, as [`split_clauses`] gives them).
#[cfg(feature = "semantic")]
fn picks(scored: &[(Clause, Vec<ClauseScore>)], clauses: &[(usize, usize, bool)], norm: &Normalized) -> Vec<Pick> {
    static ALSO_THEN: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(concat!(adds_zh!(), r"|(?-u:\b)(?:then|also|plus|as well as|separately|additionally)(?-u:\b)"))
            .expect("static regex")
    });
    scored
        .iter()
        .enumerate()
        .flat_map(|(i, (clause, sc))| {
            let added = own_request(clauses, norm, i, &ADDS);
            let also = own_request(clauses, norm, i, &ALSO_THEN);
            sc.iter().filter(|x| x.selected).map(move |x| Pick { card: x.card, clause: *clause, added, also })
        })
        .collect()
}

/// Whether the text between two spans of a clause coordinates them (和 / 跟 / 与 / 及 / 、 /
/// and / & / plus / as well as), with nothing but short filler besides.
fn coordinated(query: &str, a: (usize, usize), b: (usize, usize)) -> bool {
    static AND: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(
            r"(?i)和|跟|与|及|、|还有|也要|(?-u:\b)and(?-u:\b)|&|(?-u:\b)plus(?-u:\b)|(?-u:\b)as well as(?-u:\b)",
        )
        .expect("static regex")
    });
    let (s, e) = if a.1 <= b.0 {
        (a.1, b.0)
    } else if b.1 <= a.0 {
        (b.1, a.0)
    } else {
        return false;
    };
    let between = &query[s..e];
    between.chars().count() <= 12 && AND.is_match(between)
}

/// Overlapping or adjacent spans (only spaces between) merged, as the query's text.
fn merge_spans(query: &str, mut spans: Vec<(usize, usize)>) -> Vec<String> {
    spans.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (s, e) in spans {
        match merged.last_mut() {
            Some(last) if s <= last.1 || query[last.1..s].trim().is_empty() => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    merged.into_iter().map(|(s, e)| query[s..e].trim().to_string()).filter(|t| !t.is_empty()).collect()
}

/// With nothing confident, the best candidate when it stands alone: it shares a topic (a topical
/// lexicon concept, not only generic words, found in its name, keywords or examples rather than
/// only mentioned in its description) with the query, more of them than the query has topics no
/// card covers, it reaches [`LONE`], and every other candidate is under [`LONE_MARGIN`] of its
/// confidence. Rasa's fallback compares the top intent with a threshold *and* with the
/// runner-up; a lone topical match is the second case.
///
/// A candidate whose evidence lies entirely within the best one's (the same words, counted for
/// less: "oil change" names car maintenance, and the car it implies is all a parking card shares)
/// offers no other reading of the query and is no runner-up.
fn clear_winner<'c>(
    candidates: &'c [CardScore],
    topical: &HashSet<String>,
    negated: &[String],
    spans_of: &HashMap<String, Vec<(usize, usize)>>,
) -> Option<&'c CardScore> {
    let mut live = candidates.iter().filter(|c| !negated.contains(&c.id));
    let best = live.next()?;
    let best_spans = spans_of.get(&best.id).map_or(&[][..], Vec::as_slice);
    let within_best =
        |c: &CardScore| spans_of.get(&c.id).is_some_and(|spans| lies_within(spans.iter().copied(), best_spans));
    let runner_up = live.find(|c| !within_best(c)).map_or(0.0, |c| c.confidence);
    (topical.contains(&best.id) && best.confidence >= LONE && runner_up <= best.confidence * LONE_MARGIN)
        .then_some(best)
}

/// Whether there are `spans` and each lies inside one of `best`: evidence only on the words of
/// the best card, which offers no other reading of the query.
fn lies_within(spans: impl IntoIterator<Item = (usize, usize)>, best: &[(usize, usize)]) -> bool {
    let mut any = false;
    for (s, e) in spans {
        if !best.iter().any(|&(bs, be)| bs <= s && e <= be) {
            return false;
        }
        any = true;
    }
    any
}

/// A request joined by "and also / 另外 / 还有 …" whose card stands alone in its clause is
/// planned beside the confident one ("Check me in for CA1501 and put me by the window", "退掉这双
/// 鞋，然后帮我约个牙医"): the connective says each side is a request of its own. `clauses` are
/// [`split_clauses`]'s, one per entry of `scored`.
fn select_lone_requests(scored: &mut [(Clause, Vec<ClauseScore>)], clauses: &[(usize, usize, bool)]) {
    for ((_, sc), &(_, _, requested)) in scored.iter_mut().zip(clauses) {
        if requested && !sc.iter().any(|c| c.selected) {
            if let Some(i) = lone_in_clause(sc) {
                sc[i].selected = true;
            }
        }
    }
}

/// Whether clause `i` of `clauses` ([`split_clauses`]'s, offsets of `norm`) is a request of its
/// own: a connective of `before` (such as [`ADDS`]) joins it to the clause before, or one of
/// [`ALSO`] to the clause after (English "and" / "then" after it also join the sentences of a
/// story).
fn own_request(clauses: &[(usize, usize, bool)], norm: &Normalized, i: usize, before: &Regex) -> bool {
    let between = |i: usize| &norm.text[clauses[i - 1].1..clauses[i].0];
    (i > 0 && before.is_match(between(i))) || (i + 1 < clauses.len() && ALSO.is_match(between(i + 1)))
}

/// The cards (indices) selected in a clause that a connective other than English "and" / "then"
/// makes a request of its own ([`ALSO`], before or after it) and that holds no advice cue
/// ([`super::advice::asked`]): the second request of "你们收二手家具吗？另外帮我约个周六搬家", which an
/// advice request elsewhere in the query does not set aside (`Recognizer::set_aside_advice`).
fn requests_beside_advice(
    scored: &[(Clause, Vec<ClauseScore>)],
    clauses: &[(usize, usize, bool)],
    norm: &Normalized,
) -> Vec<u32> {
    let clean = |i: usize| {
        own_request(clauses, norm, i, &ALSO) && super::advice::asked(&norm.text[clauses[i].0..clauses[i].1]).is_none()
    };
    scored
        .iter()
        .enumerate()
        .filter(|&(i, _)| clean(i))
        .flat_map(|(_, (_, sc))| sc.iter().filter(|x| x.selected).map(|x| x.card))
        .collect()
}

/// The clause's best card when it stands alone there, by the rule of [`clear_winner`]: topical,
/// at least [`LONE`], not negated, and every other card of the clause that has evidence of its
/// own under [`LONE_MARGIN`] of it. `scored` is sorted best first (by [`select`]).
fn lone_in_clause(scored: &[ClauseScore]) -> Option<usize> {
    let mut live = scored.iter().enumerate().filter(|(_, c)| c.negated.is_none() && c.raw > 0.0);
    let (i, best) = live.next()?;
    let best_conf = confidence(best.raw);
    let best_spans: Vec<(usize, usize)> = best.spans.iter().map(|&(s, e, _)| (s, e)).collect();
    let within_best = |c: &ClauseScore| lies_within(c.spans.iter().map(|&(s, e, _)| (s, e)), &best_spans);
    let runner_up = live.find(|(_, c)| !within_best(c)).map_or(0.0, |(_, c)| confidence(c.raw));
    // Topical, or naming a value of the card's ("约一下这周五去市民中心大厅": a service hall).
    let own = best.topical || best.names_value;
    (own && best_conf >= LONE && runner_up <= best_conf * LONE_MARGIN).then_some(i)
}

/// One card selected, not by keyword nor as the best of two clauses, and another scored within
/// [`AMBIGUITY`] of its confidence from the same clause (a rival in another clause is rather a
/// second request that fell short); negated cards are no rivals. A card that two clauses choose
/// ("My marriage certificate is going to be used in the UAE. Does it have to go through the
/// Foreign Ministry…": legalization, the only card of the second clause) is not in doubt over
/// the one where a rival comes near it.
fn ambiguous(
    selected: &[Selected],
    candidates: &[CardScore],
    settled: &[String],
    negated: &[String],
    clause_of: &HashMap<String, usize>,
) -> bool {
    let [only] = selected else { return false };
    if settled.contains(&only.id) {
        return false;
    }
    let clause = clause_of.get(&only.id);
    candidates.iter().any(|c| {
        c.id != only.id
            && clause_of.get(&c.id) == clause
            && !negated.contains(&c.id)
            && c.confidence >= UNCERTAIN
            && c.confidence >= only.confidence - AMBIGUITY
    })
}

#[derive(Default)]
struct CardAgg {
    /// Found by keyword in a clause where it was selected.
    keyword: bool,
    raw: f32,
    confidence: f32,
    selected: Option<usize>,
    negated: Option<String>,
    evidence: Vec<Evidence>,
    /// Index of the clause its score comes from (the number of clauses for the whole query).
    clause: usize,
    /// Its best clause shares a topical concept with it.
    topical: bool,
    /// The query spans of its evidence in that clause.
    spans: Vec<(usize, usize)>,
    /// Selected in a clause where it was the best card (not only alongside a better one).
    selected_top: bool,
    /// The number of clauses where it was selected as the best card.
    top_clauses: usize,
    /// Its anchor in that clause.
    anchor: Option<usize>,
    /// Its best raw score in the clauses that negated it, and in the others.
    negated_raw: f32,
    free_raw: f32,
}

/// Folds one clause's scores (clause number `clause`) into the per-card aggregates.
fn merge(per_card: &mut HashMap<u32, CardAgg>, scored: Vec<ClauseScore>, clause: usize) {
    for c in scored {
        let agg = per_card.entry(c.card).or_default();
        if c.negated.is_some() {
            agg.negated_raw = agg.negated_raw.max(c.raw);
        } else {
            agg.free_raw = agg.free_raw.max(c.raw);
        }
        if c.selected {
            agg.keyword |= c.keyword;
            agg.selected_top |= c.top;
            agg.top_clauses += usize::from(c.top);
            let first = agg.selected.is_none();
            agg.selected = Some(agg.selected.map_or(c.offset, |o| o.min(c.offset)));
            if first || c.raw > agg.raw {
                agg.raw = c.raw;
                agg.confidence = confidence(c.raw);
                agg.evidence = c.evidence;
                agg.clause = clause;
                agg.topical = c.topical;
                agg.spans = c.spans.iter().map(|&(s, e, _)| (s, e)).collect();
                agg.anchor = Some(c.anchor);
            }
        } else if let Some(cue) = c.negated {
            if agg.selected.is_some() {
                // Selected in an earlier clause: the negation is kept for `rank` to weigh.
                agg.negated.get_or_insert(cue);
            } else {
                agg.negated = Some(cue);
                if agg.evidence.is_empty() {
                    agg.evidence = c.evidence;
                    agg.raw = agg.raw.max(c.raw);
                    agg.clause = clause;
                }
            }
        } else if agg.selected.is_none() && c.raw > agg.raw {
            agg.raw = c.raw;
            agg.confidence = confidence(c.raw);
            agg.evidence = c.evidence;
            agg.clause = clause;
            agg.topical = c.topical;
            agg.spans = c.spans.iter().map(|&(s, e, _)| (s, e)).collect();
        }
    }
}

/// Parts of a day and of a week, said alone ("下午", "this weekend"): when, not what.
static DAYPARTS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)上午|下午|中午|晚上|早上|傍晚|凌晨|今晚|明晚|明早|周末|礼拜天|昨天|昨晚|昨日|前天|(?-u:\b)(?:this |tomorrow |on )?(?:morning|afternoon|evening|tonight|weekend)s?(?-u:\b)|(?-u:\b)(?:yesterday|(?:last|tomorrow) night)(?-u:\b)",
    )
    .expect("the dayparts compile")
});

/// Byte spans of the dates and times `query` mentions ("周六下午", "tomorrow at 3pm").
fn date_time_spans(query: &str) -> Vec<(usize, usize)> {
    // Only the spans matter: any day serves as today.
    let today = chrono::NaiveDate::from_ymd_opt(2000, 1, 1).unwrap_or_default();
    let mut spans: Vec<(usize, usize)> = dates(query, today).into_iter().map(|d| (d.start, d.end)).collect();
    spans.extend(times(query).into_iter().map(|t| (t.start, t.end)));
    spans.extend(DAYPARTS.find_iter(query).map(|m| (m.start(), m.end())));
    spans
}

fn kind_weight(kind: TokKind) -> f32 {
    match kind {
        TokKind::Word => Q_WORD,
        TokKind::Bigram => Q_BIGRAM,
        TokKind::Concept => Q_CONCEPT,
        TokKind::Char => Q_CHAR,
    }
}

/// The calibrated confidence of a raw score.
pub fn confidence(raw: f32) -> f32 {
    if raw <= 0.0 {
        return 0.0;
    }
    1.0 / (1.0 + (-SLOPE * (raw - THETA)).exp())
}

fn round2(x: f32) -> f32 {
    (x * 100.0).round() / 100.0
}

/// Clause boundaries in normalized byte offsets.
/// The clauses of a normalized text: (start, end, whether a connective that adds a request
/// — 然后 / 顺便 / 另外 / 还有 / and / also / plus …, not 但是 / but — comes before or after it,
/// or the clause is worded as a request: "can someone …", "please …", 帮我 / 麻烦 …).
fn split_clauses(norm: &Normalized) -> Vec<(usize, usize, bool)> {
    static SPLIT: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(concat!(
            r"[，,。；;!！？?、\n]+|\.(?:\s|$)+|\s*(?:",
            adds_zh!(),
            r"|但是|不过|可是|而是)\s*|",
            r"(?-u:\b)(?:",
            adds_en!(),
            r"|but)(?-u:\b)"
        ))
        .expect("static regex")
    });
    let text = norm.text.as_str();
    let mut out = Vec::new();
    let mut start = 0;
    let mut adds = false;
    for m in SPLIT.find_iter(text) {
        // A thousands separator is no clause boundary ("30,000", "1,500元").
        let digit = |c: Option<char>| c.is_some_and(|c| c.is_ascii_digit());
        if m.as_str() == "," && digit(text[..m.start()].chars().next_back()) && digit(text[m.end()..].chars().next()) {
            continue;
        }
        // 还有 asking what is left ("书法课还有没有位置", "课时还有多少", "还有几天") joins nothing.
        let rest = &text[m.end()..];
        if m.as_str().trim() == "还有" && (rest.starts_with(['没', '几']) || rest.starts_with("多少")) {
            continue;
        }
        // A subject and an auxiliary cut off by a connective ("and I'll also need …") belong to
        // the clause that follows.
        let piece = &text[start..m.start()];
        if piece.chars().any(char::is_alphanumeric) {
            if function_words_only(piece) {
                continue;
            }
            out.push((start, m.start(), adds));
            adds = false;
        }
        if ADDS.is_match(m.as_str()) {
            // Both sides of "A, and also B" are requests of their own.
            adds = true;
            if let Some(last) = out.last_mut() {
                last.2 = true;
            }
        }
        start = m.end();
    }
    if start < text.len() && text[start..].chars().any(char::is_alphanumeric) {
        out.push((start, text.len(), adds));
    }
    // A clause worded as a request of its own is one too ("I land at 3pm on MU5101, can someone
    // pick me up?").
    static ASKS: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        // ASCII word boundaries: with Unicode ones the lazy DFA gives up on Chinese text.
        Regex::new(r"^\s*(?:(?:can|could|would) (?:you|someone|somebody|anyone)(?-u:\b)|please(?-u:\b)|帮我|麻烦|能不能帮|能帮我|可以帮我)")
            .expect("static regex")
    });
    for clause in &mut out {
        if ASKS.is_match(&text[clause.0..clause.1]) {
            clause.2 = true;
        }
    }
    out
}

/// The clauses (indices of `clauses`, [`split_clauses`]'s) that only give the reason for a
/// negation before what is asked instead: after a clause holding a negation cue (not a
/// retraction, not a contrast of [`CONTRASTS`]) and before a clause opening with just / only /
/// simply / all I need / 我就 / 我只 / 就 / 只 / 直接, a clause that asks nothing (no request
/// connective, no cue, no question mark, no word of asking: 帮 / 想 / 要 / 能 / 吗 / need / want /
/// can …). "货车不用了，朋友借了车，我只要买点打包材料": 借了车 tells why the van is not needed, it
/// asks for no van; "Forget the parking pass, we sold the car. I just need a door card…",
/// "不用帮我们留房间了，亲戚都自己订酒店，我就想问问…". Their words count for no card.
fn reasons_for_negation(norm: &Normalized, clauses: &[(usize, usize, bool)], cues: &[Cue]) -> Vec<usize> {
    // The twin of `meant_text`'s INSTEAD, read at a clause's start, so a subject may come first
    // ("我只要…", "I just need…"). Not merged: the wider pattern would change what the encoder
    // reads after a negation that negated no card.
    static INSTEAD: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(concat!(
            r"^\W*(?:(?:(?:i|we)(?:'d| would)? )?(?:just|only|simply)(?-u:\b)|all (?:i|we) (?:need|want)(?-u:\b)",
            r"|(?:我|我们)?(?:就|只|直接))"
        ))
        .expect("static regex")
    });
    static ASKS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(concat!(
            r"[?？]|(?-u:\b)(?:need|want|can|could|would|will|please|like to|how|what|when|where|which|help)(?-u:\b)",
            r"|帮|请|想|要|能|可以|吗|呢|怎么|什么|哪|多少|麻烦"
        ))
        .expect("static regex")
    });
    let text = norm.text.as_str();
    let negates = |&(s, e, _): &(usize, usize, bool)| {
        cues.iter().any(|c| !c.retracts && (s..e).contains(&c.start) && !CONTRASTS.contains(&c.text.as_str()))
    };
    let quiet = |&(s, e, requested): &(usize, usize, bool)| {
        let after = text[e..].trim_start();
        !requested
            && !cues.iter().any(|c| (s..e).contains(&c.start))
            && !ASKS.is_match(&text[s..e])
            && !after.starts_with(['?', '？'])
    };
    let mut out = Vec::new();
    let Some(first) = clauses.iter().position(negates) else { return out };
    let mut between = Vec::new();
    for (i, clause) in clauses.iter().enumerate().skip(first + 1) {
        if INSTEAD.is_match(&text[clause.0..clause.1]) {
            out.append(&mut between);
            break;
        }
        if negates(clause) {
            between.clear();
        } else if quiet(clause) {
            between.push(i);
        } else {
            break;
        }
    }
    out
}

/// Where the object of "不 + verb + 了" starts ("证件照不拍了，…": 证件照 is no longer wanted;
/// "不订木屋了，…": 木屋, after the verb): the start of its sentence part, when the verb is one of
/// asking for a service, the match ends the sentence part, a request follows, and an object is
/// named before the cue, after the verb, or by the verb itself (two characters or more between 不
/// and 了: "不寄养了，…", "不点外卖了，…"). `None`
/// otherwise: a fault reported alike ("连不上了", "不制冷了", "刷不开了") negates nothing.
fn no_longer_wanted(text: &str, cue_start: usize, cue_end: usize) -> Option<usize> {
    let verb = text[cue_start..cue_end].trim_start_matches('不').trim_end_matches('了');
    let wanted = verb.starts_with(|c: char| ASKED_VERBS.contains(c));
    let next = text[cue_end..].chars().next();
    let more = text[cue_end..].chars().skip(1).any(char::is_alphanumeric);
    let object = sentence_part_start(text, cue_start);
    let ends_part = matches!(next, Some('，' | ',' | '。' | '；' | ';' | '！' | '!'));
    let named = object < cue_start || verb.chars().count() > 1;
    (wanted && ends_part && more && named).then_some(object)
}

/// First characters of the Chinese verbs a request is made with (订, 查, 办, 改 …): "不 + such a
/// verb + 了" after a named object takes the request back.
const ASKED_VERBS: &str = "订约拍买查办做弄修换退寄送洗租剪染烫充报装看问取预搬学练考叫领申续交缴改印点";

/// Where the object of a Chinese negation starts when it comes before the cue, as Chinese puts
/// a topic first ("充电卡先不用充了，帮我…", "工资条不用查了，…": what is not wanted is named
/// before 不用): the start of the cue's clause, when the cue is one of not wanting (不用 / 不要 /
/// 不需要 / 不必 / 别 / 先不), all that follows it up to the clause's end is a verb of at most
/// four characters and 了 — or, without 了, a verb of asking of at most two characters
/// ("隐形眼镜的订阅先不改，…") —, and another clause follows with the request. `None` otherwise: a
/// report ("航班取消了") or a whole request ("这个订单不要了", which asks to cancel it) keeps the
/// cue's scope after it. A matter put aside the same way counts too: "车检的事不急，…",
/// "储值卡的事先不用管，…" (不急 / 不着急, or a not-wanting cue before 管 / 理 / 考虑 …), and so
/// does one dropped with 算了 ending its clause ("钓鱼的就算了，帮我看看日落那班船"), unless the
/// clause sets a condition ("没有票的话就算了", "要是太贵就算了": what follows is no request
/// instead of it).
fn topicalized_object(text: &str, cue_start: usize, cue_end: usize) -> Option<usize> {
    const NOT_WANTED: &[&str] = &["不用", "不要", "不需要", "不必", "别", "先不", "不急", "不着急", "算了"];
    const CONDITION: &[&str] = &["的话", "如果", "要是", "万一", "不行", "没有", "没", "不"];
    // Verbs that put a matter aside rather than ask for it: "储值卡的事先不用管，…".
    const SET_ASIDE: &[&str] = &["管", "理", "急", "着急", "考虑", "操心"];
    let cue = &text[cue_start..cue_end];
    if !NOT_WANTED.contains(&cue) {
        return None;
    }
    let rest = &text[cue_end..];
    let boundary = rest.find(PART_END)?;
    if !rest[boundary..].chars().any(char::is_alphanumeric) {
        return None;
    }
    let mut tail = rest[..boundary].trim_end();
    if cue == "先不" {
        // 先不 + 用 / 要 / 需要 / 必: the cue is 先不用 … ("先不用管").
        tail = ["需要", "用", "要", "必"].iter().find_map(|p| tail.strip_prefix(p)).unwrap_or(tail);
    }
    // "车检的事不急，…", "储值卡的事先不用管，…": the matter named before is put aside.
    if (tail.is_empty() && cue.ends_with('急')) || SET_ASIDE.contains(&tail.trim_end_matches('了')) {
        let start = sentence_part_start(text, cue_start);
        return (start < cue_start).then_some(start);
    }
    if cue == "算了" {
        let start = sentence_part_start(text, cue_start);
        let named = &text[start..cue_start];
        let dropped = matches!(tail, "" | "吧" | "啦");
        return (dropped && named.chars().any(char::is_alphanumeric) && !CONDITION.iter().any(|w| named.contains(w)))
            .then_some(start);
    }
    let asked = |v: &str| {
        v.chars().count() <= 2
            && v.starts_with(|c: char| ASKED_VERBS.contains(c))
            && !v.ends_with(['吗', '呢', '吧', '么', '嘛'])
    };
    // Without 了, not a question ("电池不用换？").
    let question = rest[boundary..].starts_with(['？', '?']);
    let verb = match tail.strip_suffix('了') {
        Some(verb) => verb,
        None if asked(tail) && !question => tail,
        None => return None,
    };
    if verb.chars().count() > 4 || !verb.chars().all(super::tokenize::is_han) {
        return None;
    }
    let start = sentence_part_start(text, cue_start);
    (start < cue_start).then_some(start)
}

/// What ends a Chinese sentence part: a comma, a full stop, a semicolon, an exclamation or
/// question mark, a line break.
const PART_END: &[char] = &['，', ',', '。', '；', ';', '！', '!', '？', '?', '\n'];

/// Byte offset where the sentence part holding byte `at` of `text` starts (after the last
/// [`PART_END`] before it).
fn sentence_part_start(text: &str, at: usize) -> usize {
    text[..at].rfind(PART_END).map_or(0, |i| i + text[i..].chars().next().map_or(1, char::len_utf8))
}

/// [`meant_text`], read from what is asked instead when clauses before it only gave a negation's
/// reasons ([`reasons_for_negation`], `reasons` of `clauses`): "Forget the parking pass, we sold
/// the car. I just need a door card…" is read from "I just need".
#[cfg(feature = "semantic")]
fn encoder_text<'q>(
    query: &'q str,
    norm: &Normalized,
    cues: &[Cue],
    negated: bool,
    clauses: &[(usize, usize, bool)],
    reasons: &[usize],
) -> std::borrow::Cow<'q, str> {
    let meant = meant_text(query, norm, cues, negated);
    let Some(asked) = reasons.last().and_then(|&last| clauses.get(last + 1)).map(|c| norm.orig(c.0)) else {
        return meant;
    };
    if query.ends_with(&*meant) && query.len() - meant.len() < asked {
        from_first_letter(&query[asked..]).into()
    } else {
        meant
    }
}

/// What the query asks for, as the sentence encoder reads it: after a retraction, what follows
/// it ("帮我约个摄影师……哦不对，…是想问喜帖怎么做"); when a cue negated a card (`negated`), the
/// query without the negated scopes ("不用查账单了，我是想问怎么给同事开个子账号": the encoder
/// would otherwise find the billing card nearest), when what is asked instead follows the last
/// negated scope (at least [`MEANT_MIN`] letters or CJK characters). A cue that negated no card
/// cuts too when what follows opens with just / only / instead / rather / simply / 就 / 只 / 直接
/// ("I don't want to buy one outright, just rent a cello…").
#[cfg(feature = "semantic")]
fn meant_text<'q>(query: &'q str, norm: &Normalized, cues: &[Cue], negated: bool) -> std::borrow::Cow<'q, str> {
    let from = cues.iter().filter(|c| c.retracts).map(|c| c.reach(norm).1).max().unwrap_or(0);
    let rest = &query[from..];
    let mut cut: Vec<(usize, usize)> = cues
        .iter()
        .filter(|c| !c.retracts && norm.orig(c.start) >= from)
        // A Chinese object named before its cue may reach back before a retraction: the cut
        // starts where what was meant starts.
        .map(|c| {
            let (s, e) = c.reach(norm);
            (s.saturating_sub(from), e - from)
        })
        .map(|(s, e)| to_pause(rest, s, e))
        .collect();
    cut.sort_unstable();
    let at = cut.iter().fold(0, |at, &(_, e)| at.max(e)).min(rest.len());
    // What is asked instead follows the negation ("不用 X 了，Y", "never mind X, Y"); a negation
    // that ends the query ("…, I don't want a surprise when I get home") is part of the request.
    let after = &rest[at..];
    // A negation that took back no card counts when something else is asked instead ("I don't
    // want to buy one outright, just rent a cello…": the purchase card was met on "rent").
    static INSTEAD: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^\W*(?:(?:just|only|instead|rather|simply)(?-u:\b)|就|只|直接)").expect("static regex")
    });
    let instead = || INSTEAD.is_match(&after.to_lowercase());
    // "…I meant the sunset sightseeing boat, not fishing": a contrast after a pause that ends the
    // query takes back what it names; what came before it is what is asked.
    let contrast = negated
        && after.chars().filter(|c| c.is_alphanumeric()).count() < MEANT_MIN
        && cues.iter().filter(|c| !c.retracts && norm.orig(c.start) >= from).any(|c| {
            let (s, e) = c.reach(norm);
            let before = query[from..norm.orig(c.start)].trim_end();
            CONTRASTS.contains(&c.text.as_str())
                && to_pause(rest, s.saturating_sub(from), e - from).1 >= at
                && before.ends_with([',', '，', '—', ';', '；'])
                && before.chars().filter(|c| c.is_alphanumeric()).count() >= MEANT_MIN
        });
    if cut.is_empty()
        || (!negated && !instead())
        || (!contrast && after.chars().filter(|c| c.is_alphanumeric()).count() < MEANT_MIN)
    {
        return from_first_letter(rest).into();
    }
    let mut kept = String::with_capacity(rest.len());
    let mut at = 0;
    for (s, e) in cut {
        if s > at {
            kept.push_str(&rest[at..s]);
        }
        at = at.max(e);
    }
    kept.push_str(after);
    from_first_letter(&kept).to_string().into()
}

/// The negation cues that set what they name against what came before them ("…, not fishing").
const CONTRASTS: &[&str] = &["not", "instead of", "rather than", "而不是", "不是"];

/// A cue's stretch `[s, e)` of `text` as read: an English cue's scope is a window of bytes, so it
/// ends with the word it ends in, and a pause after the cue (, ; — ， ；) ends it ("instead of
/// booking a viewing, I actually need …").
fn to_pause(text: &str, s: usize, e: usize) -> (usize, usize) {
    let inside = text[..e].chars().next_back().is_some_and(|c| c.is_ascii_alphanumeric());
    let e = if inside { e + text[e..].find(|c: char| !c.is_ascii_alphanumeric()).unwrap_or(text.len() - e) } else { e };
    (s, text[s..e].find([',', ';', '—', '，', '；']).map_or(e, |p| s + p))
}

/// A negation in a text: its cue and the stretch it governs (byte ranges of the text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Negation {
    /// The cue (不用, "don't", "no need for" …).
    pub cue: std::ops::Range<usize>,
    /// What it governs: from the cue (or a Chinese object named before it: 宽带先不装了) to the
    /// end of its scope.
    pub scope: std::ops::Range<usize>,
}

/// The negations of `text`: each negation cue (不用 / 不要 / 别 / don't / no need for / not …,
/// the recognizer's negation rules of docs/planning.md) with its scope, read as the encoder reads
/// it (an English scope ends with the word it ends in, or at a pause). Retractions are left out:
/// they take back a request rather than negate words. Used to tell "不用转人工" or "I don't need
/// a human" from a request for a human.
pub fn negations(text: &str) -> Vec<Negation> {
    let norm = Normalized::new(text);
    find_cues(&norm)
        .iter()
        .filter(|c| !c.retracts)
        .map(|c| {
            let cue = norm.orig(c.start)..norm.orig(c.start + c.text.len());
            let (s, e) = c.reach(&norm);
            let (s, e) = to_pause(text, s, e.min(text.len()));
            Negation { cue, scope: s..e }
        })
        .collect()
}

/// Whether `clause` of `query` only reports something done ("课都学完了考试也过了，证书在哪领",
/// "房子价格谈妥了，…", "We've already paid the deposit, …"): a completion (已 / 完了 / 过了 /
/// 好了 / 妥了; already, "I've / we've paid / booked / finished …"), with no request, question or
/// trouble in it (帮 / 想 / 能 / 吗 / 没 / 不 …; can / need / how / not / still …) and no question
/// mark after it. Such a clause is the story of the request, not one. English past events ("my
/// pass expired yesterday") are no completion here: they are usually the trouble asked about.
#[cfg(feature = "semantic")]
fn reports_done(query: &str, clause: Clause) -> bool {
    // Narrower than `meant_from`'s DONE, which reads only the words after a retraction: a whole
    // clause needs a completed action (妥了, "we've paid"), not a bare "I've" or a final 了.
    static DONE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(concat!(
            r"已|[完过好妥]了|",
            r"(?-u:\b)(?:already|(?:i|we)(?:'ve| have| had) (?:got|paid|bought|done|made|taken|passed|finished|booked|signed))(?-u:\b)"
        ))
        .expect("static regex")
    });
    let text = query[clause.start..clause.end].to_lowercase();
    !asks_or_troubles(query, clause) && DONE.is_match(&text)
}

/// Whether `clause` of `query` only sets the scene: it neither asks nor tells of trouble
/// ([`asks_or_troubles`]), and an English one opens with a subject ("We're moving…", "Our last
/// shipment arrived…"), not with a verb: an imperative ("Submit my hotel receipts") is a request
/// without a request word.
#[cfg(feature = "semantic")]
fn only_tells(query: &str, clause: Clause) -> bool {
    static SUBJECT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:i|we|you|my|our|your|it|its|the|there|he|she|they|his|her|their|this|that|these|those|last|yesterday|a|an|someone|somebody|nobody|mom|mum|dad)(?-u:\b)")
            .expect("static regex")
    });
    let text = from_first_letter(&query[clause.start..clause.end]).to_lowercase();
    let han = text.chars().next().is_some_and(super::tokenize::is_han);
    !asks_or_troubles(query, clause) && (han || SUBJECT.is_match(&text))
}

/// Whether `clause` of `query` asks, requests or tells of trouble: a question mark after it, or
/// a request, question or trouble word in it (the same idea as the praise rule's ASKS_OR_FAULT,
/// `planner::intent::thanks_praise_only`, with words of its own: is / did / still / needs /
/// like / 还 / 该). A clause without any tells (a story's "We're moving to Shanghai in July").
#[cfg(feature = "semantic")]
fn asks_or_troubles(query: &str, clause: Clause) -> bool {
    static ASKS_OR_TROUBLE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(concat!(
            r"[吗呢么帮请想要能可怎哪几没不还该]|什么|多少|",
            r"(?-u:\b)(?:can|could|would|will|please|need|want|how|what|when|where|why|which|who|is|are|do|does|did|should|help|not|never|no|still|yet|but|needs|wants|like|looking for|hoping)(?-u:\b)|n't"
        ))
        .expect("static regex")
    });
    let text = query[clause.start..clause.end].to_lowercase();
    question_mark_after(query, clause) || ASKS_OR_TROUBLE.is_match(&text)
}

/// Whether a question mark (? or ？) follows `clause` of `query`, spaces aside.
#[cfg(feature = "semantic")]
fn question_mark_after(query: &str, clause: Clause) -> bool {
    query[clause.end..].trim_start().starts_with(['?', '？'])
}

/// Per clause of `clauses` ([`split_clauses`]'s, in `norm`'s offsets): whether it is a request
/// of its own and whether it is a question sentence of its own ([`asks_own_question`]), for
/// `Recognizer::joined_clauses_by_meaning`. With no card selected on a clause's words
/// (`any_selected` false: the card planned comes from the whole query), only a clause beside a
/// gap that [`opens_request`] is a request of its own, and no question sentence counts.
#[cfg(feature = "semantic")]
fn request_flags(
    query: &str,
    norm: &Normalized,
    clauses: &[(usize, usize, bool)],
    any_selected: bool,
) -> Vec<(bool, bool)> {
    let opens = |i: usize| i > 0 && i < clauses.len() && opens_request(&norm.text, clauses[i - 1].1, clauses[i].0);
    (0..clauses.len())
        .map(|i| {
            if any_selected {
                let clause = Clause { start: norm.orig(clauses[i].0), end: norm.orig(clauses[i].1) };
                (clauses[i].2, asks_own_question(query, clause))
            } else {
                (opens(i) || opens(i + 1), false)
            }
        })
        .collect()
}

/// Whether the gap `text[from..to]` (normalized) between two clauses opens a request of its own:
/// it starts with the end of a clause (，。；？！ , . ; ? !, not a list's 、) and holds a connective
/// of [`ALSO`] ("…，顺便帮他报每周六下午的课", "…？还有剩下的几天假…", "…. Also I think I dropped my
/// car keys"). Within a sentence 还有 / 顺便 often add nothing ("附近还有哪能停", "那一趟还有带窗户的
/// 房间吗", "逛青铜器那几个展厅、顺便给我们讲讲").
#[cfg(feature = "semantic")]
fn opens_request(text: &str, from: usize, to: usize) -> bool {
    let gap = text[from..to].trim_start();
    gap.starts_with(['，', ',', '。', '；', ';', '？', '?', '！', '!', '.']) && ALSO.is_match(gap)
}

/// How far the encoder's nearest card must lead the next for a question sentence no connective
/// joins ([`asks_own_question`]) to add its card by meaning (cosine). A story's questions are
/// mostly about the request already found ("…最早几点能排上进炉？家里人能不能在旁边送最后一眼",
/// 0.12 ahead); a second request asked as a sentence of its own leads clearly ("旧车置换能抵多少钱？
/// 剩下的能不能做贷款", 0.25). Fitted on the sixty-seven sets of the thirteenth session: 0.15 and
/// 0.2 gave the same +2 −0, 0.0 gave +2 −3.
#[cfg(feature = "semantic")]
const QUESTION_LEAD: f32 = 0.15;

/// Whether `clause` of `query` is a question sentence of its own: it follows the end of a
/// sentence (. ? ! 。 ？ ！) and has a question mark after it, opens with an English question word
/// ("Can I pay for it with my member points?", "what are the fees…"), or, in Chinese, ends in 吗 /
/// 呢 or asks 能不能 / 可不可以 / 多少 / 有没有 / 怎么 ("旧车置换能抵多少钱？剩下的能不能做贷款").
#[cfg(feature = "semantic")]
fn asks_own_question(query: &str, clause: Clause) -> bool {
    static OPENS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(concat!(
            r"^(?:can|could|would|will|do|does|did|is|are|was|were|should|have|has|what|what's|how|when|where|which|who|why|any)(?-u:\b)|",
            r"[吗呢]$|能不能|可不可以|多少|有没有|怎么"
        ))
        .expect("static regex")
    });
    let text = from_first_letter(&query[clause.start..clause.end]).trim_end().to_lowercase();
    let before = query[..clause.start].trim_end();
    let sentence = before.ends_with(['?', '？', '.', '。', '!', '！']);
    sentence && (question_mark_after(query, clause) || OPENS.is_match(&text))
}

/// `text` from its first letter, digit or CJK character on (the encoder reads no leading
/// punctuation).
#[cfg(feature = "semantic")]
fn from_first_letter(text: &str) -> &str {
    text.trim_start_matches(|c: char| !c.is_alphanumeric())
}

/// The largest char boundary of `text` at or under `at` (bytes).
fn floor_char_boundary(text: &str, at: usize) -> usize {
    let mut cut = text.len().min(at);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    cut
}

/// See [`meant_text`].
#[cfg(feature = "semantic")]
const MEANT_MIN: usize = 6;

/// A negation or correction cue with its scope (normalized byte offsets).
struct Cue {
    text: String,
    start: usize,
    scope: (usize, usize),
    /// A retraction ("…… 不对，", "… actually scratch that, …"): its scope is what came
    /// before it in its sentence, so it governs clauses other than its own.
    retracts: bool,
}

impl Cue {
    /// What the cue and its scope cover, as byte offsets of the original text: from the cue (or a
    /// Chinese object named before it) to the end of its scope (at least the cue's own end).
    fn reach(&self, norm: &Normalized) -> (usize, usize) {
        (norm.orig(self.start.min(self.scope.0)), norm.orig(self.scope.1.max(self.start + self.text.len())))
    }

    /// Whether the cue governs evidence of the clause `[start, end)` (query byte offsets): a
    /// cue of the clause, or a retraction after it.
    fn governs(&self, norm: &Normalized, start: usize, end: usize) -> bool {
        let at = norm.orig(self.start);
        (start..end).contains(&at)
            || (self.retracts && norm.orig(self.scope.0) < end && norm.orig(self.scope.1).max(at) > start)
    }
}

/// Whether 取消 at `[start, end)` of `text` (normalized) asks to cancel something booked rather
/// than takes back a request: a word of asking (要 / 想 / 帮 / 麻烦 / 请 / 能不能 / 可以 / 先 / 得) or
/// 把 among the six characters before it in its sentence part ("两间房要取消一间", "想把这单取消掉",
/// "约的明天看病先取消", "帮我取消预约"), or 掉 after it. "取消天气查询，帮我订酒店" keeps its cue.
fn cancel_requested(text: &str, start: usize, end: usize) -> bool {
    const ASKING: &[&str] = &["要", "想", "帮", "麻烦", "请", "能不能", "可以", "把", "先", "得"];
    let part = &text[sentence_part_start(text, start)..start];
    let near = &part[part.char_indices().rev().nth(5).map_or(0, |(i, _)| i)..];
    ASKING.iter().any(|w| near.contains(w)) || text[end..].starts_with('掉')
}

/// The negation cues of [`find_cues`]: (regex, scope window in bytes of normalized text; 0 = to
/// the end of the sentence part).
static CUES: std::sync::LazyLock<Vec<(Regex, usize)>> = std::sync::LazyLock::new(|| {
    vec![
        (
            Regex::new(r"不用|不要|不需要|不必|别|取消|算了|不想|不是|不打算|先不|不担心|不在乎|不关心|不着急|不急")
                .expect("static regex"),
            0,
        ),
        (
            Regex::new(concat!(
                r"(?-u:\b)(?:don't|dont|do not|no need to|no need for|no longer|never mind|forget about|forget the|scratch the|",
                r"no worries about|not worried about|",
                r"(?:won't|wont|will not) (?:need|be needing|require|want|be wanting|be using|be taking)|",
                r"skip|(?:didn't|did not|don't|do not) mean|(?:wasn't|was not|i'm not|not) (?:asking|looking) for|",
                r"(?:wasn't|was not|i'm not|not) asking about)(?-u:\b)"
            ))
            .expect("static regex"),
            48,
        ),
        (Regex::new(r"(?-u:\b)(?:instead of|rather than)(?-u:\b)").expect("static regex"), 48),
        (Regex::new(r"(?-u:\b)not(?-u:\b)").expect("static regex"), 16),
        (Regex::new(r"而不是").expect("static regex"), 0),
        // "证件照不拍了，…": what is no longer wanted is named before 不 + verb + 了, or
        // between them ("不订木屋了，…").
        (Regex::new(r"不[\p{Han}--了]{1,6}了").expect("static regex"), 0),
    ]
});

fn find_cues(norm: &Normalized) -> Vec<Cue> {
    // What introduces an instruction someone gave the user, reported, right before a cue (an
    // optional time word or adverb between): 让我 / 叫我 / 要我 / 要求我 / 通知我 / 告诉我 / 嘱咐我 /
    // 提醒我 (or 我们), "told me (to)", "asked us (to)". Not the user's own instruction to us ("我
    // 让你别订酒店", "I told you not to book it"), nor one about a third party ("让师傅别来了").
    static REPORTED: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(concat!(
            r"(?:让|叫|要|要求|通知|告诉|嘱咐|提醒)(?:我们|我|咱们|咱)",
            r"(?:明天|今天|后天|以后|暂时|先|再|千万|也|都)?\s*$",
            r"|(?-u:\b)(?:told|asked|warned|tells|telling) (?:me|us)(?: to)?\s*$"
        ))
        .expect("static regex")
    });
    // A contrast ends a cue's scope: "别订酒店只看看北京天气", "I don't want a group tour, I'd rather …".
    static CONTRAST: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(r"只|而是|改成|改为|换成|还是|就|但|(?-u:\b)(?:just|only|but|rather|prefer)(?-u:\b)")
            .expect("static regex")
    });
    let text = norm.text.as_str();
    let mut out = Vec::new();
    for (re, window) in CUES.iter() {
        for m in re.find_iter(text) {
            let before = text[..m.start()].chars().next_back();
            let after = text[m.end()..].chars().next();
            let second = m.as_str().chars().nth(1);
            // 是不是 / 要不要 / 用不用: a question, not a negation.
            if m.as_str().starts_with('不') && before.is_some() && before == second {
                continue;
            }
            // Someone else's instruction, reported ("公司…让我明天别来了", "the doctor told me not
            // to eat before the scan"): not the user's negation of a request.
            if REPORTED.is_match(&text[..m.start()]) {
                continue;
            }
            // "Did I pass or not?", "whether or not …": the other side of a question, no negation.
            if m.as_str() == "not" && text[..m.start()].ends_with("or ") {
                continue;
            }
            if m.as_str() == "取消" && cancel_requested(text, m.start(), m.end()) {
                continue;
            }
            if m.as_str() == "别"
                && (before.is_some_and(|c| "特区分告级类识性差个派辨鉴离道".contains(c))
                    || after.is_some_and(|c| "的人处家".contains(c)))
            {
                continue;
            }
            // A Chinese cue governs to the end of its sentence part ("不是要约团课，是要找教练":
            // the comma ends it; a list's 、 does not).
            let mut end = if *window == 0 {
                text[m.end()..].find(PART_END).map_or(text.len(), |i| m.end() + i)
            } else {
                (m.end() + window).min(text.len())
            };
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            if let Some(c) = CONTRAST.find(&text[m.end()..end]) {
                end = m.end() + c.start();
            }
            let mut cue = m.as_str();
            let start = if m.as_str().starts_with('不') && m.as_str().ends_with('了') {
                let Some(object) = no_longer_wanted(text, m.start(), m.end()) else { continue };
                end = m.end();
                // "不订木屋了": the object follows the verb; the cue is 不 and the verb's first
                // character, so that the object's words are no part of the cue.
                if cue.chars().count() > 4 {
                    cue = &cue[..cue.char_indices().nth(2).map_or(cue.len(), |(i, _)| i)];
                } else if cue.chars().count() == 4 {
                    // "不寄养了，…": the verb names what is no longer wanted; the cue is 不.
                    cue = "不";
                }
                object
            } else {
                topicalized_object(text, m.start(), m.end()).unwrap_or(m.end())
            };
            // "never mind, …" / "forget it." govern what came before, not what follows.
            if *window > 0 && text[m.end()..].trim_start().starts_with([',', '.', ';', '!', '—', '-']) {
                end = m.end();
            }
            out.push(Cue { text: cue.to_string(), start: m.start(), scope: (start, end), retracts: false });
        }
    }
    out.extend(retractions(text));
    out.extend(denials(text));
    out
}

/// A denial the next sentence part sets straight: "车没出事故，就是开着开着没电了" (no accident,
/// it only broke down), "It wasn't an accident, it just won't start". The cue (没 / 没有,
/// or a verb with n't) governs the rest of its sentence part, when the part after it opens with
/// a word of "only" about the thing itself (就是 / 只是 / 而是 / 只不过, not before 想 / 问 / 要;
/// "(it) just / only / simply", not after I or we): without one, 没 and n't report the trouble
/// itself ("快递还没到", "the heater isn't working"), and "就是想问问" / "I just want to know"
/// only open the request.
fn denials(text: &str) -> Vec<Cue> {
    static DENY: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(
            r"没有?|(?-u:\b)(?:wasn't|isn't|weren't|aren't|didn't|hasn't|haven't|was not|is not|did not)(?-u:\b)",
        )
        .expect("static regex")
    });
    static ONLY: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(concat!(
            r"^\s*(?:(?:就是|只是|而是|只不过)[^想问要]|",
            r"(?:(?:it|it's|its|it was|they|they're|that's|this)\s+)?(?:just|only|simply)(?-u:\b))"
        ))
        .expect("static regex")
    });
    let mut out = Vec::new();
    for m in DENY.find_iter(text) {
        // 有没有 asks ("你们有没有夜间急诊，就是晚上十点以后的"): no denial.
        if m.as_str().starts_with('没') && text[..m.start()].ends_with('有') {
            continue;
        }
        let Some(end) = text[m.end()..].find(PART_END).map(|i| m.end() + i) else { continue };
        let next = text[end..].trim_start_matches(PART_END);
        if !ONLY.is_match(next) || !text[m.end()..end].chars().any(char::is_alphanumeric) {
            continue;
        }
        out.push(Cue { text: m.as_str().to_string(), start: m.start(), scope: (m.end(), end), retracts: false });
    }
    out
}

/// Retractions: the user takes back what they just said and says what they meant instead
/// ("帮我看一下租房合同……不对，其实是…", "report a broken scooter - actually no wait, …",
/// "…… 算了不是这个，我是想问…", "……算了不练了，直接…", "……算了那天有事，…" (after an ellipsis, whatever
/// follows), "哦不对，打错了，…", "not just tickets, I meant the package"). The scope is the
/// sentence before the cue (back to the last 。！？; or ". " ahead of it, an ellipsis's dots not
/// counted); a cue with nothing after it is no retraction (a bare "算了" is the planner's
/// cancel). The Chinese cues must stand as an interjection, so a complaint that something "is
/// wrong" ("账单金额不对", "不对劲") retracts nothing.
fn retractions(text: &str) -> Vec<Cue> {
    static RETRACT: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(concat!(
            r"(?:^|[，,。.…！!；;、\s~～—-]|哦|噢|喔|啊|呃|嗯)(不对(?:不对)?|(?:我|刚才|刚)?[说打写发]错了|我搞错了|算了)",
            r"(?:[，,。.…！!；;\s~～—-]|不是|不[\p{Han}]{1,3}了|我|是|还是|其实|$)",
            r"|(?-u:\b)(actually,? no(?:[,.!;]| wait| sorry)|no,? wait|wait,? no(?-u:\b)|scratch that|",
            r"forget (?:that|it)(?-u:\b)|never ?mind(?: that)?[,.;!—-]|on second thought|",
            r"(?:sorry|oops|my bad|no)(?:,? no)?,? i (?:actually )?mean(?:t)?(?-u:\b)|i meant to say|i (?:actually |really )?meant)",
            r"|(?:[，,。…！!；;\s~～—-]|哦|噢|喔|啊|呃|嗯)(不是(?:不是)?)[，,。…！!；;~～—-]",
            r"|…(算了|不对)"
        ))
        .expect("static regex")
    });
    let mut out = Vec::new();
    let mut floor = 0;
    for c in RETRACT.captures_iter(text) {
        let Some(m) = c.get(1).or_else(|| c.get(2)).or_else(|| c.get(3)).or_else(|| c.get(4)) else { continue };
        let before = text[..m.start()].trim_end_matches(|c: char| !c.is_alphanumeric());
        if before.len() <= floor || !text[m.end()..].chars().any(char::is_alphanumeric) {
            continue;
        }
        // "I meant to book it yesterday" says what was intended, not what was meant.
        if m.as_str().starts_with("i ") && m.as_str().ends_with("meant") && text[m.end()..].starts_with(" to ") {
            continue;
        }
        let from = before
            .rfind(['。', '！', '？', '!', '?', '；', ';', '\n'])
            .map(|i| i + before[i..].chars().next().map_or(1, char::len_utf8))
            .into_iter()
            .chain(before.match_indices(". ").filter(|(i, _)| !before[..*i].ends_with('.')).last().map(|(i, _)| i + 2))
            .max()
            .unwrap_or(0)
            .max(floor);
        let cue = m.as_str().trim_end_matches([',', '.', ';', '!', '—', '-']).to_string();
        out.push(Cue {
            text: cue,
            start: m.start(),
            scope: (from, meant_from(text, m.end()).unwrap_or(m.start())),
            retracts: true,
        });
        floor = m.end();
    }
    out
}

/// Where what a retraction ending at `end` (a byte offset of `text`) means starts, when a
/// clause of the same sentence after it says so ("…哦不对，种子上个月就买过了，我是要给棉花报保险",
/// "— wait, no, I already booked one, I need to move it"): that clause, when the words between
/// say something is done or had already (已经, 过了, 好了, already, we've …): they are why the
/// retraction was made, and name what was taken back. `None` otherwise (what follows the cue is
/// meant).
fn meant_from(text: &str, end: usize) -> Option<usize> {
    static MEANT: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(concat!(
            r"[，,；;—-]\s*(?:但|不过|but\s+)?(?:(?:我|其实|主要)?(?:是想|是要)|我想问的是|我要的是|真正(?:想|要)|",
            r"(?:what )?i (?:really |actually |just )?(?:need|want|meant)(?-u:\b)|the real (?:problem|issue|question|thing) is(?-u:\b))"
        ))
        .expect("static regex")
    });
    let sentence = text[end..].find(['。', '！', '？', '!', '?', '\n']).map_or(text.len(), |i| end + i);
    // The words between say it is done or had already: 已经 / 过了 / 好了 / already / we've …
    // (not a request the clause after elaborates: "…不对，查北京天气，我是想知道冷不冷").
    static DONE: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(concat!(
            r"已|过了|好了|完了|了[\s,，]*$|",
            r"(?-u:\b)(?:already|(?:i|we)(?:'ve| have)|(?:i|we) (?:got|had|bought|booked|paid)|it (?:came|arrived|works))(?-u:\b)"
        ))
        .expect("static regex")
    });
    let m = MEANT.find(&text[end..sentence])?;
    let between = &text[end..end + m.start()];
    DONE.is_match(between).then_some(end + m.start())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negations_leave_out_reported_instructions() {
        let cues = |t: &str| negations(t).into_iter().map(|n| t[n.cue].to_string()).collect::<Vec<_>>();
        assert_eq!(cues("别订酒店，只看看北京天气"), ["别"]);
        assert_eq!(cues("I don't need a hotel"), ["don't"]);
        // Someone else's instruction, reported: not the user's negation.
        assert!(cues("公司突然说我试用期不合格让我明天别来了").is_empty());
        assert!(cues("医生叫我千万不要吃辣").is_empty());
        assert!(cues("the doctor told me not to eat before the scan").is_empty());
        // The user's own instruction to us is a negation.
        assert_eq!(cues("我让你别订酒店了，查下天气"), ["别"]);
        assert_eq!(cues("I told you not to book the hotel"), ["not"]);
        // Retractions are no negations of words.
        assert!(cues("帮我订酒店……不对，查天气").is_empty());
        // The other side of a question is none either.
        assert!(cues("I can't find my score anywhere. Did I pass or not?").is_empty());
        assert!(cues("Tell me whether or not the pool is open").is_empty());
        assert_eq!(cues("Is it open or not? I do not want to drive there for nothing"), ["do not", "not"]);
        // Asking to cancel something booked takes back no request.
        assert!(cues("想把这单取消掉，钱多久能退回来").is_empty());
        assert!(cues("原定的两间房要取消一间").is_empty());
        assert!(cues("原来约的明天看病先取消").is_empty());
        assert_eq!(cues("取消天气查询，帮我订酒店"), ["取消"]);
    }

    /// The text each negation of `t` governs.
    fn scopes(t: &str) -> Vec<String> {
        negations(t).into_iter().map(|n| t[n.scope].to_string()).collect()
    }

    #[test]
    fn a_denial_set_straight_negates_what_it_denies() {
        assert_eq!(scopes("车没出事故，就是开着开着没电了，现在打不着火"), ["没出事故"]);
        assert_eq!(scopes("The car wasn't in an accident, it just won't start"), ["wasn't in an accident"]);
        // Without "only" after it, 没 and n't report the trouble itself.
        assert!(scopes("快递三天了还没到，帮我查一下").is_empty());
        assert!(scopes("The heater isn't working, can you send someone?").is_empty());
        // Nor when "only" opens what the user wants: "just wanting to ask" denies nothing.
        assert!(scopes("外卖没送到，就是想问问怎么回事").is_empty());
        assert!(scopes("My parcel hasn't arrived, I just want to know where it is").is_empty());
        // 有没有 asks, whatever follows.
        assert!(scopes("你们有没有夜间急诊，就是晚上十点以后的").is_empty());
    }

    #[test]
    fn a_preference_or_a_plain_no_sets_a_request_straight() {
        // "rather" / "prefer" end what a negation governs.
        let scope = scopes("I don't want a group tour with strangers, I'd rather you design a private trip");
        assert_eq!(scope, ["don't want a group tour with strangers"]);
        assert_eq!(scopes("Don't book the ferry. I'd prefer a flight"), ["Don't book the ferry. I'd "]);
        // "sorry, no, I mean" / "no, I mean" take back what came before.
        let taken_back = |t: &str| {
            let text = Normalized::new(t).text;
            retractions(&text).into_iter().map(|c| text[c.scope.0..c.scope.1].to_string()).collect::<Vec<_>>()
        };
        assert_eq!(
            taken_back("I'd like to rent an upright, sorry, no, I mean I want to buy one"),
            ["i'd like to rent an upright, "]
        );
        assert_eq!(taken_back("Book a tuning visit. No, I mean a repair"), ["book a tuning visit. "]);
        assert!(taken_back("No idea what I mean to do").is_empty());
    }

    #[test]
    fn a_matter_dropped_or_no_longer_needed_is_negated() {
        // 算了 ending its clause drops the matter named before it ...
        assert_eq!(scopes("钓鱼的就算了，帮我看看日落那班船几点开"), ["钓鱼的就算了"]);
        // ... unless the clause sets a condition.
        assert_eq!(scopes("没有票的话就算了，帮我看看日落那班船几点开"), ["算了"]);
        assert_eq!(scopes("要是太贵就算了吧，帮我看看别的"), ["算了吧"]);
        // "won't need" and the like negate what follows.
        assert_eq!(
            scopes("We won't need the holiday care after all. Just tell me the fees"),
            ["won't need the holiday care after all. "]
        );
        // A fault reported with "won't" negates nothing.
        assert!(scopes("The door won't open, can someone come?").is_empty());
    }

    #[test]
    fn clauses_that_only_give_a_negations_reason_ask_for_nothing() {
        let reasons = |q: &str| -> Vec<String> {
            let norm = Normalized::new(q);
            let clauses = split_clauses(&norm);
            let found = reasons_for_negation(&norm, &clauses, &find_cues(&norm));
            found.into_iter().map(|i| q[norm.orig(clauses[i].0)..norm.orig(clauses[i].1)].trim().to_string()).collect()
        };
        assert_eq!(reasons("货车不用了，朋友借了车，我只要买点打包材料"), ["朋友借了车"]);
        assert_eq!(
            reasons("Forget the parking pass, we sold the car. I just need a door card set up"),
            ["we sold the car"]
        );
        assert_eq!(
            reasons("不用帮我们留房间了，亲戚都自己订酒店，我就想问问每桌的菜能不能加一道龙虾"),
            ["亲戚都自己订酒店"]
        );
        // A clause that asks something is no reason; nor is one with no negation before it, or
        // with no "just / 就 / 只" request after it.
        assert!(reasons("不用订酒店了，帮我看看机票，我就想早点到").is_empty());
        assert!(reasons("Book the hotel, we sold the car. I just need a door card").is_empty());
        assert!(reasons("不用订酒店了，朋友家有地方住，帮我查一下明天的天气").is_empty());
        // Through the recognizer: 酒店 in the reason counts for no card.
        let r = recognizer(CARDS);
        assert_eq!(ids(&r.recognize("酒店不用订了，朋友家附近有酒店，我只想问问北京明天天气")), ["weather"]);
    }

    const CARDS: &str = r#"
- id: hotel
  name: 酒店服务
  description: 查询和预订酒店
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  keywords: [酒店, hotel]
  examples: ["帮我订北京的酒店"]
  required_semantic_keys:
    - { key: city, description: 入住城市, extract: { values_from: cities } }
- id: weather
  name: 天气查询
  description: 查询城市的天气预报
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  keywords: [天气, weather]
  examples: ["北京明天天气怎么样"]
  required_semantic_keys:
    - { key: city, description: 城市, extract: { values_from: cities } }
- id: flight
  name: 航班动态
  description: 查询航班状态
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  keywords: [航班, flight]
  required_semantic_keys:
    - { key: flight_no, description: 航班号, extract: { pattern: '([A-Za-z]{2}\d{3,4})' } }
"#;

    fn recognizer(yaml: &str) -> Recognizer {
        let specs: Vec<CapabilityCardSpec> = serde_yaml_ng::from_str(yaml).unwrap();
        let refs: Vec<&CapabilityCardSpec> = specs.iter().collect();
        let lists = BTreeMap::from([(
            "cities".to_string(),
            vec!["北京".to_string(), "上海".to_string(), "Shanghai".to_string()],
        )]);
        Recognizer::new(&refs, &lists)
    }

    /// A city hotline's cards: reports described, not named, are for the semantic stage.
    #[cfg(feature = "semantic")]
    const HOTLINE_CARDS: &str = r#"
- id: noise
  name: { zh: 噪音投诉, en: Noise complaints }
  description: { zh: "受理施工、娱乐场所、邻居等噪音扰民的投诉。", en: "Takes complaints about noise from building work, bars and neighbours." }
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  keywords: [噪音投诉]
  examples: ["晚上装修太吵了", "楼下酒吧的音乐放到凌晨两点", "The building site next door starts hammering at 6am"]
- id: parking
  name: { zh: 违章停车举报, en: Illegal parking reports }
  description: { zh: "举报占用消防通道、堵住车库出口等违章停车。", en: "Reports cars parked illegally, blocking fire lanes or garage exits." }
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  keywords: [违停]
  examples: ["有车堵在小区消防通道上", "Someone parked on the sidewalk outside the school again"]
- id: streetlight
  name: 路灯报修
  description: 报修不亮、闪烁或损坏的路灯。
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  keywords: [路灯]
  examples: ["小区门口的路灯坏了", "The streetlight on Elm Street keeps flickering"]
"#;

    fn semantic(rec: &Recognition, id: &str) -> bool {
        rec.score(id).is_some_and(|c| c.evidence.iter().any(|e| matches!(e, Evidence::Semantic { .. })))
    }

    /// With no word in common with any card, a report described instead of named is planned by
    /// meaning, or offered when two cards are about as close; without the stage nothing would be.
    #[cfg(feature = "semantic")]
    #[test]
    fn the_semantic_stage_plans_what_words_miss() {
        let r = recognizer(HOTLINE_CARDS);
        // No word in common with the noise card ("叮叮当当" is a sound, not "noise").
        let rec = r.recognize("隔壁从早到晚叮叮当当的");
        assert_eq!(ids(&rec), ["noise"], "{rec:?}");
        assert!(rec.by_meaning && semantic(&rec, "noise"), "{rec:?}");
        // Across languages, the right card by meaning (planned, or offered when another card is
        // as near), the noise card not planned though "door" is a word of its example.
        let rec = r.recognize("Somebody left a truck in front of my garage door");
        assert!(rec.by_meaning && !ids(&rec).contains(&"noise"), "{rec:?}");
        assert!(
            rec.selected.iter().any(|c| c.id == "parking") || rec.uncertain.iter().any(|c| c.id == "parking"),
            "{rec:?}"
        );
        // A keyword still decides on its own, without the stage.
        let rec = r.recognize("我要噪音投诉");
        assert_eq!(ids(&rec), ["noise"]);
        assert!(!rec.by_meaning, "{rec:?}");
    }

    /// The stage never plans a card the lexical stage found negated, and leaves alone queries
    /// that name no task (generic actions, values of a list, a key's words) and greetings.
    #[cfg(feature = "semantic")]
    #[test]
    fn the_semantic_stage_respects_negation_and_needs_content() {
        let r = recognizer(CARDS);
        let rec = r.recognize("不用查天气了");
        assert!(rec.selected.is_empty(), "{rec:?}");
        for q in ["帮我订一下", "北京", "北京，入住"] {
            let rec = r.recognize(q);
            assert!(rec.selected.is_empty() && !rec.by_meaning, "{q}: {rec:?}");
        }
        // An out-of-scope request about a topic no card covers stays out of scope.
        let rec = r.recognize("帮我买一张去上海的火车票");
        assert!(rec.selected.is_empty(), "{rec:?}");
    }

    /// A query more about topics no card covers than covered ones (加班 is work, no card's) still
    /// gets the card the encoder clearly means when its words support it too; with no word for
    /// the card, the same clear closeness is no reason to plan it ("今天股市怎么样" reads like
    /// "今天天气怎么样").
    #[cfg(feature = "semantic")]
    #[test]
    fn a_clear_meaning_outweighs_a_topic_no_card_covers() {
        let r = recognizer(
            r#"
- id: lessons
  name: { zh: 课表与调课, en: Class schedule }
  description: { zh: "查询直播课的上课时间，把某节直播课调到其他时段或其他班。", en: "Shows when live lessons are and moves a lesson to another slot or class." }
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  keywords: [调课]
  examples: ["这周六的直播课能调到周日吗"]
- id: courses
  name: 课程购买与退款
  description: 处理课程下单、支付失败和退课退款。
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  keywords: [买课]
  examples: ["我想买那个雅思冲刺班"]
"#,
        );
        let rec = r.recognize("下周二晚上那节直播我得加班赶不上，能不能改到周末那个班");
        assert_eq!(ids(&rec), ["lessons"], "{rec:?}");
        assert!(rec.by_meaning, "{rec:?}");
        let rec = recognizer(CARDS).recognize("今天股市怎么样");
        assert!(rec.selected.is_empty(), "{rec:?}");
    }

    /// A clause with a question mark after it, a request or question word, or trouble asks;
    /// one without only tells.
    #[cfg(feature = "semantic")]
    #[test]
    fn a_clause_that_asks_nothing_only_tells() {
        let clause = |q: &str, part: &str| {
            let start = q.find(part).unwrap();
            asks_or_troubles(q, Clause { start, end: start + part.len() })
        };
        let q = "We're moving to Shanghai in July. Can we get back what we paid?";
        assert!(!clause(q, "We're moving to Shanghai in July"));
        assert!(clause(q, "Can we get back what we paid"));
        assert!(clause("I'd like to book a lesson on Friday", "I'd like to book a lesson on Friday"));
        assert!(clause("My booking needs one more night", "My booking needs one more night"));
        assert!(clause("The heater is broken?", "The heater is broken"));
        let q = "研究生毕业留在本市工作了，集体户口能迁到单位吗";
        assert!(!clause(q, "研究生毕业留在本市工作了"));
        assert!(clause(q, "集体户口能迁到单位吗"));
        assert!(clause("门锁坏了没法关", "门锁坏了没法关"));
        let tells = |q: &str| only_tells(q, Clause { start: 0, end: q.len() });
        assert!(tells("We're moving to Shanghai in July"));
        assert!(tells("研究生毕业留在本市工作了"));
        assert!(!tells("Submit my hotel receipts"), "an imperative requests");
        assert!(!tells("Can we get back what we paid"));
    }

    /// A connective opens a request of its own after the end of a clause, not within one.
    #[cfg(feature = "semantic")]
    #[test]
    fn a_connective_after_a_clause_end_opens_a_request() {
        let opens = |q: &str, gap: &str| {
            let from = q.find(gap).unwrap();
            opens_request(q, from, from + gap.len())
        };
        assert!(opens("孩子想学小提琴，先租一把1/4的，顺便帮他报每周六下午的课", "，顺便"));
        assert!(opens("我月底走人，手续怎么办？还有剩下的几天假想在走之前休掉", "？还有"));
        assert!(opens("we need someone to come help. also i think i dropped my keys", ". also "));
        assert!(!opens("那边地库还剩几个位子？要是满了附近还有哪能停", "还有"), "within a clause");
        assert!(!opens("逛青铜器那几个展厅、顺便给我们讲讲", "、顺便"), "after a list's comma");
        assert!(!opens("how many days would we need there, and do we cover flights", ", and "), "English and");
    }

    /// A question sentence of its own follows the end of a sentence and asks: a question mark
    /// after it, an English question word first, or a Chinese question word.
    #[cfg(feature = "semantic")]
    #[test]
    fn a_question_sentence_of_its_own_is_told_from_a_clause() {
        let asks = |q: &str, part: &str| {
            let start = q.find(part).unwrap();
            asks_own_question(q, Clause { start, end: start + part.len() })
        };
        let q = "I want to book a baking class for two this Saturday. Can I pay for it with my member points?";
        assert!(asks(q, " Can I pay for it with my member points"));
        assert!(!asks(q, "I want to book a baking class for two this Saturday"), "no sentence ends before it");
        assert!(asks("旧车置换能抵多少钱？剩下的能不能做贷款", "剩下的能不能做贷款"));
        assert!(asks("The app froze. Charged twice?", " Charged twice"));
        assert!(!asks("The app froze. I was charged twice.", " I was charged twice"), "it tells");
        assert!(!asks("网上买的维生素今天到了，能给我换吗", "能给我换吗"), "a comma ends no sentence");
    }

    /// A card selected on a word of its field in a sentence about another card's job is dropped
    /// ("took points off" is about a grade, not a service point); one joined by "and also" stays;
    /// so is one selected on a value alone.
    #[cfg(feature = "semantic")]
    #[test]
    fn a_weak_companion_is_dropped_unless_asked_for() {
        let r = recognizer(
            r#"
- id: grading
  name: Homework & Exam Grading
  description: Answers questions about homework feedback, quiz and exam scores, and grading disputes; forwards re-mark requests to the teacher.
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  keywords: [re-mark]
  examples: ["I think my final exam was graded wrong, can I ask for a re-mark?"]
- id: hall
  name: 服务大厅预约
  description: 预约出入境服务大厅的办理时段，查询各分厅地址和开放时间，改约或取消已有预约。
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  keywords: [book appointment]
  examples: ["Book an appointment at the airport service point"]
"#,
        );
        let q = "Scored 71 on the midterm. The teacher took points off the essay question but I \
                 followed the rubric exactly";
        assert_eq!(ids(&r.recognize(q)), ["grading"], "{:?}", r.recognize(q));
        let rec = r.recognize("Why did I fail the final exam, and also where is the service point?");
        assert_eq!(ids(&rec), ["grading", "hall"], "{rec:?}");
        // A value alone (a flat number, which the fees card extracts) names no card: beside the
        // card the query is about, its card is dropped.
        let r = recognizer(
            r#"
- id: repair
  name: 报事报修
  description: 业主室内水电、门窗、管道的维修。
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  keywords: [报修]
- id: fees
  name: 物业费与发票
  description: 物业费的查询与缴纳，开具电子发票。
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  keywords: [物业费]
  required_semantic_keys:
    - { key: room_no, description: 房号, extract: { pattern: '(\d{1,2}(?:栋|-)\d{1,2}(?:单元|-)\d{3,4})' } }
"#,
        );
        let rec = r.recognize("厨房的管道一直在滴水要报修，能不能派个师傅上门看看，我住3栋1单元902");
        assert_eq!(ids(&rec), ["repair"], "{rec:?}");
    }

    /// A request joined by a connective whose clause finds no card by its words gets its card by
    /// meaning, beside the one found by keyword.
    #[cfg(feature = "semantic")]
    #[test]
    fn a_joined_clause_gets_its_card_by_meaning() {
        let r = recognizer(HOTLINE_CARDS);
        let rec = r.recognize("小区门口的路灯坏了，另外隔壁从早到晚叮叮当当的");
        assert_eq!(ids(&rec), ["streetlight", "noise"], "{rec:?}");
        assert!(semantic(&rec, "noise") && !semantic(&rec, "streetlight"), "{rec:?}");
        // Without a connective, the second clause adds nothing.
        let rec = r.recognize("小区门口的路灯坏了");
        assert_eq!(ids(&rec), ["streetlight"], "{rec:?}");
    }

    /// A card speaks the languages of its name and description (a map's texts, or a plain
    /// string's script); keywords and examples do not count.
    #[cfg(feature = "semantic")]
    #[test]
    fn a_card_speaks_the_languages_of_its_name_and_description() {
        let specs: Vec<CapabilityCardSpec> = serde_yaml_ng::from_str(
            r#"
- { id: zh, name: 外币现钞预约, description: 预约提取外币现钞, endpoint: { url: "http://127.0.0.1:1/x", protocol: http }, examples: ["Cash in dollars"] }
- { id: en, name: Campus Card, description: Tops up the campus card, endpoint: { url: "http://127.0.0.1:1/x", protocol: http } }
- { id: both, name: { zh: 改期, en: Changes }, description: 修改预订, endpoint: { url: "http://127.0.0.1:1/x", protocol: http } }
"#,
        )
        .unwrap();
        let speaks: Vec<[bool; 2]> = specs.iter().map(speaks).collect();
        assert_eq!(speaks, [[true, false], [false, true], [true, true]]);
    }

    /// Two requests are joined by "also" / 另外, or by "and" before a clause asking a question of
    /// its own; "and" inside a story joins none.
    #[cfg(feature = "semantic")]
    #[test]
    fn requests_are_joined_by_a_connective_before_a_request() {
        let joins = |q: &str| {
            let norm = Normalized::new(q);
            joins_requests(&norm.text, &split_clauses(&norm))
        };
        assert!(joins("Order a soft-food dinner for bed 9, and can his daughter visit tomorrow afternoon?"));
        assert!(joins("Book me a haircut, also I need a refund"));
        assert!(joins("帮我订个房间，另外查一下天气"));
        assert!(!joins("The road outside my house is cracked and crumbling and I blew a tire on it yesterday"));
        assert!(!joins("Please set aside 1000 US dollars in notes for me to collect next Tuesday"));
    }

    /// Same query, same snapshot, same answer: the semantic stage is deterministic.
    #[cfg(feature = "semantic")]
    #[test]
    fn the_semantic_stage_is_deterministic() {
        let r = recognizer(HOTLINE_CARDS);
        let q = "Somebody left a truck in front of my garage door";
        let first = format!("{:?}", r.recognize(q));
        for _ in 0..3 {
            assert_eq!(format!("{:?}", r.recognize(q)), first);
        }
    }

    const PET_CARDS: &str = r#"
- id: vet
  name: 宠物医院挂号
  description: 为猫狗预约宠物医院的门诊
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  keywords: [兽医]
  required_semantic_keys:
    - { key: species, description: 宠物种类, extract: { values_from: species } }
- id: grooming
  name: 宠物美容
  description: 给猫狗洗澡、剪毛、修指甲
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  keywords: [宠物美容]
- id: boarding
  name: 宠物寄养
  description: 出门时把猫狗寄养在门店
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  keywords: [寄养]
"#;

    #[test]
    fn a_list_value_every_card_names_tells_no_card_apart() {
        let specs: Vec<CapabilityCardSpec> = serde_yaml_ng::from_str(PET_CARDS).unwrap();
        let refs: Vec<&CapabilityCardSpec> = specs.iter().collect();
        let lists = BTreeMap::from([("species".to_string(), vec!["猫".to_string(), "狗".to_string()])]);
        let r = Recognizer::new(&refs, &lists);
        // 狗 is a value of the vet card's list, but every card's text names dogs: the haircut
        // decides, not the species.
        assert_eq!(ids(&r.recognize("狗的毛太长了，想找人给它剪一剪")), ["grooming"]);
        // The value still counts where only its owner names it.
        let vet = r.recognize("我家狗需要看兽医");
        assert_eq!(ids(&vet), ["vet"]);
    }

    #[test]
    fn a_value_inside_a_longer_value_names_no_card() {
        let yaml = r#"
- id: bus
  name: School bus
  description: Bus routes and stops for each district
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  required_semantic_keys:
    - { key: district, description: district, extract: { values_from: districts } }
- id: visit
  name: Campus visits
  description: Tours of a campus for families
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  required_semantic_keys:
    - { key: campus, description: campus, extract: { values_from: campuses } }
"#;
        let specs: Vec<CapabilityCardSpec> = serde_yaml_ng::from_str(yaml).unwrap();
        let refs: Vec<&CapabilityCardSpec> = specs.iter().collect();
        let lists = BTreeMap::from([
            ("districts".to_string(), vec!["Tianfu".to_string()]),
            ("campuses".to_string(), vec!["Tianfu campus".to_string()]),
        ]);
        let r = Recognizer::new(&refs, &lists);
        let entity = |q: &str, id: &str| {
            r.recognize(q).score(id).is_some_and(|c| c.evidence.iter().any(|e| matches!(e, Evidence::Entity { .. })))
        };
        // "Tianfu" is part of "Tianfu campus": only the campus names its card.
        assert!(entity("Could we drop by the Tianfu campus next week?", "visit"));
        assert!(!entity("Could we drop by the Tianfu campus next week?", "bus"));
        // On its own it names the district's card.
        assert!(entity("Which stop is nearest in Tianfu?", "bus"));
    }

    #[test]
    fn the_last_two_words_are_read_from_the_end_only() {
        assert_eq!(last_two_words("a ride to my "), (Some("my"), Some("to")));
        assert_eq!(last_two_words("go to"), (Some("to"), Some("go")));
        // A word the window cuts is none: the end of "…ato" is no "to".
        assert_eq!(last_two_words(&format!("{}to", "a".repeat(40))), (None, None));
        assert_eq!(last_two_words(&format!("{} my", "a".repeat(40))), (Some("my"), None));
        assert_eq!(last_two_words(&format!("{} to go to", "和".repeat(40))), (Some("to"), Some("go")));
        assert!(after_owned_destination("Send a car from my", "Send a car from my".len()));
        assert!(!after_owned_destination("I need to my", 7));
        assert!(after_destination_marker("飞机到", "飞机到".len(), "飞机到".len()));
        assert!(after_destination_marker("a taxi From THE", "a taxi From THE".len(), "a taxi From THE".len()));
    }

    #[test]
    fn an_infinitive_to_marks_no_destination() {
        let marked = |query: &str, word: &str| {
            let at = query.find(word).unwrap();
            after_destination_marker(query, at, at + word.len())
        };
        assert!(!marked("Could you send someone to tune it next week?", "tune"));
        assert!(!marked("I'd like to cancel.", "cancel"));
        assert!(!marked("We need someone to repair my piano", "repair"));
        assert!(marked("I need a car to hotel", "hotel"));
        assert!(marked("a ride to airport, then to my hotel", "airport"));
        assert!(marked("a ride from the station to my hotel", "hotel"));
        assert!(marked("from airport", "airport"));
    }

    #[test]
    fn a_night_that_says_when_is_no_lodging() {
        let r = recognizer(CARDS);
        // "last night" says when: its "night" is no word of the hotel card's topic.
        let rec = r.recognize("Who won the football match last night?");
        assert!(rec.candidates.iter().all(|c| c.raw <= 0.0), "{rec:?}");
        assert!(rec.uncertain.is_empty(), "{rec:?}");
        // Nights of a stay still are.
        assert!(r
            .recognize("I need somewhere to stay for two nights")
            .candidates
            .iter()
            .any(|c| c.id == "hotel" && c.raw > 0.0));
    }

    #[test]
    fn dates_and_times_are_no_evidence() {
        let r = recognizer(
            r#"
- id: car_service
  name: 保养维修预约
  description: 预约4S店保养和维修
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  keywords: [保养]
  examples: ["帮我约这周六下午去店里做个保养"]
- id: flat_viewing
  name: 找房看房
  description: 找出租房源并预约看房
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  keywords: [看房]
"#,
        );
        // "周六下午" is in the car card's example, but it says when, not what.
        let rec = r.recognize("中介说那套两室的房子能去瞅瞅，帮我约个周六下午");
        assert!(!ids(&rec).contains(&"car_service"), "{rec:?}");
        if cfg!(feature = "semantic") {
            // The semantic stage finds the car card's example close, the lexical stage leans to
            // the flat viewing: the flat viewing is planned or offered, never the car service.
            let flat = |c: &str| c == "flat_viewing";
            assert!(ids(&rec).into_iter().any(flat) || rec.uncertain.iter().any(|c| flat(&c.id)), "{rec:?}");
        } else {
            assert_eq!(rec.top(1)[0].id, "flat_viewing");
        }
        let rec = r.recognize("Can you book me in for Saturday afternoon?");
        assert!(rec.selected.is_empty(), "{rec:?}");
    }

    #[test]
    fn a_pattern_any_number_matches_is_weak_evidence() {
        let r = recognizer(
            r#"
- id: transfer
  name: 银证转账
  description: 在银行卡和证券账户之间转钱
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  keywords: [银证转账]
  required_semantic_keys:
    - { key: amount, description: 金额, extract: { pattern: '(\d+(?:[.,]\d+)*)\s*(?:元|块)?' } }
- id: meals
  name: 病房订餐
  description: 为住院病人预订一日三餐
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  keywords: [订餐]
- id: flight
  name: 航班动态
  description: 查询航班状态
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  keywords: [航班]
  required_semantic_keys:
    - { key: flight_no, description: 航班号, extract: { pattern: '([A-Z]{2}\d{3,4})' } }
"#,
        );
        // 512 is a room, not an amount: the meal card's words decide.
        assert_eq!(ids(&r.recognize("我爸住在512房，帮他安排这周的三餐")), ["meals"]);
        // A pattern that needs letters still counts as much as before.
        let rec = r.recognize("CA1234到哪了");
        assert_eq!(rec.top(1)[0].id, "flight", "{rec:?}");
        assert!(rec.top(1)[0].raw >= W_PATTERN - OFF_TOPIC, "{rec:?}");
    }

    #[test]
    fn a_key_word_the_card_is_about_is_no_slot_word() {
        let r = recognizer(
            r#"
- id: transfer
  name: 银证转账
  description: 在银行卡与证券账户之间转钱
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  keywords: [银证转账]
  required_semantic_keys:
    - { key: direction, description: 转入证券账户或转出到银行卡 }
- id: dividend
  name: 分红查询
  description: 查询持仓证券的分红派息
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  keywords: [分红]
  examples: ["分红打到银行卡了吗"]
"#,
        );
        let rec = r.recognize("卖掉的钱怎么弄回银行卡");
        assert_eq!(rec.top(1)[0].id, "transfer", "{rec:?}");
    }

    fn ids(r: &Recognition) -> Vec<&str> {
        r.selected.iter().map(|s| s.id.as_str()).collect()
    }

    #[test]
    fn the_entity_index_finds_what_each_rule_finds() {
        let values = |v: &[&str]| EntityRule::Values(v.iter().map(|t| Term::new(t)).collect());
        let regex = |p: &str| EntityRule::Pattern(Regex::new(p).unwrap());
        let rules = vec![
            values(&["北京", "北京市", "上海"]),
            regex(r"([A-Z]{2}\d{3,4})"),
            values(&["cat", "Dog", ""]),
            values(&["上海", "广州"]),
            EntityRule::Email(Regex::new(r"[a-z]+@[a-z]+\.com").unwrap()),
            values(&["book", "bookcase"]),
        ];
        let index = EntityIndex::new(
            rules.into_iter().map(|rule| EntitySource { rule, weight: 1.0, users: Vec::new() }).collect(),
        );
        let texts = [
            "从北京市到上海，航班CA1234",
            "a catalog about dogs; my DOG and a cat, mail me at a@b.com",
            "bookcase or book? 广州 then 上海",
            "",
            "😀😀",
            "ＣＡ1234 北京",
        ];
        for text in texts {
            let lower = Normalized::new(text);
            let expected: Vec<(usize, (usize, usize, String))> = index
                .sources
                .iter()
                .enumerate()
                .filter_map(|(i, src)| src.rule.find(text, &lower).map(|hit| (i, hit)))
                .collect();
            assert_eq!(index.find_all(text, &lower), expected, "{text}");
        }
        let text = "从北京市到上海，航班CA1234";
        let found = index.find_all(text, &Normalized::new(text));
        assert_eq!(
            found.iter().map(|(i, (_, _, v))| (*i, v.as_str())).collect::<Vec<_>>(),
            [(0, "北京市"), (1, "CA1234"), (3, "上海")]
        );
    }

    #[test]
    fn keywords_paraphrases_and_entities() {
        let r = recognizer(CARDS);
        assert_eq!(ids(&r.recognize("帮我订个酒店")), ["hotel"]);
        assert_eq!(ids(&r.recognize("明天上海冷不冷")), ["weather"]);
        assert_eq!(ids(&r.recognize("CA1234什么时候到")), ["flight"]);
        let rec = r.recognize("Will it rain in Shanghai tomorrow?");
        assert_eq!(ids(&rec), ["weather"]);
        assert!(rec.candidates[0].evidence.iter().any(|e| matches!(e, Evidence::Terms { .. })));
    }

    #[test]
    fn split_chinese_keywords_still_match() {
        let r = recognizer(CARDS);
        let r2 = recognizer(&CARDS.replace("keywords: [酒店, hotel]", "keywords: [订酒店, hotel]"));
        assert_eq!(ids(&r2.recognize("帮我订一下酒店")), ["hotel"]);
        assert!(r2.recognize("帮我订一下酒店").candidates[0]
            .evidence
            .iter()
            .any(|e| matches!(e, Evidence::Keyword { .. })));
        assert_eq!(separable_forms("挂号").iter().filter(|f| *f == "挂个号").count(), 1);
        assert!(separable_forms("hotel").is_empty() && separable_forms("航班动态查询").is_empty());
        assert_eq!(ids(&r.recognize("查一下航班CA1234")), ["flight"]);
    }

    #[test]
    fn a_thousands_separator_splits_no_clause() {
        let r = recognizer(CARDS);
        assert_eq!(r.recognize("book a hotel for 1,500 yuan in Shanghai").clauses.len(), 1);
        assert_eq!(r.recognize("订酒店，查天气").clauses.len(), 2);
    }

    /// 还有 asking what is left ("还有没有", "还有多少", "还有几") joins no second clause.
    #[test]
    fn still_having_is_no_connective() {
        let r = recognizer(CARDS);
        assert_eq!(r.recognize("北京的酒店周六还有没有房间").clauses, ["北京的酒店周六还有没有房间"]);
        assert_eq!(r.recognize("酒店积分还有多少").clauses.len(), 1);
        assert_eq!(r.recognize("帮我订酒店，还有几号的航班").clauses.len(), 2);
        assert_eq!(r.recognize("帮我订酒店还有查天气").clauses, ["帮我订酒店", "查天气"]);
    }

    /// A subject and an auxiliary cut off by a connective are no clause of their own.
    #[test]
    fn a_subject_alone_is_no_clause() {
        let r = recognizer(CARDS);
        let rec = r.recognize("Check flight CA1234 and I'll also need a hotel in Shanghai");
        assert_eq!(rec.clauses, ["Check flight CA1234", "I'll also need a hotel in Shanghai"]);
        assert_eq!(r.recognize("I also need a hotel").clauses, ["I also need a hotel"]);
    }

    #[test]
    fn a_keyword_named_as_a_destination_is_no_keyword() {
        let r = recognizer(CARDS);
        let kw = |q: &str| {
            r.recognize(q)
                .score("hotel")
                .is_some_and(|c| c.evidence.iter().any(|e| matches!(e, Evidence::Keyword { .. })))
        };
        assert!(kw("帮我订北京的酒店"));
        assert!(kw("book a hotel in Shanghai"));
        assert!(!kw("落地后帮我安排个车到酒店"));
        assert!(!kw("send a car to my hotel"));
        // 订到 is "managed to book", not a destination.
        assert!(kw("我订到酒店了吗"));
        // Nor do its words count as more than a place: "a ride to my hotel" asks for no hotel.
        let raw = |q: &str| r.recognize(q).score("hotel").map_or(0.0, |c| c.raw);
        assert!(raw("I need a ride to my hotel") < 1.0 && raw("I need a ride and a hotel") > 3.0);
        assert_eq!(ids(&r.recognize("Book a hotel near my office")), ["hotel"]);
    }

    #[test]
    fn multi_intent_in_order_of_mention() {
        let r = recognizer(CARDS);
        assert_eq!(ids(&r.recognize("查一下航班CA1234，顺便看看上海天气")), ["flight", "weather"]);
        assert_eq!(ids(&r.recognize("上海天气怎么样，然后订酒店")), ["weather", "hotel"]);
        // A joined clause naming only a value of a card's own list (a service hall) asks for it.
        let specs: Vec<CapabilityCardSpec> = serde_yaml_ng::from_str(
            r#"
- id: passport
  name: 护照办理
  description: 首次申领、到期换发护照。
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  keywords: [办护照]
- id: hall
  name: 服务大厅预约
  description: 预约出入境服务大厅的办理时段。
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  keywords: [取号]
  examples: ["帮我约明天上午的号"]
  required_semantic_keys:
    - { key: hall, description: 服务大厅, extract: { values_from: halls } }
"#,
        )
        .unwrap();
        let refs: Vec<&CapabilityCardSpec> = specs.iter().collect();
        let lists =
            BTreeMap::from([("halls".to_string(), vec!["东区服务大厅".to_string(), "市民中心大厅".to_string()])]);
        let r = Recognizer::new(&refs, &lists);
        let rec = r.recognize("护照下个月到期想换本新的，顺便帮我约一下这周五去东区服务大厅");
        assert_eq!(ids(&rec), ["passport", "hall"], "{rec:?}");
    }

    #[test]
    fn a_service_no_longer_wanted_is_named_by_its_verb() {
        let r = recognizer(
            r#"
- id: boarding
  name: 宠物寄养
  description: 宠物寄养住店，按晚计费
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  keywords: [寄养]
- id: visit
  name: 上门喂养
  description: 上门喂猫遛狗、清理猫砂
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  keywords: [上门喂养]
- id: takeaway
  name: 外卖点餐
  description: 外卖下单，送餐到家
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  keywords: [外卖]
"#,
        );
        // 不 + a two-character verb + 了: the verb itself names the service taken back.
        assert_eq!(ids(&r.recognize("不寄养了，出门就两天，找人上门喂猫就行")), ["visit"]);
        // 点 is a verb of asking ("不点外卖了").
        assert_eq!(ids(&r.recognize("今晚不点外卖了，找人上门喂猫吧")), ["visit"]);
        assert_eq!(ids(&r.recognize("寄养两晚，顺便点个外卖")), ["boarding", "takeaway"]);
    }

    #[test]
    fn negation_removes_the_governed_card_only() {
        let r = recognizer(CARDS);
        assert_eq!(ids(&r.recognize("不用查天气了，帮我订酒店")), ["hotel"]);
        assert_eq!(ids(&r.recognize("别订酒店只看看北京天气")), ["weather"]);
        assert_eq!(ids(&r.recognize("book a hotel instead of a flight")), ["hotel"]);
        assert_eq!(ids(&r.recognize("Forget the hotel, I just want the weather in Shanghai")), ["weather"]);
        assert_eq!(ids(&r.recognize("Sorry, I didn't mean the weather. I meant a hotel in Shanghai")), ["hotel"]);
        assert_eq!(ids(&r.recognize("I'm not asking about the weather, book me a hotel")), ["hotel"]);
        // Not minding something dismisses it.
        assert_eq!(ids(&r.recognize("我不担心天气，帮我订个北京的酒店")), ["hotel"]);
        assert_eq!(ids(&r.recognize("No worries about the weather, just book a hotel in Beijing")), ["hotel"]);
        // A Chinese cue governs to the end of its sentence part: "不是X，是Y" asks for Y.
        let norm = Normalized::new("不是要约团课，是要找教练、定个私教课");
        let cue = find_cues(&norm).into_iter().find(|c| c.text == "不是").unwrap();
        assert_eq!(&norm.text[cue.scope.0..cue.scope.1], "要约团课");
        let norm = Normalized::new("不要酒店、机票");
        let cue = find_cues(&norm).into_iter().find(|c| c.text == "不要").unwrap();
        assert_eq!(&norm.text[cue.scope.0..cue.scope.1], "酒店、机票", "a list's 、 does not end it");
        // "forgot" is no "forget the".
        assert_eq!(ids(&r.recognize("I forgot to book a hotel in Shanghai")), ["hotel"]);
        let rec = r.recognize("不用查天气了");
        assert!(rec.selected.is_empty() && rec.uncertain.is_empty());
        assert!(rec.candidates[0].evidence.iter().any(|e| matches!(e, Evidence::Negated { .. })));
        // A-not-A questions are not negations.
        assert_eq!(ids(&r.recognize("上海明天是不是要下雨，天气如何")), ["weather"]);
        // The object named before the cue, as a topic ("酒店不用订了"), is what is not wanted.
        assert_eq!(ids(&r.recognize("北京的酒店先不用订了，帮我看看明天天气")), ["weather"]);
        // 不 + a verb of asking + 了, too; a fault reported the same way (连不上了) negates nothing.
        assert_eq!(ids(&r.recognize("北京的酒店不订了，帮我看看明天天气")), ["weather"]);
        // The object may follow the verb ("不订酒店了").
        assert_eq!(ids(&r.recognize("不订北京的酒店了，帮我看看明天天气")), ["weather"]);
        assert_eq!(ids(&r.recognize("酒店订不上了，帮我看看北京明天天气")), ["hotel", "weather"]);
        // The object holds no 了: "不订了先看天气了" is no 不 + verb + object + 了 over the weather.
        let norm = Normalized::new("酒店不订了先看天气了，帮我查航班");
        assert!(find_cues(&norm).iter().all(|c| !c.text.starts_with("不订")));
        // Without 了, a short verb of asking after 先不 / 不用 … says the same.
        assert_eq!(ids(&r.recognize("北京的酒店先不订，帮我看看明天天气")), ["weather"]);
        // So does a matter put aside: 不急 / 不着急, or 先不用管 / 不用考虑 ….
        assert_eq!(ids(&r.recognize("北京酒店的事不急，帮我看看明天天气")), ["weather"]);
        assert_eq!(ids(&r.recognize("北京酒店的事先不用管，帮我看看明天天气")), ["weather"]);
        assert_eq!(ids(&r.recognize("北京的酒店不用考虑了，帮我看看明天天气")), ["weather"]);
        // Not a question about the object ("…不用订吗", "…不用订？").
        assert_eq!(ids(&r.recognize("北京的酒店不用订吗，明天天气怎么样")), ["hotel", "weather"]);
        assert_eq!(ids(&r.recognize("北京的酒店不用订？明天天气怎么样")), ["hotel", "weather"]);
        assert_eq!(ids(&r.recognize("酒店的网连不上了，帮我查下北京天气")), ["hotel", "weather"]);
        // Not when nothing else is asked ("酒店不要了" may ask to cancel it), nor for a report.
        assert!(r
            .recognize("北京的酒店不要了")
            .candidates
            .iter()
            .all(|c| c.evidence.iter().all(|e| !matches!(e, Evidence::Negated { .. }))));
        let rec = r.recognize("航班取消了，帮我订个酒店");
        assert!(rec.score("flight").is_some_and(|c| c.evidence.iter().all(|e| !matches!(e, Evidence::Negated { .. }))));
    }

    #[test]
    fn a_retraction_takes_back_what_came_before_it() {
        let r = recognizer(CARDS);
        assert_eq!(ids(&r.recognize("帮我订北京的酒店……不对，查一下北京明天的天气")), ["weather"]);
        assert_eq!(ids(&r.recognize("帮我订北京的酒店……算了不是这个，我想查北京天气")), ["weather"]);
        // "算了不订了" takes it back too, and so does a typo owned up to ("打错了").
        assert_eq!(ids(&r.recognize("帮我订北京的酒店……算了不订了，直接查北京天气吧")), ["weather"]);
        assert_eq!(ids(&r.recognize("帮我订北京的酒店，哦不对，打错了，我是想查北京天气")), ["weather"]);
        // After an ellipsis, 算了 takes back what came before whatever follows it.
        assert_eq!(ids(&r.recognize("帮我订北京的酒店……算了那天有事，先查下北京天气")), ["weather"]);
        assert_eq!(
            ids(&r.recognize("Book a hotel in Shanghai... actually no wait, what's the weather there?")),
            ["weather"]
        );
        assert_eq!(ids(&r.recognize("Book a hotel in Shanghai, scratch that, check flight CA1234")), ["flight"]);
        // Only the sentence before it: an earlier request stands.
        assert_eq!(
            ids(&r.recognize("Check flight CA1234. Book a hotel too, no wait, the weather in Shanghai")),
            ["flight", "weather"]
        );
        assert_eq!(ids(&r.recognize("A hotel in Shanghai, I meant the weather there")), ["weather"]);
        assert_eq!(ids(&r.recognize("A hotel in Shanghai — sorry, I actually meant the weather there")), ["weather"]);
        assert_eq!(
            ids(&r.recognize("Book a hotel in Shanghai. Sorry, I mean, what's the weather there?")),
            ["weather"]
        );
        // A bare 不是 said as an interjection ("啊不是，") takes back what came before it.
        assert_eq!(ids(&r.recognize("帮我订北京的酒店，啊不是，查一下北京明天的天气")), ["weather"]);
        assert!(retractions("这不是酒店的问题，查一下北京天气").is_empty());
        // "I meant to …" is what was intended: nothing is taken back.
        assert_eq!(ids(&r.recognize("I meant to book a hotel in Beijing yesterday, can you book it now?")), ["hotel"]);
        // "never mind, …" governs nothing after its comma.
        assert_eq!(ids(&r.recognize("Never mind, book a hotel in Beijing instead")), ["hotel"]);
        // A complaint that something is wrong, or an A-not-A question, takes nothing back.
        assert_eq!(ids(&r.recognize("酒店的价格不对，帮我再查一下北京的酒店")), ["hotel"]);
        assert_eq!(ids(&r.recognize("北京明天下雨对不对，天气怎么样")), ["weather"]);
        // Nothing after it: no retraction (a bare "算了" is the planner's cancel).
        assert!(retractions("帮我订酒店，算了").is_empty());
        assert!(retractions("酒店感觉不对劲").is_empty());
    }

    #[test]
    fn why_a_request_was_taken_back_is_taken_back_with_it() {
        let r = recognizer(CARDS);
        // The clause between the retraction and what is meant ("我是想 / I need …") names what
        // was taken back, not a request.
        assert_eq!(
            ids(&r.recognize("帮我订北京的酒店……哦不对，酒店上周就订好了，我是想查北京明天的天气")),
            ["weather"]
        );
        assert_eq!(
            ids(&r.recognize("Book a hotel in Beijing, wait, no, I already booked the hotel, I need the weather there")),
            ["weather"]
        );
        let norm = Normalized::new("帮我订酒店，不对，酒店订好了，我是想查天气");
        let cue = find_cues(&norm).into_iter().find(|c| c.retracts).unwrap();
        assert_eq!(&norm.text[cue.scope.0..cue.scope.1], "帮我订酒店,不对,酒店订好了");
        // Without a clause saying what is meant, what follows the cue is meant.
        assert_eq!(ids(&r.recognize("帮我订北京的酒店……哦不对，查北京明天的天气，我是想知道冷不冷")), ["weather"]);
        let norm = Normalized::new("帮我订酒店，不对，查天气");
        let cue = find_cues(&norm).into_iter().find(|c| c.retracts).unwrap();
        assert_eq!(&norm.text[cue.scope.0..cue.scope.1], "帮我订酒店,");
    }

    #[cfg(feature = "semantic")]
    #[test]
    fn a_done_report_is_told_from_a_request_and_a_question() {
        let done =
            |q: &str| reports_done(q, Clause { start: 0, end: q.find(['，', ',', '?', '？']).unwrap_or(q.len()) });
        for q in [
            "课都学完了考试也过了，证书在哪领",
            "房子价格谈妥了，接下来呢",
            "We've already paid the deposit, what's next?",
        ] {
            assert!(done(q), "{q}");
        }
        for q in [
            "考试过了吗？",
            "帮我看看我的课学完了没有",
            "酒店订好了吗，还没收到短信",
            "I already paid but it still says unpaid",
            "Have you already shipped it?",
            "My season pass expired yesterday, how do I renew it?",
        ] {
            assert!(!done(q), "{q}");
        }
    }

    #[cfg(feature = "semantic")]
    #[test]
    fn the_encoder_reads_what_is_asked_instead_of_a_negated_request() {
        let meant = |q: &str, negated: bool| {
            let norm = Normalized::new(q);
            meant_text(q, &norm, &find_cues(&norm), negated).into_owned()
        };
        // The negated scope goes; what follows it is the request.
        assert_eq!(meant("不用查账单了，我是想问怎么给同事开一个子账号", true), "我是想问怎么给同事开一个子账号");
        // A Chinese object named before its cue goes with it.
        assert_eq!(
            meant("宽带先不装了，我想问下手机号从别家转到你们这边要怎么弄", true),
            "我想问下手机号从别家转到你们这边要怎么弄"
        );
        assert_eq!(
            meant("Never mind the test drive, I just want to know what my old car is worth.", true),
            "I just want to know what my old car is worth."
        );
        // Only when a card was negated: a cue that negated nothing is part of the request ...
        assert_eq!(
            meant("不用查账单了，我是想问怎么给同事开一个子账号", false),
            "不用查账单了，我是想问怎么给同事开一个子账号"
        );
        // ... unless something else is asked instead (just / only / rather / 就 / 只 …).
        assert_eq!(
            meant("I don't want to buy one outright, just rent a cello for the next three months.", false),
            "I , just rent a cello for the next three months."
        );
        assert_eq!(meant("卡先不充了，就帮我看看车里这股霉味能不能去掉", false), "就帮我看看车里这股霉味能不能去掉");
        // A word that only starts like one ("Justin") asks nothing instead.
        let q = "I don't want to buy one outright, Justin said renting a cello is cheaper for three months.";
        assert_eq!(meant(q, false), q);
        // A retraction, then a negation: what follows both.
        let q = "帮我订酒店，不对，天气先不查了，帮我看看北京的航班";
        assert_eq!(meant(q, true), "帮我看看北京的航班");
        // A scope that ends inside a word ends with the word.
        assert_eq!(
            meant("Actually scratch that, it's not a billing question — I need our API rate limit raised.", true),
            "it's  — I need our API rate limit raised."
        );
        // A negation that ends the query is part of the request, not a request taken back.
        let q = "Will my data work in Japan? I don't want a huge surprise when I get back home";
        assert_eq!(meant(q, true), q);
        // A contrast after a pause that ends the query takes back what it names.
        assert_eq!(
            meant("Book the fishing trip — sorry, no, I meant the sunset sightseeing boat, not fishing.", true),
            "the sunset sightseeing boat, "
        );
        let q = "I'd like the sunset sightseeing boat and not the fishing one";
        assert_eq!(meant(q, true), q);
        // After a retraction, what follows it.
        assert_eq!(meant("帮我订北京的酒店……不对，查一下北京明天的天气", false), "查一下北京明天的天气");
        // "从别家转过来": 别 is "another", no negation.
        assert!(find_cues(&Normalized::new("手机号从别家转到你们这边")).is_empty());
    }

    #[test]
    fn a_negated_card_is_not_revived_beside_a_better_one() {
        let r = recognizer(CARDS);
        // Weather is negated, then named again only inside the hotel request: not planned.
        assert_eq!(ids(&r.recognize("不用看天气了，订个下雨天也能去的带泳池酒店")), ["hotel"]);
        // A card that leads a clause of its own after its negation is the corrected request.
        assert_eq!(ids(&r.recognize("不要上海的酒店，帮我订北京的酒店")), ["hotel"]);
    }

    #[test]
    fn a_near_tie_without_keyword_asks_instead_of_guessing() {
        let r = recognizer(&format!(
            "{CARDS}{}",
            r#"
- { id: claims, name: 保险理赔, description: 提交车险和医疗保险的理赔申请，查询进度, endpoint: { url: "http://127.0.0.1:1/x", protocol: http } }
- { id: policies, name: 保单查询, description: 查询车险和医疗保险保单的保障和进度, endpoint: { url: "http://127.0.0.1:1/x", protocol: http } }
"#
        ));
        // Both confident (0.72 and 0.67) on the same words: neither is planned.
        let rec = r.recognize("查询医疗保险进度");
        assert!(
            rec.candidates[0].confidence >= SELECT && rec.candidates[1].confidence >= SELECT,
            "{:?}",
            rec.candidates
        );
        assert!(rec.selected.is_empty(), "{:?}", ids(&rec));
        let offered: Vec<&str> = rec.uncertain.iter().map(|u| u.id.as_str()).collect();
        assert!(offered.contains(&"claims") && offered.contains(&"policies"), "{offered:?}");
        // Named by keyword (its name): planned.
        assert_eq!(ids(&r.recognize("我要保险理赔")), ["claims"]);
    }

    #[test]
    fn generic_words_alone_plan_nothing() {
        let r = recognizer(&format!(
            "{CARDS}{}",
            r#"
- { id: doctor, name: Doctor appointment, description: Books an appointment with a doctor., examples: ["Book me a doctor for Monday"], endpoint: { url: "http://127.0.0.1:1/x", protocol: http } }
"#
        ));
        // "book" is what to do, not with what: a question at most.
        for q in ["book a table for two tonight", "帮我订一下"] {
            let rec = r.recognize(q);
            assert!(rec.selected.is_empty(), "{q}: {:?}", ids(&rec));
        }
        assert_eq!(ids(&r.recognize("book me a doctor on Friday")), ["doctor"]);
        assert_eq!(ids(&r.recognize("帮我订个酒店")), ["hotel"]);
    }

    #[test]
    fn parts_no_card_covers_are_named() {
        let r = recognizer(CARDS);
        let rec = r.recognize("订酒店和火车票");
        assert_eq!(ids(&rec), ["hotel"]);
        assert_eq!(rec.unhandled, ["火车票"]);
        let rec = r.recognize("Book a hotel and a train ticket");
        assert_eq!(ids(&rec), ["hotel"]);
        assert_eq!(rec.unhandled, ["train ticket"]);
        let rec = r.recognize("帮我订北京的酒店，再订一张去上海的火车票");
        assert_eq!(ids(&rec), ["hotel"]);
        assert_eq!(rec.unhandled, ["火车票"]);
        // Context is not a request; a negated part is not one either; nothing found, nothing named.
        for q in ["帮我订酒店，我明天要去上海出差", "不用订火车票了，帮我订酒店", "订火车票"]
        {
            assert!(r.recognize(q).unhandled.is_empty(), "{q}: {:?}", r.recognize(q).unhandled);
        }
    }

    #[test]
    fn nothing_for_out_of_scope_and_odd_input() {
        let r = recognizer(CARDS);
        for q in ["今天股市怎么样", "", "   ", "🙂🙂", "？？！！", "写一首诗", &"酒".repeat(4000)] {
            let rec = r.recognize(q);
            assert!(rec.selected.is_empty(), "{q}: {:?}", ids(&rec));
        }
    }

    #[test]
    fn confidence_is_calibrated_and_rounded() {
        let r = recognizer(CARDS);
        let rec = r.recognize("帮我订北京的酒店");
        let c = rec.score("hotel").unwrap().confidence;
        assert!(c > 0.9 && c <= 1.0);
        assert_eq!((c * 100.0).round() / 100.0, c);
        assert!(confidence(0.0) == 0.0 && confidence(THETA) == 0.5);
    }

    #[test]
    fn many_cards_are_gated_by_domain() {
        let mut yaml = String::from(CARDS);
        for d in 0..40 {
            yaml.push_str(&format!(
                "- {{ id: filler_{d}, name: 业务{d}, description: 处理编号{d}的业务, domain: d{}, endpoint: {{ url: \"http://127.0.0.1:1/x\", protocol: http }}, keywords: [业务{d}] }}\n",
                d % 4
            ));
        }
        let yaml = yaml.replace("  name: 天气查询\n", "  name: 天气查询\n  domain: weather\n");
        let r = recognizer(&yaml);
        assert!(r.gate_domains);
        assert_eq!(ids(&r.recognize("明天上海冷不冷")), ["weather"]);
        assert_eq!(ids(&r.recognize("帮我处理业务7")), ["filler_7"]);
    }
}
