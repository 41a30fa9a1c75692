//! Approval decided per call (SPEC T7): a tool's calls need a client's
//! approval always, never, or when a predicate on the call's input holds
//! ("bookings over 500 need approval"). The step loop asks
//! `Tool::needs_approval` once per call, on the input the call would run
//! with (after `before_tool_call` replaced it), before any tool of the step
//! starts.

use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

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
