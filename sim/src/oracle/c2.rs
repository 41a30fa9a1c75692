//! SPEC C2: with compaction installed, a step's context is the summary,
//! then the context-visible messages after the cursor.
//!
//! Also C1's bound: unless the helper said it gave up on a step, the step
//! is sent at most the summary and `threshold` messages by the resolver,
//! or more only where a tool call's group had to be kept whole (H6).
//!
//! The composition is judged conservatively, only where the log shows a cursor: for a model
//! call of step `s` of run `r`, the thread's latest `compacted` before that
//! step's (first) `resolve_model_context` gives the cursor `through`,
//! unless something may have moved it back between that `compacted` and the
//! step's (last) resolve: a rewrite (its repair may reset the cursor, C1),
//! a deletion (H5), or trusted code writing the cursor's key itself. Then
//!
//! - the request's messages start with a system message whose text begins
//!   "Summary of the earlier conversation:" (only system messages may come
//!   before it); overlays are appended after the resolver (M5);
//! - no message of the request repeats a stored context-visible message
//!   at or before the cursor that a summary request of the thread carried
//!   (a message stored earlier but entered the context later, as a queued
//!   run's trigger does (M1), follows the cursor in context order): neither its text under its role (unless that
//!   text is also stored after the cursor, or a hook writes it), nor a
//!   tool call id of its calls or results (unless one after the cursor
//!   carries it too).
//!
//! Among workers only the requests of the run's holder are judged (a cut-off
//! worker's call appears in no run's story).
//!
//! The stored thread is read as it is at the end: a message hidden or
//! removed since is just not checked. Scenarios whose hooks choose the
//! context themselves (a window, a base, a replacement), or install
//! compaction twice, are left aside.

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::{
    Event, Message, Part, Role,
    event::EventKind,
    message::{ModelContent, ModelMessage},
    store::StoredThread,
};

use super::facts::{hook_written, model_text};
use super::observed::{Observed, Violation};
use crate::hooks::{HookSpec, SummaryCall};
use crate::scenario::{OracleId, Scenario};

/// How the compaction helper opens a step's context (C2).
const SUMMARY: &str = "Summary of the earlier conversation:";

/// The private metadata key of compaction's cursor (C1).
const CURSOR_KEY: &str = "pai.compaction";

/// One request to judge: its run, step and messages.
struct Sent<'a> {
    run: &'a str,
    step: u32,
    /// When the request was sent (virtual time).
    at: u64,
    messages: &'a [ModelMessage],
}

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    if !judged(o.scenario) {
        return Vec::new();
    }
    let Some(written) = hook_written(o.scenario) else {
        return Vec::new();
    };
    let mut written: BTreeSet<&str> = written.into_iter().collect();
    written.extend(o.scenario.hooks.iter().filter_map(|h| match h.library()? {
        HookSpec::SystemMessage(m) => Some(m.text.as_str()),
        _ => None,
    }));
    // Among workers, only the calls of the run's holder: a worker cut off
    // from the store may go on with a context resolved before the cursor
    // another worker wrote (its events are not the run's story either).
    let holders = |c: &&crate::world::ModelCallRecord| {
        o.cluster.is_none()
            || o.events.iter().any(|e| {
                e.run_id == c.request.run_id
                    && e.at == c.at
                    && matches!(e.kind, EventKind::ModelCall { step, .. } if step == c.request.step)
            })
    };
    let sent = o
        .calls
        .iter()
        .filter(|c| c.request.route.model != "compaction")
        .filter(holders);
    let sent: Vec<Sent<'_>> = sent
        .map(|c| Sent {
            run: &c.request.run_id,
            step: c.request.step,
            at: c.at,
            messages: o.calls.messages(c),
        })
        .collect();
    let mut out = judge(o.events, o.threads, o.summaries, &sent, &written);
    out.extend(bounded(o.scenario, o.events, o.threads, &sent));
    out
}

