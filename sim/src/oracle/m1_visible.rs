//! SPEC M1, the visible set: a step's default context holds the thread's
//! messages that were context-visible when the step began, and none that
//! were hidden then. The visibility each stored message had when the step
//! read the thread is rebuilt from the visibility changes the log records
//! (`Mutated`, each with its before and after), not from the runtime's
//! context code; a change the log cannot place before or after the step's
//! read is not judged. In one process the log's positions place a change;
//! among workers, whose logs interleave out of the store's order, thread
//! versions and lease tokens do (`m1_cluster`).

use std::borrow::Cow;
use std::collections::BTreeMap;

use pai_runtime::{
    Event, Message, Role, event::EventKind, message::ModelMessage, store::StoredThread,
};

use super::facts::{LookupMap, hook_written, model_text_ref, reshapes_context};
use super::m1_begun::{Begun, steps};
use super::m1_cluster::StoreOrder;
use super::observed::{Observed, Violation};
use crate::scenario::OracleId;

/// Each message's visibility changes, by (thread, message id): position,
/// context-visible before, after.
type Changes<'a> = LookupMap<(&'a str, &'a str), Vec<(usize, bool, bool)>>;

/// How the oracle places a visibility change, or a queued run's trigger,
/// against a step's read.
enum Placing<'a> {
    /// One process: positions in its log.
    Log {
        changes: Changes<'a>,
        queued: Queue<'a>,
    },
    /// Several workers: thread versions and lease tokens.
    Store(StoreOrder<'a>),
}

impl Placing<'_> {
    /// Whether `m` was context-visible when step `b` read the thread;
    /// `None` when that cannot be told, or `m` waited in the queue (K1).
    fn visible(&self, b: &Begun<'_>, m: &Message) -> Option<bool> {
        match self {
            Placing::Log { changes, queued } => {
                if queued.holds(&m.id, b.at) {
                    return None;
                }
                visible_at(changes, b, m)
            }
            Placing::Store(order) => order.visible(b, m),
        }
    }
}

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let begun = steps(o.events, o.cluster.is_some());
    let placing = match o.cluster {
        None => Placing::Log {
            changes: changes(o.events),
            queued: Queue::of(o.events),
        },
        Some(c) => Placing::Store(StoreOrder::of(o.events, c, o.commits)),
    };
    let Some(added) = hook_written(o.scenario) else {
        return Vec::new();
    };
    // No hook drops or replaces default-context messages: every visible
    // one must then be sent.
    let whole = !reshapes_context(o.scenario);
    // Each thread's judged messages with their texts, once per thread.
    let candidates: BTreeMap<&str, Vec<(&Message, String)>> = o
        .threads
        .iter()
        .map(|t| (t.id.as_str(), judged(t, &added)))
        .collect();
    let mut out = Vec::new();
    for c in o.calls {
        let r = &c.request;
        let Some(b) = begun.get(&(r.run_id.as_str(), r.step)) else {
            continue;
        };
        let Some(thread) = candidates.get(b.thread) else {
            continue;
        };
        let sent = texts(o.calls.messages(c));
        for (m, text) in thread.iter().filter(|(m, _)| m.seq <= b.anchor) {
            let Some(visible) = placing.visible(b, m) else {
                continue;
            };
            let key = (m.role, Cow::Borrowed(text.as_str()));
            let present = sent.get(&key).copied().unwrap_or(0) > 0;
            let problem = match (visible, present) {
                (false, true) => "hidden from the context when the step began, yet sent",
                (true, false) if whole => "context-visible when the step began, yet not sent",
                _ => continue,
            };
            out.push(Violation {
                oracle: OracleId::M1.into(),
                run: Some(r.run_id.to_string()),
                message: format!(
                    "step {}: {:?} message #{} ({:?}) was {problem}",
                    r.step, m.role, m.seq, key.1
                ),
            });
        }
    }
    out
}

/// The messages that started runs: each waits in the queue from its
/// run's admission until the run first holds the lease (K1), and until
/// then no other run's step sends it.
struct Queue<'a> {
    /// Trigger message id → each of its runs' admission and first lease,
    /// by position (a regeneration admits a new run on a message that
    /// already started one, R1).
    waits: LookupMap<&'a str, Vec<Wait<'a>>>,
}

/// One run's wait in the queue: the run, its admission and first lease.
type Wait<'a> = (&'a str, usize, Option<usize>);

