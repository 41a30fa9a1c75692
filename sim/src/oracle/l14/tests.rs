//! Unit tests of the L14 oracle's grammar.

use pai_runtime::{
    event::Transition,
    hook::{AfterStepDecision, ToolResult, ToolResultDecision},
    message::{ResultSource, ToolStatus},
    model::Route,
    store::Answer,
};
use serde_json::Value;

use super::*;
use crate::oracle::facts::ev;

fn prepare_run(resumed: bool) -> EventKind {
    EventKind::PrepareRun {
        route: Route::new("m"),
        overlay: 0,
        latest_user: None,
        resumed,
    }
}

fn step_events(step: u32, tool_calls: usize) -> Vec<EventKind> {
    vec![
        EventKind::ResolveModelContext {
            step,
            anchor: 1,
            messages: 1,
        },
        EventKind::PrepareModelStep {
            step,
            route: Route::new("m"),
            messages: 1,
        },
        EventKind::ModelCall {
            step,
            attempt: 1,
            route: Route::new("m"),
            context: 1,
            overlay: 0,
            messages: 1,
            tools: vec![],
            timeout_ms: None,
        },
        EventKind::Stream {
            step,
            deltas: 0,
            chars: 0,
            tool_calls,
            finish: None,
            error: None,
            aborted: None,
        },
        EventKind::CommitStep {
            step,
            message: format!("m{step}").into(),
            version: 1,
        },
    ]
}

fn result(step: u32, call: &str) -> Vec<EventKind> {
    let result = ToolResult {
        call_id: call.into(),
        tool: "x".into(),
        status: ToolStatus::Error,
        source: ResultSource::Denied,
        output: Value::Null,
    };
    vec![
        EventKind::ToolEnd {
            step,
            result,
            detail: None,
        },
        EventKind::AfterToolResult {
            step,
            call_id: call.into(),
            decision: ToolResultDecision::Continue,
        },
    ]
}

fn commit_results(step: u32) -> EventKind {
    EventKind::CommitToolResults {
        step,
        message: "tm".into(),
        version: 1,
        metadata: false,
    }
}

fn after_step(step: u32, transition: Transition) -> EventKind {
    EventKind::AfterStep {
        step,
        decision: AfterStepDecision::Natural,
        transition,
    }
}

fn lease() -> EventKind {
    EventKind::LeaseAcquired {
        version: 1,
        episode: 1,
        token: 1.into(),
    }
}

/// A run that waits on one call, is answered, and resumes at step 1.
fn waiting_run() -> Vec<EventKind> {
    let mut k = vec![
        EventKind::Admitted {
            trigger: "u".into(),
        },
        lease(),
        prepare_run(false),
    ];
    k.extend(step_events(0, 1));
    k.push(EventKind::BeforeToolCall {
        step: 0,
        call_id: "c".into(),
        tool: "x".into(),
        decision: pai_runtime::hook::ToolCallDecision::Continue,
    });
    k.push(after_step(0, Transition::Wait));
    k.push(EventKind::Waiting {
        version: 1,
        calls: vec!["c".into()],
    });
    k.push(EventKind::Answered {
        call_id: "c".into(),
        answer: Answer::Denied {
            reason: "no".into(),
        },
        version: 3,
    });
    k.extend([lease(), prepare_run(true)]);
    k.extend(result(0, "c"));
    k.push(commit_results(0));
    k.extend(step_events(1, 0));
    k.push(after_step(1, Transition::Complete { reason: None }));
    k.push(EventKind::LeaseReleased { episode: 2 });
    k.push(EventKind::Ended {
        version: None,
        status: RunStatus::Completed,
        outcome: pai_runtime::message::Outcome::Completed,
        reason: None,
    });
    k
}

fn judge(kinds: Vec<EventKind>) -> Vec<Violation> {
    let events: Vec<Event> = kinds.into_iter().map(ev).collect();
    check(&events, false, None, &[])
}

