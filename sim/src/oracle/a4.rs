//! SPEC A4: a steering message is taken exactly once: by the first step of
//! its run that starts after it was stored (that step's context holds it),
//! or, if the run ends first, by the one run its run's pending steers then
//! start (the newest steer is that run's trigger; its context holds them
//! all); never both. A run still waiting for a client when the scenario
//! ends has not taken its steers yet (T9). A steer whose visibility a
//! rewrite changed (R1) is taken all the same, but need not be sent. A
//! steer its run's `prepare_run` judged (it, or a later user message of the
//! run, was the latest one) is that run's for good, even when no step of
//! the run follows (L1: a resumed run may end at its step limit).

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::{
    Event, Message, Role,
    event::{EventKind, RunStage, Transition},
    hook::Phase,
    store::RunStatus,
};

use super::facts::{anchors, model_text, reshapes_context, stored};
use super::observed::{Observed, Violation};
use super::rewrites::Erasures;
use crate::scenario::OracleId;

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let f = Facts::of(o);
    let mut out = Vec::new();
    for &(run, id, seq) in &f.steers {
        if let Some(p) = problem(o, &f, (run, id, seq)) {
            let message = format!("steer #{seq} {p}");
            out.push(Violation::new(OracleId::A4, Some(run), message));
        }
    }
    out.extend(hand_overs_need_a_steer(o, &f.steers, &f.anchor, &f.unknown));
    out
}

/// What the log and the store say about the scenario's steers, gathered
/// once before each steer is judged.
struct Facts<'a> {
    messages: BTreeMap<(&'a str, &'a str), &'a Message>,
    anchor: BTreeMap<(&'a str, u32), u64>,
    /// (trigger, run) of every run admitted.
    triggers: Vec<(&'a str, &'a str)>,
    /// Each run's steers: (run, message, sequence number).
    steers: Vec<(&'a str, &'a str, u64)>,
    /// Where the log stored each steer.
    stored_at: BTreeMap<&'a str, usize>,
    /// Runs with a steer a rewrite or a deletion took away (R1, H5): which
    /// steers they had left, and which run those started, is not known.
    unknown: BTreeSet<&'a str>,
    waiting: BTreeSet<&'a str>,
    erased: Erasures<'a>,
    /// Among workers, a step more than one worker resolved (a stale holder
    /// and the one that took over): the calls do not say whose read they
    /// came from, so whether the taker's context held the steer is not told.
    ambiguous: BTreeSet<(&'a str, u32)>,
}

impl<'a> Facts<'a> {
    fn of(o: &Observed<'a>) -> Facts<'a> {
        let messages = stored(o.threads);
        let (steers, stored_at) = steers(o.events, &messages);
        Facts {
            anchor: anchors(o.events),
            triggers: triggers(o.events),
            unknown: lost_steers(o.events, &messages),
            messages,
            steers,
            stored_at,
            waiting: o
                .threads
                .iter()
                .flat_map(|t| &t.runs)
                .filter(|r| r.status == RunStatus::Waiting)
                .map(|r| r.id.as_str())
                .collect(),
            erased: Erasures::of(o.events),
            ambiguous: o
                .cluster
                .map(|c| super::m1_cluster::ambiguous(&c.raw_events))
                .unwrap_or_default(),
        }
    }
}

/// (trigger, run) of every run admitted, but for the runs a regeneration
/// started from a message already stored (R1).
fn triggers(events: &[Event]) -> Vec<(&str, &str)> {
    let regenerated: BTreeSet<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::HistoryRewritten { started, .. } => started.as_deref(),
            _ => None,
        })
        .collect();
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Admitted { trigger } if !regenerated.contains(e.run_id.as_str()) => {
                Some((trigger.as_str(), e.run_id.as_str()))
            }
            _ => None,
        })
        .collect()
}

/// Each run's steers still stored, by sequence number, and where the log
/// stored them.
type Steers<'a> = (Vec<(&'a str, &'a str, u64)>, BTreeMap<&'a str, usize>);

