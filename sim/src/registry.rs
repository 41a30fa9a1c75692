//! What a harness registered: its hooks by name (`use = "<name>"`), the
//! configurations fuzz cases draw for them, and its own oracles. A
//! scenario is checked against one registry (empty without a harness).

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use schemars::{Schema, SchemaGenerator};
use serde_json::{Map, Value};

use crate::hooks::{Factory, Typed, UserHook, UserHookDef};
use crate::observe::{UserOracle, UserOracles};
use crate::user_tool::{ToolFactory, TypedTool, UserTool, UserToolDef};

/// What a harness registered: the hooks it knows by name
/// (`use = "<name>"`), in name order, and its own oracles, in the order
/// they were registered.
#[derive(Clone, Default)]
pub struct Registry {
    hooks: BTreeMap<String, Arc<dyn Factory>>,
    /// The hooks a fuzz campaign draws, each with its drawer of
    /// configurations.
    drawers: BTreeMap<String, Drawer>,
    /// Texts of the author's domain that fuzz cases weave into what their
    /// users and models say.
    words: Vec<String>,
    oracles: Vec<UserOracle>,
    /// The tools it knows by name (`[[agent.tools]] use = "<name>"`).
    tools: BTreeMap<String, Arc<dyn ToolFactory>>,
}

/// Draws one configuration of a registered hook from a seed (the same seed,
/// the same configuration), as the entry's fields; or why it cannot.
pub(crate) type Drawer = Arc<dyn Fn(u64) -> Result<Map<String, Value>, String> + Send + Sync>;

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("hooks", &self.hooks.keys())
            .field("oracles", &self.oracles().names().collect::<Vec<_>>())
            .field("tools", &self.tools.keys())
            .finish()
    }
}

impl Registry {
    /// Registers `C` under `name`; `false` if the name was taken (the
    /// first registration stays).
    pub fn hook<C: UserHook>(&mut self, name: &str) -> bool {
        if self.hooks.contains_key(name) {
            return false;
        }
        let factory: Arc<dyn Factory> = Arc::new(Typed::<C>(PhantomData));
        self.hooks.insert(name.to_string(), factory);
        true
    }

    /// Lets fuzz cases draw the hook registered as `name`, its
    /// configurations from `drawer`.
    pub(crate) fn drawn(&mut self, name: &str, drawer: Drawer) {
        self.drawers.insert(name.to_string(), drawer);
    }

    /// The hooks fuzz cases draw, in name order, with their drawers.
    pub(crate) fn drawers(&self) -> impl Iterator<Item = (&str, &Drawer)> {
        self.drawers.iter().map(|(n, d)| (n.as_str(), d))
    }

    /// Adds texts fuzz cases weave into what users and models say.
    pub(crate) fn add_words(&mut self, words: impl IntoIterator<Item = String>) {
        self.words.extend(words);
    }

    /// The texts fuzz cases weave in, in the order added.
    pub(crate) fn words(&self) -> &[String] {
        &self.words
    }

    /// Registers `oracle`; `false` if an oracle of its name was
    /// registered already (the first stays).
    pub(crate) fn oracle(&mut self, oracle: UserOracle) -> bool {
        if self.oracles.iter().any(|o| o.name() == oracle.name()) {
            return false;
        }
        self.oracles.push(oracle);
        true
    }

    /// The registered oracles, for a scenario checked with this registry.
    pub fn oracles(&self) -> UserOracles {
        UserOracles::new(self.oracles.clone())
    }

    /// The registered hooks' names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.hooks.keys().map(String::as_str)
    }

    /// Each registered name with its configuration's schema.
    pub fn schemas(&self, generator: &mut SchemaGenerator) -> Vec<(String, Schema)> {
        let hooks = self.hooks.iter();
        hooks
            .map(|(n, f)| (n.clone(), f.schema(generator)))
            .collect()
    }

    /// The entry `use_name` with `config`, checked into a hook of the
    /// scenario: its maker and the phases the hook handles; or why not.
    pub(crate) fn check(
        &self,
        use_name: &str,
        config: &Map<String, Value>,
    ) -> Result<UserHookDef, String> {
        let Some(factory) = self.hooks.get(use_name) else {
            return Err(self.unknown(use_name));
        };
        let make = factory.check(config)?;
        let phases = make(use_name).phases();
        Ok(UserHookDef {
            use_name: use_name.to_string(),
            config: config.clone(),
            phases,
            make,
        })
    }

    fn unknown(&self, use_name: &str) -> String {
        match self.hooks.is_empty() {
            true => format!(
                "no hook is registered as {use_name:?}: only a pai_sim::Harness knows hooks by name (the pai-sim binary runs the built-in library, `hook = \"...\"`)"
            ),
            false => {
                let known: Vec<&str> = self.names().collect();
                format!("no hook is registered as {use_name:?}; registered: {known:?}")
            }
        }
    }
}

/// The registered tools (`[[agent.tools]] use = "<name>"`).
impl Registry {
    /// Registers the tool configuration `T` under `name`; `false` if a
    /// tool of that name was registered already (the first stays).
    pub fn tool<T: UserTool>(&mut self, name: &str) -> bool {
        if self.tools.contains_key(name) {
            return false;
        }
        let factory: Arc<dyn ToolFactory> = Arc::new(TypedTool::<T>(PhantomData));
        self.tools.insert(name.to_string(), factory);
        true
    }

    /// The registered tools' names, in order.
    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// Each registered tool's name with its configuration's schema.
    pub fn tool_schemas(&self, generator: &mut SchemaGenerator) -> Vec<(String, Schema)> {
        let tools = self.tools.iter();
        tools
            .map(|(n, f)| (n.clone(), f.schema(generator)))
            .collect()
    }

    /// The tool entry `use_name` with `config`, checked: the registered
    /// tool and its description; or why not.
    pub(crate) fn check_tool(
        &self,
        use_name: &str,
        config: &Map<String, Value>,
    ) -> Result<(UserToolDef, String), String> {
        match self.tools.get(use_name) {
            Some(factory) => UserToolDef::check(use_name, config, factory.as_ref()),
            None if self.tools.is_empty() => Err(format!(
                "no tool is registered as {use_name:?}: only a pai_sim::Harness knows tools by name (Harness::tool); a scripted tool has `name` and one of output, echo, fail, throw, panic, client"
            )),
            None => {
                let known: Vec<&str> = self.tool_names().collect();
                Err(format!(
                    "no tool is registered as {use_name:?}; registered: {known:?}"
                ))
            }
        }
    }
}
