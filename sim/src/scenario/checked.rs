//! The checked scenario: what the simulator runs. A spec is checked once
//! (`Scenario::from_spec`); after that, every choice the file could get wrong
//! is a type: one action per timeline entry, one behaviour per tool, an
//! oracle named with every expected violation.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use super::cluster::{Cluster, cluster};
use super::field::{CheckError, Segment, fail};
use super::hooks::{HookDef, hooks};
use super::models::{self, RegisteredModels};
use super::names::{OracleName, OracleRef};
use super::references::Named;
use super::replay::{self, Replays};
use super::spec::{Expect, FaultSpec, LifecycleEntry, ModelSpec, ScenarioSpec};
use super::timeline::{Moment, timeline};
use super::tools::{ToolDef, tools};

use crate::hooks::HookSpec;
use crate::observe::UserOracles;
use crate::registry::Registry;

/// A scenario, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// What the scenario shows, in a sentence (the file's `name`); snapshots
    /// and reports name it.
    pub name: String,
    /// SPEC rule ids this scenario checks.
    pub rules: Vec<String>,
    /// Why the scenario is built as it is, when the file says.
    pub description: Option<String>,
    /// The seed of the run's random choices (1 when the file sets none); the
    /// same seed gives the same run (SPEC D4).
    pub seed: u64,
    /// What the run must show: every oracle quiet, or one oracle's violation
    /// (SPEC D5).
    pub expect: Expectation,
    /// The agent under test, with the file's defaults filled in.
    pub agent: AgentDef,
    /// The lifecycle, in composition order.
    pub hooks: Vec<HookDef>,
    /// The default script and the scripts per model name.
    pub model: ModelSpec,
    /// Scripts per model name, used when a route (or a fallback) names that
    /// model.
    pub models: BTreeMap<String, ModelSpec>,
    /// The scripts that replay recordings, loaded (SPEC X1: a file that
    /// cannot be read or decoded is refused at load).
    pub replays: Replays,
    /// The scripts that name a model a harness registered (`use`), checked.
    pub registered: RegisteredModels,
    /// Documents for the `rag` hook: keyword → text.
    pub docs: BTreeMap<String, String>,
    /// Client actions, in time order (entries at one time in file order).
    pub timeline: Vec<Moment>,
    /// Planted faults in what the oracles read (SPEC D5).
    pub faults: Vec<FaultSpec>,
    /// Workers sharing one store, and what happens to them; `None`: one
    /// runtime, no turmoil.
    pub cluster: Option<Cluster>,
    /// Virtual milliseconds after which a run not yet idle fails.
    pub time_limit_ms: u64,
    /// The oracles of the harness that checked the scenario, judging each
    /// of its runs beside the built-in ones (none without a harness).
    pub oracles: UserOracles,
    /// What the loader found suspect but ran (a script calling a tool the
    /// agent does not have): each located, printed by `pai-sim run`, in
    /// the transcript and in a harness's report.
    pub warnings: Vec<String>,
    /// The agent's run metadata and context types, from the harness that
    /// checked the scenario (the simulator's own without a typed one).
    pub(crate) agent_types: crate::agent_types::AgentTypes,
}

/// The virtual-time limit of a scenario that sets none: one hour.
pub const DEFAULT_TIME_LIMIT_MS: u64 = 3_600_000;

/// The only scenario format so far.
pub const FORMAT: u32 = 1;

/// What a run must show (SPEC D5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expectation {
    /// Every oracle stays quiet.
    Pass,
    /// This oracle reports a violation: a built-in one, or one the
    /// harness registered.
    Violation(OracleName),
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
    /// The agent's name (`assistant` by default).
    pub name: String,
    /// The model of the agent's base route (`small` by default); hooks may
    /// route elsewhere.
    pub model: String,
    /// The agent's instructions, its system prompt (empty by default).
    pub instructions: String,
    /// The most model steps a run may take (8 by default, SPEC A2).
    pub max_steps: u32,
    /// The agent's scripted tools, names unique.
    pub tools: Vec<ToolDef>,
}

impl Scenario {
    /// Checks a spec into the model the simulator runs; recordings a script
    /// replays are read relative to the current folder.
    pub fn from_spec(spec: ScenarioSpec) -> Result<Scenario, CheckError> {
        Scenario::from_spec_in(spec, Path::new(""))
    }

    /// Checks a spec into the model the simulator runs; recordings a script
    /// replays are read relative to `dir` (the scenario file's folder).
    pub fn from_spec_in(spec: ScenarioSpec, dir: &Path) -> Result<Scenario, CheckError> {
        Scenario::from_spec_with(spec, dir, &Registry::default())
    }

