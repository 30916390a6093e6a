//! The tasks of the supervisor's A2A endpoint (docs/http-api.md), in memory: each bound to the
//! user that created it, each with the streams following it.
//!
//! A task's turn runs in the background and reports through [`A2aTasks::update`]; every update is
//! sent, in order, to the task's subscribers (a `SendStreamingMessage` stream, a blocking
//! `SendMessage` waiting for the end, `SubscribeToTask` streams). When the task reaches a terminal
//! or interrupted state (`INPUT_REQUIRED`) its subscribers are dropped, which ends their streams.

use std::collections::HashMap;
use std::sync::Mutex;

use ::a2a::{StreamResponse, Task, TaskState};
use chrono::{DateTime, Utc};
use tokio::sync::mpsc;

/// Tasks kept, at most.
const MAX_TASKS: usize = 10_000;

/// The receiving end of a task's updates; closed when the task stops (terminal or interrupted).
pub(super) type Updates = mpsc::UnboundedReceiver<StreamResponse>;

/// `true` when a task waits for nothing more from its current turn: terminal, or interrupted
/// (`INPUT_REQUIRED`, `AUTH_REQUIRED`).
pub(super) fn stopped(state: &TaskState) -> bool {
    state.is_terminal() || matches!(state, TaskState::InputRequired | TaskState::AuthRequired)
}

struct Entry {
    task: Task,
    owner: String,
    subscribers: Vec<mpsc::UnboundedSender<StreamResponse>>,
}

impl Entry {
    fn broadcast(&mut self, events: Vec<StreamResponse>) {
        for ev in events {
            self.subscribers.retain(|s| s.send(ev.clone()).is_ok());
        }
        if stopped(&self.task.status.state) {
            self.subscribers.clear();
        }
    }
}

/// Why a task cannot be cancelled.
#[derive(Debug, PartialEq, Eq)]
pub enum CancelError {
    /// No such task for this user.
    NotFound,
    /// Already terminal.
    NotCancelable,
}

/// Why a task cannot be subscribed to.
#[derive(Debug, PartialEq, Eq)]
pub enum SubscribeError {
    /// No such task for this user.
    NotFound,
    /// Terminal: nothing more will happen to it.
    Terminal,
}

/// Which tasks `ListTasks` returns: filters, and where the page starts.
#[derive(Debug, Default)]
pub struct ListQuery {
    /// Only this context.
    pub context_id: Option<String>,
    /// Only this state.
    pub status: Option<TaskState>,
    /// Only tasks whose status changed at or after this time.
    pub after: Option<DateTime<Utc>>,
    /// Start after this task (a page token).
    pub cursor: Option<Cursor>,
    /// At most this many.
    pub page_size: usize,
}

/// A position in the listing order (status time, newest first; then task id, descending).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cursor {
    nanos: i64,
    id: String,
}

impl Cursor {
    fn of(task: &Task) -> Self {
        let nanos = task.status.timestamp.and_then(|t| t.timestamp_nanos_opt()).unwrap_or(0);
        Self { nanos, id: task.id.clone() }
    }

    /// The page token naming this position.
    pub fn token(&self) -> String {
        format!("{}_{}", self.nanos, self.id)
    }

    /// The position a page token names, if it is one.
    pub fn parse(token: &str) -> Option<Self> {
        let (nanos, id) = token.split_once('_')?;
        Some(Self { nanos: nanos.parse().ok()?, id: id.to_string() }).filter(|c| !c.id.is_empty())
    }
}

/// A page of tasks.
#[derive(Debug)]
pub struct Page {
    /// The tasks, most recently updated first.
    pub tasks: Vec<Task>,
    /// How many tasks match, over all pages.
    pub total: usize,
    /// Where the next page starts, when there is one.
    pub next: Option<Cursor>,
}

/// A2A tasks served by this supervisor.
#[derive(Default)]
pub struct A2aTasks {
    tasks: Mutex<HashMap<String, Entry>>,
}

impl std::fmt::Debug for A2aTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aTasks").field("tasks", &self.lock().len()).finish()
    }
}

impl A2aTasks {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.tasks.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Who created task `id`, if it exists.
    pub fn owner(&self, id: &str) -> Option<String> {
        self.lock().get(id).map(|e| e.owner.clone())
    }

    /// The task `id` if `user` created it: another user's task does not exist for them.
    pub fn get(&self, id: &str, user: &str) -> Option<Task> {
        self.lock().get(id).filter(|e| e.owner == user).map(|e| e.task.clone())
    }

