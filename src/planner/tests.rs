//! `plan_turn` as a table: (query, slots, pending, previous) -> decision, with today's date
//! passed in.

use std::path::Path;
use std::sync::Arc;

use chrono::NaiveDate;
use serde_json::{json, Map, Value};

use super::*;
use crate::registry::RegistryHandle;

fn registry() -> Arc<Registry> {
    registry_at("agents_config.yaml")
}

/// The snapshot of the config at `path` (relative to the repository root).
fn registry_at(path: &str) -> Arc<Registry> {
    RegistryHandle::open(&Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap().load()
}

fn today() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 11, 23).unwrap()
}

/// A compact name of a decision, for the tables.
fn kind(d: &Decision) -> String {
    match d {
        Decision::Direct(s) => format!("direct:{s:?}"),
        Decision::Escalate(r) => format!("escalate:{r:?}"),
        Decision::Cancel => "cancel".into(),
        Decision::Choose(q) => format!("choose:{}", q.candidates.join("|")),
        Decision::Plan { plan, mode, .. } => {
            let agents: Vec<&str> = plan.sub_tasks.iter().map(|t| t.assigned_agent.as_str()).collect();
            format!("{mode:?}:{}", agents.join("+"))
        }
    }
}

/// Asserts the decision ([`kind`]) of each query as the first turn of a thread.
fn assert_first_turns(reg: &Registry, cases: &[(&str, &str)]) {
    for (query, expected) in cases {
        assert_eq!(kind(&decide(reg, query, &idle()).decision), *expected, "{query}");
    }
}

struct Ctx {
    slots: Map<String, Value>,
    session_slots: Map<String, Value>,
    pending: Option<Vec<SubTask>>,
    previous: Option<(Vec<String>, String)>,
    /// A pending did-you-mean question: (query, candidates).
    choice: Option<(String, Vec<String>)>,
}

fn decide(reg: &Registry, query: &str, ctx: &Ctx) -> TurnDecision {
    let input = TurnInput {
        query,
        slots: &ctx.slots,
        session_slots: &ctx.session_slots,
        pending: ctx.pending.as_deref(),
        pending_plan_id: ctx.pending.as_ref().map(|_| "plan_pending"),
        choice: ctx.choice.as_ref().map(|(query, candidates)| ChoiceInput { query, candidates }),
        previous: ctx.previous.as_ref().map(|(intent, query)| Previous { intent, query }),
        today: today(),
        plan_id: "plan_new",
        lang: crate::text::Lang::detect(query),
    };
    plan_turn(reg, input)
}

fn idle() -> Ctx {
    Ctx { slots: Map::new(), session_slots: Map::new(), pending: None, previous: None, choice: None }
}

/// A pending hotel booking missing both keys, as the turn "帮我订个酒店" leaves it.
fn hotel_pending(reg: &Registry) -> Ctx {
    let first = decide(reg, "帮我订个酒店", &idle());
    let Decision::Plan { plan, .. } = first.decision else { panic!("a plan") };
    Ctx { pending: Some(plan.blocked().cloned().collect()), ..idle() }
}

#[test]
fn turns_without_pending_work() {
    let reg = registry();
    let cases = [
        ("帮我订个酒店", "Fresh:hotel_agent"),
        ("帮我查一下航班CA1234，然后安排白云机场接机", "Fresh:flight_agent+pickup_agent"),
        ("我要转人工", "escalate:UserRequested"),
        ("你这个傻逼", "escalate:Abusive"),
        ("我想自杀", "escalate:SelfHarm"),
        ("气死我了，破服务", "direct:Angry"),
        ("你好", "direct:Greeting"),
        ("谢谢", "direct:Thanks"),
        ("你能做什么", "direct:Capabilities"),
        ("取消", "cancel"),
        ("量子力学是什么", "direct:OutOfScope"),
    ];
    assert_first_turns(&reg, &cases);
}

