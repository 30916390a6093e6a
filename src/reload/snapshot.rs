//! The one load pipeline, used at start-up and by every reload: read and validate the files off
//! the async runtime ([`crate::config::load()`]), then fill card-registered `a2a` agents from their
//! Agent Cards ([`crate::dispatch::a2a::resolve_agent_cards`]). Compiling the result into a
//! [`crate::registry::Registry`] is the registry's job.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::{AuthOverrides, ConfigError, ConfigErrors, LoadedConfig};
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
    load_snapshot_traced_with(path, None, &AuthOverrides::default()).await
}

/// Moves agent endpoints after every load: `(agent id, configured URL)` -> the URL to use
/// instead, or `None` to keep it. `switchboard demo --agents-port-base` runs the sample agents on
/// other ports than the config names with it; the config file is not changed.
#[derive(Clone)]
pub struct EndpointOverride(pub Arc<MoveEndpoint>);

/// `(agent id, configured URL)` -> the URL to use instead, if any.
pub type MoveEndpoint = dyn Fn(&str, &reqwest::Url) -> Option<reqwest::Url> + Send + Sync;

impl std::fmt::Debug for EndpointOverride {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EndpointOverride")
    }
}

/// [`load_snapshot_traced`], with the agent endpoints moved by `endpoints` and the file's `auth`
/// values replaced by `auth` (`serve --auth-…`).
pub async fn load_snapshot_traced_with(
    path: &Path,
    endpoints: Option<&EndpointOverride>,
    auth: &AuthOverrides,
) -> (Result<LoadedConfig, ConfigErrors>, Vec<PathBuf>) {
    let (p, auth) = (path.to_path_buf(), auth.clone());
    let (result, touched) = match tokio::task::spawn_blocking(move || crate::config::load_traced_with(&p, &auth)).await
    {
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
            if let Some(EndpointOverride(move_to)) = endpoints {
                for card in &mut loaded.agents {
                    if let Some(url) = move_to(&card.spec.id, &card.url) {
                        card.url = url;
                    }
                }
            }
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
    open_with(path, None, &AuthOverrides::default()).await
}

/// [`open`], with the agent endpoints moved by `endpoints` and the `auth` overrides (kept by the
/// handle: every reload applies them too).
///
/// # Errors
/// Every config error.
pub async fn open_with(
    path: &Path,
    endpoints: Option<&EndpointOverride>,
    auth: &AuthOverrides,
) -> Result<RegistryHandle, ConfigErrors> {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let loaded = load_snapshot_traced_with(&path, endpoints, auth).await.0?;
    Ok(RegistryHandle::new(Registry::from_config(loaded, 1)?).with_overrides(auth.clone()))
}
