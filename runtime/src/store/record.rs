//! What the store records and answers: a run's record and status, a
//! thread as trusted code reads it, and what operations report (SPEC K1,
//! K2, K6, T9).

use serde_json::{Map, Value};

use super::waiting::WaitingCall;
use crate::message::{Message, Outcome};

/// A store operation that could not be applied. Nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error("thread {0} does not exist")]
    NoThread(String),
    #[error("thread {thread} belongs to another identity or agent")]
    Forbidden { thread: String },
    #[error("stale lease token {given} (current {current})")]
    StaleLease { given: u64, current: u64 },
}

/// Lifecycle status of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunStatus {
    Queued,
    Running,
    Waiting,
    Completed,
    Failed,
    Cancelled,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Queued => "queued",
            RunStatus::Running => "running",
            RunStatus::Waiting => "waiting",
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
        }
    }
}

/// A run as the store records it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    pub id: String,
    pub status: RunStatus,
    pub outcome: Option<Outcome>,
    pub reason: Option<String>,
    /// Model steps committed.
    pub steps: u32,
    /// The user message that started the run.
    pub trigger: String,
    /// Execution episodes begun (SPEC §1): one more after each wait.
    pub episodes: u32,
    /// The run's typed metadata as JSON; `None` until first written.
    pub metadata: Option<Value>,
    /// While the run waits: the calls it waits on, with their answers (T9).
    pub waiting: Vec<WaitingCall>,
    /// A client asked to cancel the run (K6); it ends cancelled.
    pub cancel_requested: bool,
}

impl RunRecord {
    pub(super) fn queued(id: &str, trigger: &str) -> RunRecord {
        RunRecord {
            id: id.to_string(),
            status: RunStatus::Queued,
            outcome: None,
            reason: None,
            steps: 0,
            trigger: trigger.to_string(),
            episodes: 0,
            metadata: None,
            waiting: Vec::new(),
            cancel_requested: false,
        }
    }

    /// Whether a waiting run can resume: every call answered, or cancelled.
    pub(super) fn resumable(&self) -> bool {
        self.status == RunStatus::Waiting
            && (self.cancel_requested || self.waiting.iter().all(|c| c.answer.is_some()))
    }
}

/// What recording an answer did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Answered {
    /// The waiting run.
    pub(crate) run: String,
    /// Every waiting call of its step has an answer: it can resume.
    pub(crate) ready: bool,
    /// The thread's version after the answer's commit.
    pub(crate) version: u64,
}

/// A run the driver takes up: a queued run's start, or a waiting run's resume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Started {
    pub(crate) run: String,
    pub(crate) resumed: bool,
    pub(crate) cancel_requested: bool,
}

/// What a cancel reached (SPEC K6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CancelTarget {
    /// The run being driven: its stop signal must be set.
    Active(String),
    /// The current run, waiting for a client: it resumes to end cancelled.
    Waiting(String),
    /// A run still queued: it is cancelled in the store and never starts.
    Queued(String),
}

/// Why a cancel reached no run (SPEC K6: a cancel is never silently lost).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CancelMiss {
    /// The thread has no active or queued run.
    NoRun,
    /// The named run is not a run of this thread.
    Unknown(String),
    /// The named run has already ended.
    Ended(String),
}

/// A thread as trusted server code sees it: every message, whatever its visibility.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredThread {
    pub id: String,
    pub agent: String,
    pub owner: String,
    pub incarnation: u64,
    pub version: u64,
    pub messages: Vec<Message>,
    pub metadata: Map<String, Value>,
    pub runs: Vec<RunRecord>,
    /// The run holding the thread's lease, if any (SPEC K2; none while a run waits).
    pub lease_holder: Option<String>,
}

/// What one commit did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Appended {
    /// The thread's version after the commit.
    pub(crate) version: u64,
    /// The sequence number of the first message appended.
    pub(crate) first_seq: u64,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunEnd {
    pub(crate) status: RunStatus,
    pub(crate) outcome: Outcome,
    pub(crate) reason: Option<String>,
}
