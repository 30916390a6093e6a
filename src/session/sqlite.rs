//! `sqlite://PATH`: the embedded default. One table, one JSON document per session, upserted
//! whole; expired rows are ignored on load and purged in small batches by the writer every
//! [`PURGE_EVERY`]. rusqlite (bundled SQLite) was chosen over redb because the file can be
//! inspected and repaired with the `sqlite3` tool ops already know, and WAL mode gives
//! crash-safe writes with no set-up.
//!
//! Two connections: loads read through one (WAL readers never wait for the writer), and every
//! save goes to one writer thread that takes whatever saves are waiting and commits them in one
//! transaction (group commit). A save returns once its transaction committed, so the next turn of
//! the thread (which waits for the thread's lock, released after the save) reads it.

use std::path::Path;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use rusqlite::{params, Connection, OptionalExtension};
use tokio::sync::oneshot;

use super::{Session, SessionBackend, StoreError};

/// How often the writer deletes expired rows.
pub const PURGE_EVERY: Duration = Duration::from_secs(60);
/// Expired rows deleted per purge statement (a purge never holds the writer long).
const PURGE_CHUNK: usize = 1000;
/// Saves committed in one transaction at most.
const MAX_BATCH: usize = 256;

const UPSERT: &str = "INSERT INTO sessions (user_id, thread_id, doc, expires_at) VALUES (?1, ?2, ?3, ?4)
     ON CONFLICT (user_id, thread_id) DO UPDATE SET doc = excluded.doc, expires_at = excluded.expires_at";
const LOAD: &str = "SELECT doc FROM sessions WHERE user_id = ?1 AND thread_id = ?2 AND expires_at > ?3";
const PURGE: &str = "DELETE FROM sessions WHERE rowid IN (SELECT rowid FROM sessions WHERE expires_at <= ?1 LIMIT ?2)";

/// What the writer thread is asked to do.
enum Job {
    Save { user: String, thread: String, doc: String, expires: i64, done: oneshot::Sender<Result<(), StoreError>> },
    Purge { done: oneshot::Sender<Result<usize, StoreError>> },
}

/// SQLite backend: a reader connection used from blocking tasks and one writer thread.
#[derive(Debug, Clone)]
pub struct SqliteBackend {
    reader: Arc<Mutex<Connection>>,
    writer: mpsc::Sender<Job>,
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn connect(path: &Path) -> Result<Connection, StoreError> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    Ok(conn)
}

impl SqliteBackend {
    /// Opens (creating if needed) the database at `path` and starts its writer thread (which
    /// ends when the last clone of the backend is dropped).
    ///
    /// # Errors
    /// [`StoreError::Sqlite`] when the file cannot be opened or initialized.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| StoreError::Task(format!("cannot create {}: {e}", dir.display())))?;
        }
        let writer = connect(path)?;
        writer.execute_batch(
            "CREATE TABLE IF NOT EXISTS sessions (
                 user_id    TEXT NOT NULL,
                 thread_id  TEXT NOT NULL,
                 doc        TEXT NOT NULL,
                 expires_at INTEGER NOT NULL,
                 PRIMARY KEY (user_id, thread_id)
             );
             CREATE INDEX IF NOT EXISTS sessions_expiry ON sessions (expires_at);",
        )?;
        let reader = connect(path)?;
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || write_loop(writer, &rx))
            .map_err(|e| StoreError::Task(format!("cannot start the sqlite writer: {e}")))?;
        Ok(Self { reader: Arc::new(Mutex::new(reader)), writer: tx })
    }

    /// Deletes expired rows now (the writer also does this every [`PURGE_EVERY`]); returns how
    /// many went.
    ///
    /// # Errors
    /// [`StoreError`] when the delete fails or the writer is gone.
    pub async fn purge_expired(&self) -> Result<usize, StoreError> {
        let (done, answer) = oneshot::channel();
        self.submit(Job::Purge { done })?;
        answer.await.map_err(|_| writer_gone())?
    }

    /// Rows in the table, expired ones included (they stay until a purge).
    ///
    /// # Errors
    /// [`StoreError`] when the query fails.
    pub async fn rows(&self) -> Result<u64, StoreError> {
        self.read(|conn| Ok(conn.query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))?)).await
    }

    fn submit(&self, job: Job) -> Result<(), StoreError> {
        self.writer.send(job).map_err(|_| writer_gone())
    }

    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let conn = self.reader.clone();
        tokio::task::spawn_blocking(move || {
            let conn = conn.lock().map_err(|e| StoreError::Task(e.to_string()))?;
            f(&conn)
        })
        .await
        .map_err(|e| StoreError::Task(e.to_string()))?
    }
}

fn writer_gone() -> StoreError {
    StoreError::Task("the sqlite writer stopped".into())
}

