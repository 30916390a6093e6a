//! Who the caller is, and what a caller may do (docs/config.md "auth", docs/http-api.md
//! "Authentication").
//!
//! - [`AuthConfig`]: the `auth` settings of one registry snapshot, compiled (static key, proxy
//!   CIDRs);
//! - [`Authenticator`]: verifies a request's credentials against an [`AuthConfig`] (mode `jwt`:
//!   bearer JWTs, keys from a JWKS URL cached in [`jwks`] or a key from the environment; mode
//!   `trusted_header`: a header believed only from trusted proxy addresses), giving the verified
//!   [`Principal`];
//! - [`check_write`]: whether a `write` capability card may run for a caller;
//! - [`audit`]: the audit lines of `write` dispatches.
//!
//! `alg: none` tokens are never accepted: the token's algorithm must be one of the key's
//! family (`jsonwebtoken` has no unsigned algorithm).

pub mod audit;
pub mod jwks;

use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::Arc;

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{json, Map, Value};

use crate::config::{AuthKey, AuthMode, AuthSettings, UnverifiedWrites};

/// Longest user id a token or header may name, in characters (as `user_id` in a body).
pub const MAX_USER_CHARS: usize = 128;

/// A verified caller.
#[derive(Clone, PartialEq)]
pub struct Principal {
    /// The user: the JWT's `sub`, or the trusted header's value.
    pub user_id: String,
    /// Scopes the user holds (from `auth.jwt.scopes_claim` or `trusted_header.scopes_header`).
    pub scopes: Vec<String>,
    /// The claims named by `auth.jwt.user_claims` that the token has.
    pub claims: Map<String, Value>,
    /// The bearer token as sent (mode `jwt`), forwarded to agents with `forward_user_token`.
    pub token: Option<Arc<str>>,
}

impl std::fmt::Debug for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Principal")
            .field("user_id", &self.user_id)
            .field("scopes", &self.scopes)
            .field("claims", &self.claims)
            .field("token", &self.token.as_ref().map(|_| "…"))
            .finish()
    }
}

impl Principal {
    /// `context.user` of a sub-agent request: `{id, verified: true, scopes, claims}` (never the
    /// token).
    pub fn context(&self) -> Value {
        json!({ "id": self.user_id, "verified": true, "scopes": self.scopes, "claims": self.claims })
    }
}

/// Why a request's credentials were not accepted.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AuthError {
    /// No credentials (no bearer token; no trusted header).
    #[error("authentication required: {0}")]
    Missing(&'static str),
    /// The token is malformed, has a bad signature, algorithm, issuer or audience, or names no
    /// user.
    #[error("invalid token: {0}")]
    Invalid(String),
    /// The token's `exp` passed (or its `nbf` is ahead), beyond the leeway.
    #[error("the token has expired or is not yet valid")]
    Expired,
    /// Mode `trusted_header`: the request did not come from a trusted proxy.
    #[error("the request did not come through a trusted proxy")]
    UntrustedPeer,
    /// The keys could not be fetched (JWKS unreachable) and none are cached for the token.
    #[error("the token's keys are unavailable: {0}")]
    Unavailable(String),
}

impl AuthError {
    /// The `WWW-Authenticate` value of the 401 (RFC 6750 §3 for bearer tokens).
    pub fn challenge(&self, mode: AuthMode) -> String {
        let realm = "realm=\"switchboard\"";
        match (mode, self) {
            (AuthMode::Jwt, Self::Missing(_)) => format!("Bearer {realm}"),
            (AuthMode::Jwt, e) => {
                let description = e.to_string().replace(['"', '\\'], "'");
                format!("Bearer {realm}, error=\"invalid_token\", error_description=\"{description}\"")
            }
            _ => format!("TrustedHeader {realm}"),
        }
    }
}

/// The `auth` settings of one snapshot, compiled.
#[derive(Default)]
pub struct AuthConfig {
    /// The effective settings (file + command-line overrides).
    pub settings: AuthSettings,
    /// The key from the environment, with the algorithms of its family.
    key: Option<(DecodingKey, Vec<Algorithm>)>,
    /// `trusted_header.trusted_proxies`, parsed.
    proxies: Vec<ipnet::IpNet>,
}

impl std::fmt::Debug for AuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthConfig").field("settings", &self.settings).field("proxies", &self.proxies).finish()
    }
}

impl AuthConfig {
    /// Compiles `settings` with the environment `key`.
    ///
    /// # Errors
    /// A PEM key that is not an RSA, EC or Ed25519 public key.
    pub fn new(settings: AuthSettings, key: Option<&AuthKey>) -> Result<Self, String> {
        let key = match key {
            None => None,
            Some(AuthKey::Hmac(secret)) => Some((
                DecodingKey::from_secret(secret.as_bytes()),
                vec![Algorithm::HS256, Algorithm::HS384, Algorithm::HS512],
            )),
            Some(AuthKey::Pem(pem)) => Some(pem_key(pem.as_bytes())?),
        };
        let proxies =
            settings.trusted_header.trusted_proxies.iter().filter_map(|c| crate::config::parse_cidr(c)).collect();
        Ok(Self { settings, key, proxies })
    }