impl<'a> Queue<'a> {
    fn of(events: &'a [Event]) -> Queue<'a> {
        let mut trigger: BTreeMap<&str, &str> = BTreeMap::new();
        let mut waits: LookupMap<&str, Vec<Wait<'_>>> = LookupMap::default();
        for (i, e) in events.iter().enumerate() {
            match &e.kind {
                EventKind::Admitted { trigger: m } => {
                    trigger.insert(&e.run_id, m);
                    waits.entry(m).or_default().push((&e.run_id, i, None));
                }
                EventKind::LeaseAcquired { .. } => {
                    if let Some(m) = trigger.remove(e.run_id.as_str())
                        && let Some(w) = waits
                            .get_mut(m)
                            .and_then(|w| w.iter_mut().find(|w| w.0 == e.run_id))
                    {
                        w.2 = Some(i);
                    }
                }
                _ => {}
            }
        }
        // A run's leftover steers wait with its trigger (A4, M1).
        let leftover = super::facts::leftover_steers(events);
        for (m, run) in leftover {
            let admitted = events
                .iter()
                .position(|e| e.run_id == run && matches!(e.kind, EventKind::Admitted { .. }));
            let lease = events
                .iter()
                .position(|e| e.run_id == run && matches!(e.kind, EventKind::LeaseAcquired { .. }));
            if let Some(a) = admitted {
                let w = waits.entry(m).or_default();
                if w.is_empty() {
                    w.push((run, a, lease));
                }
            }
        }
        Queue { waits }
    }

    /// Message `id` waited in the queue at position `at`.
    fn holds(&self, id: &str, at: usize) -> bool {
        self.waits.get(id).is_some_and(|w| {
            w.iter()
                .any(|&(_, admitted, lease)| admitted < at && lease.is_none_or(|l| l > at))
        })
    }
}

fn changes(events: &[Event]) -> Changes<'_> {
    let mut out: Changes<'_> = LookupMap::default();
    for (i, e) in events.iter().enumerate() {
        if let EventKind::Mutated { visibility, .. } = &e.kind {
            for v in visibility {
                let key = (e.thread_id.as_str(), v.message.as_str());
                out.entry(key)
                    .or_default()
                    .push((i, v.before.context, v.after.context));
            }
        }
    }
    out
}

/// Whether `m` was context-visible when step `b` read the thread; `None`
/// when a change falls between the run's previous event and the step's.
fn visible_at(changes: &Changes<'_>, b: &Begun<'_>, m: &Message) -> Option<bool> {
    let Some(list) = changes.get(&(b.thread, m.id.as_str())) else {
        return Some(m.visibility.context);
    };
    if list.iter().any(|&(p, ..)| p > b.from && p < b.at) {
        return None;
    }
    match list.iter().rev().find(|&&(p, ..)| p <= b.from) {
        Some(&(_, _, after)) => Some(after),
        None => list.first().map(|&(_, before, _)| before),
    }
}

/// The stored user and assistant messages whose text tells them apart
/// (non-empty, the only one of their role with it, and no hook's own
/// text), with that text; a step judges those at or below its anchor.
fn judged<'t>(thread: &'t StoredThread, added: &[&str]) -> Vec<(&'t Message, String)> {
    let mut count: BTreeMap<(Role, String), usize> = BTreeMap::new();
    for m in &thread.messages {
        *count.entry((m.role, m.text())).or_default() += 1;
    }
    thread
        .messages
        .iter()
        .filter(|m| matches!(m.role, Role::User | Role::Assistant))
        .map(|m| (m, m.text()))
        .filter(|(m, text)| {
            !text.is_empty()
                && count.get(&(m.role, text.clone())) == Some(&1)
                && !added.contains(&text.as_str())
        })
        .collect()
}

/// How often each (role, text) of the user and assistant messages occurs.
fn texts(messages: &[ModelMessage]) -> LookupMap<(Role, Cow<'_, str>), usize> {
    let mut out = LookupMap::default();
    for m in messages {
        if !matches!(m.role, Role::User | Role::Assistant) {
            continue;
        }
        *out.entry((m.role, model_text_ref(m))).or_default() += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::facts::{ev, user_message, visibility_change};

    fn message(id: &str, context: bool) -> Message {
        user_message(id, context)
    }

    /// `id`'s context visibility changes from `before` to `after`.
    fn change(id: &str, before: bool, after: bool) -> Event {
        visibility_change(id, 2, before, after)
    }

    fn resolve(step: u32) -> Event {
        ev(EventKind::ResolveModelContext {
            step,
            anchor: 5,
            messages: 1,
        })
    }

    fn lease() -> Event {
        ev(EventKind::LeaseAcquired {
            version: 1,
            episode: 1,
            token: 1.into(),
        })
    }

    /// SPEC M1: a change the run made before the step counts as made; one
    /// made after it is undone; one between the run's previous event and
    /// the step's is not judged.
    #[test]
    fn m1_visibility_is_rebuilt_at_the_step() {
        // 0 lease, 1 step 0, 2 hide m, 3 step 1, 4 show m again.
        let (hide, show) = (change("m", true, false), change("m", false, true));
        let events = vec![lease(), resolve(0), hide, resolve(1), show];
        let (begun, log) = (steps(&events, false), changes(&events));
        let m = message("m", true);
        let at = |step| visible_at(&log, &begun[&("r", step)], &m);
        assert_eq!(at(0), Some(true), "before the hide");
        assert_eq!(at(1), Some(false), "after the hide, before the show");
        let unchanged = message("n", false);
        assert_eq!(visible_at(&log, &begun[&("r", 1)], &unchanged), Some(false));
        // A trusted writer's change between the run's events: unknown.
        let mut late = change("m", true, false);
        late.run_id = Default::default();
        let events = vec![lease(), late, resolve(0)];
        let (begun, log) = (steps(&events, false), changes(&events));
        assert_eq!(visible_at(&log, &begun[&("r", 0)], &m), None);
    }

    /// SPEC K1: a message waits in the queue from its run's admission until
    /// that run first holds the lease.
    #[test]
    fn k1_a_trigger_is_queued_until_its_run_holds_the_lease() {
        let admit = ev(EventKind::Admitted {
            trigger: "m".into(),
        });
        let events = vec![admit, resolve(0), lease(), resolve(1)];
        let q = Queue::of(&events);
        assert!(q.holds("m", 1));
        assert!(!q.holds("m", 3));
        assert!(!q.holds("other", 1));
    }
}
