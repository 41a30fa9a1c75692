//! SPEC C1: the compaction helper's summary record covers every message up
//! to its cursor, and the cursor names that record. Judged from what the
//! scripted summary model was asked (the world records each request), the
//! stored summary records and the stored cursor:
//!
//! - each `compacted` names a stored summary record whose text a summary
//!   request of that run and step answered, through the canonical stages
//!   (C3: a redactor masks a summary as it masks a step's text);
//! - that request was sent every context-visible message after the
//!   previous cursor up to the new one (by role and text, or by the tool
//!   call ids it carries), and, when a previous cursor stood, the previous
//!   summary: what the new summary replaces is all in it;
//! - the thread's stored cursor is the last `compacted`'s (its `through`
//!   and its summary record, stored transcript-visible and hidden from the
//!   context), unless something may have moved it since: a rewrite (whose
//!   repair resets it), a deletion, trusted code writing its key, or
//!   (among workers) a run's mutation the store committed and no worker
//!   heard of (its answer lost: its cursor is the stored one).
//!
//! Left out, as what the summary could not have seen or what the final
//! thread no longer tells: messages whose visibility any mutation changed,
//! messages of runs admitted before the compaction that held no lease yet
//! then, results whose call is not in the range, messages a later rewrite
//! removed. (A queued run that starts later should read its own message,
//! which only the summary can carry once the cursor passed it: the
//! runtime's helper does not do so today; see `due`.) Scenarios with more than one compaction helper,
//! or with a registered hook that transforms streams, are not judged.

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::{
    Event, Message, Part, Role,
    event::EventKind,
    message::{ModelContent, ModelMessage, Producer},
    store::StoredThread,
};

use super::facts::model_text;
use super::observed::{Observed, Violation};
use crate::hooks::{HookSpec, SummaryCall};
use crate::scenario::OracleId;
use crate::world::{Calls, CommitRecord};

/// The private metadata key of compaction's cursor.
const CURSOR_KEY: &str = "pai.compaction";

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let helpers = o
        .scenario
        .hooks
        .iter()
        .filter(|h| matches!(h.library(), Some(HookSpec::Compaction(_))))
        .count();
    if helpers != 1 {
        return Vec::new();
    }
    // A hook that reshapes the step's request hides what the step kept:
    // then only the summary requests tell.
    let requests = match super::facts::reshaped(o.scenario) {
        true => None,
        false => Some(step_requests(o.calls)),
    };
    // The summary record is the answer through the canonical transforms
    // (C3); what a registered transform makes of it is not foreseen.
    let Some(stored) = stored_answers(o.scenario, o.summaries) else {
        return Vec::new();
    };
    let mut out = covered(o.events, o.threads, &stored, requests.as_ref(), o.commits);
    out.extend(cursors(o.events, o.threads, o.commits));
    out
}

/// Each summary request with its answer as the helper stores it: through
/// the scenario's canonical stages (SPEC C3, S1); `None` when a registered
/// hook transforms streams.
fn stored_answers(
    s: &crate::scenario::Scenario,
    calls: &[SummaryCall],
) -> Option<Vec<SummaryCall>> {
    calls
        .iter()
        .map(|c| {
            let answer = match &c.answer {
                Ok(text) => Ok(super::reference::canonical(s, text)?),
                Err(e) => Err(e.clone()),
            };
            Some(SummaryCall {
                answer,
                ..c.clone()
            })
        })
        .collect()
}

/// One committed compaction, as the log tells it.
#[derive(Debug, Clone, Copy)]
struct Compaction<'a> {
    /// Its place in the log.
    at: usize,
    run: &'a str,
    thread: &'a str,
    step: u32,
    summary: &'a str,
    through: u64,
    /// The thread's version its commit made.
    version: u64,
}

fn compactions(events: &[Event]) -> Vec<Compaction<'_>> {
    let done = events
        .iter()
        .enumerate()
        .filter_map(|(at, e)| match &e.kind {
            EventKind::Compacted {
                step,
                summary,
                through,
                version,
            } => Some(Compaction {
                at,
                run: &e.run_id,
                thread: &e.thread_id,
                step: *step,
                summary,
                through: *through,
                version: *version,
            }),
            _ => None,
        });
    done.collect()
}

/// Whether something between two places of the log may have moved the
/// thread's cursor other than compaction itself.
fn moved(events: &[Event], thread: &str, from: usize, to: usize) -> bool {
    let between = events.get(from + 1..to).unwrap_or(&[]);
    between.iter().any(|e| {
        e.thread_id == thread
            && match &e.kind {
                EventKind::HistoryRewritten { .. } | EventKind::ThreadDeleted { .. } => true,
                EventKind::Mutated { private, .. } => {
                    e.run_id.is_empty() && private.iter().any(|k| k == CURSOR_KEY)
                }
                _ => false,
            }
    })
}

