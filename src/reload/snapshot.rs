//! The one load pipeline, used at start-up and by every reload: read and validate the files off
//! the async runtime ([`crate::config::load()`]), then fill card-registered `a2a` agents from their
//! Agent Cards ([`crate::dispatch::a2a::resolve_agent_cards`]). Compiling the result into a
//! [`crate::registry::Registry`] is the registry's job.

use std::path::{Path, PathBuf};

use crate::config::{ConfigError, ConfigErrors, LoadedConfig};
use crate::dispatch::a2a::resolve_agent_cards;
use crate::dispatch::DispatchLimits;
use crate::registry::{Registry, RegistryHandle};

/// Loads the config at `path` (absolute or relative to the working directory) and resolves its
/// Agent Cards.
///
/// # Errors
/// Every config error; a loader panic as one error naming the file.
pub async fn load_snapshot(path: &Path) -> Result<LoadedConfig, ConfigErrors> {
    load_snapshot_traced(path).await.0
}

/// [`load_snapshot`], also returning every path the load read or tried to read
/// ([`crate::config::load_traced`]), whether it succeeded or not.
pub async fn load_snapshot_traced(path: &Path) -> (Result<LoadedConfig, ConfigErrors>, Vec<PathBuf>) {
    let p = path.to_path_buf();
    let (result, touched) = match tokio::task::spawn_blocking(move || crate::config::load_traced(&p)).await {
        Ok(traced) => traced,
        Err(e) => {
            let error = ConfigError {
                file: path.display().to_string(),
                line: None,
                column: None,
                pointer: None,
                message: format!("config loader failed: {e}"),
            };
            return (Err(ConfigErrors(vec![error])), vec![path.to_path_buf()]);
        }
    };
    let result = match result {
        Ok(mut loaded) => {
            resolve_agent_cards(&mut loaded, DispatchLimits::default()).await;
            Ok(loaded)
        }
        Err(e) => Err(e),
    };
    (result, touched)
}

/// The serving path's first snapshot: [`load_snapshot`] compiled into a version-1 handle.
///
/// # Errors
/// Every config error.
pub async fn open(path: &Path) -> Result<RegistryHandle, ConfigErrors> {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let loaded = load_snapshot(&path).await?;
    Ok(RegistryHandle::new(Registry::from_config(loaded, 1)?))
}