/// C1's bound: a step whose compaction did not give up is sent at most the
/// summary and `threshold` messages from the resolver (more after the
/// cursor, and the helper compacts first), unless the newest messages it
/// keeps begin inside a tool call's group: then the group is kept whole
/// (H6), and the context starts, after the summary, with that call.
fn bounded(
    s: &Scenario,
    events: &[Event],
    threads: &[StoredThread],
    sent: &[Sent<'_>],
) -> Vec<Violation> {
    let Some(threshold) = s.hooks.iter().find_map(|h| match h.library()? {
        HookSpec::Compaction(c) => Some(c.threshold),
        _ => None,
    }) else {
        return Vec::new();
    };
    // Another resolver that adds messages (a history probe, a second
    // `next`) changes the count; one that only waits or fails does not.
    let other_resolver = s.hooks.iter().any(|h| {
        h.handles(pai_runtime::hook::Phase::ResolveModelContext)
            && !matches!(
                h.library(),
                Some(
                    HookSpec::Compaction(_)
                        | HookSpec::Delay(_)
                        | HookSpec::SlowResolver(_)
                        | HookSpec::Fail(_)
                )
            )
    });
    if other_resolver {
        return Vec::new();
    }
    let gave_up: BTreeSet<(&str, u32)> = events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::CompactionSkipped { step, .. } => Some((e.run_id.as_str(), step)),
            _ => None,
        })
        .collect();
    let over = events.iter().filter_map(|e| {
        let EventKind::ModelCall {
            step,
            overlay,
            route,
            ..
        } = &e.kind
        else {
            return None;
        };
        let run = e.run_id.as_str();
        let request = sent.iter().find(|r| r.run == run && r.step == *step)?;
        // The resolver's messages come first; the overlay after them (M5).
        let resolved = request.messages.len().saturating_sub(*overlay);
        let anchor = anchor_of(events, run, *step)?;
        let stored = stored_results(threads, &e.thread_id, anchor);
        let context = request.messages[..resolved]
            .iter()
            .filter(|m| !synthetic(m, &stored))
            .count();
        let judged = route.model != "compaction" && !gave_up.contains(&(run, *step));
        (judged && context > threshold + 1 && !starts_with_a_call(request.messages)).then(|| {
            Violation::new(
                OracleId::C2,
                Some(run),
                format!(
                    "step {step} was sent {context} context messages: more than the summary and the threshold of {threshold}, and no tool call's group made it keep more"
                ),
            )
        })
    });
    over.collect()
}

/// The anchor of a run's step (its last look, M1).
fn anchor_of(events: &[Event], run: &str, step: u32) -> Option<u64> {
    events.iter().rev().find_map(|e| match e.kind {
        EventKind::ResolveModelContext {
            step: s, anchor, ..
        } if e.run_id == run && s == step => Some(anchor),
        _ => None,
    })
}

/// The call ids of the results stored in a thread at or before `anchor`.
fn stored_results<'a>(threads: &'a [StoredThread], thread: &str, anchor: u64) -> BTreeSet<&'a str> {
    let t = threads.iter().find(|t| t.id == thread);
    let messages = t.into_iter().flat_map(|t| &t.messages);
    messages
        .filter(|m| m.seq <= anchor)
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolResult { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect()
}

/// A tool message none of whose results is stored: one the pairing of
/// H6 made for calls left without a result (a failed or cut-short run),
/// which the helper's threshold, counting stored messages, never saw.
fn synthetic(m: &ModelMessage, stored: &BTreeSet<&str>) -> bool {
    m.role == Role::Tool
        && m.content.iter().all(|c| match c {
            ModelContent::ToolResult { call_id, .. } => !stored.contains(call_id.as_str()),
            _ => false,
        })
}

/// Whether the first message after the leading system ones (the summary)
/// is an assistant message asking for tools.
fn starts_with_a_call(messages: &[ModelMessage]) -> bool {
    let mut rest = messages.iter().skip_while(|m| m.role == Role::System);
    rest.next().is_some_and(|m| {
        m.role == Role::Assistant
            && m.content
                .iter()
                .any(|c| matches!(c, ModelContent::ToolCall { .. }))
    })
}

