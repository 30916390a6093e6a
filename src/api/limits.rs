//! Admission of chat-like requests: load shedding past `max_concurrent_requests` open turns
//! (503 + `Retry-After`), a per-user rate and a per-client-address rate (`governor`, 429 +
//! `Retry-After`; the user id is the client's word, its address is not).
//!
//! A turn's [`Admission`] lives as long as its response stream, so an open SSE stream counts as
//! a request in flight.

use std::num::NonZeroU32;
use std::sync::Arc;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::error::ApiError;
use crate::metrics::StreamGuard;

/// The limits of one server.
pub struct Limits {
    slots: Arc<Semaphore>,
    per_user: Option<DefaultKeyedRateLimiter<String>>,
    per_address: Option<DefaultKeyedRateLimiter<std::net::IpAddr>>,
}

impl std::fmt::Debug for Limits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limits").field("available", &self.slots.available_permits()).finish()
    }
}

/// Held while a turn's response is open.
pub struct Admission {
    _permit: OwnedSemaphorePermit,
    _stream: StreamGuard,
}

impl Limits {
    /// At most `max_concurrent` turns at once; `per_user_per_minute` turns a minute per user
    /// (0 = unlimited).
    pub fn new(max_concurrent: usize, per_user_per_minute: u32) -> Self {
        let per_user =
            NonZeroU32::new(per_user_per_minute).map(|n| DefaultKeyedRateLimiter::keyed(Quota::per_minute(n)));
        Self { slots: Arc::new(Semaphore::new(max_concurrent.max(1))), per_user, per_address: None }
    }

    /// Also at most `per_minute` turns a minute per client address (0 = unlimited).
    #[must_use]
    pub fn with_address_rate(mut self, per_minute: u32) -> Self {
        self.per_address = NonZeroU32::new(per_minute).map(|n| DefaultKeyedRateLimiter::keyed(Quota::per_minute(n)));
        self
    }

    /// [`Limits::admit`] for a request from `address` (when the server knows it), which also
    /// counts against the address's rate.
    ///
    /// # Errors
    /// As [`Limits::admit`].
    pub fn admit_from(&self, user: &str, address: Option<std::net::IpAddr>) -> Result<Admission, ApiError> {
        if let (Some(limiter), Some(ip)) = (&self.per_address, address) {
            if let Err(not_until) = limiter.check_key(&ip) {
                crate::metrics::rejected("address_rate_limited");
                let wait = not_until.wait_time_from(DefaultClock::default().now());
                return Err(ApiError::RateLimited(wait.as_secs().max(1)));
            }
            if limiter.len() > 100_000 {
                limiter.retain_recent();
            }
        }
        self.admit(user)
    }

    /// Admits a turn of `user`.
    ///
    /// # Errors
    /// [`ApiError::RateLimited`] or [`ApiError::Overloaded`], each with a retry delay.
    pub fn admit(&self, user: &str) -> Result<Admission, ApiError> {
        if let Some(limiter) = &self.per_user {
            if let Err(not_until) = limiter.check_key(&user.to_string()) {
                crate::metrics::rejected("rate_limited");
                let wait = not_until.wait_time_from(DefaultClock::default().now());
                return Err(ApiError::RateLimited(wait.as_secs().max(1)));
            }
            if limiter.len() > 100_000 {
                limiter.retain_recent();
            }
        }
        match self.slots.clone().try_acquire_owned() {
            Ok(permit) => Ok(Admission { _permit: permit, _stream: StreamGuard::open() }),
            Err(_) => {
                crate::metrics::rejected("overloaded");
                Err(ApiError::Overloaded(1))
            }
        }
    }
}

/// The client's address, when the server put it in the request (`ConnectInfo`, set by
/// `app::serve`); never fails.
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub Option<std::net::IpAddr>);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for ClientAddr {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, _: &S) -> Result<Self, Self::Rejection> {
        let info = parts.extensions.get::<axum::extract::ConnectInfo<std::net::SocketAddr>>();
        Ok(Self(info.map(|c| c.0.ip())))
    }
}
