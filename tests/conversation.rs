//! Conversations over several turns (docs/conversation.md): memory and
//! rewrite, the clarification lifecycle, intent switches, escalation, the session API.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::*;

async fn session(app: &TestApp, thread: &str, user: &str) -> (u16, Value) {
    let resp = app.client.get(format!("{}/v1/sessions/{thread}?user_id={user}", app.base)).send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

#[tokio::test]
async fn an_elliptical_follow_up_reuses_the_previous_intent() {
    let app = spawn_app().await;
    let first = app.ask("北京明天天气怎么样", None).await;
    let th = thread(&first);
    done(&first);
    let second = app.ask("那上海呢？", Some(&th)).await;
    done(&second);
    let calls = app.calls("weather_agent");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].body["inputs"]["city"], "北京");
    assert_eq!(calls[1].body["inputs"]["city"], "上海");
    let intent = &of_stage(&second, "intent_done")[0]["metadata"]["state"]["intent"];
    assert_eq!(intent["rewritten_query"], "上海明天天气怎么样");
    assert_eq!(calls[1].body["message"], "上海明天天气怎么样");
    assert_eq!(of_stage(&second, "intent_done")[0]["metadata"]["state"]["mode"], "elliptical");
}

#[tokio::test]
async fn a_hotel_after_a_flight_reuses_the_arrival_city() {
    let app = spawn_app().await;
    let first = app.ask("帮我查一下航班CA1234", None).await;
    let th = thread(&first);
    done(&first);
    let second = app.ask("再帮我订个酒店", Some(&th)).await;
    let info = &of_stage(&second, "blocked")[0]["metadata"]["semantic_info"][0];
    assert_eq!(info["keys"], json!(["check_in_date"]), "the city is known from the flight");
    // The date comes; the city the flight lands in is remembered, so the booking asks first.
    let third = app.ask("明天入住", Some(&th)).await;
    let info = &done(&third)["metadata"]["semantic_info"][0];
    assert_eq!((info["type"].as_str(), info["values"][0].as_str()), (Some("confirm"), Some("广州")), "{info}");
    assert!(app.calls("hotel_agent").is_empty());
    done(&app.ask("是的", Some(&th)).await);
    let calls = app.calls("hotel_agent");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].body["inputs"]["city"], "广州");
}

#[tokio::test]
async fn short_answers_continue_the_pending_request() {
    let app = spawn_app().await;
    let th = thread(&app.ask("帮我订个酒店", None).await);
    let second = app.ask("北京", Some(&th)).await;
    assert_eq!(of_stage(&second, "intent_done")[0]["metadata"]["state"]["mode"], "resumed");
    assert_eq!(of_stage(&second, "blocked")[0]["metadata"]["semantic_info"][0]["keys"], json!(["check_in_date"]));
    let third = app.ask("明天", Some(&th)).await;
    assert_eq!(of_stage(&third, "intent_done")[0]["metadata"]["state"]["mode"], "resumed");
    done(&third);
    assert_eq!(app.calls("hotel_agent").len(), 1);
    assert!(session(&app, &th, "u1").await.1["pending"].is_null());
}

#[tokio::test]
async fn a_change_of_intent_reroutes_and_keeps_history() {
    let app = spawn_app().await;
    let th = thread(&app.ask("帮我订个酒店", None).await);
    app.ask("北京", Some(&th)).await;
    let third = app.ask("算了，帮我查一下上海的天气", Some(&th)).await;
    done(&third);
    assert_eq!(of_stage(&third, "intent_done")[0]["metadata"]["state"]["mode"], "rerouted");
    assert_eq!(app.calls("weather_agent").len(), 1);
    assert_eq!(app.calls("weather_agent")[0].body["inputs"]["city"], "上海");
    assert!(app.calls("hotel_agent").is_empty());
    let (_, s) = session(&app, &th, "u1").await;
    assert!(s["pending"].is_null(), "the pending hotel request was dropped");
    assert_eq!(s["history"].as_array().unwrap().len(), 3, "history kept");
}

