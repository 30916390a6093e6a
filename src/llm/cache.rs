//! The intent cache (docs/planning.md), the tier between the rules and a model call: an identical
//! normalized query against the same registry version, with no pending clarification, reuses a
//! confident recognition.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use moka::policy::EvictionPolicy;
use moka::sync::Cache;

use super::IntentAnswer;

/// Entries kept at most; past this, the least recently used go.
pub const MAX_ENTRIES: u64 = 10_000;
/// Only recognitions at least this confident are cached.
pub const MIN_CONFIDENCE: f32 = 0.7;

#[derive(Debug)]
struct Entry {
    expires: Instant,
    ttl: Duration,
    answer: IntentAnswer,
}

struct PerEntryTtl;

impl moka::Expiry<(String, u64), Arc<Entry>> for PerEntryTtl {
    fn expire_after_create(&self, _: &(String, u64), value: &Arc<Entry>, _: Instant) -> Option<Duration> {
        Some(value.ttl)
    }

    fn expire_after_update(
        &self,
        _: &(String, u64),
        value: &Arc<Entry>,
        _: Instant,
        _: Option<Duration>,
    ) -> Option<Duration> {
        Some(value.ttl)
    }
}

/// A TTL cache of intent answers with hit/miss counters: bounded, with constant work per lookup
/// and insert ([`moka`]).
pub struct IntentCache {
    entries: Cache<(String, u64), Arc<Entry>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl std::fmt::Debug for IntentCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntentCache")
            .field("entries", &self.entries.entry_count())
            .field("counts", &self.counts())
            .finish()
    }
}

impl Default for IntentCache {
    fn default() -> Self {
        Self::with_capacity(MAX_ENTRIES)
    }
}

impl IntentCache {
    /// A cache of at most `capacity` answers.
    pub fn with_capacity(capacity: u64) -> Self {
        let entries = Cache::builder()
            .max_capacity(capacity)
            .eviction_policy(EvictionPolicy::lru())
            .expire_after(PerEntryTtl)
            .build();
        Self { entries, hits: AtomicU64::new(0), misses: AtomicU64::new(0) }
    }

    /// The cached answer for `(normalized query, registry version)`, if fresh.
    pub fn get(&self, query: &str, version: u64) -> Option<IntentAnswer> {
        let found = self
            .entries
            .get(&(query.to_string(), version))
            .filter(|e| e.expires > Instant::now())
            .map(|e| e.answer.clone());
        let counter = if found.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Caches `answer` for `ttl` when it is confident enough.
    pub fn put(&self, query: &str, version: u64, answer: &IntentAnswer, ttl: Duration) {
        if answer.confidence < MIN_CONFIDENCE || ttl.is_zero() {
            return;
        }
        let entry = Entry { expires: Instant::now() + ttl, ttl, answer: answer.clone() };
        self.entries.insert((query.to_string(), version), Arc::new(entry));
    }

    /// `(hits, misses)` since start.
    pub fn counts(&self) -> (u64, u64) {
        (self.hits.load(Ordering::Relaxed), self.misses.load(Ordering::Relaxed))
    }

    /// Answers currently held (after the cache's pending housekeeping).
    pub fn len(&self) -> u64 {
        self.entries.run_pending_tasks();
        self.entries.entry_count()
    }

    /// `true` when nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(confidence: f32) -> IntentAnswer {
        serde_json::from_value(serde_json::json!({ "intent": ["weather_agent"], "confidence": confidence }))
            .expect("answer")
    }

    #[test]
    fn confident_answers_are_reused_and_the_size_is_bounded() {
        let cache = IntentCache::with_capacity(50);
        let ttl = Duration::from_secs(60);
        cache.put("q", 1, &answer(0.5), ttl);
        assert!(cache.get("q", 1).is_none(), "not confident enough");
        cache.put("q", 1, &answer(0.9), ttl);
        assert_eq!(cache.get("q", 1).map(|a| a.intent), Some(vec!["weather_agent".to_string()]));
        assert!(cache.get("q", 2).is_none(), "another registry version");
        for i in 0..1_000 {
            cache.put(&format!("q{i}"), 1, &answer(0.9), ttl);
        }
        assert!(cache.len() <= 50, "{} entries kept", cache.len());
        assert!(cache.get("q999", 1).is_some(), "the newest stays");
        assert_eq!(cache.counts(), (2, 2));
    }

    #[test]
    fn entries_expire() {
        let cache = IntentCache::default();
        cache.put("q", 1, &answer(0.9), Duration::from_millis(1));
        std::thread::sleep(Duration::from_millis(10));
        assert!(cache.get("q", 1).is_none());
    }
}
