//! `redis://…`: sessions shared by several replicas. Each session is one JSON string with a TTL
//! (`SET … PX`); a turn holds a per-thread lock (`SET lock token NX PX`, released by a
//! compare-and-delete script) so two replicas never interleave turns of one thread. Uses the
//! `redis` crate's tokio `ConnectionManager` (reconnects by itself).

use std::time::Duration;

use futures::future::BoxFuture;
use redis::aio::ConnectionManager;
use redis::AsyncCommands;

use super::{LockToken, Session, SessionBackend, StoreError};

/// How long a turn may hold a thread's lock before it expires by itself (a crashed replica).
pub const LOCK_TTL: Duration = Duration::from_secs(120);
/// How long a turn waits at most for another turn on the same thread (less when its deadline
/// comes first).
pub const LOCK_WAIT: Duration = Duration::from_secs(60);

/// Redis backend.
#[derive(Clone)]
pub struct RedisBackend {
    conn: ConnectionManager,
}

impl std::fmt::Debug for RedisBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RedisBackend")
    }
}

/// A sorted set per user: thread id -> expiry (ms since the epoch), for counting its sessions.
fn threads_key(user: &str) -> String {
    format!("switchboard:threads:{}:{user}", user.len())
}

/// Deletes the lock only when it still holds this turn's token.
const UNLOCK: &str =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";

/// The commands of a save: the session document and its entry in the user's thread set, both
/// expiring `ttl` from now.
fn push_save(pipe: &mut redis::Pipeline, session: &Session, doc: &str, ttl: Duration) {
    let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
    let expires = chrono::Utc::now().timestamp_millis().saturating_add(i64::try_from(ms).unwrap_or(i64::MAX / 2));
    let threads = threads_key(&session.user_id);
    pipe.cmd("SET")
        .arg(session_key(&session.user_id, &session.thread_id))
        .arg(doc)
        .arg("PX")
        .arg(ms)
        .ignore()
        .cmd("ZADD")
        .arg(&threads)
        .arg(expires)
        .arg(&session.thread_id)
        .ignore()
        .cmd("PEXPIRE")
        .arg(&threads)
        .arg(ms)
        .ignore();
}

fn session_key(user: &str, thread: &str) -> String {
    format!("switchboard:session:{}:{}", user.len(), [user, thread].concat())
}

fn lock_key(user: &str, thread: &str) -> String {
    format!("switchboard:lock:{}:{}", user.len(), [user, thread].concat())
}

impl RedisBackend {
    /// Connects to `url`.
    ///
    /// # Errors
    /// [`StoreError::Redis`] when the URL is invalid or the server unreachable.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let client = redis::Client::open(url)?;
        let conn = ConnectionManager::new(client).await?;
        Ok(Self { conn })
    }
}

impl SessionBackend for RedisBackend {
    fn load<'a>(&'a self, user_id: &'a str, thread_id: &'a str) -> BoxFuture<'a, Result<Option<Session>, StoreError>> {
        Box::pin(async move {
            let mut conn = self.conn.clone();
            let doc: Option<String> = conn.get(session_key(user_id, thread_id)).await?;
            Ok(match doc {
                Some(doc) => Some(serde_json::from_str(&doc)?),
                None => None,
            })
        })
    }

    fn save<'a>(&'a self, session: &'a Session, ttl: Duration) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let doc = serde_json::to_string(session)?;
            let mut conn = self.conn.clone();
            let mut pipe = redis::pipe();
            pipe.atomic();
            push_save(&mut pipe, session, &doc, ttl);
            let _: () = pipe.query_async(&mut conn).await?;
            Ok(())
        })
    }

    fn save_and_unlock<'a>(
        &'a self,
        session: &'a Session,
        ttl: Duration,
        token: LockToken,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let Some(token) = token.0 else { return self.save(session, ttl) };
        Box::pin(async move {
            let doc = serde_json::to_string(session);
            let mut conn = self.conn.clone();
            let lock = lock_key(&session.user_id, &session.thread_id);
            let mut pipe = redis::pipe();
            pipe.atomic();
            if let Ok(doc) = &doc {
                push_save(&mut pipe, session, doc, ttl);
            }
            // The compare-and-delete of `unlock`, as EVAL so it needs no script cache.
            pipe.cmd("EVAL").arg(UNLOCK).arg(1).arg(lock).arg(token).ignore();
            let _: () = pipe.query_async(&mut conn).await?;
            doc.map(|_| ()).map_err(StoreError::from)
        })
    }

    fn lock<'a>(
        &'a self,
        user_id: &'a str,
        thread_id: &'a str,
        wait: Duration,
    ) -> BoxFuture<'a, Result<LockToken, StoreError>> {
        Box::pin(async move {
            let mut conn = self.conn.clone();
            let key = lock_key(user_id, thread_id);
            let token = uuid::Uuid::new_v4().to_string();
            let deadline = tokio::time::Instant::now() + wait.min(LOCK_WAIT);
            let mut delay = Duration::from_millis(5);
            loop {
                let set: Option<String> = redis::cmd("SET")
                    .arg(&key)
                    .arg(&token)
                    .arg("NX")
                    .arg("PX")
                    .arg(LOCK_TTL.as_millis() as u64)
                    .query_async(&mut conn)
                    .await?;
                if set.is_some() {
                    return Ok(LockToken(Some(token)));
                }
                if tokio::time::Instant::now() >= deadline {
                    return Err(StoreError::Busy);
                }
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_millis(100));
            }
        })
    }

    fn unlock<'a>(&'a self, user_id: &'a str, thread_id: &'a str, token: LockToken) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let Some(token) = token.0 else { return };
            let mut conn = self.conn.clone();
            let script = redis::Script::new(UNLOCK);
            let result: Result<i64, _> =
                script.key(lock_key(user_id, thread_id)).arg(token).invoke_async(&mut conn).await;
            if let Err(e) = result {
                tracing::warn!(error = %e, "cannot release a session lock; it expires by itself");
            }
        })
    }

    fn count_user<'a>(&'a self, user_id: &'a str) -> BoxFuture<'a, Result<usize, StoreError>> {
        Box::pin(async move {
            let mut conn = self.conn.clone();
            let key = threads_key(user_id);
            let now = chrono::Utc::now().timestamp_millis();
            let (_, n): (i64, usize) = redis::pipe()
                .atomic()
                .cmd("ZREMRANGEBYSCORE")
                .arg(&key)
                .arg("-inf")
                .arg(now)
                .cmd("ZCARD")
                .arg(&key)
                .query_async(&mut conn)
                .await?;
            Ok(n)
        })
    }

    fn kind(&self) -> &'static str {
        "redis"
    }
}
