//! SPEC M1, context order: the order in which a run's step sends stored
//! messages is the order in which runs took them, not the order they were
//! stored in.
//!
//! - **A queued run's trigger enters at its claim.** Every message another
//!   run committed before run R was first claimed (an answer, or the
//!   trigger of a run claimed earlier) comes before R's trigger; every
//!   answer R itself commits comes after it.
//! - **A steer enters at the step that takes it.** The answers R committed
//!   in its steps before the first step that sends the steer come before it.
//! - **A cancelled queued trigger stays out of older runs.** The trigger of
//!   a run that was never claimed is never sent by a run admitted before it
//!   (judged in one process, where the log orders admissions).
//!
//! "Before the claim" is judged by log positions in one process and by
//! thread versions among workers (every commit's version is in the event
//! that reports it; a run's first claim is its lowest `lease_acquired`
//! version in any worker's log). Messages are matched to what a step sent
//! by text, only when the text is unique in the stored thread and in the
//! request, so a hook's rewording or a repeated text is not judged. This
//! oracle reads events and requests as data; it never asks the runtime.

use std::collections::BTreeMap;

use pai_runtime::message::ModelMessage;
use pai_runtime::{Event, ModelRequest, Role, event::EventKind, store::StoredThread};

use super::facts::{LookupMap, hook_written, model_text_ref};
use super::m1_begun::steps;
use super::observed::{Observed, Violation};
use crate::scenario::OracleId;

/// Where a commit falls in the order of the thread's commits: a log
/// position in one process, a thread version among workers.
type Order = u64;

/// What the log says about runs and the messages they committed. Maps
/// read once per sent message are [`LookupMap`]s (a 4,000-send thread
/// sends millions of messages); those iterated for output are ordered.
#[derive(Debug, Default)]
struct Runs<'a> {
    /// Run → its trigger message id.
    trigger: BTreeMap<&'a str, &'a str>,
    /// Trigger message id → the first run (by id) it is the trigger of.
    triggered: LookupMap<&'a str, &'a str>,
    /// Run → where it was first claimed.
    claimed: LookupMap<&'a str, Order>,
    /// Answer message id → (run, step, where it was committed).
    answers: LookupMap<&'a str, (&'a str, u32, Order)>,
    /// Run → its steers' message ids.
    steers: LookupMap<&'a str, Vec<&'a str>>,
    /// Run → where it was admitted (one process only).
    admitted: LookupMap<&'a str, Order>,
    /// The runs never claimed, by id, with their triggers and admissions
    /// (one process only): the only triggers `no_younger_trigger` reads.
    unclaimed: Vec<(&'a str, &'a str, Order)>,
}

