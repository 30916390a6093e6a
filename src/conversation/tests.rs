//! Table tests of the transitions: (state, input, now) -> (next state, effects).

use chrono::{DateTime, Duration, TimeZone, Utc};
use serde_json::{json, Map};

use super::*;
use crate::planner::{SubTask, TaskStatus};

fn at(min: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 1, 9, 0, 0).unwrap() + Duration::minutes(min)
}

fn policy() -> Policy {
    Policy { clarification_timeout: Duration::minutes(10), max_clarification_rounds: 3, escalate_after_failures: 2 }
}

fn task(agent: &str) -> SubTask {
    SubTask {
        task_id: format!("plan_x_task_{agent}"),
        description: String::new(),
        assigned_agent: agent.into(),
        inputs: Map::new(),
        dependencies: Vec::new(),
        status: TaskStatus::Blocked,
        output: None,
        message: None,
        reason: None,
        remote: None,
        confirm: Vec::new(),
    }
}

fn pending(rounds: u32, keys: &[&str], expires_at: DateTime<Utc>) -> PendingClarification {
    PendingClarification {
        plan_id: "plan_x".into(),
        tasks: vec![task("hotel_agent")],
        created_at: at(0),
        expires_at,
        rounds,
        keys: keys.iter().map(|k| (*k).to_string()).collect(),
    }
}

fn awaiting(rounds: u32, keys: &[&str], expires_at: DateTime<Utc>) -> Conversation {
    Conversation {
        state: ConversationState::AwaitingKeys(pending(rounds, keys, expires_at)),
        failures: 0,
        last_intent: vec!["hotel_agent".into()],
        last_query: "帮我订个酒店".into(),
    }
}

fn escalated(reason: EscalationReason) -> ConversationState {
    ConversationState::Escalated(Escalation { reason, at: at(5) })
}

#[test]
fn expire_drops_only_a_clarification_whose_time_has_come() {
    let cases = [
        ("before expiry", awaiting(1, &["city"], at(10)), at(9), false),
        ("exactly at expiry", awaiting(1, &["city"], at(10)), at(10), true),
        ("after expiry", awaiting(1, &["city"], at(10)), at(60), true),
        ("idle", Conversation::default(), at(60), false),
        (
            "escalated",
            Conversation { state: escalated(EscalationReason::UserRequested), ..Default::default() },
            at(60),
            false,
        ),
    ];
    for (name, conv, now, expires) in cases {
        let before = conv.clone();
        let (next, dropped) = conv.expire(now);
        assert_eq!(dropped.is_some(), expires, "{name}");
        if expires {
            assert_eq!(next.state, ConversationState::Idle, "{name}");
            assert!(next.last_intent.is_empty(), "{name}: planned afresh");
            assert_eq!(dropped.unwrap().tasks()[0].assigned_agent, "hotel_agent", "{name}");
        } else {
            assert_eq!(next, before, "{name}: unchanged");
        }
    }
}

#[test]
fn cancel_and_reroute_drop_the_pending_work() {
    let (next, dropped) = awaiting(2, &["city"], at(10)).cancel();
    assert_eq!(next.state, ConversationState::Idle);
    assert!(next.last_intent.is_empty(), "cancel forgets the intent");
    assert!(dropped.is_some());

    let (next, dropped) = Conversation::default().cancel();
    assert_eq!(next.state, ConversationState::Idle);
    assert!(dropped.is_none(), "nothing pending: nothing to cancel");

    let (next, dropped) = awaiting(2, &["city"], at(10)).reroute();
    assert_eq!(next.state, ConversationState::Idle);
    assert_eq!(next.last_intent, ["hotel_agent"], "re-routing keeps the memory");
    assert!(dropped.is_some());

    let idle = Conversation { state: escalated(EscalationReason::Sensitive), ..Default::default() };
    let (next, dropped) = idle.clone().reroute();
    assert_eq!(next, idle);
    assert!(dropped.is_none());
}

#[test]
fn ask_rounds_count_only_the_same_question_again() {
    let keys = ["city".to_string(), "check_in_date".to_string()];
    let reversed = [keys[1].clone(), keys[0].clone()];
    let other = ["city".to_string()];
    type Case<'a> = (&'a str, Conversation, PlanMode, bool, &'a [String], Round);
    let cases: [Case<'_>; 7] = [
        ("fresh plan", Conversation::default(), PlanMode::Fresh, false, &keys, Round::Ask(1)),
        (
            "resume, same keys",
            awaiting(1, &["city", "check_in_date"], at(10)),
            PlanMode::Resumed,
            false,
            &keys,
            Round::Ask(2),
        ),
        (
            "same keys in another order",
            awaiting(1, &["city", "check_in_date"], at(10)),
            PlanMode::Resumed,
            false,
            &reversed,
            Round::Ask(2),
        ),
        (
            "resume brought a value",
            awaiting(2, &["city", "check_in_date"], at(10)),
            PlanMode::Resumed,
            false,
            &other,
            Round::Ask(1),
        ),
        (
            "resume runs something",
            awaiting(2, &["city", "check_in_date"], at(10)),
            PlanMode::Resumed,
            true,
            &keys,
            Round::Ask(1),
        ),
        (
            "last allowed round",
            awaiting(2, &["city", "check_in_date"], at(10)),
            PlanMode::Resumed,
            false,
            &keys,
            Round::Ask(3),
        ),
        (
            "rounds exhausted",
            awaiting(3, &["city", "check_in_date"], at(10)),
            PlanMode::Resumed,
            false,
            &keys,
            Round::Exhausted,
        ),
    ];
    for (name, conv, mode, runs, missing, expected) in cases {
        assert_eq!(conv.ask_round(mode, runs, missing, &policy()), expected, "{name}");
    }
}

