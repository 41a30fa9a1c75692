//! Approval decided per call (SPEC T7): a tool's calls need a client's
//! approval always, never, or when a predicate on the call's input holds
//! ("bookings over 500 need approval"). The step loop asks
//! [`Tool::needs_approval`] once per call, on the input the call would run
//! with (after `before_tool_call` replaced it), before any tool of the step
//! starts.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::dyn_tool::{Tool, ToolKind};

/// A predicate on a call's input: `true` when the call needs approval.
type Predicate = Arc<dyn Fn(&Value) -> bool + Send + Sync>;

/// Whether a call of a tool waits for a client's approval before it runs
/// (SPEC T7), decided per call. `true` and `false` convert into
/// [`Always`](NeedsApproval::Always) and [`Never`](NeedsApproval::Never).
///
/// ```
/// use pai_runtime::tool::NeedsApproval;
/// use serde_json::json;
///
/// #[derive(serde::Deserialize)]
/// struct Booking { fare: u64 }
///
/// let over_500 = NeedsApproval::when(|b: &Booking| b.fare > 500);
/// assert!(!over_500.holds(&json!({"fare": 500})));
/// assert!(over_500.holds(&json!({"fare": 501})));
/// // An input the predicate cannot read is not let through unasked.
/// assert!(over_500.holds(&json!({"fare": "lots"})));
/// ```
#[derive(Clone, Default)]
pub enum NeedsApproval {
    /// No call waits: the runtime runs each once the policy lets it through.
    #[default]
    Never,
    /// Every call waits for an approval (or a denial).
    Always,
    /// A call waits when the predicate holds on its input.
    When(Predicate),
}

impl NeedsApproval {
    /// Approval when `f` holds on the call's input read as `I`. An input
    /// that does not read as `I` needs approval: the runtime lets no call
    /// through that its policy cannot read (the tool itself will then
    /// refuse the input, if it reads the same type).
    pub fn when<I, F>(f: F) -> NeedsApproval
    where
        I: DeserializeOwned,
        F: Fn(&I) -> bool + Send + Sync + 'static,
    {
        NeedsApproval::When(Arc::new(move |input: &Value| {
            I::deserialize(input).map_or(true, |i| f(&i))
        }))
    }

    /// Approval when `f` holds on the call's input as JSON.
    pub fn when_value(f: impl Fn(&Value) -> bool + Send + Sync + 'static) -> NeedsApproval {
        NeedsApproval::When(Arc::new(f))
    }

    /// Whether a call with `input` needs approval.
    pub fn holds(&self, input: &Value) -> bool {
        match self {
            NeedsApproval::Never => false,
            NeedsApproval::Always => true,
            NeedsApproval::When(f) => f(input),
        }
    }

    /// The kind a tool with this rule reports: [`ToolKind::Approval`] when
    /// every call waits, else [`ToolKind::Backend`].
    pub fn kind(&self) -> ToolKind {
        match self {
            NeedsApproval::Always => ToolKind::Approval,
            NeedsApproval::Never | NeedsApproval::When(_) => ToolKind::Backend,
        }
    }
}

impl From<bool> for NeedsApproval {
    fn from(always: bool) -> NeedsApproval {
        match always {
            true => NeedsApproval::Always,
            false => NeedsApproval::Never,
        }
    }
}

impl fmt::Debug for NeedsApproval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NeedsApproval::Never => f.write_str("Never"),
            NeedsApproval::Always => f.write_str("Always"),
            NeedsApproval::When(_) => f.write_str("When(..)"),
        }
    }
}

/// Who takes a call of `tool` with `input` (the input it would run with):
/// the client ([`ToolKind::Client`]), a client's approval
/// ([`ToolKind::Approval`]) or the runtime ([`ToolKind::Backend`]). A
/// predicate that panics is the tool's thrown error (SPEC T5, X2): `Err`
/// with the panic's message.
pub(crate) fn call_kind(tool: &dyn Tool, input: &Value) -> Result<ToolKind, String> {
    if tool.kind() == ToolKind::Client {
        return Ok(ToolKind::Client);
    }
    match catch_unwind(AssertUnwindSafe(|| tool.needs_approval(input))) {
        Ok(true) => Ok(ToolKind::Approval),
        Ok(false) => Ok(ToolKind::Backend),
        Err(panic) => Err(crate::future::panic_message(panic.as_ref())),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{ToolError, tool_fn, typed_tool};

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
        let kind = |fare: Value| call_kind(tool.as_ref(), &json!({ "fare": fare }));
        assert_eq!(kind(json!(500)), Ok(ToolKind::Backend));
        assert_eq!(kind(json!(501)), Ok(ToolKind::Approval));
        assert_eq!(kind(json!("x")), Ok(ToolKind::Approval));
        let always = typed_tool("a", "a", true, |_cx, i: u32| async move {
            Ok::<_, ToolError>(i)
        });
        assert_eq!(always.kind(), ToolKind::Approval);
        assert_eq!(
            call_kind(always.tool().as_ref(), &json!(1)),
            Ok(ToolKind::Approval)
        );
        let plain = tool_fn("p", "p", |_cx, i: u32| async move { Ok::<_, ToolError>(i) });
        assert_eq!(call_kind(plain.as_ref(), &json!(1)), Ok(ToolKind::Backend));
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
        let out = call_kind(t.tool().as_ref(), &json!(1));
        assert!(out.is_err_and(|m| m.contains("policy bug")));
    }
}
