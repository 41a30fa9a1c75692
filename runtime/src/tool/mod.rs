//! Tools beyond the root's [`Tool`], [`ToolCx`],
//! [`ToolOutcome`], [`ToolError`](crate::ToolError) and
//! the constructors [`tool_fn`](crate::tool_fn),
//! [`typed_tool`](crate::typed_tool) and [`client_tool`](crate::client_tool):
//! what a model is offered ([`ToolSpec`], [`ToolKind`]), the closure tool
//! ([`FnTool`]) and the typed handle `on_output` attaches to ([`TypedTool`]).
//! `dyn_tool.rs` holds the trait and closure tools, `typed.rs` the typed ones.

pub(crate) mod dyn_tool;
pub(crate) mod typed;

pub use dyn_tool::{FnTool, ToolKind, ToolSpec};
pub use typed::TypedTool;

pub(crate) use dyn_tool::{Tool, ToolCx, ToolOutcome};
