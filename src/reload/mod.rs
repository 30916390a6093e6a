//! Hot reload (docs/config.md): one task owns reloading; file events, `SIGHUP` and
//! `POST /v1/admin/reload` all send it the same [`ReloadRequest`].
//!
//! The watcher watches the *directories* of every file the serving snapshot was built from
//! (non-recursively), because editors and Kubernetes replace files by rename or by swapping the
//! `..data` symlink rather than writing in place. Events are debounced (`notify-debouncer-mini`,
//! 150 ms); an event leads to a reload only when it names a file the serving snapshot or the last
//! attempt read (or tried to), or an entry of a directory that attempt read (the texts
//! directories), and the config or a file or directory the last attempt read changed on disk
//! (metadata; reading the files is itself an event). Other files in the watched directories (a session
//! database next to the config) never cause a reload. Then everything is re-read and validated off
//! the async runtime — a file-triggered load that fails is read once more after [`SETTLE`] before
//! it counts (a save in place is seen half-way as an empty file) — and
//! [`RegistryHandle::apply`] swaps the snapshot only if the result is valid and different. A
//! rejection with the same errors on the same config text as the last one is not counted or
//! logged again.
//! **Invariant:** an invalid config never replaces the serving registry.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify_debouncer_mini::notify::RecursiveMode;
use notify_debouncer_mini::{new_debouncer, DebounceEventResult};
use tokio::sync::{mpsc, oneshot};

use crate::registry::{RegistryHandle, ReloadOutcome};

pub mod snapshot;

/// How long a burst of file events is coalesced before reloading. Short, so an edit is served
/// within tens of milliseconds: a save caught half-way fails to load and is read again after
/// [`SETTLE`] before it is judged.
pub const DEBOUNCE: Duration = Duration::from_millis(25);

/// How long a file-triggered load that failed waits before it reads the files once more and
/// judges: a writer that truncates and then writes (saving in place) is seen half-way as an empty
/// or cut-off file.
pub const SETTLE: Duration = Duration::from_millis(500);

/// A request to re-read the config.
#[derive(Debug)]
pub struct ReloadRequest {
    /// What asked (`file`, `sighup`, `admin`), for logs.
    pub cause: &'static str,
    /// Where to send the outcome, if anyone waits for it.
    pub reply: Option<oneshot::Sender<ReloadOutcome>>,
}

/// Errors starting the watcher.
#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    /// The OS file watcher could not be created.
    #[error("cannot watch config files: {0}")]
    Watch(#[from] notify_debouncer_mini::notify::Error),
}

/// Sends reload requests to the reload loop. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Reloader {
    tx: mpsc::UnboundedSender<ReloadRequest>,
    watching: bool,
}

impl Reloader {
    /// Asks for a reload and waits for its outcome (`None` if the loop is gone).
    pub async fn reload(&self, cause: &'static str) -> Option<ReloadOutcome> {
        let (reply, rx) = oneshot::channel();
        self.tx.send(ReloadRequest { cause, reply: Some(reply) }).ok()?;
        rx.await.ok()
    }

    /// `true` when file changes trigger reloads (not only `SIGHUP` and explicit requests).
    pub fn watching(&self) -> bool {
        self.watching
    }
}

