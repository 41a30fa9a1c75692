//! SPEC §1, L14: every run's events follow the phase grammar, with `wait`
//! ending an episode and later episodes resuming the run.

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::{Event, EventKind, RunStatus, StoredThread, Transition};

use super::facts::beside_phases;
use super::observed::Violation;
use crate::scenario::OracleId;

/// Where a run is in the phase grammar of SPEC §1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    #[default]
    Start,
    Admitted,
    Leased,
    /// After prepare_run (or a resumed run's results): a step may begin.
    Ready,
    Responded,
    Resolved,
    Prepared,
    Called,
    AttemptFailed,
    Streamed,
    Committed,
    Policy,
    Tools,
    ToolsCommitted,
    /// The run stopped inside its tools: pending calls get cancelled results.
    Stopping,
    Stopped,
    /// After after_step; `waits` when its transition was `wait`.
    Stepped {
        waits: bool,
    },
    /// After after_step: pending calls that will never be answered get
    /// cancelled results (A3), or the run was cancelled as it would wait.
    GivingUp,
    GaveUp,
    /// A resumed episode's prepare_run: the waiting calls' results follow.
    Resuming,
    ResumeTools,
    /// A resumed episode that responds or was cancelled: the waiting calls
    /// get cancelled results before anything else.
    Dropping,
    Dropped,
    Failed,
    Released,
    /// The run waits for a client: its episode ended with `wait`.
    Waiting,
    /// The driver lost the run's lease (K3): the episode is over here.
    Lost,
    /// Another worker took the run over (K3): a resumed episode follows.
    TakenOver,
    /// A takeover's calls of the last committed step without a committed
    /// result run again (K5): their policy, then their results.
    OrphanPolicy,
    OrphanTools,
    /// The rerun calls' results are committed; the episode goes on as a
    /// resumed one does, or waits if some of them wait for a client.
    OrphansDone,
    Ended,
    /// A violation was reported; later events of the run are not checked.
    Broken,
}

/// A run's place in the grammar: its state, the step it is at, and whether
/// its current episode resumes it after a wait.
#[derive(Debug, Clone, Copy, Default)]
struct Run {
    state: State,
    step: Option<u32>,
    resumed: bool,
    /// The current episode took the run over from a lost holder.
    takeover: bool,
    /// Its thread was deleted under it (SPEC H5): it may stop anywhere with
    /// `cancelled`, and end without releasing a lease the store retired.
    deleted: bool,
}

