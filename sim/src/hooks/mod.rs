//! The built-in hook library. Each `[[lifecycle]]` entry of a scenario is one
//! hook; each hook lives in its own file with its configuration (the part of
//! the scenario format it owns) and handles exactly one phase. Each
//! configuration is a [`UserHook`], registered in every
//! [`crate::Registry`] under its `hook` name (`library.rs`) by the function
//! a harness registers its own hooks with; [`HookSpec`] is the typed view
//! the oracles foresee the library's hooks by.

mod after_step;
mod base_context;
mod build_context;
mod compaction;
mod delay;
mod fail;
mod fallback;
mod guardrail;
mod hide_message;
mod history_probe;
mod in_context;
mod library;
mod metadata;
mod mutate_thread;
mod rag;
mod recent_window;
mod redact;
mod reject_tool;
mod replace_messages;
mod replace_tool_input;
mod replace_tool_output;
mod resolve_twice;
mod rewrite;
mod route;
mod shared;
mod slow_resolver;
mod spec;
mod stages;
mod stream_guard;
mod system_message;
mod timeout;
mod uppercase;
mod user;

pub use after_step::{AfterStep, AfterStepSpec};
pub use base_context::BaseContext;
pub use build_context::{BuildContext, SummaryCall, SummaryLog};
pub use compaction::CompactionSpec;
pub use delay::Delay;
pub use fail::{Fail, PhaseName};
pub use fallback::Fallback;
pub use guardrail::Guardrail;
pub use hide_message::HideMessage;
pub use history_probe::HistoryProbe;
pub(crate) use library::{Kinds, register as register_library};
pub use metadata::{ContextMessage, MetadataOverlay, MetadataPhase, PatchMetadata, SetMetadata};
pub use mutate_thread::{ExpectSpec, MutateThread};
pub use rag::Rag;
pub use recent_window::RecentWindow;
pub use redact::Redact;
pub use reject_tool::RejectTool;
pub use replace_messages::ReplaceMessages;
pub use replace_tool_input::ReplaceToolInput;
pub use replace_tool_output::ReplaceToolOutput;
pub use resolve_twice::ResolveTwice;
pub use rewrite::{RewriteListener, RewritePatchSpec};
pub use route::{Route, RouteLevel};
pub use shared::{HistoryRead, MessageRole, MessageSpec, SimContext, SimHook, SimMetadata};
pub use slow_resolver::SlowResolver;
pub use spec::HookSpec;
pub(crate) use stages::live_stages;
pub use stages::{RedactPattern, TransformSpec};
pub use stream_guard::StreamGuard;
pub use system_message::{MessageLevel, SystemMessage};
pub use timeout::Timeout;
pub use uppercase::Uppercase;
pub(crate) use user::{Factory, Maker, Typed};
pub use user::{UserHook, UserHookDef};