#[tokio::test]
async fn a_bare_cancel_word_drops_the_pending_request() {
    let app = spawn_app().await;
    let th = thread(&app.ask("帮我订个酒店", None).await);
    let second = app.ask("算了", Some(&th)).await;
    let text = done(&second)["content"].as_str().unwrap().to_string();
    assert!(text.contains("已取消"), "{text}");
    assert!(session(&app, &th, "u1").await.1["pending"].is_null());
    // Values now resume nothing.
    let third = app.ask("北京，明天入住", Some(&th)).await;
    done(&third);
    assert!(app.calls("hotel_agent").is_empty());
    // A new request is planned normally.
    done(&app.ask("帮我查一下上海的天气", Some(&th)).await);
    assert_eq!(app.calls("weather_agent").len(), 1);
}

#[tokio::test]
async fn cancel_words_in_english_and_chinese() {
    let app = spawn_app().await;
    // 退出, quit, exit: issue 17 #12 (the contract's scenarios).
    for word in ["取消", "不用了", "不要了", "cancel", "never mind", "forget it", "退出", "quit", "exit"] {
        let th = thread(&app.ask("帮我订个酒店", None).await);
        let events = app.ask(word, Some(&th)).await;
        done(&events);
        assert!(session(&app, &th, "u1").await.1["pending"].is_null(), "{word}");
    }
}

#[tokio::test]
async fn a_clarification_expires_after_its_timeout() {
    let app = spawn_app_with(Setup::default(), |c| c["supervisor"]["clarification_timeout"] = json!("300ms")).await;
    let th = thread(&app.ask("帮我订个酒店", None).await);
    let (_, s) = session(&app, &th, "u1").await;
    assert!(s["pending"]["expires_at"].is_string());
    tokio::time::sleep(Duration::from_millis(400)).await;
    let events = app.ask("北京，明天入住", Some(&th)).await;
    let done = done(&events);
    assert_eq!(of_stage(&events, "intent_done")[0]["metadata"]["state"]["pending_expired"], true);
    assert!(done["content"].as_str().unwrap().contains("超时"), "{}", done["content"]);
    assert!(app.calls("hotel_agent").is_empty(), "expired work is not resumed");
}

#[tokio::test]
async fn unanswered_asks_escalate_after_max_rounds() {
    let app = spawn_app_with(Setup::default(), |c| c["supervisor"]["max_clarification_rounds"] = json!(2)).await;
    let th = thread(&app.ask("帮我订个酒店", None).await);
    let second = app.ask("嗯嗯", Some(&th)).await;
    assert_eq!(done(&second)["stage"], "answer");
    assert_eq!(of_stage(&second, "blocked").len(), 1, "asked again");
    assert_eq!(session(&app, &th, "u1").await.1["pending"]["rounds"], 2);
    let third = app.ask("嗯嗯", Some(&th)).await;
    let done = done(&third);
    assert_eq!(done["stage"], "escalated");
    let card = &done["metadata"]["state"]["escalation"];
    assert_eq!(card["reason"], "clarification_rounds_exhausted");
    assert_eq!(card["pending"][0]["assigned_agent"], "hotel_agent");
    assert_eq!(card["last_turns"].as_array().unwrap().len(), 2);
    assert!(app.calls("hotel_agent").is_empty());
}

#[tokio::test]
async fn a_partial_answer_resets_the_round_count() {
    let app = spawn_app_with(Setup::default(), |c| c["supervisor"]["max_clarification_rounds"] = json!(1)).await;
    let th = thread(&app.ask("帮我订个酒店", None).await);
    // Progress (one of two keys) is not an unanswered ask.
    let second = app.ask("北京", Some(&th)).await;
    assert_eq!(done(&second)["stage"], "answer");
    assert_eq!(session(&app, &th, "u1").await.1["pending"]["rounds"], 1);
}

#[tokio::test]
async fn consecutive_failed_turns_escalate_and_success_resets_the_count() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let app = spawn_app_with(Setup::default(), |c| {
        agent_mut(c, "flight_agent")["endpoint"]["url"] = json!(format!("http://{closed}/invoke"));
        agent_mut(c, "flight_agent")["endpoint"]["retries"] = json!(0);
    })
    .await;
    let th = thread(&app.ask("查航班CA1234", None).await);
    assert_eq!(session(&app, &th, "u1").await.1["failures"], 1);
    // A successful turn resets the count.
    done(&app.ask("上海天气怎么样", Some(&th)).await);
    assert_eq!(session(&app, &th, "u1").await.1["failures"], 0);
    let e1 = app.ask("查航班CA1234", Some(&th)).await;
    assert_eq!(done(&e1)["stage"], "answer");
    let e2 = app.ask("查航班CA1234", Some(&th)).await;
    let done = done(&e2);
    assert_eq!(done["stage"], "escalated");
    assert_eq!(done["metadata"]["state"]["escalation"]["reason"], "repeated_failures");
    assert!(done["metadata"]["state"]["escalation"]["summary"].as_str().unwrap().contains("未能完成"));
}

