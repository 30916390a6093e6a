//! Sample sub-agents of a travel desk, served as real HTTP servers: used by `switchboard demo`
//! and by the integration tests (which read their [`CallLog`]s).
//!
//! Each speaks the sub-agent protocol of DESIGN.md section 6 on `POST /invoke`: the request body
//! `{task_id, plan_id, session_id, user_id, thread_id, message, inputs, context}` and the reply
//! `{output, message}`; the pickup agent streams `delta` events then a `result` when asked for
//! `text/event-stream`. Data is plausible and deterministic (derived from the inputs); replies are
//! in Chinese when the request's `message` contains CJK, English otherwise.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{Datelike, NaiveDate, NaiveDateTime};
use serde::Serialize;
use serde_json::{json, Map, Value};
use tokio::net::TcpListener;

/// The sample agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SampleAgentKind {
    /// Flight status (`http`).
    Flight,
    /// Airport pickup (`sse`).
    Pickup,
    /// Hotel booking (`http`).
    Hotel,
    /// Weather forecast (`http`).
    Weather,
    /// Currency exchange (`http`).
    Exchange,
}

impl SampleAgentKind {
    /// Every sample agent.
    pub const ALL: [SampleAgentKind; 5] = [Self::Flight, Self::Pickup, Self::Hotel, Self::Weather, Self::Exchange];

    /// The agent id used in `agents_config.yaml`.
    pub fn agent_id(self) -> &'static str {
        match self {
            Self::Flight => "flight_agent",
            Self::Pickup => "pickup_agent",
            Self::Hotel => "hotel_agent",
            Self::Weather => "weather_agent",
            Self::Exchange => "exchange_agent",
        }
    }

    /// The sample for an agent id, if there is one.
    pub fn from_agent_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.agent_id() == id)
    }
}

/// Behaviour knobs of a sample agent.
#[derive(Debug, Clone, Default)]
pub struct SampleOptions {
    /// Extra latency before replying (for SSE, spread evenly before each event).
    pub delay: Duration,
}

/// One request a sample agent received.
#[derive(Debug, Clone, Serialize)]
pub struct RecordedCall {
    /// The JSON body.
    pub body: Value,
    /// Request headers, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// When the handler began.
    #[serde(skip)]
    pub started: Instant,
    /// When the reply (for SSE: the `result` event) was about to be sent.
    #[serde(skip)]
    pub finished: Instant,
}

/// The calls a sample agent received, shared with its server.
#[derive(Debug, Clone, Default)]
pub struct CallLog(Arc<Mutex<Vec<RecordedCall>>>);

impl CallLog {
    /// A copy of every recorded call, in arrival order of completion.
    pub fn calls(&self) -> Vec<RecordedCall> {
        self.0.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// Number of recorded calls.
    pub fn len(&self) -> usize {
        self.0.lock().map(|c| c.len()).unwrap_or(0)
    }

    /// `true` when no call was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn push(&self, call: RecordedCall) {
        if let Ok(mut c) = self.0.lock() {
            c.push(call);
        }
    }
}

/// A running sample agent; the server stops when this is dropped.
pub struct SampleAgentHandle {
    /// Where it listens.
    pub addr: SocketAddr,
    /// What it received.
    pub log: CallLog,
    task: tokio::task::JoinHandle<()>,
}

impl SampleAgentHandle {
    /// `http://{addr}/invoke`.
    pub fn url(&self) -> String {
        format!("http://{}/invoke", self.addr)
    }
}

impl Drop for SampleAgentHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves the `kind` sample agent on `listener`.
pub async fn spawn_sample_agent(
    kind: SampleAgentKind,
    listener: TcpListener,
    opts: SampleOptions,
) -> SampleAgentHandle {
    let log = CallLog::default();
    let addr = listener.local_addr().unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], 0)));
    let router = sample_router(kind, opts, log.clone());
    let task = tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router).await {
            tracing::error!(error = %e, "sample agent stopped");
        }
    });
    SampleAgentHandle { addr, log, task }
}

#[derive(Clone)]
struct AgentState {
    kind: SampleAgentKind,
    opts: SampleOptions,
    log: CallLog,
}

