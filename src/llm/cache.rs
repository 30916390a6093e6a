//! The intent cache (docs/planning.md), the tier between the rules and a model call: an identical
//! normalized query against the same registry version, with no pending clarification, reuses a
//! confident recognition.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::IntentAnswer;

/// Entries kept at most; past this, expired entries are dropped, then everything.
const MAX_ENTRIES: usize = 10_000;
/// Only recognitions at least this confident are cached.
pub const MIN_CONFIDENCE: f32 = 0.7;

/// A TTL cache of intent answers with hit/miss counters.
#[derive(Debug, Default)]
pub struct IntentCache {
    entries: Mutex<HashMap<(String, u64), (Instant, IntentAnswer)>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl IntentCache {
    /// The cached answer for `(normalized query, registry version)`, if fresh.
    pub fn get(&self, query: &str, version: u64) -> Option<IntentAnswer> {
        let found = self.entries.lock().ok().and_then(|map| {
            map.get(&(query.to_string(), version))
                .filter(|(expires, _)| *expires > Instant::now())
                .map(|(_, a)| a.clone())
        });
        let counter = if found.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Caches `answer` for `ttl` when it is confident enough.
    pub fn put(&self, query: &str, version: u64, answer: &IntentAnswer, ttl: Duration) {
        if answer.confidence < MIN_CONFIDENCE || ttl.is_zero() {
            return;
        }
        if let Ok(mut map) = self.entries.lock() {
            if map.len() >= MAX_ENTRIES {
                let now = Instant::now();
                map.retain(|_, (expires, _)| *expires > now);
                if map.len() >= MAX_ENTRIES {
                    map.clear();
                }
            }
            map.insert((query.to_string(), version), (Instant::now() + ttl, answer.clone()));
        }
    }

    /// `(hits, misses)` since start.
    pub fn counts(&self) -> (u64, u64) {
        (self.hits.load(Ordering::Relaxed), self.misses.load(Ordering::Relaxed))
    }
}