/// SPEC L14, T7: a run that waits, is answered and resumes follows the grammar.
#[test]
fn l14_accepts_a_wait_and_a_resume() {
    assert_eq!(judge(waiting_run()), vec![]);
}

/// A run still waiting when the scenario ends is not a broken run.
#[test]
fn l14_accepts_a_run_left_waiting() {
    let mut k = waiting_run();
    k.truncate(k.iter().position(|e| e.name() == "wait").unwrap_or(0) + 1);
    assert_eq!(judge(k), vec![]);
}

/// The resumed results carry the waiting step's number; a wrong one, or
/// a next step that skips a number, breaks the grammar.
#[test]
fn l14_checks_step_numbers_across_episodes() {
    let mut k = waiting_run();
    let i = k.iter().position(|e| e.name() == "commit_tool_results");
    k[i.unwrap_or(0)] = commit_results(1);
    let v = judge(k);
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].message.contains("says step 1 inside step 0"), "{v:?}");
}

/// A resumed episode must say so; an episode after a wait without its
/// results, or an answer outside a wait, breaks the grammar.
#[test]
fn l14_refuses_a_resume_that_does_not_say_so() {
    let mut k = waiting_run();
    let i = k.iter().rposition(|e| e.name() == "prepare_run");
    k[i.unwrap_or(0)] = prepare_run(false);
    assert_eq!(judge(k).len(), 1);
    let mut k = waiting_run();
    k.retain(|e| e.name() != "wait");
    assert_eq!(judge(k).len(), 1);
}

fn trusted(kind: EventKind) -> Event {
    Event {
        run_id: Default::default(),
        ..ev(kind)
    }
}

fn deleted() -> Event {
    trusted(EventKind::ThreadDeleted {
        incarnation: 1,
        cancelled: vec!["r".into()],
    })
}

fn ended_deleted() -> EventKind {
    EventKind::Ended {
        version: None,
        status: RunStatus::Cancelled,
        outcome: pai_runtime::message::Outcome::Cancelled,
        reason: Some("deleted".into()),
    }
}

/// Trusted code's events (no run) are no run's; a run's own mutation
/// and compaction's progress come beside its phases.
#[test]
fn l14_leaves_trusted_events_aside_and_accepts_facade_writes() {
    let mut events: Vec<Event> = waiting_run().into_iter().map(ev).collect();
    let at = events
        .iter()
        .position(|e| e.kind.name() == "resolve_model_context");
    let own = [
        EventKind::CompactionStarted {
            step: 0,
            through: 1,
            messages: 1,
        },
        EventKind::Mutated {
            version: 2,
            appended: vec!["s".into()],
            metadata: vec![],
            private: vec!["pai.compaction".into()],
            visibility: vec![],
        },
        EventKind::Compacted {
            step: 0,
            summary: "s".into(),
            through: 1,
            version: 2,
        },
    ];
    let at = at.unwrap_or(0);
    events.splice(at..at, own.into_iter().map(ev));
    events.insert(
        0,
        trusted(EventKind::MutationRefused {
            op: "mutate",
            reason: "conflict".into(),
            conflict: true,
        }),
    );
    events.push(trusted(EventKind::HistoryRewritten {
        version: 9,
        kind: "visibility",
        removed: vec![],
        patched: vec![],
        started: None,
    }));
    assert_eq!(check(&events, false, None, &[]), vec![]);
}

