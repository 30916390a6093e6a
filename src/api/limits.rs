//! Admission of chat-like requests: load shedding past `max_concurrent_requests` open turns
//! (503 + `Retry-After`) and a per-user rate (`governor`, 429 + `Retry-After`).
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
        Self { slots: Arc::new(Semaphore::new(max_concurrent.max(1))), per_user }
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