/// A simple-intent word inside a card's keyword names the card's job: "投诉" is a request for a
/// human on its own, not in a complaints card's "投诉骑手". The safety lists are never set aside.
#[test]
fn a_card_keyword_outranks_a_simple_intent_word_inside_it() {
    let reg = registry_at("tests/fixtures/eval/sixteenth/agents_config.yaml");
    let cases = [
        ("我要投诉骑手，态度太差了", "Fresh:rider_complaint_agent"),
        ("我要投诉", "escalate:UserRequested"),
        ("我要投诉骑手，转人工", "escalate:UserRequested"),
        // "help" alone asks what is possible; inside a request it is no capabilities word.
        ("help", "direct:Capabilities"),
        ("is there any help for disabled guests?", "direct:OutOfScope"),
        ("what can you help me with?", "direct:Capabilities"),
    ];
    assert_first_turns(&reg, &cases);
}

/// A word of the human list that a selected card's text shares with the query beside another
/// word of its own is the card's job ("投诉" with 师傅 of a "师傅投诉" card); alone it still asks for
/// a human.
#[test]
fn a_human_word_a_selected_card_shares_with_more_is_that_card() {
    let reg = registry_at("tests/fixtures/eval/thirtieth/agents_config.yaml");
    let cases = [
        ("我是要投诉昨天来的那个师傅", "Fresh:technician_complaint_agent"),
        ("查一下我买的配件发到哪了……不对不对，我是要投诉昨天来的那个师傅", "Fresh:technician_complaint_agent"),
        ("我要投诉", "escalate:UserRequested"),
        ("我要投诉昨天来的那个师傅，给我转人工", "escalate:UserRequested"),
    ];
    assert_first_turns(&reg, &cases);
}

/// A word of the human list that a selected card names as its job (in its name, keywords or
/// description) is that card's, though the query met the card on other words: "…漆面被刮花了，要投诉"
/// with a card named "洗车损伤投诉". Alone, or beside 转人工, it still asks for a human.
#[test]
fn a_human_word_a_selected_card_names_as_its_job_is_that_card() {
    let reg = registry_at("tests/fixtures/eval/eightyseventh/agents_config.yaml");
    let cases = [
        ("帮我预约贴膜，哦不对，是上周洗完车漆面被刮花了，要投诉", "Fresh:damage_claim_agent"),
        ("上周洗完车漆面被刮花了，我要投诉", "Fresh:damage_claim_agent"),
        ("我要投诉", "escalate:UserRequested"),
        ("上周洗完车漆面被刮花了，给我转人工", "escalate:UserRequested"),
    ];
    assert_first_turns(&reg, &cases);
}

#[test]
fn turns_with_a_pending_clarification() {
    let reg = registry();
    let cases = [
        ("北京，2026-12-01", "Resumed:hotel_agent"),
        ("嗯", "Resumed:hotel_agent"),
        ("你好", "direct:Greeting"),
        ("算了", "cancel"),
        ("查一下北京明天的天气", "Rerouted:weather_agent"),
        ("我要转人工", "escalate:UserRequested"),
    ];
    for (query, expected) in cases {
        let ctx = hotel_pending(&reg);
        let turn = decide(&reg, query, &ctx);
        assert_eq!(kind(&turn.decision), expected, "{query}");
        if let Decision::Plan { plan, mode: PlanMode::Resumed, .. } = &turn.decision {
            assert_eq!(plan.plan_id, "plan_pending", "a resume keeps the stored plan id");
            assert!(turn.intent.resumes_pending);
        }
    }
}

#[test]
fn a_resume_runs_once_the_values_are_given_by_text_or_form() {
    let reg = registry();
    let by_text = decide(&reg, "北京，2026-12-01", &hotel_pending(&reg));
    let mut form = hotel_pending(&reg);
    form.slots = json!({ "city": "上海", "check_in_date": "2026-12-02" }).as_object().unwrap().clone();
    let by_form = decide(&reg, "", &form);
    for (name, turn, city) in [("text", by_text, "北京"), ("form", by_form, "上海")] {
        let Decision::Plan { plan, found, .. } = turn.decision else { panic!("{name}: a plan") };
        assert_eq!(plan.runnable().count(), 1, "{name}: the hotel sub-task runs");
        assert_eq!(plan.sub_tasks[0].inputs["city"], city, "{name}");
        assert_eq!(found["city"], city, "{name}: remembered for later turns");
    }
}

