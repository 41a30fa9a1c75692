//! `HookSpec`: a library hook as a `[[lifecycle]] hook = "..."` entry
//! writes it, one variant per kind: what the oracles foresee, and the
//! library's own checks of its values.

use pai_runtime::hook::Phase;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::hooks::{
    AfterStep, BaseContext, CompactionSpec, ContextMessage, Delay, Fail, Fallback, Guardrail,
    HideMessage, HistoryProbe, MessageLevel, MetadataOverlay, MutateThread, PatchMetadata, Rag,
    RecentWindow, Redact, RejectTool, ReplaceMessages, ReplaceToolInput, ReplaceToolOutput,
    ResolveTwice, RewriteListener, RewritePatchSpec, Route, RouteLevel, SetMetadata, SlowResolver,
    StreamGuard, SystemMessage, Timeout, Uppercase,
};

/// One `[[lifecycle]]` entry: the hook named by `hook = "..."` and its fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "hook", rename_all = "snake_case")]
#[schemars(transform = crate::schema::checks::by_hook)]
pub enum HookSpec {
    /// `system_message`: a model-only system message in `prepare_run` (the
    /// episode overlay) or `prepare_model_step` (one step).
    SystemMessage(SystemMessage),
    /// `route`: a sparse route patch (model, settings, tool choice) at run,
    /// step or attempt level (SPEC P5, P6).
    Route(Route),
    /// `replace_messages`: replaces the messages the phase would send, at run
    /// or step level (SPEC P4).
    ReplaceMessages(ReplaceMessages),
    /// `rag`: at each step, the `[docs]` the latest user text mentions become a
    /// model-only system message.
    Rag(Rag),
    /// `recent_window`: a `resolve_model_context` resolver keeping the last
    /// `last` messages of the downstream context.
    RecentWindow(RecentWindow),
    /// `slow_resolver`: a resolver that waits virtual milliseconds before
    /// reading the downstream context.
    SlowResolver(SlowResolver),
    /// `resolve_twice`: a resolver that calls `next()` twice and returns the
    /// second answer.
    ResolveTwice(ResolveTwice),
    /// `base_context`: a resolver that runs the inner resolvers over its own
    /// messages instead of the stored history.
    BaseContext(BaseContext),
    /// `history_probe`: a resolver that reads the history view in pages and
    /// records what it got (SPEC M1, M3).
    HistoryProbe(HistoryProbe),
    /// `fallback`: in `around_model_call`, retries with another model when the
    /// provider fails before the stream.
    Fallback(Fallback),
    /// `timeout`: in `around_model_call`, gives each provider attempt a
    /// virtual-time budget.
    Timeout(Timeout),
    /// `redact`: a canonical stream stage replacing patterns, correct for every
    /// chunking (SPEC S1, S3).
    Redact(Redact),
    /// `uppercase`: a canonical stream stage that upper-cases text (stage
    /// order, SPEC L7).
    Uppercase(Uppercase),
    /// `stream_guard`: aborts the step with a replacement when the streamed
    /// text contains a phrase (SPEC S4, S5).
    StreamGuard(StreamGuard),
    /// `reject_tool`: in `before_tool_call`, rejects every call of one tool.
    RejectTool(RejectTool),
    /// `replace_tool_input`: in `before_tool_call`, replaces or merges into one
    /// tool's input (SPEC L8).
    ReplaceToolInput(ReplaceToolInput),
    /// `replace_tool_output`: in `after_tool_result`, replaces one tool's
    /// output or removes fields from it.
    ReplaceToolOutput(ReplaceToolOutput),
    /// `after_step`: decides the step transition (next step, end the run), at
    /// every step or one.
    AfterStep(AfterStep),
    /// `guardrail`: in `prepare_run`, responds instead of running when the
    /// latest user text contains a phrase (SPEC L12).
    Guardrail(Guardrail),
    /// `fail`: fails or panics in one phase, at every step or one: how
    /// scenarios exercise hook errors.
    Fail(Fail),
    /// `delay`: waits virtual milliseconds in one phase, at every step or one.
    Delay(Delay),
    /// `set_metadata`: sets the run metadata when a run starts (SPEC T6).
    SetMetadata(SetMetadata),
    /// `patch_metadata`: updates the run metadata each time a phase runs (a
    /// counter, merged keys).
    PatchMetadata(PatchMetadata),
    /// `metadata_overlay`: shows the run metadata to the model as a model-only
    /// system message, each episode.
    MetadataOverlay(MetadataOverlay),
    /// `context_message`: stores a context-visible, transcript-hidden lifecycle
    /// message when a run starts (SPEC L13).
    ContextMessage(ContextMessage),
    /// `compaction`: the compaction helper as one resolver: summarizes old
    /// messages with a scripted summary model (SPEC C1, C2).
    Compaction(CompactionSpec),
    /// `rewrite_patch`: in `prepare_history_rewrite`, sets keys in the
    /// rewrite's own transaction, or refuses it (L11).
    RewritePatch(RewritePatchSpec),
    /// `rewrite_listener`: in `history_rewritten`, hears the rewrite's facts
    /// after a delay, then succeeds or fails.
    RewriteListener(RewriteListener),
    /// `hide_message`: after a step, hides (or shows again) a stored message
    /// from the model context.
    HideMessage(HideMessage),
    /// `mutate_thread`: after a step, sets thread and private metadata keys,
    /// expecting what it read before (SPEC H3).
    MutateThread(MutateThread),
}

