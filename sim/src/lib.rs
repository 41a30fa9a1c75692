//! pai-sim: runs scenario files against pai-runtime deterministically, checks
//! invariant oracles on every run, and renders transcripts for snapshots.
//!
//! The path from file to snapshot: [`Scenario::load`] → [`simulate`] (seeded
//! rng, virtual clock, scripted model and tools, the built-in hook library) →
//! [`Report`] (transcript + oracle violations) → [`snapshot`] files.

mod hooks;
mod oracle;
mod run;
mod scenario;
pub mod snapshot;
mod suite;
mod transcript;
mod world;

pub use hooks::{PLANTED_PANIC, SimContext, quiet_planted_panics};
pub use oracle::{ORACLES, Violation};
pub use run::{Report, SimError, VIRTUAL_TIME_LIMIT_MS, check, replay_command, simulate, verdict};
pub use scenario::{
    Action, AfterStepSpec, AgentSpec, Expect, FaultSpec, HookLevel, HookSpec, MessageRole,
    MessageSpec, ModelSpec, PhaseName, RequestExpect, Scenario, ScenarioError, TimelineEntry,
    ToolCallSpec, ToolSpec, TurnSpec,
};
pub use suite::{CaseResult, SnapshotMode, discover, load_all, run_case, table};
pub use world::Rng;
