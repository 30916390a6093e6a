//! Per-turn structures as they fill (bench/README.md): does a session save or a breaker record
//! cost more after many turns? And the session-store latency of a turn (open + save) with
//! concurrent turns, for each store.
//!
//! `cargo run --release --example bench_store -- [memory|breaker|sqlite]...` (all by default).
//! Bounded: fixed counts, and at most `SQLITE_SECS` (5) seconds of SQLite turns. Not part of
//! `cargo test`'s runs.

use std::time::{Duration, Instant};

use switchboard::config::model::BreakerSettings;
use switchboard::config::HumanDuration;
use switchboard::dispatch::breaker::Breakers;
use switchboard::session::{open_backend, Session, SessionStore};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let wants = |what: &str| args.is_empty() || args.iter().any(|a| a == what);
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        if wants("memory") {
            memory().await;
        }
        if wants("breaker") {
            breaker();
        }
        if wants("sqlite") {
            sqlite().await;
        }
    });
}

/// 5 x `MEM_SLICE` (40,000) saves of new threads into `memory://` (24 h TTL): µs per save for
/// each slice.
async fn memory() {
    let n: usize = std::env::var("MEM_SLICE").ok().and_then(|s| s.parse().ok()).unwrap_or(40_000);
    let backend = open_backend("memory://").await.expect("memory");
    let ttl = Duration::from_secs(24 * 3600);
    let mut line = format!("memory save, us per save by sessions stored (5 slices of {n}):");
    for slice in 0..5 {
        let started = Instant::now();
        for i in 0..n {
            let session = Session::new("bench", &format!("t{}", slice * n + i));
            backend.save(&session, ttl).await.expect("save");
        }
        line += &format!(" {:.2}", started.elapsed().as_secs_f64() * 1e6 / n as f64);
    }
    println!("{line}");
}

/// 5 x `BREAKER_SLICE` (20,000) outcomes recorded for one agent within one 30 s window: ns per
/// record for each slice.
fn breaker() {
    let n: usize = std::env::var("BREAKER_SLICE").ok().and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let breakers = Breakers::default();
    let settings = BreakerSettings {
        failure_ratio: 0.5,
        min_calls: 5,
        window: HumanDuration(Duration::from_secs(30)),
        cool_down: HumanDuration(Duration::from_secs(10)),
    };
    let mut line = format!("breaker record, ns per record by calls in the window (5 slices of {n}):");
    for _ in 0..5 {
        let started = Instant::now();
        for _ in 0..n {
            breakers.record("agent", &settings, true);
        }
        line += &format!(" {:.0}", started.elapsed().as_secs_f64() * 1e9 / n as f64);
    }
    println!("{line}");
}

/// 16 concurrent turns on new threads, each `open` + `save` on a SQLite file, for `SQLITE_SECS`
/// seconds: turns/s and the per-turn store latency p50 / p99 / max.
async fn sqlite() {
    let secs: u64 = std::env::var("SQLITE_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    let dir = std::env::temp_dir().join(format!("switchboard-bench-store-{}", std::process::id()));
    let url = format!("sqlite://{}", dir.join("s.db").display());
    let store =
        std::sync::Arc::new(SessionStore::new(open_backend(&url).await.expect("sqlite"), Duration::from_secs(86400)));
    let deadline = Instant::now() + Duration::from_secs(secs);
    let workers = (0..16).map(|w| {
        let store = store.clone();
        tokio::spawn(async move {
            let mut took = Vec::new();
            let mut i = 0u64;
            while Instant::now() < deadline {
                let started = Instant::now();
                let mut guard = store.open("bench", &format!("w{w}-{i}")).await.expect("open");
                guard.session.slots.insert("city".into(), "北京".into());
                guard.save().await.expect("save");
                took.push(started.elapsed());
                i += 1;
            }
            took
        })
    });
    let mut all: Vec<Duration> = Vec::new();
    for w in futures::future::join_all(workers).await {
        all.extend(w.expect("worker"));
    }
    all.sort();
    let at = |q: f64| all[((all.len() as f64 * q) as usize).min(all.len() - 1)].as_secs_f64() * 1e3;
    println!(
        "sqlite open+save, 16 concurrent: {:.0} turns/s, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        all.len() as f64 / secs as f64,
        at(0.5),
        at(0.99),
        all.last().map_or(0.0, |d| d.as_secs_f64() * 1e3)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
