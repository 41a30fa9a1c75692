//! Agent definitions.

use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;

use crate::error::HookError;
use crate::lifecycle::{Lifecycle, NoLifecycle};
use crate::metadata::{MetaType, RunMetadata};
use crate::on_output::OnOutputs;
use crate::tool::Tool;
use crate::tool::TypedTool;

/// An agent: a name, a default model, instructions, tools and one lifecycle.
pub struct Agent<C> {
    pub(crate) name: String,
    pub(crate) model: String,
    pub(crate) instructions: String,
    pub(crate) tools: Vec<Arc<dyn Tool>>,
    pub(crate) lifecycle: Box<dyn Lifecycle<C>>,
    pub(crate) max_steps: u32,
    /// The type of each run's metadata (`()` unless named).
    pub(crate) metadata: MetaType,
    pub(crate) on_output: OnOutputs,
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
            .field("metadata", &self.metadata.name())
            .field("on_output", &self.on_output)
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
            metadata: MetaType::of::<()>(),
            on_output: OnOutputs::default(),
        }
    }

    /// Names the type of each run's metadata: it starts as `M::default()`,
    /// hooks read and write it through [`crate::HookCx`], `on_output`
    /// handlers update it, and it survives waiting and resume.
    pub fn run_metadata<M: RunMetadata>(mut self) -> Self {
        self.metadata = MetaType::of::<M>();
        self
    }

    /// Registers a typed tool (see [`crate::typed_tool`], [`crate::client_tool`]).
    pub fn typed_tool<I, O>(self, tool: &TypedTool<I, O>) -> Self {
        self.tool(tool.tool())
    }

    /// Runs `f` on each successful output of `tool` (SPEC T6), typed with
    /// that tool's own input and output; `f` may update the run metadata
    /// `M`, which must be the type named by [`Agent::run_metadata`] (checked
    /// when the runtime is built). An error from `f` fails the run.
    ///
    /// When it runs (SPEC K5): right after the tool's output, before
    /// `after_tool_result`, while the step's results are produced. It reads
    /// the metadata as the results produced so far left it (a handler of
    /// an earlier call of the same step, an `after_tool_result` hook that
    /// wrote it), and its change commits in the same store write as the
    /// result it is about: a result that is never committed (a crash, a
    /// lost lease, a failed step) leaves no trace of it, so a call run
    /// again after a crash counts once.
    ///
    /// SPEC T6: a handler typed with its own tool's input and output
    /// compiles:
    ///
    /// ```
    /// use pai_runtime::{Agent, ToolError, typed_tool};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Deserialize)]
    /// struct WeatherIn { city: String }
    /// #[derive(Serialize, Deserialize)]
    /// struct WeatherOut { celsius: i32 }
    /// #[derive(Default, Serialize, Deserialize)]
    /// struct Seen { readings: Vec<i32> }
    ///
    /// let weather = typed_tool("weather", "today's weather", false, |_cx, i: WeatherIn| async move {
    ///     Ok::<_, ToolError>(WeatherOut { celsius: i.city.len() as i32 })
    /// });
    /// let _agent = Agent::<()>::new("a", "m")
    ///     .run_metadata::<Seen>()
    ///     .typed_tool(&weather)
    ///     .on_output(&weather, |seen: &mut Seen, _input: &WeatherIn, output: &WeatherOut| {
    ///         seen.readings.push(output.celsius);
    ///         Ok(())
    ///     });
    /// ```
    ///
    /// and one typed for another tool does not: the compiler refuses it
    /// with a closure type mismatch (E0631), nothing else:
    ///
    /// ```compile_fail,E0631
    /// use pai_runtime::{Agent, ToolError, typed_tool};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Deserialize)]
    /// struct WeatherIn { city: String }
    /// #[derive(Serialize, Deserialize)]
    /// struct WeatherOut { celsius: i32 }
    /// #[derive(Deserialize)]
    /// struct SearchIn { query: String }
    /// #[derive(Serialize, Deserialize)]
    /// struct SearchOut { hits: Vec<String> }
    /// #[derive(Default, Serialize, Deserialize)]
    /// struct Seen { hits: usize }
    ///
    /// let weather = typed_tool("weather", "today's weather", false, |_cx, i: WeatherIn| async move {
    ///     Ok::<_, ToolError>(WeatherOut { celsius: i.city.len() as i32 })
    /// });
    /// let _agent = Agent::<()>::new("a", "m")
    ///     .run_metadata::<Seen>()
    ///     .typed_tool(&weather)
    ///     .on_output(&weather, |seen: &mut Seen, input: &SearchIn, output: &SearchOut| {
    ///         seen.hits += output.hits.len() + input.query.len();
    ///         Ok(())
    ///     });
    /// ```
    pub fn on_output<I, O, M>(
        mut self,
        tool: &TypedTool<I, O>,
        f: impl Fn(&mut M, &I, &O) -> Result<(), HookError> + Send + Sync + 'static,
    ) -> Self
    where
        I: DeserializeOwned + 'static,
        O: DeserializeOwned + 'static,
        M: RunMetadata,
    {
        self.on_output.add(tool, f);
        self
    }

    /// The agent's instructions (its system prompt), sent with every model
    /// request; empty by default.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = text.into();
        self
    }

    /// Adds a tool the model may call, offered in the order added (build one
    /// with [`tool_fn`](crate::tool_fn), [`typed_tool`](crate::typed_tool) or
    /// [`client_tool`](crate::client_tool)).
    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// The agent's lifecycle, replacing any set before: usually a
    /// [`compose`](crate::compose)d list of hooks. Without one, no hook runs
    /// (every phase still emits its events).
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

    /// The agent's name: threads belong to one agent, and a client reaches only
    /// its own agent's threads (SPEC H4).
    pub fn name(&self) -> &str {
        &self.name
    }
}
