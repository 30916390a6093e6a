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

    /// The task `id` if `user` created it: another user's task does not exist for them.
    pub fn get(&self, id: &str, user: &str) -> Option<Task> {
        self.lock().get(id).filter(|e| e.owner == user).map(|e| e.task.clone())
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
    /// [`SubscribeError`].
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
    /// [`CancelError`].
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
