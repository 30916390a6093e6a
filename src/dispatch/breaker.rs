//! Per-agent circuit breakers: an agent that keeps failing is not called (and not waited on)
//! until a cool-down has passed; then one probe decides whether it is back.
//!
//! Closed: calls go through; outcomes within `window` are counted. When at least `min_calls` were
//! made and the failed share reaches `failure_ratio`, the circuit opens. Open: calls fail at once
//! with [`DispatchError::CircuitOpen`] until `cool_down` has passed, then the circuit is
//! half-open: exactly one probe goes through; its success closes the circuit, its failure opens
//! it again.
//!
//! The window is counted in [`BUCKETS`] fixed time buckets (calls and failures per
//! `window / BUCKETS` slice), so recording an outcome is constant work and a breaker holds the
//! same few counters however many calls it saw; the window slides by whole buckets.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::DispatchError;
use crate::config::model::BreakerSettings;

/// What a breaker currently does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CircuitState {
    /// Calls go through.
    Closed,
    /// Calls fail at once.
    Open,
    /// One probe is allowed (or in flight).
    HalfOpen,
}

/// Time buckets a window is counted in.
pub const BUCKETS: usize = 10;

/// The calls and failures of one `window / BUCKETS` slice of time.
#[derive(Debug, Clone, Copy, Default)]
struct Bucket {
    /// Which slice (counted from the breaker's `origin`) these counts belong to.
    slice: u64,
    calls: u32,
    failures: u32,
}

#[derive(Debug)]
struct Breaker {
    /// A ring of buckets; the one for slice `n` is `buckets[n % BUCKETS]`.
    buckets: [Bucket; BUCKETS],
    /// Where slice 0 starts.
    origin: Instant,
    /// The slice width the buckets were counted with (a reload may change the window).
    width: Duration,
    opened_at: Option<Instant>,
    probing: bool,
}

impl Breaker {
    fn new(now: Instant) -> Self {
        Self {
            buckets: [Bucket::default(); BUCKETS],
            origin: now,
            width: Duration::ZERO,
            opened_at: None,
            probing: false,
        }
    }

    fn clear(&mut self) {
        self.buckets = [Bucket::default(); BUCKETS];
    }

    /// Counts one outcome at `now` and returns `(calls, failures)` of the window ending at `now`.
    /// Constant work: [`BUCKETS`] counters are touched, whatever was recorded before.
    fn count(&mut self, now: Instant, window: Duration, success: bool) -> (u32, u32) {
        let width = (window / BUCKETS as u32).max(Duration::from_millis(1));
        if width != self.width {
            self.clear();
            self.width = width;
            self.origin = now;
        }
        let slice =
            u64::try_from(now.saturating_duration_since(self.origin).as_nanos() / width.as_nanos()).unwrap_or(u64::MAX);
        let bucket = &mut self.buckets[(slice % BUCKETS as u64) as usize];
        if bucket.slice != slice || bucket.calls == 0 {
            *bucket = Bucket { slice, calls: 0, failures: 0 };
        }
        bucket.calls = bucket.calls.saturating_add(1);
        bucket.failures = bucket.failures.saturating_add(u32::from(!success));
        let oldest = slice.saturating_sub(BUCKETS as u64 - 1);
        self.buckets
            .iter()
            .filter(|b| b.calls > 0 && b.slice >= oldest && b.slice <= slice)
            .fold((0u32, 0u32), |(c, f), b| (c.saturating_add(b.calls), f.saturating_add(b.failures)))
    }

    fn state(&self, now: Instant, cool_down: Duration) -> CircuitState {
        match self.opened_at {
            None => CircuitState::Closed,
            Some(at) if now.duration_since(at) >= cool_down => CircuitState::HalfOpen,
            Some(_) => CircuitState::Open,
        }
    }
}

/// The breakers of every agent, by agent id.
#[derive(Debug, Default)]
pub struct Breakers {
    map: Mutex<HashMap<String, Breaker>>,
}

impl Breakers {
    /// May `agent` be called now? Takes the half-open probe slot when it is free.
    ///
    /// # Errors
    /// [`DispatchError::CircuitOpen`] while the circuit is open (or its probe is in flight).
    pub fn admit(&self, agent: &str, s: &BreakerSettings) -> Result<(), DispatchError> {
        let Ok(mut map) = self.map.lock() else { return Ok(()) };
        let now = Instant::now();
        let b = breaker(&mut map, agent, now);
        match b.state(now, s.cool_down.0) {
            CircuitState::Closed => Ok(()),
            CircuitState::HalfOpen if !b.probing => {
                b.probing = true;
                Ok(())
            }
            _ => Err(DispatchError::CircuitOpen(s.cool_down.0)),
        }
    }