/// The router of one sample agent: `POST /invoke`, `GET /healthz`.
pub fn sample_router(kind: SampleAgentKind, opts: SampleOptions, log: CallLog) -> Router {
    Router::new()
        .route("/invoke", post(invoke))
        .route("/healthz", get(|| async { Json(json!({ "status": "ok" })) }))
        .with_state(AgentState { kind, opts, log })
}

fn error(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    (status, Json(json!({ "error": { "code": code, "message": message.into() } }))).into_response()
}

async fn invoke(State(st): State<AgentState>, headers: HeaderMap, body: Bytes) -> Response {
    let started = Instant::now();
    let recorded_headers: Vec<(String, String)> =
        headers.iter().map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or_default().to_string())).collect();
    let body: Value = match serde_json::from_slice(&body) {
        Ok(v @ Value::Object(_)) => v,
        _ => return error(StatusCode::BAD_REQUEST, "bad_request", "the body is not a JSON object"),
    };
    let zh = body["message"].as_str().is_some_and(|m| m.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)));
    let inputs = body["inputs"].as_object().cloned().unwrap_or_default();
    let wants_sse =
        headers.get("accept").and_then(|v| v.to_str().ok()).is_some_and(|a| a.contains("text/event-stream"));
    let record = move |log: &CallLog| {
        log.push(RecordedCall {
            body: body.clone(),
            headers: recorded_headers.clone(),
            started,
            finished: Instant::now(),
        })
    };

    if st.kind == SampleAgentKind::Pickup && wants_sse {
        return pickup_stream(st, inputs, zh, record).await;
    }
    tokio::time::sleep(st.opts.delay).await;
    let result = match st.kind {
        SampleAgentKind::Flight => flight(&inputs, zh),
        SampleAgentKind::Pickup => pickup(&inputs, zh).map(|(_, reply)| reply),
        SampleAgentKind::Hotel => hotel(&inputs, zh),
        SampleAgentKind::Weather => weather(&inputs, zh),
        SampleAgentKind::Exchange => exchange(&inputs, zh),
    };
    record(&st.log);
    match result {
        Ok(reply) => Json(reply).into_response(),
        Err(msg) => error(StatusCode::UNPROCESSABLE_ENTITY, "invalid_inputs", msg),
    }
}

async fn pickup_stream(
    st: AgentState,
    inputs: Map<String, Value>,
    zh: bool,
    record: impl FnOnce(&CallLog) + Send + 'static,
) -> Response {
    let (tx, rx) = tokio::sync::mpsc::channel::<Event>(8);
    tokio::spawn(async move {
        let step = st.opts.delay / 4;
        match pickup(&inputs, zh) {
            Ok((deltas, reply)) => {
                for text in deltas {
                    tokio::time::sleep(step).await;
                    if tx.send(Event::default().event("delta").data(json!({ "text": text }).to_string())).await.is_err()
                    {
                        return;
                    }
                }
                tokio::time::sleep(step).await;
                record(&st.log);
                let _ = tx.send(Event::default().event("result").data(reply.to_string())).await;
            }
            Err(msg) => {
                record(&st.log);
                let _ = tx.send(Event::default().event("error").data(json!({ "message": msg }).to_string())).await;
            }
        }
    });
    let stream = tokio_stream::wrappers::ReceiverStream::new(rx);
    Sse::new(futures::StreamExt::map(stream, Ok::<_, std::convert::Infallible>)).into_response()
}

fn text<'a>(inputs: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    inputs.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).ok_or_else(|| format!("missing input {key:?}"))
}

