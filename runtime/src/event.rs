//! The runtime's own record of what it did. Sinks observe; they never steer.

use serde_json::Value;

use std::fmt;

use crate::clock::Millis;
use crate::lifecycle::{
    AfterStepDecision, HookNote, Phase, ToolCallDecision, ToolResult, ToolResultDecision,
};
use crate::message::Outcome;
use crate::model::FinishReason;
use crate::patch::Route;
use crate::store::{Answer, RunEnd, RunStatus, VisibilityChange};

/// Where a run was when it failed or was cancelled. `Display` gives the
/// name the event log uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RunStage {
    /// Inside a lifecycle phase (a hook, or the runtime's own part of it).
    Phase(Phase),
    /// Consuming the provider stream.
    Stream,
    /// Committing the assistant message of a step.
    CommitStep,
    /// Committing a `prepare_run` response.
    Respond,
    /// Joining a running tool.
    Tool,
    /// After a step's tool results were committed.
    Tools,
    /// Committing a step's tool results.
    CommitToolResults,
    /// Between two steps.
    BetweenSteps,
    /// At the end of an episode, before the run ended or took a steer.
    EpisodeEnd,
    /// Giving a resumed run's waiting calls their results (SPEC T7, T9).
    Resume,
    /// An `on_output` handler (SPEC T6).
    OnOutput,
    /// The step loop itself (a bug in the runtime, caught).
    Runtime,
}

impl RunStage {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStage::Phase(p) => p.as_str(),
            RunStage::Stream => "stream",
            RunStage::CommitStep => "commit_step",
            RunStage::Respond => "respond",
            RunStage::Tool => "tool",
            RunStage::Tools => "tools",
            RunStage::CommitToolResults => "commit_tool_results",
            RunStage::BetweenSteps => "between steps",
            RunStage::EpisodeEnd => "episode end",
            RunStage::Resume => "resume",
            RunStage::OnOutput => "on_output",
            RunStage::Runtime => "runtime",
        }
    }
}