#[test]
fn relative_dates_resolve_against_the_date_passed_in() {
    let reg = registry();
    let turn = decide(&reg, "帮我订北京的酒店，明天入住", &idle());
    let Decision::Plan { plan, .. } = turn.decision else { panic!("a plan") };
    assert_eq!(plan.sub_tasks[0].inputs["check_in_date"], "2026-11-24");
}

#[test]
fn new_values_for_the_previous_intent_rerun_it() {
    let reg = registry();
    let mut ctx = idle();
    ctx.session_slots.insert("city".into(), Value::String("北京".into()));
    ctx.previous = Some((vec!["weather_agent".into()], "北京明天天气怎么样".into()));
    let turn = decide(&reg, "那上海呢？", &ctx);
    assert_eq!(kind(&turn.decision), "Elliptical:weather_agent");
    assert_eq!(turn.intent.rewritten_query, "上海明天天气怎么样");
}

/// "我明天要去上海" names no capability confidently; hotel and weather are plausible.
fn choice_pending(reg: &Registry) -> Ctx {
    let first = decide(reg, "我明天要去上海", &idle());
    let Decision::Choose(q) = first.decision else { panic!("a did-you-mean question, got {}", kind(&first.decision)) };
    assert!(q.candidates.len() >= 2 && q.candidates.len() <= choice::CHOICES_SHOWN, "{:?}", q.candidates);
    Ctx { choice: Some((q.query, q.candidates)), ..idle() }
}

#[test]
fn a_vague_request_asks_which_capability_was_meant() {
    let reg = registry();
    let ctx = choice_pending(&reg);
    let (_, candidates) = ctx.choice.clone().unwrap();
    let (first, second) = (candidates[0].clone(), candidates[1].clone());
    let mut by_slot = choice_pending(&reg);
    by_slot.slots.insert("intent".into(), json!(second));
    let cases: Vec<(&str, &Ctx, String)> = vec![
        ("第一个", &ctx, format!("Chosen:{first}")),
        ("第二个吧", &ctx, format!("Chosen:{second}")),
        ("the first one", &ctx, format!("Chosen:{first}")),
        ("2", &ctx, format!("Chosen:{second}")),
        ("", &by_slot, format!("Chosen:{second}")),
        ("天气那个", &ctx, "Chosen:weather_agent".into()),
        ("订酒店的", &ctx, "Chosen:hotel_agent".into()),
        ("the weather one", &ctx, "Chosen:weather_agent".into()),
        ("算了", &ctx, "cancel".into()),
        ("你好", &ctx, "direct:Greeting".into()),
        ("我要转人工", &ctx, "escalate:UserRequested".into()),
        ("帮我查一下航班CA1234", &ctx, "Fresh:flight_agent".into()),
        ("嗯？", &ctx, format!("choose:{}", candidates.join("|"))),
        ("北京", &ctx, format!("choose:{}", candidates.join("|"))),
    ];
    for (query, ctx, want) in cases {
        let turn = decide(&reg, query, ctx);
        assert_eq!(kind(&turn.decision), want, "{query:?}");
    }
    // The chosen card is planned on the query that was asked about, with its values.
    let turn = decide(&reg, "订酒店的", &ctx);
    let Decision::Plan { plan, .. } = turn.decision else { panic!("a plan") };
    assert_eq!(plan.sub_tasks[0].inputs["message"], json!("我明天要去上海"));
    assert_eq!(plan.sub_tasks[0].inputs.get("city"), Some(&json!("上海")), "{:?}", plan.sub_tasks[0].inputs);
    assert!(turn.intent.resumes_pending);
}

