//! The conversation lifecycle as a state machine without IO (the "sans-IO" style of quinn-proto):
//! the supervisor feeds it inputs and the clock, performs the effects it returns (cancelling
//! remote A2A tasks, emitting an escalation) and stores the result with the session.
//! The lifecycle it implements is described in docs/conversation.md.
//!
//! ```text
//!                 blocked sub-tasks                        values given, nothing left blocked
//!   Idle ─────────────────────────────▶ AwaitingKeys ─────────────────────────────────────▶ Idle
//!    ▲  ▲                                │  │  │  │ same keys asked again: rounds + 1
//!    │  └──── cancel words / re-route ───┘  │  │  └───────────────▶ AwaitingKeys
//!    │  └──── expires_at passed (expire) ───┘  │ rounds > max_clarification_rounds
//!    │                                         ▼
//!    └──────── any new query ────────────  Escalated ◀── user asks / sensitive / failures
//!
//!         no confident card, candidates            a pick (ordinal, name, `intent` slot)
//!   Idle ─────────────────────────────▶ AwaitingIntent ───────────────────────────────────▶ planned
//!                                        │  │ no pick: rounds + 1, past max_clarification_rounds
//!    Idle ◀── cancel / expire / new ─────┘  └──────────────────────────────────────────▶ Escalated
//! ```
//!
//! - [`Conversation::expire`]: a clarification past `expires_at` is dropped before planning.
//! - [`Conversation::cancel`]: cancel words drop the pending clarification.
//! - [`Conversation::reroute`]: a new request while one is pending drops the pending work.
//! - [`Conversation::ask_round`]: a resume that brings nothing new counts a round; past
//!   `max_clarification_rounds` the turn escalates.
//! - [`Conversation::planned`]: after a plan ran, blocked sub-tasks become the pending
//!   clarification (expiring `clarification_timeout` from now), or the state returns to idle.
//! - [`Conversation::record_dispatch`]: turns whose dispatched sub-tasks all failed count;
//!   `escalate_after_failures` in a row escalate.
//! - [`Conversation::escalated`]: the hand-over to a human.
//! - [`Conversation::asked_choice`]: a did-you-mean question (no confident capability card but
//!   plausible candidates) waits for the user's pick; it expires, is cancelled and re-routed like
//!   a clarification, and a pick plans the chosen card.
//!
//! Every transition takes `self` by value and the time as an argument; none reads a clock.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::planner::{EscalationReason, PlanMode, SubTask};

/// The lifecycle settings (from the config's `supervisor` section).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// How long a pending clarification waits for the user.
    pub clarification_timeout: chrono::Duration,
    /// How many times the same keys may be asked for before escalating.
    pub max_clarification_rounds: u32,
    /// Consecutive failed turns before escalating.
    pub escalate_after_failures: u32,
}

impl Policy {
    /// The policy of a config's `supervisor` settings.
    pub fn from_settings(s: &crate::config::SupervisorSettings) -> Self {
        Self {
            clarification_timeout: chrono::Duration::from_std(s.clarification_timeout.0)
                .unwrap_or(chrono::Duration::MAX),
            max_clarification_rounds: s.max_clarification_rounds,
            escalate_after_failures: s.escalate_after_failures,
        }
    }
}

/// Sub-tasks blocked on semantic keys, waiting for the user's next turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingClarification {
    /// The plan they came from (a resume keeps it).
    pub plan_id: String,
    /// The blocked sub-tasks, with the inputs known so far.
    pub tasks: Vec<SubTask>,
    /// When it was opened (RFC 3339 on the wire).
    #[serde(with = "rfc3339")]
    pub created_at: DateTime<Utc>,
    /// When it expires: `clarification_timeout` after the last ask (RFC 3339 on the wire; an
    /// unreadable stored value counts as already expired).
    #[serde(default = "rfc3339::epoch", with = "rfc3339")]
    pub expires_at: DateTime<Utc>,
    /// How many times the user has been asked for the same keys.
    pub rounds: u32,
    /// The keys asked for in the last ask.
    #[serde(default)]
    pub keys: Vec<String>,
}

