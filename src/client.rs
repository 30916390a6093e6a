//! `switchboard ask`: a terminal client that streams one chat turn and prints it stage by stage,
//! agent deltas as they arrive, and the widget ids when semantic keys are missing.

use std::io::Write;

use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{json, Map, Value};

/// Why `ask` failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server could not be reached.
    #[error("cannot reach the supervisor: {0}")]
    Http(#[from] reqwest::Error),
    /// The server answered with an error.
    #[error("the supervisor answered {status}: {body}")]
    Status {
        /// HTTP status.
        status: u16,
        /// Body text.
        body: String,
    },
    /// The stream was malformed.
    #[error("bad event stream: {0}")]
    Stream(String),
    /// Writing to the terminal failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// What to send.
#[derive(Debug, Clone)]
pub struct AskOptions {
    /// Base URL of the supervisor, e.g. `http://127.0.0.1:8080`.
    pub url: String,
    /// The user id.
    pub user_id: String,
    /// Continue this thread.
    pub thread_id: Option<String>,
    /// Widget-form values.
    pub slots: Map<String, Value>,
}

/// Sends `query` and renders the stream to `out`. Returns the thread id.
///
/// # Errors
/// [`ClientError`].
pub async fn ask(query: &str, opts: &AskOptions, out: &mut (dyn Write + Send)) -> Result<String, ClientError> {
    let mut body = json!({ "query": query, "user_id": opts.user_id });
    if let Some(t) = &opts.thread_id {
        body["thread_id"] = json!(t);
    }
    if !opts.slots.is_empty() {
        body["slots"] = Value::Object(opts.slots.clone());
    }
    let url = format!("{}/v1/chat", opts.url.trim_end_matches('/'));
    let resp = reqwest::Client::new().post(url).header("accept", "text/event-stream").json(&body).send().await?;
    if !resp.status().is_success() {
        let status = resp.status().as_u16();
        return Err(ClientError::Status { status, body: resp.text().await.unwrap_or_default() });
    }
    let mut thread_id = opts.thread_id.clone().unwrap_or_default();
    let mut events = resp.bytes_stream().eventsource();
    // Inside a run of deltas whose last one did not end a line.
    let mut open_line = false;
    while let Some(ev) = events.next().await {
        let ev = ev.map_err(|e| ClientError::Stream(e.to_string()))?;
        let data: Value = serde_json::from_str(&ev.data).map_err(|e| ClientError::Stream(e.to_string()))?;
        if let Some(t) = data["thread_id"].as_str() {
            thread_id = t.to_string();
        }
        let content = data["content"].as_str().unwrap_or_default();
        let stage = data["stage"].as_str().unwrap_or_default();
        if stage != "agent_delta" && open_line {
            writeln!(out)?;
            open_line = false;
        }
        match stage {
            "agent_delta" => {
                // Deltas may be tokens or sentences: print them as they come; a sentence ends a line.
                if !open_line {
                    write!(out, "    … ")?;
                }
                write!(out, "{content}")?;
                open_line = !content.ends_with(['。', '.', '!', '！', '?', '？', '…']);
                if !open_line {
                    writeln!(out)?;
                }
            }
            "agent_started" => writeln!(out, "  ▸ {content}")?,
            "agent_done" => writeln!(out, "  ✓ {content}")?,
            "agent_failed" => writeln!(out, "  ✗ {content}")?,
            "blocked" => {
                writeln!(out, "  ⏸ {}", content.replace('\n', "\n    "))?;
                for info in data["metadata"]["semantic_info"].as_array().into_iter().flatten() {
                    let keys = info["keys"].as_array().into_iter().flatten();
                    let widgets = info["fe_widgets_suggestion"].as_array().into_iter().flatten();
                    for (k, w) in keys.zip(widgets) {
                        let w = w.as_str().filter(|w| !w.is_empty()).unwrap_or("(no widget)");
                        writeln!(
                            out,
                            "      {} [{}] -> widget {w}",
                            k.as_str().unwrap_or_default(),
                            info["type"].as_str().unwrap_or_default()
                        )?;
                    }
                }
            }
            "answer" | "escalated" | "error" => {
                let mark = match stage {
                    "escalated" => "⚑ ",
                    "error" => "! ",
                    _ => "",
                };
                writeln!(out, "\n{mark}{content}")?;
            }
            _ => writeln!(out, "· {content}")?,
        }
        out.flush()?;
    }
    if open_line {
        writeln!(out)?;
    }
    writeln!(out, "\n(thread {thread_id}: continue with --thread {thread_id})")?;
    Ok(thread_id)
}
