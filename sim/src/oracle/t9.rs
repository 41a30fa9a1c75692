//! SPEC T9 (with T4, T7): every call a run waited on ends with exactly one
//! final result, and that result is the one its answer asks for. Answers
//! name calls the run made answerable (its latest `awaiting` or `wait`),
//! once each, before it ends. A call answered while its step's backend
//! tools ran and resolved in that step is judged as a waited one.

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::{
    Event, Part, Role,
    event::{EventKind, RunStage},
    hook::ToolResultDecision,
    message::ResultSource,
    store::{Answer, RunStatus, StoredThread},
};
use serde_json::Value;

use super::observed::{Observed, Violation};
use super::rewrites::Erasures;
use crate::scenario::OracleId;

/// A stored result: its source and output.
type Stored<'a> = (ResultSource, &'a Value);

/// One call a run waited on, as the log tells it.
#[derive(Debug, Default)]
struct Waited<'a> {
    thread: &'a str,
    run: &'a str,
    /// Its answer and where the log has it.
    answer: Option<(&'a Answer, usize)>,
    /// A resumed episode's prepare_run came after the wait: the answers
    /// were honoured (not given up by a cancel or a respond).
    honoured: bool,
    /// Where the call's tools started.
    started: Vec<usize>,
    /// An `after_tool_result` replaced its output.
    replaced: bool,
    /// The run was cancelled or responded after the wait: answers may be
    /// given up (cancelled results) instead of honoured (T8, L12).
    cut_off: bool,
    /// Made answerable by `awaiting` and never (yet) waited on: judged only
    /// once its step resolved it from its answer (T9).
    awaited: bool,
    /// Its step may still resolve it early: after `awaiting`, in the same
    /// episode, before the step's `after_step`.
    live: bool,
    /// A result event for it came after its answer while `live`.
    resolved: bool,
}

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let raw = o.cluster.map_or(&[][..], |c| &c.raw_events[..]);
    let (waited, mut out) = from_log(o.events, raw);
    let results = stored_results(o.threads);
    let status: BTreeMap<&str, RunStatus> = o
        .threads
        .iter()
        .flat_map(|t| t.runs.iter().map(|r| (r.id.as_str(), r.status)))
        .collect();
    let latest = latest_waits(o.events);
    let broken = broken_by_hooks(o.events);
    for (call, w) in &waited {
        let found = results
            .get(&(w.thread, *call))
            .map_or(&[][..], Vec::as_slice);
        if w.awaited && !w.honoured {
            if let Some(p) = kept_answer(w, found) {
                let message = format!("answerable call {call} {p}");
                out.push(Violation::new(OracleId::T9, Some(w.run), message));
            }
            continue;
        }
        let status = status.get(w.run).copied();
        let still_waiting = status == Some(RunStatus::Waiting)
            && latest.get(w.run).is_some_and(|l| l.contains(call));
        // A run a hook broke (L4), or one the time limit cut short, may
        // leave its calls without results; never with two. A deletion or
        // a regeneration may take results away (H5, R1). Among workers a
        // failing run's last write can land after its worker stopped
        // waiting for the answer (and logged no `failed`): the stored
        // status tells it then.
        let may_lack = o.cut_short
            || broken.contains(w.run)
            || status == Some(RunStatus::Failed)
            || Erasures::of(o.events).erased_anywhere(w.thread);
        let problem = match found.len() {
            0 if still_waiting || may_lack => None,
            1 if !still_waiting => honoured(w, found[0]),
            n => Some(format!(
                "has {n} results{}",
                if still_waiting {
                    " while the run still waits on it"
                } else {
                    ""
                }
            )),
        };
        if let Some(p) = problem {
            let message = format!("waiting call {call} {p}");
            out.push(Violation::new(OracleId::T9, Some(w.run), message));
        }
    }
    out
}

/// Runs that failed, or were cancelled as a hook or an `on_output` handler
/// failed (the failure came while the cancel was pending): what they had
/// not committed is lost (L4), their waiting calls' results included.
fn broken_by_hooks(events: &[Event]) -> BTreeSet<&str> {
    events
        .iter()
        .filter(|e| match &e.kind {
            EventKind::Failed { .. } => true,
            EventKind::Cancelled { phase } => {
                matches!(phase, RunStage::Phase(_) | RunStage::OnOutput)
            }
            _ => false,
        })
        .map(|e| e.run_id.as_str())
        .collect()
}

/// For each run, the calls of its latest wait.
fn latest_waits(events: &[Event]) -> BTreeMap<&str, Vec<&str>> {
    let mut out = BTreeMap::new();
    for e in events {
        if let EventKind::Waiting { calls, .. } = &e.kind {
            out.insert(
                e.run_id.as_str(),
                calls.iter().map(|s| s.as_str()).collect(),
            );
        }
    }
    out
}

