//! The README followed literally: `switchboard demo` (its sample agents moved with
//! `--agents-port-base`, so the test runs next to anything on 9101-9105) and the README's `ask`
//! examples run as written, each `<thread id printed above>` filled with the thread id the command
//! before printed.

use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::common::*;

/// The `cargo run --release -- ask …` lines of the README's "With the demo running" block.
fn readme_ask_lines() -> Vec<String> {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let block = readme.split("With the demo running, in another terminal:").nth(1).expect("the demo section");
    let block = block.split("```sh").nth(1).unwrap().split("```").next().unwrap();
    block.lines().filter_map(|l| l.trim().strip_prefix("cargo run --release -- ")).map(str::to_string).collect()
}

/// A command line as a shell splits it (double quotes, `<placeholder with spaces>` as one word),
/// without its trailing `# comment`.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            ' ' => {
                chars.next();
            }
            '#' => break,
            '"' | '<' => {
                let close = if c == '"' { '"' } else { '>' };
                chars.next();
                let word: String = chars.by_ref().take_while(|&x| x != close).collect();
                out.push(if c == '<' { format!("<{word}>") } else { word });
            }
            _ => {
                let mut word = String::new();
                while let Some(&x) = chars.peek().filter(|x| **x != ' ') {
                    word.push(x);
                    chars.next();
                }
                out.push(word);
            }
        }
    }
    out
}

#[test]
fn command_lines_split_as_a_shell_would() {
    assert_eq!(
        words(r#"ask "" --thread <thread id printed above> --slot city=上海   # as a form would"#),
        ["ask", "", "--thread", "<thread id printed above>", "--slot", "city=上海"]
    );
}

/// Runs `switchboard <args>` against `base`; returns its output and the thread id it printed.
async fn ask(args: &[String], base: &str) -> (String, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(args)
        .args(["--url", base])
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{args:?}: {text}{}", String::from_utf8_lossy(&out.stderr));
    let thread = text.rsplit("(thread ").next().and_then(|t| t.split(':').next()).unwrap_or_default().to_string();
    (text, thread)
}

#[tokio::test]
async fn the_readme_examples_work_as_written_against_the_demo() {
    // Issue 17 #20: the banner suggested a debug build, the sample agents' ports could not be
    // moved, and example 4 reused the thread example 3 had finished ("outside what I can handle").
    let dir = tempfile::tempdir().unwrap();
    copy_support_files(dir.path());
    let config = dir.path().join("agents_config.yaml");
    write_config(&config, &repo_config());
    let mut demo = tokio::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["demo", "--listen", "127.0.0.1:0", "--agents-port-base", "0", "--store", "memory://", "--config"])
        .arg(&config)
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(demo.stdout.take().unwrap()).lines();
    let (mut base, mut agents) = (String::new(), Vec::new());
    let banner = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let line = lines.next_line().await.unwrap().expect("the demo's banner");
            if let Some(rest) = line.strip_prefix("Switchboard demo: supervisor on ") {
                base = rest.split(' ').next().unwrap().to_string();
            } else if let Some(url) = line.trim().strip_prefix("sample sub-agent at ") {
                agents.push(url.to_string());
            } else if line.starts_with("Try:") {
                return line;
            }
        }
    })
    .await
    .expect("the demo starts");
    assert!(banner.contains("cargo run --release -- ask"), "a release build, as the README: {banner}");
    assert_eq!(agents.len(), 5, "{agents:?}");
    for url in &agents {
        let port: u16 = url.rsplit(':').next().unwrap().split('/').next().unwrap().parse().unwrap();
        assert!(!(9101..=9105).contains(&port), "moved off the config's ports: {url}");
    }

    let examples = readme_ask_lines();
    assert_eq!(examples.len(), 5, "{examples:?}");
    let mut outputs = Vec::new();
    let mut last_thread = String::new();
    for line in &examples {
        let args: Vec<String> =
            words(line).into_iter().map(|w| if w.starts_with('<') { last_thread.clone() } else { w }).collect();
        let (text, thread) = ask(&args, &base).await;
        last_thread = thread;
        outputs.push(text);
    }
    let done = |text: &str| text.matches("  ✓ ").count();
    let blocked = |text: &str| text.contains("  ⏸ ");
    assert_eq!(done(&outputs[0]), 2, "flight, then pickup: {}", outputs[0]);
    assert!(blocked(&outputs[1]) && done(&outputs[1]) == 0, "asks for city and date: {}", outputs[1]);
    assert!(!blocked(&outputs[2]) && done(&outputs[2]) == 1, "the values finish the booking: {}", outputs[2]);
    assert!(blocked(&outputs[3]), "a new blocked request: {}", outputs[3]);
    assert!(!blocked(&outputs[4]) && done(&outputs[4]) == 1, "the form values finish it: {}", outputs[4]);

    // The sessions are the user's (`ask --user`): another user does not see the thread.
    let other = reqwest::get(format!("{base}/v1/sessions/{last_thread}?user_id=someone-else")).await.unwrap();
    assert_eq!(other.status(), 404);
    let mine: Value =
        reqwest::get(format!("{base}/v1/sessions/{last_thread}?user_id=cli-user")).await.unwrap().json().await.unwrap();
    assert_eq!(mine["history"].as_array().map(Vec::len), Some(2), "{mine}");
    demo.kill().await.unwrap();
}
