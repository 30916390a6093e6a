//! Intent-recognition evaluation report: every query of `tests/fixtures/eval/*_queries.yaml` goes
//! through `planner::plan_turn` against its config (loaded with `RegistryHandle::open`), and the
//! report prints per-kind accuracy (exact agent sets), out-of-scope precision (nothing dispatched
//! when nothing should be) and, for misses, whether the right cards are among the candidates.
//!
//! `cargo test --test integration recognition -- --nocapture` shows the report. The demo set is
//! the tuning set; the held-out set (its own insurance / IT / HR config) and the third set
//! (orders, bank card, clinic, bills…) were written before their first run (README,
//! "Recognition", says how far each was looked at since). Only the floors reached are asserted.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::NaiveDate;
use serde::Deserialize;
use serde_json::Map;
use switchboard::matching::normalize;
use switchboard::planner::{self, Decision, TurnInput};
use switchboard::registry::{Registry, RegistryHandle};

use crate::common::repo;

#[derive(Deserialize)]
struct QuerySet {
    config: String,
    queries: Vec<EvalQuery>,
}

#[derive(Deserialize)]
struct EvalQuery {
    q: String,
    expect: Vec<String>,
    kind: String,
}

/// Figures of one set.
#[derive(Default, Debug)]
pub(crate) struct Report {
    pub total: usize,
    pub exact: usize,
    pub by_kind: BTreeMap<String, (usize, usize)>,
    /// Task queries the old exact matcher (keywords, name, one whole example) got wrong.
    pub old_misses: (usize, usize),
    pub oos: (usize, usize),
    /// Misses (task queries) whose expected cards are all among the top candidates.
    pub misses_with_candidates: (usize, usize),
    /// Misses answered by a did-you-mean question that offers all the expected cards.
    pub misses_asked: (usize, usize),
}

fn pct((ok, n): (usize, usize)) -> f64 {
    if n == 0 {
        100.0
    } else {
        100.0 * ok as f64 / n as f64
    }
}

fn sorted(v: &[String]) -> Vec<String> {
    let mut v = v.to_vec();
    v.sort();
    v
}

/// The rule planner's decision for `query` as the first turn of a thread (nothing pending, no
/// values), on the eval's fixed date.
fn first_turn(reg: &Registry, query: &str) -> planner::TurnDecision {
    let empty = Map::new();
    let input = TurnInput {
        query,
        slots: &empty,
        session_slots: &empty,
        pending: None,
        pending_plan_id: None,
        choice: None,
        previous: None,
        today: NaiveDate::from_ymd_opt(2026, 11, 23).unwrap(),
        plan_id: "eval",
        lang: switchboard::text::Lang::detect(query),
    };
    planner::plan_turn(reg, input)
}

/// The agents `query` is planned for (nothing for a direct answer or escalation), and the
/// candidates of the did-you-mean question it asks instead, if any.
fn routed(reg: &Registry, query: &str) -> (Vec<String>, Vec<String>) {
    let turn = first_turn(reg, query);
    match turn.decision {
        Decision::Plan { .. } => (turn.intent.agents, Vec::new()),
        Decision::Choose(q) => {
            let mut unique = q.candidates.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(
                unique.len(),
                q.candidates.len(),
                "a capability offered twice for {query:?}: {:?}",
                q.candidates
            );
            (Vec::new(), q.candidates)
        }
        _ => (Vec::new(), Vec::new()),
    }
}

/// What the matcher before the recognizer found: keywords, name, or the whole query equal to an
/// example.
fn old_matcher(reg: &Registry, query: &str) -> Vec<String> {
    let lower = query.to_lowercase();
    let normalized = normalize(query);
    reg.enabled().filter(|a| a.matcher.find(&lower, &normalized).is_some()).map(|a| a.spec.id.to_string()).collect()
}

pub(crate) fn evaluate(set_file: &str) -> Report {
    let path = repo().join("tests/fixtures/eval").join(set_file);
    let set: QuerySet = serde_yaml_ng::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let config = path.parent().unwrap().join(&set.config);
    let handle = RegistryHandle::open(Path::new(&config)).unwrap_or_else(|e| panic!("{}: {e}", config.display()));
    let reg = handle.load();
    let mut r = Report::default();
    println!("\n== {set_file} ({} queries, config {})", set.queries.len(), set.config);
    for q in &set.queries {
        let (got, offered) = routed(&reg, &q.q);
        let got = sorted(&got);
        let want = sorted(&q.expect);
        let ok = got == want;
        r.total += 1;
        r.exact += ok as usize;
        let k = r.by_kind.entry(q.kind.clone()).or_default();
        k.0 += ok as usize;
        k.1 += 1;
        if want.is_empty() {
            r.oos.0 += got.is_empty() as usize;
            r.oos.1 += 1;
        } else if sorted(&old_matcher(&reg, &q.q)) != want {
            r.old_misses.0 += ok as usize;
            r.old_misses.1 += 1;
        }
        let mut note = String::new();
        if !ok && !want.is_empty() {
            let rec = reg.recognizer.recognize(&q.q);
            let top: Vec<String> = rec.top(5).iter().map(|c| c.id.clone()).collect();
            let found = want.iter().all(|w| top.contains(w));
            r.misses_with_candidates.0 += found as usize;
            r.misses_with_candidates.1 += 1;
            let asked = !offered.is_empty() && want.iter().all(|w| offered.contains(w));
            r.misses_asked.0 += asked as usize;
            r.misses_asked.1 += 1;
            note = format!(
                "  candidates: {}{}{}",
                rec.top(5).iter().map(|c| format!("{} {:.2}", c.id, c.confidence)).collect::<Vec<_>>().join(", "),
                if found { "" } else { "  (right card NOT among candidates)" },
                if offered.is_empty() { String::new() } else { format!("  did you mean: {}", offered.join(" / ")) }
            );
        }
        println!(
            "{} {:<11} {:<48} -> [{}]{}{}",
            if ok { "ok  " } else { "MISS" },
            q.kind,
            q.q,
            got.join(", "),
            if ok { String::new() } else { format!(" expected [{}]", want.join(", ")) },
            note
        );
    }
    println!("-- {set_file}: exact agent sets {}/{} ({:.1}%)", r.exact, r.total, pct((r.exact, r.total)));
    for (kind, v) in &r.by_kind {
        println!("   {kind:<11} {}/{} ({:.1}%)", v.0, v.1, pct(*v));
    }
    println!(
        "   queries the old exact matcher got wrong: {}/{} now right ({:.1}%)",
        r.old_misses.0,
        r.old_misses.1,
        pct(r.old_misses)
    );
    println!("   out-of-scope precision (nothing dispatched): {}/{} ({:.1}%)", r.oos.0, r.oos.1, pct(r.oos));
    println!(
        "   misses with the right cards among the top-5 candidates: {}/{} ({:.1}%)",
        r.misses_with_candidates.0,
        r.misses_with_candidates.1,
        pct(r.misses_with_candidates)
    );
    println!(
        "   misses answered by a did-you-mean question offering the right cards: {}/{} ({:.1}%)",
        r.misses_asked.0,
        r.misses_asked.1,
        pct(r.misses_asked)
    );
    r
}

// Floors: the figures reached when the recognizer was last tuned (README, "Recognition"); since
// 26 Nov with the semantic stage (feature `semantic`, on by default), fitted on every set but the
// fourteenth and fifteenth.

#[test]
fn recognition_report_demo_config_tuning_set() {
    assert_floors(&evaluate("demo_queries.yaml"), 97.0, 94.0, 100.0);
}

/// Share of the set either routed exactly or, for a missed task query, answered by a did-you-mean
/// question offering the right cards: what the user meets as "understood or asked".
fn right_or_asked(r: &Report) -> f64 {
    pct((r.exact + r.misses_asked.0, r.total))
}

/// Asserts a set's floors, in percent: exact agent sets, paraphrases, out-of-scope precision.
fn assert_floors(r: &Report, exact: f64, paraphrase: f64, oos: f64) {
    assert!(pct((r.exact, r.total)) >= exact, "{r:?}");
    assert!(pct(r.by_kind["paraphrase"]) >= paraphrase, "{r:?}");
    assert!(pct(r.oos) >= oos, "{r:?}");
}

#[test]
fn recognition_report_held_out_config() {
    let r = evaluate("eval_queries.yaml");
    assert_floors(&r, 95.0, 91.0, 100.0);
    assert!(pct(r.misses_with_candidates) >= 100.0, "{r:?}");
    assert!(right_or_asked(&r) >= 97.0, "{r:?}");
}

#[test]
fn recognition_report_third_config() {
    let r = evaluate("third_queries.yaml");
    assert_floors(&r, 91.0, 86.0, 91.0);
    assert!(right_or_asked(&r) >= 93.0, "{r:?}");
}

/// The fourth set was written blind by someone who never saw the recognizer (README,
/// "Recognition"); its first run gave 47/64 (paraphrases 18/34).
#[test]
fn recognition_report_fourth_config_written_blind() {
    assert_floors(&evaluate("fourth_queries.yaml"), 95.0, 94.0, 90.0);
}

/// The fifth set (airline and travel services) was written blind too.
#[test]
fn recognition_report_fifth_config_written_blind() {
    // A card's similarity by its centroid (26 Nov, fifth session): 57/60, out of scope 7/8.
    assert_floors(&evaluate("fifth_queries.yaml"), 93.0, 87.0, 87.0);
}

/// The sixth set (an electronics shop's sales and after-sales, and a health service: the seeds'
/// domains) was written blind too.
#[test]
fn recognition_report_sixth_config_written_blind() {
    assert_floors(&evaluate("sixth_queries.yaml"), 83.0, 75.0, 87.0);
}

/// The seventh set (a bank's and a mobile carrier's services) was written blind too, and first run
/// after the rule changes of the round (44/60, paraphrases 18/32).
#[test]
fn recognition_report_seventh_config_written_blind() {
    assert_floors(&evaluate("seventh_queries.yaml"), 85.0, 78.0, 100.0);
}

/// The eighth set (a university's student services and a city's public services) was written
/// blind and first run after every other change of the round.
#[test]
fn recognition_report_eighth_config_written_blind() {
    // Its first run, before any reading of its misses, was 41/60, paraphrases 17/32, out of
    // scope 7/8; the floors are what the round reached after reading them.
    assert_floors(&evaluate("eighth_queries.yaml"), 85.0, 81.0, 75.0);
}

/// The ninth set (car owners' services and rental housing) was written blind by a helper.
#[test]
fn recognition_report_ninth_config_written_blind() {
    // First run, before any change made after reading it: 34/60, paraphrases 13/32, out of scope 6/8.
    // Then: lexicon groups for its domains written by a helper who saw no query (paraphrases
    // 13 -> 17), and the rules changed after reading its misses. The rule that settles a question
    // the encoder clearly answers (26 Nov) costs one out-of-scope query ("帮我把家里那台开了五年的
    // 二手车挂出去卖了" now goes to the car-service card): out of scope 6/8 -> 5/8.
    // Sixth session, the odds of the encoder's nearest card (floors one query under): +1 paraphrase(s).
    // Seventh session, what follows a negation and the encoder decided beside a topic rival (floors one query under): +1 paraphrase.
    assert_floors(&evaluate("ninth_queries.yaml"), 83.0, 81.0, 62.0);
}

/// The tenth set (a pet-care platform and a fitness and leisure membership app) was written blind
/// by a helper.
#[test]
fn recognition_report_tenth_config_written_blind() {
    // First run, before any change made after reading it: 27/60, paraphrases 9/32, out of scope 4/8.
    // Then: lexicon groups for its domains written by a helper who saw no query (paraphrases
    // 9 -> 15), and the rules changed after reading its misses.
    assert_floors(&evaluate("tenth_queries.yaml"), 73.0, 68.0, 75.0);
}

/// The eleventh set (a securities brokerage app and a hospital's inpatient services) was written
/// blind by a helper, in domains the lexicon was then kept out of.
#[test]
fn recognition_report_eleventh_config_written_blind() {
    // First run, before any change made after reading it: 31/60, paraphrases 8/32, out of scope
    // 6/8.
    // Its domains were kept out of the lexicon until the rules changed since gave 33/60, 10/32;
    // then a helper who saw no query wrote groups for them, from a brief written after reading
    // the misses (it named some of their words): 38/60, 16/32.
    // Sixth session, the odds of the encoder's nearest card (floors one query under): +1 paraphrase(s).
    // Seventh session, what follows a negation and the encoder decided beside a topic rival (floors one query under): +1 paraphrase.
    assert_floors(&evaluate("eleventh_queries.yaml"), 80.0, 71.0, 75.0);
}

