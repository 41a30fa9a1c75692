//! The agent's tools, checked: names unique, a scripted tool with exactly
//! one behaviour and only the fields that go with it, a registered tool
//! (`use = "..."`) with a configuration its type reads.

use std::collections::BTreeMap;

use pai_runtime::tool::ToolKind;
use serde_json::Value;

use super::field::{CheckError, Segment, fail};
use super::predicate::Predicate;
use super::spec::{ApprovalSpec, OnOutputSpec, ToolEntry, ToolSpec, UseToolSpec};
use crate::registry::Registry;
use crate::user_tool::UserToolDef;

/// A tool of the agent, checked: scripted, or registered by a harness.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef {
    /// The tool's name, as model tool calls name it.
    pub name: String,
    /// The description the model is given.
    pub description: String,
    /// Virtual milliseconds each call takes before its outcome.
    pub latency_ms: u64,
    /// Input fields a call must have; a call without them gets a typed
    /// invalid-input error (SPEC X2).
    pub requires: Vec<String>,
    /// What each call does once its latency has passed.
    pub behaviour: Behaviour,
    /// Which calls wait for a client's approval before they run (SPEC T7).
    pub approval: Approval,
    /// With `Behaviour::Client`: fields a submitted output must have.
    pub output_requires: Vec<String>,
    /// An `on_output` handler beside the tool (SPEC T6): for each successful
    /// output it updates the run metadata.
    pub on_output: Option<OnOutputSpec>,
}

/// Which calls of a tool wait for a client's approval (SPEC T7), as the
/// scenario says; a registered tool's calls may also wait when the tool
/// itself says so (`Tool::needs_approval`).
#[derive(Debug, Clone, PartialEq)]
pub enum Approval {
    /// No call.
    Never,
    /// Every call.
    Always,
    /// A call whose input the predicate holds on.
    When(Predicate),
}

impl Approval {
    /// Whether a call with `input` needs approval, as the scenario says.
    pub fn holds(&self, input: &Value) -> bool {
        match self {
            Approval::Never => false,
            Approval::Always => true,
            Approval::When(p) => p.holds(input),
        }
    }

    /// Whether some call may wait.
    pub fn may_wait(&self) -> bool {
        *self != Approval::Never
    }

    /// The predicate, when approval depends on the call.
    pub fn predicate(&self) -> Option<&Predicate> {
        match self {
            Approval::When(p) => Some(p),
            _ => None,
        }
    }
}

/// The approval an entry (at `at`) writes, its predicate read.
fn approval(at: &[Segment], spec: &ApprovalSpec) -> Result<Approval, CheckError> {
    match spec {
        ApprovalSpec::Flag(false) => Ok(Approval::Never),
        ApprovalSpec::Flag(true) => Ok(Approval::Always),
        ApprovalSpec::When(w) => match Predicate::parse(&w.when) {
            Ok(p) => Ok(Approval::When(p)),
            Err(message) => {
                let mut at = at.to_vec();
                at.extend([Segment::Key("approval"), Segment::Key("when")]);
                fail(&at, format!("approval predicate: {message}"))
            }
        },
    }
}

/// What a scripted tool does once its latency has passed.
#[derive(Debug, Clone, PartialEq)]
pub enum Behaviour {
    /// Returns this value as the output.
    Output(Value),
    /// Returns the call's input.
    Echo,
    /// A deliberate failure (SPEC T5 `fail`).
    Fail(Value),
    /// An error with this detail (SPEC T5 `throw`).
    Throw(String),
    /// A panic with this message.
    Panic(String),
    /// None: a client tool, run by the client (SPEC T7).
    Client,
    /// A tool a harness registered (`use = "..."`): the author's own
    /// code decides, so no oracle foresees its outputs.
    Registered(UserToolDef),
}

