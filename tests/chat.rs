//! The chat pipeline end to end: intents, blocking, follow-ups, DAG order and overlap, SSE relay.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{json, Value};
use switchboard_demo::SampleOptions;

use crate::common::*;

const AGENT_IDS: [&str; 5] = ["flight_agent", "pickup_agent", "hotel_agent", "weather_agent", "exchange_agent"];

#[tokio::test]
async fn single_intent_is_dispatched_with_the_right_inputs() {
    let app = spawn_app().await;
    let events = app.ask("帮我订北京的酒店，2026-12-01入住", None).await;
    let done = done(&events);
    assert_eq!(done["stage"], "answer");
    assert_eq!(
        stages(&events),
        [
            "intent_started",
            "intent_done",
            "plan_started",
            "plan_done",
            "agent_started",
            "agent_done",
            "summarize_started",
            "answer"
        ]
    );
    let calls = app.calls("hotel_agent");
    assert_eq!(calls.len(), 1);
    let body = &calls[0].body;
    assert_eq!(body["inputs"]["city"], "北京");
    assert_eq!(body["inputs"]["check_in_date"], "2026-12-01");
    assert_eq!(body["message"], "帮我订北京的酒店，2026-12-01入住");
    assert_eq!(body["user_id"], "u1");
    assert_eq!(body["thread_id"], json!(thread(&events)));
    for field in ["task_id", "plan_id", "session_id"] {
        assert!(body[field].as_str().is_some_and(|s| !s.is_empty()), "{field} sent");
    }
    let tp =
        calls[0].headers.iter().find(|(k, _)| k == "traceparent").map(|(_, v)| v.clone()).expect("traceparent sent");
    assert_eq!(tp.split('-').count(), 4);
    // The agent's own message reaches the user; no other agent was called.
    let agent_done = of_stage(&events, "agent_done")[0];
    assert!(done["content"].as_str().unwrap().contains(agent_done["content"].as_str().unwrap()));
    for other in ["flight_agent", "pickup_agent", "weather_agent", "exchange_agent"] {
        assert!(app.calls(other).is_empty());
    }
    assert_no_agent_ids(&events, &AGENT_IDS);
}

#[tokio::test]
async fn missing_keys_block_the_sub_task_and_name_the_widgets() {
    let app = spawn_app().await;
    let events = app.ask("帮我订个酒店", None).await;
    let done = done(&events);
    let blocked = of_stage(&events, "blocked");
    assert_eq!(blocked.len(), 1);
    let info = &blocked[0]["metadata"]["semantic_info"];
    assert_eq!(
        info,
        &json!([{
            "type": "miss", "sub_agent_id": "hotel_agent", "task_id": info[0]["task_id"],
            "keys": ["city", "check_in_date"],
            "key_descriptions": ["入住城市", "入住日期"],
            "fe_widgets_suggestion": ["city_picker", "date_picker"],
            // Issue 17 #19: the seed's spelling, sent too (a compatibility alias).
            "fe_wigdets_suggestion": ["city_picker", "date_picker"]
        }])
    );
    // What was sent reads back (the alias is ignored when reading).
    let back: switchboard::planner::SemanticInfo = serde_json::from_value(info[0].clone()).unwrap();
    assert_eq!(back.fe_widgets_suggestion, ["city_picker", "date_picker"]);
    // Never dispatched.
    assert!(app.calls("hotel_agent").is_empty());
    assert!(of_stage(&events, "agent_started").is_empty());
    // The user is asked for exactly those keys, with the configured examples.
    let text = done["content"].as_str().unwrap();
    assert!(text.contains("入住城市") && text.contains("入住日期"), "{text}");
    // Examples as people write them (12月1日), never ISO; a form is offered (the keys have widgets).
    assert!(
        text.contains("北京") && text.contains("12月1日") && !text.contains("2026-12-01"),
        "examples shown: {text}"
    );
    assert!(text.contains("表单"), "{text}");
    assert_eq!(done["metadata"]["semantic_info"], *info);
    assert_no_agent_ids(&events, &AGENT_IDS);
}

