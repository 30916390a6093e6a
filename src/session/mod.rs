//! Sessions: a `(user_id, thread_id)` conversation's short-term memory, collected slots, pending
//! clarification, consecutive-failure count and current intent (docs/conversation.md).
//!
//! [`SessionStore`] puts one [`SessionBackend`] behind a per-thread lock:
//! - `memory://` — process memory (tests, throw-away runs);
//! - `sqlite://PATH` — the embedded default: a durable local file that survives a restart
//!   ([`sqlite`], rusqlite with bundled SQLite);
//! - `redis://…` — shared by several replicas ([`redis`], with a per-thread distributed lock).
//!
//! A turn [`SessionStore::open_within`]s its session (taking the thread's lock, so concurrent
//! turns on one thread run one after the other, across replicas too; the wait ends at the turn's
//! deadline, and past a queue depth a turn is refused at once), changes it, and
//! [`SessionGuard::save`]s it once. A save writes the whole session document, so a retried save
//! of the same turn never duplicates it; turns also carry ids and are appended once. Sessions
//! expire `ttl` after their last save.

pub mod memory;
pub mod redis;
pub mod sqlite;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

use crate::conversation::{Conversation, ConversationState, Escalation, PendingChoice, PendingClarification};
use crate::text::Lang;

/// One finished turn of the short-term memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// Unique per turn: a retried save never appends it twice.
    #[serde(default)]
    pub turn_id: String,
    /// What the user said.
    pub query: String,
    /// What the supervisor answered (the `done` event's content).
    pub answer: String,
    /// When it was answered (RFC 3339 on the wire).
    #[serde(with = "crate::conversation::rfc3339")]
    pub at: DateTime<Utc>,
    /// The turn was cut off by a shutdown before it finished (`answer` is then empty and the
    /// rest of the session is as it was before the turn). Absent when `false`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

/// A conversation: `(user_id, thread_id)`, its memory and its lifecycle state.
///
/// Stored (and shown by `GET /v1/sessions/{thread_id}`) as the flat document of
/// docs/conversation.md: `pending` is the clarification of [`ConversationState::AwaitingKeys`],
/// `escalated` (an extension, absent unless escalated) the hand-over of
/// [`ConversationState::Escalated`], `choice` (an extension, absent unless asked) the did-you-mean
/// question of [`ConversationState::AwaitingIntent`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "SessionDoc", into = "SessionDoc")]
pub struct Session {
    /// Stable id of this `(user_id, thread_id)` session ([`session_id`]).
    pub session_id: String,
    /// Owner.
    pub user_id: String,
    /// Thread.
    pub thread_id: String,
    /// The last turns, oldest first (at most `memory_max_history`).
    pub history: Vec<HistoryEntry>,
    /// Semantic-key values collected so far (from text, forms and sub-agent outputs).
    pub slots: Map<String, Value>,
    /// The lifecycle: state, failure count, last intent.
    pub conversation: Conversation,
    /// When it was last saved.
    pub updated_at: DateTime<Utc>,
    /// The conversation's language: its first confident detection, changed only by a clearly
    /// different-language sentence ([`Lang::confident`]); `None` in sessions stored before it.
    pub lang: Option<Lang>,
}

/// The stored form of a [`Session`].
#[derive(Serialize, Deserialize)]
struct SessionDoc {
    session_id: String,
    user_id: String,
    thread_id: String,
    history: Vec<HistoryEntry>,
    slots: Map<String, Value>,
    pending: Option<PendingClarification>,
    #[serde(default)]
    failures: u32,
    #[serde(default)]
    current_intent: Vec<String>,
    #[serde(default)]
    current_query: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    escalated: Option<Escalation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    choice: Option<PendingChoice>,
    #[serde(default = "crate::conversation::rfc3339::epoch", with = "crate::conversation::rfc3339")]
    updated_at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lang: Option<Lang>,
}

impl From<SessionDoc> for Session {
    fn from(d: SessionDoc) -> Self {
        let state = match (d.pending, d.choice, d.escalated) {
            (Some(p), _, _) => ConversationState::AwaitingKeys(p),
            (None, Some(c), _) => ConversationState::AwaitingIntent(c),
            (None, None, Some(e)) => ConversationState::Escalated(e),
            (None, None, None) => ConversationState::Idle,
        };
        Self {
            session_id: d.session_id,
            user_id: d.user_id,
            thread_id: d.thread_id,
            history: d.history,
            slots: d.slots,
            conversation: Conversation {
                state,
                failures: d.failures,
                last_intent: d.current_intent,
                last_query: d.current_query,
            },
            updated_at: d.updated_at,
            lang: d.lang,
        }
    }
}