/// The twelfth set (a company's HR and IT employee self-service) was written blind by a helper,
/// in domains a helper had written lexicon groups for without seeing any query.
#[test]
fn recognition_report_twelfth_config_written_blind() {
    // First run, before any change made after reading it: 42/60, paraphrases 20/32, out of scope
    // 6/8 (with the lexicon as it was before the HR / IT groups written blind: 39/60, 18/32).
    assert_floors(&evaluate("twelfth_queries.yaml"), 83.0, 78.0, 75.0);
}

/// The thirteenth set (a utility company and a city's municipal hotline) was written blind by a
/// helper and first run after every change of the round.
#[test]
fn recognition_report_thirteenth_config_written_blind() {
    // Its first run, before any reading of its misses: 37/60, paraphrases 15/32, out of scope 5/8.
    // Then lexicon groups for city reports and utility situations by a helper who saw no query,
    // from a brief written after reading its misses (naming some of their words): 45/60, 21/32.
    // A card's similarity by its centroid (26 Nov, fifth session): 49 -> 46/60, paraphrases
    // 25 -> 22/32.
    assert_floors(&evaluate("thirteenth_queries.yaml"), 76.0, 68.0, 62.0);
}

/// The fourteenth set (an e-commerce seller center and a smart-home / home-solar company) was
/// written blind by a helper and first run with the lexicon and rules as they were on 25 Nov.
#[test]
fn recognition_report_fourteenth_config_written_blind() {
    // First run, before any reading of its misses: 36/60, paraphrases 12/32, out of scope 7/8.
    // Seventh session, what follows a negation and the encoder decided beside a topic rival (floors one query under): +2 paraphrases.
    // Seventh session, a card meant outside a negated request not negated by a shared word (floors one query under): +1 correction.
    assert_floors(&evaluate("fourteenth_queries.yaml"), 78.0, 62.0, 87.0);
}

/// The fifteenth set (an online game's player support and a theme park's visitor service) was
/// written blind by a helper and first run with the lexicon and rules as they were on 25 Nov.
#[test]
fn recognition_report_fifteenth_config_written_blind() {
    // First run, before any reading of its misses: 37/60, paraphrases 14/32, out of scope 8/8.
    // A card's similarity by its centroid (26 Nov, fifth session): 53 -> 51/60, out of scope 7/8.
    // Sixth session, the odds of the encoder's nearest card (floors one query under): +1 paraphrase(s).
    // Seventh session, a card meant outside a negated request not negated by a shared word (floors one query under): +1 correction.
    assert_floors(&evaluate("fifteenth_queries.yaml"), 86.0, 81.0, 87.0);
}

/// The sixteenth set (a food-delivery platform's customer service and a residential property
/// manager's resident service) was written blind by a helper and first run with the recognizer as
/// it was on 26 Nov (after the semantic stage).
#[test]
fn recognition_report_sixteenth_config_written_blind() {
    // First run, before any reading of its misses: 38/60, paraphrases 16/32, out of scope 6/8.
    // Then, with the rule changes of 26 Nov made after reading its misses: 42/60, 18/32.
    // A card's similarity by its centroid (26 Nov, fifth session): 43 -> 41/60 (paraphrases
    // 19 -> 20/32, two multi-intent queries lose their second card), out of scope 5/8.
    assert_floors(&evaluate("sixteenth_queries.yaml"), 68.0, 62.0, 62.0);
}

/// The seventeenth set (an online-education platform's learner support and a city's exit-entry
/// and residence administration) was written blind by a helper and first run with the recognizer
/// as it was on 26 Nov (after the semantic stage).
#[test]
fn recognition_report_seventeenth_config_written_blind() {
    // First run, before any reading of its misses: 34/60, paraphrases 11/32, out of scope 6/8.
    // Then, with the rule changes of 26 Nov made after reading its misses: 40/60, 15/32.
    assert_floors(&evaluate("seventeenth_queries.yaml"), 66.0, 46.0, 75.0);
}

/// The eighteenth set (a cloud platform's support desk and a hotel's in-stay guest services) was
/// written blind by a helper and first run with the recognizer as it was at the start of 26 Nov's
/// second session (after the sixteenth and seventeenth sets' changes).
#[test]
fn recognition_report_eighteenth_config_written_blind() {
    // First run, before any reading of its misses: 38/60, paraphrases 18/32, out of scope 4/5.
    // Then, with the agreement rule and the phrasal-verb compounds made after reading them: 40/60,
    // 19/32.
    // Sixth session, the odds of the encoder's nearest card (floors one query under): +2 paraphrase(s).
    // Seventh session, what follows a negation and the encoder decided beside a topic rival (floors one query under): +1 negation.
    // Seventh session, corrections read without what they take back (floors one query under): +1 correction.
    assert_floors(&evaluate("eighteenth_queries.yaml"), 71.0, 62.0, 80.0);
}

/// The nineteenth set (a cross-border freight forwarder's desk and a car dealership's customer
/// service), written and first run like the eighteenth.
#[test]
fn recognition_report_nineteenth_config_written_blind() {
    // First run, before any reading of its misses: 42/60, paraphrases 22/32, out of scope 2/5.
    // Unchanged in exact sets by the rules that followed (one more miss asked with its card).
    // Seventh session, what follows a negation and the encoder decided beside a topic rival (floors one query under): +2 paraphrases, +1 negation.
    // Seventh session, negated phrases cut at word boundaries and pauses: +1 correction.
    assert_floors(&evaluate("nineteenth_queries.yaml"), 81.0, 84.0, 40.0);
}

/// The twentieth set (a legal-aid service and a bike / e-scooter sharing app), written blind by a
/// helper session like the eighteenth, on 26 Nov after the rules above.
#[test]
fn recognition_report_twentieth_config_written_blind() {
    // First run, before any reading of its misses: 43/60, paraphrases 21/32, out of scope 7/8
    // (chit-chat included). Then, with retractions ("… actually scratch that, …"): 46/60; with the
    // rule that settles a question the encoder clearly answers: 51/60, paraphrases 26/32.
    // Seventh session, what follows a negation and the encoder decided beside a topic rival (floors one query under): +1 multi.
    // Eighth session, a reported instruction negates nothing (tuned on it): 56/60, paraphrases 29/32.
    assert_floors(&evaluate("twentieth_queries.yaml"), 91.0, 87.0, 87.0);
}

/// The twenty-first set (a farmers' co-op and a kindergarten's parent app), written like the
/// twentieth.
#[test]
fn recognition_report_twentyfirst_config_written_blind() {
    // First run, before any reading of its misses: 36/60, paraphrases 19/32, out of scope 4/8.
    // Then, with retractions: 37/60; with a thanks naming the teacher answered as thanks: 38/60,
    // out of scope 5/8; with the rule that settles a question the encoder clearly answers: 42/60,
    // paraphrases 23/32.
    // Sixth session, the odds of the encoder's nearest card (floors one query under): +1 paraphrase(s).
    assert_floors(&evaluate("twentyfirst_queries.yaml"), 75.0, 75.0, 62.0);
}

/// The twenty-second set (a mobile carrier and a wedding planner), written blind by a helper
/// session like the twentieth, on 26 Nov, after the twenty-first's rules and before the rule
/// that settles a question the encoder clearly answers.
#[test]
fn recognition_report_twentysecond_config_written_blind() {
    // First run, before any reading of its misses: 35/60, paraphrases 17/32, out of scope 4/8
    // (chit-chat included). The rule that settles a question the encoder clearly answers, written
    // before this set and measured on it after: 37/60, 19/32. Then, with advice requests planning
    // no card that does not advise (made after reading its out-of-scope misses): 40/60, out of
    // scope 7/8.
    // Seventh session, a card meant outside a negated request not negated by a shared word (floors one query under): +1 negation.
    // Seventh session, corrections read without what they take back (floors one query under): +1 correction.
    assert_floors(&evaluate("twentysecond_queries.yaml"), 73.0, 62.0, 87.0);
}

/// The twenty-third set (a veterinary clinic chain and a real-estate brokerage), written like the
/// twenty-second.
#[test]
fn recognition_report_twentythird_config_written_blind() {
    // First run, before any reading of its misses: 37/60, paraphrases 18/32, out of scope 5/8.
    // With the rule that settles a question the encoder clearly answers: 40/60, 20/32.
    assert_floors(&evaluate("twentythird_queries.yaml"), 66.0, 62.0, 62.0);
}

/// The twenty-fourth set (a retail pharmacy chain and a moving company), written blind by a
/// helper session on 26 Nov (fifth session), after the rules of that session (the encoder settling
/// a question, advice requests, cards by centroid).
#[test]
fn recognition_report_twentyfourth_config_written_blind() {
    // First run, before any reading of its misses: 41/60, paraphrases 20/32, out of scope 6/8
    // (chit-chat included).
    // Sixth session, the odds of the encoder's nearest card (floors one query under): +2 paraphrase(s).
    assert_floors(&evaluate("twentyfourth_queries.yaml"), 70.0, 65.0, 75.0);
}

/// The twenty-fifth set (a coworking space and a laundry / dry-cleaning service), written like
/// the twenty-fourth.
#[test]
fn recognition_report_twentyfifth_config_written_blind() {
    // First run, before any reading of its misses: 45/60, paraphrases 20/32, out of scope 8/8.
    // Then, with a request for the cheapest option served by a card dealing in plans or billing:
    // 46/60, 21/32.
    assert_floors(&evaluate("twentyfifth_queries.yaml"), 76.0, 65.0, 100.0);
}

/// The twenty-sixth set (a city public library and a live-event ticketing platform), written
/// blind by a helper session on 26 Nov (sixth session), before that session's changes.
#[test]
fn recognition_report_twentysixth_config_written_blind() {
    // First run, before any reading of its misses: 38/60, paraphrases 17/32, out of scope 5/8
    // (chit-chat included).
    // Seventh session, corrections read without what they take back (floors one query under): +1 correction (tuned on its misses).
    assert_floors(&evaluate("twentysixth_queries.yaml"), 65.0, 53.0, 62.0);
}

/// The twenty-seventh set (a dental clinic chain and a small-business accounting and tax
/// service), written like the twenty-sixth.
#[test]
fn recognition_report_twentyseventh_config_written_blind() {
    // First run, before any reading of its misses: 47/60, paraphrases 22/32, out of scope 7/8.
    assert_floors(&evaluate("twentyseventh_queries.yaml"), 78.0, 68.0, 87.0);
}

/// The twenty-eighth set (a museum's visitor services and a ride-hailing company's
/// driver-partner support), written blind by a helper at the start of 26 Nov's seventh session.
#[test]
fn recognition_report_twentyeighth_config_written_blind() {
    // First run, before any reading of its misses: 44/60, paraphrases 19/32, out of scope 7/8
    // (the same with the recognizer of the session's start).
    assert_floors(&evaluate("twentyeighth_queries.yaml"), 71.0, 56.0, 87.0);
}

/// The twenty-ninth set (an electric-vehicle charging network and a cruise line's guest
/// services), written like the twenty-eighth.
#[test]
fn recognition_report_twentyninth_config_written_blind() {
    // First run, before any reading of its misses: 48/60, paraphrases 24/32, out of scope 6/8
    // (the same with the recognizer of the session's start).
    assert_floors(&evaluate("twentyninth_queries.yaml"), 78.0, 71.0, 75.0);
}

/// The thirtieth set (a fitness club chain and a home-appliance repair service), written blind
/// by a helper at the start of 27 Nov's session.
#[test]
fn recognition_report_thirtieth_config_written_blind() {
    // First run, before any reading of its misses: 42/60, paraphrases 20/32, out of scope 4/8.
    // 27 Nov, after its misses were read (tuned-on): 46/60, 22/32, 5/8.
    assert_floors(&evaluate("thirtieth_queries.yaml"), 75.0, 65.0, 50.0);
}

/// The thirty-first set (a car-rental company and a video streaming service), written like the
/// thirtieth.
#[test]
fn recognition_report_thirtyfirst_config_written_blind() {
    // First run, before any reading of its misses: 44/60, paraphrases 22/32, out of scope 7/8.
    // 27 Nov, after its misses were read (tuned-on): 45/60, 22/32, 7/8.
    assert_floors(&evaluate("thirtyfirst_queries.yaml"), 73.0, 65.0, 75.0);
}

/// The thirty-second set (a driving school's student service desk), written blind by a helper
/// at the start of 27 Nov's second session.
#[test]
fn recognition_report_thirtysecond_config_written_blind() {
    // First run, before any reading of its misses: 34/60, paraphrases 16/32, out of scope 4/8.
    assert_floors(&evaluate("thirtysecond_queries.yaml"), 55.0, 46.0, 37.0);
}

/// The thirty-third set (a ski resort's guest services), written like the thirty-second.
#[test]
fn recognition_report_thirtythird_config_written_blind() {
    // First run, before any reading of its misses: 39/60, paraphrases 19/32, out of scope 6/8.
    assert_floors(&evaluate("thirtythird_queries.yaml"), 63.0, 56.0, 62.0);
}

