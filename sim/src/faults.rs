//! Planting faults (SPEC D5): each fault edits what the oracles and the
//! transcript read of one run, never the runtime, and says what it did.

use pai_runtime::{Event, event::EventName};

use crate::oracle::Observations;
use crate::scenario::FaultSpec;

/// Applies one fault; returns the note the transcript shows, as an error if
/// the fault found nothing to change.
pub(crate) fn plant(fault: &FaultSpec, obs: &mut Observations) -> Result<String, String> {
    let done = match fault {
        FaultSpec::Drop { .. }
        | FaultSpec::SwapWithPrevious { .. }
        | FaultSpec::Duplicate { .. }
        | FaultSpec::Swap { .. }
        | FaultSpec::SwapPayloads { .. } => edit_events(fault, obs),
        FaultSpec::EditMessage { .. } => edit_message(fault, obs),
        // Faults acting on workers are carried out by the simulator, not here.
        FaultSpec::Crash { .. }
        | FaultSpec::Partition { .. }
        | FaultSpec::Hold { .. }
        | FaultSpec::Pause { .. }
        | FaultSpec::AcceptStale
        | FaultSpec::RefuseTakeover
        | FaultSpec::CancelOnTakeover => return Ok("acts on the workers".to_string()),
        // Planted in the store tap before the run, not here.
        FaultSpec::IgnoreExpectations => {
            return Ok("planted store bug: mutations commit whatever they expect".to_string());
        }
        FaultSpec::LeakPrivate { thread } => leak_private(obs, thread),
        FaultSpec::EditRequest { .. } | FaultSpec::DropLive { .. } => edit_sent(fault, obs),
        FaultSpec::GrowRead { nth } => grow_read(obs, *nth),
        FaultSpec::UnfencedRead { nth } => unfenced_read(obs, *nth),
        FaultSpec::EditResult { .. } => edit_result(fault, obs),
        FaultSpec::SwallowAfterStepError { nth } => swallow_after_step_error(obs, *nth),
        FaultSpec::EditSummaryRequest { call, drop_message } => obs
            .summaries
            .get_mut(call.wrapping_sub(1))
            .filter(|c| (1..=c.messages.len()).contains(drop_message))
            .map(|c| {
                c.messages.remove(drop_message - 1);
                format!("removed message {drop_message} from summary request {call}")
            }),
    };
    match done {
        Some(did) => Ok(format!("planted fault: {did}")),
        None => Err(format!("planted fault: {fault:?} found nothing to change")),
    }
}

/// A fault that edits the event log: drops, repeats or moves an event, or
/// swaps two events' places or payloads.
fn edit_events(fault: &FaultSpec, obs: &mut Observations) -> Option<String> {
    match fault {
        FaultSpec::Drop { event, nth } => nth_of(&obs.events, *event, *nth).map(|i| {
            let gone = obs.events.remove(i);
            drop_raw(obs, &gone);
            format!("dropped {event} #{nth}")
        }),
        FaultSpec::SwapWithPrevious { event, nth } => nth_of(&obs.events, *event, *nth)
            .filter(|i| *i > 0)
            .map(|i| {
                obs.events.swap(i - 1, i);
                format!("moved {event} #{nth} one place earlier")
            }),
        FaultSpec::Duplicate { event, nth } => nth_of(&obs.events, *event, *nth).map(|i| {
            let copy = obs.events[i].clone();
            obs.events.insert(i + 1, copy);
            format!("repeated {event} #{nth}")
        }),
        FaultSpec::Swap { event, a, b } => pair(&obs.events, *event, *a, *b).map(|(i, j)| {
            obs.events.swap(i, j);
            format!("swapped the places of {event} #{a} and #{b}")
        }),
        FaultSpec::SwapPayloads { event, a, b } => {
            pair(&obs.events, *event, *a, *b).map(|(i, j)| {
                let ki = obs.events[i].kind.clone();
                obs.events[i].kind = std::mem::replace(&mut obs.events[j].kind, ki);
                format!("swapped what {event} #{a} and #{b} say")
            })
        }
        _ => None,
    }
}

