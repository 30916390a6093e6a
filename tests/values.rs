//! The right value in the right key, end to end through `/v1/chat`: two keys of one kind, relative
//! and past dates, keys filled from an upstream output under another name, and re-asks that say
//! what was not accepted. The agents record what they received.

use std::sync::{Arc, Mutex};

use axum::routing::post;
use axum::{Json, Router};
use chrono::{Datelike, Duration, NaiveDate};
use serde_json::{json, Value};
use tokio::net::TcpListener;

use crate::common::*;

/// What the recording agent received: the `inputs` of each call.
type Received = Arc<Mutex<Vec<Value>>>;

/// An agent on a loopback port that records every call's `inputs` and accepts it.
async fn recording_agent() -> (String, Received) {
    let received: Received = Arc::default();
    let log = received.clone();
    let router = Router::new().route(
        "/invoke",
        post(move |Json(body): Json<Value>| {
            let log = log.clone();
            async move {
                log.lock().unwrap().push(body["inputs"].clone());
                Json(json!({ "output": {}, "message": "已记录" }))
            }
        }),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (format!("http://{addr}/invoke"), received)
}

/// The repo's config plus a blood-pressure card (systolic and diastolic, both numbers) served
/// by the recording agent.
async fn bp_app() -> (TestApp, Received) {
    let (url, received) = recording_agent().await;
    let app = spawn_app_with(Setup::default(), |c| {
        let card = json!({
            "id": "bp_agent",
            "name": "血压记录",
            "description": "记录血压",
            "endpoint": { "url": url, "protocol": "http" },
            "keywords": ["血压", "blood pressure"],
            "input_schema": {
                "type": "object",
                "properties": {
                    "message": { "type": "string" },
                    "systolic": { "type": "number", "minimum": 50, "maximum": 260 },
                    "diastolic": { "type": "number", "minimum": 30, "maximum": 200 }
                },
                "required": ["systolic", "diastolic"]
            },
            "output_schema": { "type": "object" },
            "required_semantic_keys": [
                { "key": "systolic", "description": "收缩压", "extract": { "type": "number" }, "example": 120 },
                { "key": "diastolic", "description": "舒张压", "extract": { "type": "number" }, "example": 80 }
            ]
        });
        c["agents"].as_array_mut().unwrap().push(card);
    })
    .await;
    (app, received)
}

/// (systolic, diastolic) of the last call the agent received.
fn last_bp(received: &Received) -> (Value, Value) {
    let calls = received.lock().unwrap();
    let inputs = calls.last().expect("the agent was called");
    (inputs["systolic"].clone(), inputs["diastolic"].clone())
}

#[tokio::test]
async fn two_numbers_go_to_their_own_keys() {
    let (app, received) = bp_app().await;
    let cases = [
        ("记录血压 120，80", (120, 80)),
        ("记录血压120/80", (120, 80)),
        ("记录血压：收缩压135，舒张压85", (135, 85)),
        ("blood pressure: diastolic 85 systolic 135", (135, 85)),
    ];
    for (query, (sys, dia)) in cases {
        let events = app.ask(query, None).await;
        assert_eq!(done(&events)["stage"], "answer", "{query}");
        assert_eq!(last_bp(&received), (json!(sys), json!(dia)), "{query}");
    }

    // "120", asked for the diastolic, then "80": 120/80, never 120/120.
    let before = received.lock().unwrap().len();
    let first = app.ask("记录血压120", None).await;
    assert_eq!(received.lock().unwrap().len(), before, "not dispatched with one value");
    let info = &of_stage(&first, "blocked")[0]["metadata"]["semantic_info"][0];
    assert_eq!(info["keys"], json!(["diastolic"]));
    let second = app.ask("80", Some(&thread(&first))).await;
    assert_eq!(done(&second)["stage"], "answer");
    assert_eq!(last_bp(&received), (json!(120), json!(80)));
}

/// The date in Asia/Shanghai now.
fn shanghai_today() -> NaiveDate {
    chrono::Utc::now().with_timezone(&chrono_tz::Asia::Shanghai).date_naive()
}

/// Next week's Monday from `today`.
fn next_monday(today: NaiveDate) -> String {
    (today + Duration::days(7 - i64::from(today.weekday().num_days_from_monday()))).to_string()
}

#[tokio::test]
async fn a_past_date_is_asked_again_and_a_relative_one_resolves_in_the_configured_zone() {
    // The clock's date in the configured zone, not the harness's fixed date.
    let clock: OptionsEdit = Box::new(|o| o.today = None);
    let setup = Setup { app_options: Some(clock), ..Default::default() };
    let app = spawn_app_with(setup, |c| c["supervisor"]["timezone"] = json!("Asia/Shanghai")).await;
    let first = app.ask("帮我订北京的酒店，2020-01-01入住", None).await;
    assert!(app.calls("hotel_agent").is_empty(), "a past date is never dispatched");
    let info = &of_stage(&first, "blocked")[0]["metadata"]["semantic_info"][0];
    assert_eq!(info["type"], "invalid");
    assert_eq!(info["rejected_values"], json!(["2020-01-01"]));
    assert_eq!(info["reasons"], json!(["past_date"]));
    let answer = done(&first)["content"].as_str().unwrap();
    assert!(answer.contains("“2020-01-01”无法使用，这个日期已经过去了"), "{answer}");
    assert!(answer.contains("例如：") && answer.contains("12月1日"), "the example is kept: {answer}");

    let before = shanghai_today();
    let second = app.ask("下周一入住", Some(&thread(&first))).await;
    let after = shanghai_today();
    assert_eq!(done(&second)["stage"], "answer");
    let calls = app.calls("hotel_agent");
    assert_eq!(calls.len(), 1);
    let got = calls[0].body["inputs"]["check_in_date"].as_str().unwrap().to_string();
    assert!([next_monday(before), next_monday(after)].contains(&got), "下周一 is next week's Monday: {got}");
    assert_eq!(calls[0].body["inputs"]["city"], "北京");
}

#[tokio::test]
async fn the_pickup_takes_its_airport_from_the_flight_and_names_a_value_it_cannot_use() {
    let app = spawn_app().await;
    let events = app.ask("帮我查一下航班CA1234，然后安排接机", None).await;
    assert_eq!(done(&events)["stage"], "answer");
    assert!(of_stage(&events, "blocked").is_empty(), "the airport is not asked for");
    assert_eq!(app.calls("flight_agent").len(), 1);
    let pickup = app.calls("pickup_agent");
    assert_eq!(pickup.len(), 1);
    assert_eq!(pickup[0].body["inputs"]["airport"], "白云机场", "from the flight's arrival_airport");

    let body = json!({ "query": "安排接机", "user_id": "u2", "slots": { "airport": "火星机场", "arrival_time": "2026-12-01T14:30" } });
    let events = app.chat(body).await;
    assert_eq!(app.calls("pickup_agent").len(), 1, "an unknown airport is not dispatched");
    let answer = done(&events)["content"].as_str().unwrap();
    assert!(answer.contains("“火星机场”无法使用，请从以下选项中选择：白云机场、首都机场"), "{answer}");
}