/// The calls each wait names, what happened to them in the log, and the
/// answers that named no call of their run's latest wait, came when it did
/// not wait, or came twice.
fn from_log<'a>(
    events: &'a [Event],
    raw: &'a [Event],
) -> (BTreeMap<&'a str, Waited<'a>>, Vec<Violation>) {
    let mut waited: BTreeMap<&str, Waited<'_>> = BTreeMap::new();
    // Per run: the calls of its latest wait, while it waits.
    let mut open: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut out = Vec::new();
    // Among workers a stale holder's `awaiting` that landed before the
    // takeover is only in its own log (`raw`), not in the story.
    let first = first_answerable(events.iter().chain(raw));
    let lost = lost_leases(events);
    for (i, e) in events.iter().enumerate() {
        let run = e.run_id.as_str();
        // Among workers the client may log its answer before the worker
        // logs the `awaiting` it heard: the store's versions order them.
        // A holder that lost its lease may not have heard its `awaiting`
        // land at all (a later one names the call again).
        if let EventKind::Answered {
            call_id, version, ..
        } = &e.kind
            && let Some(&(thread, v)) = first.get(&(run, call_id.as_str()))
            && (v < *version || lost.contains(run))
            && !open.get(run).is_some_and(|c| c.contains(&call_id.as_str()))
        {
            register(&mut waited, (thread, run, call_id), true);
            open.entry(run).or_default().push(call_id);
        }
        match &e.kind {
            EventKind::Waiting { calls, .. } | EventKind::Awaiting { calls, .. } => {
                let awaited = matches!(e.kind, EventKind::Awaiting { .. });
                for c in calls {
                    register(&mut waited, (&e.thread_id, run, c), awaited);
                }
                open.insert(run, calls.iter().map(|s| s.as_str()).collect());
            }
            EventKind::Answered {
                call_id, answer, ..
            } => {
                let listed = open.get(run).is_some_and(|c| c.contains(&call_id.as_str()));
                let w = waited.get_mut(call_id.as_str()).filter(|_| listed);
                let problem = match w {
                    None => Some("names no call the run waits on"),
                    Some(w) if w.answer.is_some() => Some("answers it a second time"),
                    Some(w) => {
                        w.answer = Some((answer, i));
                        None
                    }
                };
                if let Some(p) = problem {
                    let message = format!("answer for {call_id} {p}");
                    out.push(Violation::new(OracleId::T9, Some(run), message));
                }
            }
            // The store takes answers while the run runs or waits (T9).
            EventKind::Ended { .. } => {
                open.remove(run);
            }
            kind => follow(&mut waited, run, i, kind),
        }
    }
    (waited, out)
}

/// Each (run, call) → its thread and the version at which it was first
/// made answerable (`awaiting` or `wait`).
/// The runs whose holder lost its lease, or was taken over from.
fn lost_leases(events: &[Event]) -> BTreeSet<&str> {
    let lost = |e: &&Event| {
        matches!(
            e.kind,
            EventKind::LeaseLost { .. } | EventKind::TakenOver { .. }
        )
    };
    events
        .iter()
        .filter(lost)
        .map(|e| e.run_id.as_str())
        .collect()
}

fn first_answerable<'a>(
    events: impl Iterator<Item = &'a Event>,
) -> BTreeMap<(&'a str, &'a str), (&'a str, u64)> {
    let mut out: BTreeMap<(&str, &str), (&str, u64)> = BTreeMap::new();
    for e in events {
        if let EventKind::Awaiting { calls, version } | EventKind::Waiting { calls, version } =
            &e.kind
        {
            for c in calls {
                let key = (e.run_id.as_str(), c.as_str());
                let v = out.entry(key).or_insert((e.thread_id.as_str(), *version));
                v.1 = v.1.min(*version);
            }
        }
    }
    out
}