/// Whether C2 can be judged from what the scenario's hooks do: one
/// compaction helper, and no hook that picks the context itself.
fn judged(s: &Scenario) -> bool {
    let compactions = s
        .hooks
        .iter()
        .filter(|h| matches!(h.library(), Some(HookSpec::Compaction(_))))
        .count();
    compactions == 1 && !super::facts::reshaped(s)
}

/// The cursor a step's context was built from: the thread, `through` and
/// the (run, step) whose compaction made it, if the log fixes one.
fn cursor<'a>(events: &'a [Event], run: &str, step: u32) -> Option<(&'a str, u64, (&'a str, u32))> {
    let resolves = |(_, e): &(usize, &Event)| {
        e.run_id == run
            && matches!(e.kind, EventKind::ResolveModelContext { step: s, .. } if s == step)
    };
    let mut at = events.iter().enumerate().filter(resolves);
    let (first, e) = at.next()?;
    let last = at.next_back().map_or(first, |(i, _)| i);
    let thread = e.thread_id.as_str();
    let (c, through, made) = events[..first]
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, x)| x.thread_id == thread)
        .find_map(|(i, x)| match x.kind {
            EventKind::Compacted { through, step, .. } => {
                Some((i, through, (x.run_id.as_str(), step)))
            }
            _ => None,
        })?;
    let reset = events[c + 1..=last].iter().any(|x| {
        x.thread_id == thread
            && match &x.kind {
                EventKind::HistoryRewritten { .. } | EventKind::ThreadDeleted { .. } => true,
                EventKind::Mutated { private, .. } => {
                    x.run_id.is_empty() && private.iter().any(|k| k == CURSOR_KEY)
                }
                _ => false,
            }
    });
    (!reset).then_some((thread, through, made))
}

/// The call ids a model message carries.
fn call_ids(m: &ModelMessage) -> impl Iterator<Item = &str> {
    m.content.iter().filter_map(|c| match c {
        ModelContent::ToolCall { call_id, .. } | ModelContent::ToolResult { call_id, .. } => {
            Some(call_id.as_str())
        }
        ModelContent::Text { .. } => None,
    })
}

/// The call ids a stored message carries.
fn stored_call_ids(m: &Message) -> impl Iterator<Item = &str> {
    m.parts.iter().filter_map(|p| match p {
        Part::ToolCall { call_id, .. } | Part::ToolResult { call_id, .. } => Some(call_id.as_str()),
        Part::Text { .. } => None,
    })
}

/// What a step's context must not repeat: stored context-visible messages
/// at or before the cursor, by (role, text) and by call id, less what is
/// also stored after it (or written by hooks).
#[derive(Default)]
struct Summarized<'a> {
    texts: BTreeMap<(Role, String), u64>,
    calls: BTreeMap<&'a str, u64>,
}

impl<'a> Summarized<'a> {
    fn of(
        t: &'a StoredThread,
        through: u64,
        asked: &[&SummaryCall],
        written: &BTreeSet<&str>,
    ) -> Summarized<'a> {
        let mut s = Summarized::default();
        let (before, after): (Vec<&Message>, Vec<&Message>) = t
            .messages
            .iter()
            .partition(|m| m.seq <= through && asked.iter().any(|c| super::c1::sent(c, m)));
        for m in before.iter().filter(|m| m.visibility.context) {
            let text = m.text();
            if !text.is_empty() && !written.contains(text.as_str()) {
                s.texts.entry((m.role, text)).or_insert(m.seq);
            }
            for id in stored_call_ids(m) {
                s.calls.entry(id).or_insert(m.seq);
            }
        }
        for m in after {
            s.texts.remove(&(m.role, m.text()));
            for id in stored_call_ids(m) {
                s.calls.remove(id);
            }
        }
        // A text stored more often than the requests carried it: another
        // message with it (a queued run's trigger sent twice, M1) may
        // follow the cursor in context order, so the text tells nothing.
        s.texts.retain(|(role, text), _| {
            let stored = before
                .iter()
                .filter(|m| m.visibility.context && m.role == *role && m.text() == *text)
                .count();
            let carried: usize = asked
                .iter()
                .map(|c| {
                    let same = |x: &&ModelMessage| x.role == *role && model_text(x) == *text;
                    c.messages.iter().filter(same).count()
                })
                .sum();
            stored <= carried
        });
        s
    }
}

