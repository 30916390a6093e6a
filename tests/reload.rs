//! Hot reload over real files: add, change, disable an agent; an invalid edit keeps the last good
//! registry; a Kubernetes-style `..data` symlink swap; the admin endpoint.

use std::path::Path;

use serde_json::{json, Value};

use crate::common::*;

#[tokio::test]
async fn adding_changing_and_disabling_an_agent_is_picked_up() {
    let app = spawn_app().await;
    assert_eq!(app.get("/v1/config").await["version"], 1);

    // Add: a second weather agent reached by a new keyword, served by the weather sample.
    let mut cfg = app.config.clone();
    let mut extra = agent_mut(&mut cfg, "weather_agent").clone();
    extra["id"] = json!("air_quality_agent");
    extra["name"] = json!("空气质量");
    extra["description"] = json!("查询城市空气质量。");
    extra["keywords"] = json!(["空气质量", "air quality"]);
    cfg["agents"].as_array_mut().unwrap().push(extra);
    app.rewrite(&cfg);
    app.wait_config(|s| s["version"] == 2).await;
    let agents = app.get("/v1/agents").await;
    assert!(agents["agents"].as_array().unwrap().iter().any(|a| a["id"] == "air_quality_agent"));
    assert_eq!(agents["version"], 2);
    let events = app.ask("北京空气质量怎么样", None).await;
    done(&events);
    assert_eq!(app.calls("weather_agent").len(), 1, "the new card is planned and dispatched");
    assert_eq!(of_stage(&events, "agent_done")[0]["agent_id"], "air_quality_agent");

    // Change: the weather agent gains a keyword.
    agent_mut(&mut cfg, "weather_agent")["keywords"].as_array_mut().unwrap().push(json!("下雪"));
    app.rewrite(&cfg);
    app.wait_config(|s| s["version"] == 3).await;
    done(&app.ask("上海会下雪吗", None).await);
    assert_eq!(app.calls("weather_agent").len(), 2);

    // Disable: no longer planned; the answer says what is possible instead.
    agent_mut(&mut cfg, "weather_agent")["enabled"] = json!(false);
    agent_mut(&mut cfg, "air_quality_agent")["enabled"] = json!(false);
    app.rewrite(&cfg);
    app.wait_config(|s| s["version"] == 4).await;
    let events = app.ask("上海会下雪吗", None).await;
    done(&events);
    assert!(of_stage(&events, "agent_started").is_empty());
    assert_eq!(app.calls("weather_agent").len(), 2);
    let listed = app.get("/v1/agents").await;
    let weather = listed["agents"].as_array().unwrap().iter().find(|a| a["id"] == "weather_agent").unwrap().clone();
    assert_eq!(weather["enabled"], false, "disabled agents stay registered");

    // Delete: gone from the registry.
    cfg["agents"].as_array_mut().unwrap().retain(|a| a["id"] != "air_quality_agent");
    app.rewrite(&cfg);
    app.wait_config(|s| s["version"] == 5).await;
    let listed = app.get("/v1/agents").await;
    assert!(!listed["agents"].as_array().unwrap().iter().any(|a| a["id"] == "air_quality_agent"));
}

#[tokio::test]
async fn an_invalid_edit_keeps_the_last_good_registry() {
    let app = spawn_app().await;
    std::fs::write(&app.config_path, "version: 1\nagents:\n  - id: [broken\n").unwrap();
    let status = app.wait_config(|s| !s["last_error"].is_null()).await;
    assert_eq!(status["version"], 1, "still serving the last good snapshot");
    assert!(status["reloads_failed"].as_u64().unwrap() >= 1);
    assert!(status["last_error"][0]["line"].is_u64(), "{status}");
    // Still serving.
    done(&app.ask("上海天气怎么样", None).await);
    assert_eq!(app.calls("weather_agent").len(), 1);

    // A schema-invalid edit is rejected too, with a pointer.
    let mut cfg = app.config.clone();
    cfg["agents"][0]["endpoint"]["protocol"] = json!("smoke-signals");
    app.rewrite(&cfg);
    let status = app.wait_config(|s| s["last_error"][0]["pointer"] == "/agents/0/endpoint/protocol").await;
    assert_eq!(status["version"], 1);

    // The next valid edit is picked up and clears the error.
    let mut cfg = app.config.clone();
    cfg["supervisor"]["max_parallel_tasks"] = json!(4);
    app.rewrite(&cfg);
    let status = app.wait_config(|s| s["version"] == 2).await;
    assert!(status["last_error"].is_null());
}