/// A stable small number from a string (FNV-1a), for deterministic sample data.
fn seed(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

fn today() -> NaiveDate {
    chrono::Local::now().date_naive()
}

fn flight(inputs: &Map<String, Value>, zh: bool) -> Result<Value, String> {
    let no = text(inputs, "flight_no")?.to_ascii_uppercase();
    let s = seed(&no);
    let (airline_zh, airline_en) = match &no[..2] {
        "CA" => ("中国国际航空", "Air China"),
        "CZ" => ("中国南方航空", "China Southern"),
        "MU" => ("中国东方航空", "China Eastern"),
        "HU" => ("海南航空", "Hainan Airlines"),
        _ => ("合作航空公司", "Partner Airline"),
    };
    // (departure, arrival, English departure, English arrival, arrival city, English city)
    const ROUTES: [(&str, &str, &str, &str, &str, &str); 4] = [
        ("上海浦东国际机场", "深圳宝安国际机场", "Shanghai Pudong", "Shenzhen Bao'an", "深圳", "Shenzhen"),
        ("成都天府国际机场", "北京大兴国际机场", "Chengdu Tianfu", "Beijing Daxing", "北京", "Beijing"),
        ("北京首都国际机场", "广州白云国际机场", "Beijing Capital", "Guangzhou Baiyun", "广州", "Guangzhou"),
        ("杭州萧山国际机场", "西安咸阳国际机场", "Hangzhou Xiaoshan", "Xi'an Xianyang", "西安", "Xi'an"),
    ];
    // The route follows the flight number (CA1234 lands at Guangzhou Baiyun, as in the demo query).
    let number: u64 = no[2..].parse().unwrap_or(s);
    let route = ROUTES[(number % 4) as usize];
    let (hour, minute) = (8 + (s / 7 % 13), (s / 3 % 12) * 5);
    let arrival = format!("{}T{hour:02}:{minute:02}", today());
    let terminal = format!("T{}", 1 + s % 3);
    let (status_zh, status_en) =
        if s % 5 == 0 { ("延误约20分钟", "delayed about 20 minutes") } else { ("准点", "on time") };
    let (dep, arr, city, airline, status) = if zh {
        (route.0, route.1, route.4, airline_zh, status_zh)
    } else {
        (route.2, route.3, route.5, airline_en, status_en)
    };
    let message = if zh {
        format!("航班 {no}（{airline}）状态{status}，预计 {} {hour:02}:{minute:02} 抵达{arr} {terminal}。", today())
    } else {
        format!(
            "Flight {no} ({airline}) is {status}, expected at {arr} {terminal} on {} at {hour:02}:{minute:02}.",
            today()
        )
    };
    Ok(json!({
        "output": { "flight_no": no, "airline": airline, "status": status, "departure_airport": dep,
                    "arrival_airport": arr, "arrival_time": arrival, "terminal": terminal, "city": city },
        "message": message,
    }))
}

/// The pickup agent's deltas and final reply.
fn pickup(inputs: &Map<String, Value>, zh: bool) -> Result<(Vec<String>, Value), String> {
    let airport = text(inputs, "airport")?;
    let arrival = text(inputs, "arrival_time")?;
    let at = NaiveDateTime::parse_from_str(arrival, "%Y-%m-%dT%H:%M")
        .or_else(|_| NaiveDateTime::parse_from_str(arrival, "%Y-%m-%dT%H:%M:%S"))
        .map_err(|_| format!("arrival_time {arrival:?} is not YYYY-MM-DDTHH:MM"))?;
    let pickup_at = (at + chrono::Duration::minutes(30)).format("%Y-%m-%dT%H:%M").to_string();
    let s = seed(&format!("{airport}{arrival}"));
    const DRIVERS: [(&str, &str); 4] =
        [("张师傅", "Mr. Zhang"), ("李师傅", "Mr. Li"), ("王师傅", "Mr. Wang"), ("陈师傅", "Mr. Chen")];
    let driver = DRIVERS[(s % 4) as usize];
    let plate = format!("粤A·{}K{:03}", 1 + s % 9, s % 1000);
    let gate = 1 + s % 8;
    let (driver, car, meeting, deltas) = if zh {
        (
            driver.0,
            "大众帕萨特",
            format!("到达层 {gate} 号门"),
            vec![
                format!("正在为您匹配{airport}附近的司机…"),
                format!("已为您找到司机{}（{plate}），车型：大众帕萨特。", driver.0),
                format!("司机将在 {} 前在到达层 {gate} 号门等候。", &pickup_at[11..]),
            ],
        )
    } else {
        (
            driver.1,
            "Volkswagen Passat",
            format!("arrivals hall, gate {gate}"),
            vec![
                format!("Looking for a driver near {airport}…"),
                format!("Driver {} ({plate}) assigned, car: Volkswagen Passat.", driver.1),
                format!("Your driver will wait at arrivals gate {gate} by {}.", &pickup_at[11..]),
            ],
        )
    };
    let message = if zh {
        format!("已安排{airport}接机：司机{driver}（{plate}），{} 在{meeting}等候。", pickup_at.replace('T', " "))
    } else {
        format!(
            "Pickup at {airport} booked: {driver} ({plate}) will wait at the {meeting} at {}.",
            pickup_at.replace('T', " ")
        )
    };
    let reply = json!({
        "output": { "driver": driver, "car_plate": plate, "car_model": car, "airport": airport,
                    "pickup_time": pickup_at, "meeting_point": meeting },
        "message": message,
    });
    Ok((deltas, reply))
}

fn hotel(inputs: &Map<String, Value>, zh: bool) -> Result<Value, String> {
    let city = text(inputs, "city")?;
    let date = text(inputs, "check_in_date")?;
    NaiveDate::parse_from_str(date, "%Y-%m-%d").map_err(|_| format!("check_in_date {date:?} is not YYYY-MM-DD"))?;
    let nights = inputs.get("nights").and_then(Value::as_u64).unwrap_or(1).max(1);
    let s = seed(city);
    const HOTELS: [(&str, &str); 3] =
        [("锦江之星", "Jinjiang Inn"), ("全季酒店", "JI Hotel"), ("亚朵酒店", "Atour Hotel")];
    let brand = HOTELS[(s % 3) as usize];
    let price = 300 + (s % 8) * 40;
    let number = 1 + s % 199;
    let (name, address) = if zh {
        (format!("{}（{city}中心店）", brand.0), format!("{city}市中心人民路{number}号"))
    } else {
        (format!("{} {city} Central", brand.1), format!("{number} Renmin Road, {city}"))
    };
    let message = if zh {
        format!("已为您预订{name}，{date} 入住 {nights} 晚，每晚 {price} 元，地址：{address}。")
    } else {
        format!("Booked {name} from {date} for {nights} night(s) at CNY {price} per night; address: {address}.")
    };
    Ok(json!({
        "output": { "hotel_name": name, "hotel_address": address, "city": city, "check_in_date": date,
                    "nights": nights, "price_per_night": price, "currency": "CNY" },
        "message": message,
    }))
}

fn weather(inputs: &Map<String, Value>, zh: bool) -> Result<Value, String> {
    let city = text(inputs, "city")?;
    let s = seed(city);
    const CONDITIONS: [(&str, &str); 4] =
        [("晴", "sunny"), ("多云", "cloudy"), ("小雨", "light rain"), ("阴", "overcast")];
    let base = 8 + (s % 15) as i64;
    let start = today();
    let forecast: Vec<Value> = (0..3)
        .map(|d| {
            let date = start + chrono::Duration::days(d);
            let c = CONDITIONS[((s + d as u64 + u64::from(date.ordinal())) % 4) as usize];
            json!({ "date": date.to_string(), "condition": if zh { c.0 } else { c.1 },
                    "high_c": base + 6 - d, "low_c": base - 2 - d })
        })
        .collect();
    let first = &forecast[0];
    let message = if zh {
        format!(
            "{city}今天{}，{}~{}°C；未来三天预报已为您列出。",
            first["condition"].as_str().unwrap_or_default(),
            first["low_c"],
            first["high_c"]
        )
    } else {
        format!(
            "{city} today: {}, {}-{}°C; the 3-day forecast is attached.",
            first["condition"].as_str().unwrap_or_default(),
            first["low_c"],
            first["high_c"]
        )
    };
    Ok(json!({ "output": { "city": city, "forecast": forecast }, "message": message }))
}

fn exchange(inputs: &Map<String, Value>, zh: bool) -> Result<Value, String> {
    let amount = inputs
        .get("amount")
        .and_then(Value::as_f64)
        .filter(|a| *a > 0.0)
        .ok_or("missing or non-positive input \"amount\"")?;
    let currency = text(inputs, "currency")?;
    let (code, rate) = match currency {
        "USD" | "美元" => ("USD", 7.12),
        "EUR" | "欧元" => ("EUR", 7.74),
        "JPY" | "日元" => ("JPY", 0.048),
        "HKD" | "港币" => ("HKD", 0.91),
        "GBP" | "英镑" => ("GBP", 9.02),
        other => return Err(format!("unknown currency {other:?}")),
    };
    let cny = (amount * rate * 100.0).round() / 100.0;
    let message = if zh {
        format!("{amount} {code} 约合人民币 {cny:.2} 元（汇率 {rate}）。")
    } else {
        format!("{amount} {code} is about CNY {cny:.2} (rate {rate}).")
    };
    Ok(json!({ "output": { "amount": amount, "currency": code, "cny": cny, "rate": rate }, "message": message }))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn call(kind: SampleAgentKind, body: Value, sse: bool) -> (SampleAgentHandle, reqwest::Response) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let h = spawn_sample_agent(kind, listener, SampleOptions::default()).await;
        let accept = if sse { "text/event-stream" } else { "application/json" };
        let resp = reqwest::Client::new().post(h.url()).header("accept", accept).json(&body).send().await.unwrap();
        (h, resp)
    }

    #[tokio::test]
    async fn each_agent_replies_and_records() {
        let cases = [
            (SampleAgentKind::Flight, json!({ "flight_no": "CA1234" }), "arrival_time"),
            (SampleAgentKind::Hotel, json!({ "city": "北京", "check_in_date": "2026-12-01" }), "hotel_address"),
            (SampleAgentKind::Weather, json!({ "city": "上海" }), "forecast"),
            (SampleAgentKind::Exchange, json!({ "amount": 100, "currency": "美元" }), "cny"),
            (
                SampleAgentKind::Pickup,
                json!({ "airport": "白云机场", "arrival_time": "2026-12-01T14:30" }),
                "pickup_time",
            ),
        ];
        for (kind, inputs, field) in cases {
            let (h, resp) = call(kind, json!({ "message": "测试", "inputs": inputs }), false).await;
            assert_eq!(resp.status(), 200, "{kind:?}");
            let v: Value = resp.json().await.unwrap();
            assert!(
                v["output"][field].is_string() || v["output"][field].is_array() || v["output"][field].is_number(),
                "{kind:?}: {v}"
            );
            assert!(v["message"].as_str().is_some_and(|m| !m.is_empty()));
            assert_eq!(h.log.len(), 1);
        }
    }

    #[tokio::test]
    async fn bad_inputs_are_422_and_bad_json_400() {
        let (_h, resp) =
            call(SampleAgentKind::Hotel, json!({ "message": "x", "inputs": { "city": "北京" } }), false).await;
        assert_eq!(resp.status(), 422);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let h = spawn_sample_agent(SampleAgentKind::Flight, listener, SampleOptions::default()).await;
        let resp = reqwest::Client::new().post(h.url()).body("{oops").send().await.unwrap();
        assert_eq!(resp.status(), 400);
    }

    #[tokio::test]
    async fn pickup_streams_deltas_then_result() {
        let body =
            json!({ "message": "接机", "inputs": { "airport": "白云机场", "arrival_time": "2026-12-01T14:30" } });
        let (h, resp) = call(SampleAgentKind::Pickup, body, true).await;
        let text = resp.text().await.unwrap();
        let events: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("event: ")).collect();
        assert_eq!(events, ["delta", "delta", "delta", "result"]);
        assert!(text.contains("2026-12-01T15:00"), "pickup 30 minutes after arrival: {text}");
        assert_eq!(h.log.len(), 1);
    }

    #[test]
    fn data_is_deterministic() {
        let inputs: Map<String, Value> = serde_json::from_value(json!({ "flight_no": "MU5101" })).unwrap();
        assert_eq!(flight(&inputs, true).unwrap(), flight(&inputs, true).unwrap());
    }
}
