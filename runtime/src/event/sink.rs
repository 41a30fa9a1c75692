//! What the runtime reports to ([`EventSink`]) and what it reports: one
//! [`Event`] per thing it did, at a time on its clock.

use super::kind::EventKind;
use crate::clock::Millis;
use crate::id::{RunId, ThreadId};

/// One thing the runtime did, at a time on its clock.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// When it happened, on the runtime's clock (milliseconds).
    pub at: Millis,
    /// The thread it happened on.
    pub thread_id: ThreadId,
    /// The run it belongs to; empty for an event of the thread outside any
    /// run (an admin read, rewrite or deletion, SPEC H7).
    pub run_id: RunId,
    /// The worker that did it, when several share a store (`None` in a
    /// runtime that is the only process).
    pub worker: Option<String>,
    /// What happened, with its fields: the event's name in the phase grammar
    /// (SPEC §1).
    pub kind: EventKind,
}

/// Receives every event, in order, synchronously.
pub trait EventSink: Send + Sync + 'static {
    /// Records one event, synchronously, where the runtime emits it: the
    /// runtime goes on only when this returns, so keep it short.
    fn record(&self, event: Event);
}