fn outcome(mode: PlanMode, blocked: Vec<SubTask>) -> PlanOutcome {
    PlanOutcome {
        mode,
        plan_id: "plan_y".into(),
        blocked,
        missing_keys: vec!["city".into()],
        agents: vec!["weather_agent".into(), "hotel_agent".into()],
        query: "明天北京天气，再订个酒店".into(),
    }
}

#[test]
fn planned_opens_keeps_or_closes_the_clarification() {
    // A fresh plan with a blocked sub-task opens a clarification expiring from now.
    let next =
        Conversation::default().planned(outcome(PlanMode::Fresh, vec![task("hotel_agent")]), 1, at(3), &policy());
    let p = next.pending().expect("awaiting keys");
    assert_eq!((p.created_at, p.expires_at, p.rounds, p.plan_id.as_str()), (at(3), at(13), 1, "plan_y"));
    assert_eq!(next.last_intent, ["weather_agent", "hotel_agent"]);
    assert_eq!(next.last_query, "明天北京天气，再订个酒店");

    // A resume asked again keeps when the clarification was opened and the query it resumes.
    let next = awaiting(1, &["city"], at(10)).planned(
        outcome(PlanMode::Resumed, vec![task("hotel_agent")]),
        2,
        at(8),
        &policy(),
    );
    let p = next.pending().expect("still awaiting");
    assert_eq!((p.created_at, p.expires_at, p.rounds), (at(0), at(18), 2));
    assert_eq!(next.last_query, "帮我订个酒店");

    // Nothing left blocked: idle, from any state.
    for conv in [
        awaiting(1, &["city"], at(10)),
        Conversation { state: escalated(EscalationReason::UserRequested), ..Default::default() },
    ] {
        let next = conv.planned(outcome(PlanMode::Resumed, Vec::new()), 1, at(8), &policy());
        assert_eq!(next.state, ConversationState::Idle);
    }
}

#[test]
fn failures_count_turns_that_dispatched_and_all_failed() {
    // (failures before, dispatched, succeeded) -> (failures after, escalate)
    let cases = [
        (0, 0, 0, 0, false),
        (1, 0, 0, 1, false),
        (0, 2, 0, 1, false),
        (1, 2, 0, 0, true),
        (1, 2, 1, 0, false),
        (0, 1, 1, 0, false),
    ];
    for (before, dispatched, succeeded, after, escalate) in cases {
        let conv = Conversation { failures: before, ..Default::default() };
        let (next, esc) = conv.record_dispatch(dispatched, succeeded, &policy());
        assert_eq!(
            (next.failures, esc),
            (after, escalate),
            "{before} failures, {dispatched} dispatched, {succeeded} ok"
        );
    }
}

#[test]
fn escalation_keeps_pending_work_unless_rounds_ran_out() {
    use EscalationReason::*;
    for reason in [UserRequested, Sensitive, RepeatedFailures] {
        let next = awaiting(1, &["city"], at(10)).escalated(reason, at(4));
        assert!(next.pending().is_some(), "{reason:?} keeps the clarification");
    }
    let next = awaiting(3, &["city"], at(10)).escalated(ClarificationRoundsExhausted, at(4));
    assert_eq!(
        next.state,
        ConversationState::Escalated(Escalation { reason: ClarificationRoundsExhausted, at: at(4) })
    );
    for reason in [UserRequested, Sensitive, RepeatedFailures, ClarificationRoundsExhausted] {
        let next = Conversation::default().escalated(reason, at(4));
        assert_eq!(next.state, ConversationState::Escalated(Escalation { reason, at: at(4) }), "{reason:?}");
    }
}