    /// [`Scenario::from_spec_in`] with the hooks `registry` knows by name
    /// (`use = "..."` entries).
    pub fn from_spec_with(
        spec: ScenarioSpec,
        dir: &Path,
        registry: &Registry,
    ) -> Result<Scenario, CheckError> {
        header(&spec)?;
        let expect = expectation(spec.expect, spec.oracle.as_ref(), registry)?;
        let time_limit_ms = spec.time_limit_ms.unwrap_or(DEFAULT_TIME_LIMIT_MS);
        let first_live = spec.timeline.iter().position(|t| !t.live.is_empty());
        let entries = spec.timeline.clone();
        let timeline = timeline(spec.timeline, time_limit_ms)?;
        let can_resume = !spec.workers.is_empty() || spec.agent.tools.iter().any(|t| t.may_wait());
        on_resume(&spec.lifecycle, can_resume)?;
        let tools = tools(spec.agent.tools, registry)?;
        scripts(&spec.model, &spec.models)?;
        let replays = replay::load(&spec.model, &spec.models, dir)?;
        let registered = models::registered(&spec.model, &spec.models, registry)?;
        docs(&spec.docs)?;
        let hooks = hooks(spec.lifecycle, registry)?;
        faults(&spec.faults)?;
        let cluster = cluster(&spec.workers, spec.cluster, &spec.faults, time_limit_ms)?;
        if cluster.is_some() {
            no_live_among_workers(first_live)?;
        }
        let named = Named {
            tools: tools.iter().map(|t| t.name.as_str()).collect(),
            hooks: hooks.iter().map(HookDef::library).collect(),
            model: &spec.model,
            models: &spec.models,
            timeline: &entries,
            violation: match &expect {
                Expectation::Violation(o) => o.rule(),
                Expectation::Pass => None,
            },
        };
        named.check()?;
        unknown_tools(&named.tools, &spec.agent.unknown_tools)?;
        let warnings = named.warnings(&spec.agent.unknown_tools);
        let faults = spec
            .faults
            .into_iter()
            .filter(|f| !f.is_cluster())
            .collect();
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
            replays,
            registered,
            docs: spec.docs,
            timeline,
            faults,
            cluster,
            time_limit_ms,
            oracles: registry.oracles(),
            warnings,
            agent_types: registry.types().clone(),
        })
    }
}

/// `agent.unknown_tools` names only tools the agent does not have.
fn unknown_tools(tools: &[&str], unknown: &[String]) -> Result<(), CheckError> {
    match unknown.iter().position(|u| tools.contains(&u.as_str())) {
        Some(i) => fail(
            &[
                Segment::Key("agent"),
                Segment::Key("unknown_tools"),
                Segment::Index(i),
            ],
            format!("the agent has a tool {:?}: it is not unknown", unknown[i]),
        ),
        None => Ok(()),
    }
}

/// Among workers, live text stays in the worker that streams it: the
/// first timeline entry with `live` transforms (`first_live`) is refused.
fn no_live_among_workers(first_live: Option<usize>) -> Result<(), CheckError> {
    let Some(i) = first_live else {
        return Ok(());
    };
    let at = [
        Segment::Key("timeline"),
        Segment::Index(i),
        Segment::Key("live"),
    ];
    fail(
        &at,
        "with [[workers]] a watcher hears the store's change feed (commits, waits, run ends, a delete's close); live text stays in the worker that streams it, so `live` transforms are not available",
    )
}

/// The scenario's own fields: format, name, rules, time limit, and the
/// agent's name, model and step limit.
fn header(spec: &ScenarioSpec) -> Result<(), CheckError> {
    if let Some(v) = spec.format.filter(|v| *v != FORMAT) {
        let message = format!("{v} is not a format this pai-sim knows; it reads format {FORMAT}");
        return fail(&[Segment::Key("format")], message);
    }
    if spec.name.trim().is_empty() {
        return fail(&[Segment::Key("name")], "must not be empty");
    }
    if spec.rules.is_empty() {
        let message = "name at least one rule this scenario checks (see `pai-sim rules`)";
        return fail(&[Segment::Key("rules")], message);
    }
    for (i, id) in spec.rules.iter().enumerate() {
        if crate::rules::rule(id).is_none() {
            let message = format!("unknown rule {id:?}: `pai-sim rules` lists every rule id");
            return fail(&[Segment::Key("rules"), Segment::Index(i)], message);
        }
    }
    if spec.time_limit_ms == Some(0) {
        return fail(&[Segment::Key("time_limit_ms")], "must be at least 1");
    }
    if spec.agent.max_steps == 0 {
        let at = [Segment::Key("agent"), Segment::Key("max_steps")];
        return fail(
            &at,
            "must be at least 1 (SPEC A2: a run may take one step or more)",
        );
    }
    if spec.agent.name.is_empty() || spec.agent.model.is_empty() {
        let field = if spec.agent.name.is_empty() {
            "name"
        } else {
            "model"
        };
        return fail(
            &[Segment::Key("agent"), Segment::Key(field)],
            "must not be empty",
        );
    }
    Ok(())
}

/// `on_resume` limits a `fail` or `delay` hook to resumed episodes; with
/// no tool a run can wait on (client or approval) and no workers to take a
/// run over, no episode resumes and the hook would never fire.
fn on_resume(specs: &[LifecycleEntry], can_resume: bool) -> Result<(), CheckError> {
    let limited = specs.iter().position(|h| match h.library() {
        Some(HookSpec::Fail(f)) => f.on_resume,
        Some(HookSpec::Delay(d)) => d.on_resume,
        _ => false,
    });
    match limited {
        Some(i) if !can_resume => fail(
            &[
                Segment::Key("lifecycle"),
                Segment::Index(i),
                Segment::Key("on_resume"),
            ],
            "no episode of this scenario can resume: it has no client or approval tool for a run to wait on (SPEC T7) and no workers to take a run over (K3), so the hook would never fire",
        ),
        _ => Ok(()),
    }
}