/// What happens to the calls of `run` at event `i` (`kind`): a resume
/// honours the waited calls' answers; a result event after an answer,
/// committed before the step's `after_step` in the same episode, resolves
/// an awaited call early (T9); a cancel or a respond may give answers up.
fn follow<'a>(waited: &mut BTreeMap<&'a str, Waited<'a>>, run: &str, i: usize, kind: &EventKind) {
    match kind {
        EventKind::PrepareRun { resumed: true, .. } => {
            for w in waited.values_mut().filter(|w| w.run == run && !w.awaited) {
                w.honoured = true;
            }
        }
        EventKind::ToolStart { call_id, .. } => {
            if let Some(w) = waited.get_mut(call_id.as_str()) {
                w.started.push(i);
                w.resolved |= w.live && w.answer.is_some();
            }
        }
        EventKind::ToolEnd { result, .. } => {
            if let Some(w) = waited.get_mut(result.call_id.as_str()) {
                w.resolved |= w.live && w.answer.is_some();
            }
        }
        EventKind::CommitToolResults { .. } => {
            for w in waited.values_mut().filter(|w| w.run == run && w.live) {
                w.honoured |= w.resolved;
            }
        }
        EventKind::AfterStep { .. }
        | EventKind::LeaseAcquired { .. }
        | EventKind::LeaseLost { .. }
        | EventKind::TakenOver { .. }
        | EventKind::Cancelled { .. }
        | EventKind::Failed { .. } => {
            for w in waited.values_mut().filter(|w| w.run == run) {
                w.live = false;
            }
            cut_off(waited, run, kind);
        }
        EventKind::Respond { .. } => cut_off(waited, run, kind),
        EventKind::AfterToolResult {
            call_id,
            decision: ToolResultDecision::ReplaceOutput(_),
            ..
        } => {
            if let Some(w) = waited.get_mut(call_id.as_str()) {
                w.replaced = true;
            }
        }
        _ => {}
    }
}

/// Registers a call the run made answerable (`awaiting`) or waits on.
/// A call already known keeps its answer (the store keeps it too), so an
/// answer given while the backend tools ran counts for the wait after them.
fn register<'a>(
    waited: &mut BTreeMap<&'a str, Waited<'a>>,
    (thread, run, call): (&'a str, &'a str, &'a str),
    awaited: bool,
) {
    let w = waited.entry(call).or_default();
    if w.run != run {
        *w = Waited {
            thread,
            run,
            awaited: true,
            ..Waited::default()
        };
    }
    // Once waited on, a call stays judged as such.
    w.awaited &= awaited;
    w.live = awaited;
    w.resolved = false;
}

/// A cancel or a respond may give the run's answered calls up (T8, L12).
fn cut_off(waited: &mut BTreeMap<&str, Waited<'_>>, run: &str, kind: &EventKind) {
    if matches!(
        kind,
        EventKind::Cancelled { .. } | EventKind::Respond { .. }
    ) {
        for w in waited.values_mut().filter(|w| w.run == run) {
            w.cut_off = true;
        }
    }
}

/// Stored results by (thread, call id), over every tool message.
fn stored_results(threads: &[StoredThread]) -> BTreeMap<(&str, &str), Vec<Stored<'_>>> {
    let mut out: BTreeMap<(&str, &str), Vec<Stored<'_>>> = BTreeMap::new();
    for t in threads {
        for m in t.messages.iter().filter(|m| m.role == Role::Tool) {
            for p in &m.parts {
                if let Part::ToolResult {
                    call_id,
                    source,
                    output,
                    ..
                } = p
                {
                    let key = (t.id.as_str(), call_id.as_str());
                    out.entry(key).or_default().push((*source, output));
                }
            }
        }
    }
    out
}

/// What is wrong with an answered call's one result, if anything: a denial
/// is stored as such with its reason, a submitted output as the client's,
/// an approved call ran (unless `after_tool_result` replaced the output:
/// then only the source is judged).
/// A call made answerable and never waited on: a denial or a client's
/// output the store took (the client was told so) is what its one stored
/// result says, whatever the step then did: resolved early, given up as
/// the run completed (A3) or was cancelled (T8). An approval grants no
/// more than a run may make of it, so it is not judged here.
fn kept_answer(w: &Waited<'_>, found: &[Stored<'_>]) -> Option<String> {
    let ((answer, _), [(source, output)]) = (w.answer?, found) else {
        return None;
    };
    let kept = |v: &Value| w.replaced || *output == v;
    match answer {
        Answer::Denied { reason } => {
            let want = Value::String(reason.clone());
            (*source != ResultSource::Denied || !kept(&want)).then(|| {
                format!("was denied and the store took it, but its result is {source:?} {output}")
            })
        }
        Answer::Submitted { output: given } => (*source != ResultSource::Client || !kept(given))
            .then(|| {
                format!(
                    "was submitted {given} and the store took it, but its result is {source:?} {output}"
                )
            }),
        Answer::Approved => None,
    }
}

