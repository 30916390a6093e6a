//! `sqlite://PATH`: the embedded default. One table, one JSON document per session, upserted
//! whole; expired rows are ignored on load and purged on save. rusqlite (bundled SQLite) was
//! chosen over redb because the file can be inspected and repaired with the `sqlite3` tool ops
//! already know, and WAL mode gives crash-safe writes with no set-up.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use rusqlite::{params, Connection, OptionalExtension};

use super::{Session, SessionBackend, StoreError};

/// SQLite backend; one connection, used from blocking tasks.
#[derive(Debug, Clone)]
pub struct SqliteBackend {
    conn: Arc<Mutex<Connection>>,
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

impl SqliteBackend {
    /// Opens (creating if needed) the database at `path`.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`] when the file cannot be opened or initialized.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| StoreError::Task(format!("cannot create {}: {e}", dir.display())))?;
        }
        let conn = Connection::open(path)?;
        conn.busy_timeout(Duration::from_secs(5))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS sessions (
                 user_id    TEXT NOT NULL,
                 thread_id  TEXT NOT NULL,
                 doc        TEXT NOT NULL,
                 expires_at INTEGER NOT NULL,
                 PRIMARY KEY (user_id, thread_id)
             );
             CREATE INDEX IF NOT EXISTS sessions_expiry ON sessions (expires_at);",
        )?;
        Ok(Self { conn: Arc::new(Mutex::new(conn)) })
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            let conn = conn.lock().map_err(|e| StoreError::Task(e.to_string()))?;
            f(&conn)
        })
        .await
        .map_err(|e| StoreError::Task(e.to_string()))?
    }
}

impl SessionBackend for SqliteBackend {
    fn load<'a>(&'a self, user_id: &'a str, thread_id: &'a str) -> BoxFuture<'a, Result<Option<Session>, StoreError>> {
        let (user, thread) = (user_id.to_string(), thread_id.to_string());
        Box::pin(self.blocking(move |conn| {
            let doc: Option<String> = conn
                .query_row(
                    "SELECT doc FROM sessions WHERE user_id = ?1 AND thread_id = ?2 AND expires_at > ?3",
                    params![user, thread, now_ms()],
                    |row| row.get(0),
                )
                .optional()?;
            Ok(match doc {
                Some(doc) => Some(serde_json::from_str(&doc)?),
                None => None,
            })
        }))
    }

    fn save<'a>(&'a self, session: &'a Session, ttl: Duration) -> BoxFuture<'a, Result<(), StoreError>> {
        let doc = serde_json::to_string(session);
        let (user, thread) = (session.user_id.clone(), session.thread_id.clone());
        Box::pin(async move {
            let doc = doc?;
            self.blocking(move |conn| {
                let now = now_ms();
                let expires = now + i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX / 2);
                conn.execute(
                    "INSERT INTO sessions (user_id, thread_id, doc, expires_at) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (user_id, thread_id) DO UPDATE SET doc = excluded.doc, expires_at = excluded.expires_at",
                    params![user, thread, doc, expires],
                )?;
                conn.execute("DELETE FROM sessions WHERE expires_at <= ?1", params![now])?;
                Ok(())
            })
            .await
        })
    }

    fn count_user<'a>(&'a self, user_id: &'a str) -> BoxFuture<'a, Result<usize, StoreError>> {
        let user = user_id.to_string();
        Box::pin(self.blocking(move |conn| {
            // The primary key (user_id, thread_id) serves this prefix lookup.
            let n: i64 = conn.query_row(
                "SELECT COUNT(*) FROM sessions WHERE user_id = ?1 AND expires_at > ?2",
                params![user, now_ms()],
                |row| row.get(0),
            )?;
            Ok(usize::try_from(n).unwrap_or(0))
        }))
    }

    fn kind(&self) -> &'static str {
        "sqlite"
    }
}
