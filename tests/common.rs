//! Test harness: the supervisor and the sample sub-agents as real servers on 127.0.0.1:0, with a
//! config written to a temp dir from the repository's own `agents_config.yaml`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{json, Value};
use switchboard::api;
use switchboard::app::{build_state, AppOptions};
use switchboard_demo::{spawn_sample_agent, SampleAgentHandle, SampleAgentKind, SampleOptions};
use tokio::net::TcpListener;

/// The repository root.
pub(crate) fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The repository's `agents_config.yaml` as a JSON value.
pub(crate) fn repo_config() -> Value {
    let text = std::fs::read_to_string(repo().join("agents_config.yaml")).unwrap();
    serde_yaml_ng::from_str(&text).unwrap()
}

/// Copies `widgets_map.json` and `schemas/` into `dir`.
pub(crate) fn copy_support_files(dir: &Path) {
    std::fs::copy(repo().join("widgets_map.json"), dir.join("widgets_map.json")).unwrap();
    let agents = dir.join("schemas/agents");
    std::fs::create_dir_all(&agents).unwrap();
    for entry in std::fs::read_dir(repo().join("schemas/agents")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), agents.join(entry.file_name())).unwrap();
    }
}

/// Writes `config` as YAML atomically (temp file + rename, as editors do).
pub(crate) fn write_config(path: &Path, config: &Value) {
    let tmp = path.with_extension("yaml.tmp");
    std::fs::write(&tmp, serde_yaml_ng::to_string(config).unwrap()).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// The date every test turn's relative dates resolve against (a Monday), unless a test clears
/// `AppOptions::today`: fixed dates in requests never turn into past dates as the clock moves.
pub(crate) fn test_today() -> chrono::NaiveDate {
    chrono::NaiveDate::from_ymd_opt(2026, 11, 23).unwrap()
}

/// A running supervisor plus sample agents.
pub(crate) struct TestApp {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// The config file in the temp dir.
    pub config_path: PathBuf,
    /// The config as written.
    pub config: Value,
    /// Sample agents by agent id.
    pub agents: HashMap<String, SampleAgentHandle>,
    /// HTTP client.
    pub client: reqwest::Client,
    _dir: tempfile::TempDir,
}

/// An edit of the server options a test applies before start.
pub(crate) type OptionsEdit = Box<dyn FnOnce(&mut AppOptions) + Send>;

/// Options for [`spawn_app_with`].
#[derive(Default)]
pub(crate) struct Setup {
    /// Per-agent sample options (e.g. delays).
    pub options: HashMap<&'static str, SampleOptions>,
    /// Watch the config.
    pub watch_files: bool,
    /// Last changes to the server options (limits, CORS, ...).
    pub app_options: Option<OptionsEdit>,
}

/// The five sample agents and a supervisor on the repo's config (hot reload on).
pub(crate) async fn spawn_app() -> TestApp {
    spawn_app_with(Setup { watch_files: true, ..Default::default() }, |_| {}).await
}

/// Like [`spawn_app`], with sample options and a last edit of the config before it is written.
pub(crate) async fn spawn_app_with(setup: Setup, edit: impl FnOnce(&mut Value)) -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    copy_support_files(dir.path());
    let mut config = repo_config();
    let mut agents = HashMap::new();
    for kind in SampleAgentKind::ALL {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let opts = setup.options.get(kind.agent_id()).cloned().unwrap_or_default();
        let handle = spawn_sample_agent(kind, listener, opts).await;
        for agent in config["agents"].as_array_mut().unwrap() {
            if agent["id"] == kind.agent_id() {
                agent["endpoint"]["url"] = json!(handle.url());
            }
        }
        agents.insert(kind.agent_id().to_string(), handle);
    }
    edit(&mut config);
    let config_path = dir.path().join("agents_config.yaml");
    write_config(&config_path, &config);
    let mut options = AppOptions {
        watch_files: setup.watch_files,
        admin_token: Some("test-admin".into()),
        today: Some(test_today()),
        ..AppOptions::default()
    };
    if let Some(tweak) = setup.app_options {
        tweak(&mut options);
    }
    let state = build_state(&config_path, options).await.unwrap_or_else(|e| panic!("test config invalid: {e}"));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let router = api::router(state.clone());
    tokio::spawn(async move { axum::serve(switchboard::app::nodelay(listener), router).await.unwrap() });
    TestApp { base, config_path, config, agents, client: reqwest::Client::new(), _dir: dir }
}

