//! The sample agents' business logic: pure functions from a request body to a reply, or to the
//! reason the inputs are unusable (a 422 for the server in `lib.rs`).
//!
//! Everything is deterministic: values derive from the inputs (FNV-1a hashes) and today's local
//! date, never from a random source or the network. Output *data* is always Chinese (it flows to
//! other agents and to the frontend's cards); the user-facing `message` and the SSE deltas follow
//! the language of the request's `message` field.
//!
//! The flight's output also names the arrival `city`, so a hotel booked after a flight lookup can
//! reuse it. A key missing from `inputs` is looked up in the outputs of `context.dependencies`, so
//! a pickup that runs after a flight lookup also learns its flight number and terminal.

use chrono::{Datelike, NaiveDate, NaiveDateTime};
use serde_json::{json, Map, Value};

use super::SampleAgentKind;

/// The language of the user-facing texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lang {
    /// Chinese: the request's `message` contains CJK characters.
    Zh,
    /// English: anything else (including no message at all).
    En,
}

impl Lang {
    /// Chinese when the body's `message` (or `inputs.message`) contains CJK characters.
    pub(super) fn of_request(body: &Value) -> Lang {
        let message = body
            .get("message")
            .and_then(Value::as_str)
            .or_else(|| body.get("inputs").and_then(|i| i.get("message")).and_then(Value::as_str))
            .unwrap_or_default();
        if message.chars().any(is_cjk) {
            Lang::Zh
        } else {
            Lang::En
        }
    }

    fn zh(self) -> bool {
        self == Lang::Zh
    }
}

/// A CJK ideograph (the sample agents answer in Chinese when the request has one).
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c, '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}' | '\u{f900}'..='\u{faff}' | '\u{20000}'..='\u{3134f}')
}

/// A successful reply.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Reply {
    /// The `output` object.
    pub(super) output: Value,
    /// The text for the user.
    pub(super) message: String,
    /// Progress texts streamed as `delta` events before the result (SSE mode).
    pub(super) deltas: Vec<String>,
}

impl Reply {
    /// The reply body: `{"output": .., "message": ..}`.
    pub(super) fn body(&self) -> Value {
        json!({ "output": self.output, "message": self.message })
    }
}

/// Runs the `kind` agent on a request body. `Err` carries a user-readable list of what is wrong
/// with the inputs, in the request's language.
pub(super) fn run(kind: SampleAgentKind, body: &Value, lang: Lang) -> Result<Reply, String> {
    let mut req = Request::new(body, lang);
    match kind {
        SampleAgentKind::Flight => flight(&mut req),
        SampleAgentKind::Pickup => pickup(&mut req),
        SampleAgentKind::Hotel => hotel(&mut req),
        SampleAgentKind::Weather => weather(&mut req),
        SampleAgentKind::Exchange => exchange(&mut req),
    }
}

// ---------------------------------------------------------------------------------------------
// Request access and input problems
// ---------------------------------------------------------------------------------------------

/// Read access to `inputs` (falling back to dependency outputs) plus the problems found so far.
struct Request<'a> {
    inputs: Option<&'a Map<String, Value>>,
    deps: Vec<&'a Map<String, Value>>,
    lang: Lang,
    problems: Vec<String>,
}

impl<'a> Request<'a> {
    fn new(body: &'a Value, lang: Lang) -> Self {
        let mut deps = Vec::new();
        if let Some(map) = body.pointer("/context/dependencies").and_then(Value::as_object) {
            for out in map.values() {
                if let Some(o) = out.as_object() {
                    deps.push(o);
                    // Tolerate a dependency passed as a whole reply `{output, message}`.
                    if let Some(inner) = o.get("output").and_then(Value::as_object) {
                        deps.push(inner);
                    }
                }
            }
        }
        Self { inputs: body.get("inputs").and_then(Value::as_object), deps, lang, problems: Vec::new() }
    }

    /// The value of `key`: `inputs[key]`, else the first dependency output that has it.
    fn get(&self, key: &str) -> Option<&'a Value> {
        self.inputs
            .and_then(|i| i.get(key))
            .filter(|v| !v.is_null())
            .or_else(|| self.deps.iter().find_map(|d| d.get(key).filter(|v| !v.is_null())))
    }

    fn missing(&mut self, key: &str, zh: &str, en: &str) {
        self.problems.push(if self.lang.zh() {
            format!("缺少参数 {key}（{zh}）")
        } else {
            format!("missing input `{key}` ({en})")
        });
    }

    fn invalid(&mut self, key: &str, value: &Value, zh: &str, en: &str) {
        let shown = show(value);
        self.problems.push(if self.lang.zh() {
            format!("参数 {key} 的值 {shown} 无效：{zh}")
        } else {
            format!("input `{key}` = {shown} is invalid: {en}")
        });
    }

    /// A required non-empty string (trimmed); records a problem when missing or not a string.
    fn text(&mut self, key: &str, zh: &str, en: &str) -> Option<&'a str> {
        match self.get(key) {
            None => {
                self.missing(key, zh, en);
                None
            }
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim()),
            Some(v) => {
                self.invalid(key, v, "应为非空字符串", "expected a non-empty string");
                None
            }
        }
    }

    /// `Err` with every problem, or `Ok` when there is none.
    fn check(&self) -> Result<(), String> {
        if self.problems.is_empty() {
            return Ok(());
        }
        Err(if self.lang.zh() {
            format!("输入有误：{}。", self.problems.join("；"))
        } else {
            format!("invalid inputs: {}.", self.problems.join("; "))
        })
    }
}

