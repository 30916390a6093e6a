//! `memory://`: sessions in process memory, with expiry. Lost on restart.
//!
//! A bounded concurrent cache ([`moka`]): each session expires `ttl` after its last save and the
//! least recently used sessions are evicted past [`DEFAULT_CAPACITY`], so a save or a load costs
//! the same however many sessions are stored (expired entries are swept in small batches by the
//! cache's own housekeeping, never by a scan of every session).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
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

/// Process-memory backend.
pub struct MemoryBackend {
    sessions: Cache<(String, String), Arc<Stored>>,
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
        let sessions = Cache::builder()
            .max_capacity(capacity)
            .eviction_policy(EvictionPolicy::lru())
            .expire_after(PerEntryTtl)
            .build();
        Self { sessions }
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
            Ok(())
        })
    }

    fn count_user<'a>(&'a self, user_id: &'a str) -> BoxFuture<'a, Result<usize, StoreError>> {
        Box::pin(async move {
            // A scan of the cache (as before moka): runs for a turn that opens a new thread.
            let now = Instant::now();
            Ok(self.sessions.iter().filter(|(k, s)| k.0 == user_id && s.expires > now).count())
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
