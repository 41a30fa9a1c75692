//! What history rewrites and deletions (SPEC R1, H5) took from a thread,
//! and where the log says so: the oracles that expect a committed message
//! to stay stored excuse exactly what a later rewrite says it removed, or
//! a later deletion of its thread's incarnation took.

use pai_runtime::{Event, event::EventKind};

/// The log's rewrites and deletions, by position.
#[derive(Debug, Clone, Copy)]
pub(super) struct Erasures<'a> {
    events: &'a [Event],
}

impl<'a> Erasures<'a> {
    pub(super) fn of(events: &'a [Event]) -> Erasures<'a> {
        Erasures { events }
    }

    /// Events on `thread` after position `at`.
    fn after(&self, thread: &'a str, at: usize) -> impl Iterator<Item = &'a Event> + 'a {
        let rest = self.events.get(at + 1..).unwrap_or_default();
        rest.iter().filter(move |e| e.thread_id == thread)
    }

    /// The thread's incarnation was deleted after position `at`.
    pub(super) fn deleted_after(&self, thread: &'a str, at: usize) -> bool {
        self.after(thread, at)
            .any(|e| matches!(e.kind, EventKind::ThreadDeleted { .. }))
    }

    /// A rewrite after position `at` says it removed message `id`.
    pub(super) fn removed_after(&self, thread: &'a str, id: &str, at: usize) -> bool {
        self.after(thread, at).any(|e| match &e.kind {
            EventKind::HistoryRewritten { removed, .. } => removed.iter().any(|r| r == id),
            _ => false,
        })
    }

    /// Message `id`, committed at position `at`, may be gone from the
    /// stored thread: a later rewrite removed it, or a later deletion took
    /// its incarnation.
    pub(super) fn excused(&self, thread: &'a str, id: &str, at: usize) -> bool {
        self.deleted_after(thread, at) || self.removed_after(thread, id, at)
    }

    /// A mutation after position `at` changed message `id`'s visibility.
    pub(super) fn visibility_changed_after(&self, thread: &'a str, id: &str, at: usize) -> bool {
        self.after(thread, at).any(|e| match &e.kind {
            EventKind::Mutated { visibility, .. } => visibility.iter().any(|c| c.message == id),
            _ => false,
        })
    }

    /// The thread lost messages somewhere in the log: a deletion, or a
    /// rewrite that removed some.
    pub(super) fn erased_anywhere(&self, thread: &str) -> bool {
        self.events
            .iter()
            .any(|e| e.thread_id == thread && erases(&e.kind))
    }

    /// The thread lost messages after position `at`.
    pub(super) fn erased_after(&self, thread: &'a str, at: usize) -> bool {
        self.after(thread, at).any(|e| erases(&e.kind))
    }
}

/// A deletion, or a rewrite that removed messages.
fn erases(kind: &EventKind) -> bool {
    match kind {
        EventKind::ThreadDeleted { .. } => true,
        EventKind::HistoryRewritten { removed, .. } => !removed.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::facts::ev;

    #[test]
    fn only_later_erasures_excuse() {
        let rewrite = EventKind::HistoryRewritten {
            version: 3,
            kind: "regenerate",
            removed: vec!["m".into()],
            patched: vec![],
            started: None,
        };
        let deleted = EventKind::ThreadDeleted {
            incarnation: 1,
            cancelled: vec![],
        };
        let events = [ev(rewrite), ev(deleted)];
        let e = Erasures::of(&events);
        assert!(!e.removed_after("t", "m", 0));
        assert!(e.deleted_after("t", 0));
        assert!(!e.deleted_after("t", 1));
        assert!(!e.excused("t", "m", 1));
        assert!(e.erased_anywhere("t"));
        assert!(e.erased_after("t", 0) && !e.erased_after("t", 1));
        assert!(!e.erased_anywhere("u"));
        let events = [
            ev(EventKind::RunMetadata { version: Some(1) }),
            events[0].clone(),
        ];
        let e = Erasures::of(&events);
        assert!(e.excused("t", "m", 0));
        assert!(!e.excused("t", "n", 0));
    }
}