/// The steers of the log that the store still holds ([`Steers`]).
fn steers<'a>(events: &'a [Event], messages: &BTreeMap<(&str, &str), &Message>) -> Steers<'a> {
    let mut steers: Vec<(&str, &str, u64)> = Vec::new();
    let mut stored_at: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        if let EventKind::Steered { message } = &e.kind
            && let Some(m) = messages.get(&(e.thread_id.as_str(), message.as_str()))
        {
            steers.push((e.run_id.as_str(), message.as_str(), m.seq));
            stored_at.insert(message, i);
        }
    }
    (steers, stored_at)
}

/// Runs with a steer a rewrite or a deletion took away (R1, H5).
fn lost_steers<'a>(
    events: &'a [Event],
    messages: &BTreeMap<(&str, &str), &Message>,
) -> BTreeSet<&'a str> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Steered { message }
                if !messages.contains_key(&(e.thread_id.as_str(), message.as_str())) =>
            {
                Some(e.run_id.as_str())
            }
            _ => None,
        })
        .collect()
}

/// What is wrong with the steer `id` (sequence number `seq`) of `run`, if
/// anything.
fn problem(o: &Observed<'_>, f: &Facts<'_>, (run, id, seq): (&str, &str, u64)) -> Option<String> {
    let found = f.messages.iter().find(|((_, i), _)| *i == id);
    let text = found.map(|(_, m)| m.text()).unwrap_or_default();
    let restarted = f.triggers.iter().filter(|(t, _)| *t == id).count();
    // The run a later steer of the same run started, if any.
    let leftover = f
        .steers
        .iter()
        .filter(|(r, _, s)| *r == run && *s >= seq)
        .find_map(|(_, t, _)| f.triggers.iter().find(|(x, _)| x == t).map(|(_, l)| *l));
    let from = f.stored_at.get(id).copied().unwrap_or(0);
    // A rewrite may have hidden it from the context before it was sent.
    let rewritten = found.is_some_and(|((t, _), _)| f.erased.visibility_changed_after(t, id, from));
    let handed_over = handed_over(&o.events[from..], run);
    let failed_in_step = failed_in_step(&o.events[from..], run);
    let judged = judged_latest(o, &f.messages, run).is_some_and(|s| s >= seq);
    let taker = first_step_after(&f.anchor, run, seq);
    match (taker, leftover) {
        _ if restarted > 1 => Some(format!("started {restarted} runs")),
        _ if (taker.is_some() || handed_over || judged) && restarted > 0 => {
            Some("was taken by its run and also started a run".to_string())
        }
        (Some(step), _)
            if !rewritten && !f.ambiguous.contains(&(run, step)) && !sent(o, run, step, &text) =>
        {
            Some(format!(
                "was not in the context of step {step}, the first after it"
            ))
        }
        // A run still waiting for a client takes it when it resumes (T9).
        (None, None)
            if !handed_over
                && !judged
                && !failed_in_step
                && !f.waiting.contains(run)
                && !f.unknown.contains(run) =>
        {
            Some("was never taken: no step after it, and no run started".to_string())
        }
        (None, Some(l)) if !rewritten && !sent(o, l, 0, &text) => Some(format!(
            "was not in the context of {l}, the run its run's steers started"
        )),
        _ => None,
    }
}

/// Whether `run` handed over to a new episode for a steer stored at the
/// start of `events` (the episode may then have failed before its first
/// step anchored).
fn handed_over(events: &[Event], run: &str) -> bool {
    events.iter().any(|e| {
        e.run_id == run
            && matches!(
                e.kind,
                EventKind::AfterStep {
                    transition: Transition::Steer,
                    ..
                }
            )
    })
}