/// Starts the reload loop for the config at `path`: file watching (when `watch_files`), `SIGHUP`
/// (Unix), and the returned [`Reloader`] for explicit requests. Runs until the runtime shuts
/// down. Call from within a Tokio runtime.
///
/// # Errors
/// [`ReloadError`] when the file watcher cannot be created.
pub fn spawn(
    handle: Arc<RegistryHandle>,
    path: PathBuf,
    watch_files: bool,
    endpoints: Option<snapshot::EndpointOverride>,
) -> Result<Reloader, ReloadError> {
    let path = std::path::absolute(&path).unwrap_or(path);
    let (tx, rx) = mpsc::unbounded_channel::<ReloadRequest>();
    let (fs_tx, fs_rx) = mpsc::unbounded_channel::<Vec<PathBuf>>();
    let debouncer = if watch_files {
        Some(new_debouncer(DEBOUNCE, move |res: DebounceEventResult| match res {
            Ok(events) => {
                let _ = fs_tx.send(events.into_iter().map(|e| e.path).collect());
            }
            Err(e) => tracing::warn!(error = %e, "config watcher error"),
        })?)
    } else {
        None
    };
    // Registered before returning, so a SIGHUP sent right after start is not the default action
    // (terminate).
    #[cfg(unix)]
    forward_sighup(tx.clone());
    let reloader = Reloader { tx, watching: watch_files };
    let state = ReloadLoop::new(handle, path, debouncer, endpoints);
    tokio::spawn(state.run(rx, fs_rx));
    Ok(reloader)
}

/// Sends a reload request for every SIGHUP.
#[cfg(unix)]
fn forward_sighup(tx: mpsc::UnboundedSender<ReloadRequest>) {
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
        Ok(mut hup) => {
            tokio::spawn(async move {
                while hup.recv().await.is_some() {
                    if tx.send(ReloadRequest { cause: "sighup", reply: None }).is_err() {
                        break;
                    }
                }
            });
        }
        Err(e) => tracing::warn!(error = %e, "cannot listen for SIGHUP"),
    }
}

/// The debounced watcher of the config's directories.
type FileWatcher = notify_debouncer_mini::Debouncer<notify_debouncer_mini::notify::RecommendedWatcher>;

/// The state of the reload loop (the only writer of the registry handle).
struct ReloadLoop {
    handle: Arc<RegistryHandle>,
    /// The config file, absolute.
    path: PathBuf,
    debouncer: Option<FileWatcher>,
    endpoints: Option<snapshot::EndpointOverride>,
    /// The directories watched now.
    watched: BTreeSet<PathBuf>,
    /// What the last attempt read or tried to read.
    touched: Vec<PathBuf>,
    /// How those files looked when it started: a file event that changed none of them is not a
    /// reason to reload (reading the files is itself a file event).
    last_stamp: BTreeMap<PathBuf, Option<FileStamp>>,
    /// [`rejection_key`] of the last rejected attempt.
    last_rejection: Option<Vec<u8>>,
}

impl ReloadLoop {
    /// Watches the serving snapshot's directories and stamps its files now, before any edit can
    /// come.
    fn new(
        handle: Arc<RegistryHandle>,
        path: PathBuf,
        mut debouncer: Option<FileWatcher>,
        endpoints: Option<snapshot::EndpointOverride>,
    ) -> Self {
        let mut watched: BTreeSet<PathBuf> = BTreeSet::new();
        if let Some(d) = debouncer.as_mut() {
            rewatch(d.watcher(), &mut watched, &watch_dirs(&path, &handle.load().sources));
        }
        let touched: Vec<PathBuf> = handle.load().sources.clone();
        let last_stamp = stamp(&path, &touched);
        Self { handle, path, debouncer, endpoints, watched, touched, last_stamp, last_rejection: None }
    }

    /// Serves reload requests and file events until both channels close.
    async fn run(
        mut self,
        mut rx: mpsc::UnboundedReceiver<ReloadRequest>,
        mut fs_rx: mpsc::UnboundedReceiver<Vec<PathBuf>>,
    ) {
        loop {
            let req = tokio::select! {
                Some(req) = rx.recv() => req,
                Some(paths) = fs_rx.recv() => {
                    if !self.files_changed(&paths) {
                        continue;
                    }
                    ReloadRequest { cause: "file", reply: None }
                }
                else => break,
            };
            self.reload(req).await;
        }
    }

