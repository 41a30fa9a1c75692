//! The run-lifecycle oracle (issue 38): every run's story, from every
//! worker that drove it (a stale holder's included), fed in store-commit
//! order to a small reference state machine of a run (`lifecycle/model.rs`,
//! written from the SPEC, sharing nothing with the runtime's step loop).
//! It refuses a model call, tool start, `prepare_run`, hook phase or
//! step commit after the run's transition ended it or after its holder
//! heard of a delete (H5); a model call, tool, `prepare_run` or step
//! commit after its holder heard of a cancel (K6); and a step that begins
//! before its predecessor's transition was decided (A1–A3), a taker's
//! included (K3).
//!
//! In one process the log is the store's order, and a cancel or a delete
//! is heard at once. Among workers each process logs what it heard when it
//! heard it, and the store's log says when it applied what: the two are
//! merged by where the store applied each record (`after_event`). What
//! the run is in the store (its committed steps, a wait or a taken steer,
//! the cancel) comes from the store's log; what each holder knew and did
//! comes from its own events. A holder hears of a cancel at the first
//! answer it logs with a version above the cancel's (a renewal, a write,
//! a claim), of a delete at its `delete_learned`.

mod answered;
mod model;

use std::collections::BTreeMap;

use pai_runtime::Role;
use pai_runtime::event::{EventKind, Transition};
use pai_runtime::store::RunStatus;
use pai_runtime::{Event, store::StoredThread};

use super::observed::{ClusterObs, Observed, Violation};
use crate::scenario::OracleId;
use crate::world::{ClientWrite, ClusterEvent, ClusterRecord};
use model::{Act, Decision, Input, News, RunModel, Who};

/// A run, by thread and run id.
type Key<'a> = (&'a str, &'a str);

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let fed = match o.cluster {
        Some(c) => among_workers(c, o.threads),
        None => one_process(o.events),
    };
    let mut out = judge(fed);
    out.extend(answered::check(o.events));
    out
}

/// Feeds each run's model its inputs in order; a run's first violation
/// is reported, and the rest of that run is not judged.
fn judge<'a>(fed: Vec<(Key<'a>, Input<'a>)>) -> Vec<Violation> {
    let mut runs: BTreeMap<Key<'a>, Option<RunModel<'a>>> = BTreeMap::new();
    let mut out = Vec::new();
    for (key, input) in fed {
        let slot = runs.entry(key).or_insert_with(|| Some(RunModel::default()));
        let Some(model) = slot else {
            continue;
        };
        if let Err(message) = model.feed(input) {
            out.push(Violation::new(OracleId::Lifecycle, Some(key.1), message));
            *slot = None;
        }
    }
    out
}

/// One process: the log, in order; the store's facts are the events that
/// report them, and a cancel or a delete is heard when it is logged.
fn one_process(events: &[Event]) -> Vec<(Key<'_>, Input<'_>)> {
    let mut out = Vec::new();
    for e in events {
        if let EventKind::ThreadDeleted { cancelled, .. } = &e.kind {
            for run in cancelled {
                let heard = Input::Heard {
                    by: None,
                    news: News::Delete,
                    how: "the delete (H5: at once in one process)",
                };
                out.push(((e.thread_id.as_str(), run.as_str()), heard));
            }
        }
        if e.run_id.is_empty() {
            continue;
        }
        let key = (e.thread_id.as_str(), e.run_id.as_str());
        let facts = match &e.kind {
            EventKind::CommitStep { step, .. } => vec![Input::StepCommitted(*step)],
            EventKind::CancelRequested { version } => vec![
                Input::CancelReached(*version),
                Input::Heard {
                    by: None,
                    news: News::Cancel,
                    how: "the cancel (K6: at once in one process)",
                },
            ],
            _ => Vec::new(),
        };
        out.extend(facts.into_iter().map(|i| (key, i)));
        out.extend(inputs(e).into_iter().map(|i| (key, i)));
        let settles = match &e.kind {
            EventKind::Waiting { .. } => true,
            EventKind::AfterStep { transition, .. } => *transition == Transition::Steer,
            _ => false,
        };
        if settles {
            out.push((key, Input::TransitionCommitted));
        }
    }
    out
}