    /// Records the outcome of an admitted call.
    pub fn record(&self, agent: &str, s: &BreakerSettings, success: bool) {
        let Ok(mut map) = self.map.lock() else { return };
        let now = Instant::now();
        let b = breaker(&mut map, agent, now);
        if b.opened_at.is_some() {
            // The half-open probe decides.
            b.probing = false;
            if success {
                b.opened_at = None;
                b.clear();
            } else {
                b.opened_at = Some(now);
            }
            return;
        }
        let (calls, failures) = b.count(now, s.window.0, success);
        if calls >= s.min_calls && f64::from(failures) >= s.failure_ratio * f64::from(calls) {
            b.opened_at = Some(now);
            tracing::warn!(agent, calls, failures, "circuit opened");
        }
    }

    /// The state of `agent`'s circuit.
    pub fn state(&self, agent: &str, s: &BreakerSettings) -> CircuitState {
        self.map
            .lock()
            .ok()
            .and_then(|m| m.get(agent).map(|b| b.state(Instant::now(), s.cool_down.0)))
            .unwrap_or(CircuitState::Closed)
    }
}

/// `agent`'s breaker, created on first use (no key allocation once it exists).
fn breaker<'m>(map: &'m mut HashMap<String, Breaker>, agent: &str, now: Instant) -> &'m mut Breaker {
    if !map.contains_key(agent) {
        map.insert(agent.to_string(), Breaker::new(now));
    }
    map.get_mut(agent).expect("inserted above")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::HumanDuration;

    fn settings(cool_down_ms: u64) -> BreakerSettings {
        BreakerSettings {
            failure_ratio: 0.5,
            min_calls: 4,
            window: HumanDuration(Duration::from_secs(60)),
            cool_down: HumanDuration(Duration::from_millis(cool_down_ms)),
        }
    }

    #[test]
    fn opens_on_the_failure_ratio_and_recovers_through_one_probe() {
        let b = Breakers::default();
        let s = settings(30);
        for ok in [true, false, true] {
            b.admit("a", &s).unwrap();
            b.record("a", &s, ok);
        }
        assert_eq!(b.state("a", &s), CircuitState::Closed, "below min_calls");
        b.admit("a", &s).unwrap();
        b.record("a", &s, false);
        assert_eq!(b.state("a", &s), CircuitState::Open, "2 of 4 failed");
        assert!(matches!(b.admit("a", &s), Err(DispatchError::CircuitOpen(_))));
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(b.state("a", &s), CircuitState::HalfOpen);
        b.admit("a", &s).unwrap();
        assert!(b.admit("a", &s).is_err(), "only one probe");
        b.record("a", &s, false);
        assert_eq!(b.state("a", &s), CircuitState::Open, "a failed probe reopens");
        std::thread::sleep(Duration::from_millis(40));
        b.admit("a", &s).unwrap();
        b.record("a", &s, true);
        assert_eq!(b.state("a", &s), CircuitState::Closed, "a good probe closes");
        assert_eq!(b.state("other", &s), CircuitState::Closed);
    }

    #[test]
    fn a_million_calls_keep_a_fixed_number_of_counters() {
        let window = Duration::from_secs(30);
        let start = Instant::now();
        let mut b = Breaker::new(start);
        let mut last = (0, 0);
        // One call every millisecond for 1,000 s: 33 windows' worth, never more than BUCKETS.
        for i in 0..1_000_000u64 {
            last = b.count(start + Duration::from_millis(i), window, i % 4 != 0);
        }
        assert_eq!(b.buckets.len(), BUCKETS);
        // The window holds the last 30 s, give or take the bucket being filled: 27,001..30,000 calls.
        assert!((27_001..=30_000).contains(&last.0), "{last:?}");
        assert_eq!(last.1, last.0.div_ceil(4).min(last.0), "a quarter failed: {last:?}");
    }

    #[test]
    fn old_outcomes_leave_the_window() {
        let window = Duration::from_secs(10);
        let start = Instant::now();
        let mut b = Breaker::new(start);
        for _ in 0..5 {
            b.count(start, window, false);
        }
        assert_eq!(b.count(start + Duration::from_secs(5), window, true), (6, 5));
        assert_eq!(b.count(start + Duration::from_secs(11), window, true), (2, 0), "the failures are 11 s old");
        assert_eq!(b.count(start + Duration::from_secs(60), window, true), (1, 0), "a long gap empties the window");
        assert_eq!(
            b.count(start + Duration::from_secs(60), Duration::from_secs(20), true),
            (1, 0),
            "a new window restarts"
        );
    }
}
