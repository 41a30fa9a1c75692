//! The scenario format as written: serde types for TOML (written by people)
//! and JSON (the same model). `Scenario::from_spec` checks a spec once into
//! the model the simulator runs.

use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::names::OracleRef;

mod cluster;
mod facade;
mod faults;
mod lifecycle;
mod model;
mod timeline;
mod tool;

pub use cluster::{ClusterSpec, HostOrder, WorkerSpec};
pub use facade::{ExpectSpec, MutateSpec, VisibilitySpec};
pub use faults::{FaultSpec, RequestAt};
pub use lifecycle::{LifecycleEntry, UseSpec};
pub use model::{ModelSpec, ReplayFormat, RequestExpect, ToolCallSpec, TurnSpec};
pub use timeline::{
    AfterEvent, AfterSpec, CallRef, CancelRun, CancelSpec, DenySpec, SubmitSpec, TimelineEntry,
};
pub use tool::{ApprovalSpec, OnOutputSpec, ToolEntry, ToolSpec, UseToolSpec, WhenSpec};

/// What a scenario run must show (SPEC D5).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    /// Every oracle stays quiet.
    #[default]
    Pass,
    /// The oracle named by `oracle` reports a violation.
    Violation,
}

impl Expect {
    /// Whether the file expects every oracle to stay quiet (the default, left
    /// out when written).
    pub fn is_pass(&self) -> bool {
        *self == Expect::Pass
    }
}

impl fmt::Display for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Expect::Pass => "pass",
            Expect::Violation => "violation",
        })
    }
}

/// A whole scenario file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = scenario_checks)]
pub struct ScenarioSpec {
    /// The JSON Schema this file follows (`"$schema"` in JSON files), for
    /// editors; the loader reads past it.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// The format version; 1, the only one so far, when left out. A future
    /// incompatible change of the format bumps it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        with = "u32",
        extend("const" = FORMAT, "default" = FORMAT)
    )]
    pub format: Option<u32>,
    /// What the scenario shows, in a sentence; snapshots and reports name it.
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: String,
    /// SPEC rule ids this scenario checks.
    #[schemars(with = "Vec<crate::schema::checks::RuleId>", length(min = 1))]
    pub rules: Vec<String>,
    /// Why the scenario is built as it is: what happens, and what must.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The seed of the run's random choices; `pai-sim show --seed` replays
    /// any other.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// What the run must show (SPEC D5): every oracle quiet (`pass`), or a
    /// violation reported by `oracle`.
    #[serde(default, skip_serializing_if = "Expect::is_pass")]
    #[schemars(extend("default" = Expect::Pass))]
    pub expect: Expect,
    /// With `expect = "violation"`: the oracle that must report it (a
    /// built-in one, or one the harness registered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oracle: Option<OracleRef>,
    /// The agent under test.
    #[serde(default, skip_serializing_if = "AgentSpec::is_default")]
    pub agent: AgentSpec,
    /// The lifecycle hooks, in composition order: each entry is one hook of
    /// the built-in library, named by `hook`, or one a harness registered,
    /// named by `use`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lifecycle: Vec<LifecycleEntry>,
    /// The default script: answers any model name without its own script.
    #[serde(
        default,
        skip_serializing_if = "ModelSpec::is_empty",
        deserialize_with = "model::read_one",
        serialize_with = "model::write_one"
    )]
    pub model: ModelSpec,
    /// Scripts per model name (so routing is visible).
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "model::read_map",
        serialize_with = "model::write_map"
    )]
    #[schemars(extend("propertyNames" = { "minLength": 1 }))]
    pub models: BTreeMap<String, ModelSpec>,
    /// Documents for the `rag` hook: keyword → text.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("propertyNames" = { "pattern": crate::schema::checks::NONBLANK }))]
    pub docs: BTreeMap<String, String>,
    /// Client actions at virtual times: at least one.
    #[schemars(length(min = 1))]
    pub timeline: Vec<TimelineEntry>,
    /// Faults: planted in what the oracles read (SPEC D5), or, with
    /// `[[workers]]`, happening to workers and links at virtual times.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FaultSpec>,
    /// Workers sharing one store, each a turmoil host (SPEC K2, K3); none:
    /// one runtime drives every run, without turmoil.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<WorkerSpec>,
    /// Lease and network settings when there are workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterSpec>,
    /// Virtual milliseconds after which a run that has not gone idle is
    /// stopped and fails (default one hour).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1), extend("default" = TIME_LIMIT_MS))]
    pub time_limit_ms: Option<u64>,
}