#[tokio::test]
async fn invalid_slot_values_are_reported_as_invalid() {
    let app = spawn_app().await;
    let events = app
        .chat(json!({ "query": "订酒店", "user_id": "u1", "slots": { "city": "火星", "check_in_date": "2026-12-01" } }))
        .await;
    done(&events);
    let info = &of_stage(&events, "blocked")[0]["metadata"]["semantic_info"];
    assert_eq!(info.as_array().unwrap().len(), 1);
    assert_eq!(info[0]["type"], "invalid");
    assert_eq!(info[0]["keys"], json!(["city"]));
    assert_eq!(info[0]["fe_widgets_suggestion"], json!(["city_picker"]));
    assert!(app.calls("hotel_agent").is_empty());
}

#[tokio::test]
async fn a_blocked_task_does_not_stop_a_runnable_one() {
    let app = spawn_app().await;
    let events = app.ask("查一下上海的天气，再帮我订个酒店", None).await;
    let done = done(&events);
    assert_eq!(app.calls("weather_agent").len(), 1);
    assert_eq!(app.calls("weather_agent")[0].body["inputs"]["city"], "上海");
    assert!(app.calls("hotel_agent").is_empty());
    let info = &of_stage(&events, "blocked")[0]["metadata"]["semantic_info"];
    assert_eq!(info[0]["sub_agent_id"], "hotel_agent");
    assert_eq!(info[0]["keys"], json!(["check_in_date"]));
    let text = done["content"].as_str().unwrap();
    assert!(text.contains("入住日期"), "{text}");
    let plan = &of_stage(&events, "plan_done")[0]["metadata"]["state"]["plan"];
    assert_eq!(plan["task_type"], "parallel");
    assert_eq!(plan["total_tasks"], 2);
}

#[tokio::test]
async fn follow_up_by_text_runs_exactly_the_blocked_tasks() {
    let app = spawn_app().await;
    let first = app.ask("帮我订个酒店", None).await;
    let th = thread(&first);
    let blocked_task = of_stage(&first, "blocked")[0]["metadata"]["semantic_info"][0]["task_id"].clone();
    assert!(app.calls("hotel_agent").is_empty());

    let second = app.ask("北京，2026-12-01 入住", Some(&th)).await;
    let done = done(&second);
    assert_eq!(done["stage"], "answer");
    assert!(of_stage(&second, "blocked").is_empty());
    let calls = app.calls("hotel_agent");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].body["inputs"]["city"], "北京");
    assert_eq!(calls[0].body["inputs"]["check_in_date"], "2026-12-01");
    assert_eq!(calls[0].body["task_id"], blocked_task, "the same sub-task resumes");
    assert_eq!(of_stage(&second, "intent_done")[0]["metadata"]["state"]["intent"]["resumes_pending"], true);
    for other in ["flight_agent", "pickup_agent", "weather_agent", "exchange_agent"] {
        assert!(app.calls(other).is_empty());
    }

    // Nothing is pending any more: a thank-you is just answered.
    let third = app.ask("谢谢", Some(&th)).await;
    done_is_direct(&third);
    assert_eq!(app.calls("hotel_agent").len(), 1);
}

fn done_is_direct(events: &[Value]) {
    assert!(of_stage(events, "agent_started").is_empty());
    assert_eq!(done(events)["stage"], "answer");
}

#[tokio::test]
async fn follow_up_by_slots_runs_the_blocked_task() {
    let app = spawn_app().await;
    let first = app.ask("帮我兑换外币", None).await;
    let info = &of_stage(&first, "blocked")[0]["metadata"]["semantic_info"][0];
    assert_eq!(info["keys"], json!(["amount", "currency"]));
    assert_eq!(info["fe_widgets_suggestion"], json!(["number_input", "currency_picker"]));

    // A widget form sends strings; the number is coerced to the schema's type.
    let second = app
        .chat(json!({ "query": "", "user_id": "u1", "thread_id": thread(&first), "slots": { "amount": "1000", "currency": "USD" } }))
        .await;
    assert_eq!(done(&second)["stage"], "answer");
    let calls = app.calls("exchange_agent");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].body["inputs"]["amount"], json!(1000.0));
    assert_eq!(calls[0].body["inputs"]["currency"], "USD");
}

