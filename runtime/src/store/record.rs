//! What the store records and answers: a run's record and status, a
//! thread as trusted code reads it, and what operations report (SPEC K1,
//! K2, K6, T9).

use crate::id::{MessageId, RunId, ThreadId};
use crate::store::FencingToken;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::waiting::WaitingCall;
use crate::message::{Message, Outcome};

/// A store operation that could not be applied. Nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[non_exhaustive]
pub enum StoreError {
    /// No thread has this id (never created, or deleted, SPEC H5).
    #[error("thread {0} does not exist")]
    NoThread(ThreadId),
    /// The thread is another identity's or another agent's (SPEC H4): a client
    /// never reaches it.
    #[error("thread {thread} belongs to another identity or agent")]
    Forbidden {
        /// The thread asked.
        thread: ThreadId,
    },
    /// A run's request carried a lease token that is not the thread's
    /// newest: the lease has moved on (a takeover among workers, SPEC K2,
    /// K3), and nothing of the request was applied.
    #[error("stale lease token {given} (current {current})")]
    StaleLease {
        /// The token the write carried.
        given: FencingToken,
        /// The thread's newest token.
        current: FencingToken,
    },
    /// The token is the newest, but the run no longer holds the lease (it
    /// waited or ended since).
    #[error("run {run} does not hold the lease (token {token})")]
    LeaseNotHeld {
        /// The run that wrote.
        run: RunId,
        /// The token it wrote under.
        token: FencingToken,
    },
    /// The store could not be reached, or did not answer in time: the
    /// request may or may not have been applied.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// The store answered something this request cannot be answered with.
    #[error("store protocol error: {0}")]
    Protocol(String),
    /// The request is bound to an incarnation of the thread that was
    /// deleted (SPEC H5): a run, resolver, lease or handle of it can no
    /// longer read or write the thread.
    #[error("incarnation {incarnation} of thread {thread} was deleted")]
    Deleted {
        /// The thread.
        thread: ThreadId,
        /// The incarnation the request was bound to.
        incarnation: u64,
    },
    /// A client asked to cancel the run (SPEC K6): from the cancel's commit
    /// on, the store takes from the run's holder only what closes it (its
    /// renewals, the results of the calls it gives up, its end) and refuses
    /// everything else, changing nothing. The holder must stop: its running
    /// tools get cancelled results (T8), and it ends the run cancelled.
    /// It keeps its lease to do so.
    #[error("run {run} was cancelled: the store takes only its closing results and its end")]
    Cancelled {
        /// The run asked to cancel.
        run: RunId,
    },
}

impl StoreError {
    /// Whether the caller lost its lease, or cannot know whether it still
    /// holds it: a run that gets this must stop writing (SPEC K3).
    pub fn loses_lease(&self) -> bool {
        matches!(
            self,
            StoreError::StaleLease { .. }
                | StoreError::LeaseNotHeld { .. }
                | StoreError::Unavailable(_)
                | StoreError::Protocol(_)
                | StoreError::Deleted { .. }
                | StoreError::NoThread(_)
        )
    }
}

/// Lifecycle status of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Waiting for its turn.
    Queued,
    /// Running.
    Running,
    /// Waiting.
    Waiting,
    /// Completed.
    Completed,
    /// Failed.
    Failed,
    /// Cancelled.
    Cancelled,
}

impl RunStatus {
    /// The status's name in the event log and the store (`queued`, `running`,
    /// `waiting`, `completed`, `failed`, `cancelled`).
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The run's id.
    pub id: RunId,
    /// Where the run is: queued, running, waiting, or ended.
    pub status: RunStatus,
    /// How the run ended, as far as the user is concerned; `None` until it
    /// ends.
    pub outcome: Option<Outcome>,
    /// Why it ended so, in words, when it failed or was cancelled (or a hook
    /// gave a reason).
    pub reason: Option<String>,
    /// Model steps committed.
    pub steps: u32,
    /// The user message that started the run.
    pub trigger: MessageId,
    /// Execution episodes begun (SPEC §1): one more after each wait.
    pub episodes: u32,
    /// The run's typed metadata as JSON; `None` until first written.
    pub metadata: Option<Value>,
    /// While the run waits: the calls it waits on, with their answers (T9).
    pub waiting: Vec<WaitingCall>,
    /// A client asked to cancel the run (K6); it ends cancelled.
    pub cancel_requested: bool,
    /// The run gave its answerable calls up (A3, T8): no answer is taken
    /// for them any more. Calls made answerable later open them again.
    #[serde(default)]
    pub calls_closed: bool,
    /// The last step whose transition the store recorded, and what it was
    /// (SPEC K3): a steer the step's transition took, or a wait. Any other
    /// transition is a decision of hooks the store never sees, which a
    /// worker taking the run over asks for again.
    #[serde(default)]
    pub handed_over: Option<HandedOver>,
}

/// A step's transition as the store recorded it (SPEC K3, A3, A4, T7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandedOver {
    /// The step (from 0) whose transition it was.
    pub step: u32,
    /// What the transition was.
    pub how: HandOver,
}

/// The transitions of a step that the store records (SPEC K3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HandOver {
    /// The step's transition took a steering message (A4): the run goes
    /// on with it.
    Steer,
    /// The step waited for clients (T7): the run goes on once they answer.
    Wait,
}

impl RunRecord {
    pub(super) fn queued(id: &str, trigger: &str) -> RunRecord {
        RunRecord {
            id: id.into(),
            status: RunStatus::Queued,
            outcome: None,
            reason: None,
            steps: 0,
            trigger: trigger.into(),
            episodes: 0,
            metadata: None,
            waiting: Vec::new(),
            cancel_requested: false,
            calls_closed: false,
            handed_over: None,
        }
    }

