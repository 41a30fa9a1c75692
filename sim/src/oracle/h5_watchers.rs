//! SPEC H5 (watchers): deleting a thread closes its watchers. Judged from
//! what each watcher received (as data), the timeline's answers and the
//! commits the store reported: a watcher hears nothing of its thread past
//! a deletion (both modes), and among workers, where the store's change
//! feed records its close, a watcher is closed exactly when a deletion of
//! its thread landed after it subscribed.

use std::collections::BTreeMap;

use pai_runtime::event::LiveEvent;

use super::observed::{Observed, Violation};
use crate::scenario::{Action, OracleId};

/// One watcher: its thread, where it subscribed in the timeline, and the
/// versions it was told.
struct Watcher<'a> {
    thread: &'a str,
    moment: usize,
    told: Vec<u64>,
}

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let mut watchers: BTreeMap<&str, Watcher<'_>> = BTreeMap::new();
    for (moment, m) in o.scenario.timeline.iter().enumerate() {
        if let Action::Watch { name, .. } = &m.action {
            let thread = m.thread.as_str();
            watchers.insert(
                name,
                Watcher {
                    thread,
                    moment,
                    told: Vec::new(),
                },
            );
        }
    }
    for (name, e) in o.live {
        if let LiveEvent::Committed { version, .. } = e
            && let Some(w) = watchers.get_mut(name.as_str())
        {
            w.told.push(*version);
        }
    }
    let mut out = Vec::new();
    for (name, w) in &watchers {
        out.extend(past_a_delete(o, name, w));
        if let Some(c) = o.cluster
            && !o.cut_short
        {
            let closed = c.watch_closed.iter().any(|(n, _)| n == name);
            let deleted = deleted_after(o, w);
            if closed != deleted && subscribed(o, w) {
                let message = match closed {
                    true => format!(
                        "watcher {name} was closed, but no deletion of thread {} landed after it subscribed",
                        w.thread
                    ),
                    false => format!(
                        "thread {} was deleted after watcher {name} subscribed, and its feed never closed",
                        w.thread
                    ),
                };
                out.push(Violation::new(OracleId::H5, None, message));
            }
        }
    }
    out
}

/// A watcher told a version past the first deletion of its thread that
/// came after the first version it was told.
fn past_a_delete(o: &Observed<'_>, name: &str, w: &Watcher<'_>) -> Option<Violation> {
    let first = *w.told.first()?;
    let last = *w.told.iter().max()?;
    let delete = o
        .commits
        .iter()
        .filter(|c| c.thread == w.thread && c.request == "delete" && c.version > first)
        .map(|c| c.version)
        .min()?;
    (last > delete).then(|| {
        let message = format!(
            "watcher {name} was told version {last} of thread {}, past its deletion at version {delete}",
            w.thread
        );
        Violation::new(OracleId::H5, None, message)
    })
}

/// Whether the watch action was answered (it subscribed).
fn subscribed(o: &Observed<'_>, w: &Watcher<'_>) -> bool {
    o.actions
        .iter()
        .any(|a| a.moment == w.moment && a.reached && a.outcome.is_ok())
}

/// Whether a deletion of the watcher's thread was answered after it
/// subscribed (the timeline's client plays its actions one after another).
fn deleted_after(o: &Observed<'_>, w: &Watcher<'_>) -> bool {
    o.actions.iter().any(|a| {
        a.moment > w.moment
            && a.outcome.as_ref().is_ok_and(|d| d.is_some())
            && o.scenario
                .timeline
                .get(a.moment)
                .is_some_and(|m| m.thread == w.thread && matches!(m.action, Action::DeleteThread))
    })
}