/// Each compaction's summary request covered what its cursor passes.
fn covered(
    events: &[Event],
    threads: &[StoredThread],
    calls: &[SummaryCall],
    requests: Option<&Requests<'_>>,
    commits: &[CommitRecord],
) -> Vec<Violation> {
    let all = compactions(events);
    let mut out = Vec::new();
    for (k, c) in all.iter().enumerate() {
        let Some(t) = threads.iter().find(|t| t.id == c.thread) else {
            continue;
        };
        // A run's mutation that landed unheard between the previous
        // logged compaction and this one may have been a compaction: the
        // previous summary and cursor this one chained are not known.
        let previous = all[..k].iter().rev().find(|p| p.thread == c.thread);
        let since = previous.map_or(0, |p| p.version);
        if unheard_mutation(events, commits, c.thread, (since, c.version)) {
            continue;
        }
        for message in judge(events, t, (calls, requests), (&all, k)) {
            out.push(Violation::new(OracleId::C1, Some(c.run), message));
        }
    }
    out
}

/// What is wrong with the `k`th compaction of `all`, on thread `t`: its
/// summary record no request answered, or every request of its step left
/// a due message out or did not chain the previous summary.
fn judge(
    events: &[Event],
    t: &StoredThread,
    (calls, requests): (&[SummaryCall], Option<&Requests<'_>>),
    (all, k): (&[Compaction<'_>], usize),
) -> Vec<String> {
    let c = &all[k];
    // A record a rewrite removed since: any answered request of the
    // step may have made it.
    let text = t
        .messages
        .iter()
        .find(|m| m.id == c.summary)
        .map(Message::text);
    let asked: Vec<&SummaryCall> = calls
        .iter()
        .filter(|s| s.run_id == c.run && s.step == c.step)
        .filter(|s| match &text {
            Some(t) => s.answer.as_deref() == Ok(t.as_str()),
            None => s.answer.is_ok(),
        })
        .collect();
    if asked.is_empty() {
        let Some(text) = text else {
            return Vec::new();
        };
        return vec![format!(
            "step {}'s summary record {} holds {text:?}, which no summary request of the step answered",
            c.step, c.summary
        )];
    }
    let previous = all[..k].iter().rev().find(|p| p.thread == c.thread);
    let since = previous.map_or(0, |p| p.through);
    let prior = previous
        .filter(|p| !moved(events, c.thread, p.at, c.at))
        .and_then(|p| t.messages.iter().find(|m| m.id == p.summary))
        .map(Message::text);
    let due = due(events, t, c, since);
    let judged = left_out(c, (calls, requests), (&due, prior.as_deref()), &asked);
    let mut out = Vec::new();
    if judged.iter().any(|(m, chained)| m.is_none() && *chained) {
        return out;
    }
    let (missing, chained) = judged[0];
    if let Some(m) = missing {
        out.push(format!(
            "step {}'s compaction through #{} left message #{} ({}) out of its summary request",
            c.step,
            c.through,
            m.seq,
            shown(m)
        ));
    }
    if !chained {
        out.push(format!(
            "step {}'s compaction through #{} did not give the summary model the previous summary (through #{since})",
            c.step, c.through
        ));
    }
    out
}

/// For each request `asked` of compaction `c`'s step: a `due` message it
/// left out (and no earlier request carried), and whether it gave the
/// summary model the `prior` summary.
fn left_out<'a>(
    c: &Compaction<'_>,
    (calls, requests): (&[SummaryCall], Option<&Requests<'_>>),
    (due, prior): (&[&'a Message], Option<&str>),
    asked: &[&SummaryCall],
) -> Vec<(Option<&'a Message>, bool)> {
    // A message stored before the cursor may follow it in context
    // order (it entered the context later, M1): the step sends it
    // after the summary. Without the step's request, it is not judged.
    // A message numbered after the previous cursor may also precede it
    // in context order: an earlier summary request of the thread then
    // carried it already.
    let first = calls
        .iter()
        .position(|s| s.run_id == c.run && s.step == c.step)
        .unwrap_or(calls.len());
    let earlier = &calls[..first];
    let kept = |m: &Message| {
        earlier.iter().any(|s| s.answer.is_ok() && sent(s, m))
            || requests
                .and_then(|r| r.get(&(c.run, c.step)))
                .is_none_or(|r| r.iter().any(|x| carried(x, m)))
    };
    let left_out = |s: &SummaryCall| {
        let missing = due.iter().find(|m| !sent(s, m) && !kept(m)).copied();
        let chained = prior.is_none_or(|p| {
            s.messages
                .iter()
                .any(|m| m.role == Role::System && model_text(m) == p)
        });
        (missing, chained)
    };
    asked.iter().map(|s| left_out(s)).collect()
}

/// The stored messages a compaction's summary must be sent: context-
/// visible, after the previous cursor, up to the new one, and knowable.
fn due<'a>(
    events: &[Event],
    t: &'a StoredThread,
    c: &Compaction<'_>,
    since: u64,
) -> Vec<&'a Message> {
    let before = &events[..c.at];
    let rewritten: BTreeSet<&str> = events
        .iter()
        .flat_map(|e| match &e.kind {
            EventKind::Mutated { visibility, .. } => visibility.as_slice(),
            _ => &[],
        })
        .map(|v| v.message.as_str())
        .collect();
    // Runs admitted but holding no lease yet when the compaction ran:
    // their messages are not in the context yet, whatever their sequence
    // number (M1): one that never starts must never enter it, one that
    // starts later enters after the newest message then, past the cursor.
    // A run's leftover steers wait with the trigger of the run they
    // start (A4, M1).
    let leftover = super::facts::leftover_steers(events);
    let queued: BTreeSet<&str> = before
        .iter()
        .filter(|e| e.thread_id == c.thread)
        .filter_map(|e| match &e.kind {
            EventKind::Admitted { trigger } => Some((e.run_id.as_str(), trigger.as_str())),
            _ => None,
        })
        .chain(leftover.iter().map(|(steer, run)| (*run, *steer)))
        .filter(|(run, _)| {
            !before.iter().any(|e| {
                e.run_id == *run
                    && matches!(
                        e.kind,
                        EventKind::LeaseAcquired { .. } | EventKind::TakenOver { .. }
                    )
            })
        })
        .map(|(_, trigger)| trigger)
        .collect();
    let range: Vec<&Message> = t
        .messages
        .iter()
        .filter(|m| m.seq > since && m.seq <= c.through)
        .collect();
    // A result whose call is hidden from the context is dropped from every
    // model view (H6 pairing): it is not due either.
    let calls: BTreeSet<&str> = range
        .iter()
        .filter(|m| m.visibility.context)
        .flat_map(|m| call_ids(m, true))
        .collect();
    range
        .into_iter()
        .filter(|m| m.visibility.context && m.pai.producer != Producer::Compaction)
        .filter(|m| !rewritten.contains(m.id.as_str()) && !queued.contains(m.id.as_str()))
        .filter(|m| call_ids(m, false).all(|id| calls.contains(id)))
        .collect()
}

/// A stored message in a few words: its text, or the calls it carries.
fn shown(m: &Message) -> String {
    let ids: Vec<&str> = call_ids(m, false).collect();
    match ids.is_empty() {
        true => format!("{:?}", m.text()),
        false => format!("{:?} with {}", m.role, ids.join(", ")),
    }
}

/// The call ids of a stored message's calls (`calls_only`) or of its
/// calls and results.
fn call_ids(m: &Message, calls_only: bool) -> impl Iterator<Item = &str> {
    m.parts.iter().filter_map(move |p| match p {
        Part::ToolCall { call_id, .. } => Some(call_id.as_str()),
        Part::ToolResult { call_id, .. } if !calls_only => Some(call_id.as_str()),
        _ => None,
    })
}

/// Whether a summary request carries a stored message: its calls and
/// results by id, or else its text under its role.
pub(super) fn sent(s: &SummaryCall, m: &Message) -> bool {
    let ids: Vec<&str> = call_ids(m, false).collect();
    if !ids.is_empty() {
        return ids
            .iter()
            .all(|id| s.messages.iter().any(|x| carries(x, id)));
    }
    m.text().is_empty() || s.messages.iter().any(|x| carried(x, m))
}

/// Whether a model message carries a stored one: by its calls and results,
/// or else by its text under its role.
fn carried(x: &ModelMessage, m: &Message) -> bool {
    let mut ids = call_ids(m, false).peekable();
    match ids.peek() {
        Some(_) => ids.any(|id| carries(x, id)),
        None => x.role == m.role && model_text(x) == m.text(),
    }
}

/// Each step's first model request (not a summary's), by run and step.
type Requests<'a> = BTreeMap<(&'a str, u32), &'a [ModelMessage]>;

fn step_requests(calls: &Calls) -> Requests<'_> {
    let mut out = Requests::new();
    for c in calls
        .iter()
        .filter(|c| c.request.route.model != "compaction")
    {
        let key = (c.request.run_id.as_str(), c.request.step);
        out.entry(key).or_insert(calls.messages(c));
    }
    out
}

fn carries(m: &ModelMessage, id: &str) -> bool {
    m.content.iter().any(|c| match c {
        ModelContent::ToolCall { call_id, .. } | ModelContent::ToolResult { call_id, .. } => {
            call_id == id
        }
        ModelContent::Text { .. } => false,
    })
}

/// Each thread's stored cursor is its last compaction's, and its summary
/// record is stored transcript-visible and hidden from the context.
fn cursors(events: &[Event], threads: &[StoredThread], commits: &[CommitRecord]) -> Vec<Violation> {
    let all = compactions(events);
    let mut out = Vec::new();
    for t in threads {
        let Some(last) = all.iter().rev().find(|c| c.thread == t.id) else {
            continue;
        };
        if moved(events, &t.id, last.at, events.len())
            || unheard_mutation(events, commits, &t.id, (last.version, u64::MAX))
        {
            continue;
        }
        let stored = t.private_metadata.get(CURSOR_KEY);
        let through = stored
            .and_then(|c| c.get("through"))
            .and_then(|v| v.as_u64());
        let summary = stored
            .and_then(|c| c.get("summary"))
            .and_then(|v| v.as_str());
        let mut flag = |message: String| {
            out.push(Violation::new(OracleId::C1, Some(last.run), message));
        };
        if through != Some(last.through) || summary != Some(last.summary) {
            flag(format!(
                "thread {}'s stored cursor is {}, but its last compaction moved it through #{} with summary {}",
                t.id,
                stored.map_or("missing".to_string(), |v| v.to_string()),
                last.through,
                last.summary
            ));
            continue;
        }
        let record = t.messages.iter().find(|m| m.id == last.summary);
        let fit = record.is_some_and(|m| {
            m.pai.producer == Producer::Compaction
                && m.visibility.transcript
                && !m.visibility.context
        });
        if !fit {
            flag(format!(
                "thread {}'s cursor names {} as its summary, but no compaction record, transcript-visible and hidden from the context, has that id",
                t.id, last.summary
            ));
        }
    }
    out
}

/// Whether the store committed a mutation on `thread` above version
/// `after` and below `below` that no worker logged (among workers: its worker crashed or was
/// cut off with the answer in flight). A compaction's own write may be
/// one: the stored cursor may then be newer than the last logged
/// `compacted`.
fn unheard_mutation(
    events: &[Event],
    commits: &[CommitRecord],
    thread: &str,
    (after, below): (u64, u64),
) -> bool {
    let logged = |v: u64| {
        events.iter().any(|e| {
            e.thread_id == thread
                && matches!(e.kind, EventKind::Mutated { version, .. } if version == v)
        })
    };
    commits.iter().any(|c| {
        c.thread == thread
            && c.request == "mutate"
            && c.from != "client"
            && (after + 1..below).contains(&c.version)
            && !logged(c.version)
    })
}

#[cfg(test)]
mod tests {
    use pai_runtime::message::{PaiMeta, Visibility};

    use super::*;
    use crate::oracle::facts::{ev, thread_of};

    fn stored(seq: u64, role: Role, text: &str, producer: Producer, context: bool) -> Message {
        Message {
            id: format!("m{seq}").into(),
            seq,
            role,
            parts: vec![Part::text(text)],
            visibility: Visibility {
                transcript: true,
                context,
            },
            pai: PaiMeta::new(producer, Some("r"), None, 0),
        }
    }

    /// Two turns, summarized through #3 by record #4; the cursor says so.
    fn thread() -> StoredThread {
        let mut t = thread_of(vec![
            stored(1, Role::User, "first question", Producer::User, true),
            stored(2, Role::Assistant, "first answer", Producer::Model, true),
            stored(3, Role::User, "second question", Producer::User, true),
            stored(4, Role::System, "summary 1", Producer::Compaction, false),
        ]);
        let cursor = serde_json::json!({ "through": 3, "summary": "m4" });
        t.private_metadata.insert(CURSOR_KEY.into(), cursor);
        t
    }

    fn compacted() -> Event {
        ev(EventKind::Compacted {
            step: 0,
            summary: "m4".into(),
            through: 3,
            version: 5,
        })
    }

    fn asked(texts: &[(Role, &str)]) -> SummaryCall {
        let msg = |(role, text): &(Role, &str)| ModelMessage {
            role: *role,
            content: vec![ModelContent::Text {
                text: text.to_string(),
            }],
        };
        SummaryCall {
            run_id: "r".into(),
            step: 0,
            messages: texts.iter().map(msg).collect(),
            answer: Ok("summary 1".into()),
        }
    }

    /// The compacted step's own request: the summary, then nothing kept.
    fn sent_after() -> Requests<'static> {
        static SENT: std::sync::LazyLock<Vec<ModelMessage>> = std::sync::LazyLock::new(|| {
            vec![ModelMessage {
                role: Role::System,
                content: vec![ModelContent::Text {
                    text: "Summary of the earlier conversation: summary 1".into(),
                }],
            }]
        });
        Requests::from([(("r", 0), SENT.as_slice())])
    }

    fn judge(t: StoredThread, calls: &[SummaryCall]) -> Vec<Violation> {
        let events = [compacted()];
        let threads = [t];
        let mut out = covered(&events, &threads, calls, Some(&sent_after()), &[]);
        out.extend(cursors(&events, &threads, &[]));
        out
    }

    #[test]
    fn c1_a_summary_of_everything_up_to_the_cursor_is_quiet() {
        let call = asked(&[
            (Role::System, "summarize"),
            (Role::User, "first question"),
            (Role::Assistant, "first answer"),
            (Role::User, "second question"),
        ]);
        assert_eq!(judge(thread(), &[call]), vec![]);
    }

    #[test]
    fn c1_a_message_left_out_of_the_summary_request_is_reported() {
        let call = asked(&[
            (Role::System, "summarize"),
            (Role::User, "first question"),
            (Role::User, "second question"),
        ]);
        let found = judge(thread(), &[call]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].message.contains("left message #2"), "{found:?}");
    }

    /// #2 left out of the summary but sent after it by the step itself (a
    /// message stored before the cursor that entered the context after it,
    /// M1) is kept, not lost: quiet. Without the step's request, it is not
    /// judged either way.
    #[test]
    fn c1_a_message_the_step_itself_sends_after_the_summary_is_kept() {
        let call = asked(&[
            (Role::User, "first question"),
            (Role::User, "second question"),
        ]);
        let kept = [ModelMessage {
            role: Role::Assistant,
            content: vec![ModelContent::Text {
                text: "first answer".into(),
            }],
        }];
        let requests = Requests::from([(("r", 0), kept.as_slice())]);
        let (events, threads) = ([compacted()], [thread()]);
        let calls = std::slice::from_ref(&call);
        assert_eq!(
            covered(&events, &threads, calls, Some(&requests), &[]),
            vec![]
        );
        assert_eq!(covered(&events, &threads, calls, None, &[]), vec![]);
    }

    /// #3 is the trigger of run q, queued when the compaction ran: it is
    /// not due then (whether q starts later or not, for now: see `due`),
    /// but it is once q held a lease before the compaction.
    #[test]
    fn c1_a_queued_run_s_message_is_not_due_while_that_run_waits() {
        let call = asked(&[
            (Role::User, "first question"),
            (Role::Assistant, "first answer"),
        ]);
        let queued = |kind| Event {
            run_id: "q".into(),
            ..ev(kind)
        };
        let admitted = queued(EventKind::Admitted {
            trigger: "m3".into(),
        });
        let started = queued(EventKind::LeaseAcquired {
            version: 1,
            episode: 1,
            token: 2.into(),
        });
        let threads = [thread()];
        let calls = std::slice::from_ref(&call);
        let waiting = [admitted.clone(), compacted(), started.clone()];
        assert_eq!(
            covered(&waiting, &threads, calls, Some(&sent_after()), &[]),
            vec![]
        );
        let running = [admitted, started, compacted()];
        let found = covered(&running, &threads, calls, Some(&sent_after()), &[]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].message.contains("left message #3"), "{found:?}");
    }

    #[test]
    fn c1_a_cursor_that_is_not_the_last_compaction_s_is_reported() {
        let call = asked(&[
            (Role::User, "first question"),
            (Role::Assistant, "first answer"),
            (Role::User, "second question"),
        ]);
        let mut t = thread();
        let cursor = serde_json::json!({ "through": 2, "summary": "m4" });
        t.private_metadata.insert(CURSOR_KEY.into(), cursor);
        let found = judge(t, std::slice::from_ref(&call));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].message.contains("stored cursor"), "{found:?}");
        let wrong = SummaryCall {
            answer: Ok("another summary".into()),
            ..call
        };
        let found = judge(thread(), &[wrong]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].message.contains("no summary request"), "{found:?}");
    }
}