    /// Only the files the serving snapshot or the last attempt read (or tried to: after a
    /// failure, a schema file added later) matter, and only when their stamps changed; other
    /// files in the same directories (a session database, editor backups) never do.
    fn files_changed(&self, paths: &[PathBuf]) -> bool {
        let sources = self.handle.load().sources.clone();
        let touched = &self.touched;
        paths.iter().any(|p| relevant(p, &sources) || relevant(p, touched) || in_dir(p, touched))
            && stamp(&self.path, touched) != self.last_stamp
    }

    /// One attempt: load (settled), then swap or reject, and answer the requester.
    async fn reload(&mut self, req: ReloadRequest) {
        let (before, result, now_touched) =
            load_settled(&self.path, req.cause, &self.touched, self.endpoints.as_ref(), self.handle.overrides()).await;
        // Files the new content names that the last attempt did not read: stamped as they are now.
        let mut after = stamp(&self.path, &now_touched);
        after.extend(before);
        self.last_stamp = after;
        self.touched = now_touched;
        // The same errors on the same config text as the last rejection: not another failed
        // reload (not counted, not logged again; `GET /v1/config` still shows it).
        let rejection = result.as_ref().err().map(|e| rejection_key(&self.path, e));
        if rejection.is_some() && rejection == self.last_rejection {
            self.handle.note_repeated_rejection();
            tracing::debug!(cause = req.cause, "config still invalid, unchanged");
            if let Some(reply) = req.reply {
                let version = self.handle.load().version;
                let errors = self.handle.status().last_error.unwrap_or_default();
                let _ = reply.send(ReloadOutcome::Rejected { version, errors });
            }
            return;
        }
        self.last_rejection = rejection;
        // Compiling 1,000 cards takes tens of milliseconds of CPU: off the async workers, so
        // turns keep being served meanwhile (the old snapshot is dropped there too).
        let handle = Arc::clone(&self.handle);
        let outcome = match tokio::task::spawn_blocking(move || handle.apply_checked(result, &routing_gate)).await {
            Ok(outcome) => outcome,
            Err(e) => {
                tracing::error!(error = %e, "config reload task failed");
                let version = self.handle.load().version;
                ReloadOutcome::Rejected {
                    version,
                    errors: vec![crate::config::ConfigError {
                        file: self.path.display().to_string(),
                        line: None,
                        column: None,
                        pointer: None,
                        message: format!("reload failed: {e}"),
                    }],
                }
            }
        };
        match &outcome {
            ReloadOutcome::Swapped { version, .. } => crate::metrics::reload("ok", *version),
            ReloadOutcome::Rejected { version, .. } => crate::metrics::reload("failed", *version),
            ReloadOutcome::Unchanged { .. } => {}
        }
        log_outcome(req.cause, &outcome);
        if let (ReloadOutcome::Swapped { .. }, Some(d)) = (&outcome, self.debouncer.as_mut()) {
            rewatch(d.watcher(), &mut self.watched, &watch_dirs(&self.path, &self.handle.load().sources));
        }
        if let Some(reply) = req.reply {
            let _ = reply.send(outcome);
        }
    }
}

/// How the files looked when the load began, the load's result and what it read. A
/// file-triggered load that fails may have caught a save half-way (truncated, not yet written):
/// it is read once more after [`SETTLE`], and that attempt is the one judged.
async fn load_settled(
    path: &Path,
    cause: &str,
    touched: &[PathBuf],
    endpoints: Option<&snapshot::EndpointOverride>,
    auth: &crate::config::AuthOverrides,
) -> (Stamp, Result<crate::config::LoadedConfig, crate::config::ConfigErrors>, Vec<PathBuf>) {
    let before = stamp(path, touched);
    let (result, now_touched) = snapshot::load_snapshot_traced_with(path, endpoints, auth).await;
    if cause != "file" || result.is_ok() {
        return (before, result, now_touched);
    }
    tokio::time::sleep(SETTLE).await;
    let before = stamp(path, &now_touched);
    let (result, now_touched) = snapshot::load_snapshot_traced_with(path, endpoints, auth).await;
    (before, result, now_touched)
}

