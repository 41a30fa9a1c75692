//! A scripted tool: latency on the virtual clock, then its one behaviour.

use std::time::Duration;

use pai_runtime::{HookFuture, Tool, ToolCx, ToolOutcome, ToolSpec};
use serde_json::Value;

use crate::planted::PLANTED_PANIC;
use crate::scenario::{Behaviour, ToolDef};

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

    fn call(&self, _cx: ToolCx, input: Value) -> HookFuture<'_, ToolOutcome> {
        let missing: Vec<&str> = self
            .def
            .requires
            .iter()
            .filter(|k| input.get(k.as_str()).is_none())
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return HookFuture::ready(ToolOutcome::InvalidInput(format!(
                "missing field(s) {}",
                missing.join(", ")
            )));
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
            }
        })
    }
}
