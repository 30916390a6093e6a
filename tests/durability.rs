//! Sessions that outlive a process: the supervisor binary restarted on the same SQLite file, and
//! two replicas sharing one Redis (CI starts `redis-server` and sets `REDIS_URL`).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::common::*;

/// A `switchboard serve` child process.
struct Replica {
    child: Child,
    base: String,
}

async fn serve(config: &Path, store: &str) -> Replica {
    let mut child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["serve", "--listen", "127.0.0.1:0", "--no-watch", "--store", store, "--config"])
        .arg(config)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let base = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(addr) = line.strip_prefix("switchboard listening on ") {
                return addr.to_string();
            }
        }
        panic!("the server exited before listening");
    })
    .await
    .expect("the server did not start");
    Replica { child, base }
}

impl Replica {
    async fn chat(&self, query: &str, user: &str, thread: Option<&str>) -> Value {
        let mut body = json!({ "query": query, "user_id": user });
        if let Some(t) = thread {
            body["thread_id"] = json!(t);
        }
        let resp = reqwest::Client::new()
            .post(format!("{}/v1/chat", self.base))
            .header("accept", "application/json")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        resp.json().await.unwrap()
    }

    /// Stops the process with SIGTERM (graceful) and waits for it.
    async fn stop(mut self) {
        if let Some(pid) = self.child.id() {
            let _ = std::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status();
        }
        let _ = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await;
    }
}

#[tokio::test]
async fn a_clarification_survives_a_restart_on_the_sqlite_store() {
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite://{}", dir.path().join("sessions.db").display());

    let first = serve(&app.config_path, &store).await;
    let opened = first.chat("帮我订个酒店", "restart-user", None).await;
    assert_eq!(opened["metadata"]["semantic_info"][0]["keys"], json!(["city", "check_in_date"]));
    let th = opened["thread_id"].as_str().unwrap().to_string();
    first.stop().await;

    let second = serve(&app.config_path, &store).await;
    let resumed = second.chat("北京，2026-12-01 入住", "restart-user", Some(&th)).await;
    assert_eq!(resumed["stage"], "answer");
    let calls = app.calls("hotel_agent");
    assert_eq!(calls.len(), 1, "the pending sub-task resumed after the restart: {resumed}");
    assert_eq!(calls[0].body["inputs"]["city"], "北京");
    second.stop().await;
}

#[tokio::test]
async fn two_replicas_share_sessions_through_redis() {
    let Ok(url) = std::env::var("REDIS_URL") else {
        // Written to the real stderr (not the test's captured output) so the skip is visible.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED two_replicas_share_sessions_through_redis: REDIS_URL is not set (CI sets it)"
        );
        return;
    };
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let a = serve(&app.config_path, &url).await;
    let b = serve(&app.config_path, &url).await;
    let user = format!("replica-user-{}", uuid::Uuid::new_v4().simple());

    let opened = a.chat("帮我订个酒店", &user, None).await;
    assert!(app.calls("hotel_agent").is_empty());
    let th = opened["thread_id"].as_str().unwrap().to_string();
    let resumed = b.chat("北京，2026-12-01 入住", &user, Some(&th)).await;
    assert_eq!(resumed["stage"], "answer");
    assert_eq!(app.calls("hotel_agent").len(), 1, "resumed on the other replica: {resumed}");

    // Concurrent turns on one thread through both replicas: every turn is saved.
    let th2 = format!("th-{}", uuid::Uuid::new_v4().simple());
    let turns = (0..4).map(|i| {
        let r = if i % 2 == 0 { &a } else { &b };
        r.chat("谢谢", &user, Some(&th2))
    });
    futures::future::join_all(turns).await;
    let s: Value =
        reqwest::get(format!("{}/v1/sessions/{th2}?user_id={user}", a.base)).await.unwrap().json().await.unwrap();
    assert_eq!(s["history"].as_array().unwrap().len(), 4, "no lost write across replicas: {s}");
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn sessions_per_user_are_bounded_through_redis() {
    let Ok(url) = std::env::var("REDIS_URL") else {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED sessions_per_user_are_bounded_through_redis: REDIS_URL is not set (CI sets it)"
        );
        return;
    };
    let app = spawn_app_with(Setup::default(), |c| c["supervisor"]["max_sessions_per_user"] = json!(2)).await;
    let replica = serve(&app.config_path, &url).await;
    let user = format!("bounded-user-{}", uuid::Uuid::new_v4().simple());
    let first = replica.chat("你好", &user, None).await;
    assert_eq!(first["stage"], "answer");
    assert_eq!(replica.chat("你好", &user, None).await["stage"], "answer");
    let third = replica.chat("你好", &user, None).await;
    assert_eq!(third["metadata"]["state"]["error"]["code"], "too_many_sessions", "{third}");
    let th = first["thread_id"].as_str().unwrap();
    assert_eq!(replica.chat("谢谢", &user, Some(th)).await["stage"], "answer", "an existing thread goes on");
    replica.stop().await;
}