/// A did-you-mean question waiting for the user's pick (the second stage of recognition).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingChoice {
    /// `choice_<12 hex>`: the question's id (the AG-UI interrupt id and `semantic_info` task id).
    pub choice_id: String,
    /// The query that was not understood confidently; the chosen card is planned on it.
    pub query: String,
    /// Candidate agent ids, best first.
    pub candidates: Vec<String>,
    /// When it was asked (RFC 3339 on the wire).
    #[serde(with = "rfc3339")]
    pub created_at: DateTime<Utc>,
    /// When it expires: `clarification_timeout` after the last ask (RFC 3339 on the wire).
    #[serde(default = "rfc3339::epoch", with = "rfc3339")]
    pub expires_at: DateTime<Utc>,
    /// How many times the question has been asked.
    pub rounds: u32,
}

/// Pending work a transition dropped: its remote tasks are to be cancelled.
#[derive(Debug, Clone, PartialEq)]
pub enum Dropped {
    /// A clarification of blocked sub-tasks.
    Keys(PendingClarification),
    /// A did-you-mean question.
    Choice(PendingChoice),
}

impl Dropped {
    /// The dropped sub-tasks (none for a did-you-mean question).
    pub fn tasks(&self) -> &[SubTask] {
        match self {
            Self::Keys(p) => &p.tasks,
            Self::Choice(_) => &[],
        }
    }

    /// The dropped sub-tasks, owned.
    pub fn into_tasks(self) -> Vec<SubTask> {
        match self {
            Self::Keys(p) => p.tasks,
            Self::Choice(_) => Vec::new(),
        }
    }
}

/// A finished hand-over to a human.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Escalation {
    /// Why.
    pub reason: EscalationReason,
    /// When (RFC 3339 on the wire).
    #[serde(with = "rfc3339")]
    pub at: DateTime<Utc>,
}

/// Where a conversation stands between turns.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum ConversationState {
    /// Nothing is waiting for the user.
    #[default]
    Idle,
    /// Blocked sub-tasks wait for semantic-key values (or for the answer to a remote agent's
    /// question).
    AwaitingKeys(PendingClarification),
    /// A did-you-mean question waits for the user to pick a capability.
    AwaitingIntent(PendingChoice),
    /// The last turn handed the user to a human; the next query starts afresh.
    Escalated(Escalation),
}

/// The lifecycle part of a session: its state plus the memory transitions need.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Conversation {
    /// The state.
    pub state: ConversationState,
    /// Consecutive turns in which sub-tasks ran and none succeeded.
    pub failures: u32,
    /// Agent ids of the last planned turn (for elliptical follow-ups).
    pub last_intent: Vec<String>,
    /// The (rewritten) query of that turn.
    pub last_query: String,
}

/// What a plan left behind, as [`Conversation::planned`] needs it.
#[derive(Debug, Clone)]
pub struct PlanOutcome {
    /// How the plan relates to the conversation.
    pub mode: PlanMode,
    /// The plan id.
    pub plan_id: String,
    /// Sub-tasks still blocked.
    pub blocked: Vec<SubTask>,
    /// The keys they miss, as asked for.
    pub missing_keys: Vec<String>,
    /// Agent ids of every sub-task, in plan order.
    pub agents: Vec<String>,
    /// The query the plan worked on.
    pub query: String,
}

/// The verdict of [`Conversation::ask_round`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Round {
    /// Ask (again); this is the `n`th ask for the same keys.
    Ask(u32),
    /// The same keys were asked for `max_clarification_rounds` times: escalate.
    Exhausted,
}

impl Conversation {
    /// The pending clarification, if the conversation awaits keys.
    pub fn pending(&self) -> Option<&PendingClarification> {
        match &self.state {
            ConversationState::AwaitingKeys(p) => Some(p),
            _ => None,
        }
    }

    /// The did-you-mean question waiting for a pick, if any.
    pub fn choice(&self) -> Option<&PendingChoice> {
        match &self.state {
            ConversationState::AwaitingIntent(c) => Some(c),
            _ => None,
        }
    }

    /// When what waits for the user (a clarification or a did-you-mean question) expires.
    pub fn waiting_until(&self) -> Option<DateTime<Utc>> {
        match &self.state {
            ConversationState::AwaitingKeys(p) => Some(p.expires_at),
            ConversationState::AwaitingIntent(c) => Some(c.expires_at),
            _ => None,
        }
    }