/// The writer thread: waits for jobs, commits every save waiting in one transaction, and
/// purges expired rows when due. Ends when every sender is gone.
fn write_loop(mut conn: Connection, rx: &mpsc::Receiver<Job>) {
    let mut next_purge = Instant::now() + PURGE_EVERY;
    let mut batch = Vec::with_capacity(MAX_BATCH);
    loop {
        let wait = next_purge.saturating_duration_since(Instant::now());
        match rx.recv_timeout(wait) {
            Ok(job) => batch.push(job),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let mut saves = Vec::with_capacity(batch.len());
        for job in batch.drain(..) {
            match job {
                Job::Save { user, thread, doc, expires, done } => saves.push((user, thread, doc, expires, done)),
                Job::Purge { done } => {
                    let _ = done.send(purge(&conn, usize::MAX));
                }
            }
        }
        if !saves.is_empty() {
            commit(&mut conn, saves);
        }
        if Instant::now() >= next_purge {
            match purge(&conn, PURGE_CHUNK) {
                // A full chunk: more may be expired; go on after the saves waiting by then.
                Ok(n) if n >= PURGE_CHUNK => next_purge = Instant::now(),
                Ok(_) => next_purge = Instant::now() + PURGE_EVERY,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot purge expired sessions");
                    next_purge = Instant::now() + PURGE_EVERY;
                }
            }
        }
    }
}

type Save = (String, String, String, i64, oneshot::Sender<Result<(), StoreError>>);

/// Upserts `saves` in one transaction and answers each; when the transaction fails, each save is
/// tried on its own so one bad write fails only itself.
fn commit(conn: &mut Connection, saves: Vec<Save>) {
    let together = (|| -> Result<(), StoreError> {
        let tx = conn.transaction()?;
        {
            let mut upsert = tx.prepare_cached(UPSERT)?;
            for (user, thread, doc, expires, _) in &saves {
                upsert.execute(params![user, thread, doc, expires])?;
            }
        }
        tx.commit()?;
        Ok(())
    })();
    if together.is_ok() {
        for (.., done) in saves {
            let _ = done.send(Ok(()));
        }
        return;
    }
    for (user, thread, doc, expires, done) in saves {
        let one = conn
            .prepare_cached(UPSERT)
            .and_then(|mut s| s.execute(params![user, thread, doc, expires]))
            .map(|_| ())
            .map_err(StoreError::from);
        let _ = done.send(one);
    }
}

/// Deletes at most `limit` expired rows.
fn purge(conn: &Connection, limit: usize) -> Result<usize, StoreError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    Ok(conn.prepare_cached(PURGE)?.execute(params![now_ms(), limit])?)
}

impl SessionBackend for SqliteBackend {
    fn load<'a>(&'a self, user_id: &'a str, thread_id: &'a str) -> BoxFuture<'a, Result<Option<Session>, StoreError>> {
        let (user, thread) = (user_id.to_string(), thread_id.to_string());
        Box::pin(self.read(move |conn| {
            let doc: Option<String> =
                conn.prepare_cached(LOAD)?.query_row(params![user, thread, now_ms()], |row| row.get(0)).optional()?;
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
            let expires = now_ms().saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX / 2));
            let (done, answer) = oneshot::channel();
            self.submit(Job::Save { user, thread, doc, expires, done })?;
            answer.await.map_err(|_| writer_gone())?
        })
    }

    fn count_user<'a>(&'a self, user_id: &'a str) -> BoxFuture<'a, Result<usize, StoreError>> {
        let user = user_id.to_string();
        Box::pin(self.read(move |conn| {
            // The primary key (user_id, thread_id) serves this prefix lookup.
            let n: i64 = conn
                .prepare_cached("SELECT COUNT(*) FROM sessions WHERE user_id = ?1 AND expires_at > ?2")?
                .query_row(params![user, now_ms()], |row| row.get(0))?;
            Ok(usize::try_from(n).unwrap_or(0))
        }))
    }

    fn kind(&self) -> &'static str {
        "sqlite"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn expired_rows_are_purged_by_the_writer_not_by_each_save() {
        let dir = tempfile::tempdir().unwrap();
        let backend = SqliteBackend::open(&dir.path().join("s.db")).unwrap();
        for i in 0..10 {
            backend.save(&Session::new("u", &format!("old{i}")), Duration::from_millis(1)).await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        backend.save(&Session::new("u", "new"), Duration::from_secs(60)).await.unwrap();
        assert_eq!(backend.rows().await.unwrap(), 11, "a save deletes nothing");
        assert!(backend.load("u", "old0").await.unwrap().is_none(), "expired rows are not loaded");
        assert_eq!(backend.purge_expired().await.unwrap(), 10);
        assert_eq!(backend.rows().await.unwrap(), 1);
        assert!(backend.load("u", "new").await.unwrap().is_some());
    }

    #[tokio::test]
    async fn concurrent_saves_all_commit() {
        let dir = tempfile::tempdir().unwrap();
        let backend = Arc::new(SqliteBackend::open(&dir.path().join("s.db")).unwrap());
        let saves = (0..200).map(|i| {
            let backend = backend.clone();
            tokio::spawn(async move {
                let mut s = Session::new("u", &format!("t{i}"));
                s.slots.insert("i".into(), i.into());
                backend.save(&s, Duration::from_secs(60)).await
            })
        });
        for save in futures::future::join_all(saves).await {
            save.unwrap().unwrap();
        }
        assert_eq!(backend.rows().await.unwrap(), 200);
        let s = backend.load("u", "t123").await.unwrap().unwrap();
        assert_eq!(s.slots["i"], 123);
    }
}