#[test]
fn out_of_scope_without_candidates_is_not_a_question() {
    let reg = registry();
    for query in ["量子力学是什么", "🙂🙂", "？？？", ""] {
        let turn = decide(&reg, query, &idle());
        assert!(!matches!(turn.decision, Decision::Choose(_)), "{query:?}: {}", kind(&turn.decision));
    }
}

/// A registry of cards with two keys of one kind each (issue: the right value in the right key).
fn pairs_registry() -> Arc<Registry> {
    let yaml = r#"
version: 1
agents:
  - id: bp_agent
    name: 血压记录
    description: 记录血压
    endpoint: { url: "http://127.0.0.1:9/invoke", protocol: http }
    keywords: [血压, blood pressure]
    input_schema:
      type: object
      properties:
        message: { type: string }
        systolic: { type: number, minimum: 50, maximum: 260 }
        diastolic: { type: number, minimum: 30, maximum: 200 }
    output_schema: { type: object }
    required_semantic_keys:
      - { key: systolic, description: 收缩压, extract: { type: number }, synonyms: [高压] }
      - { key: diastolic, description: 舒张压, extract: { type: number }, synonyms: [低压] }
  - id: train_agent
    name: 火车票
    description: 预订火车票
    endpoint: { url: "http://127.0.0.1:9/invoke", protocol: http }
    keywords: [火车票, train]
    input_schema: { type: object, properties: { message: { type: string }, origin: { type: string }, destination: { type: string } } }
    output_schema: { type: object }
    required_semantic_keys:
      - { key: origin, description: 出发城市, extract: { values: [北京, 上海, 广州] }, synonyms: [从, from] }
      - { key: destination, description: 到达城市, extract: { values: [北京, 上海, 广州] }, synonyms: [到, 去, to] }
  - id: stay_agent
    name: 民宿
    description: 预订民宿
    endpoint: { url: "http://127.0.0.1:9/invoke", protocol: http }
    keywords: [民宿]
    input_schema: { type: object, properties: { message: { type: string }, check_in: { type: string }, check_out: { type: string } } }
    output_schema: { type: object }
    required_semantic_keys:
      - { key: check_in, description: 入住日期, extract: { type: date, not_before: today }, synonyms: [入住] }
      - { key: check_out, description: 离店日期, extract: { type: date, not_before: today }, synonyms: [离店, 退房] }
"#;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let loaded = crate::config::load_from_str(yaml, &dir.join("pairs.yaml"), dir, &|_| None).unwrap();
    Arc::new(Registry::from_config(loaded, 1).unwrap())
}

/// The plan of a decision.
fn plan_of(turn: TurnDecision) -> TaskPlan {
    match turn.decision {
        Decision::Plan { plan, .. } => plan,
        other => panic!("a plan, got {}", kind(&other)),
    }
}

/// The values of `keys` in the plan's first sub-task (`null` for a missing one).
fn values(plan: &TaskPlan, keys: &[&str]) -> Vec<Value> {
    keys.iter().map(|k| plan.sub_tasks[0].inputs.get(*k).cloned().unwrap_or(Value::Null)).collect()
}