    /// Drops a pending clarification or did-you-mean question whose `expires_at` is not after
    /// `now`. Returns what was dropped (its remote tasks are to be cancelled); the last intent is
    /// forgotten too, so the turn is planned afresh.
    pub fn expire(self, now: DateTime<Utc>) -> (Self, Option<Dropped>) {
        match self.state {
            ConversationState::AwaitingKeys(p) if p.expires_at <= now => {
                (Self { state: ConversationState::Idle, last_intent: Vec::new(), ..self }, Some(Dropped::Keys(p)))
            }
            ConversationState::AwaitingIntent(c) if c.expires_at <= now => {
                (Self { state: ConversationState::Idle, last_intent: Vec::new(), ..self }, Some(Dropped::Choice(c)))
            }
            state => (Self { state, ..self }, None),
        }
    }

    /// Cancel words: drops what waits for the user (returned, for its remote tasks) and the last
    /// intent.
    pub fn cancel(self) -> (Self, Option<Dropped>) {
        let dropped = match self.state {
            ConversationState::AwaitingKeys(p) => Some(Dropped::Keys(p)),
            ConversationState::AwaitingIntent(c) => Some(Dropped::Choice(c)),
            _ => None,
        };
        (Self { state: ConversationState::Idle, last_intent: Vec::new(), ..self }, dropped)
    }

    /// A new request while something waits for the user: the pending work is dropped (returned,
    /// for its remote tasks); history and memory are kept.
    pub fn reroute(self) -> (Self, Option<Dropped>) {
        match self.state {
            ConversationState::AwaitingKeys(p) => {
                (Self { state: ConversationState::Idle, ..self }, Some(Dropped::Keys(p)))
            }
            ConversationState::AwaitingIntent(c) => {
                (Self { state: ConversationState::Idle, ..self }, Some(Dropped::Choice(c)))
            }
            state => (Self { state, ..self }, None),
        }
    }

    /// Counts a did-you-mean question: asking again among the same candidates is one more
    /// round; past `max_clarification_rounds` the turn escalates. Anything else is round 1.
    pub fn choice_round(&self, candidates: &[String], policy: &Policy) -> Round {
        match self.choice() {
            Some(c) if sorted(&c.candidates) == sorted(candidates) => {
                if c.rounds + 1 > policy.max_clarification_rounds {
                    Round::Exhausted
                } else {
                    Round::Ask(c.rounds + 1)
                }
            }
            _ => Round::Ask(1),
        }
    }

    /// A did-you-mean question is asked (round `round`, see [`Conversation::choice_round`]): it
    /// replaces whatever was pending (a repeated question keeps its id and `created_at`) and
    /// expires `clarification_timeout` from `now`. The returned state holds the stored question.
    pub fn asked_choice(
        self,
        choice_id: String,
        query: String,
        candidates: Vec<String>,
        round: u32,
        now: DateTime<Utc>,
        policy: &Policy,
    ) -> Self {
        let (choice_id, created_at) = match (&self.state, round > 1) {
            (ConversationState::AwaitingIntent(c), true) => (c.choice_id.clone(), c.created_at),
            _ => (choice_id, now),
        };
        let expires_at = now.checked_add_signed(policy.clarification_timeout).unwrap_or(DateTime::<Utc>::MAX_UTC);
        let choice = PendingChoice { choice_id, query, candidates, created_at, expires_at, rounds: round };
        Self { state: ConversationState::AwaitingIntent(choice), last_intent: Vec::new(), ..self }
    }

    /// A plan turn that also asks which card a part of the query meant (a request no card
    /// clearly means, `plan.unresolved`): the question is stored as by
    /// [`Conversation::asked_choice`] (round 1), and the plan's intent is kept for elliptical
    /// follow-ups. Only from [`ConversationState::Idle`]: blocked sub-tasks waiting for keys keep
    /// the conversation (the part is then only told in the summary); returns `self` unchanged.
    pub fn planned_with_choice(
        self,
        choice_id: String,
        part: String,
        candidates: Vec<String>,
        now: DateTime<Utc>,
        policy: &Policy,
    ) -> Self {
        if self.state != ConversationState::Idle {
            return self;
        }
        let last_intent = self.last_intent.clone();
        Self { last_intent, ..self.asked_choice(choice_id, part, candidates, 1, now, policy) }
    }

