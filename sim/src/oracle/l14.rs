//! SPEC §1, L14: every run's events follow the phase grammar, with `wait`
//! ending an episode and later episodes resuming the run.

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::Event;
use pai_runtime::event::EventKind;
use pai_runtime::store::{RunStatus, StoredThread};

mod grammar;

use super::facts::beside_phases;
use super::observed::Violation;
use crate::scenario::OracleId;
use grammar::{State, after_takeover, next};

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
    /// Some of its calls were made answerable (`awaiting` or `wait`, T9):
    /// clients may answer them from then on, until the run ends.
    answerable: bool,
    /// In one process: the log has shown the delete that ended it, so its
    /// episode ended there (SPEC §1 `deleted`) and no lease follows.
    deleted_here: bool,
}

/// SPEC §1: each run's events follow
///
/// ```text
/// run      := admit (episode+ | ε) cancel_close? end   (ε only for a run cancelled while queued, K6)
///             | admit episode+              (the last episode ended with wait)
/// episode  := lease_acquired prepare_run step* (lease_released | wait | deleted)
///           | lease_acquired prepare_run results step* lease_released   (resumed)
///           | lease_acquired results respond lease_released       (resumed, responds)
///           | lease_acquired respond lease_released
/// cancel_close := lease_acquired results? cancelled lease_released
///             (after a wait, or a takeover K3: nothing else follows but the end)
/// step     := resolve_model_context prepare_model_step
///             (around_model_call attempt_failed?)+ stream commit_step tools?
///             after_step results?
/// tools    := before_tool_call+ awaiting? ((tool_start | tool_end | after_tool_result)+
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
/// `failed` or `cancelled`, then releases its lease and ends. `awaiting`
/// comes after every `before_tool_call` of its step, before any result;
/// from then on (or from a `wait`) `answer` events may come anywhere until
/// the run ends (T9: answers are taken while the run runs or waits, and
/// calls answered while the backend tools run join that step's results).
/// Hook notes, resolver leaves, steers, cancel requests and facade writes
/// may come anywhere. `prepare_run` says it
/// resumes exactly when the run waited before. Step numbers run 0, 1, 2, ...
/// within a run, across episodes; every event of a step carries its number,
/// and a resumed run's results carry the number of the step that waited.
/// A run whose delete the log shows (one process) ends its episode there
/// (`deleted`): it may stop anywhere with `cancelled` and end without a
/// release, and no lease of it follows.
/// Only the first violation of each run is reported; a run still waiting
/// when the scenario ends is not one, nor a run queued behind it.
///
/// Among workers (K3) an episode may also end with `lease_lost` anywhere,
/// or be cut off by `taken_over` (its worker crashed or was cut off); the
/// next episode settles the last committed step first:
///
/// ```text
/// taken    := lease_acquired settle
///             ( prepare_run step* lease_released        (the step went on)
///             | respond lease_released
///             | wait                                    (the step waits)
///             | lease_released )                        (the step ended the run)
///           | lease_acquired prepare_run results? step* lease_released
///                                  (the step waited and was resumed since)
///           | lease_acquired results? cancelled lease_released  (cancelled, K3)
/// settle   := (before_tool_call* awaiting? results)? after_step? given?
/// given    := (tool_end | after_tool_result)+ commit_tool_results
/// ```
///
/// `before_tool_call` comes only for calls whose policy decision the store
/// does not hold; `after_step` is absent when the store recorded the
/// step's transition (a steer taken: `prepare_run` follows). After the
/// step's `after_step`, its transition decides what may follow: a wait,
/// `prepare_run` (or a response) when it goes on, the release when it
/// ended the run.
///
/// Among workers (`stored` holds the store's final threads), a process may
/// vanish after the store applied its write but before it logged it: a
/// run the store has ended (or put to wait) may lack its last events, and
/// a run a crashed worker admitted for a leftover steer its `admit`.
pub(super) fn check(
    events: &[Event],
    cut_short: bool,
    stored: Option<&[StoredThread]>,
    raw: &[Event],
) -> Vec<Violation> {
    let mut runs: BTreeMap<(&str, &str), Run> = BTreeMap::new();
    // Among workers a worker may log a deleted run's end before the
    // client logs the delete (each logs when it hears the store): the
    // runs a delete cancelled may stop anywhere from the start.
    if stored.is_some() {
        for e in events {
            if let EventKind::ThreadDeleted { cancelled, .. } = &e.kind {
                for run in cancelled {
                    let r = runs.entry((e.thread_id.as_str(), run.as_str()));
                    r.or_default().deleted = true;
                }
            }
        }
    }
    let mut out = walk((events, raw), stored.is_some(), &mut runs);
    out.extend(never_ended(events, runs, cut_short, stored));
    out
}

