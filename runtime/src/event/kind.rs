//! What happened: every event kind, declared once. The declaration gives
//! the enum, its serialized shape (`{"event": NAME, "fields": {...}}`, the
//! name being the event's in the phase grammar, SPEC §1), its JSON Schema
//! (feature `schema`), and [`EventName`], the fieldless list of the names.
//! Adding an event is one entry here (then one transcript arm and one
//! grammar state in the simulator).

use crate::store::FencingToken;
use serde_json::Value;

use super::stage::RunStage;
use super::transition::Transition;
use crate::clock::Millis;
use crate::id::{CallId, MessageId, RunId};
use crate::lifecycle::{
    AfterStepDecision, HookNote, ToolCallDecision, ToolResult, ToolResultDecision,
};
use crate::message::Outcome;
use crate::model::FinishReason;
use crate::patch::Route;
use crate::store::{Answer, RunStatus, VisibilityChange};

/// Declares [`EventKind`], [`EventName`] (the same variants, without
/// fields) and the names of both, from one list of `Variant {fields} =
/// "name"`.
macro_rules! event_kinds {
    (
        $(#[doc = $enum_doc:literal])*
        pub enum EventKind {
            $(
                $(#[doc = $doc:literal])*
                $variant:ident $({ $($fields:tt)* })? $(( $($tuple:ty),* ))? = $name:literal,
            )*
        }
    ) => {
        $(#[doc = $enum_doc])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize)]
        #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
        #[serde(tag = "event", content = "fields")]
        #[cfg_attr(feature = "schema", schemars(deny_unknown_fields))]
        pub enum EventKind {
            $(
                $(#[doc = $doc])*
                #[serde(rename = $name)]
                $variant $({ $($fields)* })? $(( $($tuple),* ))?,
            )*
        }

        /// A runtime event, by its name in the phase grammar.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
        pub enum EventName {
            $(
                $(#[doc = $doc])*
                #[serde(rename = $name)]
                $variant,
            )*
        }

        impl EventName {
            /// Every event name, in declaration order.
            pub const ALL: &[EventName] = &[$(EventName::$variant,)*];

            /// The name in the phase grammar (SPEC §1).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(EventName::$variant => $name,)*
                }
            }
        }

        impl std::fmt::Display for EventName {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl EventKind {
            /// The kind's name, without its fields.
            pub fn event_name(&self) -> EventName {
                match self {
                    $(EventKind::$variant { .. } => EventName::$variant,)*
                }
            }
        }
    };
}

event_kinds! {
    /// What happened. Phase events are emitted whether or not any hook
    /// handles the phase, so the log always follows the phase grammar
    /// (SPEC §1). An event's name and its fields.
    pub enum EventKind {
        /// The run was queued behind its trigger message.
        Admitted {
            /// The id of the user message that triggered the run.
            trigger: MessageId,
        } = "admit",
        /// A steering message for this active run was stored (SPEC A4).
        Steered {
            /// The id of the steering message.
            message: MessageId,
        } = "steered",
        /// The run took its thread's lease for an episode (SPEC K2).
        LeaseAcquired {
            /// The episode, from 1.
            episode: u32,
            /// The fencing token of the lease.
            token: FencingToken,
            /// The thread's version after the claim's commit (SPEC H1).
            version: u64,
        } = "lease_acquired",
        /// The holder renewed the run's lease (SPEC K3): one commit (H1).
        LeaseRenewed {
            /// The fencing token renewed.
            token: FencingToken,
            /// The thread's version after the renewal's commit.
            version: u64,
        } = "lease_renewed",
        /// The driver lost the run's lease and stopped driving it (SPEC K2, K3).
        LeaseLost {
            /// The token it held.
            token: FencingToken,
            /// Why: a stale token refused, or the store unreachable.
            reason: String,
        } = "lease_lost",
        /// The store refused a request of the run because its thread's
        /// incarnation was deleted: from here its worker knows, cancels the
        /// run's running tools and starts no new phase (SPEC H5). Once per run.
        DeleteLearned {
            /// What the store refused: a request (`renew`, a hook's
            /// `run_metadata` read or `set_run_metadata` write, `mutate`),
            /// or the stage whose write it was.
            request: String,
            /// The deleted incarnation, when the refusal names it (a facade
            /// read that finds no thread does not).
            incarnation: Option<u64>,
        } = "delete_learned",
        /// Among workers, the store's answer to one of the run's requests
        /// told its holder that a client asked to cancel the run: from here
        /// it cancels the run's running tools (T8), starts no model call or
        /// tool and ends the run cancelled (SPEC K6). Once per run and
        /// worker; a claim that finds the cancel says so itself.
        CancelLearned {
            /// The request whose answer told it: `renew`, or what the store
            /// refused or took as the run's closing write.
            request: String,
        } = "cancel_learned",
        /// A worker took the run over from a holder whose lease expired (SPEC K3).
        TakenOver {
            /// The worker that held the lease, if known.
            from: Option<String>,
            /// The previous holder's token, now stale.
            stale_token: FencingToken,
            /// When that lease expired (virtual ms on the store's clock).
            expired_at: Millis,
            /// The run's next step: the one after its last committed step.
            next_step: u32,
        } = "taken_over",
        /// One hook's decision inside a composed lifecycle.
        Hook(HookNote) = "hook",
        /// `prepare_run` finished: the episode route, the overlay size, and the
        /// run's newest user message that `prepare_run` was given (SPEC L1).
        PrepareRun {
            /// The episode's route.
            route: Route,
            /// Model-only messages the episode overlay adds.
            overlay: usize,
            /// The text of the run's newest user message.
            latest_user: Option<MessageId>,
            /// This episode resumes a run that waited (SPEC L1, T7).
            resumed: bool,
        } = "prepare_run",
        /// `prepare_run` responded; the response was committed.
        Respond {
            /// The user message `prepare_run` judged (the run's newest, L1).
            latest_user: Option<MessageId>,
            /// The run's outcome.
            outcome: Outcome,
            /// Why, if the hook said.
            reason: Option<String>,
            /// The id of the committed message.
            message: MessageId,
            /// The thread's version after the commit.
            version: u64,
        } = "respond",
        /// The innermost resolver leaf produced messages: the stored history
        /// (`base = false`) or a base given through `next.with_base` (SPEC M2).
        ContextLeaf {
            /// The step, from 1.
            step: u32,
            /// The messages came from `next.with_base`.
            base: bool,
            /// How many messages.
            messages: usize,
        } = "context_leaf",
        /// The model context of a step was resolved.
        ResolveModelContext {
            /// The step, from 1.
            step: u32,
            /// The newest stored message the step may see (SPEC M1).
            anchor: u64,
            /// How many messages the resolvers returned.
            messages: usize,
        } = "resolve_model_context",
        /// `prepare_model_step` finished.
        PrepareModelStep {
            /// The step, from 1.
            step: u32,
            /// The step's route.
            route: Route,
            /// How many messages the step sends.
            messages: usize,
        } = "prepare_model_step",
        /// One provider attempt with its effective route.
        ModelCall {
            /// The step, from 1.
            step: u32,
            /// The attempt, from 1.
            attempt: u32,
            /// The attempt's effective route.
            route: Route,
            /// Messages from the resolver.
            context: usize,
            /// Model-only messages.
            overlay: usize,
            /// Messages in all.
            messages: usize,
            /// The tools offered.
            tools: Vec<String>,
            /// The attempt's deadline in virtual milliseconds.
            timeout_ms: Option<Millis>,
        } = "around_model_call",
        /// A provider attempt failed before its stream existed.
        AttemptFailed {
            /// The step, from 1.
            step: u32,
            /// The attempt, from 1.
            attempt: u32,
            /// The provider's error.
            error: String,
        } = "attempt_failed",
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
            finish: Option<FinishReason>,
            /// The provider failed mid-stream with this error.
            error: Option<String>,
            /// A canonical transform aborted the stream with this reason (SPEC S4).
            aborted: Option<String>,
        } = "stream",
        /// The step's assistant message was committed.
        CommitStep {
            /// The step, from 1.
            step: u32,
            /// The id of the committed message.
            message: MessageId,
            /// The thread's version after the commit.
            version: u64,
        } = "commit_step",
        /// `before_tool_call` decided a call.
        BeforeToolCall {
            /// The step, from 1.
            step: u32,
            /// The call's id.
            call_id: CallId,
            /// The tool called.
            tool: String,
            /// The joined decision.
            decision: ToolCallDecision,
        } = "before_tool_call",
        /// A tool started.
        ToolStart {
            /// The step, from 1.
            step: u32,
            /// The call's id.
            call_id: CallId,
            /// The tool.
            tool: String,
            /// The input it was given.
            input: Value,
            /// The call's idempotency key: run id + call id (SPEC K5).
            idempotency_key: String,
        } = "tool_start",
        /// An `on_output` handler ran over a successful output (SPEC T6).
        OnOutput {
            /// The step, from 1.
            step: u32,
            /// The call's id.
            call_id: CallId,
            /// The tool.
            tool: String,
            /// The call's input the handler received.
            input: Value,
            /// Whether the handlers changed the run metadata. The change is
            /// staged and commits with the step's results (SPEC K5).
            changed: bool,
        } = "on_output",
        /// A hook wrote the run's metadata through its facade.
        RunMetadata {
            /// The thread's version after the commit; `None` when the write
            /// was made while tool results were produced (`after_tool_result`):
            /// it is staged and commits with those results (SPEC K5).
            version: Option<u64>,
        } = "run_metadata",
        /// A hook stored a hidden lifecycle context message (SPEC L13).
        ContextMessage {
            /// The id of the stored message.
            message: MessageId,
            /// The thread's version after the commit.
            version: u64,
        } = "context_message",
        /// The run waits for a client to answer these calls (SPEC T7); the
        /// episode ends and the lease is released.
        Waiting {
            /// The ids of the calls waited on.
            calls: Vec<CallId>,
            /// The thread's version after the wait's commit (SPEC H1).
            version: u64,
        } = "wait",
        /// The step's client and approval calls are answerable while its
        /// backend tools run (SPEC T9): one commit.
        Awaiting {
            /// The ids of the answerable calls.
            calls: Vec<CallId>,
            /// The thread's version after the commit.
            version: u64,
        } = "awaiting",
        /// A client asked to cancel this running or waiting run (SPEC K6):
        /// one commit.
        CancelRequested {
            /// The thread's version after the cancel's commit.
            version: u64,
        } = "cancel_requested",
        /// A client answered a waiting call (SPEC T9).
        Answered {
            /// The call's id.
            call_id: CallId,
            /// The answer.
            answer: Answer,
            /// The thread's version after the answer's commit.
            version: u64,
        } = "answer",
        /// A tool finished; `detail` carries a thrown error's text (logs only, SPEC T5).
        ToolEnd {
            /// The step, from 1.
            step: u32,
            /// The result.
            result: ToolResult,
            /// A thrown error's text.
            detail: Option<String>,
        } = "tool_end",
        /// `after_tool_result` decided a result.
        AfterToolResult {
            /// The step, from 1.
            step: u32,
            /// The call's id.
            call_id: CallId,
            /// The joined decision.
            decision: ToolResultDecision,
        } = "after_tool_result",
        /// The step's tool results were committed.
        CommitToolResults {
            /// The step, from 1.
            step: u32,
            /// The id of the committed message.
            message: MessageId,
            /// The thread's version after the commit.
            version: u64,
            /// Whether the commit also replaced the run's metadata with what
            /// `on_output` handlers and `after_tool_result` hooks wrote while
            /// these results were produced (SPEC K5).
            metadata: bool,
        } = "commit_tool_results",
        /// `after_step` decided the transition.
        AfterStep {
            /// The step, from 1.
            step: u32,
            /// The joined decision.
            decision: AfterStepDecision,
            /// What comes next.
            transition: Transition,
        } = "after_step",
        /// The run was cancelled while in `phase`; only the lease release and the end follow.
        Cancelled {
            /// Where the run was.
            phase: RunStage,
        } = "cancelled",
        /// The run failed inside `phase`; only the lease release and the end follow.
        Failed {
            /// Where the run was.
            phase: RunStage,
            /// The failure.
            message: String,
        } = "failed",
        /// The run released its lease.
        LeaseReleased {
            /// The episode, from 1.
            episode: u32,
        } = "lease_released",
        /// A mutation committed as one change (SPEC H2): by the run (`run`
        /// names it) or by trusted code (`run` empty).
        Mutated {
            /// The thread's version after it.
            version: u64,
            /// Ids of the messages it appended.
            appended: Vec<MessageId>,
            /// Client-readable metadata keys it set or removed.
            metadata: Vec<String>,
            /// Private metadata keys it set or removed (names only: values
            /// never leave the server side, H4).
            private: Vec<String>,
            /// Visibility changes (a rewrite, R1).
            visibility: Vec<VisibilityChange>,
        } = "mutated",
        /// A mutation or rewrite committed nothing (SPEC H3, K4): its
        /// expectation failed, an active run refused it, it named a missing
        /// message, or a hook refused it.
        MutationRefused {
            /// `mutate`, `regenerate` or `set_visibility`.
            op: &'static str,
            /// Why.
            reason: String,
            /// A conflict the caller can retry on (H3).
            conflict: bool,
        } = "mutation_refused",
        /// A history rewrite committed (SPEC R1, R2): regeneration or visibility.
        HistoryRewritten {
            /// The thread's version after it.
            version: u64,
            /// `regenerate` or `visibility`.
            kind: &'static str,
            /// Messages it removed (a regeneration).
            removed: Vec<MessageId>,
            /// Metadata keys its `prepare_history_rewrite` patches wrote.
            patched: Vec<String>,
            /// The run a regeneration started.
            started: Option<RunId>,
        } = "history_rewritten",
        /// `history_rewritten` hooks heard rewrite facts (SPEC R3), in one
        /// call.
        RewriteDelivered {
            /// The versions of the rewrites delivered in this one call.
            versions: Vec<u64>,
            /// A hook's failure (dropped: best effort).
            error: Option<String>,
        } = "rewrite_delivered",
        /// A trusted writer read the thread through its facade (SPEC H3, H5):
        /// the version and incarnation an expectation it builds is read from.
        ThreadRead {
            /// The thread's version it read.
            version: u64,
            /// The incarnation it read.
            incarnation: u64,
            /// How many messages it read.
            messages: usize,
        } = "read_thread",
        /// The thread's incarnation was deleted (SPEC H5).
        ThreadDeleted {
            /// The incarnation deleted.
            incarnation: u64,
            /// Runs cancelled with it.
            cancelled: Vec<RunId>,
        } = "thread_deleted",
        /// An incarnation of the thread started (SPEC H5).
        ThreadCreated {
            /// The incarnation started.
            incarnation: u64,
        } = "thread_created",
        /// Compaction is summarizing older messages (SPEC C1).
        CompactionStarted {
            /// The step, from 1.
            step: u32,
            /// The sequence number it summarizes up to, inclusive.
            through: u64,
            /// How many messages it summarizes.
            messages: usize,
        } = "compaction_started",
        /// Compaction committed a summary and moved its cursor (SPEC C1).
        Compacted {
            /// The step, from 1.
            step: u32,
            /// The id of the summary record.
            summary: MessageId,
            /// The sequence number the cursor moved to.
            through: u64,
            /// The thread's version after the commit.
            version: u64,
        } = "compacted",
        /// Compaction gave up for a step (SPEC C1): a conflict, or the summary
        /// model failed; the step's context is built from the stored cursor.
        CompactionSkipped {
            /// The step, from 1.
            step: u32,
            /// Why.
            reason: String,
        } = "compaction_skipped",
        /// The run ended.
        Ended {
            /// The run's final status.
            status: RunStatus,
            /// Its outcome.
            outcome: Outcome,
            /// Why, if known.
            reason: Option<String>,
            /// The thread's version after the commit that stored the end, when
            /// the process that logged it made that commit (SPEC H1).
            version: Option<u64>,
        } = "end",
    }
}

impl EventKind {
    /// The event's name in the phase grammar.
    pub fn name(&self) -> &'static str {
        self.event_name().as_str()
    }
}