/// Every entry of `agent.tools`, checked in order.
pub(super) fn tools(
    specs: Vec<ToolEntry>,
    registry: &Registry,
) -> Result<Vec<ToolDef>, CheckError> {
    let mut seen = BTreeMap::new();
    let mut out = Vec::with_capacity(specs.len());
    for (i, t) in specs.into_iter().enumerate() {
        let at = [
            Segment::Key("agent"),
            Segment::Key("tools"),
            Segment::Index(i),
        ];
        if t.name().is_empty() {
            let mut at = at.to_vec();
            at.push(Segment::Key("name"));
            return fail(&at, "a tool needs a name");
        }
        if let Some(j) = seen.insert(t.name().to_string(), i) {
            let message = format!(
                "duplicate tool name {:?} (agent.tools[{j}] has it too)",
                t.name()
            );
            return fail(&at, message);
        }
        let has_on_output = match &t {
            ToolEntry::Scripted(t) => t.on_output.is_some(),
            ToolEntry::User(u) => u.on_output.is_some(),
        };
        if let Some(message) = has_on_output
            .then(|| registry.types().refuses_json_metadata("on_output"))
            .flatten()
        {
            let mut at = at.to_vec();
            at.push(Segment::Key("on_output"));
            return fail(&at, message);
        }
        out.push(match t {
            ToolEntry::Scripted(t) => tool(&at, t)?,
            ToolEntry::User(u) => registered(&at, u, registry)?,
        });
    }
    Ok(out)
}

/// One registered tool (at `at`): its configuration read by the type it
/// was registered with; approval when the entry or the tool says so.
fn registered(at: &[Segment], u: UseToolSpec, registry: &Registry) -> Result<ToolDef, CheckError> {
    let (def, description) = match registry.check_tool(&u.use_, &u.config) {
        Ok(checked) => checked,
        Err(e) => {
            let mut at = at.to_vec();
            at.push(match e.field {
                Some(field) => Segment::Name(field),
                None => Segment::Key("use"),
            });
            return fail(&at, e.message);
        }
    };
    on_output(at, u.on_output.as_ref())?;
    let name = u.name.unwrap_or(u.use_);
    Ok(ToolDef {
        name,
        description,
        latency_ms: u.latency_ms,
        requires: Vec::new(),
        approval: match def.kind {
            ToolKind::Approval => Approval::Always,
            _ => approval(at, &u.approval)?,
        },
        behaviour: Behaviour::Registered(def),
        output_requires: Vec::new(),
        on_output: u.on_output,
    })
}

/// One scripted tool (at `at`): exactly one behaviour, approval and
/// `output_requires` only where they make sense, a sound `on_output`.
fn tool(at: &[Segment], t: ToolSpec) -> Result<ToolDef, CheckError> {
    let behaviour = match (t.output, t.echo, t.fail, t.throw, t.panic, t.client) {
        (Some(v), false, None, None, None, false) => Behaviour::Output(v),
        (None, true, None, None, None, false) => Behaviour::Echo,
        (None, false, Some(v), None, None, false) => Behaviour::Fail(v),
        (None, false, None, Some(m), None, false) => Behaviour::Throw(m),
        (None, false, None, None, Some(m), false) => Behaviour::Panic(m),
        (None, false, None, None, None, true) => Behaviour::Client,
        _ => {
            let message = format!(
                "tool {:?} needs exactly one of output, echo, fail, throw, panic, client",
                t.name
            );
            return fail(at, message);
        }
    };
    if t.approval.may_wait() && behaviour == Behaviour::Client {
        let message =
            "a client tool is run by the client: it waits for a submitted output, not an approval";
        return fail(at, message);
    }
    if !t.output_requires.is_empty() && behaviour != Behaviour::Client {
        return fail(
            at,
            "output_requires checks submitted outputs: it goes with client = true",
        );
    }
    on_output(at, t.on_output.as_ref())?;
    let approval = approval(at, &t.approval)?;
    Ok(ToolDef {
        name: t.name,
        description: t.description,
        latency_ms: t.latency_ms,
        requires: t.requires,
        behaviour,
        approval,
        output_requires: t.output_requires,
        on_output: t.on_output,
    })
}

/// An `on_output` handler (of the tool at `at`) that does something, with
/// keys that are not empty.
fn on_output(at: &[Segment], on_output: Option<&OnOutputSpec>) -> Result<(), CheckError> {
    let Some(o) = on_output else {
        return Ok(());
    };
    let mut at = at.to_vec();
    at.push(Segment::Key("on_output"));
    if o.count.is_none() && o.keep.is_none() {
        return fail(&at, "on_output needs count or keep");
    }
    match [&o.count, &o.keep]
        .into_iter()
        .flatten()
        .find(|k| k.is_empty())
    {
        Some(key) => fail(
            &at,
            format!("a metadata key must not be empty (got {key:?})"),
        ),
        None => Ok(()),
    }
}