#[tokio::test]
async fn partial_follow_up_asks_only_for_what_is_still_missing() {
    let app = spawn_app().await;
    let first = app.ask("帮我订个酒店", None).await;
    let th = thread(&first);
    let second = app.ask("北京", Some(&th)).await;
    let info = &of_stage(&second, "blocked")[0]["metadata"]["semantic_info"];
    assert_eq!(info[0]["keys"], json!(["check_in_date"]), "city is not asked twice");
    assert!(app.calls("hotel_agent").is_empty());
    let third = app.ask("明天", Some(&th)).await;
    done(&third);
    let calls = app.calls("hotel_agent");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].body["inputs"]["city"], "北京");
    assert_eq!(calls[0].body["inputs"]["check_in_date"], "2026-11-24", "tomorrow of the test's date");
}

#[tokio::test]
async fn a_dependency_receives_its_upstream_output_and_starts_after_it() {
    let mut options = HashMap::new();
    options.insert("flight_agent", SampleOptions { delay: Duration::from_millis(100) });
    let app = spawn_app_with(Setup { options, ..Default::default() }, |_| {}).await;
    let events = app.ask("帮我查一下航班CA1234，然后安排白云机场接机", None).await;
    let done = done(&events);
    assert_eq!(done["stage"], "answer");

    let plan = &of_stage(&events, "plan_done")[0]["metadata"]["state"]["plan"];
    assert_eq!(plan["task_type"], "sequential");
    let tasks = plan["sub_tasks"].as_array().unwrap();
    assert_eq!(tasks[0]["assigned_agent"], "flight_agent");
    assert_eq!(tasks[1]["assigned_agent"], "pickup_agent");
    assert_eq!(tasks[1]["dependencies"], json!([tasks[0]["task_id"]]));

    let flight = app.calls("flight_agent");
    let pickup = app.calls("pickup_agent");
    assert_eq!((flight.len(), pickup.len()), (1, 1));
    assert_eq!(flight[0].body["inputs"]["flight_no"], "CA1234");
    assert!(pickup[0].started >= flight[0].finished, "the dependent starts after its dependency finished");
    let flight_task = tasks[0]["task_id"].as_str().unwrap();
    let upstream = &pickup[0].body["context"]["dependencies"][flight_task];
    assert!(upstream.is_object(), "upstream output passed: {}", pickup[0].body);
    assert_eq!(pickup[0].body["inputs"]["arrival_time"], upstream["arrival_time"]);
    assert_eq!(pickup[0].body["inputs"]["airport"], "白云机场");

    let order: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["stage"].as_str().unwrap().starts_with("agent_") && e["stage"] != "agent_delta")
        .map(|e| (e["stage"].as_str().unwrap(), e["agent_id"].as_str().unwrap()))
        .collect();
    assert_eq!(
        order,
        [
            ("agent_started", "flight_agent"),
            ("agent_done", "flight_agent"),
            ("agent_started", "pickup_agent"),
            ("agent_done", "pickup_agent")
        ]
    );
    assert_no_agent_ids(&events, &AGENT_IDS);
}

#[tokio::test]
async fn independent_tasks_overlap_in_time() {
    let mut options = HashMap::new();
    options.insert("weather_agent", SampleOptions { delay: Duration::from_millis(300) });
    options.insert("exchange_agent", SampleOptions { delay: Duration::from_millis(300) });
    let app = spawn_app_with(Setup { options, ..Default::default() }, |_| {}).await;
    let events = app.ask("查一下上海的天气，再把1000美元兑换成人民币", None).await;
    done(&events);
    let w = &app.calls("weather_agent")[0];
    let x = &app.calls("exchange_agent")[0];
    assert!(w.started < x.finished && x.started < w.finished, "the two calls overlap");
    assert_eq!(of_stage(&events, "plan_done")[0]["metadata"]["state"]["plan"]["task_type"], "parallel");
}

