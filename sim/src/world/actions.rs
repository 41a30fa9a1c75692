//! What the clients did: each timeline action and what the runtime answered.

use pai_runtime::Millis;

/// One client action of the timeline and its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionRecord {
    /// Its index in the scenario's (time-ordered) timeline.
    pub moment: usize,
    /// When it began: its time, or (placed `after` a moment) when the
    /// moment came.
    pub at: Millis,
    /// When the client had the answer (virtual ms).
    pub done_at: Millis,
    /// How many events the runtime had recorded when the action returned:
    /// the action happened after `events[..after_event]` and before the rest.
    pub after_event: usize,
    /// How many events had been recorded when the action began.
    pub before_event: usize,
    /// The action reached the runtime (the simulator refuses some itself:
    /// a cancel naming a send that made no run yet).
    pub reached: bool,
    /// The run the action started, steered or cancelled, or the call it
    /// answered (`None` for a watch or a check), or the error the client got.
    pub outcome: Result<Option<String>, String>,
    /// A timeline check that failed (`expect_waiting`, `expect_error`): what
    /// was found instead.
    pub check: Option<String>,
}