#[test]
fn two_keys_of_one_kind_get_one_value_each() {
    let reg = pairs_registry();
    let bp = ["systolic", "diastolic"];
    let cases = [
        ("记录血压120/80", json!([120, 80])),
        ("记录血压 120，80", json!([120, 80])),
        ("记录血压：收缩压135，舒张压85", json!([135, 85])),
        ("blood pressure: diastolic 85 systolic 135", json!([135, 85])),
        ("记录血压120", json!([120, null])),
        ("记录血压 120 80 70", json!([null, null])),
    ];
    for (query, want) in cases {
        let plan = plan_of(decide(&reg, query, &idle()));
        assert_eq!(Value::Array(values(&plan, &bp)), want, "{query}");
    }
    // "120" then "80" on the next turn: the second value goes to the key still asked for.
    let first = plan_of(decide(&reg, "记录血压120", &idle()));
    assert_eq!(first.missing_semantic_keys, ["diastolic"]);
    let ctx = Ctx { pending: Some(first.blocked().cloned().collect()), ..idle() };
    let second = plan_of(decide(&reg, "80", &ctx));
    assert_eq!(values(&second, &bp), [json!(120), json!(80)]);
    assert_eq!(second.runnable().count(), 1);

    let route = |q: &str| values(&plan_of(decide(&reg, q, &idle())), &["origin", "destination"]);
    assert_eq!(route("订火车票，从北京到上海"), [json!("北京"), json!("上海")]);
    assert_eq!(route("订火车票 上海到广州"), [json!("上海"), json!("广州")]);
    assert_eq!(route("订去广州的火车票"), [Value::Null, json!("广州")]);
    let stay = |q: &str| values(&plan_of(decide(&reg, q, &idle())), &["check_in", "check_out"]);
    assert_eq!(stay("订民宿，12月1日入住，12月3日离店"), [json!("2026-12-01"), json!("2026-12-03")]);
    assert_eq!(stay("订民宿，下周三入住，下周五退房"), [json!("2026-12-02"), json!("2026-12-04")]);
    // The card's own clause comes first, but never gives a value the text gave another key.
    assert_eq!(stay("订12月3日走的民宿，12月1日入住"), [json!("2026-12-01"), json!("2026-12-03")]);
}

#[test]
fn a_past_date_is_invalid_with_its_value_and_reason() {
    let reg = registry();
    let plan = plan_of(decide(&reg, "帮我订北京的酒店，2020-01-01入住", &idle()));
    assert_eq!(plan.runnable().count(), 0, "never dispatched");
    let info = &plan.semantic_info[0];
    assert_eq!(info.kind, MissKind::Invalid);
    assert_eq!(info.keys, ["check_in_date"]);
    assert_eq!(info.rejected_values, [json!("2020-01-01")]);
    assert_eq!(info.reasons, [Rejection::PastDate]);
    // "下周一上午10点" is next Monday, not today.
    let plan = plan_of(decide(&reg, "帮我订北京的酒店，下周一入住", &idle()));
    assert_eq!(plan.sub_tasks[0].inputs["check_in_date"], "2026-11-30");
}

#[test]
fn a_key_is_filled_from_an_upstream_output_or_memory_under_another_name() {
    let reg = registry();
    // The flight produces arrival_airport: the pickup's airport waits for it, never asked.
    let plan = plan_of(decide(&reg, "帮我查一下航班CA1234，然后安排接机", &idle()));
    assert!(plan.semantic_info.is_empty(), "{:?}", plan.semantic_info);
    assert_eq!(plan.sub_tasks[1].dependencies, [plan.sub_tasks[0].task_id.clone()]);
    // A flight looked up earlier: its remembered arrival_airport fills the airport.
    let mut ctx = idle();
    ctx.session_slots =
        json!({ "arrival_airport": "白云机场", "arrival_time": "2026-12-01T14:30" }).as_object().unwrap().clone();
    let plan = plan_of(decide(&reg, "安排接机", &ctx));
    assert_eq!(plan.runnable().count(), 1);
    assert_eq!(plan.sub_tasks[0].inputs["airport"], "白云机场");
}