/// SPEC H5: a deletion ends a waiting run at once, and a running one
/// with `cancelled` and its end, no lease released; without a deletion
/// that end is out of place.
#[test]
fn l14_accepts_runs_ended_by_a_deletion() {
    let mut k = waiting_run();
    let wait = k.iter().position(|e| e.name() == "wait").unwrap_or(0);
    k.truncate(wait + 1);
    let mut events: Vec<Event> = k.into_iter().map(ev).collect();
    events.push(deleted());
    events.push(ev(ended_deleted()));
    assert_eq!(check(&events, false, None, &[]), vec![]);

    let mut k = waiting_run();
    let tool = k.iter().position(|e| e.name() == "before_tool_call");
    k.truncate(tool.unwrap_or(0) + 1);
    let cancelled = EventKind::Cancelled {
        phase: pai_runtime::event::RunStage::EpisodeEnd,
    };
    let mut events: Vec<Event> = k.iter().cloned().map(ev).collect();
    events.push(deleted());
    events.extend([ev(cancelled.clone()), ev(ended_deleted())]);
    assert_eq!(check(&events, false, None, &[]), vec![]);

    let mut events: Vec<Event> = k.into_iter().map(ev).collect();
    events.extend([ev(cancelled), ev(ended_deleted())]);
    assert_eq!(check(&events, false, None, &[]).len(), 1);
}

/// A step that does not wait gives its pending calls cancelled results
/// after after_step, then the episode ends.
#[test]
fn l14_accepts_pending_calls_given_up_after_after_step() {
    let mut k = waiting_run();
    let wait = k.iter().position(|e| e.name() == "wait").unwrap_or(0);
    k.truncate(wait - 1);
    k.push(after_step(0, Transition::Complete { reason: None }));
    k.extend(result(0, "c"));
    k.push(commit_results(0));
    k.push(EventKind::LeaseReleased { episode: 1 });
    k.push(EventKind::Ended {
        version: None,
        status: RunStatus::Completed,
        outcome: pai_runtime::message::Outcome::Completed,
        reason: None,
    });
    assert_eq!(judge(k), vec![]);
}

fn awaiting(call: &str) -> EventKind {
    EventKind::Awaiting {
        calls: vec![call.into()],
        version: 2,
    }
}

fn answered(call: &str) -> EventKind {
    EventKind::Answered {
        call_id: call.into(),
        answer: Answer::Denied {
            reason: "no".into(),
        },
        version: 3,
    }
}

/// SPEC T9: a call is answerable from its step's `awaiting` on; answered
/// while the backend tools run, its result joins that step's and the run
/// goes on without waiting.
fn early_answered_run() -> Vec<EventKind> {
    let policy = |call: &str| EventKind::BeforeToolCall {
        step: 0,
        call_id: call.into(),
        tool: "x".into(),
        decision: pai_runtime::hook::ToolCallDecision::Continue,
    };
    let mut k = vec![
        EventKind::Admitted {
            trigger: "u".into(),
        },
        lease(),
        prepare_run(false),
    ];
    k.extend(step_events(0, 2));
    k.extend([policy("c"), policy("b"), awaiting("c"), answered("c")]);
    k.extend(result(0, "b"));
    k.extend(result(0, "c"));
    k.push(commit_results(0));
    k.push(after_step(0, Transition::Complete { reason: None }));
    k.push(EventKind::LeaseReleased { episode: 1 });
    k.push(EventKind::Ended {
        version: None,
        status: RunStatus::Completed,
        outcome: pai_runtime::message::Outcome::Completed,
        reason: None,
    });
    k
}

/// SPEC L14, T9: an answer that comes while the step's backend tools run
/// (after `awaiting`) fits the grammar; an answer before any call was made
/// answerable does not, nor an `awaiting` before its step's policy ran.
#[test]
fn l14_accepts_answers_after_awaiting_and_places_awaiting() {
    assert_eq!(judge(early_answered_run()), vec![]);

    let mut k = early_answered_run();
    let at = k.iter().position(|e| e.name() == "awaiting").unwrap_or(0);
    k.remove(at);
    let v = judge(k);
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].message.contains("no call of the run is answerable"));

    let mut k = early_answered_run();
    let a = k.remove(at);
    let policy = k.iter().position(|e| e.name() == "before_tool_call");
    k.insert(policy.unwrap_or(0), a);
    let v = judge(k);
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].message.contains("unexpected awaiting"), "{v:?}");
}

