//! The JSON Web Key Sets of `auth.jwt.jwks_url`: fetched on first use, used for `jwks_max_age`,
//! fetched again early when a token names a `kid` the set lacks (key rotation) — but never more
//! often than once per `jwks_min_refresh`, so tokens with made-up `kid`s cannot make the
//! supervisor hammer the issuer. A failed fetch keeps the keys it had.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey};

use super::AuthError;

/// Largest JWKS document read, in bytes.
pub const MAX_JWKS_BYTES: usize = 256 * 1024;

#[derive(Debug)]
struct Entry {
    keys: JwkSet,
    /// When `keys` were fetched.
    fetched: Option<Instant>,
    /// When a fetch was last tried.
    tried: Instant,
}

/// Key sets by URL.
#[derive(Debug)]
pub struct JwksCache {
    client: reqwest::Client,
    sets: tokio::sync::Mutex<HashMap<String, Entry>>,
    fetches: std::sync::atomic::AtomicU64,
}

impl Default for JwksCache {
    fn default() -> Self {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap_or_default();
        Self { client, sets: tokio::sync::Mutex::default(), fetches: std::sync::atomic::AtomicU64::new(0) }
    }
}

impl JwksCache {
    /// The key `kid` of the set at `url` and the algorithms it may verify.
    ///
    /// # Errors
    /// [`AuthError::Invalid`] for a `kid` the set lacks (after a refresh, when one is allowed);
    /// [`AuthError::Unavailable`] when the set was never fetched.
    pub async fn key(
        &self,
        url: &str,
        kid: &str,
        min_refresh: Duration,
        max_age: Duration,
    ) -> Result<(DecodingKey, Vec<Algorithm>), AuthError> {
        // One fetch at a time: concurrent requests with a new kid wait for the same refresh.
        let mut sets = self.sets.lock().await;
        let now = Instant::now();
        let entry = sets.get(url);
        let fresh = entry.is_some_and(|e| e.fetched.is_some_and(|f| now.duration_since(f) < max_age));
        let known = entry.and_then(|e| e.keys.find(kid)).is_some();
        let may_fetch = entry.is_none_or(|e| now.duration_since(e.tried) >= min_refresh);
        if !(fresh && known) && may_fetch {
            let fetched = self.fetch(url).await;
            let entry = sets.entry(url.to_string()).or_insert(Entry {
                keys: JwkSet { keys: Vec::new() },
                fetched: None,
                tried: now,
            });
            entry.tried = Instant::now();
            match fetched {
                Ok(keys) => {
                    entry.keys = keys;
                    entry.fetched = Some(entry.tried);
                }
                Err(e) => tracing::warn!(url, error = %e, "JWKS fetch failed; keeping the cached keys"),
            }
        }
        let entry = sets.get(url).ok_or_else(|| AuthError::Unavailable("the key set could not be fetched".into()))?;
        if entry.fetched.is_none() {
            return Err(AuthError::Unavailable("the key set could not be fetched".into()));
        }
        let jwk = entry.keys.find(kid).ok_or_else(|| AuthError::Invalid(format!("unknown key id {kid:?}")))?;
        decoding_key(jwk)
    }

    /// How many times a key set was fetched (tests, metrics).
    pub fn fetches(&self) -> u64 {
        self.fetches.load(std::sync::atomic::Ordering::Relaxed)
    }

    async fn fetch(&self, url: &str) -> Result<JwkSet, String> {
        self.fetches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let resp = self.client.get(url).send().await.map_err(|e| e.to_string())?;
        if !resp.status().is_success() {
            return Err(format!("HTTP status {}", resp.status()));
        }
        if resp.content_length().is_some_and(|n| n as usize > MAX_JWKS_BYTES) {
            return Err("the key set is too large".into());
        }
        let bytes = resp.bytes().await.map_err(|e| e.to_string())?;
        if bytes.len() > MAX_JWKS_BYTES {
            return Err("the key set is too large".into());
        }
        serde_json::from_slice(&bytes).map_err(|e| format!("not a JWK set: {e}"))
    }
}

/// A public key of a JWK and the algorithms it verifies (the JWK's `alg` if it names one).
/// Symmetric (`oct`) keys are refused: a published key set holds public keys only.
fn decoding_key(jwk: &Jwk) -> Result<(DecodingKey, Vec<Algorithm>), AuthError> {
    use Algorithm::{EdDSA, ES256, ES384, PS256, PS384, PS512, RS256, RS384, RS512};
    let family = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => vec![RS256, RS384, RS512, PS256, PS384, PS512],
        AlgorithmParameters::EllipticCurve(_) => vec![ES256, ES384],
        AlgorithmParameters::OctetKeyPair(_) => vec![EdDSA],
        AlgorithmParameters::OctetKey(_) => {
            return Err(AuthError::Invalid("symmetric keys are not accepted from a JWKS".into()))
        }
    };
    let named = jwk.common.key_algorithm.and_then(|a| a.to_string().parse::<Algorithm>().ok());
    let algorithms = match named {
        Some(a) if family.contains(&a) => vec![a],
        Some(_) => return Err(AuthError::Invalid("the key's alg does not match its type".into())),
        None => family,
    };
    let key = DecodingKey::from_jwk(jwk).map_err(|e| AuthError::Invalid(format!("unusable key: {e}")))?;
    Ok((key, algorithms))
}