#[tokio::test]
async fn max_parallel_tasks_bounds_concurrency() {
    let mut options = HashMap::new();
    options.insert("weather_agent", SampleOptions { delay: Duration::from_millis(100) });
    options.insert("exchange_agent", SampleOptions { delay: Duration::from_millis(100) });
    let app = spawn_app_with(Setup { options, ..Default::default() }, |c| {
        c["supervisor"]["max_parallel_tasks"] = json!(1);
    })
    .await;
    done(&app.ask("查一下上海的天气，再把1000美元兑换成人民币", None).await);
    let w = &app.calls("weather_agent")[0];
    let x = &app.calls("exchange_agent")[0];
    assert!(w.finished <= x.started || x.finished <= w.started, "no overlap with max_parallel_tasks: 1");
}

#[tokio::test]
async fn sse_deltas_are_relayed_in_order_before_the_result() {
    let app = spawn_app().await;
    let th = "th-pickup";
    let events = app
        .chat(json!({ "query": "安排白云机场接机", "user_id": "u1", "thread_id": th, "slots": { "arrival_time": "2026-12-01T14:30" } }))
        .await;
    done(&events);
    let deltas: Vec<&str> = of_stage(&events, "agent_delta").iter().map(|e| e["content"].as_str().unwrap()).collect();
    assert_eq!(deltas.len(), 3, "{events:#?}");
    assert!(deltas[0].contains("白云机场"), "{deltas:?}");
    let pos = |stage: &str| events.iter().position(|e| e["stage"] == stage).unwrap();
    let last_delta = events.iter().rposition(|e| e["stage"] == "agent_delta").unwrap();
    assert!(pos("agent_started") < pos("agent_delta") && last_delta < pos("agent_done"));
    for d in of_stage(&events, "agent_delta") {
        assert_eq!(d["agent_id"], "pickup_agent");
        assert_eq!(d["type"], "content");
    }
    let accept = app.calls("pickup_agent")[0].headers.iter().find(|(k, _)| k == "accept").map(|(_, v)| v.clone());
    assert_eq!(accept.as_deref(), Some("text/event-stream"));
}

#[tokio::test]
async fn simple_intents_are_answered_directly() {
    let app = spawn_app().await;
    for (query, expect) in [
        ("你好", "answer"),
        ("谢谢", "answer"),
        ("你能做什么", "answer"),
        ("what can you do?", "answer"),
        ("量子力学是什么", "answer"),
    ] {
        let events = app.ask(query, None).await;
        let done = done(&events);
        assert_eq!(done["stage"], expect, "{query}");
        assert!(of_stage(&events, "plan_started").is_empty(), "{query}: no planning");
        assert_no_agent_ids(&events, &AGENT_IDS);
    }
    // Capabilities and out-of-scope answers list what is possible, from the cards.
    let caps = app.ask("你能做什么", None).await;
    let text = done(&caps)["content"].as_str().unwrap().to_string();
    assert!(text.contains("酒店") && text.contains("天气"), "{text}");
    let oos = app.ask("量子力学是什么", None).await;
    assert_eq!(of_stage(&oos, "intent_done")[0]["metadata"]["state"]["intent"]["simple"], "out_of_scope");
    assert!(done(&oos)["content"].as_str().unwrap().contains("酒店"));
    for agent in AGENT_IDS {
        assert!(app.calls(agent).is_empty());
    }
}

#[tokio::test]
async fn asking_for_a_human_or_abuse_escalates() {
    let app = spawn_app().await;
    for query in ["我要转人工", "I want to talk to a human", "你这个傻逼"] {
        let events = app.ask(query, None).await;
        let done = done(&events);
        assert_eq!(done["stage"], "escalated", "{query}");
        assert!(done["metadata"]["state"]["escalation"]["reason"].is_string());
    }
}