    /// The mode.
    pub fn mode(&self) -> AuthMode {
        self.settings.mode
    }

    /// `true` when `ip` is in a trusted proxy CIDR.
    pub fn trusts(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        self.proxies.iter().any(|net| net.contains(&ip))
    }
}

fn pem_key(pem: &[u8]) -> Result<(DecodingKey, Vec<Algorithm>), String> {
    use Algorithm::{EdDSA, ES256, ES384, PS256, PS384, PS512, RS256, RS384, RS512};
    if let Ok(k) = DecodingKey::from_rsa_pem(pem) {
        return Ok((k, vec![RS256, RS384, RS512, PS256, PS384, PS512]));
    }
    if let Ok(k) = DecodingKey::from_ec_pem(pem) {
        return Ok((k, vec![ES256, ES384]));
    }
    if let Ok(k) = DecodingKey::from_ed_pem(pem) {
        return Ok((k, vec![EdDSA]));
    }
    Err("auth.jwt.public_key_env: not a PEM RSA, EC or Ed25519 public key".into())
}

/// Verifies credentials; holds the JWKS cache (shared by every snapshot: keys are cached per URL).
#[derive(Debug, Default)]
pub struct Authenticator {
    jwks: jwks::JwksCache,
}

/// What a request carries that identifies its caller.
#[derive(Debug, Clone, Copy)]
pub struct Credentials<'a> {
    /// The request's headers.
    pub headers: &'a axum::http::HeaderMap,
    /// The peer address, when the server knows it.
    pub peer: Option<IpAddr>,
}

impl Authenticator {
    /// The verified caller of a request under `config`: `Ok(None)` in mode `none`.
    ///
    /// # Errors
    /// [`AuthError`]: to be answered with 401 (503 for [`AuthError::Unavailable`]).
    pub async fn authenticate(
        &self,
        config: &AuthConfig,
        creds: Credentials<'_>,
    ) -> Result<Option<Principal>, AuthError> {
        match config.mode() {
            AuthMode::None => Ok(None),
            AuthMode::Jwt => self.jwt(config, creds.headers).await.map(Some),
            AuthMode::TrustedHeader => trusted_header(config, creds).map(Some),
        }
    }

    async fn jwt(&self, config: &AuthConfig, headers: &axum::http::HeaderMap) -> Result<Principal, AuthError> {
        let token = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer_token)
            .ok_or(AuthError::Missing("send Authorization: Bearer <token>"))?;
        let header = jsonwebtoken::decode_header(token).map_err(|e| AuthError::Invalid(e.to_string()))?;
        let jwt = &config.settings.jwt;
        let (key, algorithms) = match (&config.key, &jwt.jwks_url) {
            (Some((key, algs)), _) => (key.clone(), algs.clone()),
            (None, Some(url)) => {
                let kid = header.kid.as_deref().ok_or_else(|| AuthError::Invalid("the token has no kid".into()))?;
                self.jwks.key(url, kid, jwt.jwks_min_refresh.0, jwt.jwks_max_age.0).await?
            }
            (None, None) => return Err(AuthError::Unavailable("no verification key is configured".into())),
        };
        if !algorithms.contains(&header.alg) {
            return Err(AuthError::Invalid(format!("algorithm {:?} is not allowed for this key", header.alg)));
        }
        let mut validation = Validation::new(header.alg);
        validation.leeway = jwt.leeway.0.as_secs();
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "sub", "iss", "aud"]);
        if let Some(iss) = &jwt.issuer {
            validation.set_issuer(&[iss]);
        }
        if let Some(aud) = &jwt.audience {
            validation.set_audience(&[aud]);
        }
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation).map_err(|e| {
            use jsonwebtoken::errors::ErrorKind;
            match e.kind() {
                ErrorKind::ExpiredSignature | ErrorKind::ImmatureSignature => AuthError::Expired,
                _ => AuthError::Invalid(e.to_string()),
            }
        })?;
        let claims = data.claims;
        let user_id = claims.get("sub").and_then(Value::as_str).unwrap_or_default();
        check_user(user_id)?;
        let scopes = scopes_of(claims.get(&jwt.scopes_claim));
        let selected = jwt.user_claims.iter().filter_map(|c| claims.get(c).map(|v| (c.clone(), v.clone()))).collect();
        Ok(Principal { user_id: user_id.to_string(), scopes, claims: selected, token: Some(token.into()) })
    }
}