impl From<Session> for SessionDoc {
    fn from(s: Session) -> Self {
        let (pending, choice, escalated) = match s.conversation.state {
            ConversationState::Idle => (None, None, None),
            ConversationState::AwaitingKeys(p) => (Some(p), None, None),
            ConversationState::AwaitingIntent(c) => (None, Some(c), None),
            ConversationState::Escalated(e) => (None, None, Some(e)),
        };
        Self {
            session_id: s.session_id,
            user_id: s.user_id,
            thread_id: s.thread_id,
            history: s.history,
            slots: s.slots,
            pending,
            failures: s.conversation.failures,
            current_intent: s.conversation.last_intent,
            current_query: s.conversation.last_query,
            escalated,
            choice,
            updated_at: s.updated_at,
            lang: s.lang,
        }
    }
}

/// `sess_` + 24 hex digits of SHA-256 over `user_id` and `thread_id`: stable per session.
pub fn session_id(user_id: &str, thread_id: &str) -> String {
    let digest = Sha256::new()
        .chain_update(user_id.as_bytes())
        .chain_update([0u8])
        .chain_update(thread_id.as_bytes())
        .finalize();
    let hex: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
    format!("sess_{hex}")
}

impl Session {
    /// A new, empty session.
    pub fn new(user_id: &str, thread_id: &str) -> Self {
        Self {
            session_id: session_id(user_id, thread_id),
            user_id: user_id.to_string(),
            thread_id: thread_id.to_string(),
            history: Vec::new(),
            slots: Map::new(),
            conversation: Conversation::default(),
            updated_at: DateTime::<Utc>::UNIX_EPOCH,
            lang: None,
        }
    }

    /// Appends a turn unless a turn with the same id is already there, keeping at most `max`.
    pub fn push_turn(&mut self, turn: HistoryEntry, max: usize) {
        if !turn.turn_id.is_empty() && self.history.iter().any(|t| t.turn_id == turn.turn_id) {
            return;
        }
        self.history.push(turn);
        let max = max.max(1);
        if self.history.len() > max {
            let extra = self.history.len() - max;
            self.history.drain(..extra);
        }
    }
}

/// Why the store failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store URL is not one of `memory://`, `sqlite://PATH`, `redis://…`.
    #[error("unsupported session store {0:?}: use memory://, sqlite://PATH or redis://HOST:PORT")]
    Url(String),
    /// SQLite failed.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// Redis failed.
    #[error("redis: {0}")]
    Redis(#[from] ::redis::RedisError),
    /// A stored session could not be decoded.
    #[error("stored session is corrupt: {0}")]
    Corrupt(#[from] serde_json::Error),
    /// The thread's lock was not released in time by another turn.
    #[error("the thread is busy with another turn")]
    Busy,
    /// Already this many turns of the thread wait for its lock: refused without waiting.
    #[error("{0} turns of the thread are already waiting")]
    QueueFull(usize),
    /// A blocking task failed.
    #[error("store task failed: {0}")]
    Task(String),
}

/// A held distributed lock (empty for backends that need none).
#[derive(Debug, Clone, Default)]
pub struct LockToken(pub Option<String>);

/// A place sessions live. Implementations must be safe to call from many tasks at once.
pub trait SessionBackend: Send + Sync + 'static {
    /// The session, if stored and not expired.
    fn load<'a>(&'a self, user_id: &'a str, thread_id: &'a str) -> BoxFuture<'a, Result<Option<Session>, StoreError>>;
    /// Stores the whole session, expiring `ttl` from now. Idempotent.
    fn save<'a>(&'a self, session: &'a Session, ttl: Duration) -> BoxFuture<'a, Result<(), StoreError>>;
    /// How many unexpired sessions `user_id` has.
    fn count_user<'a>(&'a self, user_id: &'a str) -> BoxFuture<'a, Result<usize, StoreError>>;
    /// Takes the thread's cross-process lock, waiting at most `wait` ([`StoreError::Busy`] then);
    /// a no-op for single-process backends.
    fn lock<'a>(
        &'a self,
        _user_id: &'a str,
        _thread_id: &'a str,
        _wait: Duration,
    ) -> BoxFuture<'a, Result<LockToken, StoreError>> {
        Box::pin(async { Ok(LockToken::default()) })
    }
    /// Releases a lock taken by [`SessionBackend::lock`].
    fn unlock<'a>(&'a self, _user_id: &'a str, _thread_id: &'a str, _token: LockToken) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
    /// Stores the session ([`SessionBackend::save`]) and releases the lock ([`SessionBackend::unlock`])
    /// in one go where the backend can (Redis pipelines both into one round trip). The lock is
    /// released whether or not the save succeeded.
    fn save_and_unlock<'a>(
        &'a self,
        session: &'a Session,
        ttl: Duration,
        token: LockToken,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let result = self.save(session, ttl).await;
            self.unlock(&session.user_id, &session.thread_id, token).await;
            result
        })
    }
    /// `memory`, `sqlite` or `redis`.
    fn kind(&self) -> &'static str;
}