/// Among workers the story may lack a stale holder's `awaiting` whose
/// write landed (v2) before the client's answer (v3): the holder's own
/// log has it, and the answer is in place (found by swarm fuzzing, seed 3
/// case 1019).
#[test]
fn l14_places_an_answer_by_an_awaiting_only_the_holders_own_log_has() {
    let mut k = early_answered_run();
    let at = k.iter().position(|e| e.name() == "awaiting").unwrap_or(0);
    let awaited = k.remove(at);
    let events: Vec<Event> = k.into_iter().map(ev).collect();
    let raw = vec![ev(awaited)];
    assert_eq!(check(&events, false, Some(&[]), &raw), vec![]);
    let v = check(&events, false, Some(&[]), &[]);
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].message.contains("no call of the run is answerable"));
}

/// The run of `waiting_run` up to its wait, then cancelled: the closing
/// episode gives the waiting call a cancelled result, is cancelled, and
/// releases its lease (SPEC §1 `cancel_close`).
fn cancel_closed_run() -> Vec<EventKind> {
    let mut k = waiting_run();
    let wait = k.iter().position(|e| e.name() == "wait").unwrap_or(0);
    k.truncate(wait + 1);
    k.push(lease());
    k.extend(result(0, "c"));
    k.push(commit_results(0));
    k.push(EventKind::Cancelled {
        phase: pai_runtime::event::RunStage::Resume,
    });
    k.push(EventKind::LeaseReleased { episode: 2 });
    k.push(EventKind::Ended {
        version: None,
        status: RunStatus::Cancelled,
        outcome: pai_runtime::message::Outcome::Cancelled,
        reason: None,
    });
    k
}

/// SPEC §1: `cancel_close` closes the open calls and runs no other
/// phase: no prepare_run, step or failure after its commit, and no
/// episode after it.
#[test]
fn l14_a_cancel_close_runs_no_other_phase() {
    assert_eq!(judge(cancel_closed_run()), vec![]);
    let closed = cancel_closed_run();
    let cancelled = closed
        .iter()
        .position(|e| e.name() == "cancelled")
        .unwrap_or(0);
    // A step after the closing commit.
    let mut k = closed.clone();
    k.splice(cancelled..cancelled, step_events(1, 0));
    assert_eq!(judge(k).len(), 1, "a step inside cancel_close");
    // A failure in place of the cancel.
    let mut k = closed.clone();
    k[cancelled] = EventKind::Failed {
        phase: pai_runtime::event::RunStage::Resume,
        message: "x".into(),
    };
    assert_eq!(judge(k).len(), 1, "a failure after the closing commit");
    // Another episode after the release.
    let mut k = closed.clone();
    let end = k.len() - 1;
    k.splice(end..end, [lease(), prepare_run(true)]);
    assert_eq!(judge(k).len(), 1, "an episode after cancel_close");
}

/// SPEC §1, H5: in one process, `deleted` ends the run's episode: no
/// lease of the run follows the delete.
#[test]
fn l14_no_lease_after_the_delete_that_ended_the_episode() {
    let mut k = waiting_run();
    let wait = k.iter().position(|e| e.name() == "wait").unwrap_or(0);
    k.truncate(wait + 1);
    let mut events: Vec<Event> = k.into_iter().map(ev).collect();
    events.push(deleted());
    events.push(ev(lease()));
    events.push(ev(ended_deleted()));
    let found = check(&events, false, None, &[]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].message.contains("after the delete"));
}