/// Among workers: every worker's events as they were logged, with the
/// store's records merged in where the store applied them.
fn among_workers<'a>(c: &'a ClusterObs, threads: &'a [StoredThread]) -> Vec<(Key<'a>, Input<'a>)> {
    let steps = step_messages(&c.raw_events, threads);
    let cancels = cancel_versions(&c.raw_events);
    let mut out = Vec::new();
    let mut records = c.log.iter().peekable();
    for (i, e) in c.raw_events.iter().enumerate() {
        while let Some(r) = records.next_if(|r| r.after_event <= i) {
            out.extend(stored(r, &steps, &cancels));
        }
        if e.run_id.is_empty() {
            continue;
        }
        let key = (e.thread_id.as_str(), e.run_id.as_str());
        out.extend(inputs(e).into_iter().map(|i| (key, i)));
    }
    for r in records {
        out.extend(stored(r, &steps, &cancels));
    }
    out
}

/// What a store record tells the model of a run: a step committed (an
/// append that stored a step's assistant message), its transition
/// committed (a wait, a taken steer), a cancel that reached it.
fn stored<'a>(
    r: &'a ClusterRecord,
    steps: &BTreeMap<&str, u32>,
    cancels: &BTreeMap<Key<'_>, u64>,
) -> Vec<(Key<'a>, Input<'a>)> {
    match &r.what {
        ClusterEvent::Stored {
            thread,
            write: ClientWrite::Cancel(Some(run)),
            ..
        } => {
            let key = (thread.as_str(), run.as_str());
            let reached = cancels.get(&key).map(|v| Input::CancelReached(*v));
            reached.into_iter().map(|i| (key, i)).collect()
        }
        ClusterEvent::Wrote {
            thread,
            run,
            request,
            releases,
            messages,
            ..
        } => {
            let key = (thread.as_str(), run.as_str());
            let facts: Vec<Input<'a>> = match (*request, releases) {
                ("wait", true) | ("take_steer", _) => vec![Input::TransitionCommitted],
                ("append", _) => messages
                    .iter()
                    .filter_map(|m| steps.get(m.as_str()))
                    .map(|s| Input::StepCommitted(*s))
                    .collect(),
                _ => Vec::new(),
            };
            facts.into_iter().map(|i| (key, i)).collect()
        }
        _ => Vec::new(),
    }
}

/// Each step's assistant message, by id, and its step: as its worker
/// logged the commit, or as the store keeps it (a worker may vanish
/// before logging a commit that landed).
fn step_messages<'a>(raw: &'a [Event], threads: &'a [StoredThread]) -> BTreeMap<&'a str, u32> {
    let mut out = BTreeMap::new();
    for t in threads {
        for m in t.messages.iter().filter(|m| m.role == Role::Assistant) {
            if let (Some(step), Some(_)) = (m.pai.step, &m.pai.run_id) {
                out.insert(m.id.as_str(), step);
            }
        }
    }
    for e in raw {
        if let EventKind::CommitStep { step, message, .. } = &e.kind {
            out.insert(message.as_str(), *step);
        }
    }
    out
}

/// The version at which each run's first cancel landed, as the client that
/// made it logged it.
fn cancel_versions(raw: &[Event]) -> BTreeMap<Key<'_>, u64> {
    let mut out = BTreeMap::new();
    for e in raw {
        if let EventKind::CancelRequested { version } = e.kind {
            let key = (e.thread_id.as_str(), e.run_id.as_str());
            out.entry(key).or_insert(version);
        }
    }
    out
}