/// Opens the backend named by `url`: `memory://`, `sqlite://PATH` (created if absent),
/// `redis://HOST:PORT[/DB]`.
///
/// # Errors
/// [`StoreError::Url`] for other schemes; the backend's error when it cannot be opened.
pub async fn open_backend(url: &str) -> Result<Arc<dyn SessionBackend>, StoreError> {
    if url == "memory://" || url == "memory" {
        Ok(Arc::new(memory::MemoryBackend::default()))
    } else if let Some(path) = url.strip_prefix("sqlite://") {
        Ok(Arc::new(sqlite::SqliteBackend::open(std::path::Path::new(path))?))
    } else if url.starts_with("redis://") || url.starts_with("rediss://") {
        Ok(Arc::new(redis::RedisBackend::connect(url).await?))
    } else {
        Err(StoreError::Url(url.to_string()))
    }
}

type Key = (String, String);

/// One thread's in-process lock and how many turns wait for it.
#[derive(Default)]
struct ThreadLock {
    turn: Arc<AsyncMutex<()>>,
    waiting: AtomicUsize,
}

/// Counts a waiting turn while it waits (also when the wait is cancelled).
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Sessions behind per-thread locks. Cheap to share (`Arc`).
pub struct SessionStore {
    backend: Arc<dyn SessionBackend>,
    ttl: Duration,
    locks: Mutex<HashMap<Key, Arc<ThreadLock>>>,
    /// The size of `locks` at which cells nobody holds are dropped next; doubles with the cells
    /// still held, so the sweep costs O(1) per turn amortized however many turns are open.
    sweep_at: AtomicUsize,
}

/// Lock cells kept before the first sweep of unheld ones.
const LOCK_SWEEP_AT: usize = 10_000;

impl std::fmt::Debug for SessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionStore").field("backend", &self.backend.kind()).field("ttl", &self.ttl).finish()
    }
}

impl SessionStore {
    /// A store over `backend`; sessions expire `ttl` after their last save.
    pub fn new(backend: Arc<dyn SessionBackend>, ttl: Duration) -> Self {
        Self { backend, ttl, locks: Mutex::new(HashMap::new()), sweep_at: AtomicUsize::new(LOCK_SWEEP_AT) }
    }

    /// An in-memory store (24 h TTL).
    pub fn in_memory() -> Self {
        Self::new(Arc::new(memory::MemoryBackend::default()), Duration::from_secs(24 * 3600))
    }