#[test]
fn stored_times_are_rfc3339_and_a_corrupt_expiry_expires_at_once() {
    let stored = json!({
        "plan_id": "plan_x", "tasks": [], "created_at": "2026-12-01T09:00:00+00:00",
        "expires_at": "not a time", "rounds": 1, "keys": ["city"]
    });
    let p: PendingClarification = serde_json::from_value(stored).unwrap();
    assert_eq!(p.created_at, at(0));
    assert_eq!(p.expires_at, DateTime::<Utc>::UNIX_EPOCH);
    let conv = Conversation { state: ConversationState::AwaitingKeys(p), ..Default::default() };
    assert!(conv.expire(at(0)).1.is_some(), "a corrupt expiry no longer waits forever");

    let legacy = json!({
        "plan_id": "plan_x", "tasks": [], "created_at": "2026-12-01T09:00:00Z", "rounds": 2
    });
    let p: PendingClarification = serde_json::from_value(legacy).unwrap();
    assert_eq!(
        (p.expires_at, p.keys.len()),
        (DateTime::<Utc>::UNIX_EPOCH, 0),
        "documents without expires_at still load"
    );
    assert_eq!(serde_json::to_value(&p).unwrap()["created_at"], "2026-12-01T09:00:00+00:00");
}

fn asking(rounds: u32, expires_at: DateTime<Utc>) -> Conversation {
    Conversation {
        state: ConversationState::AwaitingIntent(PendingChoice {
            choice_id: "choice_x".into(),
            query: "我明天要去上海".into(),
            candidates: vec!["hotel_agent".into(), "weather_agent".into()],
            created_at: at(0),
            expires_at,
            rounds,
        }),
        ..Conversation::default()
    }
}

#[test]
fn a_did_you_mean_question_lives_like_a_clarification() {
    let candidates = vec!["hotel_agent".to_string(), "weather_agent".to_string()];
    // Asked: stored with its expiry.
    let conv = Conversation::default().asked_choice(
        "choice_a".into(),
        "我明天要去上海".into(),
        candidates.clone(),
        1,
        at(1),
        &policy(),
    );
    let c = conv.choice().expect("awaiting a pick");
    assert_eq!((c.choice_id.as_str(), c.rounds, c.expires_at), ("choice_a", 1, at(11)));
    assert_eq!(conv.waiting_until(), Some(at(11)));
    assert!(conv.pending().is_none());

    // Asked again among the same candidates: one more round, same id and creation time.
    assert_eq!(conv.choice_round(&candidates, &policy()), Round::Ask(2));
    let again = conv.clone().asked_choice("choice_b".into(), "q".into(), candidates.clone(), 2, at(5), &policy());
    let c = again.choice().unwrap();
    assert_eq!((c.choice_id.as_str(), c.created_at, c.expires_at), ("choice_a", at(1), at(15)));
    // Other candidates: a new question.
    assert_eq!(conv.choice_round(&["flight_agent".to_string()], &policy()), Round::Ask(1));
    // Past max_clarification_rounds: escalate.
    assert_eq!(asking(3, at(10)).choice_round(&candidates, &policy()), Round::Exhausted);

    // Expiry, cancel and re-route drop it; nothing remote to cancel.
    let (next, dropped) = asking(1, at(10)).expire(at(10));
    assert_eq!(next.state, ConversationState::Idle);
    assert!(matches!(&dropped, Some(Dropped::Choice(c)) if c.choice_id == "choice_x"));
    assert!(dropped.unwrap().tasks().is_empty());
    assert!(asking(1, at(10)).expire(at(9)).1.is_none(), "not yet");
    let (next, dropped) = asking(1, at(10)).cancel();
    assert_eq!((next.state, dropped.is_some()), (ConversationState::Idle, true));
    let (next, dropped) = asking(1, at(10)).reroute();
    assert_eq!((next.state, dropped.is_some()), (ConversationState::Idle, true));

    // A pick plans the card: the question is replaced by the plan's outcome.
    let next = asking(1, at(10)).planned(outcome(PlanMode::Chosen, Vec::new()), 1, at(3), &policy());
    assert_eq!(next.state, ConversationState::Idle);
    // A human request while asking: escalated, the question is not kept.
    let next = asking(1, at(10)).escalated(EscalationReason::UserRequested, at(4));
    assert!(matches!(next.state, ConversationState::Escalated(_)));
}

#[test]
fn a_plan_asks_about_an_unresolved_part_only_when_nothing_else_waits() {
    let stay = vec!["stay_agent".to_string()];
    // After a plan that left nothing blocked: the part is the pending question, the plan's
    // intent kept for elliptical follow-ups.
    let planned = Conversation::default().planned(outcome(PlanMode::Fresh, Vec::new()), 1, at(1), &policy());
    let intent = planned.last_intent.clone();
    assert!(!intent.is_empty());
    let next = planned.planned_with_choice("choice_p".into(), "再多住一天".into(), stay.clone(), at(1), &policy());
    let c = next.choice().expect("awaiting a pick");
    assert_eq!((c.choice_id.as_str(), c.query.as_str(), c.rounds, c.expires_at), ("choice_p", "再多住一天", 1, at(11)));
    assert_eq!(next.last_intent, intent);
    // Blocked sub-tasks wait for keys: they keep the conversation.
    let blocked = awaiting(1, &["city"], at(10));
    assert_eq!(blocked.clone().planned_with_choice("choice_q".into(), "x".into(), stay, at(1), &policy()), blocked);
}
