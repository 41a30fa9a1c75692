//! The runtime's own record of what it did. Sinks observe; they never steer.
//! Every event serializes as one name and its fields (`kind`), and with the
//! feature `schema` the event log's JSON Schema is derived from these types.

mod kind;
mod stage;
mod transition;

pub use kind::{EventKind, EventName};
pub use stage::RunStage;
pub use transition::Transition;

use crate::clock::Millis;
use crate::store::RunEnd;

/// One thing the runtime did, at a time on its clock.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub at: Millis,
    pub thread_id: String,
    pub run_id: String,
    /// The worker that did it, when several share a store (`None` in a
    /// runtime that is the only process).
    pub worker: Option<String>,
    pub kind: EventKind,
}

impl EventKind {
    /// The `end` event of a run that ended so, in the commit that made
    /// `version` (if known here).
    pub(crate) fn ended(end: &RunEnd, version: Option<u64>) -> EventKind {
        EventKind::Ended {
            status: end.status,
            outcome: end.outcome,
            reason: end.reason.clone(),
            version,
        }
    }
}

/// Receives every event, in order, synchronously.
pub trait EventSink: Send + Sync + 'static {
    fn record(&self, event: Event);
}
