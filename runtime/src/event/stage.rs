//! Where a run was when it failed or was cancelled: a lifecycle phase, or
//! one of the runtime's own stages, written as one name.

use std::fmt;

use serde::{Serialize, Serializer};

use crate::lifecycle::Phase;

/// Where a run was when it failed or was cancelled. `Display` and the
/// event log give its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RunStage {
    /// Inside a lifecycle phase (a hook, or the runtime's own part of it).
    Phase(Phase),
    /// Consuming the provider stream.
    Stream,
    /// Committing the assistant message of a step.
    CommitStep,
    /// Committing a `prepare_run` response.
    Respond,
    /// Joining a running tool.
    Tool,
    /// After a step's tool results were committed.
    Tools,
    /// Committing a step's tool results.
    CommitToolResults,
    /// Between two steps.
    BetweenSteps,
    /// At the end of an episode, before the run ended or took a steer.
    EpisodeEnd,
    /// Giving a resumed run's waiting calls their results (SPEC T7).
    Resume,
    /// Inside an `on_output` handler (SPEC T6).
    OnOutput,
    /// The step loop itself (a bug in the runtime, caught).
    Runtime,
}

impl RunStage {
    /// The runtime's own stages (not phases), each with what it means: the
    /// event log's schema lists them after the phases.
    pub const OWN: [(RunStage, &'static str); 11] = [
        (RunStage::Stream, "Consuming the provider stream."),
        (
            RunStage::CommitStep,
            "Committing the assistant message of a step.",
        ),
        (RunStage::Respond, "Committing a `prepare_run` response."),
        (RunStage::Tool, "Joining a running tool."),
        (
            RunStage::Tools,
            "After a step's tool results were committed.",
        ),
        (
            RunStage::CommitToolResults,
            "Committing a step's tool results.",
        ),
        (RunStage::BetweenSteps, "Between two steps."),
        (
            RunStage::EpisodeEnd,
            "At the end of an episode, before the run ended or took a steer.",
        ),
        (
            RunStage::Resume,
            "Giving a resumed run's waiting calls their results (SPEC T7).",
        ),
        (
            RunStage::OnOutput,
            "Inside an `on_output` handler (SPEC T6).",
        ),
        (
            RunStage::Runtime,
            "The step loop itself (a bug in the runtime, caught).",
        ),
    ];

    /// The stage's name in the event log and in `Display`: the phase's name for
    /// a phase (`prepare_run`), else the stage's own (`stream`, `between
    /// steps`).
    pub fn as_str(self) -> &'static str {
        match self {
            RunStage::Phase(p) => p.as_str(),
            RunStage::Stream => "stream",
            RunStage::CommitStep => "commit_step",
            RunStage::Respond => "respond",
            RunStage::Tool => "tool",
            RunStage::Tools => "tools",
            RunStage::CommitToolResults => "commit_tool_results",
            RunStage::BetweenSteps => "between steps",
            RunStage::EpisodeEnd => "episode end",
            RunStage::Resume => "resume",
            RunStage::OnOutput => "on_output",
            RunStage::Runtime => "runtime",
        }
    }
}

impl fmt::Display for RunStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A stage is written as its name.
impl Serialize for RunStage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// One string of a closed list: every phase (`Inside ...`), then the
/// runtime's own stages.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for RunStage {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RunStage".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let phases = Phase::ALL
            .into_iter()
            .map(|p| (p.as_str(), format!("Inside `{}`.", p.as_str())));
        let own = RunStage::OWN
            .into_iter()
            .map(|(s, doc)| (s.as_str(), doc.to_string()));
        let one_of: Vec<serde_json::Value> = phases
            .chain(own)
            .map(|(name, doc)| {
                serde_json::json!({ "type": "string", "const": name, "description": doc })
            })
            .collect();
        schemars::json_schema!({
            "oneOf": one_of,
            "description": "Where a run was when it failed or was cancelled: a lifecycle phase, or\none of the runtime's own stages. Schema only: the log writes the\nruntime's name for the stage.",
        })
    }
}