/// Whether, after a steer stored at the start of `events`, a step of `run`
/// began, took it, and failed (or was cancelled) before its context was
/// resolved: the run took it and ended. Or its prepare_run read the thread
/// (taking every pending steer, L1) and then failed or was cancelled: the
/// log names no message it judged, so the steer may be the run's for good.
fn failed_in_step(events: &[Event], run: &str) -> bool {
    events.iter().any(|e| {
        e.run_id == run
            && (in_step_end(&e.kind)
                || matches!(
                    e.kind,
                    EventKind::Failed {
                        phase: RunStage::Phase(Phase::PrepareRun),
                        ..
                    } | EventKind::Cancelled {
                        phase: RunStage::Phase(Phase::PrepareRun)
                    }
                ))
    })
}

/// A step hands over to a new episode only for a steer it did not take: one
/// of its run's steers is above its anchor.
fn hand_overs_need_a_steer(
    o: &Observed<'_>,
    steers: &[(&str, &str, u64)],
    anchor: &BTreeMap<(&str, u32), u64>,
    unknown: &BTreeSet<&str>,
) -> Vec<Violation> {
    let mut out = Vec::new();
    for e in o.events {
        let EventKind::AfterStep {
            step,
            transition: Transition::Steer,
            ..
        } = &e.kind
        else {
            continue;
        };
        let run = e.run_id.as_str();
        let a = anchor.get(&(run, *step)).copied().unwrap_or(u64::MAX);
        if !unknown.contains(run) && !steers.iter().any(|(r, _, seq)| *r == run && *seq > a) {
            let message =
                format!("step {step} handed over for a steer, but every steer was already taken");
            out.push(Violation::new(OracleId::A4, Some(run), message));
        }
    }
    out
}

/// The sequence number of the newest user message any `prepare_run` of
/// `run` was given: every steer stored up to it was pending or taken when
/// that `prepare_run` read the thread, so the run took it (L1).
fn judged_latest(
    o: &Observed<'_>,
    messages: &BTreeMap<(&str, &str), &Message>,
    run: &str,
) -> Option<u64> {
    o.events
        .iter()
        .filter(|e| e.run_id == run)
        .filter_map(|e| match &e.kind {
            EventKind::PrepareRun {
                latest_user: Some(m),
                ..
            }
            | EventKind::Respond {
                latest_user: Some(m),
                ..
            } => messages.get(&(e.thread_id.as_str(), m.as_str())),
            _ => None,
        })
        .map(|m| m.seq)
        .max()
}

/// A failure or cancellation inside a step (after its anchor was taken).
fn in_step_end(kind: &EventKind) -> bool {
    let stage = match kind {
        EventKind::Failed { phase, .. } | EventKind::Cancelled { phase } => *phase,
        _ => return false,
    };
    match stage {
        RunStage::Phase(p) => p != Phase::PrepareRun,
        RunStage::BetweenSteps | RunStage::EpisodeEnd | RunStage::Respond | RunStage::Runtime => {
            false
        }
        _ => true,
    }
}

/// The first step of `run` whose anchor is at or after `seq`.
fn first_step_after(anchor: &BTreeMap<(&str, u32), u64>, run: &str, seq: u64) -> Option<u32> {
    anchor
        .iter()
        .filter(|((r, _), a)| *r == run && **a >= seq)
        .map(|((_, s), _)| *s)
        .min()
}

/// Whether a request of `run`'s `step` held a user message `text` (true
/// when a hook chose the context, or the step sent nothing). A step's
/// attempts send one context; a step begun again after a takeover (K3)
/// sends its own, and a stale worker may still send the one it had: the
/// step took the steer if any of them holds it.
fn sent(o: &Observed<'_>, run: &str, step: u32, text: &str) -> bool {
    if reshapes_context(o.scenario) {
        return true;
    }
    let mut calls = o
        .calls
        .iter()
        .filter(|c| c.request.run_id == run && c.request.step == step)
        .peekable();
    if calls.peek().is_none() {
        // The step failed before its model call: nothing was sent to judge.
        return true;
    }
    calls.any(|c| {
        o.calls
            .messages(c)
            .iter()
            .filter(|m| m.role == Role::User)
            .any(|m| model_text(m) == text)
    })
}