fn default_seed() -> u64 {
    1
}

impl ScenarioSpec {
    /// The published schema of the scenario format
    /// (`schema/scenario.schema.json`, SPEC D6).
    pub fn schema() -> Value {
        crate::schema::document::<ScenarioSpec>(
            "urn:pai-sim:schema:scenario",
            "pai-sim scenario",
            "A scenario file of pai-sim (SPEC D5, D6): the agent under test, its lifecycle hooks, scripted models and tools, a timeline of client actions, and what the run must show. Written as TOML (people) or JSON (the same model). Checks a schema cannot express (duplicate tool or watcher names, a timeline entry at or past the scenario's own `time_limit_ms`, a swap of an event with itself, a redaction class whose range descends, a tool the agent lacks and no script calls, an answer naming a call no script makes) are made by the loader only.",
        )
    }
}

/// The format the schema states: the checked model's `FORMAT`, which a
/// test keeps it equal to (the checked model reads this file, so this file
/// cannot read it).
const FORMAT: u32 = 1;
/// The default time limit the schema states: the checked model's
/// `DEFAULT_TIME_LIMIT_MS`, kept equal by the same test.
const TIME_LIMIT_MS: u64 = 3_600_000;

/// The whole-scenario checks of the schema, with the default time limit.
fn scenario_checks(schema: &mut schemars::Schema) {
    crate::schema::checks::scenario(schema, TIME_LIMIT_MS);
}

/// The agent under test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// The agent's name.
    #[serde(
        default = "default_agent_name",
        skip_serializing_if = "is_default_agent_name"
    )]
    #[schemars(length(min = 1), extend("default" = default_agent_name()))]
    pub name: String,
    /// The model of the agent's base route.
    #[serde(default = "default_model", skip_serializing_if = "is_default_model")]
    #[schemars(length(min = 1), extend("default" = default_model()))]
    pub model: String,
    /// The agent's instructions (its system prompt).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(extend("default" = ""))]
    pub instructions: String,
    /// The most model steps a run may take (SPEC A2).
    #[serde(
        default = "default_max_steps",
        skip_serializing_if = "is_default_max_steps"
    )]
    #[schemars(range(min = 1), extend("default" = default_max_steps()))]
    pub max_steps: u32,
    /// The agent's tools, scripted or registered (`use`); names are unique
    /// (checked by the loader).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolEntry>,
    /// Tools the scripts call on purpose though the agent does not have
    /// them (each such call gets a typed unknown-tool error): without this,
    /// a script's call of a tool the agent lacks is a load warning.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown_tools: Vec<String>,
}

impl AgentSpec {
    /// Whether every field has its default (the agent is then left out when a
    /// spec is written).
    pub fn is_default(&self) -> bool {
        *self == AgentSpec::default()
    }
}

impl Default for AgentSpec {
    fn default() -> Self {
        AgentSpec {
            name: default_agent_name(),
            model: default_model(),
            instructions: String::new(),
            max_steps: default_max_steps(),
            tools: Vec::new(),
            unknown_tools: Vec::new(),
        }
    }
}

fn is_default_agent_name(s: &str) -> bool {
    s == default_agent_name()
}
fn is_default_model(s: &str) -> bool {
    s == default_model()
}
fn is_default_max_steps(n: &u32) -> bool {
    *n == default_max_steps()
}

fn default_agent_name() -> String {
    "assistant".into()
}
fn default_model() -> String {
    "small".into()
}
fn default_max_steps() -> u32 {
    8
}

#[cfg(test)]
mod tests {
    /// The schema states the checked model's format and default time limit.
    #[test]
    fn the_schema_constants_are_the_checked_ones() {
        assert_eq!(super::FORMAT, super::super::checked::FORMAT);
        assert_eq!(
            super::TIME_LIMIT_MS,
            super::super::checked::DEFAULT_TIME_LIMIT_MS
        );
    }
}
