//! Who a request acts for (docs/http-api.md, "Authentication").
//!
//! With `auth.mode` `jwt` or `trusted_header`, [`verify`] gives the verified caller (or the 401 /
//! 503), and [`acting_user`] makes it the request's user: a request that names another user is
//! refused (403), one that names none acts for the verified user.
//!
//! In mode `none`, callers without a user identity: AG-UI runs and `/a2a` calls that name no
//! user. With `supervisor.anonymous: deny` (the default) they are refused; with `allow` each one
//! is its own user, `anon-<digest>` of a server-issued opaque token the client sends back in
//! `x-anonymous-token`. Sessions are keyed by user and thread, so an anonymous thread belongs to
//! the caller that holds its token: knowing (or guessing) a thread id is not enough to resume it.

use std::sync::Arc;

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use sha2::{Digest, Sha256};

use super::error::ApiError;
use super::limits::ClientAddr;
use super::AppState;
use crate::auth::{AuthError, Credentials, Principal};
use crate::config::model::AnonymousCallers;

/// The verified caller of a request under the serving snapshot's `auth` (`None` in mode
/// `none`).
///
/// # Errors
/// [`ApiError::Unauthenticated`] (401 + `WWW-Authenticate`) for missing, invalid or expired
/// credentials; [`ApiError::AuthUnavailable`] (503) when the token's keys cannot be fetched.
pub async fn verify(
    state: &AppState,
    headers: &HeaderMap,
    client: ClientAddr,
) -> Result<Option<Arc<Principal>>, ApiError> {
    let registry = state.supervisor.registry.load();
    let config = &registry.auth;
    match state.auth.authenticate(config, Credentials { headers, peer: client.0 }).await {
        Ok(p) => Ok(p.map(Arc::new)),
        Err(AuthError::Unavailable(message)) => {
            tracing::warn!(error = %message, "cannot verify a token: keys unavailable");
            Err(ApiError::AuthUnavailable(format!("the token cannot be verified now: {message}")))
        }
        Err(e) => {
            tracing::info!(error = %e, "request refused: not authenticated");
            crate::metrics::rejected("unauthenticated");
            Err(ApiError::Unauthenticated { challenge: e.challenge(config.mode()), message: e.to_string() })
        }
    }
}

/// The user a request acts for: the verified caller's id when there is one (every user `named`
/// by the request must be that one, else 403), else the first user named.
///
/// # Errors
/// [`ApiError::UserMismatch`].
pub fn acting_user<'a>(
    principal: Option<&Principal>,
    named: impl IntoIterator<Item = Option<&'a str>>,
) -> Result<Option<String>, ApiError> {
    let mut named = named.into_iter().flatten().filter(|u| !u.is_empty());
    match principal {
        Some(p) => match named.find(|u| *u != p.user_id) {
            Some(other) => Err(ApiError::UserMismatch { named: other.to_string() }),
            None => Ok(Some(p.user_id.clone())),
        },
        None => Ok(named.next().map(str::to_string)),
    }
}

/// Header carrying an anonymous caller's token, both ways.
pub const TOKEN_HEADER: &str = "x-anonymous-token";
/// Response header naming the user an anonymous caller was served as (for `GET /v1/sessions`).
pub const USER_HEADER: &str = "x-user-id";

/// Who an anonymous caller is.
#[derive(Debug, Clone)]
pub struct Anonymous {
    /// `anon-` + 32 hex digits of SHA-256 over the token.
    pub user_id: String,
    /// The token (the caller's own, or a new one).
    pub token: String,
}

impl Anonymous {
    /// The caller of a request that names no user: its token from `x-anonymous-token` (32 hex
    /// digits), or a new one. `None` when anonymous callers are denied.
    pub fn of(headers: &HeaderMap, policy: AnonymousCallers) -> Option<Self> {
        if policy == AnonymousCallers::Deny {
            return None;
        }
        let given = headers
            .get(TOKEN_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|t| t.len() == 32 && t.bytes().all(|b| b.is_ascii_hexdigit()))
            .map(str::to_ascii_lowercase);
        let token = given.unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string());
        Some(Self { user_id: user_of(&token), token })
    }

    /// Adds `x-anonymous-token` and `x-user-id` to a response's headers.
    pub fn tell(&self, headers: &mut HeaderMap) {
        for (name, value) in [(TOKEN_HEADER, &self.token), (USER_HEADER, &self.user_id)] {
            if let Ok(v) = HeaderValue::from_str(value) {
                headers.insert(HeaderName::from_static(name), v);
            }
        }
    }
}

/// The user an anonymous caller with `token` is served as.
pub fn user_of(token: &str) -> String {
    let digest = Sha256::digest(token.as_bytes());
    let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!("anon-{hex}")
}

/// What a caller denied for having no identity is told.
pub const DENIED: &str =
    "a user identity is required (state.user_id, forwardedProps.user_id or header x-user-id); anonymous callers are not allowed";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_names_one_anonymous_user_and_a_missing_one_a_new_user() {
        let deny = Anonymous::of(&HeaderMap::new(), AnonymousCallers::Deny);
        assert!(deny.is_none());
        let a = Anonymous::of(&HeaderMap::new(), AnonymousCallers::Allow).unwrap();
        let b = Anonymous::of(&HeaderMap::new(), AnonymousCallers::Allow).unwrap();
        assert_ne!(a.user_id, b.user_id, "no token: a new user each time");
        let mut headers = HeaderMap::new();
        headers.insert(TOKEN_HEADER, HeaderValue::from_str(&a.token).unwrap());
        assert_eq!(Anonymous::of(&headers, AnonymousCallers::Allow).unwrap().user_id, a.user_id);
        assert!(!a.user_id.contains(&a.token), "the user id does not reveal the token");
        headers.insert(TOKEN_HEADER, HeaderValue::from_static("guess"));
        assert_ne!(Anonymous::of(&headers, AnonymousCallers::Allow).unwrap().user_id, a.user_id);
    }
}
