//! Runtime enums mirrored as names.

use schemars::JsonSchema;
use serde::Serialize;

use pai_runtime::{
    AfterStepDecision, FinishReason, Phase, ResultSource, Role, RunStatus, ToolStatus,
};

/// Declares a string enum mirroring a runtime enum, with an exhaustive
/// conversion.
macro_rules! names {
    ($(#[doc = $doc:literal])* $name:ident as $schema:literal from $from:ty { $($variant:ident = $runtime:path: $vdoc:literal,)* }) => {
        $(#[doc = $doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
        #[serde(rename_all = "snake_case")]
        #[schemars(rename = $schema)]
        pub enum $name {
            $(#[doc = $vdoc] $variant,)*
        }

        impl From<$from> for $name {
            fn from(v: $from) -> Self {
                match v {
                    $($runtime => $name::$variant,)*
                }
            }
        }
    };
}

names! {
    /// A lifecycle phase.
    PhaseName as "Phase" from Phase {
        PrepareRun = Phase::PrepareRun: "`prepare_run`",
        ResolveModelContext = Phase::ResolveModelContext: "`resolve_model_context`",
        PrepareModelStep = Phase::PrepareModelStep: "`prepare_model_step`",
        AroundModelCall = Phase::AroundModelCall: "`around_model_call`",
        TransformStepStream = Phase::TransformStepStream: "`transform_step_stream`",
        BeforeToolCall = Phase::BeforeToolCall: "`before_tool_call`",
        AfterToolResult = Phase::AfterToolResult: "`after_tool_result`",
        AfterStep = Phase::AfterStep: "`after_step`",
        PrepareHistoryRewrite = Phase::PrepareHistoryRewrite: "`prepare_history_rewrite`",
        HistoryRewritten = Phase::HistoryRewritten: "`history_rewritten`",
    }
}

names! {
    /// What `after_step` decided. Ordered by strength (SPEC L10).
    AfterStepName as "AfterStepDecision" from AfterStepDecision {
        Natural = AfterStepDecision::Natural: "Go on as the step would: tool results lead to another step.",
        NextStep = AfterStepDecision::NextStep: "Take another step.",
        Complete = AfterStepDecision::Complete: "End the run.",
    }
}

names! {
    /// Why the provider stopped.
    FinishName as "FinishReason" from FinishReason {
        Stop = FinishReason::Stop: "The model finished.",
        ToolCalls = FinishReason::ToolCalls: "The model called tools.",
        Length = FinishReason::Length: "The output hit its limit.",
    }
}

names! {
    /// Lifecycle status of a run.
    StatusName as "RunStatus" from RunStatus {
        Queued = RunStatus::Queued: "Waiting for its turn.",
        Running = RunStatus::Running: "Running.",
        Waiting = RunStatus::Waiting: "Waiting.",
        Completed = RunStatus::Completed: "Completed.",
        Failed = RunStatus::Failed: "Failed.",
        Cancelled = RunStatus::Cancelled: "Cancelled.",
    }
}

names! {
    /// The conversational role of a message.
    RoleName as "Role" from Role {
        System = Role::System: "System.",
        User = Role::User: "User.",
        Assistant = Role::Assistant: "Assistant.",
        Tool = Role::Tool: "Tool.",
    }
}

names! {
    /// Whether a tool call produced an output.
    StatusOfTool as "ToolStatus" from ToolStatus {
        Output = ToolStatus::Output: "The tool produced an output.",
        Error = ToolStatus::Error: "The call failed; `source` says how.",
    }
}

names! {
    /// Where a tool result came from (SPEC T3, T5).
    SourceName as "ResultSource" from ResultSource {
        Tool = ResultSource::Tool: "The tool returned normally.",
        Fail = ResultSource::Fail: "The tool failed deliberately; the model sees the value verbatim.",
        Throw = ResultSource::Throw: "The tool raised an error or panicked; the model sees a fixed message.",
        Rejected = ResultSource::Rejected: "A `before_tool_call` hook rejected the call; it never ran.",
        InvalidInput = ResultSource::InvalidInput: "The input did not match the tool's schema; it never ran.",
        UnknownTool = ResultSource::UnknownTool: "The model asked for a tool that this step does not offer.",
        Cancelled = ResultSource::Cancelled: "The run was cancelled (or completed) before the call finished or was answered (SPEC T8, A3).",
        Denied = ResultSource::Denied: "A client denied an approval call; it never ran (SPEC T7).",
        Client = ResultSource::Client: "A client tool's output, submitted by the client (SPEC T7).",
    }
}

/// Where a run was when it failed or was cancelled: a lifecycle phase, or
/// one of the runtime's own stages. Schema only: the log writes the
/// runtime's name for the stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
#[schemars(rename = "RunStage")]
pub(crate) enum StageName {
    /// Inside `prepare_run`.
    PrepareRun,
    /// Inside `resolve_model_context`.
    ResolveModelContext,
    /// Inside `prepare_model_step`.
    PrepareModelStep,
    /// Inside `around_model_call`.
    AroundModelCall,
    /// Inside `transform_step_stream`.
    TransformStepStream,
    /// Inside `before_tool_call`.
    BeforeToolCall,
    /// Inside `after_tool_result`.
    AfterToolResult,
    /// Inside `after_step`.
    AfterStep,
    /// Inside `prepare_history_rewrite`.
    PrepareHistoryRewrite,
    /// Inside `history_rewritten`.
    HistoryRewritten,
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
    #[serde(rename = "between steps")]
    BetweenSteps,
    /// At the end of an episode, before the run ended or took a steer.
    #[serde(rename = "episode end")]
    EpisodeEnd,
    /// Giving a resumed run's waiting calls their results (SPEC T7).
    Resume,
    /// Inside an `on_output` handler (SPEC T6).
    OnOutput,
    /// The step loop itself (a bug in the runtime, caught).
    Runtime,
}
