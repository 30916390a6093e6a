//! Sessions: a `(user_id, thread_id)` conversation's short-term memory, collected slots and the
//! pending clarification (DESIGN.md section 7).
//!
//! This store keeps sessions in process memory. A turn holds its session's lock from load to
//! save ([`SessionStore::open`]), so concurrent turns on one thread run one after the other and
//! no write is lost; different threads never wait on each other.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

use crate::planner::SubTask;

/// One finished turn.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Turn {
    /// What the user said.
    pub query: String,
    /// What the supervisor answered (the `done` event's content).
    pub answer: String,
    /// RFC 3339 time of the answer.
    pub at: String,
}

/// Sub-tasks blocked on semantic keys, waiting for the user's next turn.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PendingClarification {
    /// The plan they came from.
    pub plan_id: String,
    /// The blocked sub-tasks, with the inputs known so far.
    pub tasks: Vec<SubTask>,
    /// RFC 3339 time it was opened.
    pub created_at: String,
    /// How many times the user has been asked.
    pub rounds: u32,
}

/// A conversation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Session {
    /// Stable id of this `(user_id, thread_id)` session.
    pub session_id: String,
    /// Owner.
    pub user_id: String,
    /// Thread.
    pub thread_id: String,
    /// The last turns, oldest first (at most `memory_max_history`).
    pub history: Vec<Turn>,
    /// Semantic-key values collected so far (from text, forms and sub-agent outputs).
    pub slots: Map<String, Value>,
    /// The open clarification, if any.
    pub pending: Option<PendingClarification>,
}

impl Session {
    fn new(user_id: &str, thread_id: &str) -> Self {
        Self {
            session_id: format!("sess_{}", uuid::Uuid::new_v4().simple()),
            user_id: user_id.to_string(),
            thread_id: thread_id.to_string(),
            history: Vec::new(),
            slots: Map::new(),
            pending: None,
        }
    }

    /// Appends a turn, keeping at most `max` (at least one).
    pub fn push_turn(&mut self, turn: Turn, max: usize) {
        self.history.push(turn);
        let max = max.max(1);
        if self.history.len() > max {
            let extra = self.history.len() - max;
            self.history.drain(..extra);
        }
    }
}

type Key = (String, String);

/// In-memory session store.
#[derive(Debug, Default)]
pub struct SessionStore {
    sessions: Mutex<HashMap<Key, Arc<AsyncMutex<Session>>>>,
}

impl SessionStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Locks the session of `(user_id, thread_id)`, creating it when absent. Hold the guard for
    /// the whole turn; changes made through it are the saved state.
    pub async fn open(&self, user_id: &str, thread_id: &str) -> OwnedMutexGuard<Session> {
        let cell = {
            let mut map = self.sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            map.entry((user_id.to_string(), thread_id.to_string()))
                .or_insert_with(|| Arc::new(AsyncMutex::new(Session::new(user_id, thread_id))))
                .clone()
        };
        cell.lock_owned().await
    }

    /// Number of sessions held.
    pub fn len(&self) -> usize {
        self.sessions.lock().map(|m| m.len()).unwrap_or(0)
    }

    /// `true` when no session is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
