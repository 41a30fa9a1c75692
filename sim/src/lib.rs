//! pai-sim: runs scenario files against pai-runtime deterministically, checks
//! invariant oracles on every run, and renders transcripts for snapshots.
//!
//! The path from file to snapshot: [`Scenario::load`] (parse, then check
//! once into the model the simulator runs) → [`simulate`] (seeded rng,
//! virtual clock, scripted model and tools, the built-in [`hooks`] library)
//! → one observed value → oracles and transcript → [`Report`] →
//! [`snapshot`] files.
#![warn(missing_docs)]

mod agent_types;
mod book;
mod cluster;
mod configured;
mod defaults;
mod differential;
mod faults;
mod format;
pub mod fuzz;
mod harness;
mod harness_dir;
mod harness_fuzz;
mod harness_schema;
mod harness_typed;
pub mod hooks;
pub mod observe;
mod oracle;
mod planted;
mod play;
mod play_facade;
mod registry;
mod report;
mod rule_coverage;
mod rules;
mod run;
mod scenario;
mod schema;
pub mod snapshot;
mod steps;
mod suite;
mod timeline;
mod transcript;
mod twin;
mod user_model;
mod user_tool;
mod world;

pub use differential::{across_stores, compare as compare_reports, other_store};
pub use format::diff;
pub use harness::{DirOutcome, Harness, ShowError, Shown};
pub use harness_fuzz::FuzzOutcome;
pub use oracle::Violation;
pub use planted::{PLANTED_PANIC, quiet_planted_panics};
pub use registry::Registry;
pub use report::{Report, SimError};
pub use rule_coverage::{RuleCoverage, TestRef, coverage, tests_in};
pub use rules::{Rule, rule, rules};
pub use run::{check, check_on, replay_command, replay_on, simulate, simulate_on, verdict};
pub use scenario::{
    Action, After, AfterEvent, AfterSpec, AgentDef, AgentSpec, Approval, ApprovalSpec, Behaviour,
    CancelRun, CancelSpec, CheckError, Cluster, ClusterSpec, DEFAULT_TIME_LIMIT_MS, Expect,
    Expectation, FaultSpec, FieldPath, HookDef, HookSource, LifecycleEntry, ModelSpec, Moment,
    OracleId, OracleName, OracleRef, Predicate, RegisteredModels, ReplayFormat, RequestExpect,
    Scenario, ScenarioError, ScenarioSpec, Segment, TimelineEntry, ToolCallSpec, ToolDef,
    ToolEntry, ToolSpec, TurnSpec, UseSpec, UseToolSpec, WhenSpec, WorkerSpec,
};
pub use schema::{EventRecord, event_log_json, schema_text};
pub use suite::{
    CaseResult, CaseStatus, Orphans, SnapshotMode, discover, load_all, nearest_scenarios, orphans,
    run_case, run_case_on_every_store, table,
};
pub use timeline::timeline_html;
pub use twin::{NotJudged, Twin, is_runtime_fault, without_runtime_faults};
pub use user_model::{UserModel, UserModelDef};
pub use user_tool::{UserTool, UserToolDef};
pub use world::{Rng, StoreKind};