/// A fault that edits what was sent: a model call's request, or what a
/// watcher received live.
fn edit_sent(fault: &FaultSpec, obs: &mut Observations) -> Option<String> {
    match fault {
        FaultSpec::EditRequest {
            call,
            append,
            drop_message,
        } => {
            let edited = obs.calls.edit_messages(call.wrapping_sub(1), |m| {
                if let Some(k) = drop_message.filter(|k| (1..=m.len()).contains(k)) {
                    m.remove(k - 1);
                }
                if let Some(a) = append {
                    m.push(a.model_message());
                }
            });
            edited.then(|| format!("edited what model call {call} was sent"))
        }
        FaultSpec::DropLive { watcher, nth } => {
            let mine = obs
                .live
                .iter()
                .enumerate()
                .filter(|(_, (w, _))| w == watcher);
            mine.map(|(i, _)| i).nth(nth.wrapping_sub(1)).map(|i| {
                obs.live.remove(i);
                format!("dropped live event #{nth} of watcher {watcher}")
            })
        }
        _ => None,
    }
}

/// The index of the `nth` (from 1) event of a kind.
/// Among workers the lie is told in the worker's own log too (the lease
/// oracles read it): the dropped event leaves it, and the store's records
/// logged after it keep their places.
fn drop_raw(obs: &mut Observations, gone: &Event) {
    let Some(c) = obs.cluster.as_mut() else {
        return;
    };
    let Some(j) = c.raw_events.iter().position(|e| e == gone) else {
        return;
    };
    c.raw_events.remove(j);
    for r in c.log.iter_mut().filter(|r| r.after_event > j) {
        r.after_event -= 1;
    }
}

fn nth_of(events: &[Event], name: EventName, nth: usize) -> Option<usize> {
    let of_kind = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind.event_name() == name);
    of_kind.map(|(i, _)| i).nth(nth.checked_sub(1)?)
}

fn pair(events: &[Event], name: EventName, a: usize, b: usize) -> Option<(usize, usize)> {
    Some((nth_of(events, name, a)?, nth_of(events, name, b)?))
}

fn edit_message(fault: &FaultSpec, obs: &mut Observations) -> Option<String> {
    let FaultSpec::EditMessage {
        thread,
        seq,
        delete,
        ..
    } = fault
    else {
        return None;
    };
    // The lie is about the store, so the owner's client reads it too.
    let viewed = obs
        .client_views
        .iter_mut()
        .filter(|v| v.state.id == *thread)
        .map(|v| &mut v.state.messages);
    let stored = obs.threads.iter_mut().find(|t| t.id == *thread)?;
    let mut edited = false;
    for messages in std::iter::once(&mut stored.messages).chain(viewed) {
        edited |= edit_one(fault, messages);
    }
    edited.then(|| match delete {
        true => format!("deleted message #{seq}"),
        false => format!("edited message #{seq}"),
    })
}

/// Applies an `edit_message` fault to one list of messages.
fn edit_one(fault: &FaultSpec, messages: &mut Vec<pai_runtime::Message>) -> bool {
    let FaultSpec::EditMessage {
        seq,
        text,
        reverse_parts,
        delete,
        ..
    } = fault
    else {
        return false;
    };
    let Some(i) = messages.iter().position(|m| m.seq == *seq) else {
        return false;
    };
    if *delete {
        messages.remove(i);
        return true;
    }
    let m = &mut messages[i];
    if *reverse_parts {
        m.parts.reverse();
    }
    if let Some(new) = text {
        let slot = m.parts.iter_mut().find_map(|p| match p {
            pai_runtime::Part::Text { text } => Some(text),
            _ => None,
        });
        match slot {
            Some(old) => *old = new.clone(),
            None => m.parts.push(pai_runtime::Part::text(new.clone())),
        }
    }
    true
}

fn grow_read(obs: &mut Observations, nth: usize) -> Option<String> {
    let newest = obs
        .threads
        .iter()
        .flat_map(|t| &t.messages)
        .map(|m| m.seq)
        .max()?;
    let read = obs.reads.get_mut(nth.checked_sub(1)?)?;
    read.seqs.push(newest + 1);
    Some(format!("history read #{nth} returned #{}", newest + 1))
}