#[tokio::test]
async fn english_queries_get_english_text() {
    let app = spawn_app().await;
    let events = app.ask("book a hotel in Beijing tomorrow", None).await;
    let done = done(&events);
    let calls = app.calls("hotel_agent");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].body["inputs"]["city"], "Beijing");
    assert!(done["content"].as_str().unwrap().starts_with("Done:"), "{}", done["content"]);
}

#[tokio::test]
async fn json_mode_returns_the_final_result_in_one_body() {
    let app = spawn_app().await;
    let resp = app
        .client
        .post(format!("{}/v1/chat", app.base))
        .header("accept", "application/json")
        .json(&json!({ "query": "帮我订个酒店", "user_id": "u1" }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("application/json"));
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["stage"], "answer");
    assert_eq!(body["metadata"]["semantic_info"][0]["keys"], json!(["city", "check_in_date"]));
    assert!(body["thread_id"].as_str().unwrap().starts_with("th_"));
    done(body["events"].as_array().unwrap());
}

#[tokio::test]
async fn a_failing_agent_skips_its_dependents_and_the_rest_goes_on() {
    // The flight agent points at a closed port: the dependent pickup is skipped, weather still runs.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let app = spawn_app_with(Setup::default(), |c| {
        for a in c["agents"].as_array_mut().unwrap() {
            if a["id"] == "flight_agent" {
                a["endpoint"]["url"] = json!(format!("http://{closed}/invoke"));
                a["endpoint"]["retries"] = json!(1);
            }
        }
    })
    .await;
    let events = app.ask("查一下航班CA1234，安排白云机场接机，再看看上海天气", None).await;
    let done = done(&events);
    let failed: Vec<(&str, &str)> = of_stage(&events, "agent_failed")
        .iter()
        .map(|e| (e["agent_id"].as_str().unwrap(), e["metadata"]["state"]["status"].as_str().unwrap()))
        .collect();
    assert_eq!(failed, [("flight_agent", "failed"), ("pickup_agent", "skipped")]);
    assert!(app.calls("pickup_agent").is_empty());
    assert_eq!(app.calls("weather_agent").len(), 1);
    let text = done["content"].as_str().unwrap();
    assert!(text.contains("未能完成") && text.contains("已为您完成"), "{text}");
    assert_no_agent_ids(&events, &AGENT_IDS);
}