#[tokio::test]
async fn a_human_request_carries_an_escalation_card_with_pending_work() {
    let app = spawn_app().await;
    let th = thread(&app.ask("帮我订个酒店", None).await);
    let events = app.ask("我要转人工", Some(&th)).await;
    let done = done(&events);
    assert_eq!(done["stage"], "escalated");
    let card = &done["metadata"]["state"]["escalation"];
    assert_eq!(card["reason"], "user_requested");
    assert_eq!(card["last_turns"][0]["query"], "帮我订个酒店");
    assert_eq!(card["pending"][0]["assigned_agent"], "hotel_agent");
}

#[tokio::test]
async fn the_session_api_shows_and_cancels_and_belongs_to_its_user() {
    let app = spawn_app().await;
    let th = thread(&app.ask("帮我订个酒店", None).await);
    let (status, s) = session(&app, &th, "u1").await;
    assert_eq!(status, 200);
    assert_eq!(s["thread_id"], json!(th));
    assert_eq!(s["history"][0]["query"], "帮我订个酒店");
    assert_eq!(s["pending"]["keys"], json!(["city", "check_in_date"]));
    assert_eq!(s["pending"]["rounds"], 1);
    assert!(s["pending"]["expires_at"].is_string());

    assert_eq!(session(&app, &th, "someone-else").await.0, 404);
    let resp = app.client.get(format!("{}/v1/sessions/{th}", app.base)).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(session(&app, "th_unknown", "u1").await.0, 404);

    let resp = app.client.delete(format!("{}/v1/sessions/{th}?user_id=someone-else", app.base)).send().await.unwrap();
    assert_eq!(resp.status(), 404);
    let resp = app.client.delete(format!("{}/v1/sessions/{th}?user_id=u1", app.base)).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["cancelled"][0]["assigned_agent"], "hotel_agent");
    assert!(session(&app, &th, "u1").await.1["pending"].is_null());
}

#[tokio::test]
async fn concurrent_turns_on_one_thread_lose_no_write() {
    let app = spawn_app().await;
    let th = "th-concurrent";
    let turns = (0..4).map(|i| app.ask(if i % 2 == 0 { "谢谢" } else { "你好" }, Some(th)));
    let results = futures::future::join_all(turns).await;
    for events in &results {
        done(events);
    }
    let (_, s) = session(&app, th, "u1").await;
    let history = s["history"].as_array().unwrap();
    assert_eq!(history.len(), 4, "every turn saved: {s}");
    let mut ids: Vec<&str> = history.iter().map(|t| t["turn_id"].as_str().unwrap()).collect();
    ids.dedup();
    assert_eq!(ids.len(), 4);
}

/// "我明天要去上海" names no capability confidently: the turn asks which one was meant.
async fn ask_did_you_mean(app: &TestApp) -> (String, Value) {
    let before = app.calls("hotel_agent").len() + app.calls("weather_agent").len();
    let events = app.ask("我明天要去上海", None).await;
    let th = thread(&events);
    let done = done(&events).clone();
    assert_eq!(done["stage"], "answer");
    let info = done["metadata"]["semantic_info"][0].clone();
    assert_eq!(info["type"], "intent", "{done:#}");
    assert_eq!(info["keys"], json!(["intent"]));
    assert_eq!(info["fe_widgets_suggestion"], json!(["intent_picker"]));
    let candidates = info["candidates"].as_array().unwrap();
    assert!((2..=3).contains(&candidates.len()), "{info}");
    for c in candidates {
        let name = c["name"].as_str().unwrap();
        assert!(done["content"].as_str().unwrap().contains(name), "the question names {name}: {}", done["content"]);
        assert!(!done["content"].as_str().unwrap().contains(c["agent_id"].as_str().unwrap()), "never ids");
    }
    assert_eq!(of_stage(&events, "intent_done")[0]["metadata"]["state"]["intent"]["intent"], json!([]));
    let after = app.calls("hotel_agent").len() + app.calls("weather_agent").len();
    assert_eq!(before, after, "nothing dispatched");
    (th, info)
}

