//! Tools beyond the root's [`Tool`], [`ToolCx`],
//! [`ToolOutcome`], [`ToolError`](crate::ToolError) and
//! the constructors [`tool_fn`](crate::tool_fn),
//! [`typed_tool`](crate::typed_tool) and [`client_tool`](crate::client_tool):
//! what a model is offered ([`ToolSpec`], [`ToolKind`]), which calls wait
//! for approval ([`NeedsApproval`], SPEC T7), the closure tool
//! ([`FnTool`]) and the typed handle `on_output` attaches to ([`TypedTool`]).
//! `dyn_tool.rs` holds the trait and closure tools, `typed.rs` the typed
//! ones, `approval.rs` the per-call approval decision.

pub(crate) mod approval;
pub(crate) mod dyn_tool;
pub(crate) mod typed;

pub use approval::NeedsApproval;
pub use dyn_tool::{FnTool, ToolKind, ToolSpec};
pub use typed::TypedTool;

pub(crate) use dyn_tool::{Tool, ToolCx, ToolOutcome};