/// The routing tests of a new snapshot, when its `supervisor.reload_requires_routing_tests` is on.
fn routing_gate(registry: &crate::registry::Registry) -> Vec<crate::config::ConfigError> {
    if registry.settings.reload_requires_routing_tests {
        crate::routing::check_registry(registry)
    } else {
        Vec::new()
    }
}

/// How `config` and `touched` (the files and directories the last attempt read or tried to read)
/// look on disk (metadata only: reading a file would itself be a file event). The watched
/// directories themselves are not stamped: other files coming and going in them (a session
/// database's side files) are no change of the config.
fn stamp(config: &Path, touched: &[PathBuf]) -> Stamp {
    std::iter::once(config)
        .chain(touched.iter().map(PathBuf::as_path))
        .map(|p| (p.to_path_buf(), std::fs::metadata(p).ok().map(|m| FileStamp::of(&m))))
        .collect()
}

/// How each file looked (`None`: absent), by path.
type Stamp = BTreeMap<PathBuf, Option<FileStamp>>;

/// Size, modification time and inode of a file or directory.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileStamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    inode: u64,
}

impl FileStamp {
    fn of(m: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(m);
        #[cfg(not(unix))]
        let inode = 0;
        Self { len: m.len(), modified: m.modified().ok(), inode }
    }
}

/// What identifies a rejection: the config's text and the errors.
fn rejection_key(config: &Path, errors: &crate::config::ConfigErrors) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    if let Ok(text) = crate::files::read_text(config, crate::files::MAX_FILE_BYTES) {
        h.update(text.as_bytes());
    }
    for e in &errors.0 {
        h.update(e.to_string().as_bytes());
        h.update([0]);
    }
    h.finalize().to_vec()
}

/// The directories holding `sources` (and the config itself).
fn watch_dirs(config: &Path, sources: &[PathBuf]) -> BTreeSet<PathBuf> {
    std::iter::once(config)
        .chain(sources.iter().map(PathBuf::as_path))
        .filter_map(|p| p.parent())
        .map(|d| if d.as_os_str().is_empty() { PathBuf::from(".") } else { d.to_path_buf() })
        .collect()
}

fn rewatch(
    watcher: &mut dyn notify_debouncer_mini::notify::Watcher,
    watched: &mut BTreeSet<PathBuf>,
    want: &BTreeSet<PathBuf>,
) {
    for dir in watched.difference(want) {
        let _ = watcher.unwatch(dir);
    }
    for dir in want.difference(watched) {
        if let Err(e) = watcher.watch(dir, RecursiveMode::NonRecursive) {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot watch directory");
        }
    }
    *watched = want.clone();
}

/// A changed path matters if it is a source file or a Kubernetes-style `..data` entry.
fn relevant(changed: &Path, sources: &[PathBuf]) -> bool {
    let name = changed.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    name.starts_with("..")
        || sources.iter().any(|s| {
            s == changed
                || (s.file_name() == changed.file_name() && s.parent().map(canon) == changed.parent().map(canon))
        })
}

/// `true` when `changed` is an entry of a directory the last attempt read (the texts directory
/// and its locale directories: a new override file).
fn in_dir(changed: &Path, touched: &[PathBuf]) -> bool {
    changed.parent().is_some_and(|parent| touched.iter().any(|t| t.is_dir() && canon(t) == canon(parent)))
}

fn canon(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

fn log_outcome(cause: &str, outcome: &ReloadOutcome) {
    match outcome {
        ReloadOutcome::Swapped { version, added, removed, changed } => {
            tracing::info!(cause, version, ?added, ?removed, ?changed, "config reloaded");
        }
        ReloadOutcome::Unchanged { version } => tracing::debug!(cause, version, "config unchanged"),
        ReloadOutcome::Rejected { version, errors } => {
            for e in errors {
                tracing::error!(cause, serving_version = version, error = %e, "config rejected");
            }
        }
    }
}