impl TestApp {
    /// The calls a sample agent received.
    pub(crate) fn calls(&self, agent_id: &str) -> Vec<switchboard_demo::RecordedCall> {
        self.agents[agent_id].log.calls()
    }

    /// Posts a chat and returns every SSE event (`data` parsed), checking the framing: `event:`
    /// equals `stage`, `id:` equals `seq`.
    pub(crate) async fn chat(&self, body: Value) -> Vec<Value> {
        let resp = self.client.post(format!("{}/v1/chat", self.base)).json(&body).send().await.unwrap();
        assert_eq!(resp.status(), 200, "chat failed: {:?}", resp.text().await);
        assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
        let mut out = Vec::new();
        let mut stream = resp.bytes_stream().eventsource();
        while let Some(ev) = tokio::time::timeout(Duration::from_secs(30), stream.next()).await.expect("stream stalled")
        {
            let ev = ev.unwrap();
            let data: Value = serde_json::from_str(&ev.data).unwrap();
            assert_eq!(ev.event, data["stage"].as_str().unwrap());
            assert_eq!(ev.id, data["seq"].to_string());
            out.push(data);
        }
        out
    }

    /// `chat` with `query`, `user_id` "u1" and an optional thread.
    pub(crate) async fn ask(&self, query: &str, thread: Option<&str>) -> Vec<Value> {
        let mut body = json!({ "query": query, "user_id": "u1" });
        if let Some(t) = thread {
            body["thread_id"] = json!(t);
        }
        self.chat(body).await
    }

    /// GET a JSON endpoint.
    pub(crate) async fn get(&self, path: &str) -> Value {
        self.client.get(format!("{}{path}", self.base)).send().await.unwrap().json().await.unwrap()
    }

    /// Rewrites the config file (atomically).
    pub(crate) fn rewrite(&self, config: &Value) {
        write_config(&self.config_path, config);
    }

    /// Waits (bounded) until `GET /v1/config` satisfies `pred`; returns the last status.
    pub(crate) async fn wait_config(&self, pred: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..200 {
            let status = self.get("/v1/config").await;
            if pred(&status) {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("config status never matched: {}", self.get("/v1/config").await);
    }
}

/// The capability card `id` in a config value.
pub(crate) fn agent_mut<'a>(cfg: &'a mut Value, id: &str) -> &'a mut Value {
    cfg["agents"].as_array_mut().unwrap().iter_mut().find(|a| a["id"] == id).unwrap()
}

/// Checks the stream invariants and returns the final `done` event.
pub(crate) fn done(events: &[Value]) -> &Value {
    let dones: Vec<&Value> = events.iter().filter(|e| e["type"] == "done").collect();
    assert_eq!(dones.len(), 1, "exactly one done event: {events:#?}");
    assert_eq!(events.last().unwrap()["type"], "done", "done is last");
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["seq"], json!(i as u64 + 1), "seq is 1..n");
        assert_eq!(e["thread_id"], events[0]["thread_id"]);
    }
    dones[0]
}

/// The stages of a stream, in order.
pub(crate) fn stages(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["stage"].as_str().unwrap()).collect()
}

/// Events of one stage.
pub(crate) fn of_stage<'a>(events: &'a [Value], stage: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["stage"] == stage).collect()
}

/// The thread id of a stream.
pub(crate) fn thread(events: &[Value]) -> String {
    events[0]["thread_id"].as_str().unwrap().to_string()
}

/// No user-facing text names an agent id.
pub(crate) fn assert_no_agent_ids(events: &[Value], ids: &[&str]) {
    for e in events {
        let content = e["content"].as_str().unwrap();
        for id in ids {
            assert!(!content.contains(id), "agent id {id} in user-facing text: {content}");
        }
    }
}

/// Adds `stay_agent` ("住宿延期": extends a hotel stay), served by the weather sample agent, to
/// the demo config: beside it "…，另外我们能不能再多住一天" is a part no card clearly means.
pub(crate) fn add_stay_card(config: &mut Value) {
    let agents = config["agents"].as_array_mut().unwrap();
    let mut stay = agents.iter().find(|a| a["id"] == "weather_agent").unwrap().clone();
    stay["id"] = json!("stay_agent");
    stay["name"] = json!({ "zh": "住宿延期", "en": "Stay extension" });
    stay["description"] = json!({ "zh": "为已入住的客人延长住宿或延迟退房。", "en": "Extends a current hotel stay or arranges a late checkout." });
    stay["keywords"] = json!([]);
    stay["examples"] = json!(["明天能晚点退房吗", "Can I keep my room until 2pm?"]);
    agents.push(stay);
}