/// SPEC §1: each run's events follow
///
/// ```text
/// run      := admit (episode+ | ε) end     (ε only for a run cancelled while queued, K6)
///             | admit episode+              (the last episode ended with wait)
/// episode  := lease_acquired prepare_run step* (lease_released | wait answer*)
///           | lease_acquired prepare_run results step* lease_released   (resumed)
///           | lease_acquired results respond lease_released       (resumed, responds)
///           | lease_acquired results cancelled lease_released     (a waiting run cancelled)
///           | lease_acquired respond lease_released
/// step     := resolve_model_context prepare_model_step
///             (around_model_call attempt_failed?)+ stream commit_step tools?
///             after_step results?
/// tools    := before_tool_call+ ((tool_start | tool_end | after_tool_result)+
///             commit_tool_results)?
/// results  := (tool_start | tool_end | after_tool_result)+ commit_tool_results
/// ```
///
/// A step's tools block has no results when every call waits for a client;
/// the results after `after_step` give pending calls cancelled results when
/// the step does not wait (A3). A run that stops inside its tools first
/// gives pending calls cancelled results the same way. A steering message
/// ends an episode (lease_released) and the next one continues the run. A
/// run that fails or is cancelled may stop anywhere inside its episode with
/// `failed` or `cancelled`, then releases its lease and ends. `answer`
/// events come only while the run waits; hook notes, resolver leaves,
/// steers and facade writes may come anywhere. `prepare_run` says it
/// resumes exactly when the run waited before. Step numbers run 0, 1, 2, ...
/// within a run, across episodes; every event of a step carries its number,
/// and a resumed run's results carry the number of the step that waited.
/// Only the first violation of each run is reported; a run still waiting
/// when the scenario ends is not one, nor a run queued behind it.
///
/// Among workers (K3) an episode may also end with `lease_lost` anywhere,
/// or be cut off by `taken_over` (its worker crashed or was cut off); the
/// next episode is then a resumed one that may begin a step at once, run
/// the last committed step's calls without a committed result, or end.
///
/// Among workers (`stored` holds the store's final threads), a process may
/// vanish after the store applied its write but before it logged it: a
/// run the store has ended (or put to wait) may lack its last events, and
/// a run a crashed worker admitted for a leftover steer its `admit`.
pub(super) fn check(
    events: &[Event],
    cut_short: bool,
    stored: Option<&[StoredThread]>,
) -> Vec<Violation> {
    let mut runs: BTreeMap<(&str, &str), Run> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        // Trusted code's events (admin writes, rewrites, deletions) belong
        // to no run; a deletion marks the runs it cancelled.
        if e.run_id.is_empty() {
            if let EventKind::ThreadDeleted { cancelled, .. } = &e.kind {
                for run in cancelled {
                    let r = runs.entry((e.thread_id.as_str(), run.as_str()));
                    r.or_default().deleted = true;
                }
            }
            continue;
        }
        if beside_phases(&e.kind) {
            continue;
        }
        let run = runs
            .entry((e.thread_id.as_str(), e.run_id.as_str()))
            .or_default();
        if run.state == State::Broken {
            continue;
        }
        let claim = matches!(
            e.kind,
            EventKind::LeaseAcquired { .. } | EventKind::TakenOver { .. }
        );
        if stored.is_some() && claim && run.state == State::Start {
            run.state = State::Admitted;
        }
        if let Err(message) = advance(run, &e.kind) {
            out.push(Violation::new(OracleId::L14, Some(&e.run_id), message));
            run.state = State::Broken;
        }
    }
    // Threads whose current run still waits: runs queued behind it never started.
    let held: BTreeSet<&str> = runs
        .iter()
        .filter(|(_, r)| r.state == State::Waiting)
        .map(|((thread, _), _)| *thread)
        .collect();
    let settled_in_store = |thread: &str, id: &str| {
        stored.into_iter().flatten().any(|t| {
            t.id == thread
                && t.runs.iter().any(|r| {
                    r.id == id && !matches!(r.status, RunStatus::Queued | RunStatus::Running)
                })
        })
    };
    for ((thread, id), run) in runs {
        // A scenario stopped at its time limit fails as such, not here.
        let done = match run.state {
            State::Ended | State::Broken | State::Waiting => true,
            State::Admitted => held.contains(thread),
            _ => settled_in_store(thread, id),
        };
        if !done && !cut_short {
            let message = format!("run never ended (last state {:?})", run.state);
            out.push(Violation::new(OracleId::L14, Some(id), message));
        }
    }
    out
}

/// Moves `run` past one event, or says why the grammar refuses it.
fn advance(run: &mut Run, kind: &EventKind) -> Result<(), String> {
    if let Some(state) = deleted(run, kind) {
        run.state = state;
        return Ok(());
    }
    if let Some(state) = lease_change(run, kind) {
        run.state = state?;
        return Ok(());
    }
    if let EventKind::LeaseAcquired { .. } = kind {
        run.takeover = run.state == State::TakenOver;
        run.resumed = run.state == State::Waiting || run.takeover;
    }
    if let EventKind::PrepareRun { resumed, .. } = kind
        && *resumed != run.resumed
    {
        return Err(match run.resumed {
            true => "prepare_run of a resumed episode does not say it resumes".into(),
            false => "prepare_run says it resumes, but the run never waited".into(),
        });
    }
    let state = run.state;
    let takeover = run.takeover.then(|| after_takeover(state, kind)).flatten();
    run.state = takeover
        .or_else(|| next(state, run.resumed, kind))
        .ok_or_else(|| format!("unexpected {} after state {state:?}", kind.name()))?;
    step_number(run, kind)
}

/// A run whose thread was deleted (SPEC H5) stops wherever it was: a
/// queued or waiting one ends at once, a running one with `cancelled`
/// (perhaps after what its step was doing) and then its end, with no
/// lease to release.
fn deleted(run: &Run, kind: &EventKind) -> Option<State> {
    let open = !matches!(run.state, State::Start | State::Ended);
    match kind {
        EventKind::Cancelled { .. } if run.deleted && open => Some(State::Failed),
        EventKind::Ended { .. } if run.deleted && open => Some(State::Ended),
        _ => None,
    }
}