/// A value for an error message: JSON, cut at 40 characters.
fn show(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 40 {
        format!("{}…", s.chars().take(40).collect::<String>())
    } else {
        s
    }
}

// ---------------------------------------------------------------------------------------------
// Deterministic data helpers
// ---------------------------------------------------------------------------------------------

/// FNV-1a over the parts (separated), for deterministic sample data.
fn seed(parts: &[&str]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for part in parts {
        for b in part.bytes().chain([0xff]) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    // Final avalanche (splitmix64) so that nearby inputs spread over all bits.
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// `items[h % len]`; `items` must be non-empty (all callers pass constant tables).
fn pick<T>(items: &[T], h: u64) -> &T {
    &items[(h % items.len() as u64) as usize]
}

fn today() -> NaiveDate {
    chrono::Local::now().date_naive()
}

/// `YYYY-MM-DDTHH:MM`, the wire format of times.
fn iso_minute(t: NaiveDateTime) -> String {
    t.format("%Y-%m-%dT%H:%M").to_string()
}

/// `YYYY-MM-DD HH:MM`, the format of times in messages.
fn human_minute(t: NaiveDateTime) -> String {
    t.format("%Y-%m-%d %H:%M").to_string()
}

/// Lower-case ASCII letters and digits only: `"Bao'an Airport"` -> `"baoanairport"`.
fn latin_key(s: &str) -> String {
    s.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect()
}

/// An airline-style flight number (`CA1234`): 2 ASCII letters + 3-4 digits, upper-cased;
/// whitespace inside is ignored.
fn flight_number(raw: &str) -> Option<String> {
    let no: String = raw.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_uppercase();
    let b = no.as_bytes();
    let ok = (5..=6).contains(&b.len())
        && b[..2].iter().all(u8::is_ascii_alphabetic)
        && b[2..].iter().all(u8::is_ascii_digit);
    ok.then_some(no)
}

// ---------------------------------------------------------------------------------------------
// Reference data
// ---------------------------------------------------------------------------------------------

/// An airport of the demo's `airports` list.
#[derive(Debug)]
struct Airport {
    /// The short name used in the config list and in outputs (`白云机场`; the flight's
    /// `arrival_airport`, which the pickup card takes `from`).
    short: &'static str,
    /// The official name (`广州白云国际机场`).
    full: &'static str,
    /// English short name, also in the config list (`Baiyun Airport`).
    en: &'static str,
    /// English official name.
    en_full: &'static str,
    /// City (Chinese).
    city: &'static str,
    /// Licence-plate prefix of the city's cars.
    plate: &'static str,
    /// Passenger terminals.
    terminals: &'static [&'static str],
}

const fn airport(
    short: &'static str,
    full: &'static str,
    en: &'static str,
    en_full: &'static str,
    city: &'static str,
    plate: &'static str,
    terminals: &'static [&'static str],
) -> Airport {
    Airport { short, full, en, en_full, city, plate, terminals }
}

/// Same order as the `airports` list of `agents_config.yaml`.
static AIRPORTS: [Airport; 10] = [
    airport(
        "白云机场",
        "广州白云国际机场",
        "Baiyun Airport",
        "Guangzhou Baiyun International Airport",
        "广州",
        "粤A",
        &["T1", "T2"],
    ),
    airport(
        "首都机场",
        "北京首都国际机场",
        "Capital Airport",
        "Beijing Capital International Airport",
        "北京",
        "京A",
        &["T2", "T3"],
    ),
    airport(
        "大兴机场",
        "北京大兴国际机场",
        "Daxing Airport",
        "Beijing Daxing International Airport",
        "北京",
        "京A",
        &["T1"],
    ),
    airport(
        "浦东机场",
        "上海浦东国际机场",
        "Pudong Airport",
        "Shanghai Pudong International Airport",
        "上海",
        "沪A",
        &["T1", "T2"],
    ),
    airport(
        "虹桥机场",
        "上海虹桥国际机场",
        "Hongqiao Airport",
        "Shanghai Hongqiao International Airport",
        "上海",
        "沪A",
        &["T1", "T2"],
    ),
    airport(
        "宝安机场",
        "深圳宝安国际机场",
        "Bao'an Airport",
        "Shenzhen Bao'an International Airport",
        "深圳",
        "粤B",
        &["T3"],
    ),
    airport(
        "双流机场",
        "成都双流国际机场",
        "Shuangliu Airport",
        "Chengdu Shuangliu International Airport",
        "成都",
        "川A",
        &["T1", "T2"],
    ),
    airport(
        "天府机场",
        "成都天府国际机场",
        "Tianfu Airport",
        "Chengdu Tianfu International Airport",
        "成都",
        "川A",
        &["T1", "T2"],
    ),
    airport(
        "萧山机场",
        "杭州萧山国际机场",
        "Xiaoshan Airport",
        "Hangzhou Xiaoshan International Airport",
        "杭州",
        "浙A",
        &["T3", "T4"],
    ),
    airport(
        "咸阳机场",
        "西安咸阳国际机场",
        "Xianyang Airport",
        "Xi'an Xianyang International Airport",
        "西安",
        "陕A",
        &["T2", "T3", "T5"],
    ),
];

