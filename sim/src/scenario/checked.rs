//! The checked scenario: what the simulator runs. A spec is checked once
//! (`Scenario::from_spec`); after that, every choice the file could get wrong
//! is a type: one action per timeline entry, one behaviour per tool, an
//! oracle named with every expected violation.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::Value;

use super::names::OracleId;
use super::spec::{
    CancelRun, CancelSpec, Expect, FaultSpec, ModelSpec, ScenarioSpec, TimelineEntry, ToolSpec,
};
use crate::hooks::{HookSpec, TransformSpec};

/// A scenario, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub name: String,
    /// SPEC rule ids this scenario checks.
    pub rules: Vec<String>,
    pub description: Option<String>,
    pub seed: u64,
    pub expect: Expectation,
    pub agent: AgentDef,
    /// The lifecycle, in composition order.
    pub hooks: Vec<HookDef>,
    /// The default script and the scripts per model name.
    pub model: ModelSpec,
    pub models: BTreeMap<String, ModelSpec>,
    pub docs: BTreeMap<String, String>,
    /// Client actions, in time order (entries at one time in file order).
    pub timeline: Vec<Moment>,
    pub faults: Vec<FaultSpec>,
}

/// What a run must show (SPEC D5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expectation {
    /// Every oracle stays quiet.
    Pass,
    /// This oracle reports a violation.
    Violation(OracleId),
}

impl fmt::Display for Expectation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Expectation::Pass => "pass",
            Expectation::Violation(_) => "violation",
        })
    }
}

/// The agent under test.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentDef {
    pub name: String,
    pub model: String,
    pub instructions: String,
    pub max_steps: u32,
    pub tools: Vec<ToolDef>,
}

/// A scripted tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    pub latency_ms: u64,
    pub requires: Vec<String>,
    pub behaviour: Behaviour,
}

/// What a scripted tool does once its latency has passed.
#[derive(Debug, Clone, PartialEq)]
pub enum Behaviour {
    Output(Value),
    /// Returns the call's input.
    Echo,
    /// A deliberate failure (SPEC T5 `fail`).
    Fail(Value),
    /// An error with this detail (SPEC T5 `throw`).
    Throw(String),
    /// A panic with this message.
    Panic(String),
}

/// One hook of the lifecycle, with the name the event log shows.
#[derive(Debug, Clone, PartialEq)]
pub struct HookDef {
    pub name: String,
    pub spec: HookSpec,
}

/// One client action at a virtual time.
#[derive(Debug, Clone, PartialEq)]
pub struct Moment {
    pub at: u64,
    pub client: String,
    pub thread: String,
    pub action: Action,
}

/// What a client does.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Send(String),
    Steer(String),
    /// Cancel the thread's current run, or (`Some(n)`) the run of its n-th send.
    Cancel(Option<usize>),
    Watch {
        name: String,
        live: Vec<TransformSpec>,
    },
}

/// Where in a spec a check failed: `timeline[0]`, `agent.tools[2]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldPath(Vec<Segment>);

/// One step of a [`FieldPath`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Key(&'static str),
    Index(usize),
}

impl FieldPath {
    fn at(segments: &[Segment]) -> FieldPath {
        FieldPath(segments.to_vec())
    }