/// The thirty-fourth set (a hair salon and beauty chain), written blind by a helper during 27
/// Nov's second session, after the rules of that session's first half.
#[test]
fn recognition_report_thirtyfourth_config_written_blind() {
    // First run, before any reading of its misses: 40/60, paraphrases 22/32, out of scope 5/8.
    assert_floors(&evaluate("thirtyfourth_queries.yaml"), 65.0, 65.0, 50.0);
}

/// The thirty-fifth set (a photo-printing and framing shop), written like the thirty-fourth.
#[test]
fn recognition_report_thirtyfifth_config_written_blind() {
    // First run, before any reading of its misses: 38/60, paraphrases 20/32, out of scope 5/8.
    assert_floors(&evaluate("thirtyfifth_queries.yaml"), 61.0, 59.0, 50.0);
}

/// The thirty-sixth set (an elderly-care and nursing-home operator), written blind by a helper
/// at the start of 27 Nov's third session.
#[test]
fn recognition_report_thirtysixth_config_written_blind() {
    // First run, before any reading of its misses: 51/60, paraphrases 25/32, out of scope 8/8.
    assert_floors(&evaluate("thirtysixth_queries.yaml"), 83.0, 75.0, 87.0);
}

/// The thirty-seventh set (a bakery and custom-cake chain), written like the thirty-sixth.
#[test]
fn recognition_report_thirtyseventh_config_written_blind() {
    // First run, before any reading of its misses: 44/60, paraphrases 25/32, out of scope 4/8.
    assert_floors(&evaluate("thirtyseventh_queries.yaml"), 71.0, 75.0, 37.0);
}

/// The thirty-eighth set (a city parking operator), written blind by a helper at the start of
/// 27 Nov's fourth session.
#[test]
fn recognition_report_thirtyeighth_config_written_blind() {
    // First run, before any reading of its misses: 47/60, paraphrases 23/32, out of scope 6/8.
    assert_floors(&evaluate("thirtyeighth_queries.yaml"), 76.0, 68.0, 62.0);
}

/// The thirty-ninth set (an optician and eyewear chain), written like the thirty-eighth.
#[test]
fn recognition_report_thirtyninth_config_written_blind() {
    // First run, before any reading of its misses: 42/60, paraphrases 22/32, out of scope 5/8.
    assert_floors(&evaluate("thirtyninth_queries.yaml"), 68.0, 65.0, 50.0);
}

/// The fortieth set (a music school with instrument rental and repair), written blind by a
/// helper at the start of 27 Nov's fifth session.
#[test]
fn recognition_report_fortieth_config_written_blind() {
    // First run, before any reading of its misses: 43/60, paraphrases 20/32, out of scope 7/8.
    assert_floors(&evaluate("fortieth_queries.yaml"), 70.0, 59.0, 75.0);
}

/// The forty-first set (a translation and document legalization agency), written like the
/// fortieth.
#[test]
fn recognition_report_fortyfirst_config_written_blind() {
    // First run, before any reading of its misses: 49/60, paraphrases 23/32, out of scope 6/8.
    assert_floors(&evaluate("fortyfirst_queries.yaml"), 80.0, 68.0, 62.0);
}

/// The forty-second set (a florist and plant shop), written blind by a helper at the start of
/// 27 Nov's sixth session.
#[test]
fn recognition_report_fortysecond_config_written_blind() {
    // First run, before any reading of its misses: 46/60, paraphrases 25/32, out of scope 6/8.
    assert_floors(&evaluate("fortysecond_queries.yaml"), 75.0, 75.0, 62.0);
}

/// The forty-third set (a campsite, RV park and glamping operator), written like the
/// forty-second.
#[test]
fn recognition_report_fortythird_config_written_blind() {
    // First run, before any reading of its misses: 53/60, paraphrases 29/32, out of scope 8/8.
    assert_floors(&evaluate("fortythird_queries.yaml"), 86.0, 87.0, 87.0);
}

/// The forty-fourth set (a golf club), written blind by a helper at the start of 27 Nov's seventh
/// session.
#[test]
fn recognition_report_fortyfourth_config_written_blind() {
    // First run, before any reading of its misses: 54/60, paraphrases 27/32, out of scope 8/8.
    assert_floors(&evaluate("fortyfourth_queries.yaml"), 88.0, 81.0, 87.0);
}

/// The forty-fifth set (a bespoke tailor and alterations shop), written like the forty-fourth.
#[test]
fn recognition_report_fortyfifth_config_written_blind() {
    // First run, before any reading of its misses: 46/60, paraphrases 21/32, out of scope 7/8.
    assert_floors(&evaluate("fortyfifth_queries.yaml"), 75.0, 62.0, 75.0);
}

/// The forty-sixth set (a marina), written blind by a helper at the start of 27 Nov's eighth
/// session.
#[test]
fn recognition_report_fortysixth_config_written_blind() {
    // First run, before any reading of its misses: 47/60, paraphrases 23/32, out of scope 6/8.
    // Lowered on 28 Nov (sixteenth session) to one query under 45/60 and 21/32: with `OVERRIDE`
    // at 0.1 two of its paraphrases ask between the pick and the encoder's card (all sets: +17 −8).
    assert_floors(&evaluate("fortysixth_queries.yaml"), 73.0, 62.0, 62.0);
}

/// The forty-seventh set (an insurance brokerage), written like the forty-sixth.
#[test]
fn recognition_report_fortyseventh_config_written_blind() {
    // First run, before any reading of its misses: 39/60, paraphrases 18/32, out of scope 6/8.
    assert_floors(&evaluate("fortyseventh_queries.yaml"), 63.0, 53.0, 62.0);
}

/// The forty-eighth set (a moving and storage company), written blind by a helper at the start of
/// 27 Nov's ninth session.
#[test]
fn recognition_report_fortyeighth_config_written_blind() {
    // First run, before any reading of its misses: 46/60, paraphrases 25/32, out of scope 6/8.
    assert_floors(&evaluate("fortyeighth_queries.yaml"), 75.0, 75.0, 62.0);
}

/// The forty-ninth set (a city waste and recycling service), written like the forty-eighth.
#[test]
fn recognition_report_fortyninth_config_written_blind() {
    // First run, before any reading of its misses: 45/60, paraphrases 21/32, out of scope 8/8.
    assert_floors(&evaluate("fortyninth_queries.yaml"), 73.0, 62.0, 87.0);
}

/// The fiftieth set (a domestic-services agency), written blind by a helper in 27 Nov's ninth
/// session, after the forty-eighth and forty-ninth.
#[test]
fn recognition_report_fiftieth_config_written_blind() {
    // First run, before any reading of its misses: 49/60, paraphrases 26/32, out of scope 6/8.
    assert_floors(&evaluate("fiftieth_queries.yaml"), 80.0, 78.0, 62.0);
}

/// The fifty-first set (a bookstore with a café), written like the fiftieth.
#[test]
fn recognition_report_fiftyfirst_config_written_blind() {
    // First run, before any reading of its misses: 50/60, paraphrases 28/32, out of scope 6/8.
    assert_floors(&evaluate("fiftyfirst_queries.yaml"), 81.0, 84.0, 62.0);
}

/// The fifty-second set (a pest control company), written blind by a helper at the start of
/// 28 Nov's tenth session.
#[test]
fn recognition_report_fiftysecond_config_written_blind() {
    // First run, before any reading of its misses: 48/60, paraphrases 23/32, out of scope 5/8.
    assert_floors(&evaluate("fiftysecond_queries.yaml"), 78.0, 68.0, 50.0);
}

/// The fifty-third set (a language school), written like the fifty-second.
#[test]
fn recognition_report_fiftythird_config_written_blind() {
    // First run, before any reading of its misses: 49/60, paraphrases 27/32, out of scope 6/8.
    assert_floors(&evaluate("fiftythird_queries.yaml"), 80.0, 81.0, 62.0);
}

/// The fifty-fourth set (a wedding and portrait photography studio), written blind by a helper in
/// 28 Nov's tenth session, after the rules read off the fifty-second and fifty-third.
#[test]
fn recognition_report_fiftyfourth_config_written_blind() {
    // First run, before any reading of its misses: 51/60, paraphrases 26/32, out of scope 7/8.
    assert_floors(&evaluate("fiftyfourth_queries.yaml"), 83.0, 78.0, 75.0);
}

/// The fifty-fifth set (a print and copy shop), written like the fifty-fourth.
#[test]
fn recognition_report_fiftyfifth_config_written_blind() {
    // First run, before any reading of its misses: 48/60, paraphrases 27/32, out of scope 7/8.
    assert_floors(&evaluate("fiftyfifth_queries.yaml"), 78.0, 81.0, 75.0);
}

/// The fifty-sixth set (a car wash and auto detailing chain), written blind by a helper in 28 Nov's
/// eleventh session, like the fifty-second; the four sets of that session were first run on its
/// starting code (9b2d623).
#[test]
fn recognition_report_fiftysixth_config_written_blind() {
    // First run, before any reading of its misses: 49/60, paraphrases 27/32, out of scope 6/8.
    assert_floors(&evaluate("fiftysixth_queries.yaml"), 80.0, 81.0, 62.0);
}

/// The fifty-seventh set (a funeral home and memorial services), written like the fifty-sixth.
#[test]
fn recognition_report_fiftyseventh_config_written_blind() {
    // First run, before any reading of its misses: 42/60, paraphrases 22/32, out of scope 6/8.
    assert_floors(&evaluate("fiftyseventh_queries.yaml"), 68.0, 65.0, 62.0);
}

/// The fifty-eighth set (a swimming pool and swim school), written like the fifty-sixth.
#[test]
fn recognition_report_fiftyeighth_config_written_blind() {
    // First run, before any reading of its misses: 47/60, paraphrases 25/32, out of scope 6/8.
    assert_floors(&evaluate("fiftyeighth_queries.yaml"), 76.0, 75.0, 62.0);
}

/// The fifty-ninth set (a locksmith and home security installer), written like the fifty-sixth.
#[test]
fn recognition_report_fiftyninth_config_written_blind() {
    // First run, before any reading of its misses: 41/60, paraphrases 23/32, out of scope 4/8.
    assert_floors(&evaluate("fiftyninth_queries.yaml"), 66.0, 68.0, 37.0);
}

/// The sixtieth set (a community pharmacy with home delivery), written like the fifty-sixth.
#[test]
fn recognition_report_sixtieth_config_written_blind() {
    // First run, before any reading of its misses: 50/60, paraphrases 25/32, out of scope 7/9.
    assert_floors(&evaluate("sixtieth_queries.yaml"), 81.0, 74.0, 66.0);
}

/// The sixty-first set (a bicycle shop and repair workshop), written like the fifty-sixth.
#[test]
fn recognition_report_sixtyfirst_config_written_blind() {
    // First run, before any reading of its misses: 43/60, paraphrases 22/32, out of scope 4/9.
    assert_floors(&evaluate("sixtyfirst_queries.yaml"), 69.0, 65.0, 33.0);
}

/// The sixty-second set (an escape room and board game café), written like the fifty-sixth.
#[test]
fn recognition_report_sixtysecond_config_written_blind() {
    // First run, before any reading of its misses: 47/60, paraphrases 25/32, out of scope 6/9.
    assert_floors(&evaluate("sixtysecond_queries.yaml"), 76.0, 74.0, 55.0);
}

/// The sixty-third set (a phone and laptop repair shop), written like the fifty-sixth.
#[test]
fn recognition_report_sixtythird_config_written_blind() {
    // First run, before any reading of its misses: 37/60, paraphrases 19/32, out of scope 7/9.
    assert_floors(&evaluate("sixtythird_queries.yaml"), 59.0, 56.0, 66.0);
}

/// The sixty-fourth set (a laundry and dry-cleaning shop with pickup), written like the fifty-sixth.
#[test]
fn recognition_report_sixtyfourth_config_written_blind() {
    // First run, before any reading of its misses: 46/60, paraphrases 24/32, out of scope 6/9.
    assert_floors(&evaluate("sixtyfourth_queries.yaml"), 74.0, 71.0, 55.0);
}

/// The sixty-fifth set (a cinema chain's customer desk), written like the fifty-sixth.
#[test]
fn recognition_report_sixtyfifth_config_written_blind() {
    // First run, before any reading of its misses: 40/60, paraphrases 19/32, out of scope 5/9.
    assert_floors(&evaluate("sixtyfifth_queries.yaml"), 64.0, 56.0, 44.0);
}