#[tokio::test]
async fn a_vague_request_asks_which_capability_and_a_pick_runs_it() {
    let app = spawn_app().await;
    let (th, info) = ask_did_you_mean(&app).await;
    let (_, s) = session(&app, &th, "u1").await;
    assert_eq!(s["choice"]["candidates"][0], info["candidates"][0]["agent_id"], "stored: {s}");
    assert_eq!(s["choice"]["choice_id"], info["task_id"]);
    assert!(s["choice"]["expires_at"].is_string(), "{s}");

    // Words of a candidate's name pick it; the card is planned on the original query.
    let second = app.ask("天气那个", Some(&th)).await;
    assert_eq!(of_stage(&second, "intent_done")[0]["metadata"]["state"]["mode"], "chosen");
    done(&second);
    let calls = app.calls("weather_agent");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].body["message"], "我明天要去上海");
    assert_eq!(calls[0].body["inputs"]["city"], "上海");
    assert!(app.calls("hotel_agent").is_empty());
    assert!(session(&app, &th, "u1").await.1["choice"].is_null(), "answered");

    // An ordinal, and the widget's `intent` slot.
    let (th, info) = ask_did_you_mean(&app).await;
    done(&app.ask("第二个", Some(&th)).await);
    let second = info["candidates"][1]["agent_id"].as_str().unwrap().to_string();
    assert_eq!(app.calls(&second).len() as u32, 1 + u32::from(second == "weather_agent"));
    let (th, info) = ask_did_you_mean(&app).await;
    let first = info["candidates"][0]["agent_id"].as_str().unwrap().to_string();
    let before = app.calls(&first).len();
    done(&app.chat(json!({ "query": "", "user_id": "u1", "thread_id": th, "slots": { "intent": first } })).await);
    assert_eq!(app.calls(&first).len(), before + 1);
}

/// A request joined to a planned one that no card clearly means ("…，另外我们能不能再多住一天"
/// beside a stay-extension card and a hotel card) is asked about as a did-you-mean question in
/// the same answer: the plan runs, the part is stored as the pending choice with the
/// `intent_picker` widget, and the pick plans the card on that part.
#[tokio::test]
async fn a_part_no_card_clearly_means_is_asked_about_beside_the_plan_and_a_pick_runs_it() {
    let app = spawn_app_with(Setup::default(), add_stay_card).await;
    let events = app.ask("把1000美元换成人民币，另外我们能不能再多住一天", None).await;
    let th = thread(&events);
    let answer = done(&events).clone();
    assert_eq!(app.calls("exchange_agent").len(), 1, "the plan ran");
    let content = answer["content"].as_str().unwrap();
    assert!(content.contains("我们能不能再多住一天") && content.contains("住宿延期"), "{content}");
    let info = &answer["metadata"]["semantic_info"][0];
    assert_eq!(info["type"], "intent", "{answer:#}");
    assert_eq!(info["fe_widgets_suggestion"], json!(["intent_picker"]));
    assert_eq!(info["key_descriptions"], json!(["“我们能不能再多住一天”是指哪项服务？"]));
    assert_eq!(info["candidates"][0]["agent_id"], "stay_agent");
    assert_eq!(answer["metadata"]["state"]["did_you_mean"], 1);
    let (_, s) = session(&app, &th, "u1").await;
    assert_eq!(s["choice"]["query"], "我们能不能再多住一天", "{s}");
    assert_eq!(s["choice"]["choice_id"], info["task_id"]);

    // The pick plans the card on the part, not on the whole first query.
    let second = app.ask("第一个", Some(&th)).await;
    let state = &of_stage(&second, "intent_done")[0]["metadata"]["state"];
    assert_eq!(state["mode"], "chosen", "{state:#}");
    assert_eq!(state["intent"]["intent"], json!(["stay_agent"]), "{state:#}");
    done(&second);
    assert_eq!(app.calls("exchange_agent").len(), 1, "the planned part is not run again");
    assert!(session(&app, &th, "u1").await.1["choice"].is_null(), "answered");
}