/// Adds the first message its thread holds at the end to the `nth` read,
/// numbered within the read's anchor (as an incarnation that numbered its
/// messages afresh would have it), so only the fence can tell.
fn unfenced_read(obs: &mut Observations, nth: usize) -> Option<String> {
    let read = obs.reads.get_mut(nth.checked_sub(1)?)?;
    let first = obs.threads.iter().find_map(|t| {
        let m = t.messages.first()?;
        let ours = t.runs.iter().any(|r| r.id == read.run_id);
        (!ours || t.messages.len() > 1).then_some(m)
    })?;
    read.seqs.push(first.seq.min(read.anchor));
    read.ids.push(first.id.to_string());
    Some(format!("history read #{nth} returned {}", first.id))
}

/// Changes the `nth` tool result of a thread, in the store and in what
/// its owner's client read.
fn edit_result(fault: &FaultSpec, obs: &mut Observations) -> Option<String> {
    let FaultSpec::EditResult {
        thread,
        nth,
        source,
        output,
    } = fault
    else {
        return None;
    };
    let viewed = obs
        .client_views
        .iter_mut()
        .filter(|v| v.state.id == *thread)
        .map(|v| &mut v.state.messages);
    let stored = obs.threads.iter_mut().find(|t| t.id == *thread)?;
    let mut edited = false;
    for messages in std::iter::once(&mut stored.messages).chain(viewed) {
        let results = messages.iter_mut().flat_map(|m| &mut m.parts);
        let results = results.filter(|p| matches!(p, pai_runtime::Part::ToolResult { .. }));
        if let Some(pai_runtime::Part::ToolResult {
            source: s,
            output: o,
            ..
        }) = results.into_iter().nth(nth.checked_sub(1)?)
        {
            if let Some(new) = source {
                *s = *new;
            }
            if let Some(new) = output {
                *o = new.clone();
            }
            edited = true;
        }
    }
    edited.then(|| format!("edited tool result #{nth} of {thread}"))
}

/// Turns the `nth` failure in `after_step` into that step's completing
/// `after_step`, and its run's end (stored and logged) into completed.
fn swallow_after_step_error(obs: &mut Observations, nth: usize) -> Option<String> {
    use pai_runtime::{
        event::{EventKind, RunStage, Transition},
        hook::{AfterStepDecision, Phase},
        message::Outcome,
        store::RunStatus,
    };
    let failures = obs.events.iter().enumerate().filter(|(_, e)| {
        matches!(
            e.kind,
            EventKind::Failed {
                phase: RunStage::Phase(Phase::AfterStep),
                ..
            }
        )
    });
    let i = failures.map(|(i, _)| i).nth(nth.checked_sub(1)?)?;
    let run = obs.events[i].run_id.clone();
    let step = obs.events[..i].iter().rev().find_map(|e| match &e.kind {
        EventKind::CommitStep { step, .. } | EventKind::CommitToolResults { step, .. }
            if e.run_id == run =>
        {
            Some(*step)
        }
        _ => None,
    })?;
    obs.events[i].kind = EventKind::AfterStep {
        step,
        decision: AfterStepDecision::Natural,
        transition: Transition::Complete { reason: None },
    };
    for e in obs.events[i..].iter_mut().filter(|e| e.run_id == run) {
        if let EventKind::Ended {
            status,
            outcome,
            reason,
            ..
        } = &mut e.kind
        {
            (*status, *outcome, *reason) = (RunStatus::Completed, Outcome::Completed, None);
        }
    }
    for r in obs.threads.iter_mut().flat_map(|t| &mut t.runs) {
        if r.id == run {
            (r.status, r.outcome, r.reason) =
                (RunStatus::Completed, Some(Outcome::Completed), None);
        }
    }
    Some(format!("swallowed {run}'s after_step error at step {step}"))
}

/// Merges a thread's stored private metadata into what its client read.
fn leak_private(obs: &mut Observations, thread: &str) -> Option<String> {
    let private = &obs
        .threads
        .iter()
        .find(|t| t.id == thread)?
        .private_metadata;
    if private.is_empty() {
        return None;
    }
    let view = obs.client_views.iter_mut().find(|v| v.state.id == thread)?;
    for (k, v) in private {
        view.state.metadata.insert(k.clone(), v.clone());
    }
    Some(format!("showed {thread}'s private metadata to its client"))
}