    /// `user`'s tasks matching `query`, most recently updated first, one page.
    pub fn list(&self, user: &str, query: &ListQuery) -> Page {
        let tasks = self.lock();
        let mut matching: Vec<(Cursor, &Task)> = tasks
            .values()
            .filter(|e| e.owner == user)
            .map(|e| &e.task)
            .filter(|t| query.context_id.as_ref().is_none_or(|c| *c == t.context_id))
            .filter(|t| query.status.as_ref().is_none_or(|s| *s == t.status.state))
            .filter(|t| query.after.is_none_or(|after| t.status.timestamp.is_some_and(|ts| ts >= after)))
            .map(|t| (Cursor::of(t), t))
            .collect();
        let total = matching.len();
        matching.sort_by(|a, b| b.0.cmp(&a.0));
        let start = query.cursor.as_ref().map_or(0, |c| matching.partition_point(|(k, _)| k >= c));
        let page: Vec<&(Cursor, &Task)> = matching[start..].iter().take(query.page_size).collect();
        let next = page.last().filter(|_| start + page.len() < total).map(|(k, _)| k.clone());
        Page { tasks: page.into_iter().map(|(_, t)| (*t).clone()).collect(), total, next }
    }

    /// Stores a new task, or a continued one (same id) starting a new turn, and subscribes to its
    /// updates. Streams already following a continued task keep following it and are told of the
    /// new status.
    pub fn start(&self, task: Task, owner: &str) -> Updates {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut tasks = self.lock();
        if tasks.len() >= MAX_TASKS && !tasks.contains_key(&task.id) {
            // Bounded memory beats old history: terminal tasks go first, then interrupted ones;
            // tasks whose turn is running stay.
            tasks.retain(|_, e| !e.task.status.state.is_terminal());
            if tasks.len() >= MAX_TASKS {
                tasks.retain(|_, e| !stopped(&e.task.status.state));
            }
        }
        let status = StreamResponse::StatusUpdate(::a2a::TaskStatusUpdateEvent {
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            status: task.status.clone(),
            metadata: None,
        });
        let entry = tasks.entry(task.id.clone()).or_insert_with(|| Entry {
            task: task.clone(),
            owner: owner.to_string(),
            subscribers: Vec::new(),
        });
        entry.task = task;
        entry.broadcast(vec![status]);
        entry.subscribers.push(tx);
        rx
    }

    /// The task as it is now and its updates from now on (until it is terminal or interrupted;
    /// a task waiting for input is followed through its next turn).
    ///
    /// # Errors
    /// `SubscribeError`.
    pub fn subscribe(&self, id: &str, user: &str) -> Result<(Task, Updates), SubscribeError> {
        let mut tasks = self.lock();
        let entry = tasks.get_mut(id).filter(|e| e.owner == user).ok_or(SubscribeError::NotFound)?;
        if entry.task.status.state.is_terminal() {
            return Err(SubscribeError::Terminal);
        }
        let (tx, rx) = mpsc::unbounded_channel();
        entry.subscribers.push(tx);
        Ok((entry.task.clone(), rx))
    }

    /// Applies `f` to the task unless it stopped meanwhile (cancelled, or evicted) and sends the
    /// events it returns to the subscribers. Returns `false` when nothing was applied.
    pub fn update(&self, id: &str, f: impl FnOnce(&mut Task) -> Vec<StreamResponse>) -> bool {
        let mut tasks = self.lock();
        let Some(entry) = tasks.get_mut(id).filter(|e| !stopped(&e.task.status.state)) else { return false };
        let events = f(&mut entry.task);
        entry.broadcast(events);
        true
    }

    /// Marks the task `TASK_STATE_CANCELED` (telling its subscribers) and returns it with the
    /// state it had.
    ///
    /// # Errors
    /// `CancelError`.
    pub fn cancel(&self, id: &str, user: &str, status: ::a2a::TaskStatus) -> Result<(Task, TaskState), CancelError> {
        let mut tasks = self.lock();
        let entry = tasks.get_mut(id).filter(|e| e.owner == user).ok_or(CancelError::NotFound)?;
        if entry.task.status.state.is_terminal() {
            return Err(CancelError::NotCancelable);
        }
        let was = std::mem::replace(&mut entry.task.status, status);
        let update = StreamResponse::StatusUpdate(::a2a::TaskStatusUpdateEvent {
            task_id: entry.task.id.clone(),
            context_id: entry.task.context_id.clone(),
            status: entry.task.status.clone(),
            metadata: None,
        });
        entry.broadcast(vec![update]);
        Ok((entry.task.clone(), was.state))
    }
}
