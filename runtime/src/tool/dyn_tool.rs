//! Tools: serde-typed input and output behind a dynamic trait. A tool is a
//! backend tool (the runtime runs it), an approval tool (it runs once a
//! client approves the call) or a client tool (the client runs it and
//! submits the output) (SPEC T7).

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::approval::NeedsApproval;
use crate::future::HookFuture;
use crate::id::{CallId, RunId};

/// What the model is told about a tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    /// The tool's name, as model tool calls and routes name it.
    pub name: String,
    /// What the tool does, as the model is told.
    pub description: String,
}

/// Who executes a tool's calls (SPEC T7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// The runtime runs the call as soon as the policy lets it through.
    Backend,
    /// The runtime runs the call once a client approves it; the run waits.
    /// A backend tool may also ask for approval call by call
    /// ([`Tool::needs_approval`]); its waiting calls are of this kind.
    Approval,
    /// The client runs the call and submits its output; the run waits.
    Client,
}

impl ToolKind {
    /// The kind's name in the event log and the store (`backend`, `approval`,
    /// `client`).
    pub fn as_str(self) -> &'static str {
        match self {
            ToolKind::Backend => "backend",
            ToolKind::Approval => "approval",
            ToolKind::Client => "client",
        }
    }
}

/// What a running tool knows about its call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCx {
    /// The run the call belongs to.
    pub run_id: RunId,
    /// The call's id, as the model's stream gave it.
    pub call_id: CallId,
    /// Run id + call id: the same on every attempt of this call (SPEC K5).
    pub idempotency_key: String,
}

/// How a tool call ended.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutcome {
    /// The tool's output; the model sees it as the result.
    Output(Value),
    /// A deliberate failure; the model sees the value verbatim (SPEC T5).
    Fail(Value),
    /// An error; the model sees only a fixed message, the detail goes to logs.
    Throw(String),
    /// The input did not match the tool's input type (SPEC X2).
    InvalidInput(String),
}

/// The error half of a typed tool's result.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolError {
    /// A deliberate failure; the model sees the value verbatim (SPEC T5).
    Fail(Value),
    /// An error; the model sees only a fixed message, the detail goes to logs
    /// (SPEC T5).
    Throw(String),
}

/// A tool the model can call.
pub trait Tool: Send + Sync + 'static {
    /// The tool's name and description, as the model is told.
    fn spec(&self) -> &ToolSpec;

    /// Who executes this tool's calls; backend by default.
    fn kind(&self) -> ToolKind {
        ToolKind::Backend
    }

    /// Whether this call, with `input` (the input it would run with, after
    /// `before_tool_call`), waits for a client's approval before it runs
    /// (SPEC T7): decided per call. By default every call of an
    /// [`ToolKind::Approval`] tool waits and no other does; a backend tool
    /// may ask for some calls only (see
    /// [`NeedsApproval`](crate::tool::NeedsApproval)). Never asked for a
    /// client tool. It must not block; a panic is the call's thrown error.
    fn needs_approval(&self, input: &Value) -> bool {
        let _ = input;
        self.kind() == ToolKind::Approval
    }

    /// Runs one call (never called for a client tool).
    fn call(&self, cx: ToolCx, input: Value) -> HookFuture<'_, ToolOutcome>;

    /// Checks an output a client submitted for a call of this tool against
    /// the tool's output type; an error says what does not match.
    fn check_output(&self, output: &Value) -> Result<(), String> {
        let _ = output;
        Ok(())
    }
}

/// A tool built from an async function over typed input and output.
pub struct FnTool<I, O, F> {
    spec: ToolSpec,
    approval: NeedsApproval,
    f: F,
    _types: PhantomData<fn(I) -> O>,
}

impl<I, O, F> fmt::Debug for FnTool<I, O, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnTool").field("spec", &self.spec).finish()
    }
}

/// Builds a tool from `f(cx, input) -> Result<output, ToolError>`; input that
/// does not deserialize into `I` becomes a typed invalid-input result.
pub fn tool_fn<I, O, F, Fut>(name: &str, description: &str, f: F) -> Arc<dyn Tool>
where
    I: DeserializeOwned + Send + 'static,
    O: Serialize + Send + 'static,
    F: Fn(ToolCx, I) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
{
    Arc::new(FnTool::new(name, description, f))
}

impl<I, O, F> FnTool<I, O, F> {
    pub(crate) fn new(name: &str, description: &str, f: F) -> Self {
        FnTool {
            spec: ToolSpec {
                name: name.to_string(),
                description: description.to_string(),
            },
            approval: NeedsApproval::Never,
            f,
            _types: PhantomData,
        }
    }

    /// The same tool, its calls waiting for a client's approval as
    /// `approval` says, call by call (SPEC T7).
    pub(crate) fn with_approval(mut self, approval: NeedsApproval) -> Self {
        self.approval = approval;
        self
    }
}

