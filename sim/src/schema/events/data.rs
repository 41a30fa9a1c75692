//! Each event's name and fields.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::facade::FacadeData;
use super::{decisions::*, names::*, values::*};
use crate::schema::mirror::Outcome;

/// An event's name and fields. The names are those of the phase grammar,
/// as `EventName` gives them.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(
    tag = "event",
    content = "fields",
    rename_all = "snake_case",
    deny_unknown_fields
)]
pub enum EventData {
    /// The run was queued behind its trigger message.
    Admit {
        /// The id of the user message that triggered the run.
        trigger: String,
    },
    /// A steering message for this active run was stored (SPEC A4).
    Steered {
        /// The id of the steering message.
        message: String,
    },
    /// The run took its thread's lease for an episode (SPEC K2).
    LeaseAcquired {
        /// The episode, from 1.
        episode: u32,
        /// The fencing token of the lease.
        token: u64,
        /// The thread's version after the claim's commit (SPEC H1).
        version: u64,
    },
    /// The holder renewed the run's lease (SPEC K3): one commit (H1).
    LeaseRenewed {
        /// The fencing token renewed.
        token: u64,
        /// The thread's version after the renewal's commit.
        version: u64,
    },
    /// The driver lost the run's lease and stopped driving it (SPEC K2, K3).
    LeaseLost {
        /// The token it held.
        token: u64,
        /// Why: a stale token refused, or the store unreachable.
        reason: String,
    },
    /// The store refused a request of the run because its thread's
    /// incarnation was deleted: from here its worker knows, cancels the
    /// run's running tools and starts no new phase (SPEC H5). Once per run.
    DeleteLearned {
        /// What the store refused: `renew`, or the stage whose write it was.
        request: String,
        /// The deleted incarnation.
        incarnation: u64,
    },
    /// A worker took the run over from a holder whose lease expired (SPEC K3).
    TakenOver {
        /// The worker that held the lease, if known.
        from: Option<String>,
        /// The previous holder's token, now stale.
        stale_token: u64,
        /// When that lease expired (virtual ms on the store's clock).
        expired_at: u64,
        /// The run's next step: the one after its last committed step.
        next_step: u32,
    },
    /// One hook's decision inside a composed lifecycle.
    Hook {
        /// The phase the hook handled.
        phase: PhaseName,
        /// The hook's name.
        hook: String,
        /// What it decided.
        decision: NoteRecord,
    },
    /// `prepare_run` finished: the episode route, the overlay size, and the
    /// run's newest user message that `prepare_run` was given (SPEC L1).
    PrepareRun {
        /// The episode's route.
        route: RouteRecord,
        /// Model-only messages the episode overlay adds.
        overlay: usize,
        /// The text of the run's newest user message.
        latest_user: Option<String>,
        /// This episode resumes a run that waited (SPEC L1, T7).
        resumed: bool,
    },
    /// `prepare_run` responded; the response was committed.
    Respond {
        /// The user message `prepare_run` judged (the run's newest, L1).
        latest_user: Option<String>,
        /// The run's outcome.
        outcome: Outcome,
        /// Why, if the hook said.
        reason: Option<String>,
        /// The id of the committed message.
        message: String,
        /// The thread's version after the commit.
        version: u64,
    },
    /// The innermost resolver leaf produced messages: the stored history
    /// (`base = false`) or a base given through `next.with_base` (SPEC M2).
    ContextLeaf {
        /// The step, from 1.
        step: u32,
        /// The messages came from `next.with_base`.
        base: bool,
        /// How many messages.
        messages: usize,
    },
    /// The model context of a step was resolved.
    ResolveModelContext {
        /// The step, from 1.
        step: u32,
        /// The newest stored message the step may see (SPEC M1).
        anchor: u64,
        /// How many messages the resolvers returned.
        messages: usize,
    },
    /// `prepare_model_step` finished.
    PrepareModelStep {
        /// The step, from 1.
        step: u32,
        /// The step's route.
        route: RouteRecord,
        /// How many messages the step sends.
        messages: usize,
    },
    /// One provider attempt with its effective route.
    AroundModelCall {
        /// The step, from 1.
        step: u32,
        /// The attempt, from 1.
        attempt: u32,
        /// The attempt's effective route.
        route: RouteRecord,
        /// Messages from the resolver.
        context: usize,
        /// Model-only messages.
        overlay: usize,
        /// Messages in all.
        messages: usize,
        /// The tools offered.
        tools: Vec<String>,
        /// The attempt's deadline in virtual milliseconds.
        timeout_ms: Option<u64>,
    },
    /// A provider attempt failed before its stream existed.
    AttemptFailed {
        /// The step, from 1.
        step: u32,
        /// The attempt, from 1.
        attempt: u32,
        /// The provider's error.
        error: String,
    },
    /// The provider stream was consumed.
    Stream {
        /// The step, from 1.
        step: u32,
        /// Text deltas received.
        deltas: usize,
        /// Characters of text received.
        chars: usize,
        /// Tool calls received.
        tool_calls: usize,
        /// Why the provider stopped, if it said.
        finish: Option<FinishName>,
        /// The provider failed mid-stream with this error.
        error: Option<String>,
        /// A canonical transform aborted the stream with this reason (SPEC S4).
        aborted: Option<String>,
    },
    /// The step's assistant message was committed.
    CommitStep {
        /// The step, from 1.
        step: u32,
        /// The id of the committed message.
        message: String,
        /// The thread's version after the commit.
        version: u64,
    },
    /// `before_tool_call` decided a call.
    BeforeToolCall {
        /// The step, from 1.
        step: u32,
        /// The call's id.
        call_id: String,
        /// The tool called.
        tool: String,
        /// The joined decision.
        decision: ToolCallRecord,
    },
    /// A tool started.
    ToolStart {
        /// The step, from 1.
        step: u32,
        /// The call's id.
        call_id: String,
        /// The tool.
        tool: String,
        /// The input it was given.
        input: Value,
        /// The call's idempotency key: run id + call id (SPEC K5).
        idempotency_key: String,
    },
    /// An `on_output` handler ran over a successful output (SPEC T6).
    OnOutput {
        /// The step, from 1.
        step: u32,
        /// The call's id.
        call_id: String,
        /// The tool.
        tool: String,
        /// The call's input the handler received.
        input: Value,
        /// The thread's version after the handler's metadata commit, if it
        /// changed the run metadata.
        version: Option<u64>,
    },
    /// A hook wrote the run's metadata through its facade.
    RunMetadata {
        /// The thread's version after the commit.
        version: u64,
    },
    /// A hook stored a hidden lifecycle context message (SPEC L13).
    ContextMessage {
        /// The id of the stored message.
        message: String,
        /// The thread's version after the commit.
        version: u64,
    },
    /// The run waits for a client to answer these calls (SPEC T7); the
    /// episode ends and the lease is released.
    Wait {
        /// The ids of the calls waited on.
        calls: Vec<String>,
        /// The thread's version after the wait's commit (SPEC H1).
        version: u64,
    },
    /// The step's client and approval calls are answerable while its
    /// backend tools run (SPEC T9): one commit.
    Awaiting {
        /// The ids of the answerable calls.
        calls: Vec<String>,
        /// The thread's version after the commit.
        version: u64,
    },
    /// A client asked to cancel this running or waiting run (SPEC K6):
    /// one commit.
    CancelRequested {
        /// The thread's version after the cancel's commit.
        version: u64,
    },
    /// A client answered a waiting call (SPEC T9).
    Answer {
        /// The call's id.
        call_id: String,
        /// The answer.
        answer: AnswerRecord,
        /// The thread's version after the answer's commit.
        version: u64,
    },
    /// A tool finished; `detail` carries a thrown error's text (logs only, SPEC T5).
    ToolEnd {
        /// The step, from 1.
        step: u32,
        /// The result.
        result: ToolResultRecord,
        /// A thrown error's text.
        detail: Option<String>,
    },
    /// `after_tool_result` decided a result.
    AfterToolResult {
        /// The step, from 1.
        step: u32,
        /// The call's id.
        call_id: String,
        /// The joined decision.
        decision: ToolResultDecisionRecord,
    },
    /// The step's tool results were committed.
    CommitToolResults {
        /// The step, from 1.
        step: u32,
        /// The id of the committed message.
        message: String,
        /// The thread's version after the commit.
        version: u64,
    },
    /// `after_step` decided the transition.
    AfterStep {
        /// The step, from 1.
        step: u32,
        /// The joined decision.
        decision: AfterStepName,
        /// What comes next.
        transition: TransitionRecord,
    },
    /// The run was cancelled while in `phase`; only the lease release and the end follow.
    Cancelled {
        /// Where the run was.
        #[schemars(with = "StageName")]
        phase: String,
    },
    /// The run failed inside `phase`; only the lease release and the end follow.
    Failed {
        /// Where the run was.
        #[schemars(with = "StageName")]
        phase: String,
        /// The failure.
        message: String,
    },
    /// The run released its lease.
    LeaseReleased {
        /// The episode, from 1.
        episode: u32,
    },
    /// A mutation committed as one change (SPEC H2).
    Mutated(FacadeData),
    /// A mutation or rewrite committed nothing (SPEC H3, K4).
    MutationRefused(FacadeData),
    /// A history rewrite committed (SPEC R1, R2).
    HistoryRewritten(FacadeData),
    /// `history_rewritten` hooks heard rewrite facts (SPEC R3).
    RewriteDelivered(FacadeData),
    /// A trusted writer read the thread through its facade (SPEC H3, H5).
    ReadThread {
        /// The thread's version it read.
        version: u64,
        /// The incarnation it read.
        incarnation: u64,
        /// How many messages it read.
        messages: usize,
    },
    /// The thread's incarnation was deleted (SPEC H5).
    ThreadDeleted(FacadeData),
    /// An incarnation of the thread started (SPEC H5).
    ThreadCreated(FacadeData),
    /// Compaction is summarizing older messages (SPEC C1).
    CompactionStarted(FacadeData),
    /// Compaction committed a summary and moved its cursor (SPEC C1).
    Compacted(FacadeData),
    /// Compaction gave up for a step (SPEC C1).
    CompactionSkipped(FacadeData),
    /// The run ended.
    End {
        /// The run's final status.
        status: StatusName,
        /// Its outcome.
        outcome: Outcome,
        /// Why, if known.
        reason: Option<String>,
        /// The thread's version after the commit that stored the end, when
        /// the process that logged it made that commit (SPEC H1).
        version: Option<u64>,
    },
}