    /// The backend kind.
    pub fn kind(&self) -> &'static str {
        self.backend.kind()
    }

    /// Locks and loads the session of `(user_id, thread_id)` (a new one when absent), waiting as
    /// long as the thread's current turn takes. Hold the guard for the whole turn and
    /// [`SessionGuard::save`] once at the end.
    ///
    /// # Errors
    /// [`StoreError`] when the backend fails or the thread stays busy.
    pub async fn open(&self, user_id: &str, thread_id: &str) -> Result<SessionGuard<'_>, StoreError> {
        self.open_inner(user_id, thread_id, None, usize::MAX, true).await
    }

    /// Like [`SessionStore::open`] for a turn with a `deadline`: the wait for the thread's lock
    /// ends there ([`StoreError::Busy`]), and when `max_queued` turns of the thread already wait
    /// in this process the call fails at once ([`StoreError::QueueFull`]).
    ///
    /// # Errors
    /// [`StoreError`] when the backend fails, the thread stays busy or its queue is full.
    pub async fn open_within(
        &self,
        user_id: &str,
        thread_id: &str,
        deadline: tokio::time::Instant,
        max_queued: usize,
    ) -> Result<SessionGuard<'_>, StoreError> {
        self.open_inner(user_id, thread_id, Some(deadline), max_queued, true).await
    }

    /// Like [`SessionStore::open_within`], for a thread id this process has just made up (a turn
    /// that came without one): nothing can be stored under it yet, so the backend is not asked
    /// for it (the locks are taken all the same).
    ///
    /// # Errors
    /// [`StoreError`] when the backend fails, the thread stays busy or its queue is full.
    pub async fn open_new_within(
        &self,
        user_id: &str,
        thread_id: &str,
        deadline: tokio::time::Instant,
        max_queued: usize,
    ) -> Result<SessionGuard<'_>, StoreError> {
        self.open_inner(user_id, thread_id, Some(deadline), max_queued, false).await
    }

    async fn open_inner(
        &self,
        user_id: &str,
        thread_id: &str,
        deadline: Option<tokio::time::Instant>,
        max_queued: usize,
        load: bool,
    ) -> Result<SessionGuard<'_>, StoreError> {
        let key = (user_id.to_string(), thread_id.to_string());
        let cell = {
            let mut map = self.locks.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            // Drop lock cells nobody holds, so the map does not grow with every thread ever seen.
            if map.len() > self.sweep_at.load(Ordering::Relaxed) {
                // A cell is in use while a turn holds its lock (the guard keeps a clone of
                // `turn`) or waits for it (the waiter keeps a clone of the cell).
                map.retain(|_, c| Arc::strong_count(c) > 1 || Arc::strong_count(&c.turn) > 1);
                self.sweep_at.store((map.len() * 2).max(LOCK_SWEEP_AT), Ordering::Relaxed);
            }
            map.entry(key).or_default().clone()
        };
        let local = match cell.turn.clone().try_lock_owned() {
            Ok(local) => local,
            Err(_) => {
                if cell.waiting.fetch_add(1, Ordering::SeqCst) >= max_queued {
                    cell.waiting.fetch_sub(1, Ordering::SeqCst);
                    return Err(StoreError::QueueFull(max_queued));
                }
                let _waiting = Waiting(&cell.waiting);
                let acquire = cell.turn.clone().lock_owned();
                match deadline {
                    Some(d) => tokio::time::timeout_at(d, acquire).await.map_err(|_| StoreError::Busy)?,
                    None => acquire.await,
                }
            }
        };
        let wait = deadline.map_or(Duration::MAX, |d| d.saturating_duration_since(tokio::time::Instant::now()));
        if wait.is_zero() {
            return Err(StoreError::Busy);
        }
        let token = self.backend.lock(user_id, thread_id, wait).await?;
        let loaded = if load { self.backend.load(user_id, thread_id).await } else { Ok(None) };
        let (session, new) = match loaded {
            Ok(Some(s)) => (s, false),
            Ok(None) => (Session::new(user_id, thread_id), true),
            Err(e) => {
                self.backend.unlock(user_id, thread_id, token).await;
                return Err(e);
            }
        };
        Ok(SessionGuard { store: self, session, new, token: Some(token), _local: local })
    }

    /// How many unexpired sessions `user_id` has.
    ///
    /// # Errors
    /// The backend's error.
    pub async fn count_user(&self, user_id: &str) -> Result<usize, StoreError> {
        self.backend.count_user(user_id).await
    }

    /// The stored session, without locking (read-only views).
    ///
    /// # Errors
    /// The backend's error.
    pub async fn peek(&self, user_id: &str, thread_id: &str) -> Result<Option<Session>, StoreError> {
        self.backend.load(user_id, thread_id).await
    }
}

/// A locked session for one turn.
pub struct SessionGuard<'a> {
    store: &'a SessionStore,
    /// The session; change it freely, then [`SessionGuard::save`].
    pub session: Session,
    new: bool,
    token: Option<LockToken>,
    _local: OwnedMutexGuard<()>,
}

impl SessionGuard<'_> {
    /// Writes the session and releases the thread's locks.
    ///
    /// # Errors
    /// The backend's error (the locks are released either way).
    pub async fn save(mut self) -> Result<(), StoreError> {
        self.session.updated_at = Utc::now();
        let store = self.store;
        match self.token.take() {
            Some(token) => store.backend.save_and_unlock(&self.session, store.ttl, token).await,
            None => store.backend.save(&self.session, store.ttl).await,
        }
    }

    /// `true` when the session was not stored yet: this turn would create it.
    pub fn is_new(&self) -> bool {
        self.new
    }

    /// Releases the locks without saving.
    pub async fn release(mut self) {
        if let Some(token) = self.token.take() {
            self.store.backend.unlock(&self.session.user_id, &self.session.thread_id, token).await;
        }
    }
}

