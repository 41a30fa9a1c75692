//! Agent definitions.

use std::fmt;
use std::sync::Arc;

use crate::lifecycle::{Lifecycle, NoLifecycle};
use crate::tool::Tool;

/// An agent: a name, a default model, instructions, tools and one lifecycle.
pub struct Agent<C> {
    pub(crate) name: String,
    pub(crate) model: String,
    pub(crate) instructions: String,
    pub(crate) tools: Vec<Arc<dyn Tool>>,
    pub(crate) lifecycle: Box<dyn Lifecycle<C>>,
    pub(crate) max_steps: u32,
}

impl<C: 'static> fmt::Debug for Agent<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("name", &self.name)
            .field("model", &self.model)
            .field(
                "tools",
                &self
                    .tools
                    .iter()
                    .map(|t| &t.spec().name)
                    .collect::<Vec<_>>(),
            )
            .field("lifecycle", &self.lifecycle.name())
            .field("max_steps", &self.max_steps)
            .finish()
    }
}

impl<C: 'static> Agent<C> {
    /// An agent with no tools, no hooks and a limit of 16 steps per run.
    pub fn new(name: impl Into<String>, model: impl Into<String>) -> Agent<C> {
        Agent {
            name: name.into(),
            model: model.into(),
            instructions: String::new(),
            tools: Vec::new(),
            lifecycle: Box::new(NoLifecycle),
            max_steps: 16,
        }
    }

    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = text.into();
        self
    }

    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    pub fn lifecycle(mut self, lifecycle: impl Lifecycle<C>) -> Self {
        self.lifecycle = Box::new(lifecycle);
        self
    }

    /// Steps per run before the run completes with reason `max_steps` (SPEC
    /// A2). It must be at least 1: a runtime for an agent with a limit of 0
    /// is refused when it is built ([`crate::BuildError::MaxSteps`]).
    pub fn max_steps(mut self, n: u32) -> Self {
        self.max_steps = n;
        self
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}
