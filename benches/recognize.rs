//! Recognition time per query (`cargo bench --bench recognize`): the scoring recognizer over
//! 20 cards (the demo and eval configs' cards plus generated ones) and over 1,000 generated cards
//! spread over 40 domains (domain gating on), and the semantic stage's cost on queries that reach
//! it (`semantic_stage/…`). Each iteration recognizes a fixed mix of queries;
//! the throughput line gives queries per second. Not part of `cargo test`: never a timed
//! assertion.

#![allow(missing_docs)] // criterion_group! generates undocumented items.

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::{json, Value};
use switchboard::config::{CapabilityCardSpec, ConfigFile};
use switchboard::matching::Recognizer;

mod common;
use common::QUERIES;

/// Paraphrases that share no deciding word with the cards (the semantic stage's queries).
const BY_MEANING: &[&str] = &[
    "I got locked out of my account",
    "孩子偷偷拿我手机在游戏里花了两千多，这钱还能要回来吗",
    "My place is a mess after the party, can you send someone to tidy up",
    "隔壁从早到晚叮叮当当的",
];

fn config(path: &str) -> (Vec<CapabilityCardSpec>, BTreeMap<String, Vec<String>>) {
    let text = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap();
    let file: ConfigFile = serde_yaml_ng::from_str(&text).unwrap();
    (file.agents, file.lists)
}

const DOMAINS: &[(&str, &[&str], &[&str])] = &[
    (
        "出行",
        &["机票", "火车票", "大巴", "船票", "租车", "停车"],
        &["trip", "ticket", "train", "bus", "ferry", "parking"],
    ),
    (
        "住宿",
        &["酒店", "民宿", "公寓", "房间", "退房", "续住"],
        &["hotel", "room", "apartment", "stay", "checkout", "hostel"],
    ),
    (
        "金融",
        &["汇率", "转账", "余额", "信用卡", "贷款", "理财"],
        &["transfer", "balance", "loan", "card", "fund", "rate"],
    ),
    (
        "保险",
        &["理赔", "保单", "保费", "续保", "车险", "医疗险"],
        &["claim", "policy", "premium", "renewal", "coverage", "accident"],
    ),
    (
        "办公",
        &["打印机", "电脑", "邮箱", "会议室", "权限", "软件"],
        &["printer", "laptop", "email", "meeting", "access", "software"],
    ),
    (
        "人事",
        &["请假", "报销", "工资", "考勤", "入职", "培训"],
        &["leave", "expense", "salary", "attendance", "onboarding", "training"],
    ),
    (
        "购物",
        &["订单", "快递", "退货", "优惠券", "发票", "会员"],
        &["order", "delivery", "return", "coupon", "invoice", "member"],
    ),
    (
        "生活",
        &["水费", "电费", "燃气", "物业", "家政", "搬家"],
        &["water", "electricity", "gas", "property", "cleaning", "moving"],
    ),
];
const ACTIONS: &[(&str, &str)] =
    &[("查询", "check"), ("办理", "apply"), ("取消", "cancel"), ("修改", "change"), ("投诉", "complain")];

/// `n` generated cards over 40 domains (8 themes x 5 regions), each with a name, description,
/// keywords, examples and a semantic key (a pattern or a value list).
fn generated(n: usize) -> Vec<CapabilityCardSpec> {
    (0..n)
        .map(|i| {
            let (theme, zh, en) = DOMAINS[i % DOMAINS.len()];
            let region = (i / DOMAINS.len()) % 5;
            let (act_zh, act_en) = ACTIONS[(i / 7) % ACTIONS.len()];
            let noun = zh[(i / 3) % zh.len()];
            let noun_en = en[(i / 5) % en.len()];
            let key = if i % 2 == 0 {
                json!({ "key": "ref_no", "description": "单号", "extract": { "pattern": format!("([A-Z]{{{}}}\\d{{6}})", 1 + i % 3) } })
            } else {
                json!({ "key": "item", "description": "项目", "extract": { "values": [noun, noun_en, format!("{noun}{i}")] } })
            };
            let card: Value = json!({
                "id": format!("card_{i}"),
                "name": format!("{noun}{act_zh}{i}"),
                "description": format!("为{theme}业务第{region}区的用户{act_zh}{noun}，支持{noun_en}相关的请求。"),
                "domain": format!("{theme}{region}"),
                "endpoint": { "url": "http://127.0.0.1:1/invoke", "protocol": "http" },
                "keywords": [format!("{noun}{act_zh}{i}"), format!("{act_en} {noun_en} {i}")],
                "examples": [format!("帮我{act_zh}一下{noun}"), format!("I want to {act_en} my {noun_en}")],
                "required_semantic_keys": [key],
            });
            serde_json::from_value(card).unwrap()
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let (mut twenty, mut lists) = config("agents_config.yaml");
    let (eval, eval_lists) = config("tests/fixtures/eval/agents_config.yaml");
    twenty.extend(eval);
    lists.extend(eval_lists);
    twenty.extend(generated(20 - twenty.len()).into_iter().map(|mut a| {
        a.domain = None;
        a
    }));
    let thousand = generated(1000);
    let mut group = c.benchmark_group("recognize");
    group.throughput(Throughput::Elements(QUERIES.len() as u64));
    for (name, cards) in [("20_cards", &twenty), ("1000_cards", &thousand)] {
        let refs: Vec<&CapabilityCardSpec> = cards.iter().collect();
        let recognizer = Recognizer::new(&refs, &lists);
        recognizer.recognize("warm up"); // load the segmenter's dictionary outside the timing
        recognizer.warm(); // embed the card texts for the semantic stage outside the timing
        group.bench_function(format!("{name}/{}_queries", QUERIES.len()), |b| {
            b.iter(|| {
                for q in QUERIES {
                    black_box(recognizer.recognize(black_box(q)));
                }
            })
        });
    }
    group.finish();
    // Queries no card's words select, which reach the semantic stage (one sentence encoding
    // each, then a dot product per card text).
    let mut group = c.benchmark_group("semantic_stage");
    group.throughput(Throughput::Elements(BY_MEANING.len() as u64));
    for (name, cards) in [("20_cards", &twenty), ("1000_cards", &thousand)] {
        let refs: Vec<&CapabilityCardSpec> = cards.iter().collect();
        let recognizer = Recognizer::new(&refs, &lists);
        recognizer.warm();
        group.bench_function(format!("{name}/{}_queries", BY_MEANING.len()), |b| {
            b.iter(|| {
                for q in BY_MEANING {
                    black_box(recognizer.recognize(black_box(q)));
                }
            })
        });
    }
    group.finish();
    let refs: Vec<&CapabilityCardSpec> = thousand.iter().collect();
    c.bench_function("compile/1000_cards", |b| b.iter(|| black_box(Recognizer::new(&refs, &lists))));
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(4));
    targets = bench
}
criterion_main!(benches);
