//! Where each step of a run began (SPEC M1): the `resolve_model_context`
//! event that reports the step's read of its thread, and what the visible
//! set oracles place against it (`m1_visible`, and `m1_cluster` among
//! workers).

use std::collections::BTreeMap;

use pai_runtime::{Event, event::EventKind};

use super::rewrites::Erasures;

/// Where a step began: its run, thread, anchor and worker, the position of
/// its `resolve_model_context` event and of the run's event before it (the
/// read lies between the two).
#[derive(Debug, Clone, Copy)]
pub(super) struct Begun<'a> {
    pub(super) run: &'a str,
    pub(super) step: u32,
    pub(super) thread: &'a str,
    pub(super) worker: Option<&'a str>,
    pub(super) anchor: u64,
    pub(super) from: usize,
    pub(super) at: usize,
}

/// Every step's beginning, unless its thread later lost messages (then the
/// stored thread no longer tells what the step saw); among workers, whose
/// logs do not order a loss against a read, unless it lost any.
pub(super) fn steps(events: &[Event], cluster: bool) -> BTreeMap<(&str, u32), Begun<'_>> {
    let erased = Erasures::of(events);
    let mut last: BTreeMap<&str, usize> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        if let EventKind::ResolveModelContext { step, anchor, .. } = &e.kind
            && !erased.erased_after(&e.thread_id, i)
            && !(cluster && erased.erased_anywhere(&e.thread_id))
        {
            let from = last.get(e.run_id.as_str()).copied().unwrap_or(0);
            let b = Begun {
                run: &e.run_id,
                step: *step,
                thread: &e.thread_id,
                worker: e.worker.as_deref(),
                anchor: *anchor,
                from,
                at: i,
            };
            out.insert((e.run_id.as_str(), *step), b);
        }
        if !matches!(e.kind, EventKind::Hook(_)) && !e.run_id.is_empty() {
            last.insert(&e.run_id, i);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::facts::ev;

    /// SPEC M1 (with H5): a thread that lost messages before a step still
    /// tells what the step saw in one process; among workers, whose logs
    /// do not order the loss against the read, its steps are not judged.
    #[test]
    fn m1_among_workers_a_thread_that_lost_messages_is_not_judged() {
        let deleted = ev(EventKind::ThreadDeleted {
            incarnation: 1,
            cancelled: Vec::new(),
        });
        let resolve = ev(EventKind::ResolveModelContext {
            step: 0,
            anchor: 1,
            messages: 1,
        });
        let events = vec![deleted, resolve];
        assert!(steps(&events, false).contains_key(&("r", 0)));
        assert!(!steps(&events, true).contains_key(&("r", 0)));
        // A loss after the step makes it unjudged in both.
        let later: Vec<Event> = events.into_iter().rev().collect();
        assert!(!steps(&later, false).contains_key(&("r", 0)));
    }
}