/// The sixty-sixth set (a housing estate's property management desk), written like the fifty-sixth.
#[test]
fn recognition_report_sixtysixth_config_written_blind() {
    // First run, before any reading of its misses: 44/60, paraphrases 22/32, out of scope 6/9.
    assert_floors(&evaluate("sixtysixth_queries.yaml"), 71.0, 65.0, 55.0);
}

/// The sixty-seventh set (an express courier's customer desk), written like the fifty-sixth.
#[test]
fn recognition_report_sixtyseventh_config_written_blind() {
    // First run, before any reading of its misses: 43/60, paraphrases 21/32, out of scope 7/9.
    assert_floors(&evaluate("sixtyseventh_queries.yaml"), 69.0, 62.0, 66.0);
}

/// The sixty-eighth set (a city business hotel's front desk), written like the fifty-sixth.
#[test]
fn recognition_report_sixtyeighth_config_written_blind() {
    // First run, before any reading of its misses: 36/60, paraphrases 17/32, out of scope 5/9.
    assert_floors(&evaluate("sixtyeighth_queries.yaml"), 58.0, 50.0, 44.0);
}

/// The sixty-ninth set (a restaurant group's customer desk), written like the fifty-sixth.
#[test]
fn recognition_report_sixtyninth_config_written_blind() {
    // First run, before any reading of its misses: 45/60, paraphrases 24/32, out of scope 7/9.
    assert_floors(&evaluate("sixtyninth_queries.yaml"), 73.0, 71.0, 66.0);
}

/// The seventieth set (a pet grooming and boarding shop), written like the fifty-sixth.
#[test]
fn recognition_report_seventieth_config_written_blind() {
    // First run, before any reading of its misses: 42/60, paraphrases 22/32, out of scope 6/9.
    assert_floors(&evaluate("seventieth_queries.yaml"), 68.0, 65.0, 55.0);
}

/// The seventy-first set (an after-school tutoring centre's parents' desk), written like the fifty-sixth.
#[test]
fn recognition_report_seventyfirst_config_written_blind() {
    // First run, before any reading of its misses: 42/60, paraphrases 23/32, out of scope 5/9.
    assert_floors(&evaluate("seventyfirst_queries.yaml"), 68.0, 68.0, 44.0);
}

/// The seventy-second set (a self-storage facility's customer desk), written like the fifty-sixth.
#[test]
fn recognition_report_seventysecond_config_written_blind() {
    // First run, before any reading of its misses: 43/60, paraphrases 21/32, out of scope 7/9.
    assert_floors(&evaluate("seventysecond_queries.yaml"), 70.0, 62.0, 66.0);
}

/// The seventy-third set (a car rental company's customer service desk), written like the fifty-sixth.
#[test]
fn recognition_report_seventythird_config_written_blind() {
    // First run, before any reading of its misses: 48/60, paraphrases 25/32, out of scope 7/9.
    assert_floors(&evaluate("seventythird_queries.yaml"), 78.0, 74.0, 66.0);
}

/// The seventy-fourth set (a dental clinic's front desk), written like the fifty-sixth.
#[test]
fn recognition_report_seventyfourth_config_written_blind() {
    // First run, before any reading of its misses: 40/60, paraphrases 18/32, out of scope 8/9.
    assert_floors(&evaluate("seventyfourth_queries.yaml"), 64.0, 53.0, 77.0);
}

/// The seventy-fifth set (a city public library's help desk), written like the fifty-sixth.
#[test]
fn recognition_report_seventyfifth_config_written_blind() {
    // First run, before any reading of its misses: 47/60, paraphrases 22/32, out of scope 6/9.
    assert_floors(&evaluate("seventyfifth_queries.yaml"), 76.0, 65.0, 55.0);
}

/// The seventy-sixth set (a city water and gas utility's customer line), written like the fifty-sixth.
#[test]
fn recognition_report_seventysixth_config_written_blind() {
    // First run, before any reading of its misses: 41/60, paraphrases 20/32, out of scope 6/9.
    assert_floors(&evaluate("seventysixth_queries.yaml"), 66.0, 59.0, 55.0);
}

/// The seventy-seventh set (a travel agency's customer desk), written like the fifty-sixth.
#[test]
fn recognition_report_seventyseventh_config_written_blind() {
    // First run, before any reading of its misses: 42/60, paraphrases 22/32, out of scope 6/9.
    assert_floors(&evaluate("seventyseventh_queries.yaml"), 68.0, 65.0, 55.0);
}

/// The seventy-eighth set (a community-supported farm's vegetable-box member desk), written like the fifty-sixth.
#[test]
fn recognition_report_seventyeighth_config_written_blind() {
    // First run, before any reading of its misses: 42/60, paraphrases 21/32, out of scope 7/9.
    assert_floors(&evaluate("seventyeighth_queries.yaml"), 68.0, 62.0, 66.0);
}

/// The seventy-ninth set (a piano shop's service desk), written like the fifty-sixth.
#[test]
fn recognition_report_seventyninth_config_written_blind() {
    // First run, before any reading of its misses: 43/60, paraphrases 23/32, out of scope 6/9.
    assert_floors(&evaluate("seventyninth_queries.yaml"), 70.0, 68.0, 55.0);
}

/// The eightieth set (a coworking space's front desk), written like the fifty-sixth.
#[test]
fn recognition_report_eightieth_config_written_blind() {
    // First run, before any reading of its misses: 47/60, paraphrases 20/32, out of scope 8/9.
    assert_floors(&evaluate("eightieth_queries.yaml"), 76.0, 59.0, 77.0);
}

/// The eighty-first set (a furniture store's customer service desk), written like the fifty-sixth.
#[test]
fn recognition_report_eightyfirst_config_written_blind() {
    // First run, before any reading of its misses: 39/60, paraphrases 19/32, out of scope 5/9.
    assert_floors(&evaluate("eightyfirst_queries.yaml"), 63.0, 56.0, 44.0);
}

/// The eighty-second set (a private kindergarten's admissions and family office), written like the fifty-sixth.
#[test]
fn recognition_report_eightysecond_config_written_blind() {
    // First run, before any reading of its misses: 44/60, paraphrases 21/32, out of scope 7/9.
    assert_floors(&evaluate("eightysecond_queries.yaml"), 71.0, 62.0, 66.0);
}

/// The eighty-third set (a harbour boat-tour operator's booking desk), written like the fifty-sixth.
#[test]
fn recognition_report_eightythird_config_written_blind() {
    // First run, before any reading of its misses: 49/60, paraphrases 27/32, out of scope 7/9.
    assert_floors(&evaluate("eightythird_queries.yaml"), 80.0, 81.0, 66.0);
}

/// The eighty-fourth set (an optician's front desk), written like the fifty-sixth.
#[test]
fn recognition_report_eightyfourth_config_written_blind() {
    // First run, before any reading of its misses: 45/60, paraphrases 24/32, out of scope 5/9.
    assert_floors(&evaluate("eightyfourth_queries.yaml"), 73.0, 71.0, 44.0);
}

/// The eighty-fifth set (a home moving company's customer desk), written like the fifty-sixth.
#[test]
fn recognition_report_eightyfifth_config_written_blind() {
    // First run, before any reading of its misses: 48/60, paraphrases 24/32, out of scope 7/9.
    assert_floors(&evaluate("eightyfifth_queries.yaml"), 78.0, 71.0, 66.0);
}

/// The eighty-sixth set (a wedding and events venue's sales and coordination office), written like the fifty-sixth.
#[test]
fn recognition_report_eightysixth_config_written_blind() {
    // First run, before any reading of its misses: 50/60, paraphrases 26/32, out of scope 6/9.
    assert_floors(&evaluate("eightysixth_queries.yaml"), 81.0, 78.0, 55.0);
}

/// The eighty-seventh set (a car wash and detailing chain's customer service), written like the fifty-sixth.
#[test]
fn recognition_report_eightyseventh_config_written_blind() {
    // First run, before any reading of its misses: 45/60, paraphrases 22/32, out of scope 7/9.
    assert_floors(&evaluate("eightyseventh_queries.yaml"), 73.0, 65.0, 66.0);
}

/// A card written in Chinese only cannot be met on the words of an English query: when the
/// encoder finds it nearer than the card the words picked (by 0.05 of cosine, and ahead of every
/// other card), it is planned instead; not when the pick shares the query's topic and it does
/// not, and not when "and can …" joins a second request the pick may be for.
#[test]
fn a_card_in_another_language_is_planned_on_meaning() {
    let open = |dir: &str| RegistryHandle::open(&repo().join("tests/fixtures/eval").join(dir)).unwrap();
    let seventh = open("seventh/agents_config.yaml");
    let q = "Please set aside 1000 US dollars in notes for me to collect next Tuesday";
    assert_eq!(routed(&seventh.load(), q).0, ["fx_cash_agent"]);
    let tenth = open("tenth/agents_config.yaml");
    let q = "The novels I checked out are due Friday, can I keep them another three weeks?";
    assert_eq!(routed(&tenth.load(), q).0, ["library_agent"]);
    // No word of any card and more about topics no card covers: left out of scope unencoded,
    // but for a card that does not speak the query's language.
    let florist = open("fortysecond/agents_config.yaml");
    let q = "My monstera has brown crispy patches on the leaves and tiny white bugs underneath. What should I do?";
    assert_eq!(routed(&florist.load(), q).0, ["plant_doctor_agent"]);
    let eleventh = open("eleventh/agents_config.yaml");
    let q = "Order a soft-food dinner for bed 9, and can his daughter visit tomorrow afternoon?";
    let mut planned = routed(&eleventh.load(), q).0;
    planned.sort();
    assert_eq!(planned, ["visitor_agent", "ward_services_agent"]);
}

/// A lone topical candidate under the selection threshold is planned when no other card comes
/// near it; a query whose own topic no card covers is not, and a near tie in a multi-clause
/// query asks like one in a single clause.
#[test]
fn lone_topical_candidates_and_near_ties_per_clause() {
    let open = |dir: &str| RegistryHandle::open(&repo().join("tests/fixtures/eval").join(dir)).unwrap();
    let third = open("third/agents_config.yaml");
    let q = "My daughter has a rash, can a pediatrician see her this week?";
    let rec = third.load().recognizer.recognize(q);
    let clinic = rec.score("clinic_agent").unwrap().confidence;
    assert!((0.25..switchboard::matching::recognize::SELECT).contains(&clinic), "{clinic}");
    assert_eq!(routed(&third.load(), q).0, ["clinic_agent"]);
    // A city is a value, not a task: the train card's city list alone plans nothing.
    let fifth = open("fifth/agents_config.yaml");
    assert!(routed(&fifth.load(), "我下周去成都").0.is_empty());
    let eighth = open("eighth/agents_config.yaml");
    // The campus card and the tuition card (whose fees are paid too) both fit "how do I put money
    // on the card I pay with in the cafeteria" on words: the campus card is planned (the encoder
    // finds it clearly nearer) or offered, never the tuition card planned.
    let (planned, offered) =
        routed(&eighth.load(), "How do I put more money on the card I use to pay in the cafeteria?");
    assert!(!planned.contains(&"tuition_agent".to_string()), "{planned:?}");
    let campus = "campus_card_agent".to_string();
    assert!(planned == [campus.clone()] || offered.contains(&campus), "{planned:?} {offered:?}");
    // A runner-up met only on the best card's own words offers no other reading: the parking
    // card shares only the car words of "oil change", so the service card stands alone.
    let ninth = open("ninth/agents_config.yaml");
    let q = "Due for an oil change and a tire rotation. Any openings Thursday?";
    assert_eq!(routed(&ninth.load(), q).0, ["car_service_agent"]);
    // A mortgage is a loan: no card of the third config covers loans, so its bank-card card is
    // not planned on a lone bank word.
    assert!(routed(&third.load(), "How do I apply for a mortgage?").0.is_empty());
    // A covered topic that only modifies an uncovered one right after it (商业发票 before 翻译)
    // does not make the query covered: a translation is asked for, not the customs card.
    let nineteenth = open("nineteenth/agents_config.yaml");
    assert!(routed(&nineteenth.load(), "帮我把这份英文的商业发票翻译成中文").0.is_empty());
}