/// A run among workers whose holder committed step 0 (one backend call)
/// and was cut off before the call's result; a taker settles step 0 first
/// (K3): the call's policy and result, `after_step`, then, since the step
/// goes on, `prepare_run` and step 1.
fn taken_over_run() -> Vec<EventKind> {
    let mut k = vec![
        EventKind::Admitted {
            trigger: "u".into(),
        },
        lease(),
        prepare_run(false),
    ];
    k.extend(step_events(0, 1));
    k.push(before_tool_call(0, "c"));
    k.push(EventKind::TakenOver {
        from: Some("w1".into()),
        stale_token: 1.into(),
        expired_at: 300,
        next_step: 1,
    });
    k.push(lease());
    k.push(before_tool_call(0, "c"));
    k.extend(result(0, "c"));
    k.push(commit_results(0));
    k.push(after_step(0, Transition::NextStep));
    k.push(prepare_run(true));
    k.extend(step_events(1, 0));
    k.push(after_step(1, Transition::Complete { reason: None }));
    k.extend(released_and_ended());
    k
}

fn before_tool_call(step: u32, call: &str) -> EventKind {
    EventKind::BeforeToolCall {
        step,
        call_id: call.into(),
        tool: "x".into(),
        decision: pai_runtime::hook::ToolCallDecision::Continue,
    }
}

fn released_and_ended() -> [EventKind; 2] {
    [
        EventKind::LeaseReleased { episode: 2 },
        EventKind::Ended {
            version: None,
            status: RunStatus::Completed,
            outcome: pai_runtime::message::Outcome::Completed,
            reason: None,
        },
    ]
}

fn judge_among_workers(kinds: Vec<EventKind>) -> Vec<Violation> {
    let events: Vec<Event> = kinds.into_iter().map(ev).collect();
    check(&events, false, Some(&[]), &[])
}

/// SPEC §1, K3: a taker settles the last committed step before anything
/// else; `prepare_run` comes only when that step's transition goes on, and
/// a step only after it.
#[test]
fn l14_a_taker_settles_the_last_step_before_prepare_run() {
    assert_eq!(judge_among_workers(taken_over_run()), vec![]);
    let taken = taken_over_run();
    let at = |name: &str, nth: usize| {
        let mut found = taken.iter().enumerate().filter(|(_, e)| e.name() == name);
        found.nth(nth).map_or(0, |(i, _)| i)
    };
    // The taker's prepare_run before the last step's calls (before the fix).
    let mut k = taken.clone();
    let prepare = k.remove(at("prepare_run", 1));
    k.insert(at("lease_acquired", 1) + 1, prepare);
    assert_eq!(judge_among_workers(k).len(), 1, "policy after prepare_run");
    // A step right after the taker's after_step, without prepare_run.
    let mut k = taken.clone();
    k.remove(at("prepare_run", 1));
    assert_eq!(
        judge_among_workers(k).len(),
        1,
        "a step without prepare_run"
    );
    // prepare_run after a transition that ended the run.
    let mut k = taken.clone();
    k[at("after_step", 0)] = after_step(0, Transition::Complete { reason: None });
    assert_eq!(judge_among_workers(k).len(), 1, "prepare_run after the end");
    // ... which ends there instead.
    let mut k = taken.clone();
    k[at("after_step", 0)] = after_step(0, Transition::Complete { reason: None });
    k.truncate(at("after_step", 0) + 1);
    k.extend(released_and_ended());
    assert_eq!(judge_among_workers(k), vec![]);
}

/// SPEC §1, K3, T9: a taker's call whose answer is committed takes it
/// without `before_tool_call`; with a steer the step took on record, no
/// `after_step` comes before `prepare_run`.
#[test]
fn l14_a_taker_may_resolve_recorded_calls_and_go_on_without_after_step() {
    let mut k = taken_over_run();
    let lease_at = k.iter().rposition(|e| e.name() == "lease_acquired");
    let lease_at = lease_at.unwrap_or(0);
    k.remove(lease_at + 1);
    assert_eq!(judge_among_workers(k.clone()), vec![]);
    let after = k.iter().position(|e| e.name() == "after_step").unwrap_or(0);
    k.remove(after);
    assert_eq!(judge_among_workers(k), vec![]);
}
