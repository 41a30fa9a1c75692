//! What the runtime reports to ([`EventSink`]) and what it reports: one
//! [`Event`] per thing it did, at a time on its clock.

use super::kind::EventKind;
use crate::clock::Millis;
use crate::id::{RunId, ThreadId};

/// One thing the runtime did, at a time on its clock.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub at: Millis,
    pub thread_id: ThreadId,
    pub run_id: RunId,
    /// The worker that did it, when several share a store (`None` in a
    /// runtime that is the only process).
    pub worker: Option<String>,
    pub kind: EventKind,
}

/// Receives every event, in order, synchronously.
pub trait EventSink: Send + Sync + 'static {
    fn record(&self, event: Event);
}
