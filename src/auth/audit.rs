//! The audit log of `write` dispatches (docs/config.md, `auth.audit_log`): one JSON line per call
//! of a `write` agent — `{time, user, verified, agent, task_id, trace_id, inputs_sha256,
//! outcome}` — appended to a file or written to stdout, and flushed before the call's result is
//! recorded, so every line is out before the turn's `done` event.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;
use sha2::{Digest, Sha256};

/// One audit line.
#[derive(Debug, Clone, Serialize)]
pub struct AuditRecord<'a> {
    /// RFC 3339, UTC.
    pub time: String,
    /// The user the sub-task ran for.
    pub user: &'a str,
    /// `true` when the user was verified (a token or a trusted header), `false` in mode `none`.
    pub verified: bool,
    /// The agent id.
    pub agent: &'a str,
    /// The sub-task id.
    pub task_id: &'a str,
    /// The turn's trace id.
    pub trace_id: &'a str,
    /// Hex SHA-256 of the request's `inputs` as sent (compact JSON).
    pub inputs_sha256: String,
    /// `done`, or the failure code (`timeout`, `circuit_open`, `status`, …), or `input_required`.
    pub outcome: &'a str,
}

/// Hex SHA-256 of `inputs` as compact JSON.
pub fn inputs_hash(inputs: &serde_json::Value) -> String {
    let digest = Sha256::digest(inputs.to_string().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes audit lines; holds the open file of the last destination used.
#[derive(Debug, Default)]
pub struct AuditLog {
    file: Mutex<Option<(PathBuf, std::fs::File)>>,
}

impl AuditLog {
    /// Writes `record` as one line to `to` (`None`: stdout; `Some(path)`: that file, appended)
    /// and flushes it. A write failure is logged, never fatal.
    pub fn write(&self, to: Option<&Path>, record: &AuditRecord<'_>) {
        let mut line = serde_json::to_vec(record).unwrap_or_default();
        line.push(b'\n');
        let result = match to {
            None => {
                let mut out = std::io::stdout().lock();
                out.write_all(&line).and_then(|()| out.flush())
            }
            Some(path) => self.append(path, &line),
        };
        if let Err(e) = result {
            tracing::error!(error = %e, "cannot write the audit log");
        }
    }

    fn append(&self, path: &Path, line: &[u8]) -> std::io::Result<()> {
        let mut slot = self.file.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if slot.as_ref().is_none_or(|(p, _)| p != path) {
            let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
            *slot = Some((path.to_path_buf(), file));
        }
        let (_, file) = slot.as_mut().expect("opened above");
        file.write_all(line)?;
        file.flush()
    }
}