/// The thread a run belongs to, as the log tells it.
fn run_thread<'a>(events: &'a [Event], run: &str) -> Option<&'a str> {
    events
        .iter()
        .find(|e| e.run_id == run)
        .map(|e| e.thread_id.as_str())
}

/// Where `run`'s first event is in the log.
fn first_event(events: &[Event], run: &str) -> usize {
    events.iter().position(|e| e.run_id == run).unwrap_or(0)
}

/// Where the last history rewrite that removed messages of `thread`
/// before log position `before` is.
fn last_rewrite_before(events: &[Event], thread: &str, before: usize) -> Option<usize> {
    events[..before].iter().rposition(|e| {
        e.thread_id == thread
            && matches!(&e.kind, EventKind::HistoryRewritten { removed, .. } if !removed.is_empty())
    })
}

/// Whether a history rewrite removed messages of `thread` at or after `at`.
fn removed_since(events: &[Event], thread: &str, at: u64) -> bool {
    events.iter().any(|e| {
        e.thread_id == thread
            && e.at >= at
            && matches!(&e.kind, EventKind::HistoryRewritten { removed, .. } if !removed.is_empty())
    })
}

fn judge(
    events: &[Event],
    threads: &[StoredThread],
    summaries: &[SummaryCall],
    sent: &[Sent<'_>],
    written: &BTreeSet<&str>,
) -> Vec<Violation> {
    let mut out = Vec::new();
    for r in sent {
        let Some((thread, through, made)) = cursor(events, r.run, r.step) else {
            continue;
        };
        let mut flag = |p: String| {
            let message = format!("step {} (cursor #{through}): {p}", r.step);
            out.push(Violation::new(OracleId::C2, Some(r.run), message));
        };
        let summary = r
            .messages
            .iter()
            .position(|m| m.role == Role::System && model_text(m).starts_with(SUMMARY));
        match summary {
            None => flag("the context holds no summary".to_string()),
            Some(i) if r.messages[..i].iter().any(|m| m.role != Role::System) => flag(format!(
                "the summary comes at message {}, after the conversation",
                i + 1
            )),
            Some(_) => {}
        }
        let Some(t) = threads.iter().find(|t| t.id == thread) else {
            continue;
        };
        // What was stored after the cursor is read from the final thread: a
        // later regeneration may have removed it (R1), so what the step
        // rightly kept can no longer be told from what it summarized.
        if removed_since(events, thread, r.at) {
            continue;
        }
        // Summary requests up to the one that made this cursor (a later
        // one may carry messages this step rightly sent).
        let upto = summaries
            .iter()
            .rposition(|c| c.run_id == made.0 && c.step == made.1)
            .map_or(0, |i| i + 1);
        // A regeneration before the cursor's run began resets the cursor
        // (R1): what runs before it summarized is no longer summarized.
        let reset = last_rewrite_before(events, thread, first_event(events, made.0));
        let asked: Vec<&SummaryCall> = summaries[..upto]
            .iter()
            .filter(|c| c.answer.is_ok() && run_thread(events, &c.run_id) == Some(thread))
            .filter(|c| reset.is_none_or(|at| first_event(events, &c.run_id) > at))
            .collect();
        let gone = Summarized::of(t, through, &asked, written);
        for m in r.messages {
            let text = model_text(m);
            if let Some(seq) = gone.texts.get(&(m.role, text.clone())) {
                flag(format!(
                    "the context repeats message #{seq} ({text:?}), which the cursor summarized"
                ));
            }
            for id in call_ids(m) {
                if let Some(seq) = gone.calls.get(id) {
                    flag(format!(
                        "the context carries call {id} of message #{seq}, which the cursor summarized"
                    ));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use pai_runtime::message::{PaiMeta, Producer, Visibility};

    use super::*;
    use crate::oracle::facts::{ev, thread_of};

    fn stored(seq: u64, role: Role, text: &str, context: bool) -> Message {
        Message {
            id: format!("m{seq}").into(),
            seq,
            role,
            parts: vec![Part::text(text)],
            visibility: Visibility {
                transcript: true,
                context,
            },
            pai: PaiMeta::new(Producer::User, Some("r"), None, 0),
        }
    }

    fn msg(role: Role, text: &str) -> ModelMessage {
        ModelMessage {
            role,
            content: vec![ModelContent::Text { text: text.into() }],
        }
    }

    fn resolve(step: u32) -> Event {
        ev(EventKind::ResolveModelContext {
            step,
            anchor: 5,
            messages: 2,
        })
    }

    fn compacted(through: u64) -> Event {
        ev(EventKind::Compacted {
            step: 1,
            summary: "m4".into(),
            through,
            version: 5,
        })
    }

    /// Two turns; the first (#1, #2) is summarized by #4 (hidden from
    /// context), the second (#3, #5) stays.
    fn thread() -> StoredThread {
        thread_of(vec![
            stored(1, Role::User, "first question", true),
            stored(2, Role::Assistant, "first answer", true),
            stored(3, Role::User, "second question", true),
            stored(4, Role::System, "they talked", false),
            stored(5, Role::User, "third question", true),
        ])
    }

    fn run(events: &[Event], messages: &[ModelMessage]) -> Vec<Violation> {
        let sent = [Sent {
            run: "r",
            step: 1,
            at: 0,
            messages,
        }];
        let asked = SummaryCall {
            run_id: "r".into(),
            step: 1,
            messages: vec![
                msg(Role::User, "first question"),
                msg(Role::Assistant, "first answer"),
            ],
            answer: Ok("they talked".into()),
        };
        judge(events, &[thread()], &[asked], &sent, &BTreeSet::new())
    }

    /// A message stored before the cursor that no summary request carried
    /// entered the context after it (a queued run's trigger, M1): it may
    /// be sent; one the summary carried may not.
    #[test]
    fn c2_judges_only_what_a_summary_request_carried() {
        let events = [resolve(0), compacted(3), resolve(1)];
        let sent = [
            msg(
                Role::System,
                "Summary of the earlier conversation: they talked",
            ),
            msg(Role::User, "second question"),
            msg(Role::Assistant, "first answer"),
        ];
        let v = run(&events, &sent);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].message.contains("repeats message #2"), "{v:?}");
    }

    #[test]
    fn c2_is_quiet_on_summary_then_the_rest() {
        let events = [resolve(0), compacted(2), resolve(1)];
        let sent = [
            msg(
                Role::System,
                "Summary of the earlier conversation: they talked",
            ),
            msg(Role::User, "second question"),
            msg(Role::User, "third question"),
            msg(Role::System, "an overlay"),
        ];
        assert_eq!(run(&events, &sent), vec![]);
        // Without a cursor in the log, or after a rewrite that may reset
        // it, nothing is judged.
        let plain = [msg(Role::User, "first question")];
        assert_eq!(run(&[resolve(0), resolve(1)], &plain), vec![]);
        let mut rewrite = ev(EventKind::HistoryRewritten {
            version: 6,
            kind: "visibility",
            removed: vec![],
            patched: vec![],
            started: None,
        });
        rewrite.run_id = Default::default();
        assert_eq!(run(&[compacted(2), rewrite, resolve(1)], &plain), vec![]);
    }

    #[test]
    fn c2_reports_a_missing_summary_and_a_summarized_message() {
        let events = [resolve(0), compacted(2), resolve(1)];
        let sent = [
            msg(Role::User, "first question"),
            msg(Role::User, "second question"),
        ];
        let v = run(&events, &sent);
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v[0].message.contains("no summary"), "{v:?}");
        assert!(v[1].message.contains("repeats message #1"), "{v:?}");
        assert!(v.iter().all(|v| v.oracle == OracleId::C2));
    }

    #[test]
    fn c2_reports_a_summary_after_the_conversation() {
        let events = [compacted(2), resolve(1)];
        let sent = [
            msg(Role::User, "second question"),
            msg(
                Role::System,
                "Summary of the earlier conversation: they talked",
            ),
        ];
        let v = run(&events, &sent);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].message.contains("after the conversation"), "{v:?}");
    }
}