/// Among several workers (K3): the driver loses the lease, ending its
/// episode wherever it was; or another worker takes the run over (also
/// from a driver that vanished without a word, in a crash), and the run
/// continues after its last committed step.
fn lease_change(run: &mut Run, kind: &EventKind) -> Option<Result<State, String>> {
    use State::*;
    let in_episode = !matches!(
        run.state,
        Start | Admitted | Released | Ended | Waiting | Broken | Lost | TakenOver
    );
    Some(match kind {
        EventKind::LeaseLost { .. } if in_episode => Ok(Lost),
        // A claim whose answer never reached its worker leaves a queued or
        // waiting run held by nobody who knows: it is taken over too.
        EventKind::TakenOver { next_step, .. }
            if in_episode || matches!(run.state, Lost | Admitted | Waiting) =>
        {
            run.step = next_step.checked_sub(1);
            Ok(TakenOver)
        }
        EventKind::LeaseLost { .. } | EventKind::TakenOver { .. } => Err(format!(
            "unexpected {} after state {:?}",
            kind.name(),
            run.state
        )),
        _ => return None,
    })
}

/// Step numbers: a step begins with the number after the run's last one;
/// every other event of a step carries the number of the step it is in.
fn step_number(run: &mut Run, kind: &EventKind) -> Result<(), String> {
    let carried = match kind {
        EventKind::ResolveModelContext { step, .. } => {
            let expected = run.step.map_or(0, |s| s + 1);
            run.step = Some(*step);
            return match *step == expected {
                true => Ok(()),
                false => Err(format!("step {step} began, expected step {expected}")),
            };
        }
        other => match crate::steps::step_of(other) {
            Some(step) => step,
            None => return Ok(()),
        },
    };
    match run.step {
        Some(s) if s == carried => Ok(()),
        Some(s) => Err(format!(
            "{} says step {carried} inside step {s}",
            kind.name()
        )),
        None => Err(format!(
            "{} says step {carried} before any step",
            kind.name()
        )),
    }
}

/// A result event: a tool started or ended, or `after_tool_result` ran.
fn result_event(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::ToolStart { .. } | EventKind::ToolEnd { .. } | EventKind::AfterToolResult { .. }
    )
}

/// A result event for a call that never runs: a cancelled (or denied, or
/// submitted) result, or `after_tool_result` over it.
fn given_result(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::ToolEnd { .. } | EventKind::AfterToolResult { .. }
    )
}

/// The grammar as a transition table: the state after `kind`, or `None` if
/// the grammar does not allow `kind` here. `resumed`: the episode resumes
/// a run that waited.
fn next(state: State, resumed: bool, kind: &EventKind) -> Option<State> {
    use State::*;
    let in_episode = !matches!(
        state,
        Start | Admitted | Released | Ended | Failed | Waiting | Broken | Lost | TakenOver
    );
    if in_episode && matches!(kind, EventKind::Failed { .. } | EventKind::Cancelled { .. }) {
        return Some(Failed);
    }
    in_step(state, kind)
        .or_else(|| in_results(state, resumed, kind))
        .or_else(|| between_episodes(state, resumed, kind))
}

/// What a takeover's episode may do beyond a resumed one's: begin a step
/// at once, run the last step's calls that have no committed result, end
/// at the step limit, or respond without waiting calls to give up.
fn after_takeover(state: State, kind: &EventKind) -> Option<State> {
    use State::*;
    Some(match (state, kind) {
        (Resuming, EventKind::ResolveModelContext { .. }) => Resolved,
        (Resuming, EventKind::LeaseReleased { .. }) => Released,
        (Leased, EventKind::Respond { .. }) => Responded,
        (Resuming | OrphanPolicy, EventKind::BeforeToolCall { .. }) => OrphanPolicy,
        (OrphanPolicy | OrphanTools, k) if result_event(k) => OrphanTools,
        (OrphanTools, EventKind::CommitToolResults { .. }) => OrphansDone,
        (OrphansDone, EventKind::ResolveModelContext { .. }) => Resolved,
        (OrphansDone, EventKind::LeaseReleased { .. }) => Released,
        (OrphanPolicy | OrphansDone, EventKind::Waiting { .. }) => Waiting,
        _ => return None,
    })
}