fn honoured(w: &Waited<'_>, (source, output): Stored<'_>) -> Option<String> {
    let (answer, at) = w.answer.filter(|_| w.honoured)?;
    let kept = |v: &Value| w.replaced || output == v;
    match answer {
        Answer::Denied { reason } => {
            let want = Value::String(reason.clone());
            (source != ResultSource::Denied || !kept(&want))
                .then(|| format!("was denied, but its result is {source:?} {output}"))
        }
        Answer::Submitted { output: given } => (source != ResultSource::Client || !kept(given))
            .then(|| format!("was submitted {given}, but its result is {source:?} {output}")),
        Answer::Approved => {
            let ran = w.started.iter().any(|s| *s > at);
            let given_up = w.cut_off && source == ResultSource::Cancelled;
            (!(ran || given_up) || matches!(source, ResultSource::Denied | ResultSource::Client))
                .then(|| format!("was approved, but never started (result {source:?})"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::facts::ev;

    fn answer(call: &str) -> EventKind {
        EventKind::Answered {
            call_id: call.into(),
            answer: Answer::Approved,
            version: 1,
        }
    }

    /// SPEC T9: an answer names a call of the run's latest wait, once,
    /// while the run waits.
    #[test]
    fn t9_answers_name_waiting_calls_once() {
        let wait = EventKind::Waiting {
            calls: vec!["a".into(), "b".into()],
            version: 1,
        };
        let lease = EventKind::LeaseAcquired {
            episode: 2,
            token: 2.into(),
            version: 2,
        };
        let events = [
            ev(answer("a")),
            ev(wait),
            ev(answer("a")),
            ev(answer("a")),
            ev(answer("x")),
            ev(answer("b")),
            ev(lease),
            ev(answer("b")),
            ev(EventKind::Ended {
                version: None,
                status: RunStatus::Completed,
                outcome: pai_runtime::message::Outcome::Completed,
                reason: None,
            }),
            ev(answer("b")),
        ];
        let (waited, v) = from_log(&events, &[]);
        let messages: Vec<&str> = v.iter().map(|v| v.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "answer for a names no call the run waits on",
                "answer for a answers it a second time",
                "answer for x names no call the run waits on",
                "answer for b answers it a second time",
                "answer for b names no call the run waits on",
            ]
        );
        assert_eq!(waited.len(), 2);
    }

    fn tool_end(call: &str) -> EventKind {
        EventKind::ToolEnd {
            step: 0,
            result: pai_runtime::hook::ToolResult {
                call_id: call.into(),
                tool: "x".into(),
                status: pai_runtime::message::ToolStatus::Error,
                source: ResultSource::Denied,
                output: Value::Null,
            },
            detail: None,
        }
    }

    /// SPEC T9: calls are answerable from `awaiting` on, while the backend
    /// tools run; one resolved from its answer in its step, before
    /// `after_step`, is judged as a waited call; one given up after
    /// `after_step` (A3) is not, nor one never answered.
    #[test]
    fn t9_early_answers_are_judged_once_resolved_in_their_step() {
        let awaiting = EventKind::Awaiting {
            calls: vec!["a".into(), "b".into(), "c".into()],
            version: 1,
        };
        let commit = EventKind::CommitToolResults {
            step: 0,
            message: "m".into(),
            version: 2,
            metadata: false,
        };
        let after_step = EventKind::AfterStep {
            step: 0,
            decision: pai_runtime::hook::AfterStepDecision::Natural,
            transition: pai_runtime::event::Transition::Complete { reason: None },
        };
        let events = [
            ev(awaiting),
            ev(answer("a")),
            ev(tool_end("a")),
            ev(tool_end("c")),
            ev(commit.clone()),
            ev(answer("b")),
            ev(after_step),
            ev(tool_end("b")),
            ev(commit),
        ];
        let (waited, v) = from_log(&events, &[]);
        assert_eq!(v, vec![]);
        let honoured: Vec<(&str, bool)> = waited.iter().map(|(c, w)| (*c, w.honoured)).collect();
        assert_eq!(honoured, [("a", true), ("b", false), ("c", false)]);
    }

    /// A denied call's result says denied, with the reason; an approved
    /// call's result comes after its tool started.
    #[test]
    fn t9_results_follow_their_answers() {
        let reason = Answer::Denied {
            reason: "no".into(),
        };
        let mut w = Waited {
            answer: Some((&reason, 3)),
            honoured: true,
            ..Waited::default()
        };
        let no = Value::String("no".into());
        assert_eq!(honoured(&w, (ResultSource::Denied, &no)), None);
        assert!(honoured(&w, (ResultSource::Tool, &no)).is_some());
        let approved = Answer::Approved;
        w.answer = Some((&approved, 3));
        assert!(honoured(&w, (ResultSource::Tool, &no)).is_some());
        w.started.push(4);
        assert_eq!(honoured(&w, (ResultSource::Tool, &no)), None);
        w.honoured = false;
        assert_eq!(honoured(&w, (ResultSource::Cancelled, &no)), None);
    }
}