/// The airport a name designates: short or official Chinese name (`广州白云机场` too), or the
/// English name in any case and punctuation (`baiyun airport`, `Guangzhou Baiyun International Airport`).
fn find_airport(name: &str) -> Option<&'static Airport> {
    let name = name.trim();
    let latin = latin_key(name);
    AIRPORTS.iter().find(|a| {
        let stem = a.short.trim_end_matches("机场");
        name == a.full
            || (name.contains(stem) && name.contains("机场"))
            || (latin.contains("airport") && a.en.split(' ').next().is_some_and(|w| latin.contains(&latin_key(w))))
    })
}

/// A city of the demo's `cities` list.
#[derive(Debug)]
struct City {
    cn: &'static str,
    en: &'static str,
    /// Average daily high in January / July, °C.
    jan_high: f64,
    jul_high: f64,
    /// Hotel locations: (area, district, road).
    spots: [(&'static str, &'static str, &'static str); 2],
}

const fn city(
    cn: &'static str,
    en: &'static str,
    jan_high: f64,
    jul_high: f64,
    spots: [(&'static str, &'static str, &'static str); 2],
) -> City {
    City { cn, en, jan_high, jul_high, spots }
}

/// Same order as the `cities` list of `agents_config.yaml`.
static CITIES: [City; 12] = [
    city("北京", "Beijing", 2.0, 31.0, [("国贸", "朝阳区", "建国路"), ("王府井", "东城区", "王府井大街")]),
    city("上海", "Shanghai", 8.0, 32.0, [("陆家嘴", "浦东新区", "世纪大道"), ("静安寺", "静安区", "南京西路")]),
    city("广州", "Guangzhou", 18.0, 33.0, [("珠江新城", "天河区", "花城大道"), ("北京路", "越秀区", "中山五路")]),
    city("深圳", "Shenzhen", 20.0, 32.0, [("福田中心区", "福田区", "深南大道"), ("科技园", "南山区", "科技南路")]),
    city("杭州", "Hangzhou", 8.0, 34.0, [("西湖湖滨", "上城区", "湖滨路"), ("钱江新城", "上城区", "富春路")]),
    city("成都", "Chengdu", 10.0, 30.0, [("春熙路", "锦江区", "红星路"), ("天府广场", "青羊区", "人民南路")]),
    city("西安", "Xi'an", 5.0, 32.0, [("钟楼", "碑林区", "东大街"), ("大雁塔", "雁塔区", "雁塔南路")]),
    city("南京", "Nanjing", 7.0, 32.0, [("新街口", "秦淮区", "中山南路"), ("夫子庙", "秦淮区", "贡院街")]),
    city("重庆", "Chongqing", 10.0, 34.0, [("解放碑", "渝中区", "民族路"), ("观音桥", "江北区", "建新北路")]),
    city("武汉", "Wuhan", 8.0, 33.0, [("江汉路", "江汉区", "中山大道"), ("光谷", "洪山区", "珞喻路")]),
    city("三亚", "Sanya", 26.0, 32.0, [("三亚湾", "天涯区", "三亚湾路"), ("大东海", "吉阳区", "榆亚路")]),
    city("厦门", "Xiamen", 17.0, 32.0, [("中山路", "思明区", "中山路"), ("环岛路", "思明区", "环岛南路")]),
];

/// The city a name designates: Chinese (`北京`, `北京市`) or English in any case (`beijing`, `Xian`).
fn find_city(name: &str) -> Option<&'static City> {
    let name = name.trim();
    let cn = name.strip_suffix('市').unwrap_or(name);
    let latin = latin_key(name);
    CITIES.iter().find(|c| c.cn == cn || (!latin.is_empty() && latin == latin_key(c.en)))
}

/// Looks up a required city input, recording a problem when it is missing or unknown.
fn city_input(req: &mut Request<'_>, zh: &str, en: &str) -> Option<&'static City> {
    let name = req.text("city", zh, en)?;
    let found = find_city(name);
    if found.is_none() {
        req.invalid("city", &json!(name), "暂不支持该城市", "unsupported city");
    }
    found
}

// ---------------------------------------------------------------------------------------------
// flight_agent
// ---------------------------------------------------------------------------------------------

fn airline(code: &str) -> (String, String) {
    let known = match code {
        "CA" => Some(("中国国际航空", "Air China")),
        "CZ" => Some(("中国南方航空", "China Southern Airlines")),
        "MU" => Some(("中国东方航空", "China Eastern Airlines")),
        "HU" => Some(("海南航空", "Hainan Airlines")),
        "ZH" => Some(("深圳航空", "Shenzhen Airlines")),
        "MF" => Some(("厦门航空", "Xiamen Airlines")),
        "FM" => Some(("上海航空", "Shanghai Airlines")),
        _ => None,
    };
    match known {
        Some((zh, en)) => (zh.to_string(), en.to_string()),
        None => (format!("{code} 航空"), format!("{code} Airlines")),
    }
}

fn flight(req: &mut Request<'_>) -> Result<Reply, String> {
    let no = match req.text("flight_no", "航班号", "flight number") {
        Some(raw) => {
            let no = flight_number(raw);
            if no.is_none() {
                req.invalid("flight_no", &json!(raw), "应为两位字母加 3-4 位数字，如 CA1234", "expected e.g. CA1234");
            }
            no
        }
        None => None,
    };
    req.check()?;
    let Some(no) = no else { return Err(String::new()) };

    let h = seed(&[&no]);
    let (airline_zh, airline_en) = airline(&no[..2]);
    // The destination follows the flight number; the offset makes the demo's CA1234 land at Baiyun.
    let number: u64 = no[2..].parse().unwrap_or(h);
    let arrival = &AIRPORTS[((number + 6) % AIRPORTS.len() as u64) as usize];
    let origins: Vec<&Airport> = AIRPORTS.iter().filter(|a| a.city != arrival.city).collect();
    let departure = pick(&origins, h);
    let terminal = *pick(arrival.terminals, h >> 8);
    let scheduled = 7 * 60 + (h >> 16) % 180 * 5; // 07:00 .. 21:55
    let delay = if (h >> 32) % 5 == 0 { 20 + (h >> 40) % 9 * 10 } else { 0 };
    let eta = today().and_hms_opt(0, 0, 0).unwrap_or_default() + chrono::Duration::minutes((scheduled + delay) as i64);

    let message = match (req.lang, delay) {
        (Lang::Zh, 0) => {
            format!("航班 {no}（{airline_zh}）状态准点，预计 {} 抵达{} {terminal}。", human_minute(eta), arrival.full)
        }
        (Lang::Zh, d) => format!(
            "航班 {no}（{airline_zh}）延误约 {d} 分钟，预计 {} 抵达{} {terminal}。",
            human_minute(eta),
            arrival.full
        ),
        (Lang::En, 0) => format!(
            "Flight {no} ({airline_en}) is on time and expected at {} {terminal} at {}.",
            arrival.en_full,
            human_minute(eta)
        ),
        (Lang::En, d) => format!(
            "Flight {no} ({airline_en}) is delayed by about {d} minutes and now expected at {} {terminal} at {}.",
            arrival.en_full,
            human_minute(eta)
        ),
    };
    Ok(Reply {
        output: json!({
            "flight_no": no,
            "airline": airline_zh,
            "status": if delay == 0 { "准点" } else { "延误" },
            "departure_airport": departure.short,
            "departure_airport_name": departure.full,
            "arrival_airport": arrival.short,
            "arrival_airport_name": arrival.full,
            "arrival_time": iso_minute(eta),
            "terminal": terminal,
            "city": arrival.city,
        }),
        deltas: vec![message.clone()],
        message,
    })
}

// ---------------------------------------------------------------------------------------------
// pickup_agent
// ---------------------------------------------------------------------------------------------

static DRIVERS: [(&str, &str); 10] = [
    ("张", "Zhang"),
    ("王", "Wang"),
    ("李", "Li"),
    ("刘", "Liu"),
    ("陈", "Chen"),
    ("杨", "Yang"),
    ("黄", "Huang"),
    ("赵", "Zhao"),
    ("周", "Zhou"),
    ("吴", "Wu"),
];

static CARS: [(&str, &str); 6] = [
    ("大众帕萨特", "Volkswagen Passat"),
    ("丰田凯美瑞", "Toyota Camry"),
    ("别克GL8", "Buick GL8"),
    ("本田雅阁", "Honda Accord"),
    ("比亚迪汉", "BYD Han"),
    ("日产天籁", "Nissan Teana"),
];

/// Plate letters: no I or O, as on Chinese plates.
static PLATE_LETTERS: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ";

fn parse_arrival(s: &str) -> Option<NaiveDateTime> {
    ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(s, f).ok())
}

fn pickup(req: &mut Request<'_>) -> Result<Reply, String> {
    let airport = req.text("airport", "接机机场", "airport").and_then(|name| {
        let found = find_airport(name);
        if found.is_none() {
            req.invalid("airport", &json!(name), "暂不支持该机场", "unsupported airport");
        }
        found
    });
    let arrival = req.text("arrival_time", "航班到达时间", "arrival time").and_then(|s| {
        let t = parse_arrival(s);
        if t.is_none() {
            req.invalid("arrival_time", &json!(s), "应为 YYYY-MM-DDTHH:MM", "expected YYYY-MM-DDTHH:MM");
        }
        t
    });
    let flight_no = match req.get("flight_no") {
        None => None,
        Some(v) => {
            let no = v.as_str().and_then(flight_number);
            if no.is_none() {
                req.invalid("flight_no", v, "应为两位字母加 3-4 位数字，如 CA1234", "expected e.g. CA1234");
            }
            no
        }
    };
    req.check()?;
    let (Some(airport), Some(arrival)) = (airport, arrival) else { return Err(String::new()) };

    let h = seed(&[airport.short, &iso_minute(arrival), flight_no.as_deref().unwrap_or_default()]);
    // The terminal of an upstream flight lookup landing at this airport, else a plausible one.
    let terminal = req
        .deps
        .iter()
        .filter(|d| {
            d.get("arrival_airport")
                .and_then(Value::as_str)
                .and_then(find_airport)
                .is_some_and(|a| a.short == airport.short)
        })
        .find_map(|d| d.get("terminal").and_then(Value::as_str))
        .unwrap_or_else(|| *pick(airport.terminals, h >> 4));
    let (surname, surname_en) = *pick(&DRIVERS, h);
    let (car, car_en) = *pick(&CARS, h >> 8);
    let letter = char::from(*pick(PLATE_LETTERS, h >> 12));
    let plate = format!("{}·{}{letter}{:03}", airport.plate, 1 + (h >> 20) % 9, (h >> 24) % 1000);
    let gate = 1 + (h >> 36) % 12;
    let driver = format!("{surname}师傅");
    let pickup_at = arrival + chrono::Duration::minutes(30);
    let meeting = format!("{terminal} 到达层 {gate} 号门");

    let (deltas, message) = if req.lang.zh() {
        let flight = flight_no.as_ref().map(|n| format!("航班 {n} 的")).unwrap_or_default();
        (
            vec![
                format!("正在为您匹配{}附近的司机…", airport.short),
                format!("已为您找到司机{driver}（{plate}），车型：{car}。"),
                format!("司机将在到达时间后 30 分钟内在 {meeting}等候。"),
            ],
            format!(
                "已为您安排{flight}{}接机：司机{driver}（{plate}，{car}）将于 {} 前在 {meeting}等候。",
                airport.short,
                human_minute(pickup_at)
            ),
        )
    } else {
        let flight = flight_no.as_ref().map(|n| format!(" for flight {n}")).unwrap_or_default();
        let place = format!("{terminal} arrivals level, gate {gate}");
        (
            vec![
                format!("Looking for a driver near {}…", airport.en),
                format!("Found your driver: Mr. {surname_en} ({plate}), {car_en}."),
                format!("The driver will wait at {place} within 30 minutes after arrival."),
            ],
            format!(
                "Airport pickup at {}{flight} is arranged: Mr. {surname_en} ({plate}, {car_en}) will wait at {place} by {}.",
                airport.en,
                human_minute(pickup_at)
            ),
        )
    };
    Ok(Reply {
        output: json!({
            "driver": driver,
            "car_plate": plate,
            "car_model": car,
            "airport": airport.short,
            "pickup_time": iso_minute(pickup_at),
            "meeting_point": meeting,
        }),
        message,
        deltas,
    })
}

// ---------------------------------------------------------------------------------------------
// hotel_agent
// ---------------------------------------------------------------------------------------------

/// (brand, English brand, lowest and highest nightly price in CNY).
static BRANDS: [(&str, &str, u64, u64); 6] = [
    ("全季酒店", "JI Hotel", 300, 520),
    ("亚朵酒店", "Atour Hotel", 420, 720),
    ("汉庭酒店", "Hanting Hotel", 200, 360),
    ("希尔顿欢朋酒店", "Hampton by Hilton", 460, 780),
    ("桔子水晶酒店", "Crystal Orange Hotel", 360, 620),
    ("如家精选酒店", "Home Inn Plus", 220, 400),
];

fn nights_input(req: &mut Request<'_>) -> Option<u64> {
    let Some(v) = req.get("nights") else { return Some(1) };
    let n = match v {
        Value::Number(n) => {
            n.as_u64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0).map(|f| f as u64))
        }
        Value::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    };
    let n = n.filter(|n| (1..=30).contains(n));
    if n.is_none() {
        req.invalid("nights", v, "应为 1 到 30 之间的整数", "expected an integer from 1 to 30");
    }
    n
}

fn hotel(req: &mut Request<'_>) -> Result<Reply, String> {
    let city = city_input(req, "入住城市", "city");
    let date = req.text("check_in_date", "入住日期", "check-in date").and_then(|s| {
        let d = NaiveDate::parse_from_str(s, "%Y-%m-%d").ok().filter(|_| s.len() == 10);
        if d.is_none() {
            req.invalid("check_in_date", &json!(s), "应为 YYYY-MM-DD", "expected YYYY-MM-DD");
        }
        d
    });
    let nights = nights_input(req);
    req.check()?;
    let (Some(city), Some(date), Some(nights)) = (city, date, nights) else { return Err(String::new()) };

    let date = date.format("%Y-%m-%d").to_string();
    let h = seed(&[city.cn, &date, &nights.to_string()]);
    let (brand, brand_en, lo, hi) = *pick(&BRANDS, h);
    let (area, district, road) = *pick(&city.spots, h >> 8);
    let price = lo + (h >> 16) % ((hi - lo) / 10) * 10 + 8; // 358, 468, ...
    let number = 1 + (h >> 32) % 288;
    let name = format!("{brand}（{}{area}店）", city.cn);
    let address = format!("{}市{district}{road}{number}号", city.cn);
    let message = if req.lang.zh() {
        format!("已为您预订{name}，{date} 入住 {nights} 晚，每晚 {price} 元，地址：{address}。")
    } else {
        let n = if nights == 1 { "night" } else { "nights" };
        format!(
            "Booked {brand_en} ({name}) in {}: check-in {date}, {nights} {n}, CNY {price} per night. Address: {address}.",
            city.en
        )
    };
    Ok(Reply {
        output: json!({
            "hotel_name": name,
            "hotel_address": address,
            "city": city.cn,
            "check_in_date": date,
            "nights": nights,
            "price_per_night": price,
            "currency": "CNY",
        }),
        deltas: vec![message.clone()],
        message,
    })
}

// ---------------------------------------------------------------------------------------------
// weather_agent
// ---------------------------------------------------------------------------------------------

/// One day of forecast: (condition, English condition, high, low).
fn forecast_day(city: &City, date: NaiveDate) -> (&'static str, &'static str, i64, i64) {
    let h = seed(&[city.cn, &date.to_string()]);
    // Seasonal curve: January highs at day ~15, July highs half a year later.
    let phase = (f64::from(date.ordinal0()) - 15.0) / 365.0 * std::f64::consts::TAU;
    let season = (1.0 - phase.cos()) / 2.0;
    let base = city.jan_high + (city.jul_high - city.jan_high) * season;
    let mut high = base.round() as i64 + (h % 5) as i64 - 2;
    let (mut cond, mut cond_en) = match (h >> 8) % 10 {
        0..=2 => ("晴", "sunny"),
        3..=5 => ("多云", "cloudy"),
        6 => ("阴", "overcast"),
        7 => ("小雨", "light rain"),
        8 => ("阵雨", "showers"),
        _ if base >= 24.0 => ("雷阵雨", "thunderstorms"),
        _ => ("小雨", "light rain"),
    };
    if matches!(cond, "小雨" | "阵雨" | "雷阵雨") {
        high -= 2;
        if high <= 2 {
            (cond, cond_en) = ("小雪", "light snow");
        }
    }
    let low = high - 4 - ((h >> 16) % 5) as i64;
    (cond, cond_en, high, low)
}

fn weather(req: &mut Request<'_>) -> Result<Reply, String> {
    let city = city_input(req, "城市", "city");
    req.check()?;
    let Some(city) = city else { return Err(String::new()) };

    let start = today();
    let days: Vec<(NaiveDate, &str, &str, i64, i64)> = (0..3)
        .map(|i| {
            let date = start + chrono::Duration::days(i);
            let (c, c_en, hi, lo) = forecast_day(city, date);
            (date, c, c_en, hi, lo)
        })
        .collect();
    let message = if req.lang.zh() {
        let parts: Vec<String> =
            days.iter().map(|(d, c, _, hi, lo)| format!("{}月{}日 {c} {lo}~{hi}°C", d.month(), d.day())).collect();
        format!("{}未来三天天气：{}。", city.cn, parts.join("，"))
    } else {
        let parts: Vec<String> =
            days.iter().map(|(d, _, c, hi, lo)| format!("{} {c} {lo}-{hi}°C", d.format("%b %-d"))).collect();
        format!("{}, next three days: {}.", city.en, parts.join("; "))
    };
    let forecast: Vec<Value> = days
        .iter()
        .map(|(d, c, _, hi, lo)| json!({ "date": d.format("%Y-%m-%d").to_string(), "condition": c, "high_c": hi, "low_c": lo }))
        .collect();
    Ok(Reply { output: json!({ "city": city.cn, "forecast": forecast }), deltas: vec![message.clone()], message })
}

// ---------------------------------------------------------------------------------------------
// exchange_agent
// ---------------------------------------------------------------------------------------------

/// (ISO code, Chinese name, other accepted names, English name, CNY per unit). Fixed demo rates.
static CURRENCIES: [(&str, &str, &[&str], &str, f64); 5] = [
    ("USD", "美元", &["美金"], "US dollars", 7.12),
    ("EUR", "欧元", &[], "euros", 7.74),
    ("JPY", "日元", &["日币"], "Japanese yen", 0.048),
    ("HKD", "港币", &["港元"], "Hong Kong dollars", 0.91),
    ("GBP", "英镑", &[], "pounds sterling", 9.02),
];

/// A positive amount: a JSON number or a numeric string (`"1,000"` too), at most 10^12.
fn amount_input(req: &mut Request<'_>) -> Option<f64> {
    let Some(v) = req.get("amount") else {
        req.missing("amount", "金额", "amount");
        return None;
    };
    let n = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().replace(',', "").parse::<f64>().ok(),
        _ => None,
    };
    let n = n.filter(|n| n.is_finite() && *n > 0.0 && *n <= 1e12);
    if n.is_none() {
        req.invalid("amount", v, "应为大于 0 的数字", "expected a number greater than 0");
    }
    n
}

