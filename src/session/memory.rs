//! `memory://`: sessions in process memory, with expiry. Lost on restart.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;

use super::{Session, SessionBackend, StoreError};

/// Process-memory backend.
#[derive(Debug, Default)]
pub struct MemoryBackend {
    sessions: Mutex<HashMap<(String, String), (Instant, String)>>,
}

impl SessionBackend for MemoryBackend {
    fn load<'a>(&'a self, user_id: &'a str, thread_id: &'a str) -> BoxFuture<'a, Result<Option<Session>, StoreError>> {
        Box::pin(async move {
            let map = self.sessions.lock().map_err(|e| StoreError::Task(e.to_string()))?;
            match map.get(&(user_id.to_string(), thread_id.to_string())) {
                Some((expires, doc)) if *expires > Instant::now() => Ok(Some(serde_json::from_str(doc)?)),
                _ => Ok(None),
            }
        })
    }

    fn save<'a>(&'a self, session: &'a Session, ttl: Duration) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let doc = serde_json::to_string(session)?;
            let mut map = self.sessions.lock().map_err(|e| StoreError::Task(e.to_string()))?;
            let now = Instant::now();
            map.retain(|_, (expires, _)| *expires > now);
            map.insert((session.user_id.clone(), session.thread_id.clone()), (now + ttl, doc));
            Ok(())
        })
    }

    fn count_user<'a>(&'a self, user_id: &'a str) -> BoxFuture<'a, Result<usize, StoreError>> {
        Box::pin(async move {
            let map = self.sessions.lock().map_err(|e| StoreError::Task(e.to_string()))?;
            let now = Instant::now();
            Ok(map.iter().filter(|((u, _), (expires, _))| u == user_id && *expires > now).count())
        })
    }

    fn kind(&self) -> &'static str {
        "memory"
    }
}
