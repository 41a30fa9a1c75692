//! What the oracles observe of one run, and what they report.

use pai_runtime::{Event, LiveEvent, StoredThread};

use crate::scenario::{OracleId, Scenario};
use crate::world::ModelCallRecord;

/// One broken invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub oracle: OracleId,
    pub run: Option<String>,
    pub message: String,
}

/// Everything the oracles (and the transcript) observe of one run.
#[derive(Debug, Clone, Copy)]
pub struct Observed<'a> {
    pub scenario: &'a Scenario,
    pub seed: u64,
    pub events: &'a [Event],
    pub threads: &'a [StoredThread],
    pub calls: &'a [ModelCallRecord],
    /// What each watcher received, in order.
    pub live: &'a [(String, LiveEvent)],
}

/// What the oracles found.
#[derive(Debug, Clone, Default)]
pub struct Verdicts {
    pub violations: Vec<Violation>,
    /// Requests that differ from their turn's `expect`: call index and difference.
    pub mismatches: Vec<(usize, String)>,
}