fn check_user(user_id: &str) -> Result<(), AuthError> {
    let ok = !user_id.is_empty() && user_id.chars().count() <= MAX_USER_CHARS && !user_id.chars().any(char::is_control);
    if ok {
        Ok(())
    } else {
        Err(AuthError::Invalid(format!("the user must be 1-{MAX_USER_CHARS} printable characters")))
    }
}

fn trusted_header(config: &AuthConfig, creds: Credentials<'_>) -> Result<Principal, AuthError> {
    if !creds.peer.is_some_and(|ip| config.trusts(ip)) {
        return Err(AuthError::UntrustedPeer);
    }
    let th = &config.settings.trusted_header;
    let value =
        |name: &str| creds.headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim).filter(|v| !v.is_empty());
    let user = value(&th.user_header).ok_or(AuthError::Missing("the trusted proxy sent no user header"))?;
    check_user(user)?;
    let scopes = th.scopes_header.as_deref().and_then(value).map(|s| scopes_of(Some(&json!(s)))).unwrap_or_default();
    Ok(Principal { user_id: user.to_string(), scopes, claims: Map::new(), token: None })
}

/// Scopes from a claim: a space-separated string, or an array of strings.
pub fn scopes_of(claim: Option<&Value>) -> Vec<String> {
    match claim {
        Some(Value::String(s)) => s.split_whitespace().map(str::to_string).collect(),
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_string).collect(),
        _ => Vec::new(),
    }
}

/// The token of an `Authorization: Bearer <token>` value; the scheme is case-insensitive
/// (RFC 7235), and spaces around the token are ignored.
pub fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim_start().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim()).filter(|t| !t.is_empty())
}

/// Why a `write` sub-task may not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denied {
    /// Nobody is verified (mode `none` with `unverified_writes: block`).
    SignInRequired,
    /// The verified user lacks these of the card's scopes.
    MissingScopes(Vec<String>),
}

impl Denied {
    /// Stable code: `sign_in_required` or `insufficient_scope`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::SignInRequired => "sign_in_required",
            Self::MissingScopes(_) => "insufficient_scope",
        }
    }
}

/// Whether a `write` card needing `scopes` may run for `principal` (`None`: not verified, mode
/// `none`).
///
/// # Errors
/// [`Denied`] saying why not.
pub fn check_write(
    principal: Option<&Principal>,
    scopes: &[String],
    unverified: UnverifiedWrites,
) -> Result<(), Denied> {
    let Some(p) = principal else {
        return match unverified {
            UnverifiedWrites::Allow => Ok(()),
            UnverifiedWrites::Block => Err(Denied::SignInRequired),
        };
    };
    let held: HashSet<&str> = p.scopes.iter().map(String::as_str).collect();
    let missing: Vec<String> = scopes.iter().filter(|s| !held.contains(s.as_str())).cloned().collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(Denied::MissingScopes(missing))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principal(scopes: &[&str]) -> Principal {
        Principal {
            user_id: "u".into(),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            claims: Map::new(),
            token: None,
        }
    }

    #[test]
    fn writes_need_every_scope_of_a_verified_user() {
        let need = vec!["bookings:write".to_string(), "pay".to_string()];
        assert_eq!(check_write(Some(&principal(&["pay", "bookings:write"])), &need, UnverifiedWrites::Block), Ok(()));
        assert_eq!(
            check_write(Some(&principal(&["pay"])), &need, UnverifiedWrites::Allow),
            Err(Denied::MissingScopes(vec!["bookings:write".into()]))
        );
        assert_eq!(check_write(None, &need, UnverifiedWrites::Allow), Ok(()));
        assert_eq!(check_write(None, &need, UnverifiedWrites::Block), Err(Denied::SignInRequired));
    }

    #[test]
    fn scopes_come_from_a_string_or_an_array() {
        assert_eq!(scopes_of(Some(&json!("a b  c"))), ["a", "b", "c"]);
        assert_eq!(scopes_of(Some(&json!(["a", 1, "b"]))), ["a", "b"]);
        assert!(scopes_of(Some(&json!(3))).is_empty());
        assert!(scopes_of(None).is_empty());
    }

    #[test]
    fn trusted_proxies_match_by_cidr_and_mapped_v4() {
        let mut settings = AuthSettings::default();
        settings.trusted_header.trusted_proxies = vec!["10.0.0.0/8".into(), "::1".into()];
        let config = AuthConfig::new(settings, None).unwrap();
        assert!(config.trusts("10.1.2.3".parse().unwrap()));
        assert!(config.trusts("::ffff:10.1.2.3".parse().unwrap()));
        assert!(config.trusts("::1".parse().unwrap()));
        assert!(!config.trusts("127.0.0.1".parse().unwrap()));
    }
}
