//! The model seam: a streaming language model behind a trait.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};

use serde::Serialize;
use serde_json::Value;

use crate::delta::Delta;
use crate::future::HookFuture;
use crate::id::{CallId, RunId};
use crate::message::ModelMessage;
use crate::patch::Route;
use crate::tool::ToolSpec;

/// Everything one provider attempt receives.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// The run the attempt is for (empty outside a run).
    pub run_id: RunId,
    /// The step within the run, from 0.
    pub step: u32,
    /// Which provider attempt of the step this is within its episode's
    /// `around_model_call`, from 1 (a retry or a fallback is 2, 3, ...).
    /// A step the run makes again after a takeover (SPEC K3) counts its
    /// attempts from 1 again, so `(run_id, step, attempt)` names the same
    /// call both times: a provider (or a test double) that must answer a
    /// repeated call as it answered the first can key on it.
    pub attempt: u32,
    /// The route after every patch: the model name, its settings, tool choice
    /// and provider options.
    pub route: Route,
    /// The agent's instructions (its system prompt); the provider decides where
    /// they go in its request.
    pub instructions: String,
    /// Registered tools offered to the model in this step.
    pub tools: Vec<ToolSpec>,
    /// The messages to send, as resolved and patched for this step and attempt
    /// (SPEC P4).
    pub messages: Vec<ModelMessage>,
    /// The attempt's timeout, set by `around_model_call` patches.
    pub timeout_ms: Option<crate::clock::Millis>,
    /// Every registered tool, so an attempt patch that names `tools` can
    /// offer a different selection (P3, P6).
    pub(crate) registered: std::sync::Arc<[ToolSpec]>,
}

impl ModelRequest {
    /// A request outside a run, for calling a model directly (a provider's
    /// own tests, a one-off completion): no run id, step 0, attempt 1,
    /// `tools` both offered and registered, no attempt timeout.
    pub fn new(
        route: Route,
        instructions: impl Into<String>,
        messages: Vec<ModelMessage>,
        tools: Vec<ToolSpec>,
    ) -> ModelRequest {
        ModelRequest {
            run_id: RunId::default(),
            step: 0,
            attempt: 1,
            route,
            instructions: instructions.into(),
            registered: tools.clone().into(),
            tools,
            messages,
            timeout_ms: None,
        }
    }
}

/// Why the provider stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The model finished.
    Stop,
    /// The model called tools.
    ToolCalls,
    /// The output hit its limit.
    Length,
    /// The model declined to answer (SPEC S6): Anthropic's `refusal` stop
    /// reason, OpenAI's `refusal` text. The run ends `blocked`; the
    /// provider's words come before this finish as
    /// [`StreamPart::Refusal`] parts.
    Refusal,
    /// The provider's content filter withheld the answer (SPEC S6): OpenAI's
    /// `content_filter`. The run ends `blocked`, as for a refusal.
    ContentFilter,
}

impl FinishReason {
    /// The reason's name in the event log (`stop`, `tool_calls`, `length`,
    /// `refusal`, `content_filter`).
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::Length => "length",
            FinishReason::Refusal => "refusal",
            FinishReason::ContentFilter => "content_filter",
        }
    }

    /// The kind of refusal this finish is, if it is one.
    pub fn refusal(self) -> Option<RefusalKind> {
        match self {
            FinishReason::Refusal => Some(RefusalKind::Refusal),
            FinishReason::ContentFilter => Some(RefusalKind::ContentFilter),
            FinishReason::Stop | FinishReason::ToolCalls | FinishReason::Length => None,
        }
    }
}

/// How a provider declined to answer (SPEC S6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RefusalKind {
    /// The model refused.
    Refusal,
    /// The provider's content filter withheld the answer.
    ContentFilter,
}

impl RefusalKind {
    /// Its name (`refusal`, `content_filter`), as the run's reason starts.
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalKind::Refusal => "refusal",
            RefusalKind::ContentFilter => "content_filter",
        }
    }
}

/// A provider's refusal of one step (SPEC S6), as `after_step` sees it and
/// the run's reason says it: an outcome of its own (the run ends
/// `blocked`), never an empty success.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Refusal {
    /// A refusal or a content filter.
    pub kind: RefusalKind,
    /// The provider's own words, through the canonical transforms (S1: they
    /// are stored as the run's reason); empty when it gave none.
    pub explanation: String,
}

impl Refusal {
    /// The refusal a run's reason says (`reason` as [`Refusal::reason`]
    /// wrote it), if it says one: how a worker that takes a run over
    /// reads a refused step its holder stored (K3).
    pub fn from_reason(reason: &str) -> Option<Refusal> {
        [RefusalKind::Refusal, RefusalKind::ContentFilter]
            .into_iter()
            .find_map(|kind| {
                let rest = reason.strip_prefix(kind.as_str())?;
                let explanation = match rest {
                    "" => "",
                    _ => rest.strip_prefix(": ")?,
                };
                Some(Refusal {
                    kind,
                    explanation: explanation.to_string(),
                })
            })
    }