impl<I, O, F, Fut> Tool for FnTool<I, O, F>
where
    I: DeserializeOwned + Send + 'static,
    O: Serialize + Send + 'static,
    F: Fn(ToolCx, I) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
{
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn kind(&self) -> ToolKind {
        match self.approval {
            NeedsApproval::Always => ToolKind::Approval,
            NeedsApproval::Never | NeedsApproval::When(_) => ToolKind::Backend,
        }
    }

    fn needs_approval(&self, input: &Value) -> bool {
        self.approval.holds(input)
    }

    fn call(&self, cx: ToolCx, input: Value) -> HookFuture<'_, ToolOutcome> {
        let input: I = match serde_json::from_value(input) {
            Ok(i) => i,
            Err(e) => return HookFuture::ready(ToolOutcome::InvalidInput(e.to_string())),
        };
        let fut = (self.f)(cx, input);
        HookFuture::new(async move {
            match fut.await {
                Ok(out) => match serde_json::to_value(out) {
                    Ok(v) => ToolOutcome::Output(v),
                    Err(e) => ToolOutcome::Throw(format!("output did not serialize: {e}")),
                },
                Err(ToolError::Fail(v)) => ToolOutcome::Fail(v),
                Err(ToolError::Throw(m)) => ToolOutcome::Throw(m),
            }
        })
    }
}

/// Who takes a call of `tool` with `input` (the input it would run with):
/// the client ([`ToolKind::Client`]), a client's approval
/// ([`ToolKind::Approval`]) or the runtime ([`ToolKind::Backend`]),
/// decided per call (SPEC T7). A predicate that panics is the tool's
/// thrown error (SPEC T5, X2): `Err` with the panic's message.
pub(crate) fn call_kind(tool: &dyn Tool, input: &Value) -> Result<ToolKind, String> {
    if tool.kind() == ToolKind::Client {
        return Ok(ToolKind::Client);
    }
    let asked =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tool.needs_approval(input)));
    match asked {
        Ok(true) => Ok(ToolKind::Approval),
        Ok(false) => Ok(ToolKind::Backend),
        Err(panic) => Err(crate::future::panic_message(panic.as_ref())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::typed_tool;

    #[derive(serde::Deserialize)]
    struct Booking {
        fare: u64,
    }

    /// SPEC T7: the decision is per call, on the call's input.
    #[test]
    fn t7_approval_is_decided_per_call() {
        let book = typed_tool(
            "book",
            "books",
            NeedsApproval::when(|b: &Booking| b.fare > 500),
            |_cx, b: Booking| async move { Ok::<_, ToolError>(b.fare) },
        );
        let tool = book.tool();
        assert_eq!(tool.kind(), ToolKind::Backend);
        let kind = |fare: Value| call_kind(tool.as_ref(), &serde_json::json!({ "fare": fare }));
        assert_eq!(kind(Value::from(500)), Ok(ToolKind::Backend));
        assert_eq!(kind(Value::from(501)), Ok(ToolKind::Approval));
        assert_eq!(kind(Value::from("x")), Ok(ToolKind::Approval));
        let always = typed_tool("a", "a", true, |_cx, i: u32| async move {
            Ok::<_, ToolError>(i)
        });
        assert_eq!(always.kind(), ToolKind::Approval);
        let one = Value::from(1);
        assert_eq!(
            call_kind(always.tool().as_ref(), &one),
            Ok(ToolKind::Approval)
        );
        let plain = tool_fn("p", "p", |_cx, i: u32| async move { Ok::<_, ToolError>(i) });
        assert_eq!(call_kind(plain.as_ref(), &one), Ok(ToolKind::Backend));
    }

    /// SPEC X2, T5: a predicate that panics is the tool's thrown error,
    /// never an unwind into the runtime.
    #[test]
    fn t7_a_panicking_predicate_is_caught() {
        let t = typed_tool(
            "p",
            "p",
            NeedsApproval::when_value(|_| panic!("policy bug")),
            |_cx, i: u32| async move { Ok::<_, ToolError>(i) },
        );
        let out = call_kind(t.tool().as_ref(), &Value::from(1));
        assert!(out.is_err_and(|m| m.contains("policy bug")));
    }

    #[derive(serde::Deserialize)]
    struct Add {
        a: i64,
        b: i64,
    }

    fn cx() -> ToolCx {
        ToolCx {
            run_id: "r".into(),
            call_id: "c".into(),
            idempotency_key: "r/c".into(),
        }
    }

    #[tokio::test]
    async fn typed_input_and_output() {
        let t = tool_fn("add", "adds", |_cx, i: Add| async move {
            Ok::<_, ToolError>(i.a + i.b)
        });
        let out = t.call(cx(), serde_json::json!({"a": 2, "b": 3})).await;
        assert_eq!(out, ToolOutcome::Output(Value::from(5)));
        let bad = t.call(cx(), serde_json::json!({"a": "x"})).await;
        assert!(matches!(bad, ToolOutcome::InvalidInput(m) if m.contains("invalid type")));
    }
}