#[tokio::test]
async fn an_output_that_fails_the_output_schema_is_a_failed_task() {
    // Weather's output schema demands a field the sample agent never sends.
    let app = spawn_app_with(Setup::default(), |c| {
        for a in c["agents"].as_array_mut().unwrap() {
            if a["id"] == "weather_agent" {
                a["output_schema"] = json!({ "type": "object", "required": ["humidity"] });
            }
        }
    })
    .await;
    let events = app.ask("上海天气怎么样", None).await;
    done(&events);
    let failed = of_stage(&events, "agent_failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["metadata"]["state"]["error"]["code"], "output_rejected");
    assert_eq!(app.calls("weather_agent").len(), 1);
}

#[tokio::test]
async fn a_slow_agent_times_out() {
    let mut options = HashMap::new();
    options.insert("weather_agent", SampleOptions { delay: Duration::from_secs(5) });
    let app = spawn_app_with(Setup { options, ..Default::default() }, |c| {
        for a in c["agents"].as_array_mut().unwrap() {
            if a["id"] == "weather_agent" {
                a["endpoint"]["timeout"] = json!("200ms");
            }
        }
    })
    .await;
    let events = app.ask("上海天气怎么样", None).await;
    done(&events);
    let failed = of_stage(&events, "agent_failed");
    assert_eq!(failed[0]["metadata"]["state"]["error"]["code"], "timeout");
}

#[tokio::test]
async fn session_slots_carry_over_between_turns() {
    let app = spawn_app().await;
    let first = app.ask("上海天气怎么样", None).await;
    let th = thread(&first);
    // The city said in the first turn fills the hotel's city; the date comes from this turn. The
    // hotel card books (`confirm: true`), so the remembered city is confirmed first (issue 17
    // item 4): nothing is dispatched until the user says yes.
    let second = app.ask("帮我订个酒店，2026-12-01入住", Some(&th)).await;
    let info = &done(&second)["metadata"]["semantic_info"][0];
    assert_eq!(info["type"], "confirm", "{info}");
    assert_eq!(info["keys"], json!(["city"]));
    assert_eq!(info["values"], json!(["上海"]));
    assert_eq!(info["fe_widgets_suggestion"], json!(["confirm_dialog"]));
    let text = done(&second)["content"].as_str().unwrap();
    assert!(text.contains("请确认") && text.contains("入住城市：上海"), "{text}");
    assert!(app.calls("hotel_agent").is_empty(), "not before the yes");
    // A question is no yes: the confirmation is asked again.
    let asked = app.ask("是吗？", Some(&th)).await;
    assert_eq!(done(&asked)["metadata"]["semantic_info"][0]["type"], "confirm");
    assert!(app.calls("hotel_agent").is_empty(), "a question books nothing");
    done(&app.ask("确认", Some(&th)).await);
    let calls = app.calls("hotel_agent");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].body["inputs"]["city"], "上海");
    assert_eq!(calls[0].body["inputs"]["check_in_date"], "2026-12-01");
}

/// Issue 17 item 4: remembered values of a booking are confirmed; a no drops the booking, new
/// values replace the remembered ones, a value stated in the turn needs no confirmation.
#[tokio::test]
async fn remembered_values_of_a_booking_are_confirmed_first() {
    let app = spawn_app().await;
    let th = thread(&app.ask("帮我订北京的酒店，2026-12-01入住", None).await);
    assert_eq!(app.calls("hotel_agent").len(), 1, "values stated this turn: no confirmation");
    // The same request again, naming nothing: both values are remembered.
    let again = app.ask("再帮我订个酒店", Some(&th)).await;
    let info = &done(&again)["metadata"]["semantic_info"][0];
    assert_eq!(info["type"], "confirm");
    assert_eq!(info["keys"], json!(["city", "check_in_date"]));
    let no = app.ask("不", Some(&th)).await;
    assert!(done(&no)["metadata"]["state"]["cancelled"].is_array(), "{:?}", done(&no)["metadata"]);
    assert_eq!(app.calls("hotel_agent").len(), 1, "a no books nothing");
    // Asked again, the user changes the city: the new one is used, the date is still confirmed.
    app.ask("再帮我订个酒店", Some(&th)).await;
    let changed = app.ask("改成上海", Some(&th)).await;
    let info = &done(&changed)["metadata"]["semantic_info"][0];
    assert_eq!(info["type"], "confirm", "{info}");
    assert_eq!(info["keys"], json!(["check_in_date"]));
    done(&app.ask("好的", Some(&th)).await);
    let calls = app.calls("hotel_agent");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].body["inputs"]["city"], "上海");
}

/// Issue 17 item 10: a progress text names the capability and what it does with the sub-task's
/// values, as people write them — not the card's description, not ISO dates.
#[tokio::test]
async fn progress_texts_name_the_values_not_the_description() {
    let app = spawn_app().await;
    let events = app.ask("帮我安排12月1日14:30白云机场接机", None).await;
    done(&events);
    let started = of_stage(&events, "agent_started");
    let text = started[0]["content"].as_str().unwrap();
    assert!(text.starts_with("正在为您办理接机服务"), "{text}");
    assert!(text.contains("白云机场") && text.contains("12月1日 14:30"), "{text}");
    assert!(!text.contains("派车") && !text.contains("T14:30"), "no description, no ISO form: {text}");
}
