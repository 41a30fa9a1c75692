//! The runtime's own record of what it did. Sinks observe; they never steer.
//! Every event serializes as one name and its fields (`kind`), and with the
//! feature `schema` the event log's JSON Schema is derived from these types.
//!
//! The root's [`Event`] and [`EventSink`]
//! (`sink.rs`) carry an [`EventKind`] (`kind.rs`); a failure names its
//! [`RunStage`] (`stage.rs`), a run's end its [`Transition`]
//! (`transition.rs`). What a client watching a thread hears live is a
//! [`LiveEvent`] on its [`Watch`].

mod kind;
pub(crate) mod sink;
mod stage;
mod transition;

pub use kind::{EventKind, EventName};
pub use stage::RunStage;
pub use transition::Transition;

pub use crate::live::{LiveEvent, Watch};
pub(crate) use sink::{Event, EventSink};

use crate::store::RunEnd;

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