/// Each side of "A, and also B" is a request of its own, as is a clause worded as a request
/// ("can someone …", "please …", "帮我 / 麻烦 …"): a card standing alone in such a clause is
/// planned beside the confident one; otherwise it is not.
#[test]
fn a_request_joined_by_a_connective_is_planned_when_it_stands_alone() {
    let open = |dir: &str| RegistryHandle::open(&repo().join("tests/fixtures/eval").join(dir)).unwrap();
    let fifth = open("fifth/agents_config.yaml");
    let (planned, _) = routed(&fifth.load(), "Check me in for CA1501 and put me by the window please");
    assert_eq!(sorted(&planned), ["checkin_agent", "seat_agent"]);
    let third = open("third/agents_config.yaml");
    assert_eq!(sorted(&routed(&third.load(), "退掉这双鞋，然后帮我约个牙医").0), ["clinic_agent", "return_agent"]);
    // A flight mentioned as context, with no connective adding it, is no second request.
    let demo = RegistryHandle::open(&repo().join("agents_config.yaml")).unwrap();
    assert_eq!(routed(&demo.load(), "I land at Pudong at 3pm, can a driver pick me up?").0, ["pickup_agent"]);
    // A clause worded as a request of its own ("can someone …", "麻烦 …") is one too: the pickup
    // is planned beside the flight its other clause names.
    let (planned, _) = routed(&demo.load(), "I land at PVG at 3pm tomorrow on MU5101, can someone pick me up?");
    assert_eq!(sorted(&planned), ["flight_agent", "pickup_agent"]);
    // A joined clause no word of any card supports gets a card by meaning only when the encoder
    // finds it clearly near: "The hail flattened my wheat" is the story of the insurance claim,
    // not a kindergarten's meal menu it is faintly nearest to.
    let twentyfirst = open("twentyfirst/agents_config.yaml");
    let q = "The hail flattened my wheat last week and I need to report it for insurance, and I'll also need to rent a tractor to clear the field.";
    assert_eq!(sorted(&routed(&twentyfirst.load(), q).0), ["crop_insurance_agent", "machinery_rental_agent"]);
}

/// A joined request whose clause no card was selected for gets the card its clause is nearest
/// to in meaning when that card leads the next by 0.1 of cosine from 0.28 on (as an asked turn
/// is settled), not only when the encoder selects it from 0.35; "separately" and "此外" join
/// requests like "also" and "另外".
#[cfg(feature = "semantic")]
#[test]
fn a_joined_request_is_planned_on_a_clear_lead_of_its_clause() {
    let sixteenth = eval_config("sixteenth").load();
    let q =
        "Register my sister as a visitor for Sunday please, and she'll need somewhere to leave her car for the day.";
    assert_eq!(sorted(&routed(&sixteenth, q).0), ["parking_agent", "visitor_access_agent"]);
    let q = "The rider was rude to me on the phone, and then I found a hair in the noodles.";
    assert_eq!(sorted(&routed(&sixteenth, q).0), ["hygiene_report_agent", "rider_complaint_agent"]);
    let hotel = eval_config("eighteenth").load();
    let q = "结账的时候发现多收了一晚房费，另外我们能不能再多住一天";
    assert_eq!(sorted(&routed(&hotel, q).0), ["folio_dispute_agent", "late_checkout_agent"]);
    // A lead under 0.1 is no choice: "how much do we owe for next term" is as near a harvest
    // card (0.37) as the tuition card (0.39), and is left to the summary's question.
    let twentyfirst = eval_config("twentyfirst").load();
    let q = "My mother-in-law will be picking up Emma on Friday, please add her to the list. Also, how much do we owe for next term?";
    assert_eq!(routed(&twentyfirst, q).0, ["pickup_auth_agent"]);
    // "separately" adds a request.
    let streaming = eval_config("thirtyfirst").load();
    let q = "Videos keep freezing on my laptop, and separately, do you have the new Dune movie yet?";
    assert_eq!(sorted(&routed(&streaming, q).0), ["content_request_agent", "playback_agent"]);
}

/// A correction takes back the cards its retracted part named, not every card a word there
/// touched: the part meant after it may still be planned by meaning for a card met in the
/// retracted part only on a word of its examples (the dental insurance card's example speaks of
/// invoices), or on a value. A card the retracted part named stays out. (Tuned on the seventy-fourth
/// and seventy-ninth sets.)
#[cfg(feature = "semantic")]
#[test]
fn a_correction_keeps_out_only_the_cards_it_named() {
    let dental = eval_config("seventyfourth").load();
    let q = "帮我开张发票，不对不对，我是想问能不能用商业险直接结算";
    assert_eq!(routed(&dental, q).0, ["insurance_agent"]);
    // The payment card, named by its keyword 发票, is nearest in meaning to what follows, yet
    // neither planned nor offered.
    let (planned, offered) = routed(&dental, "帮我开张发票，不对不对，我是想问问费用的事");
    assert!(planned.is_empty() && !offered.is_empty(), "{planned:?} {offered:?}");
    assert!(!offered.contains(&"payment_agent".to_string()), "{offered:?}");
    let bikes = eval_config("sixtyfirst").load();
    let q = "Can I book a test ride on an e-bike — sorry, no, I meant a regular gravel bike, no motor.";
    assert_eq!(routed(&bikes, q).0, ["bike_sales_agent"]);
    // A value named in the part taken back ("an upright", one of the sales card's piano types)
    // is what the correction is still about: it does not keep its card out.
    let pianos = eval_config("seventyninth").load();
    let q = "I'd like to rent an upright — sorry, no, I mean I want to buy one outright. What do you have?";
    assert_eq!(routed(&pianos, q).0, ["sales_agent"]);
}

/// A card chosen as the best of two clauses is not in doubt over the clause where a rival comes
/// near it: "…is going to be used in Spain" alone is as much a certified translation as a
/// legalization, and asks; a second clause asking about the Foreign Ministry chooses. (Tuned on
/// the forty-first set's misses.)
#[test]
fn a_card_two_clauses_choose_is_no_near_tie() {
    let agency = eval_config("fortyfirst").load();
    let (planned, asked) = routed(&agency, "My degree certificate is going to be used in Spain.");
    assert!(planned.is_empty());
    assert!(
        asked.contains(&"legalization_agent".to_string()) && asked.contains(&"certified_translation_agent".to_string())
    );
    let q = "My degree certificate is going to be used in Spain. Does it need to go to the Foreign Ministry first?";
    assert_eq!(routed(&agency, q).0, ["legalization_agent"]);
}

/// A clause that only gives a value (a plate number and its label) is no request to a card that
/// takes such values, when another clause asks for something: the value belongs to that request.
/// A clause with a word of its own beside the value is a request ("电脑坏了" is a fault report).
/// (Tuned on the thirty-eighth set's misses.)
#[cfg(feature = "semantic")]
#[test]
fn a_clause_giving_only_a_value_is_no_request_of_its_own() {
    let parking = eval_config("thirtyeighth").load();
    let q = "周六晚上奥体有演唱会，能不能提前给我留一个位置，大概六点到，车牌浙A8K261";
    assert_eq!(routed(&parking, q).0, ["space_reservation_agent"]);
    let q = "出场的时候被扣了两次钱，一次微信一次ETC，车牌浙A7M932，昨天下午在东站P2";
    assert_eq!(routed(&parking, q).0, ["payment_invoice_agent"]);
    // Alone, the plate and its label still name the cards that take plates.
    assert!(
        !routed(&parking, "车牌浙A8K261").0.is_empty()
            || !parking.recognizer.recognize("车牌浙A8K261").uncertain.is_empty()
    );
    let it = RegistryHandle::open(&repo().join("tests/fixtures/eval/agents_config.yaml")).unwrap();
    assert_eq!(sorted(&routed(&it.load(), "电脑坏了，顺便帮我请半天假去修").0), ["leave_agent", "ticket_agent"]);
}

/// The same query scores the same every time (hash maps are seeded per instance: scores must
/// not depend on their order).
#[test]
fn recognition_is_deterministic() {
    for set in ["fifth_queries.yaml", "sixth_queries.yaml", "third_queries.yaml"] {
        let path = repo().join("tests/fixtures/eval").join(set);
        let qs: QuerySet = serde_yaml_ng::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let handle = RegistryHandle::open(&path.parent().unwrap().join(&qs.config)).unwrap();
        let reg = handle.load();
        for q in &qs.queries {
            let runs: Vec<Vec<(String, u32, bool)>> = (0..8)
                .map(|_| {
                    let rec = reg.recognizer.recognize(&q.q);
                    let selected: Vec<&str> = rec.selected.iter().map(|s| s.id.as_str()).collect();
                    rec.candidates
                        .iter()
                        .map(|c| (c.id.clone(), c.raw.to_bits(), selected.contains(&c.id.as_str())))
                        .collect()
                })
                .collect();
            assert!(runs.windows(2).all(|w| w[0] == w[1]), "{set}: {:?} scored differently: {runs:?}", q.q);
        }
    }
}

/// Common English verbs are no topic: a stem such as "check" (from a lexicon's "checking"
/// account) or "save" (from "savings") would make every "check if…" a banking question, an
/// uncovered topic that stops a lone weather card from being planned.
#[test]
fn common_verbs_are_no_topic() {
    let demo = RegistryHandle::open(&repo().join("agents_config.yaml")).unwrap();
    assert_eq!(routed(&demo.load(), "check if it will snow in Harbin").0, ["weather_agent"]);
    for verb in ["check", "save", "move", "note", "light"] {
        let concepts: Vec<String> = switchboard::matching::tokenize::analyze(verb)
            .into_iter()
            .filter(|t| t.kind == switchboard::matching::tokenize::TokKind::Concept)
            .map(|t| t.term)
            .collect();
        assert!(concepts.is_empty(), "{verb}: {concepts:?}");
    }
}

/// The did-you-mean question offers first the cards sharing the query's topic: for a flight
/// ticket, the flight card before a hotel card met only on 订 and a city.
#[test]
fn did_you_mean_offers_topical_cards_first() {
    let demo = RegistryHandle::open(&repo().join("agents_config.yaml")).unwrap();
    let (planned, offered) = routed(&demo.load(), "帮我订一张去北京的机票");
    assert!(planned.is_empty(), "{planned:?}");
    assert_eq!(offered.first().map(String::as_str), Some("flight_agent"), "{offered:?}");
}

/// Raw scores of expected cards (positives) and of the best wrong card (negatives) on a set, per
/// clause-level decision: prints the separation the threshold is chosen from.
#[test]
#[ignore = "calibration aid: cargo test --test integration calibration -- --ignored --nocapture"]
fn calibration_table() {
    let path = repo().join("tests/fixtures/eval/demo_queries.yaml");
    let set: QuerySet = serde_yaml_ng::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let handle = RegistryHandle::open(&path.parent().unwrap().join(&set.config)).unwrap();
    let reg = handle.load();
    let (mut pos, mut neg) = (Vec::new(), Vec::new());
    for q in &set.queries {
        let rec = reg.recognizer.recognize(&q.q);
        for c in &rec.candidates {
            if c.evidence.iter().any(|e| matches!(e, switchboard::matching::Evidence::Negated { .. })) {
                continue;
            }
            if q.expect.contains(&c.id) {
                pos.push((c.raw, q.q.clone(), c.id.clone()));
            } else {
                neg.push((c.raw, q.q.clone(), c.id.clone()));
            }
        }
    }
    pos.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
    neg.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap());
    println!("lowest positives:");
    for p in pos.iter().take(12) {
        println!("  {:.2} {} {}", p.0, p.2, p.1);
    }
    println!("highest negatives:");
    for n in neg.iter().take(12) {
        println!("  {:.2} {} {}", n.0, n.2, n.1);
    }
}

// ---- Routing over the real HTTP API, routing tests, domains, bad input ----

use serde_json::{json, Value};
use switchboard::routing;

use crate::common::{agent_mut, done, of_stage, spawn_app, spawn_app_with, Setup};

#[tokio::test]
async fn intent_done_carries_the_candidates_with_evidence() {
    let app = spawn_app().await;
    let events = app.ask("100美元换成人民币是多少", None).await;
    done(&events);
    let intent = &of_stage(&events, "intent_done")[0]["metadata"]["state"]["intent"];
    assert_eq!(intent["intent"], json!(["exchange_agent"]));
    let top = &intent["candidates"][0];
    assert_eq!(top["id"], "exchange_agent");
    let c = top["confidence"].as_f64().unwrap();
    assert!(c > 0.5 && c <= 1.0 && (c * 100.0).fract().abs() < 1e-6, "{c}");
    let kinds: Vec<&str> = top["evidence"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"entity") && kinds.contains(&"similar_example"), "{kinds:?}");
    assert_eq!(app.calls("exchange_agent").len(), 1);
    // A negated card is listed as such and not dispatched.
    let events = app.ask("不用查天气了，帮我订酒店", None).await;
    done(&events);
    let intent = &of_stage(&events, "intent_done")[0]["metadata"]["state"]["intent"];
    assert_eq!(intent["intent"], json!(["hotel_agent"]));
    let weather = intent["candidates"].as_array().unwrap().iter().find(|c| c["id"] == "weather_agent").unwrap();
    assert!(weather["evidence"].as_array().unwrap().iter().any(|e| e["kind"] == "negated"), "{weather}");
    assert!(app.calls("weather_agent").is_empty());
}