    /// The segments, outermost first.
    pub fn segments(&self) -> &[Segment] {
        &self.0
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            match s {
                Segment::Key(k) if i == 0 => write!(f, "{k}")?,
                Segment::Key(k) => write!(f, ".{k}")?,
                Segment::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

/// A spec that parsed but does not make sense.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if at.0.is_empty() { String::new() } else { format!("{at}: ") })]
pub struct CheckError {
    /// Where (empty: the scenario as a whole).
    pub at: FieldPath,
    pub message: String,
}

fn fail<T>(at: &[Segment], message: impl Into<String>) -> Result<T, CheckError> {
    Err(CheckError {
        at: FieldPath::at(at),
        message: message.into(),
    })
}

impl Scenario {
    /// Checks a spec into the model the simulator runs.
    pub fn from_spec(spec: ScenarioSpec) -> Result<Scenario, CheckError> {
        let expect = expectation(spec.expect, spec.oracle)?;
        if spec.agent.max_steps == 0 {
            let at = [Segment::Key("agent"), Segment::Key("max_steps")];
            return fail(
                &at,
                "must be at least 1 (SPEC A2: a run may take one step or more)",
            );
        }
        let timeline = timeline(spec.timeline)?;
        let tools = tools(spec.agent.tools)?;
        let hooks = spec
            .lifecycle
            .into_iter()
            .enumerate()
            .map(|(i, spec)| HookDef {
                name: spec
                    .given_name()
                    .map_or_else(|| format!("{}#{i}", spec.kind()), str::to_string),
                spec,
            })
            .collect();
        faults(&spec.faults)?;
        Ok(Scenario {
            name: spec.name,
            rules: spec.rules,
            description: spec.description,
            seed: spec.seed,
            expect,
            agent: AgentDef {
                name: spec.agent.name,
                model: spec.agent.model,
                instructions: spec.agent.instructions,
                max_steps: spec.agent.max_steps,
                tools,
            },
            hooks,
            model: spec.model,
            models: spec.models,
            docs: spec.docs,
            timeline,
            faults: spec.faults,
        })
    }
}

fn expectation(expect: Expect, oracle: Option<OracleId>) -> Result<Expectation, CheckError> {
    match (expect, oracle) {
        (Expect::Pass, _) => Ok(Expectation::Pass),
        (Expect::Violation, Some(o)) => Ok(Expectation::Violation(o)),
        (Expect::Violation, None) => fail(
            &[Segment::Key("oracle")],
            "expect = \"violation\" needs `oracle`, the oracle that must report it",
        ),
    }
}

fn timeline(entries: Vec<TimelineEntry>) -> Result<Vec<Moment>, CheckError> {
    if entries.is_empty() {
        return fail(&[], "expected at least one [[timeline]] entry");
    }
    let mut out = Vec::with_capacity(entries.len());
    let mut watchers = BTreeMap::new();
    for (i, t) in entries.into_iter().enumerate() {
        let at = [Segment::Key("timeline"), Segment::Index(i)];
        if !t.live.is_empty() && t.watch.is_none() {
            return fail(&at, "`live` goes with `watch`");
        }
        let cancel = match t.cancel {
            CancelSpec::Current(false) => None,
            CancelSpec::Current(true) => Some(None),
            CancelSpec::Run(CancelRun { run: 0 }) => {
                return fail(&at, "cancel = { run = N } counts sends from 1");
            }
            CancelSpec::Run(CancelRun { run }) => Some(Some(run)),
        };
        let action = match (t.send, t.steer, cancel, t.watch) {
            (Some(text), None, None, None) => Action::Send(text),
            (None, Some(text), None, None) => Action::Steer(text),
            (None, None, Some(run), None) => Action::Cancel(run),
            (None, None, None, Some(name)) => {
                if let Some(j) = watchers.insert(name.clone(), i) {
                    return fail(
                        &at,
                        format!("watcher {name:?} is already named by timeline[{j}]"),
                    );
                }
                Action::Watch { name, live: t.live }
            }
            _ => return fail(&at, "expected exactly one of send, steer, cancel, watch"),
        };
        out.push(Moment {
            at: t.at,
            client: t.client,
            thread: t.thread,
            action,
        });
    }
    out.sort_by_key(|m| m.at);
    Ok(out)
}

fn faults(faults: &[FaultSpec]) -> Result<(), CheckError> {
    for (i, f) in faults.iter().enumerate() {
        let at = [Segment::Key("faults"), Segment::Index(i)];
        match f {
            FaultSpec::EditMessage {
                text,
                reverse_parts,
                delete,
                ..
            } if usize::from(text.is_some())
                + usize::from(*reverse_parts)
                + usize::from(*delete)
                != 1 =>
            {
                return fail(
                    &at,
                    "edit_message needs exactly one of text, reverse_parts, delete",
                );
            }
            FaultSpec::EditRequest {
                append: None,
                drop_message: None,
                ..
            } => return fail(&at, "edit_request needs append or drop_message"),
            _ => {}
        }
    }
    Ok(())
}

fn tools(specs: Vec<ToolSpec>) -> Result<Vec<ToolDef>, CheckError> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(specs.len());
    for (i, t) in specs.into_iter().enumerate() {
        let at = [
            Segment::Key("agent"),
            Segment::Key("tools"),
            Segment::Index(i),
        ];
        if !seen.insert(t.name.clone()) {
            return fail(&at, format!("duplicate tool name {:?}", t.name));
        }
        let behaviour = match (t.output, t.echo, t.fail, t.throw, t.panic) {
            (Some(v), false, None, None, None) => Behaviour::Output(v),
            (None, true, None, None, None) => Behaviour::Echo,
            (None, false, Some(v), None, None) => Behaviour::Fail(v),
            (None, false, None, Some(m), None) => Behaviour::Throw(m),
            (None, false, None, None, Some(m)) => Behaviour::Panic(m),
            _ => {
                let message = format!(
                    "tool {:?} needs exactly one of output, echo, fail, throw, panic",
                    t.name
                );
                return fail(&at, message);
            }
        };
        out.push(ToolDef {
            name: t.name,
            description: t.description,
            latency_ms: t.latency_ms,
            requires: t.requires,
            behaviour,
        });
    }
    Ok(out)
}
