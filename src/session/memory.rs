//! `memory://`: sessions in process memory, with expiry. Lost on restart.
//!
//! A bounded concurrent cache ([`moka`]): each session expires `ttl` after its last save and the
//! least recently used sessions are evicted past [`DEFAULT_CAPACITY`], so a save or a load costs
//! the same however many sessions are stored (expired entries are swept in small batches by the
//! cache's own housekeeping, never by a scan of every session). A per-user index of thread ids,
//! kept by the cache's eviction listener, lets [`SessionBackend::count_user`] look at that user's
//! sessions only.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use moka::notification::RemovalCause;
use moka::policy::EvictionPolicy;
use moka::sync::Cache;

use super::{Session, SessionBackend, StoreError};

/// Sessions kept at most by [`MemoryBackend::default`]; past it the least recently used go.
pub const DEFAULT_CAPACITY: u64 = 100_000;

/// A stored session document and when it expires.
#[derive(Debug)]
struct Stored {
    expires: Instant,
    ttl: Duration,
    doc: String,
}

/// Each entry lives `ttl` from its last save.
struct PerEntryTtl;

impl moka::Expiry<(String, String), Arc<Stored>> for PerEntryTtl {
    fn expire_after_create(&self, _: &(String, String), value: &Arc<Stored>, _: Instant) -> Option<Duration> {
        Some(value.ttl)
    }

    fn expire_after_update(
        &self,
        _: &(String, String),
        value: &Arc<Stored>,
        _: Instant,
        _: Option<Duration>,
    ) -> Option<Duration> {
        Some(value.ttl)
    }
}

/// user id -> the thread ids of that user's stored sessions.
type UserIndex = Arc<Mutex<HashMap<String, HashSet<String>>>>;

/// Process-memory backend.
pub struct MemoryBackend {
    sessions: Cache<(String, String), Arc<Stored>>,
    /// Maintained on save and by the cache's eviction listener (expiry, size bound, removal).
    users: UserIndex,
}

impl std::fmt::Debug for MemoryBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryBackend").field("sessions", &self.sessions.entry_count()).finish()
    }
}

impl Default for MemoryBackend {
    fn default() -> Self {
        Self::with_capacity(DEFAULT_CAPACITY)
    }
}

impl MemoryBackend {
    /// A backend keeping at most `capacity` sessions (least recently used evicted first).
    pub fn with_capacity(capacity: u64) -> Self {
        let users: UserIndex = Arc::default();
        let index = Arc::clone(&users);
        let sessions = Cache::builder()
            .max_capacity(capacity)
            .eviction_policy(EvictionPolicy::lru())
            .expire_after(PerEntryTtl)
            .eviction_listener(move |key: Arc<(String, String)>, _, cause| {
                if cause != RemovalCause::Replaced {
                    forget(&index, &key.0, &key.1);
                }
            })
            .build();
        Self { sessions, users }
    }

    /// Sessions currently held (after the cache's pending housekeeping).
    pub fn len(&self) -> u64 {
        self.sessions.run_pending_tasks();
        self.sessions.entry_count()
    }

    /// `true` when no session is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Drops `thread_id` from `user_id`'s index entry (and the entry when it empties).
fn forget(index: &UserIndex, user_id: &str, thread_id: &str) {
    let mut users = index.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(threads) = users.get_mut(user_id) {
        threads.remove(thread_id);
        if threads.is_empty() {
            users.remove(user_id);
        }
    }
}

impl SessionBackend for MemoryBackend {
    fn load<'a>(&'a self, user_id: &'a str, thread_id: &'a str) -> BoxFuture<'a, Result<Option<Session>, StoreError>> {
        Box::pin(async move {
            match self.sessions.get(&(user_id.to_string(), thread_id.to_string())) {
                Some(s) if s.expires > Instant::now() => Ok(Some(serde_json::from_str(&s.doc)?)),
                _ => Ok(None),
            }
        })
    }

    fn save<'a>(&'a self, session: &'a Session, ttl: Duration) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let doc = serde_json::to_string(session)?;
            let stored = Stored { expires: Instant::now() + ttl, ttl, doc };
            self.sessions.insert((session.user_id.clone(), session.thread_id.clone()), Arc::new(stored));
            let mut users = self.users.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            users.entry(session.user_id.clone()).or_default().insert(session.thread_id.clone());
            Ok(())
        })
    }

    fn count_user<'a>(&'a self, user_id: &'a str) -> BoxFuture<'a, Result<usize, StoreError>> {
        Box::pin(async move {
            // This user's threads only (the index), each checked against the cache.
            let threads: Vec<String> = {
                let users = self.users.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                users.get(user_id).map(|t| t.iter().cloned().collect()).unwrap_or_default()
            };
            let now = Instant::now();
            let live =
                |t: &String| self.sessions.get(&(user_id.to_string(), t.clone())).is_some_and(|s| s.expires > now);
            Ok(threads.iter().filter(|t| live(t)).count())
        })
    }

    fn kind(&self) -> &'static str {
        "memory"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_size_bound_evicts_the_least_recently_used() {
        let backend = MemoryBackend::with_capacity(100);
        let ttl = Duration::from_secs(3600);
        for i in 0..1_000 {
            backend.save(&Session::new("u", &format!("t{i}")), ttl).await.unwrap();
        }
        assert!(backend.len() <= 100, "{} sessions kept", backend.len());
        assert!(backend.load("u", "t999").await.unwrap().is_some(), "the newest stays");
        assert!(backend.load("u", "t0").await.unwrap().is_none(), "the oldest went");
    }

    #[tokio::test]
    async fn counting_a_users_sessions_looks_at_that_user_only() {
        let backend = MemoryBackend::with_capacity(100);
        let ttl = Duration::from_secs(3600);
        for i in 0..1_000 {
            backend.save(&Session::new(&format!("other{i}"), "t"), ttl).await.unwrap();
        }
        for i in 0..3 {
            backend.save(&Session::new("u", &format!("t{i}")), ttl).await.unwrap();
        }
        backend.save(&Session::new("u", "t0"), ttl).await.unwrap();
        assert_eq!(backend.count_user("u").await.unwrap(), 3);
        backend.len(); // runs the cache's housekeeping: evictions reach the index
        let users = backend.users.lock().unwrap();
        assert!(users.len() <= 100, "the index follows the size bound: {} users", users.len());
        assert_eq!(users.get("u").map(HashSet::len), Some(3), "a replaced session stays indexed");
    }

    #[tokio::test]
    async fn expired_sessions_are_dropped_without_a_save() {
        let backend = MemoryBackend::default();
        for i in 0..50 {
            backend.save(&Session::new("u", &format!("t{i}")), Duration::from_millis(1)).await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(backend.load("u", "t0").await.unwrap().is_none(), "expired sessions are not loaded");
        // The cache's timer wheel drops them within about a second, with no save or scan of ours.
        for _ in 0..50 {
            if backend.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(backend.len(), 0, "housekeeping drops expired entries");
    }
}
