//! The scenario's tools as the runtime runs them: a scripted tool (latency
//! on the virtual clock, then its one behaviour) or a registered one (the
//! author's tool behind the scenario's name, latency and approval).

use std::sync::Arc;
use std::time::Duration;

use pai_runtime::{
    HookError, HookFuture, Tool, ToolCx, ToolOutcome,
    tool::{ToolKind, ToolSpec},
};
use serde_json::Value;

use crate::hooks::SimMetadata;
use crate::planted::PLANTED_PANIC;
use crate::scenario::{Approval, Behaviour, OnOutputSpec, ToolDef};

/// A tool's `on_output` handler (SPEC T6): counts outputs and keeps the
/// last one in the run metadata, as the scenario says.
pub fn on_output(
    spec: OnOutputSpec,
) -> impl Fn(&mut SimMetadata, &Value, &Value) -> Result<(), HookError> + Send + Sync + 'static {
    move |meta, _input, output| {
        if let Some(key) = &spec.count {
            let n = meta.get(key).and_then(Value::as_u64).unwrap_or(0);
            meta.insert(key.clone(), Value::from(n + 1));
        }
        if let Some(key) = &spec.keep {
            meta.insert(key.clone(), output.clone());
        }
        Ok(())
    }
}

/// `Ok` when `value` has every field of `keys`, else which it misses.
fn has_fields(value: &Value, keys: &[String]) -> Result<(), String> {
    let missing: Vec<&str> = keys
        .iter()
        .filter(|k| value.get(k.as_str()).is_none())
        .map(String::as_str)
        .collect();
    match missing.is_empty() {
        true => Ok(()),
        false => Err(format!("missing field(s) {}", missing.join(", "))),
    }
}

/// The runtime's tool for `def`: the author's own, built afresh, for a
/// registered tool; else the scripted one.
pub fn runtime_tool(def: &ToolDef) -> Arc<dyn Tool> {
    match &def.behaviour {
        Behaviour::Registered(u) => Arc::new(RegisteredTool {
            spec: ToolSpec {
                name: def.name.clone(),
                description: def.description.clone(),
            },
            approval: def.approval.clone(),
            latency_ms: def.latency_ms,
            inner: u.build(&def.name),
        }),
        _ => Arc::new(ScriptedTool::new(def.clone())),
    }
}

/// A registered tool under the scenario's name: each call waits its
/// latency on the virtual clock, then the author's tool runs it.
struct RegisteredTool {
    spec: ToolSpec,
    approval: Approval,
    latency_ms: u64,
    inner: Arc<dyn Tool>,
}

impl Tool for RegisteredTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn kind(&self) -> ToolKind {
        match self.approval {
            Approval::Always => ToolKind::Approval,
            _ => ToolKind::Backend,
        }
    }

    /// The scenario's rule, or the author's tool's own (SPEC T7).
    fn needs_approval(&self, input: &Value) -> bool {
        self.approval.holds(input) || self.inner.needs_approval(input)
    }

    fn check_output(&self, output: &Value) -> Result<(), String> {
        self.inner.check_output(output)
    }

    fn call(&self, cx: ToolCx, input: Value) -> HookFuture<'_, ToolOutcome> {
        HookFuture::new(async move {
            if self.latency_ms > 0 {
                tokio::time::sleep(Duration::from_millis(self.latency_ms)).await;
            }
            self.inner.call(cx, input).await
        })
    }
}

/// A scripted tool: its one behaviour after its latency.
#[derive(Debug)]
pub struct ScriptedTool {
    spec: ToolSpec,
    def: ToolDef,
}

impl ScriptedTool {
    pub fn new(def: ToolDef) -> ScriptedTool {
        ScriptedTool {
            spec: ToolSpec {
                name: def.name.clone(),
                description: def.description.clone(),
            },
            def,
        }
    }
}

impl Tool for ScriptedTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn kind(&self) -> ToolKind {
        match (&self.def.behaviour, &self.def.approval) {
            (Behaviour::Client, _) => ToolKind::Client,
            (_, Approval::Always) => ToolKind::Approval,
            _ => ToolKind::Backend,
        }
    }

    /// The scenario's rule, on this call's input (SPEC T7).
    fn needs_approval(&self, input: &Value) -> bool {
        self.def.approval.holds(input)
    }

    /// A submitted output must be an object with the `output_requires` fields.
    fn check_output(&self, output: &Value) -> Result<(), String> {
        has_fields(output, &self.def.output_requires)
    }

    fn call(&self, _cx: ToolCx, input: Value) -> HookFuture<'_, ToolOutcome> {
        if let Err(missing) = has_fields(&input, &self.def.requires) {
            return HookFuture::ready(ToolOutcome::InvalidInput(missing));
        }
        HookFuture::new(async move {
            if self.def.latency_ms > 0 {
                tokio::time::sleep(Duration::from_millis(self.def.latency_ms)).await;
            }
            match &self.def.behaviour {
                Behaviour::Output(v) => ToolOutcome::Output(v.clone()),
                Behaviour::Echo => ToolOutcome::Output(input),
                Behaviour::Fail(v) => ToolOutcome::Fail(v.clone()),
                Behaviour::Throw(m) => ToolOutcome::Throw(m.clone()),
                Behaviour::Panic(m) => panic!("{PLANTED_PANIC} {m}"),
                Behaviour::Client => ToolOutcome::Throw("a client tool has no backend".into()),
                Behaviour::Registered(_) => {
                    ToolOutcome::Throw("a registered tool is run by its RegisteredTool".into())
                }
            }
        })
    }
}