/// Each card of a multi-intent turn takes its values from its own clause first, then from the
/// rest of the text (a city said once serves both).
#[test]
fn each_card_takes_the_values_of_its_own_clause() {
    let reg = registry();
    let cities = |query: &str| -> Vec<(String, Value)> {
        let Decision::Plan { plan, .. } = decide(&reg, query, &idle()).decision else { panic!("{query}: no plan") };
        plan.sub_tasks.iter().map(|t| (t.assigned_agent.clone(), t.inputs["city"].clone())).collect()
    };
    let pair = |a: &str, x: &str, b: &str, y: &str| vec![(a.to_string(), json!(x)), (b.to_string(), json!(y))];
    assert_eq!(cities("帮我订北京的酒店，顺便查下上海天气"), pair("hotel_agent", "北京", "weather_agent", "上海"));
    assert_eq!(cities("查下上海天气，再帮我订北京的酒店"), pair("weather_agent", "上海", "hotel_agent", "北京"));
    assert_eq!(
        cities("Book a hotel in Beijing for tomorrow, and what's the weather like in Shanghai?"),
        pair("hotel_agent", "Beijing", "weather_agent", "Shanghai")
    );
    // A clause with no city of its own: the one the text says elsewhere.
    assert_eq!(cities("明天去北京，帮我订酒店，再查查天气"), pair("hotel_agent", "北京", "weather_agent", "北京"));
    // One card: its own clause first too.
    assert_eq!(cities("我从上海出发，想订北京的酒店")[0].1, json!("北京"));
    // Two cards in one clause: each its own side of the joining word.
    let weather_then_hotel = |x: &str, y: &str| pair("weather_agent", x, "hotel_agent", y);
    let mut got = cities("查下北京天气和上海的酒店");
    got.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(got, pair("hotel_agent", "上海", "weather_agent", "北京"));
    assert_eq!(
        cities("check the weather in Beijing and a hotel in Shanghai"),
        weather_then_hotel("Beijing", "Shanghai")
    );
    // ... and the one said for both when its side names none.
    let mut got = cities("北京的天气和酒店");
    got.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(got, pair("hotel_agent", "北京", "weather_agent", "北京"));
}

/// One card asked for several listed values of one key is planned once per value; an origin
/// and a destination are one request, and a comma with other words starts another clause.
#[test]
fn one_card_asked_for_several_values_is_fanned_out() {
    let reg = registry();
    let planned = |query: &str| -> Vec<String> {
        let Decision::Plan { plan, .. } = decide(&reg, query, &idle()).decision else { panic!("{query}: no plan") };
        let key = |t: &SubTask| t.inputs.iter().find(|(k, _)| k.as_str() != "message").map(|(_, v)| v.to_string());
        plan.sub_tasks.iter().map(|t| format!("{}:{}", t.assigned_agent, key(t).unwrap_or_default())).collect()
    };
    assert_eq!(planned("北京和上海明天的天气"), ["weather_agent:\"北京\"", "weather_agent:\"上海\""]);
    // Each says which value it is for.
    let Decision::Plan { plan, .. } = decide(&reg, "北京和上海明天的天气", &idle()).decision else {
        panic!()
    };
    assert!(plan.sub_tasks[1].description.ends_with("（上海）"), "{:?}", plan.sub_tasks[1].description);
    assert_eq!(
        planned("What's the weather in Beijing and Shanghai?"),
        ["weather_agent:\"Beijing\"", "weather_agent:\"Shanghai\""]
    );
    assert_eq!(planned("帮我查一下CA1234和MU5101"), ["flight_agent:\"CA1234\"", "flight_agent:\"MU5101\""]);
    assert_eq!(
        planned("帮我订北京的酒店，顺便查下上海和杭州的天气"),
        ["hotel_agent:\"北京\"", "weather_agent:\"上海\"", "weather_agent:\"杭州\""]
    );
    assert_eq!(planned("北京天气怎么样，上海呢"), ["weather_agent:\"北京\""]);
    // Not when another card is asked for in the same clause: one sub-task each.
    assert_eq!(planned("查下北京天气和上海的酒店").len(), 2);
    // Nor when a value is one end of a route: the second city is no item of a list of hotels.
    assert_eq!(planned("订上海的酒店和北京到上海的机票"), ["hotel_agent:\"上海\""]);
    assert_eq!(planned("Book a hotel in Shanghai and train tickets Beijing to Shanghai"), ["hotel_agent:\"Shanghai\""]);
}