/// What one event of a run tells the model of its holder: a claim, an
/// act, an answer from the store, a delete learned.
fn inputs(e: &Event) -> Vec<Input<'_>> {
    let by: Who<'_> = e.worker.as_deref();
    let answer = |version: u64, aside: bool| Input::Answer { by, version, aside };
    let act = |act: Act| Input::Act {
        by,
        act,
        what: described(e),
    };
    match &e.kind {
        EventKind::TakenOver { next_step, .. } => vec![Input::TakenOver {
            by,
            next_step: *next_step,
        }],
        EventKind::LeaseAcquired { version, .. } => {
            vec![Input::Claimed { by }, answer(*version, false)]
        }
        EventKind::DeleteLearned { .. } => vec![Input::Heard {
            by,
            news: News::Delete,
            how: "the delete (H5: its delete_learned)",
        }],
        EventKind::LeaseRenewed { version, .. }
        | EventKind::ContextMessage { version, .. }
        | EventKind::Mutated { version, .. } => vec![answer(*version, true)],
        // A write staged with tool results (K5) is no exchange with the store.
        EventKind::RunMetadata { version } => version.iter().map(|v| answer(*v, true)).collect(),
        EventKind::Compacted { step, version, .. } => {
            vec![
                act(Act::Resolve {
                    step: *step,
                    done: false,
                }),
                answer(*version, true),
            ]
        }
        // What `on_output` writes is staged with the results (K5): no exchange.
        EventKind::OnOutput { .. } => vec![act(Act::ToolResult)],
        EventKind::CommitStep { step, version, .. } => vec![
            act(Act::CommitStep {
                step: *step,
                version: *version,
            }),
            answer(*version, false),
        ],
        EventKind::Waiting { version, .. } => {
            vec![
                act(Act::Wait { version: *version }),
                answer(*version, false),
            ]
        }
        EventKind::Awaiting { version, .. } => vec![act(Act::Awaiting), answer(*version, false)],
        EventKind::CommitToolResults { version, .. } => {
            vec![act(Act::CommitResults), answer(*version, false)]
        }
        EventKind::Respond { version, .. } => vec![act(Act::Respond), answer(*version, false)],
        kind => acted(kind).map(act).into_iter().collect(),
    }
}

/// The act an event reports, for events that report only one.
fn acted(kind: &EventKind) -> Option<Act> {
    Some(match kind {
        EventKind::PrepareRun { .. } => Act::PrepareRun,
        EventKind::ContextLeaf { step, .. } | EventKind::CompactionSkipped { step, .. } => {
            Act::Resolve {
                step: *step,
                done: false,
            }
        }
        EventKind::ResolveModelContext { step, .. } => Act::Resolve {
            step: *step,
            done: true,
        },
        EventKind::CompactionStarted { step, .. } => Act::Compaction { step: *step },
        EventKind::PrepareModelStep { .. } => Act::PrepareStep,
        EventKind::ModelCall { .. } => Act::ModelCall,
        EventKind::AttemptFailed { .. } | EventKind::Stream { .. } => Act::Streamed,
        EventKind::BeforeToolCall { step, .. } => Act::Policy { step: *step },
        EventKind::ToolStart { .. } => Act::ToolStart,
        EventKind::ToolEnd { .. } | EventKind::AfterToolResult { .. } => Act::ToolResult,
        EventKind::AfterStep {
            step, transition, ..
        } => Act::AfterStep {
            step: *step,
            decision: decision(transition),
        },
        EventKind::Cancelled { .. }
        | EventKind::Failed { .. }
        | EventKind::LeaseReleased { .. }
        | EventKind::LeaseLost { .. } => Act::Close,
        EventKind::Ended { status, .. } => Act::End {
            completed: *status == RunStatus::Completed,
        },
        _ => return None,
    })
}

/// How a transition hands over, as the model tells them apart.
fn decision(t: &Transition) -> Decision {
    match t {
        Transition::NextStep => Decision::Next,
        Transition::Steer => Decision::Steer,
        Transition::Wait => Decision::Wait,
        Transition::Complete {
            reason: Some(r), ..
        } if r == "max_steps" => Decision::Ends("the step limit"),
        Transition::Complete { .. } => Decision::Ends("complete"),
        Transition::Aborted { .. } => Decision::Ends("an abort"),
        Transition::Refused { .. } => Decision::Ends("a refusal"),
    }
}

/// An event as a violation names it: its name, its step, its worker.
fn described(e: &Event) -> String {
    let step = crate::steps::step_of(&e.kind)
        .or(match e.kind {
            EventKind::CompactionStarted { step, .. }
            | EventKind::CompactionSkipped { step, .. }
            | EventKind::Compacted { step, .. } => Some(step),
            _ => None,
        })
        .map(|s| format!(" step={s}"))
        .unwrap_or_default();
    let by = e
        .worker
        .as_deref()
        .map(|w| format!(" by {w}"))
        .unwrap_or_default();
    format!("{}{step}{by} at {}ms", e.kind.name(), e.at)
}

#[cfg(test)]
#[path = "lifecycle_tests.rs"]
mod tests;
