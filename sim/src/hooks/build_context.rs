//! What the world lends the hooks it builds for a run: the log where
//! summary models record what they are sent, and the book that deals the
//! world's scripted answers.

use std::sync::{Arc, Mutex};

use pai_runtime::message::ModelMessage;

use crate::book::AnswerBook;

/// What the world lends the hooks it builds for a run.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct BuildContext {
    /// Where summary models record their requests (compaction's).
    pub summaries: SummaryLog,
    /// Which scripted answer each call of a summary model gets: the
    /// world's, shared by every worker, so a call made again after a
    /// takeover is answered as before (a deterministic model).
    pub answers: Arc<AnswerBook>,
}

/// One request the scripted summary model was sent, and its answer: what
/// the oracles judge a summary by (SPEC C1).
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryCall {
    /// The run whose compaction sent the request.
    pub run_id: String,
    /// The step at which it was sent, numbered from 0 across the run's episodes
    /// as the event log numbers steps.
    pub step: u32,
    /// What it was asked to summarize.
    pub messages: Vec<ModelMessage>,
    /// The summary it gave, or why it failed.
    pub answer: Result<String, String>,
}

/// Where summary models record their requests: the world's, shared by
/// every worker (a crash does not lose what was asked).
pub type SummaryLog = Arc<Mutex<Vec<SummaryCall>>>;