    /// The run's reason: the kind, then the provider's words when there
    /// are any (`refusal: I can't help with that.`).
    pub fn reason(&self) -> String {
        match self.explanation.is_empty() {
            true => self.kind.as_str().to_string(),
            false => format!("{}: {}", self.kind.as_str(), self.explanation),
        }
    }
}

/// One item of a provider stream. As small as a text delta: a stream is
/// mostly deltas, and a tool call, rare, is boxed.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamPart {
    /// Text, inline when short (see [`Delta`]).
    TextDelta(Delta),
    /// A tool call (build one with [`StreamPart::tool_call`]).
    ToolCall(Box<StreamedCall>),
    /// The provider finished, for this reason; nothing follows.
    Finish(FinishReason),
    /// The provider failed after the stream started (build one with
    /// [`StreamPart::error`]).
    Error(Box<str>),
    /// A piece of the provider's explanation of a refusal (SPEC S6), in the
    /// order it streamed; the pieces join into one text. Not part of the
    /// assistant's text: the stream ends with a refusal
    /// [`FinishReason`], and the run ends `blocked` with these words.
    Refusal(Box<str>),
    /// The text part being streamed ends here: the next text delta starts a
    /// new text part (SPEC S6: a response's several output items are kept
    /// apart, not glued into one text).
    TextEnd,
}

/// A tool call a provider streamed.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamedCall {
    /// The call's id, as the provider gave it; the tool result carries it
    /// back.
    pub call_id: CallId,
    /// The name of the tool called.
    pub tool: String,
    /// The call's input, as the model wrote it; a tool whose input type it
    /// does not fit answers with an invalid-input result (SPEC X2).
    pub input: Value,
}

impl StreamPart {
    /// A provider failure after the stream started.
    pub fn error(message: impl Into<String>) -> StreamPart {
        StreamPart::Error(message.into().into_boxed_str())
    }

    /// A piece of a refusal's explanation.
    pub fn refusal(text: impl Into<String>) -> StreamPart {
        StreamPart::Refusal(text.into().into_boxed_str())
    }

    /// A text delta.
    pub fn text(text: impl Into<Delta>) -> StreamPart {
        StreamPart::TextDelta(text.into())
    }

    /// A tool call.
    pub fn tool_call(
        call_id: impl Into<CallId>,
        tool: impl Into<String>,
        input: Value,
    ) -> StreamPart {
        StreamPart::ToolCall(Box::new(StreamedCall {
            call_id: call_id.into(),
            tool: tool.into(),
            input,
        }))
    }
}

/// A provider stream, polled by the step loop.
pub trait PartStream: Send {
    /// The next part: `Ready(Some(part))`, `Ready(None)` at the end, or
    /// `Pending` until one is ready (as a `Stream` would).
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<StreamPart>>;

    /// Hands `sink` the parts that are ready, in order, until the sink asks
    /// to stop (`Ready(false)`), the stream ends (`Ready(true)`) or no part
    /// is ready (`Pending`, as from `poll_next`). The default polls
    /// `poll_next`; a stream whose parts are at hand can give them in one
    /// call.
    fn poll_ready_parts(&mut self, cx: &mut Context<'_>, sink: &mut dyn PartSink) -> Poll<bool> {
        loop {
            match self.poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => return Poll::Ready(true),
                Poll::Ready(Some(part)) => {
                    if !sink.part(part) {
                        return Poll::Ready(false);
                    }
                }
            }
        }
    }
}

/// What takes a stream's ready parts (`PartStream::poll_ready_parts`).
pub trait PartSink {
    /// One part; `false`: take no more now.
    fn part(&mut self, part: StreamPart) -> bool;
}

/// A stream over parts that are all already known.
#[derive(Debug)]
pub struct ReadyStream(std::vec::IntoIter<StreamPart>);

impl ReadyStream {
    /// A stream that gives `parts`, in order, every one at once.
    pub fn new(parts: Vec<StreamPart>) -> ReadyStream {
        ReadyStream(parts.into_iter())
    }
}

impl PartStream for ReadyStream {
    fn poll_next(&mut self, _: &mut Context<'_>) -> Poll<Option<StreamPart>> {
        Poll::Ready(self.0.next())
    }

    fn poll_ready_parts(&mut self, _: &mut Context<'_>, sink: &mut dyn PartSink) -> Poll<bool> {
        for part in self.0.by_ref() {
            if !sink.part(part) {
                return Poll::Ready(false);
            }
        }
        Poll::Ready(true)
    }
}

