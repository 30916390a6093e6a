//! Load generator: supervisor overhead and throughput on the repo's config with the sample
//! sub-agents at zero latency, over real loopback sockets (targets: README.md, "Benchmarks").
//!
//! `cargo bench --bench overhead` (env `REQUESTS`, `CONCURRENCY`). Prints requests/s and latency
//! percentiles of whole `POST /v1/chat` turns (JSON mode) for a two-sub-task DAG plan and for a
//! single-task plan. Not part of `cargo test`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use switchboard::app::{build_state, AppOptions};
use switchboard_demo::{spawn_sample_agent, SampleAgentKind, SampleOptions};
use tokio::net::TcpListener;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    rt.block_on(run());
}

async fn run() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(repo.join("widgets_map.json"), dir.path().join("widgets_map.json")).expect("widgets");
    std::fs::create_dir_all(dir.path().join("schemas/agents")).expect("mkdir");
    for e in std::fs::read_dir(repo.join("schemas/agents")).expect("schemas") {
        let e = e.expect("entry");
        std::fs::copy(e.path(), dir.path().join("schemas/agents").join(e.file_name())).expect("copy");
    }
    let mut config: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(repo.join("agents_config.yaml")).expect("config"))
            .expect("yaml");
    let mut handles = Vec::new();
    for kind in SampleAgentKind::ALL {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let h = spawn_sample_agent(kind, l, SampleOptions::default()).await;
        for a in config["agents"].as_array_mut().expect("agents") {
            if a["id"] == kind.agent_id() {
                a["endpoint"]["url"] = json!(h.url());
            }
        }
        handles.push(h);
    }
    let path = dir.path().join("agents_config.yaml");
    std::fs::write(&path, serde_yaml_ng::to_string(&config).expect("yaml")).expect("write");
    let state = build_state(&path, AppOptions::default()).await.expect("state");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let opts = switchboard::app::ServeOptions { drain: Duration::from_secs(1), ..Default::default() };
    tokio::spawn(switchboard::app::serve(listener, state, std::future::pending(), opts));

    let requests = env_or("REQUESTS", 4000);
    let concurrency = env_or("CONCURRENCY", 4);
    for (label, query) in [
        ("two-sub-task DAG (flight -> pickup over SSE)", "帮我查一下航班CA1234，然后安排白云机场接机"),
        ("single sub-task (hotel)", "帮我订北京的酒店，2026-12-01入住"),
        ("direct answer (no dispatch)", "你好"),
    ] {
        bench(&base, label, query, requests, concurrency).await;
    }
}

async fn bench(base: &str, label: &str, query: &str, requests: usize, concurrency: usize) {
    let client = reqwest::Client::new();
    let url = Arc::new(format!("{base}/v1/chat"));
    let body = Arc::new(json!({ "query": query, "user_id": "bench" }));
    // Warm up connections.
    for _ in 0..50 {
        let _ = client.post(url.as_str()).header("accept", "application/json").json(&*body).send().await;
    }
    let started = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..concurrency {
        let (client, url, body) = (client.clone(), url.clone(), body.clone());
        let n = requests / concurrency + usize::from(w < requests % concurrency);
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(n);
            for _ in 0..n {
                let t = Instant::now();
                let resp = client
                    .post(url.as_str())
                    .header("accept", "application/json")
                    .json(&*body)
                    .send()
                    .await
                    .expect("send");
                let v: Value = resp.json().await.expect("json");
                assert_eq!(v["stage"], "answer");
                lat.push(t.elapsed());
            }
            lat
        }));
    }
    let mut all: Vec<Duration> = Vec::with_capacity(requests);
    for t in tasks {
        all.extend(t.await.expect("worker"));
    }
    let elapsed = started.elapsed();
    all.sort();
    let pct = |p: f64| all[((all.len() as f64 * p) as usize).min(all.len() - 1)];
    println!(
        "{label}: {} requests, concurrency {concurrency}: {:.0} req/s, p50 {:?}, p99 {:?}",
        all.len(),
        all.len() as f64 / elapsed.as_secs_f64(),
        pct(0.50),
        pct(0.99)
    );
}