#[tokio::test]
async fn a_did_you_mean_question_is_cancelled_expired_and_asked_again_like_a_clarification() {
    let app = spawn_app_with(Setup::default(), |c| c["supervisor"]["max_clarification_rounds"] = json!(2)).await;
    // Cancel words drop it.
    let (th, _) = ask_did_you_mean(&app).await;
    let events = app.ask("算了", Some(&th)).await;
    assert!(done(&events)["content"].as_str().unwrap().contains("还有什么可以帮您"));
    assert!(session(&app, &th, "u1").await.1["choice"].is_null());
    // No pick: asked again, then escalated when the rounds run out.
    let (th, _) = ask_did_you_mean(&app).await;
    let again = app.ask("嗯？", Some(&th)).await;
    assert_eq!(done(&again)["metadata"]["semantic_info"][0]["type"], "intent");
    assert_eq!(session(&app, &th, "u1").await.1["choice"]["rounds"], 2);
    let third = app.ask("嗯？", Some(&th)).await;
    assert_eq!(done(&third)["stage"], "escalated");
    assert_eq!(done(&third)["metadata"]["state"]["escalation"]["reason"], "clarification_rounds_exhausted");
    // A new request naming a card is planned as such.
    let (th, _) = ask_did_you_mean(&app).await;
    done(&app.ask("帮我查一下航班CA1234", Some(&th)).await);
    assert_eq!(app.calls("flight_agent").len(), 1);
    assert!(session(&app, &th, "u1").await.1["choice"].is_null());

    let app = spawn_app_with(Setup::default(), |c| c["supervisor"]["clarification_timeout"] = json!("300ms")).await;
    let (th, _) = ask_did_you_mean(&app).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let events = app.ask("第一个", Some(&th)).await;
    assert_eq!(of_stage(&events, "intent_done")[0]["metadata"]["state"]["pending_expired"], true);
    assert!(done(&events)["content"].as_str().unwrap().contains("超时"), "{}", done(&events)["content"]);
    assert!(app.calls("hotel_agent").is_empty() && app.calls("weather_agent").is_empty());
}

#[tokio::test]
async fn self_harm_anger_and_abuse_get_the_right_care_and_precise_reasons() {
    let app = spawn_app().await;
    let events = app.ask("我最近压力太大了，我想自杀", None).await;
    let d = done(&events);
    assert_eq!(d["stage"], "escalated");
    let text = d["content"].as_str().unwrap();
    assert!(text.contains("400-161-9995") && text.contains("120"), "help resources: {text}");
    let card = &d["metadata"]["state"]["escalation"];
    assert_eq!((card["reason"].as_str(), card["priority"].as_str()), (Some("self_harm"), Some("urgent")), "{card}");
    assert!(card["summary"].as_str().unwrap().contains("紧急"), "{card}");

    let events = app.ask("I want to end my life", None).await;
    let d = done(&events);
    assert_eq!(d["metadata"]["state"]["escalation"]["reason"], "self_harm");
    assert!(d["content"].as_str().unwrap().contains("988"), "{}", d["content"]);

    // Anger: an apology and a human offered, not the capability list.
    let events = app.ask("气死我了，什么破服务", None).await;
    let d = done(&events);
    assert_eq!(d["stage"], "answer");
    let text = d["content"].as_str().unwrap();
    assert!(text.contains("抱歉") && text.contains("转人工") && !text.contains("我可以帮您"), "{text}");

    // Abuse: handed over, labelled as such (not "用户请求").
    let events = app.ask("你这个傻逼客服", None).await;
    let card = &done(&events)["metadata"]["state"]["escalation"];
    assert_eq!((card["reason"].as_str(), card["priority"].as_str()), (Some("abusive"), Some("normal")));
    let summary = card["summary"].as_str().unwrap();
    assert!(summary.contains("辱骂") && !summary.starts_with("用户请求"), "{summary}");
    // A request for a human says so.
    let card = done(&app.ask("转人工", None).await)["metadata"]["state"]["escalation"].clone();
    assert!(card["summary"].as_str().unwrap().contains("人工"), "{card}");
}