/// A provider failure before the stream exists.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// No model is registered under the route's model name.
    #[error("model {0} is not registered")]
    UnknownModel(String),
    /// The provider could not start the stream; the text says why (a
    /// `fallback` hook may retry with another model).
    #[error("provider error: {0}")]
    Provider(String),
    /// An HTTP provider failed the attempt before its stream existed, and
    /// said how: the status when it answered with an error one, and whether
    /// the same request may succeed if tried again (no connection, 408,
    /// 409, 429, 5xx), so a retry hook can tell a 429 from a 400.
    #[error("provider error: {}{message}", status.map(|s| format!("HTTP {s}: ")).unwrap_or_default())]
    Http {
        /// The response's status, if one came.
        status: Option<u16>,
        /// Whether trying the same request again may succeed.
        retryable: bool,
        /// The provider's message (its JSON error's), or what failed.
        message: String,
    },
    /// The attempt ran past its timeout, in milliseconds (set by an
    /// `around_model_call` patch).
    #[error("model attempt timed out after {0}ms")]
    Timeout(crate::clock::Millis),
    /// The run was stopped; stop wins over everything an attempt does.
    #[error("the run was stopped")]
    Stopped,
    /// A hook inside the `around_model_call` onion failed; the run fails too.
    #[error("hook failed: {0}")]
    Hook(String),
}

impl ModelError {
    /// An HTTP failure with `status`, retryable as HTTP says: 408, 409,
    /// 429 and 5xx.
    pub fn http(status: u16, message: impl Into<String>) -> ModelError {
        ModelError::Http {
            status: Some(status),
            retryable: matches!(status, 408 | 409 | 429 | 500..=599),
            message: message.into(),
        }
    }

    /// The provider's HTTP status, when it answered with an error one.
    pub fn status(&self) -> Option<u16> {
        match self {
            ModelError::Http { status, .. } => *status,
            _ => None,
        }
    }

    /// Whether trying the same attempt again may succeed: an HTTP failure
    /// the provider marked so, or a timeout. A hint for a retry hook.
    pub fn retryable(&self) -> bool {
        match self {
            ModelError::Http { retryable, .. } => *retryable,
            ModelError::Timeout(_) => true,
            _ => false,
        }
    }
}

/// A provider stream. It owns what it needs: it outlives the request that made it.
pub type BoxStream = Box<dyn PartStream>;

/// A streaming language model.
pub trait LanguageModel: Send + Sync + 'static {
    /// Starts one attempt; resolves once the provider stream exists.
    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> HookFuture<'a, Result<BoxStream, ModelError>>;
}

/// The registered tools a route offers (all of them unless it names some).
pub(crate) fn offered(registered: &[ToolSpec], route: &Route) -> Vec<ToolSpec> {
    registered
        .iter()
        .filter(|t| {
            route
                .tools
                .as_ref()
                .is_none_or(|names| names.contains(&t.name))
        })
        .cloned()
        .collect()
}

/// Resolves a route's model name to a model.
pub trait ModelProvider: Send + Sync + 'static {
    /// The model registered under `name`, if any.
    fn model(&self, name: &str) -> Option<&dyn LanguageModel>;
}

/// A provider backed by a name → model map.
#[derive(Default, Clone)]
pub struct ModelMap(BTreeMap<String, Arc<dyn LanguageModel>>);

impl ModelMap {
    /// An empty map.
    pub fn new() -> ModelMap {
        ModelMap::default()
    }

    /// This map with `model` registered under `name` (replacing one of that
    /// name).
    pub fn with(mut self, name: impl Into<String>, model: Arc<dyn LanguageModel>) -> ModelMap {
        self.0.insert(name.into(), model);
        self
    }
}

impl fmt::Debug for ModelMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.keys()).finish()
    }
}

impl ModelProvider for ModelMap {
    fn model(&self, name: &str) -> Option<&dyn LanguageModel> {
        self.0.get(name).map(|m| &**m)
    }
}

// A stream is mostly text deltas: a part is no bigger than one.
const _: () = assert!(std::mem::size_of::<StreamPart>() <= 24);

#[cfg(test)]
mod tests {
    use super::*;

    /// SPEC S6, K3: a refusal's reason reads back as the refusal; a reason
    /// that is not one reads back as none.
    #[test]
    fn a_refusal_reads_back_from_its_reason() {
        for kind in [RefusalKind::Refusal, RefusalKind::ContentFilter] {
            for explanation in ["", "I can't help with that."] {
                let r = Refusal {
                    kind,
                    explanation: explanation.into(),
                };
                assert_eq!(Refusal::from_reason(&r.reason()), Some(r));
            }
        }
        for other in [
            "refusals",
            "max_steps",
            "content_filtered: x",
            "refusal:x",
            "",
        ] {
            assert_eq!(Refusal::from_reason(other), None, "{other}");
        }
    }
}