impl<'a> Runs<'a> {
    /// Reads `events` (one process: the log; among workers: the story and
    /// every worker's raw log, placed by versions).
    fn of(events: impl Iterator<Item = (usize, &'a Event)>, cluster: bool) -> Runs<'a> {
        let mut r = Runs::default();
        for (i, e) in events {
            let run = e.run_id.as_str();
            let order = |version: u64| if cluster { version } else { i as u64 };
            match &e.kind {
                EventKind::Admitted { trigger } => {
                    r.trigger.insert(run, trigger);
                    if !cluster {
                        r.admitted.entry(run).or_insert(i as u64);
                    }
                }
                EventKind::Steered { message } => r.steers.entry(run).or_default().push(message),
                EventKind::LeaseAcquired { version, .. } => {
                    let first = r.claimed.entry(run).or_insert(order(*version));
                    *first = (*first).min(order(*version));
                }
                EventKind::CommitStep {
                    step,
                    message,
                    version,
                } => {
                    r.answers
                        .entry(message)
                        .or_insert((run, *step, order(*version)));
                }
                _ => {}
            }
        }
        for (run, trigger) in &r.trigger {
            r.triggered.entry(*trigger).or_insert(*run);
            if let (false, Some(&at)) = (r.claimed.contains_key(run), r.admitted.get(run)) {
                r.unclaimed.push((run, trigger, at));
            }
        }
        r
    }

    /// Whether message `m` entered the context before `run` was claimed:
    /// `Some(true)` before, `Some(false)` after, `None` when not told.
    fn before_claim(&self, m: &str, run: &str) -> Option<bool> {
        let claim = *self.claimed.get(run)?;
        if let Some(&(owner, _, at)) = self.answers.get(m) {
            return Some(owner != run && at < claim);
        }
        let owner = *self.triggered.get(m)?;
        let other = *self.claimed.get(owner)?;
        (other < claim).then_some(true)
    }
}

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let cluster = o.cluster.is_some();
    let runs = match o.cluster {
        None => Runs::of(o.events.iter().enumerate(), false),
        Some(c) => Runs::of(o.events.iter().chain(&c.raw_events).enumerate(), true),
    };
    let begun = steps(o.events, cluster);
    let Some(written) = hook_written(o.scenario) else {
        return Vec::new();
    };
    // Each thread's messages told apart by text, once per thread.
    let unique: BTreeMap<&str, Unique<'_>> = o
        .threads
        .iter()
        .map(|t| (t.id.as_str(), Unique::of(t, &written)))
        .collect();
    // Each judged request with its thread's unique texts. What a request
    // sent is read twice (the steers' takers first, then the order), one
    // request at a time: all of them at once would hold every context.
    let judged: Vec<(&ModelRequest, &[ModelMessage], &Unique<'_>)> = o
        .calls
        .iter()
        .filter_map(|c| {
            let r = &c.request;
            let b = begun.get(&(r.run_id.as_str(), r.step))?;
            Some((r, o.calls.messages(c), unique.get(b.thread)?))
        })
        .collect();
    let taken = steers_taken(&runs, &judged);
    let mut out = Vec::new();
    for (r, messages, thread) in &judged {
        let sent = Sent::of(thread, messages);
        let mut flag = |problem: String| {
            out.push(Violation {
                oracle: OracleId::M1.into(),
                run: Some(r.run_id.to_string()),
                message: format!("step {}: {problem}", r.step),
            })
        };
        trigger_order(&runs, &sent, &r.run_id, &mut flag);
        steer_order(&runs, &sent, &r.run_id, &taken, &mut flag);
        if !cluster {
            no_younger_trigger(&runs, &sent, &r.run_id, &mut flag);
        }
    }
    out
}

/// Each steer's taker: the first step of its run whose request sent it
/// (only requests of runs that were steered are read).
fn steers_taken<'a>(
    runs: &Runs<'a>,
    judged: &[(&ModelRequest, &[ModelMessage], &Unique<'_>)],
) -> BTreeMap<&'a str, u32> {
    let mut out: BTreeMap<&str, u32> = BTreeMap::new();
    for (r, messages, thread) in judged {
        let Some(steers) = runs.steers.get(r.run_id.as_str()) else {
            continue;
        };
        let sent = Sent::of(thread, messages);
        for steer in steers {
            if sent.place(steer).is_some() {
                let first = out.entry(steer).or_insert(r.step);
                *first = (*first).min(r.step);
            }
        }
    }
    out
}

/// Each stored user or assistant message a request sent, by id: its
/// place in the request and its text, for messages judged by text.
struct Sent<'t> {
    /// (id, place, text), in id order.
    at: Vec<(&'t str, usize, &'t str)>,
}

/// A stored thread's messages whose (role, text) is theirs alone:
/// non-empty, no hook's own text, the only stored message with it. By
/// role, then text (so a request's text is looked up without a copy),
/// each with its id and the id's rank among them (so a request's hits
/// sort in id order by a number).
struct Unique<'t> {
    by_text: LookupMap<Role, LookupMap<String, (u32, &'t str)>>,
}

impl<'t> Unique<'t> {
    fn of(thread: &'t StoredThread, written: &[&str]) -> Unique<'t> {
        let mut stored: BTreeMap<(Role, String), Vec<&'t str>> = BTreeMap::new();
        for m in &thread.messages {
            stored.entry((m.role, m.text())).or_default().push(&m.id);
        }
        let mut unique: Vec<(&'t str, Role, String)> = stored
            .into_iter()
            .filter(|((_, text), ids)| {
                ids.len() == 1 && !text.is_empty() && !written.contains(&text.as_str())
            })
            .map(|((role, text), ids)| (ids[0], role, text))
            .collect();
        unique.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut by_text: LookupMap<Role, LookupMap<String, (u32, &'t str)>> = LookupMap::default();
        for (rank, (id, role, text)) in unique.into_iter().enumerate() {
            let rank = u32::try_from(rank).unwrap_or(u32::MAX);
            by_text.entry(role).or_default().insert(text, (rank, id));
        }
        Unique { by_text }
    }
}

impl<'u> Sent<'u> {
    /// The messages of `thread` told apart by text that the request sent
    /// exactly once (a text sent twice names no place).
    fn of(thread: &'u Unique<'_>, messages: &[ModelMessage]) -> Sent<'u> {
        let mut hits: Vec<(u32, usize, &'u str, &'u str)> = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            if !matches!(m.role, Role::User | Role::Assistant) {
                continue;
            }
            let Some(texts) = thread.by_text.get(&m.role) else {
                continue;
            };
            if let Some((text, &(rank, id))) = texts.get_key_value(model_text_ref(m).as_ref()) {
                hits.push((rank, i, id, text.as_str()));
            }
        }
        hits.sort_unstable();
        let mut at = Vec::with_capacity(hits.len());
        for (k, &(rank, place, id, text)) in hits.iter().enumerate() {
            let same = |j: Option<usize>| j.and_then(|j| hits.get(j)).is_some_and(|h| h.0 == rank);
            let sent_twice = same(k.checked_sub(1)) || same(Some(k + 1));
            if !sent_twice {
                at.push((id, place, text));
            }
        }
        Sent { at }
    }

    fn place(&self, id: &str) -> Option<(usize, &'u str)> {
        let k = self.at.binary_search_by(|e| e.0.cmp(id)).ok()?;
        let (_, place, text) = self.at[k];
        Some((place, text))
    }
}

/// A queued run's trigger comes after what others committed before its
/// claim, and before the answers its own run committed.
fn trigger_order(runs: &Runs<'_>, sent: &Sent<'_>, run: &str, flag: &mut impl FnMut(String)) {
    let Some(trigger) = runs.trigger.get(run) else {
        return;
    };
    let Some((t_at, t_text)) = sent.place(trigger) else {
        return;
    };
    for &(id, m_at, m_text) in &sent.at {
        if id == *trigger {
            continue;
        }
        let problem = match runs.before_claim(id, run) {
            Some(true) if m_at > t_at => "committed before the run was claimed, yet sent after",
            Some(false) if m_at < t_at => "the run's own later answer, yet sent before",
            _ => continue,
        };
        flag(format!(
            "{m_text:?} was {problem} the run's trigger {t_text:?} (a queued run's trigger enters at its claim)"
        ));
    }
}

/// A steer comes after the answers its run committed in the steps before
/// the first step that sent it.
fn steer_order(
    runs: &Runs<'_>,
    sent: &Sent<'_>,
    run: &str,
    taken: &BTreeMap<&str, u32>,
    flag: &mut impl FnMut(String),
) {
    for steer in runs.steers.get(run).into_iter().flatten() {
        let (Some((s_at, s_text)), Some(&taker)) = (sent.place(steer), taken.get(steer)) else {
            continue;
        };
        for &(id, m_at, m_text) in &sent.at {
            let earlier = runs
                .answers
                .get(id)
                .is_some_and(|&(owner, s, _)| owner == run && s < taker);
            if earlier && m_at > s_at {
                flag(format!(
                    "{m_text:?}, the answer of an earlier step, was sent after the steer {s_text:?} step {taker} took"
                ));
            }
        }
    }
}

/// No run sends the trigger of a run admitted after it that was never
/// claimed (a queued run cancelled, or still queued).
fn no_younger_trigger(runs: &Runs<'_>, sent: &Sent<'_>, run: &str, flag: &mut impl FnMut(String)) {
    let Some(&admitted) = runs.admitted.get(run) else {
        return;
    };
    for &(other, trigger, at) in &runs.unclaimed {
        if other == run || at <= admitted {
            continue;
        }
        if let Some((_, text)) = sent.place(trigger) {
            flag(format!(
                "{text:?}, the trigger of a run admitted later and never claimed, was sent"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::facts::ev;

    fn of(run: &str, kind: EventKind) -> Event {
        let mut e = ev(kind);
        e.run_id = run.into();
        e
    }

    fn claim(run: &str, version: u64) -> Event {
        of(
            run,
            EventKind::LeaseAcquired {
                episode: 1,
                token: version.into(),
                version,
            },
        )
    }

    fn answer(run: &str, message: &str, version: u64) -> Event {
        of(
            run,
            EventKind::CommitStep {
                step: 0,
                message: message.into(),
                version,
            },
        )
    }

    fn admit(run: &str, trigger: &str) -> Event {
        of(
            run,
            EventKind::Admitted {
                trigger: trigger.into(),
            },
        )
    }

    /// A request that sent these message ids, in this order.
    fn sent(ids: &[&'static str]) -> Sent<'static> {
        let mut at: Vec<_> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| (*id, i, *id))
            .collect();
        at.sort_unstable();
        Sent { at }
    }

    /// What a request sent is matched to stored messages by (role, text):
    /// a text the thread holds twice, or the request sends twice, names
    /// no place; a hook's own text is not judged.
    #[test]
    fn m1_sent_places_only_texts_unique_on_both_sides() {
        use pai_runtime::message::{ModelContent, NewMessage, PaiMeta, Producer, Visibility};
        use pai_runtime::{Message, Part};
        let stored = |id: &str, seq: u64, role: Role, text: &str| -> Message {
            NewMessage {
                id: id.into(),
                role,
                parts: vec![Part::text(text)],
                visibility: Visibility::ALL,
                pai: PaiMeta::new(Producer::User, None, None, 0),
            }
            .stored(seq)
        };
        let thread = crate::oracle::facts::thread_of(vec![
            stored("u1", 1, Role::User, "hello"),
            stored("a1", 2, Role::Assistant, "hi"),
            stored("u2", 3, Role::User, "again"),
            stored("u3", 4, Role::User, "again"),
            stored("u4", 5, Role::User, "twice sent"),
            stored("h", 6, Role::User, "hook text"),
        ]);
        let unique = Unique::of(&thread, &["hook text"]);
        let said = |role: Role, text: &str| ModelMessage {
            role,
            content: vec![ModelContent::Text { text: text.into() }],
        };
        let request = [
            said(Role::User, "hello"),
            said(Role::Assistant, "hi"),
            said(Role::User, "hi"),
            said(Role::User, "again"),
            said(Role::User, "twice sent"),
            said(Role::User, "hook text"),
            said(Role::User, "twice sent"),
        ];
        let sent = Sent::of(&unique, &request);
        assert_eq!(sent.place("u1"), Some((0, "hello")));
        assert_eq!(sent.place("a1"), Some((1, "hi")));
        let unplaced = ["u2", "u3", "u4", "h"];
        assert!(unplaced.iter().all(|id| sent.place(id).is_none()));
        assert_eq!(sent.at.len(), 2);
    }

    fn flags(runs: &Runs<'_>, s: &Sent<'_>, run: &str) -> Vec<String> {
        let mut out = Vec::new();
        trigger_order(runs, s, run, &mut |p| out.push(p));
        no_younger_trigger(runs, s, run, &mut |p| out.push(p));
        out
    }

    /// SPEC M1: run 2's trigger enters at its claim, after run 1's trigger
    /// and answer, and before run 2's own answer.
    #[test]
    fn m1_a_queued_trigger_enters_at_its_claim() {
        let events = [
            admit("r1", "m1"),
            claim("r1", 2),
            admit("r2", "m2"),
            answer("r1", "a1", 4),
            claim("r2", 6),
            answer("r2", "a2", 7),
        ];
        for cluster in [false, true] {
            let runs = Runs::of(events.iter().enumerate(), cluster);
            assert_eq!(runs.before_claim("a1", "r2"), Some(true));
            assert_eq!(runs.before_claim("m1", "r2"), Some(true));
            assert_eq!(runs.before_claim("a2", "r2"), Some(false));
            assert!(flags(&runs, &sent(&["m1", "a1", "m2", "a2"]), "r2").is_empty());
            let wrong = flags(&runs, &sent(&["m1", "m2", "a1"]), "r2");
            assert_eq!(wrong.len(), 1, "{wrong:?}");
            assert!(wrong[0].contains("\"a1\" was committed before the run was claimed"));
            assert_eq!(flags(&runs, &sent(&["m1", "a2", "m2"]), "r2").len(), 1);
        }
    }

    /// SPEC M1/K6: the trigger of a run admitted later and never claimed
    /// (cancelled while queued) never enters an older run's context.
    #[test]
    fn m1_a_cancelled_queued_trigger_stays_out_of_an_older_run() {
        let events = [
            admit("r0", "m0"),
            admit("r1", "m1"),
            claim("r1", 2),
            admit("r2", "m2"),
        ];
        let runs = Runs::of(events.iter().enumerate(), false);
        assert_eq!(flags(&runs, &sent(&["m1", "m2"]), "r1").len(), 1);
        assert!(flags(&runs, &sent(&["m1"]), "r1").is_empty());
        // r0 never claimed either, but admitted before r1: not judged here.
        assert!(flags(&runs, &sent(&["m0", "m1"]), "r1").is_empty());
        // The younger run's own request is not judged against itself.
        assert!(flags(&runs, &sent(&["m1", "m2"]), "r2").is_empty());
    }

    /// SPEC M1/A4: a steer comes after its run's answers of the steps
    /// before the step that took it.
    #[test]
    fn m1_a_steer_enters_after_the_earlier_steps_answers() {
        let events = [
            admit("r1", "m1"),
            claim("r1", 2),
            of(
                "r1",
                EventKind::Steered {
                    message: "s".into(),
                },
            ),
            answer("r1", "a0", 4),
        ];
        let runs = Runs::of(events.iter().enumerate(), false);
        let taken = BTreeMap::from([("s", 1)]);
        let mut out = Vec::new();
        steer_order(&runs, &sent(&["m1", "a0", "s"]), "r1", &taken, &mut |p| {
            out.push(p)
        });
        assert!(out.is_empty());
        steer_order(&runs, &sent(&["m1", "s", "a0"]), "r1", &taken, &mut |p| {
            out.push(p)
        });
        assert_eq!(out.len(), 1, "{out:?}");
    }
}