#[cfg(unix)]
#[tokio::test]
async fn a_kubernetes_style_data_symlink_swap_is_picked_up() {
    use std::os::unix::fs::symlink;

    let app = spawn_app_with(Setup::default(), |_| {}).await;
    // Lay out a ConfigMap volume: ..<ts>/files, ..data -> ..<ts>, names -> ..data/name.
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let v1 = r.join("..2026_11_23_v1");
    std::fs::create_dir(&v1).unwrap();
    copy_support_files(&v1);
    write_config(&v1.join("agents_config.yaml"), &app.config);
    symlink("..2026_11_23_v1", r.join("..data")).unwrap();
    for name in ["agents_config.yaml", "widgets_map.json", "schemas"] {
        symlink(Path::new("..data").join(name), r.join(name)).unwrap();
    }
    let state = switchboard::app::build_state(
        &r.join("agents_config.yaml"),
        switchboard::app::AppOptions { watch_files: true, today: Some(test_today()), ..Default::default() },
    )
    .await
    .unwrap();
    assert_eq!(state.supervisor.registry.load().version, 1);

    // The kubelet writes a new timestamped dir, points ..data_tmp at it and renames over ..data.
    let v2 = r.join("..2026_11_23_v2");
    std::fs::create_dir(&v2).unwrap();
    copy_support_files(&v2);
    let mut cfg = app.config.clone();
    agent_mut(&mut cfg, "hotel_agent")["enabled"] = json!(false);
    write_config(&v2.join("agents_config.yaml"), &cfg);
    symlink("..2026_11_23_v2", r.join("..data_tmp")).unwrap();
    std::fs::rename(r.join("..data_tmp"), r.join("..data")).unwrap();
    std::fs::remove_dir_all(&v1).unwrap();

    for _ in 0..200 {
        if state.supervisor.registry.load().version == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let reg = state.supervisor.registry.load();
    assert_eq!(reg.version, 2, "the swap was picked up");
    assert!(!reg.get("hotel_agent").unwrap().spec.enabled);
}

#[tokio::test]
async fn a_request_keeps_its_snapshot_across_a_reload() {
    use std::time::Duration;
    let mut options = std::collections::HashMap::new();
    options.insert("weather_agent", switchboard_demo::SampleOptions { delay: Duration::from_millis(400) });
    let app = spawn_app_with(Setup { options, watch_files: true, ..Default::default() }, |_| {}).await;
    let asking = app.ask("上海天气怎么样", None);
    let reload = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut cfg = app.config.clone();
        agent_mut(&mut cfg, "weather_agent")["enabled"] = json!(false);
        app.rewrite(&cfg);
        app.wait_config(|s| s["version"] == 2).await;
    };
    let (events, ()) = tokio::join!(asking, reload);
    let done = done(&events);
    assert_eq!(of_stage(&events, "agent_done").len(), 1, "the in-flight request finished on its snapshot: {done}");
}

#[tokio::test]
async fn the_admin_endpoint_reloads_with_a_token() {
    // No file watching: only the explicit request reloads.
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let url = format!("{}/v1/admin/reload", app.base);
    let resp = app.client.post(&url).send().await.unwrap();
    assert_eq!(resp.status(), 401);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "unauthorized");
    let resp = app.client.post(&url).bearer_auth("wrong").send().await.unwrap();
    assert_eq!(resp.status(), 401);

    let resp = app.client.post(&url).bearer_auth("test-admin").send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.json::<Value>().await.unwrap()["version"], 1);

    let mut cfg = app.config.clone();
    cfg["supervisor"]["max_parallel_tasks"] = json!(3);
    app.rewrite(&cfg);
    let resp = app.client.post(&url).bearer_auth("test-admin").send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let outcome: Value = resp.json().await.unwrap();
    // `unchanged` only if the SIGHUP test of this same process reloaded first.
    assert!(matches!(outcome["outcome"].as_str(), Some("swapped" | "unchanged")), "{outcome}");
    assert_eq!(outcome["version"], 2);
    assert_eq!(app.get("/v1/config").await["version"], 2);
}

#[cfg(unix)]
#[tokio::test]
async fn sighup_reloads() {
    // No file watching: the signal alone triggers the reload.
    let app = spawn_app_with(Setup::default(), |_| {}).await;
    let mut cfg = app.config.clone();
    cfg["supervisor"]["max_parallel_tasks"] = json!(2);
    app.rewrite(&cfg);
    let status = std::process::Command::new("kill").args(["-HUP", &std::process::id().to_string()]).status().unwrap();
    assert!(status.success());
    app.wait_config(|s| s["version"] == 2).await;
}

