//! Per-agent circuit breakers: an agent that keeps failing is not called (and not waited on)
//! until a cool-down has passed; then one probe decides whether it is back.
//!
//! Closed: calls go through; outcomes within `window` are kept. When at least `min_calls` were
//! made and the failed share reaches `failure_ratio`, the circuit opens. Open: calls fail at once
//! with [`DispatchError::CircuitOpen`] until `cool_down` has passed, then the circuit is
//! half-open: exactly one probe goes through; its success closes the circuit, its failure opens
//! it again.

use std::collections::{HashMap, VecDeque};
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

#[derive(Debug)]
struct Breaker {
    outcomes: VecDeque<(Instant, bool)>,
    opened_at: Option<Instant>,
    probing: bool,
}

impl Breaker {
    fn new() -> Self {
        Self { outcomes: VecDeque::new(), opened_at: None, probing: false }
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
        let b = map.entry(agent.to_string()).or_insert_with(Breaker::new);
        match b.state(Instant::now(), s.cool_down.0) {
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
        let b = map.entry(agent.to_string()).or_insert_with(Breaker::new);
        let now = Instant::now();
        if b.opened_at.is_some() {
            // The half-open probe decides.
            b.probing = false;
            if success {
                b.opened_at = None;
                b.outcomes.clear();
            } else {
                b.opened_at = Some(now);
            }
            return;
        }
        b.outcomes.push_back((now, success));
        while b.outcomes.front().is_some_and(|(t, _)| now.duration_since(*t) > s.window.0) {
            b.outcomes.pop_front();
        }
        let calls = b.outcomes.len();
        let failures = b.outcomes.iter().filter(|(_, ok)| !ok).count();
        if calls >= s.min_calls as usize && failures as f64 >= s.failure_ratio * calls as f64 {
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
}
