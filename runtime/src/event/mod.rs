//! The runtime's own record of what it did. Sinks observe; they never steer.
//! Every event serializes as one name and its fields (`kind`), and with the
//! feature `schema` the event log's JSON Schema is derived from these types.

mod kind;
mod stage;

use serde::Serialize;

pub use kind::{EventKind, EventName};
pub use stage::RunStage;

use crate::clock::Millis;
use crate::message::Outcome;
use crate::store::RunEnd;

/// How a step hands over to what comes next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields))]
pub enum Transition {
    /// Another step follows.
    NextStep,
    /// A steering message is waiting: a new episode takes it (SPEC A4).
    Steer,
    /// Calls of the step wait for a client (SPEC T7): the episode ends.
    Wait,
    /// A canonical transform aborted the step (SPEC S4).
    Aborted {
        /// The run's outcome.
        outcome: Outcome,
        /// Why.
        reason: String,
    },
    /// The run is complete.
    Complete {
        /// Why, if known.
        reason: Option<String>,
    },
}

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
