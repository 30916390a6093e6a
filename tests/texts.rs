//! The texts users read: `supervisor.texts_dir` overrides single messages of the shipped catalog,
//! is validated like the rest of the config (file and line), and hot-reloads with it.

use std::path::Path;

use serde_json::json;
use switchboard::config;

use crate::common::*;

/// Writes `text` to `dir/rel` atomically (temp file + rename, as editors do).
fn write_ftl(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let tmp = path.with_extension("ftl.tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
}

fn started_texts(events: &[serde_json::Value]) -> Vec<&str> {
    of_stage(events, "agent_started").iter().map(|e| e["content"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn an_override_is_served_and_an_edit_of_it_hot_reloads() {
    let texts = tempfile::tempdir().unwrap();
    write_ftl(
        texts.path(),
        "en/mine.ftl",
        "stage-dispatch-started-values = Calling on { $task } with { $values } now…\n",
    );
    let dir = texts.path().display().to_string();
    let app = spawn_app_with(Setup { watch_files: true, ..Default::default() }, |cfg| {
        cfg["supervisor"]["texts_dir"] = json!(dir);
    })
    .await;

    let events = app.ask("book a hotel in Beijing tomorrow", None).await;
    done(&events);
    let started = started_texts(&events);
    assert_eq!(started.len(), 1, "{events:#?}");
    assert!(started[0].starts_with("Calling on ") && started[0].ends_with(" now…"), "the override: {started:?}");
    assert!(done(&events)["content"].as_str().unwrap().starts_with("Done:"), "other messages stay shipped");
    let events = app.ask("上海天气怎么样", None).await;
    assert!(started_texts(&events)[0].starts_with("正在为您办理"), "other locales stay shipped");

    // Edit the override: the next turn reads the new text.
    write_ftl(texts.path(), "en/mine.ftl", "stage-dispatch-started-values = Asking about { $task }…\n");
    app.wait_config(|s| s["version"] == 2).await;
    let events = app.ask("book a hotel in Beijing tomorrow", None).await;
    done(&events);
    assert!(started_texts(&events)[0].starts_with("Asking about "), "reloaded: {:?}", started_texts(&events));

    // A broken edit is rejected with its file and line; the last good texts keep serving.
    write_ftl(
        texts.path(),
        "en/mine.ftl",
        "stage-dispatch-started-values = Asking about { $task }…\nno-such-text = x\n",
    );
    let status = app.wait_config(|s| !s["last_error"].is_null()).await;
    assert_eq!(status["version"], 2);
    let error = &status["last_error"][0];
    assert!(error["file"].as_str().unwrap().ends_with("mine.ftl"), "{status}");
    assert_eq!(error["line"], 2, "{status}");
    let events = app.ask("book a hotel in Beijing tomorrow", None).await;
    assert!(started_texts(&events)[0].starts_with("Asking about "), "still the last good texts");
}

#[tokio::test]
async fn an_operator_lexicon_file_adds_words_and_hot_reloads() {
    // Issue 17 #12: the word lists of simple intents live with the texts, so operators extend
    // them like the texts.
    let texts = tempfile::tempdir().unwrap();
    let write = |text: &str| {
        let tmp = texts.path().join("lexicons.txt.tmp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, texts.path().join("lexicons.txt")).unwrap();
    };
    write("# ours\ncancel: 撤销\n");
    let dir = texts.path().display().to_string();
    let app = spawn_app_with(Setup { watch_files: true, ..Default::default() }, |cfg| {
        cfg["supervisor"]["texts_dir"] = json!(dir);
    })
    .await;
    let pending = |events: &[serde_json::Value]| !done(events)["metadata"]["semantic_info"].is_null();
    let cancelled = |events: &[serde_json::Value]| done(events)["metadata"]["state"]["cancelled"].clone();

    let th = thread(&app.ask("帮我订个酒店", None).await);
    let events = app.ask("撤销", Some(&th)).await;
    assert!(!cancelled(&events).is_null(), "the operator's cancel word cancels: {:#}", done(&events));
    let th = thread(&app.ask("帮我订个酒店", None).await);
    let events = app.ask("退出", Some(&th)).await;
    assert!(!cancelled(&events).is_null(), "the shipped words stay");

    // An edit hot-reloads.
    write("cancel: 撤销, 作废\n");
    app.wait_config(|s| s["version"] == 2).await;
    let th = thread(&app.ask("帮我订个酒店", None).await);
    let events = app.ask("作废", Some(&th)).await;
    assert!(!cancelled(&events).is_null(), "reloaded: {:#}", done(&events));

    // A broken file is rejected with its line; the last good lists keep serving.
    write("cancel: 撤销, 作废\nfarewell: 再见\n");
    let status = app.wait_config(|s| !s["last_error"].is_null()).await;
    assert_eq!(status["version"], 2);
    let error = &status["last_error"][0];
    assert!(error["file"].as_str().unwrap().ends_with("lexicons.txt"), "{status}");
    assert_eq!(error["line"], 2, "{status}");
    assert!(error["message"].as_str().unwrap().contains("farewell"), "{status}");
    let th = thread(&app.ask("帮我订个酒店", None).await);
    let events = app.ask("作废", Some(&th)).await;
    assert!(!cancelled(&events).is_null() && !pending(&events), "still the last good lists");
}

#[test]
fn texts_dir_is_relative_to_the_config_and_every_problem_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    copy_support_files(dir.path());
    let mut cfg = repo_config();
    cfg["supervisor"]["texts_dir"] = json!("texts");
    let path = dir.path().join("agents_config.yaml");
    write_config(&path, &cfg);

    let errors = config::load(&path).unwrap_err().0;
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0].pointer.as_deref(), Some("/supervisor/texts_dir"), "{errors:#?}");
    assert!(errors[0].message.contains("is not a directory"), "{errors:#?}");

    let texts = dir.path().join("texts");
    write_ftl(&texts, "zh-CN/answers.ftl", "# 客服口吻\nsummary-done-header = 已经帮您办好：\n");
    let loaded = config::load(&path).unwrap_or_else(|e| panic!("{:#?}", e.0));
    assert!(loaded.sources.iter().any(|s| s.ends_with("texts/zh-CN/answers.ftl")), "watched for hot reload");
    let shipped = {
        let mut cfg = cfg.clone();
        cfg["supervisor"].as_object_mut().unwrap().remove("texts_dir");
        write_config(&path, &cfg);
        config::load(&path).unwrap()
    };
    assert_ne!(loaded.hash, shipped.hash, "an override is a new registry version");
    assert_eq!(
        loaded.texts.get(switchboard::text::Lang::Zh, "summary-done-header", &[]),
        "已经帮您办好：",
        "the snapshot's texts carry the override"
    );

    write_config(&path, &cfg);
    write_ftl(&texts, "en/broken.ftl", "summary-done-header = Done { $when }:\n\nsummary-nothing = { $x\n");
    write_ftl(&texts, "fr/answers.ftl", "summary-nothing = Rien à faire.\n");
    let errors = config::load(&path).unwrap_err().0;
    let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
    let has = |needle: &str| shown.iter().any(|s| s.contains(needle));
    assert!(has("en/broken.ftl:1:1: `summary-done-header` uses $when"), "{shown:#?}");
    assert!(has("en/broken.ftl:4:1: Fluent syntax"), "{shown:#?}");
    assert!(has("\"fr\" is not a locale of the catalog"), "{shown:#?}");
    assert_eq!(errors.len(), 3, "{shown:#?}");
}