/// Scripted turns: a turn whose provider fails before the stream has no
/// text or tool calls to give.
fn scripts(model: &ModelSpec, models: &BTreeMap<String, ModelSpec>) -> Result<(), CheckError> {
    let named = models.iter().map(|(n, m)| (Some(n), m));
    for (name, m) in std::iter::once((None, model)).chain(named) {
        let mut at = match name {
            None => vec![Segment::Key("model")],
            Some(n) if n.is_empty() => {
                return fail(
                    &[Segment::Key("models"), Segment::Name(n.clone())],
                    "a model name must not be empty",
                );
            }
            Some(n) => vec![Segment::Key("models"), Segment::Name(n.clone())],
        };
        models::alone(m, &at)?;
        replay::check(m, &at)?;
        at.push(Segment::Key("turns"));
        for (i, t) in m.turns.iter().enumerate() {
            if t.error.is_some() && (!t.text.is_empty() || !t.tool_calls.is_empty()) {
                at.push(Segment::Index(i));
                at.push(Segment::Key("error"));
                let message = "the provider fails before any stream, so this turn's text and tool calls would never be seen: keep one or the other (stream_error fails after the text)";
                return fail(&at, message);
            }
        }
    }
    Ok(())
}

/// `[docs]` keywords must be words a query can contain.
fn docs(docs: &BTreeMap<String, String>) -> Result<(), CheckError> {
    match docs.keys().find(|k| k.trim().is_empty()) {
        Some(k) => fail(
            &[Segment::Key("docs"), Segment::Name(k.clone())],
            "an empty keyword would match every query",
        ),
        None => Ok(()),
    }
}

fn expectation(
    expect: Expect,
    oracle: Option<&OracleRef>,
    registry: &Registry,
) -> Result<Expectation, CheckError> {
    match (expect, oracle) {
        (Expect::Pass, _) => Ok(Expectation::Pass),
        (Expect::Violation, Some(o)) => {
            let oracles = registry.oracles();
            let names: Vec<&str> = oracles.names().collect();
            match o.resolve(names.iter().copied()) {
                Ok(name) => Ok(Expectation::Violation(name)),
                Err(message) => fail(&[Segment::Key("oracle")], message),
            }
        }
        (Expect::Violation, None) => fail(
            &[Segment::Key("expect")],
            "\"violation\" needs `oracle`: the oracle that must report it",
        ),
    }
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
            FaultSpec::EditResult {
                source: None,
                output: None,
                ..
            } => return fail(&at, "edit_result needs source or output"),
            FaultSpec::Swap { a, b, .. } | FaultSpec::SwapPayloads { a, b, .. } if a == b => {
                return fail(
                    &at,
                    "a and b name one event: the fault would change nothing",
                );
            }
            _ => {}
        }
        if let Some(field) = zero_count(f) {
            let mut at = at.to_vec();
            at.push(Segment::Key(field));
            return fail(&at, "counts from 1: 0 names no event");
        }
    }
    Ok(())
}

/// The field of a fault that counts from 1 but says 0.
fn zero_count(f: &FaultSpec) -> Option<&'static str> {
    let counts: Vec<(&'static str, usize)> = match f {
        FaultSpec::Drop { nth, .. }
        | FaultSpec::SwapWithPrevious { nth, .. }
        | FaultSpec::Duplicate { nth, .. }
        | FaultSpec::DropLive { nth, .. }
        | FaultSpec::GrowRead { nth }
        | FaultSpec::UnfencedRead { nth }
        | FaultSpec::EditResult { nth, .. }
        | FaultSpec::SwallowAfterStepError { nth } => vec![("nth", *nth)],
        FaultSpec::EditSummaryRequest {
            call, drop_message, ..
        } => vec![("call", *call), ("drop_message", *drop_message)],
        FaultSpec::Swap { a, b, .. } | FaultSpec::SwapPayloads { a, b, .. } => {
            vec![("a", *a), ("b", *b)]
        }
        FaultSpec::EditRequest {
            call, drop_message, ..
        } => vec![("call", *call), ("drop_message", drop_message.unwrap_or(1))],
        FaultSpec::EditMessage { seq, .. } => vec![("seq", usize::from(*seq != 0))],
        FaultSpec::Crash { .. }
        | FaultSpec::Partition { .. }
        | FaultSpec::Hold { .. }
        | FaultSpec::Pause { .. }
        | FaultSpec::AcceptStale
        | FaultSpec::RefuseTakeover
        | FaultSpec::CancelOnTakeover
        | FaultSpec::IgnoreExpectations
        | FaultSpec::LeakPrivate { .. } => Vec::new(),
    };
    counts
        .iter()
        .find(|(_, n)| *n == 0)
        .map(|(field, _)| *field)
}