/// `value` must not be empty, for the reason `why`.
fn nonempty(field: &'static str, value: &str, why: &str) -> Result<(), (&'static str, String)> {
    match value.is_empty() {
        true => Err((field, format!("must not be empty: {why}"))),
        false => Ok(()),
    }
}

/// `$body` with `$h` bound to the configuration of whichever kind `$spec`
/// is (each kind's configuration has a `name`).
macro_rules! each {
    ($spec:expr, $h:ident => $body:expr) => {
        match $spec {
            HookSpec::SystemMessage($h) => $body,
            HookSpec::Route($h) => $body,
            HookSpec::ReplaceMessages($h) => $body,
            HookSpec::Rag($h) => $body,
            HookSpec::RecentWindow($h) => $body,
            HookSpec::SlowResolver($h) => $body,
            HookSpec::ResolveTwice($h) => $body,
            HookSpec::BaseContext($h) => $body,
            HookSpec::HistoryProbe($h) => $body,
            HookSpec::Fallback($h) => $body,
            HookSpec::Timeout($h) => $body,
            HookSpec::Redact($h) => $body,
            HookSpec::Uppercase($h) => $body,
            HookSpec::StreamGuard($h) => $body,
            HookSpec::RejectTool($h) => $body,
            HookSpec::ReplaceToolInput($h) => $body,
            HookSpec::ReplaceToolOutput($h) => $body,
            HookSpec::AfterStep($h) => $body,
            HookSpec::Guardrail($h) => $body,
            HookSpec::Fail($h) => $body,
            HookSpec::Delay($h) => $body,
            HookSpec::SetMetadata($h) => $body,
            HookSpec::PatchMetadata($h) => $body,
            HookSpec::MetadataOverlay($h) => $body,
            HookSpec::ContextMessage($h) => $body,
            HookSpec::Compaction($h) => $body,
            HookSpec::RewritePatch($h) => $body,
            HookSpec::RewriteListener($h) => $body,
            HookSpec::HideMessage($h) => $body,
            HookSpec::MutateThread($h) => $body,
        }
    };
}