impl fmt::Display for RunStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a step hands over to what comes next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transition {
    NextStep,
    /// A steering message is waiting: a new episode takes it (SPEC A4).
    Steer,
    /// Calls of the step wait for a client (SPEC T7, A3): the episode ends
    /// and the run resumes in a new one once every call has its answer.
    Wait,
    /// A canonical transform aborted the step (SPEC S4): the run ends with
    /// this outcome.
    Aborted {
        outcome: Outcome,
        reason: String,
    },
    Complete {
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

/// What happened. Phase events are emitted whether or not any hook handles
/// the phase, so the log always follows the phase grammar (SPEC §1).
#[derive(Debug, Clone, PartialEq)]
pub enum EventKind {
    /// The run was queued behind its trigger message.
    Admitted {
        trigger: String,
    },
    /// A steering message for this active run was stored (SPEC A4).
    Steered {
        message: String,
    },
    /// The run's lease for an episode: a claim, or a new episode of the
    /// holder; one commit (SPEC H1).
    LeaseAcquired {
        episode: u32,
        token: u64,
        version: u64,
    },
    /// One hook's decision inside a composed lifecycle.
    Hook(HookNote),
    /// `prepare_run` finished: the episode route, the overlay size, and the
    /// run's newest user message that `prepare_run` was given (SPEC L1).
    PrepareRun {
        route: Route,
        overlay: usize,
        latest_user: Option<String>,
        /// This episode resumes a run that waited (SPEC L1, T7).
        resumed: bool,
    },
    /// `prepare_run` responded; the response was committed.
    Respond {
        /// The user message `prepare_run` judged (the run's newest, L1).
        latest_user: Option<String>,
        outcome: Outcome,
        reason: Option<String>,
        message: String,
        version: u64,
    },
    /// The innermost resolver leaf produced messages: the runtime default
    /// (`base == false`) or a base given through `next.with_base` (SPEC M2).
    /// Emitted only when some hook resolves model context.
    ContextLeaf {
        step: u32,
        base: bool,
        messages: usize,
    },
    ResolveModelContext {
        step: u32,
        anchor: u64,
        messages: usize,
    },
    PrepareModelStep {
        step: u32,
        route: Route,
        messages: usize,
    },
    /// One provider attempt with its effective route: `context` messages
    /// came from the resolver, `overlay` are model-only, `messages` in all.
    ModelCall {
        step: u32,
        attempt: u32,
        route: Route,
        context: usize,
        overlay: usize,
        messages: usize,
        tools: Vec<String>,
        timeout_ms: Option<Millis>,
    },
    /// A provider attempt failed before its stream existed.
    AttemptFailed {
        step: u32,
        attempt: u32,
        error: String,
    },
    /// The provider stream was consumed.
    Stream {
        step: u32,
        deltas: usize,
        chars: usize,
        tool_calls: usize,
        finish: Option<FinishReason>,
        error: Option<String>,
        /// A canonical transform aborted the stream with this reason (S4).
        aborted: Option<String>,
    },
    CommitStep {
        step: u32,
        message: String,
        version: u64,
    },
    BeforeToolCall {
        step: u32,
        call_id: String,
        tool: String,
        decision: ToolCallDecision,
    },
    ToolStart {
        step: u32,
        call_id: String,
        tool: String,
        input: Value,
        /// The same on every attempt of this call (SPEC K5).
        idempotency_key: String,
    },
    /// An `on_output` handler ran over a successful output (SPEC T6);
    /// `input` is the call's input it received; `version` is set when it
    /// changed the run metadata.
    OnOutput {
        step: u32,
        call_id: String,
        tool: String,
        input: Value,
        version: Option<u64>,
    },
    /// A tool finished; `detail` carries a thrown error's text (logs only, SPEC T5).
    ToolEnd {
        step: u32,
        result: ToolResult,
        detail: Option<String>,
    },
    AfterToolResult {
        step: u32,
        call_id: String,
        decision: ToolResultDecision,
    },
    CommitToolResults {
        step: u32,
        message: String,
        version: u64,
    },
    AfterStep {
        step: u32,
        decision: AfterStepDecision,
        transition: Transition,
    },
    /// A hook wrote the run's metadata through its facade (one commit).
    RunMetadata {
        version: u64,
    },
    /// A hook stored a hidden lifecycle context message (SPEC L13).
    ContextMessage {
        message: String,
        version: u64,
    },
    /// The step's client and approval calls are answerable while its
    /// backend tools run (SPEC T9): one commit.
    Awaiting {
        calls: Vec<String>,
        version: u64,
    },
    /// The run waits on these calls (SPEC T7): the episode ends here and the
    /// lease is released, in one commit.
    Waiting {
        calls: Vec<String>,
        version: u64,
    },
    /// A client asked to cancel this running or waiting run (SPEC K6): one
    /// commit; the run ends cancelled when its driver hears of it.
    CancelRequested {
        version: u64,
    },
    /// A client answered a waiting call (SPEC T9): one commit.
    Answered {
        call_id: String,
        answer: Answer,
        version: u64,
    },
    /// The run was cancelled while in `phase`; only the lease release and the end follow.
    Cancelled {
        phase: RunStage,
    },
    /// The run failed inside `phase`; only the lease release and the end follow.
    Failed {
        phase: RunStage,
        message: String,
    },
    LeaseReleased {
        episode: u32,
    },
    /// The holder renewed its lease (SPEC K3): one commit (H1).
    LeaseRenewed {
        token: u64,
        version: u64,
    },
    /// The driver lost the run's lease (refused as stale, or the store
    /// could not be reached): it stops driving the run and writes nothing
    /// more for it (SPEC K2, K3).
    LeaseLost {
        token: u64,
        reason: String,
    },
    /// The store refused the run's `request` because incarnation
    /// `incarnation` of its thread was deleted (SPEC H5): from here its
    /// worker knows, cancels the run's running tools (T8) and starts no new
    /// phase. Logged once per run, when its worker first learns it.
    DeleteLearned {
        request: String,
        incarnation: u64,
    },
    /// This worker took the run over from a holder whose lease expired
    /// (SPEC K3); it continues from the last committed step.
    TakenOver {
        /// The worker that held the lease, if known.
        from: Option<String>,
        /// The previous holder's token, now stale.
        stale_token: u64,
        /// When that lease expired, on the store's clock.
        expired_at: crate::clock::Millis,
        /// The run's next step: the one after its last committed step.
        next_step: u32,
    },
    /// The run ended; `version` is the commit that stored its end, when
    /// this process made it (a deletion's runs end in the delete's commit).
    Ended {
        status: RunStatus,
        outcome: Outcome,
        reason: Option<String>,
        version: Option<u64>,
    },
    /// A mutation committed as one change (SPEC H2): by the run (`run_id`
    /// names it) or by trusted code (`run_id` empty).
    Mutated {
        version: u64,
        appended: Vec<String>,
        /// Client-readable metadata keys it set or removed.
        metadata: Vec<String>,
        /// Private metadata keys it set or removed (names only: values
        /// never leave the server side, H4).
        private: Vec<String>,
        /// Visibility changes (a rewrite, R1).
        visibility: Vec<VisibilityChange>,
    },
    /// A mutation or rewrite committed nothing: its expectation failed
    /// (H3), an active run refused it (K4), it named a missing message, or
    /// a hook refused it.
    MutationRefused {
        /// `mutate`, `regenerate`, `set_visibility`.
        op: &'static str,
        reason: String,
        /// A conflict the caller can retry on (H3).
        conflict: bool,
    },
    /// A history rewrite committed (SPEC R1, R2): regeneration or visibility.
    HistoryRewritten {
        version: u64,
        kind: &'static str,
        /// Messages it removed (a regeneration).
        removed: Vec<String>,
        /// Metadata keys its `prepare_history_rewrite` patches wrote.
        patched: Vec<String>,
        /// The run a regeneration started.
        started: Option<String>,
    },
    /// `history_rewritten` hooks heard these rewrites' facts (SPEC R3), in
    /// one call; `error` if one of them failed (best effort: dropped).
    RewriteDelivered {
        versions: Vec<u64>,
        error: Option<String>,
    },
    /// A trusted writer read the thread through its facade (SPEC H3, H5):
    /// the version and incarnation an expectation it builds is read from.
    ThreadRead {
        version: u64,
        incarnation: u64,
        messages: usize,
    },
    /// The thread's incarnation was deleted (SPEC H5); these runs were
    /// cancelled with it.
    ThreadDeleted {
        incarnation: u64,
        cancelled: Vec<String>,
    },
    /// The thread was created (again): this incarnation starts.
    ThreadCreated {
        incarnation: u64,
    },
    /// Compaction progress (SPEC C1): the resolver is summarizing messages
    /// up to and including `through` (a sequence number).
    CompactionStarted {
        step: u32,
        through: u64,
        messages: usize,
    },
    /// Compaction committed its summary record and moved its cursor (C1).
    Compacted {
        step: u32,
        summary: String,
        through: u64,
        version: u64,
    },
    /// Compaction gave up for this step (a conflict, or the summary model
    /// failed); the step's context is built from the stored cursor.
    CompactionSkipped {
        step: u32,
        reason: String,
    },
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

    /// The event's name in the phase grammar.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::Admitted { .. } => "admit",
            EventKind::Steered { .. } => "steered",
            EventKind::ContextLeaf { .. } => "context_leaf",
            EventKind::AttemptFailed { .. } => "attempt_failed",
            EventKind::LeaseAcquired { .. } => "lease_acquired",
            EventKind::Hook(_) => "hook",
            EventKind::PrepareRun { .. } => "prepare_run",
            EventKind::Respond { .. } => "respond",
            EventKind::ResolveModelContext { .. } => "resolve_model_context",
            EventKind::PrepareModelStep { .. } => "prepare_model_step",
            EventKind::ModelCall { .. } => "around_model_call",
            EventKind::Stream { .. } => "stream",
            EventKind::CommitStep { .. } => "commit_step",
            EventKind::BeforeToolCall { .. } => "before_tool_call",
            EventKind::ToolStart { .. } => "tool_start",
            EventKind::ToolEnd { .. } => "tool_end",
            EventKind::AfterToolResult { .. } => "after_tool_result",
            EventKind::CommitToolResults { .. } => "commit_tool_results",
            EventKind::AfterStep { .. } => "after_step",
            EventKind::Failed { .. } => "failed",
            EventKind::Cancelled { .. } => "cancelled",
            EventKind::LeaseReleased { .. } => "lease_released",
            EventKind::LeaseRenewed { .. } => "lease_renewed",
            EventKind::LeaseLost { .. } => "lease_lost",
            EventKind::DeleteLearned { .. } => "delete_learned",
            EventKind::TakenOver { .. } => "taken_over",
            EventKind::OnOutput { .. } => "on_output",
            EventKind::RunMetadata { .. } => "run_metadata",
            EventKind::ContextMessage { .. } => "context_message",
            EventKind::Waiting { .. } => "wait",
            EventKind::Awaiting { .. } => "awaiting",
            EventKind::CancelRequested { .. } => "cancel_requested",
            EventKind::Answered { .. } => "answer",
            EventKind::Ended { .. } => "end",
            EventKind::Mutated { .. } => "mutated",
            EventKind::MutationRefused { .. } => "mutation_refused",
            EventKind::HistoryRewritten { .. } => "history_rewritten",
            EventKind::RewriteDelivered { .. } => "rewrite_delivered",
            EventKind::ThreadRead { .. } => "read_thread",
            EventKind::ThreadDeleted { .. } => "thread_deleted",
            EventKind::ThreadCreated { .. } => "thread_created",
            EventKind::CompactionStarted { .. } => "compaction_started",
            EventKind::Compacted { .. } => "compacted",
            EventKind::CompactionSkipped { .. } => "compaction_skipped",
        }
    }
}

/// Receives every event, in order, synchronously.
pub trait EventSink: Send + Sync + 'static {
    fn record(&self, event: Event);
}