#[test]
fn the_demo_routing_tests_pass() {
    let handle = RegistryHandle::open(&repo().join("agents_config.yaml")).unwrap();
    let errors = routing::check_registry(&handle.load());
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn validate_prints_misrouted_queries_like_config_errors() {
    let dir = tempfile::tempdir().unwrap();
    crate::common::copy_support_files(dir.path());
    let config = dir.path().join("agents_config.yaml");
    std::fs::copy(repo().join("agents_config.yaml"), &config).unwrap();
    std::fs::write(
        dir.path().join("routing_tests.yaml"),
        "- { query: 帮我订个酒店, expect: [hotel_agent] }\n- { query: 明天上海冷不冷, expect: [hotel_agent] }\n",
    )
    .unwrap();
    let out =
        std::process::Command::new(env!("CARGO_BIN_EXE_switchboard")).arg("validate").arg(&config).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("routing_tests.yaml at /1: routing test \"明天上海冷不冷\""), "{stdout}");
    assert!(stdout.contains("routed to [weather_agent], expected [hotel_agent]"), "{stdout}");
    assert!(!stdout.contains("/0:"), "the passing test is not reported: {stdout}");
}

/// `switchboard explain QUERY` run on the demo config.
fn explain_demo(query: &str) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["explain", query, "--config"])
        .arg(repo().join("agents_config.yaml"))
        .output()
        .unwrap()
}

#[test]
fn explain_shows_every_card_and_the_decision() {
    let out = explain_demo("别订酒店，只看看北京天气");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    for id in ["flight_agent", "pickup_agent", "hotel_agent", "weather_agent", "exchange_agent"] {
        assert!(text.contains(id), "{id} listed: {text}");
    }
    assert!(text.contains("negated by \"别\""), "{text}");
    assert!(text.contains("decision: plan weather_agent"), "{text}");
    // The encoder's view: its nearest cards and the odds that the nearest is meant.
    #[cfg(feature = "semantic")]
    assert!(text.contains("nearest in meaning: weather_agent") && text.contains("odds the nearest is meant"), "{text}");
    // It reads the query without the negated request.
    #[cfg(feature = "semantic")]
    assert!(text.contains("the encoder reads: \"只看看北京天气\""), "{text}");
}

/// `explain` resolves relative dates against today, as a live turn would (routing tests use a
/// fixed date; explain had shown theirs).
#[test]
fn explain_resolves_dates_against_today() {
    // The demo config sets no timezone: the host's. Either side of midnight around the run.
    let tomorrow = || (chrono::Local::now().date_naive() + chrono::Days::new(1)).to_string();
    let before = tomorrow();
    let out = explain_demo("帮我订北京的酒店，明天入住");
    let text = String::from_utf8_lossy(&out.stdout);
    let after = tomorrow();
    assert!(
        text.contains(&format!("check_in_date=\"{before}\"")) || text.contains(&format!("check_in_date=\"{after}\"")),
        "{text}"
    );
}

#[tokio::test]
async fn a_reload_that_misroutes_a_routing_test_is_rejected() {
    let app = spawn_app().await;
    let dir = app.config_path.parent().unwrap();
    std::fs::write(dir.join("routing_tests.yaml"), "- { query: 帮我订个酒店, expect: [hotel_agent] }\n").unwrap();
    assert_eq!(app.config["supervisor"]["reload_requires_routing_tests"], true);
    // An edit that breaks hotel routing: the card is disabled.
    let mut broken = app.config.clone();
    agent_mut(&mut broken, "hotel_agent")["enabled"] = json!(false);
    app.rewrite(&broken);
    let status = app.wait_config(|s| !s["last_error"].is_null()).await;
    assert_eq!(status["version"], 1, "the serving registry is kept");
    let msg = status["last_error"][0]["message"].as_str().unwrap();
    assert!(msg.contains("routing test \"帮我订个酒店\""), "{msg}");
    // A harmless edit goes through.
    let mut fine = app.config.clone();
    agent_mut(&mut fine, "hotel_agent")["keywords"] = json!(["酒店", "住宿", "订房", "宾馆", "hotel", "民宿"]);
    app.rewrite(&fine);
    let status = app.wait_config(|s| s["version"] == 2).await;
    assert!(status["last_error"].is_null());
}

#[tokio::test]
async fn domains_are_served_and_group_the_capabilities_answer() {
    let app = spawn_app_with(Setup::default(), |c| {
        for (id, d) in
            [("flight_agent", "出行"), ("pickup_agent", "出行"), ("hotel_agent", "住宿"), ("exchange_agent", "金融")]
        {
            agent_mut(c, id)["domain"] = json!(d);
        }
    })
    .await;
    let agents = app.get("/v1/agents").await;
    let domain =
        |id: &str| agents["agents"].as_array().unwrap().iter().find(|a| a["id"] == id).unwrap()["domain"].clone();
    assert_eq!(domain("flight_agent"), "出行");
    assert_eq!(domain("weather_agent"), Value::Null);
    let events = app.ask("你能做什么", None).await;
    let text = done(&events)["content"].as_str().unwrap().to_string();
    let (travel, stay, other) = (text.find("出行:").unwrap(), text.find("住宿:").unwrap(), text.find("其他:").unwrap());
    assert!(travel < stay && stay < other, "{text}");
    assert!(text[travel..stay].contains("接机"), "{text}");
}