impl Drop for SessionGuard<'_> {
    fn drop(&mut self) {
        if self.token.as_ref().is_some_and(|t| t.0.is_some()) {
            tracing::warn!(thread = %self.session.thread_id, "session guard dropped without save; the lock expires by itself");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(id: &str) -> HistoryEntry {
        HistoryEntry { turn_id: id.into(), query: "q".into(), answer: "a".into(), at: Utc::now(), interrupted: false }
    }

    #[test]
    fn a_pending_did_you_mean_question_round_trips() {
        use crate::conversation::PendingChoice;
        let mut session = Session::new("u1", "t1");
        let at = DateTime::parse_from_rfc3339("2026-12-01T09:00:00Z").unwrap().with_timezone(&Utc);
        session.conversation.state = ConversationState::AwaitingIntent(PendingChoice {
            choice_id: "choice_x".into(),
            query: "我明天要去上海".into(),
            candidates: vec!["hotel_agent".into(), "weather_agent".into()],
            created_at: at,
            expires_at: at,
            rounds: 2,
        });
        let doc = serde_json::to_value(&session).unwrap();
        assert_eq!(doc["choice"]["candidates"], serde_json::json!(["hotel_agent", "weather_agent"]));
        assert!(doc["pending"].is_null());
        let back: Session = serde_json::from_value(doc).unwrap();
        assert_eq!(back.conversation, session.conversation);
        let idle = serde_json::to_value(Session::new("u1", "t1")).unwrap();
        assert!(idle.get("choice").is_none(), "absent unless asked: {idle}");
    }

    #[test]
    fn a_turn_is_appended_once_and_history_is_bounded() {
        let mut s = Session::new("u", "t");
        s.push_turn(turn("a"), 2);
        s.push_turn(turn("a"), 2);
        assert_eq!(s.history.len(), 1, "a retried turn is not duplicated");
        s.push_turn(turn("b"), 2);
        s.push_turn(turn("c"), 2);
        let ids: Vec<&str> = s.history.iter().map(|t| t.turn_id.as_str()).collect();
        assert_eq!(ids, ["b", "c"]);
    }

    async fn roundtrip(backend: Arc<dyn SessionBackend>) {
        let store = SessionStore::new(backend.clone(), Duration::from_secs(60));
        let mut g = store.open("u", "t").await.unwrap();
        g.session.slots.insert("city".into(), Value::String("北京".into()));
        g.session.push_turn(turn("x"), 5);
        let saved = g.session.clone();
        g.save().await.unwrap();
        let loaded = store.peek("u", "t").await.unwrap().unwrap();
        assert_eq!(store.count_user("u").await.unwrap(), 1);
        assert_eq!(store.count_user("other").await.unwrap(), 0);
        assert!(!store.open("u", "t").await.unwrap().is_new(), "stored");
        let fresh = store.open("u", "t2").await.unwrap();
        assert!(fresh.is_new());
        fresh.release().await;
        assert_eq!(loaded.slots, saved.slots);
        assert_eq!(loaded.history, saved.history);
        assert!(store.peek("other", "t").await.unwrap().is_none(), "keyed by user too");
        // Saving the same document again changes nothing.
        backend.save(&loaded, Duration::from_secs(60)).await.unwrap();
        assert_eq!(store.peek("u", "t").await.unwrap().unwrap().history.len(), 1);
        // Expiry.
        backend.save(&loaded, Duration::from_millis(1)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(store.peek("u", "t").await.unwrap().is_none(), "expired sessions are gone");
    }

    #[tokio::test]
    async fn memory_backend_roundtrip() {
        roundtrip(Arc::new(memory::MemoryBackend::default())).await;
    }

    #[tokio::test]
    async fn sqlite_backend_roundtrip() {
        let dir = tempfile::tempdir().unwrap();
        let backend = open_backend(&format!("sqlite://{}", dir.path().join("s.db").display())).await.unwrap();
        assert_eq!(backend.kind(), "sqlite");
        roundtrip(backend).await;
    }

    #[tokio::test]
    async fn lock_cells_nobody_holds_are_swept() {
        let store = SessionStore::in_memory();
        for i in 0..(LOCK_SWEEP_AT + 10) {
            store.open("u", &format!("t{i}")).await.unwrap().release().await;
        }
        let cells = store.locks.lock().unwrap().len();
        assert!(cells <= 10, "{cells} lock cells kept after the sweep");
        // Held cells survive a sweep, and the next sweep waits until the map doubles.
        let held = store.open("u", "held").await.unwrap();
        for i in 0..(LOCK_SWEEP_AT + 10) {
            store.open("u", &format!("s{i}")).await.unwrap().release().await;
        }
        assert!(store.locks.lock().unwrap().contains_key(&("u".to_string(), "held".to_string())));
        held.release().await;
    }

    #[tokio::test]
    async fn unknown_store_urls_are_rejected() {
        assert!(matches!(open_backend("postgres://x").await, Err(StoreError::Url(_))));
    }
}