    /// Records that the transition of the run's last committed step was
    /// `how` (SPEC K3); a run with no committed step records nothing.
    pub(super) fn handed_over_by(&mut self, how: HandOver) {
        if let Some(step) = self.steps.checked_sub(1) {
            self.handed_over = Some(HandedOver { step, how });
        }
    }

    /// Whether a waiting run can resume: every call answered, or cancelled.
    pub(super) fn resumable(&self) -> bool {
        self.status == RunStatus::Waiting
            && (self.cancel_requested || self.waiting.iter().all(|c| c.answer.is_some()))
    }
}

/// What recording an answer did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answered {
    /// The waiting run.
    pub run: RunId,
    /// Every waiting call of its step has an answer: it can resume.
    pub ready: bool,
    /// The thread's version after the answer's commit.
    pub version: u64,
}

/// A run a worker takes up with its lease: a queued run's start, a waiting
/// run's resume, or a takeover of a run whose holder's lease expired (K3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claimed {
    /// The thread of the run.
    pub thread: ThreadId,
    /// The run taken up.
    pub run: RunId,
    /// The run had begun before: it continues from its last committed step.
    pub resumed: bool,
    /// A client asked to cancel the run before it was claimed (SPEC K6): the
    /// run must end cancelled.
    pub cancel_requested: bool,
    /// The lease's fencing token, newer than every token before (K2).
    pub token: FencingToken,
    /// The episode this lease begins.
    pub episode: u32,
    /// Model steps the run has committed: its next step's number.
    pub steps: u32,
    /// When the run was taken from a holder whose lease expired.
    pub takeover: Option<Takeover>,
    /// The thread's version after the claim's commit (SPEC H1: a claim is
    /// a lease revision and a run status change).
    pub version: u64,
}

/// Whose expired lease a claim took over (SPEC K3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Takeover {
    /// The worker that held it, if it said.
    pub from: Option<String>,
    /// Its token, now stale.
    pub token: FencingToken,
    /// When its lease expired, on the store's clock.
    pub expired_at: crate::clock::Millis,
}

/// What a submitted user message became.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Submitted {
    /// A new run, queued (SPEC K1).
    Run {
        /// The run created.
        run: RunId,
        /// The thread's version after the commit.
        version: u64,
    },
    /// A steering message for the current run (SPEC A4).
    Steer {
        /// The run that takes the steer.
        run: RunId,
        /// The thread's version after the commit.
        version: u64,
    },
}

/// What a cancel reached (SPEC K6), and the thread's version after the
/// cancel's commit (H1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelReached {
    /// The run the cancel reached, and how.
    pub target: CancelTarget,
    /// The thread's version after the cancel's commit.
    pub version: u64,
}

/// Which run a cancel reached, and how (SPEC K6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum CancelTarget {
    /// The run being driven: its stop signal must be set.
    Active(RunId),
    /// The current run, waiting for a client: it resumes to end cancelled.
    Waiting(RunId),
    /// A run still queued: it is cancelled in the store and never starts.
    Queued(RunId),
}

/// Why a cancel reached no run (SPEC K6: a cancel is never silently lost).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum CancelMiss {
    /// The thread has no active or queued run.
    NoRun,
    /// The named run is not a run of this thread.
    Unknown(RunId),
    /// The named run has already ended.
    Ended(RunId),
}

/// A thread as trusted server code sees it: every message, whatever its visibility.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredThread {
    /// The thread's id.
    pub id: ThreadId,
    /// The agent the thread belongs to: only that agent's runtime reaches it
    /// (SPEC H4).
    pub agent: String,
    /// The identity that owns it: the only client that reaches it (SPEC H4).
    pub owner: String,
    /// The thread's incarnation: deleting a thread and creating it again under
    /// the same id makes a new incarnation, and whatever was bound to the old
    /// one is refused (SPEC H5).
    pub incarnation: u64,
    /// The thread's version: it grows with every commit, lease revisions
    /// included (SPEC H1).
    pub version: u64,
    /// Every stored message, in sequence order, whatever its visibility.
    pub messages: Vec<Message>,
    /// Client-readable thread metadata.
    pub metadata: Map<String, Value>,
    /// Server-side only (SPEC H4): never part of what a client receives.
    #[serde(default)]
    pub private_metadata: Map<String, Value>,
    /// Every run of the thread, oldest first.
    pub runs: Vec<RunRecord>,
    /// The run holding the thread's lease, if any (SPEC K2; none while a run waits).
    pub lease_holder: Option<RunId>,
    /// The newest fencing token handed out.
    pub lease_token: FencingToken,
}

/// What one commit did: an append's answer, with the numbers the store
/// gave its [`NewMessage`](crate::message::NewMessage)s (the `k`-th
/// appended is stored under `first_seq + k`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Appended {
    /// The thread's version after the commit.
    pub version: u64,
    /// The sequence number of the first message appended.
    pub first_seq: u64,
    /// The run that appended was asked to cancel (SPEC K6): the store took
    /// these messages as its closing results, and the run must stop and
    /// end cancelled.
    #[serde(default)]
    pub cancel_requested: bool,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEnd {
    /// The run's final status: completed, failed or cancelled.
    pub status: RunStatus,
    /// How it ended, as far as the user is concerned.
    pub outcome: Outcome,
    /// Why it ended so, in words, when there is a reason to give.
    pub reason: Option<String>,
}