#[tokio::test]
async fn bad_input_gets_a_clear_answer_and_no_panic() {
    let app = spawn_app().await;
    // Empty: a 400 that says why.
    let resp = app
        .client
        .post(format!("{}/v1/chat", app.base))
        .json(&json!({ "query": "", "user_id": "u1" }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert!(body.to_string().contains("empty"), "{body}");
    let long = "帮我订酒店".repeat(800); // 4,000 characters: the limit
    let mixed = "hello你好こんにちは안녕 hotel酒店 CA1234 🙂 Привет";
    for query in
        ["🙂🙂🙂🎉", "？？！！。。，，...", "。", long.as_str(), mixed, "\u{200b}\u{feff}", "a".repeat(4000).as_str()]
    {
        let events = app.ask(query, None).await;
        let done = done(&events);
        let text = done["content"].as_str().unwrap();
        assert!(!text.trim().is_empty(), "an answer for {query:?}");
    }
    // Past the limit: a 400, not a panic.
    let resp = app
        .client
        .post(format!("{}/v1/chat", app.base))
        .json(&json!({ "query": "酒".repeat(4001), "user_id": "u1" }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
}

/// The registry of the evaluation config in `tests/fixtures/eval/DIR`.
fn eval_config(dir: &str) -> RegistryHandle {
    RegistryHandle::open(&repo().join("tests/fixtures/eval").join(dir).join("agents_config.yaml")).unwrap()
}

/// The ids of a recognition's selected cards, in order.
#[cfg(feature = "semantic")]
fn selected(rec: &switchboard::matching::recognize::Recognition) -> Vec<&str> {
    rec.selected.iter().map(|s| s.id.as_str()).collect()
}

/// A near tie of the lexical stage (room service and housekeeping both fit "send … up to room
/// 715") is settled when the encoder finds the lexical stage's best card the nearest too.
#[cfg(feature = "semantic")]
#[test]
fn the_two_stages_agreeing_settle_a_near_tie() {
    let handle = eval_config("eighteenth");
    let registry = handle.load();
    let q = "Could you send a bottle of red up to room 715?";
    let rec = registry.recognizer.recognize(q);
    assert_eq!(selected(&rec), ["room_service_agent"], "{rec:?}");
    assert!(rec.by_meaning, "{rec:?}");
    let rival = rec.score("housekeeping_agent").map_or(0.0, |c| c.confidence);
    assert!(rival >= switchboard::matching::recognize::SELECT, "the words alone were a near tie: {rec:?}");
    assert_eq!(routed(&registry, q).0, ["room_service_agent"]);
    // With a club sandwich in a clause of its own, both clauses choose room service: the words
    // settle it without the encoder.
    let q = "Can I get a club sandwich and a bottle of red sent up to room 715? We're starving.";
    let rec = registry.recognizer.recognize(q);
    assert_eq!(selected(&rec), ["room_service_agent"], "{rec:?}");
    assert_eq!(routed(&registry, q).0, ["room_service_agent"]);
}

/// A card tied with the lexical best (within the ambiguity margin) is planned when it is the
/// encoder's nearest: the brokerage-account card leads "Move 5,000 from the brokerage cash
/// balance back to the checking account" on words by a hair, the transfer card by meaning.
/// (With "from my brokerage … to my checking account" the words name places, and the transfer
/// card leads on words too.)
#[cfg(feature = "semantic")]
#[test]
fn the_encoder_settles_a_near_tie_for_the_runner_up() {
    let handle = eval_config("eleventh");
    let registry = handle.load();
    let q = "Move 5,000 from the brokerage cash balance back to the checking account";
    let rec = registry.recognizer.recognize(q);
    let raw = |id: &str| rec.score(id).map_or(0.0, |c| c.raw);
    assert!(raw("brokerage_account_agent") > raw("bank_transfer_agent"), "the lexical best is the other card: {rec:?}");
    assert_eq!(selected(&rec), ["bank_transfer_agent"], "{rec:?}");
    assert!(rec.by_meaning, "{rec:?}");
    assert_eq!(routed(&registry, q).0, ["bank_transfer_agent"]);
}

/// A turn that would ask plans the offered card the encoder clearly means: "A hailstorm wrecked
/// half my orchard…" selects no card on words (the crop-insurance and harvest-sales cards are both
/// plausible), and the encoder finds the crop-insurance card nearest, clearly ahead. A card the
/// encoder prefers that is not the query's topic still asks (the demo's flight ticket, above).
#[cfg(feature = "semantic")]
#[test]
fn the_encoder_settles_a_question_it_clearly_answers() {
    let handle = eval_config("twentyfirst");
    let registry = handle.load();
    let q =
        "A hailstorm wrecked half my orchard last night. I have coverage through the co-op, what do I need to do to \
             get compensated?";
    let rec = registry.recognizer.recognize(q);
    // The harvest-sales card, met on "co-op", stays plausible: it was offered beside it.
    assert!(rec.uncertain.iter().any(|c| c.id == "harvest_sales_agent"), "{rec:?}");
    assert_eq!(selected(&rec), ["crop_insurance_agent"], "{rec:?}");
    assert!(rec.by_meaning, "{rec:?}");
    assert_eq!(routed(&registry, q).0, ["crop_insurance_agent"]);
}

/// Below `CLEAR`, a clear lead still settles a question: "I run a tiny online store and my
/// receipts are a mess…" is offered the bookkeeping, invoice and cleaning cards on words, and the
/// encoder finds the bookkeeping card nearest at cosine 0.32, 0.14 ahead of the next
/// (`CLEAR_MARGIN` is 0.1). A narrower lead stays a question: "停车场最里面那台桩的枪线被人剪断了一截…"
/// (0.27, 0.08 ahead).
#[cfg(feature = "semantic")]
#[test]
fn a_clear_lead_of_an_offered_card_settles_the_question() {
    let books = eval_config("twentyseventh").load();
    let q = "I run a tiny online store and my receipts are a mess, I need someone to keep my books every month so I'm \
             not drowning at year end.";
    let rec = books.recognizer.recognize(q);
    assert_eq!(selected(&rec), ["bookkeeping_agent"], "{rec:?}");
    assert!(rec.by_meaning, "{rec:?}");
    assert_eq!(routed(&books, q).0, ["bookkeeping_agent"]);
    let charging = eval_config("twentyninth").load();
    let (planned, offered) = routed(&charging, "停车场最里面那台桩的枪线被人剪断了一截，跟你们说一声免得有人触电");
    assert!(planned.is_empty() && !offered.is_empty(), "{planned:?} {offered:?}");
}

/// A query more about a topic no card covers (a part-time job) is not planned on the card the
/// encoder finds nearest when the lexical stage seconds it only by a few common characters of
/// its name (门店 of "门店面包现货"); the twenty-eighth set's lost phone is left out of scope the
/// same way.
#[cfg(feature = "semantic")]
#[test]
fn a_few_common_characters_do_not_second_the_encoder() {
    let bakery = eval_config("thirtyseventh").load();
    let q = "你们门店招不招兼职店员，周末能上班的那种";
    let rec = bakery.recognizer.recognize(q);
    assert!(rec.selected.is_empty(), "{rec:?}");
    assert!(routed(&bakery, q).0.is_empty());
    let rides = eval_config("twentyeighth").load();
    assert!(routed(&rides, "我刚才打车把手机落在车上了，作为乘客要怎么找回来").0.is_empty());
}

/// A clause besides the one that chose a card adds the card the encoder picks for it only with a
/// clear closeness (cosine 0.4) or the lexical stage's seconding (`SECONDED`), not on a few
/// common words: "I've seen those glossy see-through photo panels" does not add the print-quality
/// card (raw 0.10 on "print" of its description) to the acrylic print the query asks for.
#[cfg(feature = "semantic")]
#[test]
fn a_companion_clause_needs_more_than_a_few_common_words() {
    let shop = eval_config("thirtyfifth").load();
    let q =
        "Can you print onto acrylic? I've seen those glossy see-through photo panels and want one for the living room.";
    let rec = shop.recognizer.recognize(q);
    assert_eq!(selected(&rec), ["large_format_agent"], "{rec:?}");
    assert_eq!(routed(&shop, q).0, ["large_format_agent"]);
}

/// A card selected on words only in clauses that tell and ask nothing ("We're moving to Shanghai
/// in July") is dropped beside a card the whole query is nearer to in meaning, by any lead
/// (`TOLD_COMPANION`); in a clause that asks ("I'd like to book a lesson on Friday") it needs the
/// usual lead (`COMPANION`), so the second request of a multi-intent query stays.
#[cfg(feature = "semantic")]
#[test]
fn a_card_met_only_in_the_story_of_a_query_is_dropped() {
    let school = eval_config("fortieth").load();
    let q = "We're moving to Shanghai in July. Can we get back what we paid for the lessons she won't use this term, or pass them on to her cousin?";
    assert_eq!(routed(&school, q).0, ["tuition_billing_agent"]);
    let hotel = eval_config("eighteenth").load();
    let q = "The front desk charged me for three nights but I only stayed two, and there's a parking fee on there even though we came by train.";
    assert_eq!(routed(&hotel, q).0, ["folio_dispute_agent"]);
    let golf = eval_config("fortyfourth").load();
    let q =
        "I'd like to book a lesson on Friday, and while I'm there pick up a new glove and a dozen balls from the shop.";
    assert_eq!(sorted(&routed(&golf, q).0), ["golf_lesson_agent", "proshop_fitting_agent"]);
}

/// English "and" joins the verbs and sentences of one request as often as two requests: a card
/// selected on words only in a clause "and" joins is dropped beside a card the whole query is
/// clearly nearer to in meaning (`COMPANION`), as if nothing joined it; "then" still makes a
/// second request of its clause.
#[cfg(feature = "semantic")]
#[test]
fn a_clause_joined_by_and_alone_is_no_request_of_its_own() {
    let laundry = eval_config("sixtyfourth").load();
    let q = "My suede boots got caught in a downpour and now they're covered in white water marks. Is that something you can clean up and bring back to life?";
    assert_eq!(routed(&laundry, q).0, ["shoe_bag_agent"]);
    let pest = eval_config("fiftysecond").load();
    let q = "I manage a 300-seat staff canteen at a factory in Xiasha. We need someone to come in every month and keep pests under control, with the paperwork the food safety inspectors ask for.";
    assert_eq!(routed(&pest, q).0, ["commercial_contract_agent"]);
    let print = eval_config("fiftyfifth").load();
    let q = "Please turn these signed contracts into one PDF, then courier the paper originals back to my office.";
    assert_eq!(sorted(&routed(&print, q).0), ["order_status_agent", "scan_convert_agent"]);
}

/// When no clause selected a card on its words and the whole query planned one, a request set
/// apart by punctuation and a connective ("，顺便…", ". Also…") still gets its card by meaning;
/// 还有 within a sentence ("附近还有哪能停") sets nothing apart.
#[cfg(feature = "semantic")]
#[test]
fn a_request_set_apart_by_a_connective_is_read_beside_the_whole_query() {
    let school = eval_config("fortieth").load();
    let q = "孩子想学小提琴，先租一把1/4的，顺便帮他报每周六下午的课";
    assert_eq!(sorted(&routed(&school, q).0), ["instrument_rental_agent", "lesson_booking_agent"]);
    let homes = eval_config("twentythird").load();
    let q =
        "I want to know what my house is worth, and also see some 3-bedroom places in the suburbs we could move into.";
    assert_eq!(sorted(&routed(&homes, q).0), ["property_search_agent", "valuation_agent"]);
    let parking = eval_config("thirtyeighth").load();
    let q = "我现在在去湖滨银泰的路上，那边地库还剩几个位子？要是满了附近还有哪能停";
    assert_eq!(sorted(&routed(&parking, q).0), ["space_reservation_agent"]);
}

/// A clause whose own pick of words is not planned in the end (outranked by the whole query's
/// best card, or dropped as a weak companion) has found nothing: a request joined to it, or a
/// question sentence of its own, is read by meaning like any clause that found nothing.
/// (Tuned on the whole report of the sixteenth session.)
#[cfg(feature = "semantic")]
#[test]
fn a_clause_whose_pick_is_not_planned_is_read_by_meaning() {
    let pharmacy = eval_config("twentyfourth").load();
    let q = "帮我把这个月的降压药续上，顺便直接送到家里吧，我这周出不了门";
    assert_eq!(sorted(&routed(&pharmacy, q).0), ["home_delivery_agent", "rx_refill_agent"]);
    let utility = eval_config("seventysixth").load();
    let q = "A water main just split open in the street in front of our house and the road is flooding, cars are driving through it. This needs someone out here right away.";
    assert_eq!(routed(&utility, q).0, ["emergency_repair_agent"]);
}

/// After a correction, a keyword holds the lexical pick only against cards the words scored well
/// below it: the card the encoder finds nearest to what is asked instead, scored nearly as high,
/// puts the pick in doubt. (Tuned on the whole report of the seventeenth session.)
#[cfg(feature = "semantic")]
#[test]
fn after_a_correction_a_keyword_does_not_hold_a_pick_against_a_near_rival() {
    let restaurant = eval_config("sixtyninth").load();
    let q = "我想查一下储值卡余额，啊不是，我是想问昨天那单外卖怎么到现在还没到";
    assert_eq!(routed(&restaurant, q).0, ["delivery_issue_agent"]);
    let rental = eval_config("thirtyfirst").load();
    let q = "帮我查一下违章……哦不对，是上次还车的时候说我车有划痕要赔钱";
    assert_eq!(routed(&rental, q).0, ["damage_deposit_agent"]);
    // After a correction with no such rival, the keyword holds its card.
    let q = "我想查一下储值卡余额，啊不是，我是想问外卖能送到宝安吗";
    assert_eq!(routed(&restaurant, q).0, ["takeaway_agent"]);
}

/// A question sentence of its own that no connective joins adds its card by meaning when the
/// encoder's nearest card leads the next clearly (`QUESTION_LEAD`); a story's question about the
/// request already found adds nothing.
#[cfg(feature = "semantic")]
#[test]
fn a_question_sentence_of_its_own_adds_the_card_it_clearly_means() {
    let bakery = eval_config("thirtyseventh").load();
    let q = "I want to book a baking class for two this Saturday. Can I pay for it with my member points?";
    assert_eq!(sorted(&routed(&bakery, q).0), ["baking_class_agent", "membership_agent"]);
    let dealer = eval_config("nineteenth").load();
    assert_eq!(
        sorted(&routed(&dealer, "旧车置换能抵多少钱？剩下的能不能做贷款").0),
        ["car_finance_agent", "trade_in_agent"]
    );
    let funeral = eval_config("fiftyseventh").load();
    let q = "我们家定了后天出殡，最早几点能排上进炉？家里人能不能在旁边送最后一眼";
    assert_eq!(sorted(&routed(&funeral, q).0), ["cremation_agent"]);
    let pool = eval_config("fiftyeighth").load();
    let q = "Our school wants to bring the whole Year 3, about 45 kids, for a swim afternoon at the end of term. Could we have the teaching pool to ourselves?";
    // The encoder finds the lessons card nearer than the hire the words found (by 0.1), so the
    // turn may ask between them; the question sentence plans no card of its own either way.
    let (planned, offered) = routed(&pool, q);
    assert!(planned.iter().all(|c| c == "party_hire_agent"), "{planned:?}");
    assert!(planned.contains(&"party_hire_agent".to_string()) || offered.contains(&"party_hire_agent".to_string()));
}

/// A turn the rules leave unplanned plans the encoder's nearest card when the odds that it is
/// meant (`semantic_stage::nearest_meant`, a fit over the evaluation sets) reach `TRUST`: "I'm on
/// warfarin…" is more about drugs than about anything the pharmacy's cards name on words, so it
/// was out of scope, though the pharmacist card is nearest by a wide margin.
#[cfg(feature = "semantic")]
#[test]
fn the_odds_of_the_nearest_card_settle_an_unplanned_turn() {
    use switchboard::matching::semantic_stage::{nearest_meant, CardTexts, TRUST};
    let handle = eval_config("twentyfourth");
    let registry = handle.load();
    let q = "I'm on warfarin. Is it safe to add fish oil and some ibuprofen for my knee, or will they mess with each other?";
    let rec = registry.recognizer.recognize(q);
    assert_eq!(selected(&rec), ["pharmacist_consult_agent"], "{rec:?}");
    assert!(rec.by_meaning, "{rec:?}");
    assert_eq!(routed(&registry, q).0, ["pharmacist_consult_agent"]);
    let specs: Vec<_> = registry.agents().iter().map(|a| &a.spec).collect();
    let sims = CardTexts::new(&specs).similarities(q);
    assert!(nearest_meant(&sims).is_some_and(|p| p >= TRUST), "{sims:?}");
    // Below the odds, a greeting-free question no card is near stays out of scope.
    assert!(routed(&registry, "What's the capital of Australia?").0.is_empty());
}

/// An advice request ("which brand is best", "推荐一个", "哪家便宜") plans no card that does a
/// job of its field without advising: it is offered, not dispatched. A card that compares, or a
/// card named by keyword, is still planned for one, and so is a card of a request of its own
/// joined to the advice request by 另外 / also.
#[test]
fn an_advice_request_is_not_a_job_for_a_card_that_does_not_advise() {
    let farm = eval_config("twentyfirst");
    let (planned, offered) =
        routed(&farm.load(), "Which brand of tractor is best to buy outright for a 200-acre farm?");
    assert!(planned.is_empty(), "{planned:?}");
    assert_eq!(offered.first().map(String::as_str), Some("machinery_rental_agent"), "{offered:?}");
    let wedding = eval_config("twentysecond");
    assert!(routed(&wedding.load(), "婚礼司仪能帮忙推荐一个吗，要会暖场的").0.is_empty());
    assert!(routed(&wedding.load(), "婚纱和礼服在哪租比较划算").0.is_empty());
    // A request of its own beside the advice request, joined by 另外 / also, is planned.
    let movers = eval_config("twentyfourth").load();
    assert!(routed(&movers, "家里有旧沙发旧床垫想处理掉，你们收二手家具吗").0.is_empty());
    let q = "你们收二手家具吗？另外帮我预约周六上午搬家，要两个师傅";
    assert_eq!(routed(&movers, q).0, ["moving_booking_agent"]);
    assert_eq!(routed(&movers, "推荐一个好用的止咳药，另外帮我续一下降压药的处方").0, ["rx_refill_agent"]);
    // A comparison card compares.
    let shop = eval_config("sixth");
    assert_eq!(routed(&shop.load(), "小米15和iPhone 16哪个拍照好、电池更耐用？").0, ["spec_compare_agent"]);
}

/// A request joined by 另外 / also … that found no card is read by meaning as a whole part, the
/// clauses beside it up to the next joining word included: "想周末过去看看" alone is too short
/// to mean the viewing card, "看中了那套两居，想周末过去看看" is not.
#[cfg(feature = "semantic")]
#[test]
fn a_joined_request_is_read_by_meaning_with_the_clauses_of_its_part() {
    let homes = eval_config("twentythird").load();
    let q = "看中了那套两居，想周末过去看看，另外帮我算一下贷款两百万三十年每个月还多少";
    assert_eq!(routed(&homes, q).0, ["viewing_agent", "mortgage_agent"]);
    // The part alone is read the same way as a whole query.
    assert_eq!(routed(&homes, "看中了那套两居，想周末过去看看").0, ["viewing_agent"]);
}

/// A clause that only reports something done ("课都学完了考试也过了", "房子价格谈妥了") is the
/// story of the request beside it, not a request of its own: the card it names is not planned
/// next to the one the request names. A done report that holds a request is still one.
#[cfg(feature = "semantic")]
#[test]
fn a_clause_reporting_something_done_is_no_request_of_its_own() {
    let school = eval_config("seventeenth").load();
    assert_eq!(routed(&school, "课都学完了考试也过了，证书在哪儿领啊？公司报销要用").0, ["certificate_agent"]);
    let homes = eval_config("twentythird").load();
    let q = "房子价格谈妥了，定金也交了，接下来签约和去不动产登记中心办证要准备哪些材料";
    assert_eq!(routed(&homes, q).0, ["closing_agent"]);
    // Two requests, one worded in the past: both stand.
    let q = "Book Milo in for a check-up next week, and also submit the claim for his ear infection treatment from last month.";
    assert_eq!(sorted(&routed(&homes, q).0), ["pet_insurance_agent", "vet_appointment_agent"]);
}

/// A value other cards take too (a district both a schedule and a missed-collection card ask
/// for) names neither: the card selected on it and a few shared words beside the one the query
/// means is dropped like any weak companion, and a lone card selected so is overridden by the
/// encoder like one selected on words alone. Two requests that share the value both stand.
#[cfg(feature = "semantic")]
#[test]
fn a_value_other_cards_take_too_names_none_of_them() {
    let city = eval_config("fortyninth").load();
    let q = "Which day of the week do the bin lorries come down Maple Road in Jiangnan?";
    assert_eq!(routed(&city, q).0, ["collection_schedule_agent"]);
    let q = "今天轮到我们楼收垃圾，桶在门口放了一整天，车根本没来过，新港区海棠路18号";
    assert_eq!(routed(&city, q).0, ["missed_collection_agent"]);
    let q = "Our bins on Maple Road in Jiangnan weren't emptied today, and also which day is the recycling collected there?";
    assert_eq!(sorted(&routed(&city, q).0), ["collection_schedule_agent", "missed_collection_agent"]);
}

/// A clause whose card only the encoder finds, beside a clause found by words, is covered: its
/// words are not reported as covered by no card.
#[cfg(feature = "semantic")]
#[test]
fn a_clause_planned_by_meaning_is_not_reported_uncovered() {
    let handle = eval_config("twentieth");
    let q = "Two things: my employer hasn't paid me since March, and separately your scooter app charged me twice \
             for the same ride.";
    let rec = handle.load().recognizer.recognize(q);
    assert_eq!(selected(&rec), ["fare_dispute_agent", "labour_dispute_agent"], "{rec:?}");
    assert!(rec.unhandled.iter().all(|u| !u.contains("paid")), "{:?}", rec.unhandled);
}

/// A request joined by a connective that some cards may mean, none clearly, is neither planned
/// on a guess nor dropped: the plan carries it as unresolved and the summary asks about it with
/// the cards' names. A joined clause that only describes the planned card's job is not asked
/// about.
#[cfg(feature = "semantic")]
#[test]
fn a_joined_request_no_card_clearly_means_is_asked_about_in_the_summary() {
    let handle = eval_config("twentyfirst");
    let registry = handle.load();
    let q = "My mother-in-law will be picking up Emma on Friday, please add her to the list. Also, how much do we owe for next term?";
    let Decision::Plan { plan, .. } = first_turn(&registry, q).decision else { panic!("a plan for {q}") };
    let planned: Vec<&str> = plan.sub_tasks.iter().map(|t| t.assigned_agent.as_str()).collect();
    assert_eq!(planned, ["pickup_auth_agent"]);
    assert_eq!(plan.unresolved.len(), 1, "{:?}", plan.unresolved);
    assert_eq!(plan.unresolved[0].part, "how much do we owe for next term");
    assert_eq!(plan.unresolved[0].candidates, ["tuition_agent", "harvest_sales_agent"]);
    let summary = switchboard::summarize::summary(&registry, &plan, switchboard::text::Lang::En);
    assert!(summary.contains("I wasn't sure") && summary.contains("how much do we owe for next term"), "{summary}");
    assert!(summary.contains("Tuition & Fees"), "{summary}");

    let vet = eval_config("twentythird");
    let rec = vet.load().recognizer.recognize("泰迪的毛太长了都打结了，想给它洗个澡顺便剪剪毛，这周末能弄吗");
    assert!(rec.unresolved.is_empty(), "{:?}", rec.unresolved);
}

/// Asserts that the first turn of `query` is answered directly as `intent`.
fn assert_direct(registry: &Registry, query: &str, intent: planner::SimpleIntent) {
    let turn = first_turn(registry, query);
    assert!(matches!(turn.decision, Decision::Direct(i) if i == intent), "{query}: {:?}", turn.decision);
}

/// A thanks that names whom it thanks ("谢谢老师") is answered as thanks, though a
/// teacher-message card shares the word; a thanks followed by a request plans the request.
#[test]
fn a_thanks_naming_the_teacher_asks_for_nothing() {
    let handle = eval_config("twentyfirst");
    let registry = handle.load();
    for q in ["辛苦了，谢谢老师", "谢谢老师！"] {
        assert_direct(&registry, q, planner::SimpleIntent::Thanks);
    }
    let (agents, _) = routed(&registry, "谢谢老师，帮我给王老师留个言，孩子今天有点咳嗽");
    assert!(agents.contains(&"teacher_message_agent".to_string()), "{agents:?}");
    // The same in English, beside a clinic card whose example books a doctor.
    let third = eval_config("third");
    assert_direct(&third.load(), "Thanks so much, doctor!", planner::SimpleIntent::Thanks);
    assert_eq!(routed(&third.load(), "Thanks, doctor. Can I book a doctor for Monday?").0, ["clinic_agent"]);
}

/// A greeting addressing a teacher ("老师好～") is a greeting, though a teacher-message card
/// shares the title; a greeting followed by a request plans the request.
#[test]
fn a_greeting_to_the_teacher_asks_for_nothing() {
    let handle = eval_config("twentyfirst");
    let registry = handle.load();
    for q in ["老师好～", "王老师好！", "您好，老师", "老师好，辛苦啦", "王老师好，谢谢您了！"]
    {
        assert_direct(&registry, q, planner::SimpleIntent::Greeting);
    }
    let (agents, _) = routed(&registry, "老师好，辛苦了，帮我给王老师留个言，孩子今天有点咳嗽");
    assert!(agents.contains(&"teacher_message_agent".to_string()), "{agents:?}");
    let (agents, _) = routed(&registry, "老师好，帮我给王老师留个言，孩子今天有点咳嗽");
    assert!(agents.contains(&"teacher_message_agent".to_string()), "{agents:?}");
    // Where no card shares the title, the greeting is still no out-of-scope request.
    let demo = RegistryHandle::open(&repo().join("agents_config.yaml")).unwrap();
    assert_direct(&demo.load(), "王老师好！", planner::SimpleIntent::Greeting);
    let third = eval_config("third");
    assert_direct(&third.load(), "Hello doctor!", planner::SimpleIntent::Greeting);
}

/// A thanks that only praises what was done asks nothing of the card it names; praise followed
/// by a request plans the request.
#[test]
fn a_thanks_praising_the_cake_orders_no_cake() {
    let bakery = eval_config("thirtyseventh").load();
    let turn = first_turn(&bakery, "Thanks! The cake last week was amazing, by the way.");
    assert!(
        matches!(turn.decision, Decision::Direct(switchboard::planner::SimpleIntent::Thanks)),
        "{:?}",
        turn.decision
    );
    let (agents, _) =
        routed(&bakery, "Thanks, the cake last week was amazing! Could I order another birthday cake for Friday?");
    assert_eq!(agents, ["custom_cake_agent"]);
}

/// "Never mind the X, …" sets a card aside and asks for another: recognized (here a question
/// with the trade-in card first), never acknowledged as a cancel; "never mind" alone cancels.
#[test]
fn cancel_words_that_set_a_card_aside_do_not_cancel_the_turn() {
    let handle = eval_config("nineteenth");
    let registry = handle.load();
    let q = "Never mind the test drive, I just want to know what my old car is worth.";
    let (agents, offered) = routed(&registry, q);
    assert!(!agents.is_empty() || !offered.is_empty(), "recognized, not cancelled");
    assert!(!agents.iter().chain(&offered).any(|a| a == "test_drive_agent"), "{agents:?} {offered:?}");
    // With the encoder, the trade-in card is what it plans or offers first.
    #[cfg(feature = "semantic")]
    assert_eq!(agents.first().or(offered.first()).map(String::as_str), Some("trade_in_agent"), "{offered:?}");
    assert!(matches!(first_turn(&registry, "never mind").decision, Decision::Cancel));
}

/// After a negation the encoder reads what is asked instead ("先别管续住的事，…": without the
/// stay-extension request it negates), and a card the encoder has decided on (cosine from
/// `CLEAR`, leading by `MARGIN`) is planned even beside an offered card sharing the query's
/// lexicon topic ("Never mind the test drive, …": the trade-in card, not the car-finance card
/// that shares the topic of cars). Both turns were unplanned before.
#[cfg(feature = "semantic")]
#[test]
fn what_is_asked_instead_of_a_negated_request_is_planned_by_meaning() {
    let hotel = eval_config("eighteenth");
    let q = "先别管续住的事，房间里叫的餐一个小时了还没送到";
    assert_eq!(routed(&hotel.load(), q).0, ["room_service_agent"]);
    let dealer = eval_config("nineteenth");
    let q = "Never mind the test drive, I just want to know what my old car is worth.";
    let rec = dealer.load().recognizer.recognize(q);
    assert_eq!(selected(&rec), ["trade_in_agent"], "{rec:?}");
    assert!(rec.by_meaning, "{rec:?}");
    let q = "Roughly what is my old Passat worth to you guys if I put it towards a new car? It's got a few scratches but runs fine.";
    assert_eq!(routed(&dealer.load(), q).0, ["trade_in_agent"]);
}

/// A card negated only for a word it shares with the negated request, and meant more where
/// nothing negates it, is not negated: "不是查排队时间，是我女儿找不到了" negates the queue card
/// (排队时间) and, before, the lost-and-found card for its 查 too, which left nothing to plan.
#[cfg(feature = "semantic")]
#[test]
fn a_card_meant_outside_the_negated_request_is_not_negated_by_a_shared_word() {
    let park = eval_config("fifteenth");
    let rec = park.load().recognizer.recognize("刚说错了，不是查排队时间，是我女儿找不到了");
    assert_eq!(selected(&rec), ["lost_found_agent"], "{rec:?}");
    assert!(rec.score("ride_queue_agent").is_some_and(|c| c.negated()), "{rec:?}");
    let solar = eval_config("fourteenth");
    assert_eq!(
        routed(&solar.load(), "不是要约勘测，我家早就装好了，是想看这个月发了多少电").0,
        ["solar_monitor_agent"]
    );
}

/// A correction the encoder reads without what it takes back: a single card met on words
/// ("stage" for a study-room card) is put in doubt by the card the rest means ("I meant a seat
/// change, not a refund…"); "啊不是，" said as an interjection takes back the request before it.
#[cfg(feature = "semantic")]
#[test]
fn a_correction_is_read_without_what_it_takes_back() {
    let tickets = eval_config("twentysixth");
    let q = "I meant a seat change, not a refund. I still want to go, just closer to the stage.";
    assert_eq!(routed(&tickets.load(), q).0, ["seat_change_agent"]);
    let carrier = eval_config("twentysecond");
    assert_eq!(routed(&carrier.load(), "我要补办手机卡，啊不是，卡没问题，是出国前要开通漫游").0, ["roaming_agent"]);
    let cloud = eval_config("eighteenth");
    assert_eq!(routed(&cloud.load(), "哦不对，不是你们服务挂了，是我自己误删了一张表，想找回来").0, ["backup_agent"]);
}

/// A turn the rules leave with nothing planned and nothing to ask about, whose nearest card in
/// meaning reaches `CLEAR`, asks whether that card was meant instead of answering out of scope.
#[cfg(feature = "semantic")]
#[test]
fn a_card_near_in_meaning_is_asked_about_rather_than_out_of_scope() {
    let cowork = eval_config("twentyfifth");
    let (planned, offered) = routed(&cowork.load(), "周末晚上我还想待在这里，刷卡能进来吗");
    assert!(planned.is_empty(), "{planned:?}");
    assert_eq!(offered, ["access_card_agent"]);
    // The same request in English, to a card written in Chinese only, which no English word
    // could have found: planned from SELECT, leading by ASKED_MARGIN.
    let q = "I'm often here past 11pm and on Sundays, can my card be set up so it still lets me in after hours?";
    assert_eq!(routed(&cowork.load(), q).0, ["access_card_agent"]);
    // A question far from every card is still out of scope.
    assert_eq!(routed(&cowork.load(), "What's the capital of Australia?"), (vec![], vec![]));
}

/// A negation in someone else's instruction, reported ("老板…让我以后别来上班了", "HR told me not
/// to come back"), is not the user's: the labour-dispute card its words name is not negated.
#[test]
fn a_reported_instruction_negates_nothing() {
    let legal = eval_config("twentieth");
    let reg = legal.load();
    let q = "老板昨天让我以后别来上班了，连一分钱补偿都不给，我能怎么办";
    assert!(!reg.recognizer.recognize(q).candidates.iter().any(|c| c.negated()), "nothing negated in {q:?}");
    assert_eq!(routed(&reg, q).0, ["labour_dispute_agent"]);
}