#[tokio::test]
async fn late_values_after_an_expiry_are_offered_to_restart_the_request() {
    let app = spawn_app_with(Setup::default(), |c| c["supervisor"]["clarification_timeout"] = json!("300ms")).await;
    let th = thread(&app.ask("帮我订个酒店", None).await);
    tokio::time::sleep(Duration::from_millis(400)).await;
    let events = app.ask("北京，明天入住", Some(&th)).await;
    let text = done(&events)["content"].as_str().unwrap().to_string();
    assert!(text.contains("超时") && text.contains("酒店") && text.contains("重新"), "restated and offered: {text}");
    assert!(!text.contains("我可以帮您"), "not the out-of-scope list: {text}");
    assert!(app.calls("hotel_agent").is_empty(), "nothing runs without a yes");
    // "是" restarts it with the values given late.
    let events = app.ask("是", Some(&th)).await;
    done(&events);
    let calls = app.calls("hotel_agent");
    assert_eq!(calls.len(), 1, "{events:#?}");
    assert_eq!(calls[0].body["inputs"]["city"], "北京");
}

/// Issue 17 item 7: a part of the request no card covers is named in the summary, not dropped.
#[tokio::test]
async fn parts_no_card_covers_are_named_in_the_summary() {
    let app = spawn_app().await;
    let events = app.ask("北京明天天气怎么样，再订一张去上海的火车票", None).await;
    let answer = done(&events);
    assert_eq!(app.calls("weather_agent").len(), 1);
    let text = answer["content"].as_str().unwrap();
    assert!(text.contains("以下请求我暂时无法处理") && text.contains("火车票"), "{text}");
    assert_eq!(answer["metadata"]["state"]["plan"]["unhandled"], json!(["火车票"]));
    let intent = &of_stage(&events, "intent_done")[0]["metadata"]["state"]["intent"];
    assert!(intent["candidates"].is_array(), "{intent}");

    let events = app.ask("What's the weather in Beijing tomorrow, and a train ticket to Shanghai", None).await;
    let text = done(&events)["content"].as_str().unwrap().to_string();
    assert!(text.contains("I can't help with") && text.contains("train ticket"), "{text}");
    // Context that asks for nothing is not reported.
    let events = app.ask("北京明天天气怎么样，我要去出差", None).await;
    let text = done(&events)["content"].as_str().unwrap().to_string();
    assert!(!text.contains("无法处理"), "{text}");
}

/// Issue 17 item 5: the reply language belongs to the conversation. Values, names and widget
/// forms keep it; a clearly different-language sentence changes it; an English answer uses the
/// card's English texts.
#[tokio::test]
async fn the_language_belongs_to_the_conversation() {
    let app = spawn_app().await;
    let cjk = |events: &[Value]| {
        done(events)["content"].as_str().unwrap().chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
    };
    let first = app.ask("帮我订个酒店", None).await;
    let th = thread(&first);
    assert!(cjk(&first));
    // A city in English, then a widget form (no text): still Chinese.
    let second = app.ask("Beijing", Some(&th)).await;
    assert!(cjk(&second), "{:?}", done(&second)["content"]);
    let third = app
        .chat(json!({ "query": "", "user_id": "u1", "thread_id": th, "slots": { "check_in_date": "2026-12-01" } }))
        .await;
    assert!(cjk(&third), "{:?}", done(&third)["content"]);
    assert_eq!(session(&app, &th, "u1").await.1["lang"], "zh");
    // A clearly English sentence switches, and English texts of the card are used.
    let fourth = app.ask("Please book a hotel in Shanghai for tomorrow", Some(&th)).await;
    done(&fourth);
    let started = of_stage(&fourth, "agent_started");
    let text = started[0]["content"].as_str().unwrap();
    assert!(text.starts_with("Working on: Hotel booking"), "{text}");
    let planned = of_stage(&fourth, "plan_done")[0]["content"].as_str().unwrap();
    assert!(planned.contains("Finds and books hotels") && !planned.contains("酒店"), "{planned}");
    assert_eq!(session(&app, &th, "u1").await.1["lang"], "en");
    // GET /v1/agents keeps plain strings and adds the per-language texts.
    let agents = app.get("/v1/agents").await;
    let hotel = agents["agents"].as_array().unwrap().iter().find(|a| a["id"] == "hotel_agent").unwrap().clone();
    assert_eq!(hotel["name"], "酒店服务");
    assert_eq!(hotel["names"]["en"], "Hotel booking");
    assert!(hotel["description"].is_string() && hotel["descriptions"]["en"].is_string(), "{hotel}");
}