/// Walks each run through the grammar, event by event (`among_workers`:
/// the store's final threads are known); a run's first violation breaks it.
fn walk<'a>(
    (events, raw): (&'a [Event], &'a [Event]),
    among_workers: bool,
    runs: &mut BTreeMap<(&'a str, &'a str), Run>,
) -> Vec<Violation> {
    let mut out = Vec::new();
    // Among workers a stale holder's `awaiting` that landed before the
    // takeover is only in its own log (`raw`), not in the story.
    let answerable_at = answerable_versions(events.iter().chain(raw));
    let lost: BTreeSet<(&str, &str)> = events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::LeaseLost { .. } | EventKind::TakenOver { .. }
            )
        })
        .map(|e| (e.thread_id.as_str(), e.run_id.as_str()))
        .collect();
    for e in events {
        // Trusted code's events (admin writes, rewrites, deletions) belong
        // to no run; a deletion marks the runs it cancelled.
        if e.run_id.is_empty() {
            if let EventKind::ThreadDeleted { cancelled, .. } = &e.kind {
                for run in cancelled {
                    let r = runs
                        .entry((e.thread_id.as_str(), run.as_str()))
                        .or_default();
                    r.deleted = true;
                    r.deleted_here = !among_workers;
                }
            }
            continue;
        }
        let answers = matches!(e.kind, EventKind::Awaiting { .. });
        if beside_phases(&e.kind) && !answers {
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
        if among_workers && claim && run.state == State::Start {
            run.state = State::Admitted;
        }
        // Among workers the client may log its answer before the worker
        // logs the `awaiting` it heard: the store's versions order them.
        // A holder that lost its lease may not have heard its `awaiting`
        // land at all (a later one names the calls again).
        let key = (e.thread_id.as_str(), e.run_id.as_str());
        if let EventKind::Answered { version, .. } = e.kind
            && answerable_at
                .get(&key)
                .is_some_and(|v| *v < version || lost.contains(&key))
        {
            run.answerable = true;
        }
        if let Err(message) = advance(run, &e.kind) {
            out.push(Violation::new(OracleId::L14, Some(&e.run_id), message));
            run.state = State::Broken;
        }
    }
    out
}

/// The runs that never ended, with nothing to excuse it.
fn never_ended(
    events: &[Event],
    runs: BTreeMap<(&str, &str), Run>,
    cut_short: bool,
    stored: Option<&[StoredThread]>,
) -> Vec<Violation> {
    let mut out = Vec::new();
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
    // Runs admitted before a delete of their thread: the store ended them
    // (cancelled, or already over; a worker cut off may never have heard
    // its own end land), and the deleted thread is not stored.
    let settled_at_delete = super::facts::old_incarnation_runs(events);
    for ((thread, id), run) in runs {
        // A scenario stopped at its time limit fails as such, not here.
        // Among workers the store ends a deleted incarnation's runs (H5);
        // a worker that vanished or was cut off may never log it.
        let gone = stored.is_some() && (run.deleted || settled_at_delete.contains(&(thread, id)));
        let done = gone
            || match run.state {
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

/// The version at which each run first made calls answerable (its first
/// `awaiting` or `wait` commit).
fn answerable_versions<'a>(
    events: impl Iterator<Item = &'a Event>,
) -> BTreeMap<(&'a str, &'a str), u64> {
    let mut out: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    for e in events {
        if let EventKind::Awaiting { version, .. } | EventKind::Waiting { version, .. } = e.kind {
            let v = out
                .entry((e.thread_id.as_str(), e.run_id.as_str()))
                .or_insert(version);
            *v = (*v).min(version);
        }
    }
    out
}

/// Moves `run` past one event, or says why the grammar refuses it.
fn advance(run: &mut Run, kind: &EventKind) -> Result<(), String> {
    if run.deleted_here && matches!(kind, EventKind::LeaseAcquired { .. }) {
        return Err("lease_acquired after the delete that ended the run's episode".into());
    }
    if let Some(state) = deleted(run, kind) {
        run.state = state;
        return Ok(());
    }
    if let Some(answered) = answer(run, kind) {
        return answered;
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

/// SPEC T9: a client answers a call once some of the run's calls were made
/// answerable (`awaiting` or `wait`), in whatever state the run is then,
/// until it ends; an answer leaves the run's state as it was.
fn answer(run: &mut Run, kind: &EventKind) -> Option<Result<(), String>> {
    match kind {
        EventKind::Waiting { .. } | EventKind::Awaiting { .. } => {
            run.answerable = true;
            None
        }
        EventKind::Answered { .. } => Some(match run.state {
            State::Start | State::Admitted | State::Ended => {
                Err(format!("unexpected answer after state {:?}", run.state))
            }
            // A holder that lost its lease may have had its `awaiting`
            // land in the store unheard (its log lacks it): not judged.
            State::Lost => Ok(()),
            _ if !run.answerable => Err(format!(
                "unexpected answer after state {:?}: no call of the run is answerable",
                run.state
            )),
            _ => Ok(()),
        }),
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
        Start | Admitted | Released | Closing | Ended | Waiting | Broken | Lost | TakenOver
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

#[cfg(test)]
mod tests;
