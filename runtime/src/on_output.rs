//! `on_output` handlers (SPEC T6): registered beside one typed tool, run
//! for its successful outputs only, free to update the run's metadata.
//! Stored here type-erased; the types were checked where they were added.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::HookError;
use crate::metadata::{MetaType, RunMetadata, decode, encode};
use crate::tool::TypedTool;

/// Stored metadata in; the new metadata out when the handler changed it.
type Handler =
    Box<dyn Fn(Option<&Value>, &Value, &Value) -> Result<Option<Value>, String> + Send + Sync>;

/// Every `on_output` handler of an agent, by tool name, in registration order.
#[derive(Default)]
pub(crate) struct OnOutputs {
    by_tool: BTreeMap<String, Vec<(MetaType, Handler)>>,
}

impl fmt::Debug for OnOutputs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.by_tool.iter().map(|(k, v)| (k, v.len())))
            .finish()
    }
}

impl OnOutputs {
    pub(crate) fn add<I, O, M>(
        &mut self,
        tool: &TypedTool<I, O>,
        f: impl Fn(&mut M, &I, &O) -> Result<(), HookError> + Send + Sync + 'static,
    ) where
        I: DeserializeOwned + 'static,
        O: DeserializeOwned + 'static,
        M: RunMetadata,
    {
        let handler: Handler = Box::new(move |stored, input, output| {
            let input = I::deserialize(input).map_err(|e| format!("tool input: {e}"))?;
            let output = O::deserialize(output).map_err(|e| format!("tool output: {e}"))?;
            let mut meta: M = decode(stored)?;
            f(&mut meta, &input, &output).map_err(|e| e.message)?;
            let after = encode(&meta)?;
            let before = match stored {
                Some(v) => v.clone(),
                None => encode(&M::default())?,
            };
            Ok((after != before).then_some(after))
        });
        self.by_tool
            .entry(tool.name().to_string())
            .or_default()
            .push((MetaType::of::<M>(), handler));
    }

    /// Whether `tool` has a handler.
    pub(crate) fn handles(&self, tool: &str) -> bool {
        self.by_tool.contains_key(tool)
    }

    /// The first handler whose metadata type is not the agent's.
    pub(crate) fn mistyped(&self, agent: MetaType) -> Option<(&str, MetaType)> {
        self.by_tool.iter().find_map(|(tool, hs)| {
            hs.iter()
                .find(|(t, _)| *t != agent)
                .map(|(t, _)| (tool.as_str(), *t))
        })
    }

    /// Runs `tool`'s handlers in order over one successful output; returns
    /// the metadata they leave when it changed.
    pub(crate) fn run(
        &self,
        tool: &str,
        stored: Option<&Value>,
        input: &Value,
        output: &Value,
    ) -> Result<Option<Value>, String> {
        let mut current = stored.cloned();
        let mut changed = false;
        for (_, handler) in self.by_tool.get(tool).into_iter().flatten() {
            if let Some(next) = handler(current.as_ref(), input, output)? {
                current = Some(next);
                changed = true;
            }
        }
        Ok(if changed { current } else { None })
    }
}