impl HookSpec {
    /// The hook's kind, as `hook = "..."` names it.
    pub fn kind(&self) -> &'static str {
        match self {
            HookSpec::SystemMessage(_) => "system_message",
            HookSpec::Route(_) => "route",
            HookSpec::ReplaceMessages(_) => "replace_messages",
            HookSpec::Rag(_) => "rag",
            HookSpec::RecentWindow(_) => "recent_window",
            HookSpec::SlowResolver(_) => "slow_resolver",
            HookSpec::ResolveTwice(_) => "resolve_twice",
            HookSpec::BaseContext(_) => "base_context",
            HookSpec::HistoryProbe(_) => "history_probe",
            HookSpec::Fallback(_) => "fallback",
            HookSpec::Timeout(_) => "timeout",
            HookSpec::Redact(_) => "redact",
            HookSpec::Uppercase(_) => "uppercase",
            HookSpec::StreamGuard(_) => "stream_guard",
            HookSpec::RejectTool(_) => "reject_tool",
            HookSpec::ReplaceToolInput(_) => "replace_tool_input",
            HookSpec::ReplaceToolOutput(_) => "replace_tool_output",
            HookSpec::AfterStep(_) => "after_step",
            HookSpec::Guardrail(_) => "guardrail",
            HookSpec::Fail(_) => "fail",
            HookSpec::Delay(_) => "delay",
            HookSpec::SetMetadata(_) => "set_metadata",
            HookSpec::PatchMetadata(_) => "patch_metadata",
            HookSpec::MetadataOverlay(_) => "metadata_overlay",
            HookSpec::ContextMessage(_) => "context_message",
            HookSpec::Compaction(_) => "compaction",
            HookSpec::RewritePatch(_) => "rewrite_patch",
            HookSpec::RewriteListener(_) => "rewrite_listener",
            HookSpec::HideMessage(_) => "hide_message",
            HookSpec::MutateThread(_) => "mutate_thread",
        }
    }

    /// Whether the hook reads or writes the run metadata, as the
    /// simulator's JSON map ([`super::SimMetadata`]).
    pub(crate) fn reads_json_metadata(&self) -> bool {
        matches!(
            self,
            HookSpec::SetMetadata(_) | HookSpec::PatchMetadata(_) | HookSpec::MetadataOverlay(_)
        )
    }

    /// The name the entry gives itself, if any.
    pub fn given_name(&self) -> Option<&str> {
        each!(self, h => h.name.as_deref())
    }

    /// The entry with `name` as the name it gives itself.
    pub fn named(mut self, name: Option<&str>) -> HookSpec {
        each!(&mut self, h => h.name = name.map(str::to_string));
        self
    }

    /// The entry's configuration: its fields but `hook` and `name`, as a
    /// `use = "<kind>"` entry would write them; or why it cannot be written.
    pub fn config(&self) -> Result<Map<String, Value>, String> {
        let mut config = match serde_json::to_value(self) {
            Ok(Value::Object(config)) => config,
            Ok(other) => return Err(format!("{} is written as {other}", self.kind())),
            Err(e) => return Err(e.to_string()),
        };
        config.remove("hook");
        config.remove("name");
        Ok(config)
    }

    /// A value the hook cannot use, as the field and the reason.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if self.given_name().is_some_and(|n| n.trim().is_empty()) {
            return Err((
                "name",
                "must not be empty (leave it out for a generated name)".into(),
            ));
        }
        self.check_names()?;
        self.check_counts()
    }

    /// The texts a hook matches or names (a model, a tool): none empty.
    fn check_names(&self) -> Result<(), (&'static str, String)> {
        match self {
            HookSpec::Guardrail(h) => {
                nonempty("contains", &h.contains, "it would match every message")
            }
            HookSpec::StreamGuard(h) => {
                nonempty("contains", &h.contains, "it would match every stream")
            }
            HookSpec::Fallback(h) => nonempty("to", &h.to, "it names the model to fall back to"),
            HookSpec::Route(h) => nonempty(
                "model",
                h.model.as_deref().unwrap_or("-"),
                "leave it out to keep the route's model",
            ),
            HookSpec::RejectTool(h) => nonempty(
                "tool",
                &h.tool,
                "it names the tool whose calls are rejected",
            ),
            HookSpec::ReplaceToolInput(h) => {
                nonempty("tool", &h.tool, "it names the tool whose input is replaced")
            }
            HookSpec::ReplaceToolOutput(h) => nonempty(
                "tool",
                &h.tool,
                "it names the tool whose output is replaced",
            ),
            _ => Ok(()),
        }
    }

    /// The sizes and counts a hook works with, and the keys it changes: a
    /// hook that would do nothing, or everything, is refused.
    fn check_counts(&self) -> Result<(), (&'static str, String)> {
        match self {
            HookSpec::RecentWindow(h) if h.last == 0 => Err((
                "last",
                "must be at least 1: a window of 0 sends the model nothing".into(),
            )),
            HookSpec::HistoryProbe(h) if h.page == 0 => Err((
                "page",
                "must be at least 1: pages of 0 messages read nothing".into(),
            )),
            HookSpec::Redact(h) if h.patterns.is_empty() => {
                Err(("patterns", "needs at least one pattern".into()))
            }
            HookSpec::PatchMetadata(h) if h.count.is_none() && h.set.is_empty() => Err((
                "phase",
                "patch_metadata needs count or set: it would change nothing".into(),
            )),
            HookSpec::PatchMetadata(h) => {
                nonempty("count", h.count.as_deref().unwrap_or("-"), "it names a key")
            }
            HookSpec::Compaction(h) if h.threshold == 0 => Err((
                "threshold",
                "must be at least 1: compaction would summarize every message".into(),
            )),
            HookSpec::Compaction(h) if h.keep >= h.threshold => Err((
                "keep",
                "must be below threshold: nothing would ever be summarized".into(),
            )),
            HookSpec::HideMessage(h) if h.nth == 0 => Err((
                "nth",
                "must be at least 1: stored messages count from 1".into(),
            )),
            HookSpec::MutateThread(h) if h.metadata.is_empty() && h.private.is_empty() => Err((
                "metadata",
                "needs metadata or private keys: it would change nothing".into(),
            )),
            _ => Ok(()),
        }
    }

    /// The one phase the hook handles, as the library declares it.
    pub fn phase(&self) -> Phase {
        let level = |at: MessageLevel| match at {
            MessageLevel::Run => Phase::PrepareRun,
            MessageLevel::Step => Phase::PrepareModelStep,
        };
        match self {
            HookSpec::SystemMessage(h) => level(h.at),
            HookSpec::ReplaceMessages(h) => level(h.at),
            HookSpec::Route(h) => match h.at {
                RouteLevel::Run => Phase::PrepareRun,
                RouteLevel::Step => Phase::PrepareModelStep,
                RouteLevel::Attempt => Phase::AroundModelCall,
            },
            HookSpec::Rag(_) => Phase::PrepareModelStep,
            HookSpec::RecentWindow(_)
            | HookSpec::SlowResolver(_)
            | HookSpec::ResolveTwice(_)
            | HookSpec::BaseContext(_)
            | HookSpec::HistoryProbe(_) => Phase::ResolveModelContext,
            HookSpec::Fallback(_) | HookSpec::Timeout(_) => Phase::AroundModelCall,
            HookSpec::Redact(_) | HookSpec::Uppercase(_) | HookSpec::StreamGuard(_) => {
                Phase::TransformStepStream
            }
            HookSpec::RejectTool(_) | HookSpec::ReplaceToolInput(_) => Phase::BeforeToolCall,
            HookSpec::ReplaceToolOutput(_) => Phase::AfterToolResult,
            HookSpec::AfterStep(_) => Phase::AfterStep,
            HookSpec::Guardrail(_) => Phase::PrepareRun,
            HookSpec::Fail(h) => h.phase.phase(),
            HookSpec::Delay(h) => h.phase.phase(),
            HookSpec::SetMetadata(_)
            | HookSpec::MetadataOverlay(_)
            | HookSpec::ContextMessage(_) => Phase::PrepareRun,
            HookSpec::PatchMetadata(h) => h.phase.phase(),
            HookSpec::Compaction(_) => Phase::ResolveModelContext,
            HookSpec::RewritePatch(_) => Phase::PrepareHistoryRewrite,
            HookSpec::RewriteListener(_) => Phase::HistoryRewritten,
            HookSpec::HideMessage(_) | HookSpec::MutateThread(_) => Phase::AfterStep,
        }
    }
}