/// `1000` for whole numbers, else up to 4 decimals without trailing zeros.
fn show_amount(a: f64) -> String {
    if a.fract() == 0.0 {
        format!("{a:.0}")
    } else {
        let s = format!("{a:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn exchange(req: &mut Request<'_>) -> Result<Reply, String> {
    let amount = amount_input(req);
    let currency = req.text("currency", "外币币种", "currency").and_then(|s| {
        let found = CURRENCIES
            .iter()
            .find(|(code, cn, aliases, _, _)| s.eq_ignore_ascii_case(code) || s == *cn || aliases.contains(&s));
        if found.is_none() {
            req.invalid(
                "currency",
                &json!(s),
                "仅支持美元、欧元、日元、港币、英镑",
                "supported: USD, EUR, JPY, HKD, GBP",
            );
        }
        found
    });
    req.check()?;
    let (Some(amount), Some(&(code, cn, _, en, rate))) = (amount, currency) else { return Err(String::new()) };

    let cny = (amount * rate * 100.0).round() / 100.0;
    let shown = show_amount(amount);
    let message = if req.lang.zh() {
        format!("{shown} {cn}约合人民币 {cny:.2} 元（参考汇率：1 {cn} = {rate} 元人民币）。")
    } else {
        format!("{shown} {en} ({code}) is about CNY {cny:.2} (reference rate: 1 {code} = {rate} CNY).")
    };
    Ok(Reply {
        output: json!({ "amount": amount, "currency": code, "cny": cny, "rate": rate }),
        deltas: vec![message.clone()],
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_zh(kind: SampleAgentKind, inputs: Value) -> Result<Reply, String> {
        run(kind, &json!({ "message": "测试", "inputs": inputs }), Lang::Zh)
    }

    #[test]
    fn language_follows_the_message_script() {
        assert_eq!(Lang::of_request(&json!({ "message": "查航班 CA1234" })), Lang::Zh);
        assert_eq!(Lang::of_request(&json!({ "message": "flight CA1234" })), Lang::En);
        assert_eq!(Lang::of_request(&json!({ "inputs": { "message": "天气" } })), Lang::Zh);
        assert_eq!(Lang::of_request(&json!({})), Lang::En);
        assert_eq!(Lang::of_request(&json!({ "message": 42 })), Lang::En);
    }

    #[test]
    fn the_demo_flight_lands_at_baiyun() {
        let r = run_zh(SampleAgentKind::Flight, json!({ "flight_no": "ca 1234" })).unwrap();
        assert_eq!(r.output["flight_no"], "CA1234");
        assert_eq!(r.output["airline"], "中国国际航空");
        assert_eq!(r.output["arrival_airport"], "白云机场");
        assert_eq!(r.output["arrival_airport_name"], "广州白云国际机场");
        assert_ne!(r.output["departure_airport"], r.output["arrival_airport"]);
        let eta = r.output["arrival_time"].as_str().unwrap();
        assert!(parse_arrival(eta).is_some(), "{eta}");
        assert!(r.message.starts_with("航班 CA1234（中国国际航空）"), "{}", r.message);
    }

    #[test]
    fn data_is_deterministic_and_varies_with_the_inputs() {
        let a = run_zh(SampleAgentKind::Flight, json!({ "flight_no": "MU5101" })).unwrap();
        assert_eq!(a, run_zh(SampleAgentKind::Flight, json!({ "flight_no": "MU5101" })).unwrap());
        let h1 = run_zh(SampleAgentKind::Hotel, json!({ "city": "北京", "check_in_date": "2026-12-01" })).unwrap();
        let h2 = run_zh(SampleAgentKind::Hotel, json!({ "city": "Beijing", "check_in_date": "2026-12-01" })).unwrap();
        assert_eq!(h1.output, h2.output, "English and Chinese city names are the same city");
        let prices: std::collections::HashSet<String> = (1..=28)
            .map(|d| {
                let date = format!("2026-12-{d:02}");
                run_zh(SampleAgentKind::Hotel, json!({ "city": "上海", "check_in_date": date })).unwrap().output
                    ["price_per_night"]
                    .to_string()
            })
            .collect();
        assert!(prices.len() > 3, "prices vary: {prices:?}");
    }

    #[test]
    fn names_are_resolved_leniently() {
        for name in
            ["白云机场", "广州白云国际机场", "广州白云机场", "Baiyun Airport", "guangzhou baiyun international airport"]
        {
            assert_eq!(find_airport(name).map(|a| a.short), Some("白云机场"), "{name}");
        }
        assert_eq!(find_airport("Bao'an Airport").map(|a| a.short), Some("宝安机场"));
        assert!(find_airport("火星机场").is_none());
        assert!(find_airport("Baiyun").is_none(), "an English name needs the word airport");
        for name in ["西安", "西安市", "Xi'an", "xian", "XI AN"] {
            assert_eq!(find_city(name).map(|c| c.cn), Some("西安"), "{name}");
        }
        assert!(find_city("").is_none());
        assert_eq!(flight_number(" cz 3101 ").as_deref(), Some("CZ3101"));
        for bad in ["中国1234", "C1234", "CA12", "CA12345", "1234CA", "ＣＡ1234"] {
            assert!(flight_number(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn pickup_is_thirty_minutes_after_arrival_and_uses_the_upstream_flight() {
        let flight = run_zh(SampleAgentKind::Flight, json!({ "flight_no": "CA1234" })).unwrap();
        let body = json!({
            "message": "安排接机",
            "inputs": { "airport": "白云机场", "arrival_time": "2026-12-01T23:45" },
            "context": { "dependencies": { "t1": flight.output } },
        });
        let r = run(SampleAgentKind::Pickup, &body, Lang::Zh).unwrap();
        assert_eq!(r.output["pickup_time"], "2026-12-02T00:15");
        assert_eq!(r.output["airport"], "白云机场");
        let terminal = flight.output["terminal"].as_str().unwrap();
        assert!(r.output["meeting_point"].as_str().unwrap().starts_with(terminal), "{}", r.output);
        assert!(r.message.contains("航班 CA1234"), "{}", r.message);
        assert_eq!(r.deltas.len(), 3);
        assert_eq!(r.deltas[0], "正在为您匹配白云机场附近的司机…");
        assert!(r.output["car_plate"].as_str().unwrap().starts_with("粤A·"));
    }

    #[test]
    fn missing_and_invalid_inputs_are_all_reported() {
        let err = run_zh(SampleAgentKind::Hotel, json!({ "city": "火星", "nights": 0 })).unwrap_err();
        assert!(err.contains("city") && err.contains("check_in_date") && err.contains("nights"), "{err}");
        let err = run(SampleAgentKind::Exchange, &json!({ "message": "convert" }), Lang::En).unwrap_err();
        assert!(err.starts_with("invalid inputs:") && err.contains("amount") && err.contains("currency"), "{err}");
        for (kind, inputs) in [
            (SampleAgentKind::Flight, json!({ "flight_no": 1234 })),
            (SampleAgentKind::Flight, json!({ "flight_no": "航班" })),
            (SampleAgentKind::Pickup, json!({ "airport": "白云机场", "arrival_time": "明天下午" })),
            (
                SampleAgentKind::Pickup,
                json!({ "airport": "白云机场", "arrival_time": "2026-12-01T14:30", "flight_no": "x" }),
            ),
            (SampleAgentKind::Hotel, json!({ "city": "北京", "check_in_date": "2026-13-01" })),
            (SampleAgentKind::Hotel, json!({ "city": "北京", "check_in_date": "2026-12-01", "nights": 1.5 })),
            (SampleAgentKind::Weather, json!({ "city": ["北京"] })),
            (SampleAgentKind::Exchange, json!({ "amount": -5, "currency": "USD" })),
            (SampleAgentKind::Exchange, json!({ "amount": 5, "currency": "BTC" })),
        ] {
            assert!(run_zh(kind, inputs.clone()).is_err(), "{kind:?} {inputs}");
        }
        assert!(run(SampleAgentKind::Weather, &json!({ "inputs": "oops" }), Lang::En).is_err());
    }

    #[test]
    fn weather_is_three_plausible_days_from_today() {
        let r = run_zh(SampleAgentKind::Weather, json!({ "city": "哈尔滨" }));
        assert!(r.is_err());
        for c in &CITIES {
            let r = run_zh(SampleAgentKind::Weather, json!({ "city": c.en })).unwrap();
            let days = r.output["forecast"].as_array().unwrap();
            assert_eq!(days.len(), 3);
            assert_eq!(days[0]["date"], today().format("%Y-%m-%d").to_string());
            for d in days {
                let (hi, lo) = (d["high_c"].as_i64().unwrap(), d["low_c"].as_i64().unwrap());
                assert!(lo < hi && (-20..=42).contains(&lo) && (-15..=45).contains(&hi), "{d}");
            }
            assert_eq!(r.output["city"], c.cn);
        }
    }

    #[test]
    fn exchange_uses_fixed_rates() {
        let r = run_zh(SampleAgentKind::Exchange, json!({ "amount": 1000, "currency": "美元" })).unwrap();
        assert_eq!(r.output, json!({ "amount": 1000.0, "currency": "USD", "cny": 7120.0, "rate": 7.12 }));
        assert_eq!(r.message, "1000 美元约合人民币 7120.00 元（参考汇率：1 美元 = 7.12 元人民币）。");
        let r =
            run(SampleAgentKind::Exchange, &json!({ "inputs": { "amount": "2,500.5", "currency": "jpy" } }), Lang::En)
                .unwrap();
        assert_eq!(r.output["cny"], json!(120.02));
        assert!(r.message.starts_with("2500.5 Japanese yen (JPY)"), "{}", r.message);
    }
}