#[tokio::test]
async fn an_invalid_file_is_one_failed_reload_until_its_content_changes() {
    // Issue 12 #7: reading the files is itself a file event, so one invalid file was reloaded,
    // counted and logged again and again.
    let app = spawn_app().await;
    let broken = "version: 1\nagents:\n  - id: [broken\n";
    std::fs::write(&app.config_path, broken).unwrap();
    let status = app.wait_config(|s| !s["last_error"].is_null()).await;
    assert_eq!(status["reloads_failed"], 1, "{status}");
    // Ten debounce periods later it is still one failure.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let status = app.get("/v1/config").await;
    assert_eq!(status["reloads_failed"], 1, "reloaded again without a change: {status}");

    // The same content written again is looked at, but it is not another failure.
    let attempted = status["last_attempt_at"].clone();
    std::fs::write(&app.config_path, broken).unwrap();
    let status = app.wait_config(|s| s["last_attempt_at"] != attempted).await;
    assert_eq!(status["reloads_failed"], 1, "{status}");
    assert!(!status["last_error"].is_null(), "the error is still shown: {status}");

    // Different invalid content is a new failure, once.
    std::fs::write(&app.config_path, "version: 1\nagents: [\n").unwrap();
    let status = app.wait_config(|s| s["reloads_failed"] == 2).await;
    assert_eq!(status["version"], 1);
    tokio::time::sleep(std::time::Duration::from_millis(1000)).await;
    assert_eq!(app.get("/v1/config").await["reloads_failed"], 2);

    // A valid edit is picked up.
    let mut cfg = app.config.clone();
    cfg["supervisor"]["max_parallel_tasks"] = json!(4);
    app.rewrite(&cfg);
    let status = app.wait_config(|s| s["version"] == 2).await;
    assert!(status["last_error"].is_null());
    assert_eq!(status["reloads_ok"], 1);
}

#[tokio::test]
async fn saving_in_place_is_one_good_reload_not_a_failure() {
    // Issue 17 #16: an editor saving in place truncates first; the reload saw an empty file,
    // logged "file is empty" and counted failed reloads.
    use std::io::Write;
    let app = spawn_app().await;
    let mut cfg = app.config.clone();
    cfg["supervisor"]["max_parallel_tasks"] = json!(3);
    let text = serde_yaml_ng::to_string(&cfg).unwrap();
    let mut file = std::fs::OpenOptions::new().write(true).truncate(true).open(&app.config_path).unwrap();
    file.flush().unwrap();
    // Past the debounce: the watcher sees the empty file before the rest is written.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    file.write_all(text.as_bytes()).unwrap();
    file.sync_all().unwrap();
    drop(file);
    let status = app.wait_config(|s| s["version"] == 2).await;
    assert_eq!(status["reloads_failed"], 0, "{status}");
    assert!(status["last_error"].is_null(), "{status}");
    // And it stays that way.
    tokio::time::sleep(std::time::Duration::from_millis(1000)).await;
    let status = app.get("/v1/config").await;
    assert_eq!((status["reloads_failed"].as_u64(), status["version"].as_u64()), (Some(0), Some(2)), "{status}");
}

#[tokio::test]
async fn files_next_to_the_config_that_it_does_not_read_cause_no_reload() {
    // Issue 17 #16: the default SQLite sessions file lives next to the config; its writes (and
    // SQLite's side files) triggered reload attempts once a reload had failed.
    let dir = tempfile::tempdir().unwrap();
    copy_support_files(dir.path());
    let config_path = dir.path().join("agents_config.yaml");
    let config = repo_config();
    write_config(&config_path, &config);
    let store = format!("sqlite://{}", dir.path().join("switchboard-sessions.db").display());
    let state = switchboard::app::build_state(
        &config_path,
        switchboard::app::AppOptions { watch_files: true, store, ..Default::default() },
    )
    .await
    .unwrap();
    let registry = state.supervisor.registry.clone();
    let status = || registry.status();
    std::fs::write(&config_path, "version: 1\nagents: [\n").unwrap();
    wait_status(&registry, |s| s.reloads_failed == 1).await;
    let attempted = status().last_attempt_at;

    // Turns write the sessions file; another file comes and goes in the directory.
    for query in ["你好", "谢谢", "你能做什么"] {
        let req = switchboard::supervisor::TurnRequest {
            query: query.into(),
            user_id: "u1".into(),
            thread_id: Some("reload-thread".into()),
            slots: serde_json::Map::new(),
            trace_id: None,
            cancel: false,
            principal: None,
        };
        let mut turn = state.supervisor.start_turn(req);
        while turn.events.recv().await.is_some() {}
    }
    std::fs::write(dir.path().join("switchboard-sessions.db-journal"), b"x").unwrap();
    std::fs::remove_file(dir.path().join("switchboard-sessions.db-journal")).unwrap();
    // Ten debounce periods later: no attempt was made.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let now = status();
    assert_eq!(now.last_attempt_at, attempted, "a reload was attempted: {now:?}");
    assert_eq!(now.reloads_failed, 1);

    // The config itself still counts.
    let mut config = config;
    config["supervisor"]["max_parallel_tasks"] = json!(3);
    write_config(&config_path, &config);
    wait_status(&registry, |s| s.reloads_ok == 1).await;
}

/// Waits (bounded) until the reload status satisfies `pred`.
async fn wait_status(
    registry: &switchboard::registry::RegistryHandle,
    pred: impl Fn(&switchboard::registry::ReloadStatus) -> bool,
) {
    for _ in 0..200 {
        if pred(&registry.status()) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("reload status never matched: {:?}", registry.status());
}
