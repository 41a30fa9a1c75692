//! How a step hands over to what comes next, as `after_step` records it.

use serde::Serialize;

use crate::message::Outcome;
use crate::model::RefusalKind;

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
    /// The provider refused the step (SPEC S6): the run ends `blocked`,
    /// its reason the refusal's kind and the provider's words.
    Refused {
        /// A refusal or a content filter.
        kind: RefusalKind,
        /// The provider's words through the canonical transforms (empty
        /// when it gave none).
        explanation: String,
    },
    /// The run is complete.
    Complete {
        /// Why, if known.
        reason: Option<String>,
    },
}