    /// Counts the ask of a plan: a resume that runs nothing and asks for exactly the keys asked
    /// last time is one more round of the same question; anything else starts at round 1.
    pub fn ask_round(&self, mode: PlanMode, runs_something: bool, missing_keys: &[String], policy: &Policy) -> Round {
        let same_keys = mode == PlanMode::Resumed
            && !runs_something
            && self.pending().is_some_and(|p| sorted(&p.keys) == sorted(missing_keys));
        match (self.pending(), same_keys) {
            (Some(p), true) if p.rounds + 1 > policy.max_clarification_rounds => Round::Exhausted,
            (Some(p), true) => Round::Ask(p.rounds + 1),
            _ => Round::Ask(1),
        }
    }

    /// After a plan ran: its blocked sub-tasks become the pending clarification (a resume keeps
    /// the original `created_at`; `expires_at` is `clarification_timeout` from `now`), or the
    /// conversation is idle. The plan's agents and query become the last intent (a resume keeps
    /// the query it resumes).
    pub fn planned(self, outcome: PlanOutcome, round: u32, now: DateTime<Utc>, policy: &Policy) -> Self {
        let resumed = outcome.mode == PlanMode::Resumed;
        let created_at = match (&self.state, resumed) {
            (ConversationState::AwaitingKeys(p), true) => p.created_at,
            _ => now,
        };
        let state = if outcome.blocked.is_empty() {
            ConversationState::Idle
        } else {
            ConversationState::AwaitingKeys(PendingClarification {
                plan_id: outcome.plan_id,
                tasks: outcome.blocked,
                created_at,
                expires_at: now.checked_add_signed(policy.clarification_timeout).unwrap_or(DateTime::<Utc>::MAX_UTC),
                rounds: round,
                keys: outcome.missing_keys,
            })
        };
        let last_query = if resumed { self.last_query } else { outcome.query };
        Self { state, last_intent: outcome.agents, last_query, ..self }
    }

    /// Counts a turn's dispatches: a turn that dispatched something and saw no success is one
    /// more failure, any success resets the count, a turn that dispatched nothing leaves it. Returns
    /// `true` when `escalate_after_failures` is reached (the count then starts again).
    pub fn record_dispatch(self, dispatched: usize, succeeded: usize, policy: &Policy) -> (Self, bool) {
        let failures = match (dispatched, succeeded) {
            (0, _) => self.failures,
            (_, 0) => self.failures + 1,
            _ => 0,
        };
        if failures >= policy.escalate_after_failures {
            (Self { failures: 0, ..self }, true)
        } else {
            (Self { failures, ..self }, false)
        }
    }

    /// The turn hands the user to a human. Exhausted rounds drop the pending clarification; a
    /// request for a human, sensitive content or repeated failures keep it, so the user may still
    /// finish it. With nothing pending the conversation is [`ConversationState::Escalated`].
    pub fn escalated(self, reason: EscalationReason, now: DateTime<Utc>) -> Self {
        let keeps_pending = reason != EscalationReason::ClarificationRoundsExhausted;
        match self.state {
            ConversationState::AwaitingKeys(p) if keeps_pending => {
                Self { state: ConversationState::AwaitingKeys(p), ..self }
            }
            _ => Self { state: ConversationState::Escalated(Escalation { reason, at: now }), ..self },
        }
    }
}

fn sorted(keys: &[String]) -> Vec<&str> {
    let mut v: Vec<&str> = keys.iter().map(String::as_str).collect();
    v.sort_unstable();
    v
}

/// Serde for stored times: RFC 3339 on the wire; an unparseable or empty stored value reads as
/// the Unix epoch (so a corrupt `expires_at` expires at once instead of never).
pub mod rfc3339 {
    use chrono::{DateTime, Utc};
    use serde::{Deserialize, Deserializer, Serializer};

    /// The Unix epoch: the default of an absent time.
    pub fn epoch() -> DateTime<Utc> {
        DateTime::<Utc>::UNIX_EPOCH
    }

    /// Writes `t` as RFC 3339.
    ///
    /// # Errors
    /// The serializer's.
    pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&t.to_rfc3339())
    }

    /// Reads RFC 3339, or the epoch when unreadable.
    ///
    /// # Errors
    /// The deserializer's, when the value is not a string.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let text = String::deserialize(d)?;
        Ok(DateTime::parse_from_rfc3339(&text).map_or(DateTime::<Utc>::UNIX_EPOCH, |t| t.with_timezone(&Utc)))
    }
}

#[cfg(test)]
mod tests;