/// A step's own events, up to its after_step.
fn in_step(state: State, kind: &EventKind) -> Option<State> {
    use State::*;
    Some(match (state, kind) {
        (Ready | Stepped { waits: false }, EventKind::ResolveModelContext { .. }) => Resolved,
        (Resolved, EventKind::PrepareModelStep { .. }) => Prepared,
        (Prepared | Called | AttemptFailed, EventKind::ModelCall { .. }) => Called,
        (Called, EventKind::AttemptFailed { .. }) => AttemptFailed,
        (Called, EventKind::Stream { .. }) => Streamed,
        (Streamed, EventKind::CommitStep { .. }) => Committed,
        (Committed | Policy, EventKind::BeforeToolCall { .. }) => Policy,
        (Policy | Tools, k) if result_event(k) => Tools,
        (Tools, EventKind::CommitToolResults { .. }) => ToolsCommitted,
        (ToolsCommitted | Stopping, k) if given_result(k) => Stopping,
        (Stopping, EventKind::CommitToolResults { .. }) => Stopped,
        // Policy: every call of the step waits, so no result came.
        (Committed | Policy | ToolsCommitted, EventKind::AfterStep { transition, .. }) => Stepped {
            waits: *transition == Transition::Wait,
        },
        _ => return None,
    })
}

/// Results given outside a step's tools block: to pending calls after
/// after_step, and to a resumed run's waiting calls.
fn in_results(state: State, resumed: bool, kind: &EventKind) -> Option<State> {
    use State::*;
    Some(match (state, kind) {
        (Stepped { .. } | GivingUp, k) if given_result(k) => GivingUp,
        (GivingUp, EventKind::CommitToolResults { .. }) => GaveUp,
        (Resuming | ResumeTools, k) if result_event(k) => ResumeTools,
        (ResumeTools, EventKind::CommitToolResults { .. }) => Ready,
        (Leased | Dropping, k) if resumed && given_result(k) => Dropping,
        (Dropping, EventKind::CommitToolResults { .. }) => Dropped,
        _ => return None,
    })
}

/// Episode boundaries: leases, prepare_run, respond, wait, answers, the end.
fn between_episodes(state: State, resumed: bool, kind: &EventKind) -> Option<State> {
    use State::*;
    Some(match (state, kind) {
        (Start, EventKind::Admitted { .. }) => Admitted,
        (Admitted | Released | Waiting | TakenOver, EventKind::LeaseAcquired { .. }) => Leased,
        (Leased, EventKind::PrepareRun { .. }) if resumed => Resuming,
        (Leased, EventKind::PrepareRun { .. }) => Ready,
        (Leased, EventKind::Respond { .. }) if !resumed => Responded,
        (Dropped, EventKind::Respond { .. }) => Responded,
        (Stepped { waits: true }, EventKind::Waiting { .. }) => Waiting,
        // Among workers: a wait whose answer never came back (the worker
        // gave the lease up) may still land while nobody took the run over.
        (Lost, EventKind::Waiting { .. }) => Waiting,
        (Waiting, EventKind::Answered { .. }) => Waiting,
        (
            Ready | Stepped { waits: false } | GaveUp | Responded | Failed,
            EventKind::LeaseReleased { .. },
        ) => Released,
        (Released, EventKind::Ended { .. }) => Ended,
        // A run cancelled while queued ends without an episode (K6).
        (
            Admitted,
            EventKind::Ended {
                status: RunStatus::Cancelled,
                ..
            },
        ) => Ended,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use pai_runtime::{
        AfterStepDecision, Answer, ResultSource, Route, ToolResult, ToolResultDecision, ToolStatus,
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
                message: format!("m{step}"),
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
            token: 1,
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
            decision: pai_runtime::ToolCallDecision::Continue,
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
            outcome: pai_runtime::Outcome::Completed,
            reason: None,
        });
        k
    }

    fn judge(kinds: Vec<EventKind>) -> Vec<Violation> {
        let events: Vec<Event> = kinds.into_iter().map(ev).collect();
        check(&events, false, None)
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
            run_id: String::new(),
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
            outcome: pai_runtime::Outcome::Cancelled,
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
        assert_eq!(check(&events, false, None), vec![]);
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
        assert_eq!(check(&events, false, None), vec![]);

        let mut k = waiting_run();
        let tool = k.iter().position(|e| e.name() == "before_tool_call");
        k.truncate(tool.unwrap_or(0) + 1);
        let cancelled = EventKind::Cancelled {
            phase: pai_runtime::RunStage::EpisodeEnd,
        };
        let mut events: Vec<Event> = k.iter().cloned().map(ev).collect();
        events.push(deleted());
        events.extend([ev(cancelled.clone()), ev(ended_deleted())]);
        assert_eq!(check(&events, false, None), vec![]);

        let mut events: Vec<Event> = k.into_iter().map(ev).collect();
        events.extend([ev(cancelled), ev(ended_deleted())]);
        assert_eq!(check(&events, false, None).len(), 1);
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
            outcome: pai_runtime::Outcome::Completed,
            reason: None,
        });
        assert_eq!(judge(k), vec![]);
    }
}
