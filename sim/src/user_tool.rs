//! Tools an agent author registers with a [`crate::Harness`]: the
//! [`UserTool`] trait a configuration type implements, the factory that
//! reads an `[[agent.tools]] use = "..."` entry into it, and a registered
//! tool of one scenario, checked at load. The names live in the
//! [`crate::Registry`].

use std::fmt;
use std::sync::Arc;

use pai_runtime::{Tool, tool::ToolKind};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::configured::{Builds, ConfigError, Factory, Maker};

/// A configuration that builds a tool: the type a scenario's
/// `[[agent.tools]] use = "..."` entry is read into (its fields are the
/// entry's other fields), and whose [`build`](UserTool::build) makes the
/// author's own tool (a [`pai_runtime::tool_fn`], a
/// [`pai_runtime::typed_tool`]'s `.tool()`, or any [`Tool`]).
///
/// The tool runs on the simulator's virtual clock, in one thread: its
/// calls must not read wall time or sleep on it (`std::time::Instant`,
/// `std::thread::sleep`), nor wait on real I/O; wait with
/// `tokio::time::sleep`, which the simulator's clock drives. Each run of a
/// scenario (and each worker) builds its tools afresh: keep any state in
/// the tool, not in a `static`, or the two runs D4 compares differ.
///
/// ```
/// use std::sync::Arc;
/// use pai_runtime::{Tool, ToolError, tool_fn};
/// use pai_sim::{Harness, UserTool};
/// use serde_json::json;
///
/// /// Refunds an order, up to `limit`.
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Refund {
///     limit: u64,
/// }
///
/// #[derive(serde::Deserialize)]
/// struct Input {
///     amount: u64,
/// }
///
/// impl UserTool for Refund {
///     fn build(&self, name: &str) -> Arc<dyn Tool> {
///         let limit = self.limit;
///         tool_fn(name, "Refunds an order.", move |_cx, i: Input| async move {
///             match i.amount <= limit {
///                 true => Ok(json!({ "refunded": i.amount })),
///                 false => Err(ToolError::Fail(json!({ "limit": limit }))),
///             }
///         })
///     }
/// }
///
/// let mut harness = Harness::new();
/// harness.tool::<Refund>("refund");
/// let text = r#"
/// name = "a refund waits for approval"
/// rules = ["T7"]
///
/// [[agent.tools]]
/// use = "refund"
/// approval = true
/// limit = 100
///
/// [[timeline]]
/// send = "Refund 30."
/// "#;
/// let scenario = harness.parse("refund.toml", text).unwrap();
/// assert_eq!(scenario.agent.tools[0].approval, pai_sim::Approval::Always);
/// ```
pub trait UserTool: DeserializeOwned + JsonSchema + Send + Sync + 'static {
    /// The tool this configuration describes. The simulator names it
    /// `name` (the entry's `name`, else the `use` name) whatever its own
    /// spec says, and keeps its description; a tool of kind `Approval`
    /// waits for approval as if the entry said `approval = true`, and a
    /// call waits whenever the tool's `needs_approval` holds on its input
    /// (or the entry's `approval` does: SPEC T7, decided per call). A client
    /// tool is refused at load (script one with `client = true`). Called
    /// once at load (to read the kind and description) and once per run
    /// (and per worker): keep it free of side effects.
    fn build(&self, name: &str) -> Arc<dyn Tool>;
}

impl<T: UserTool> Builds<Arc<dyn Tool>> for T {
    fn make(&self, name: &str) -> Arc<dyn Tool> {
        self.build(name)
    }
}

/// A registered tool of one scenario, checked: the name it was registered
/// under, its configuration as written, and the kind and description of
/// the tool it builds (the oracles know no more of it).
#[derive(Clone)]
pub struct UserToolDef {
    /// The name the tool was registered under (`use = "..."`).
    pub use_name: String,
    /// The entry's configuration, as the scenario wrote it.
    pub config: Map<String, Value>,
    /// Who runs the built tool's calls, as the tool says (never a client).
    pub kind: ToolKind,
    pub(crate) make: Maker<Arc<dyn Tool>>,
}

impl UserToolDef {
    /// Checks `config` with `factory` and builds the tool once, to read its
    /// kind and description; a client tool is refused.
    pub(crate) fn check(
        use_name: &str,
        config: &Map<String, Value>,
        factory: &dyn Factory<Arc<dyn Tool>>,
    ) -> Result<(UserToolDef, String), ConfigError> {
        let make = factory.check(config)?;
        let built = make(use_name);
        let kind = built.kind();
        if kind == ToolKind::Client {
            return Err(ConfigError::from(format!(
                "the tool registered as {use_name:?} is a client tool: the client runs those, so script it with `client = true` instead"
            )));
        }
        let description = built.spec().description.clone();
        let def = UserToolDef {
            use_name: use_name.to_string(),
            config: config.clone(),
            kind,
            make,
        };
        Ok((def, description))
    }

    /// The author's tool, built for the name `name`.
    pub fn build(&self, name: &str) -> Arc<dyn Tool> {
        (self.make)(name)
    }
}

impl fmt::Debug for UserToolDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserToolDef")
            .field("use_name", &self.use_name)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl PartialEq for UserToolDef {
    fn eq(&self, other: &UserToolDef) -> bool {
        (&self.use_name, &self.config) == (&other.use_name, &other.config)
    }
}
