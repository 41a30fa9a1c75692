//! Lifecycle hooks: the phases (SPEC §1), the trait with one method per
//! phase, the typed decisions (§3), composition (§2) with its two onions, and
//! single-phase hooks from closures.

mod chain;
mod compose;
mod decision;
mod facade;
mod fold;
pub(crate) mod from_fn;
mod hook;
mod input;
mod phase;
mod rewrite;

pub use compose::{Composed, compose};
pub use decision::{
    AfterStepDecision, HookNote, NoteDecision, Response, RunDecision, StepDecision,
    ToolCallDecision, ToolResultDecision,
};
pub(crate) use facade::{Progress, RunFacade, StageFn};
pub use hook::{Lifecycle, NoLifecycle};
pub(crate) use input::HookTrace;
pub use input::{
    AfterStepInput, HookCx, RunInput, StepInput, StreamInput, StreamKind, ToolCallInput,
    ToolResult, ToolResultInput,
};
pub use phase::{Phase, Phases};
pub use rewrite::{RewriteFact, RewriteInput, RewriteKind, RewritePatch};
