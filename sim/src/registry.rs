//! The hooks a scenario can name, and what a harness added: every kind of
//! the built-in library and the harness's own hooks, registered alike by
//! name (`hook = "<kind>"` or `use = "<name>"`), the configurations fuzz
//! cases draw for them, and the harness's oracles. A scenario is checked
//! against one registry (the library alone without a harness).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use pai_runtime::{LanguageModel, Tool};
use schemars::{Schema, SchemaGenerator};
use serde_json::{Map, Value};

use crate::agent_types::AgentTypes;
use crate::configured::{ConfigError, Factory as Configured, Typed as TypedConfig};
use crate::hooks::{Factory, HookSpec, Kinds, Maker, Typed, UserHook, UserHookDef};
use crate::observe::{UserOracle, UserOracles};
use crate::user_model::{UserModel, UserModelDef};
use crate::user_tool::{UserTool, UserToolDef};

/// What makes a registered tool, and a registered model.
type ToolFactory = dyn Configured<Arc<dyn Tool>>;
type ModelFactory = dyn Configured<Arc<dyn LanguageModel>>;

/// The hooks known by name, in name order: the built-in library's kinds
/// (registered by [`Registry::default`]) and a harness's own; and the
/// harness's oracles, in the order they were registered.
#[derive(Clone)]
pub struct Registry {
    hooks: BTreeMap<String, Arc<dyn Factory>>,
    /// The names the built-in library registered: no harness takes them.
    library: BTreeSet<String>,
    /// The hooks a fuzz campaign draws, each with its drawer of
    /// configurations.
    drawers: BTreeMap<String, Drawer>,
    /// Texts of the author's domain that fuzz cases weave into what their
    /// users and models say.
    words: Vec<String>,
    oracles: Vec<UserOracle>,
    /// The tools it knows by name (`[[agent.tools]] use = "<name>"`).
    tools: BTreeMap<String, Arc<ToolFactory>>,
    /// The models it knows by name (`[model] use = "<name>"`).
    models: BTreeMap<String, Arc<ModelFactory>>,
    /// The tools fuzz cases draw: a drawer of configurations and one of
    /// call inputs each.
    tool_drawers: BTreeMap<String, (Drawer, InputDrawer)>,
    /// The models fuzz cases draw, with their drawers of configurations.
    model_drawers: BTreeMap<String, Drawer>,
    /// The agent's run metadata and context types (the simulator's own
    /// unless a typed harness names the author's).
    types: AgentTypes,
}

/// Draws one configuration of a registered hook from a seed (the same seed,
/// the same configuration), as the entry's fields; or why it cannot.
pub(crate) type Drawer = Arc<dyn Fn(u64) -> Result<Map<String, Value>, String> + Send + Sync>;

/// Draws one input of a registered tool's calls from a seed.
pub(crate) type InputDrawer = Arc<dyn Fn(u64) -> Result<Value, String> + Send + Sync>;

/// An entry checked by the registry: the hook it builds and what the
/// oracles know of it.
pub(crate) enum Checked {
    /// A kind the oracles foresee, as they model it, and its maker.
    Foreseen(HookSpec, Maker),
    /// A harness's own hook: the oracles know only its phases.
    Unforeseen(UserHookDef),
}

/// Why the registry refuses an entry: the field at fault (`None`: the name
/// the entry is registered under) and the reason.
#[derive(Debug, PartialEq)]
pub(crate) struct Refusal {
    pub(crate) field: Option<String>,
    pub(crate) message: String,
}

impl Refusal {
    fn at(field: Option<&str>, message: impl Into<String>) -> Refusal {
        let message = message.into();
        let field = field.map(str::to_string);
        Refusal { field, message }
    }
}

impl Default for Registry {
    /// The built-in library, every kind under its `hook` name.
    fn default() -> Registry {
        Registry::with_library()
    }
}

impl Kinds for Registry {
    fn kind<C: UserHook>(&mut self, name: &str) {
        let fresh = self.hook::<C>(name);
        debug_assert!(fresh, "the library registers {name:?} twice");
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("hooks", &self.authored().collect::<Vec<_>>())
            .field("oracles", &self.oracles().names().collect::<Vec<_>>())
            .field("tools", &self.tools.keys())
            .field("models", &self.models.keys())
            .finish()
    }
}

impl Registry {
    /// The built-in library's kinds, each registered under the name
    /// `hook = "..."` gives it, through [`Registry::hook`]; no hook of a
    /// harness yet.
    pub fn with_library() -> Registry {
        let mut registry = Registry {
            hooks: BTreeMap::new(),
            library: BTreeSet::new(),
            drawers: BTreeMap::new(),
            words: Vec::new(),
            oracles: Vec::new(),
            tools: BTreeMap::new(),
            models: BTreeMap::new(),
            tool_drawers: BTreeMap::new(),
            model_drawers: BTreeMap::new(),
            types: AgentTypes::default(),
        };
        crate::hooks::register_library(&mut registry);
        registry.library = registry.hooks.keys().cloned().collect();
        registry
    }

    /// Registers `C` under `name`; `false` if the name was taken, by the
    /// library or an earlier registration (the first registration stays).
    pub fn hook<C: UserHook>(&mut self, name: &str) -> bool {
        if self.hooks.contains_key(name) {
            return false;
        }
        let factory: Arc<dyn Factory> = Arc::new(Typed::<C>(PhantomData));
        self.hooks.insert(name.to_string(), factory);
        true
    }

    /// Registers `H`, a hook for the author's context `C` and run metadata
    /// `M`, under `name`; `false` if the name was taken.
    pub(crate) fn typed_hook<H, C, M>(&mut self, name: &str) -> bool
    where
        H: UserHook<C, M>,
        C: Send + Sync + 'static,
        M: 'static,
    {
        if self.hooks.contains_key(name) {
            return false;
        }
        let factory: Arc<dyn Factory> = Arc::new(Typed::<H, C, M>(PhantomData));
        self.hooks.insert(name.to_string(), factory);
        true
    }

    /// Names the agent's run metadata and context types (a typed harness).
    pub(crate) fn set_types(&mut self, types: AgentTypes) {
        self.types = types;
    }

    /// The agent's run metadata and context types.
    pub(crate) fn types(&self) -> &AgentTypes {
        &self.types
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

    /// The registered oracles' names, in the order registered.
    pub fn oracle_names(&self) -> impl Iterator<Item = &str> {
        self.oracles.iter().map(UserOracle::name)
    }

    /// The registered oracles, for a scenario checked with this registry.
    pub fn oracles(&self) -> UserOracles {
        UserOracles::new(self.oracles.clone())
    }

    /// Every registered hook's name, the library's and a harness's, in
    /// order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.hooks.keys().map(String::as_str)
    }

    /// The built-in library's kinds, in order.
    pub fn library(&self) -> impl Iterator<Item = &str> {
        self.library.iter().map(String::as_str)
    }

    /// Whether `name` is a kind of the built-in library.
    pub fn is_library(&self, name: &str) -> bool {
        self.library.contains(name)
    }

    /// The hooks a harness registered, beside the library, in order.
    pub fn authored(&self) -> impl Iterator<Item = &str> {
        self.names().filter(|n| !self.is_library(n))
    }

    /// Each hook a harness registered with its configuration's schema (the
    /// library's are the published schema's own).
    pub fn schemas(&self, generator: &mut SchemaGenerator) -> Vec<(String, Schema)> {
        let hooks = self.hooks.iter().filter(|(n, _)| !self.is_library(n));
        hooks
            .map(|(n, f)| (n.clone(), f.schema(generator)))
            .collect()
    }

    /// The entry registered as `use_name`, naming itself `given`, with
    /// `config`, checked into a hook of the scenario; or why not. A kind
    /// the oracles foresee is checked as the library checks it; an
    /// author's hook only by its configuration's type.
    pub(crate) fn check(
        &self,
        use_name: &str,
        given: Option<&str>,
        config: &Map<String, Value>,
    ) -> Result<Checked, Refusal> {
        let Some(factory) = self.hooks.get(use_name) else {
            return Err(Refusal::at(None, self.unknown(use_name)));
        };
        let (make, foreseen) = factory
            .check(config)
            .map_err(|e| Refusal::at(e.field.as_deref(), e.message))?;
        if let Some(spec) = foreseen {
            if let Some(message) = spec
                .reads_json_metadata()
                .then(|| self.types.refuses_json_metadata(spec.kind()))
                .flatten()
            {
                return Err(Refusal::at(None, message));
            }
            let spec = spec.named(given);
            if let Err((field, message)) = spec.check() {
                let message = format!("{}: {message}", spec.kind());
                return Err(Refusal::at(Some(field), message));
            }
            return Ok(Checked::Foreseen(spec, make));
        }
        if given.is_some_and(|n| n.trim().is_empty()) {
            let message = "must not be empty (leave it out for a generated name)";
            return Err(Refusal::at(Some("name"), message));
        }
        let context = crate::hooks::BuildContext::default();
        let phases = make(use_name, &context).phases();
        Ok(Checked::Unforeseen(UserHookDef {
            use_name: use_name.to_string(),
            config: config.clone(),
            phases,
            make,
        }))
    }

    fn unknown(&self, use_name: &str) -> String {
        let known: Vec<&str> = self.authored().collect();
        match known.is_empty() {
            true => format!(
                "no hook is registered as {use_name:?}: only a pai_sim::Harness knows hooks by name beyond the built-in library's kinds (`hook = \"...\"`)"
            ),
            false => format!("no hook is registered as {use_name:?}; registered: {known:?}"),
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
        let factory: Arc<ToolFactory> = Arc::new(TypedConfig::<T>::new());
        self.tools.insert(name.to_string(), factory);
        true
    }

    /// Lets fuzz cases draw the tool registered as `name`: its
    /// configurations from `configs`, its calls' inputs from `inputs`.
    pub(crate) fn drawn_tool(&mut self, name: &str, configs: Drawer, inputs: InputDrawer) {
        self.tool_drawers
            .insert(name.to_string(), (configs, inputs));
    }

    /// The tools fuzz cases draw, in name order, with their drawers.
    pub(crate) fn tool_drawers(&self) -> impl Iterator<Item = (&str, &(Drawer, InputDrawer))> {
        self.tool_drawers.iter().map(|(n, d)| (n.as_str(), d))
    }

    /// Lets fuzz cases draw the model registered as `name`, its
    /// configurations from `configs`.
    pub(crate) fn drawn_model(&mut self, name: &str, configs: Drawer) {
        self.model_drawers.insert(name.to_string(), configs);
    }

    /// The models fuzz cases draw, in name order, with their drawers.
    pub(crate) fn model_drawers(&self) -> impl Iterator<Item = (&str, &Drawer)> {
        self.model_drawers.iter().map(|(n, d)| (n.as_str(), d))
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
    ) -> Result<(UserToolDef, String), ConfigError> {
        match self.tools.get(use_name) {
            Some(factory) => UserToolDef::check(use_name, config, factory.as_ref()),
            None if self.tools.is_empty() => Err(ConfigError::from(format!(
                "no tool is registered as {use_name:?}: only a pai_sim::Harness knows tools by name (Harness::tool); a scripted tool has `name` and one of output, echo, fail, throw, panic, client"
            ))),
            None => {
                let known: Vec<&str> = self.tool_names().collect();
                Err(ConfigError::from(format!(
                    "no tool is registered as {use_name:?}; registered: {known:?}"
                )))
            }
        }
    }
}

/// The registered models (`[model] use = "<name>"`).
impl Registry {
    /// Registers the model configuration `M` under `name`; `false` if a
    /// model of that name was registered already (the first stays).
    pub fn model<M: UserModel>(&mut self, name: &str) -> bool {
        if self.models.contains_key(name) {
            return false;
        }
        let factory: Arc<ModelFactory> = Arc::new(TypedConfig::<M>::new());
        self.models.insert(name.to_string(), factory);
        true
    }

    /// The registered models' names, in order.
    pub fn model_names(&self) -> impl Iterator<Item = &str> {
        self.models.keys().map(String::as_str)
    }

    /// Each registered model's name with its configuration's schema.
    pub fn model_schemas(&self, generator: &mut SchemaGenerator) -> Vec<(String, Schema)> {
        let models = self.models.iter();
        models
            .map(|(n, f)| (n.clone(), f.schema(generator)))
            .collect()
    }

    /// The script `use_name` with `config`, checked: the registered model;
    /// or why not.
    pub(crate) fn check_model(
        &self,
        use_name: &str,
        config: &Map<String, Value>,
    ) -> Result<UserModelDef, ConfigError> {
        match self.models.get(use_name) {
            Some(factory) => UserModelDef::check(use_name, config, factory.as_ref()),
            None if self.models.is_empty() => Err(ConfigError::from(format!(
                "no model is registered as {use_name:?}: only a pai_sim::Harness knows models by name (Harness::model); a scripted model has `turns`, `replay` or `unavailable`"
            ))),
            None => {
                let known: Vec<&str> = self.model_names().collect();
                Err(ConfigError::from(format!(
                    "no model is registered as {use_name:?}; registered: {known:?}"
                )))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::{RecentWindow, Uppercase};

    fn config(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn the_registry_lists_the_librarys_30_kinds_by_their_hook_names() {
        let registry = Registry::default();
        let schema = crate::scenario::ScenarioSpec::schema();
        let kinds = schema.pointer("/$defs/HookSpec/properties/hook/enum");
        let kinds: BTreeSet<&str> = kinds
            .and_then(Value::as_array)
            .map(|k| k.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let library: BTreeSet<&str> = registry.library().collect();
        assert_eq!(library.len(), 30);
        assert_eq!(library, kinds);
        assert!(registry.names().eq(registry.library()));
        assert_eq!(registry.authored().count(), 0);
    }

    #[test]
    fn a_library_name_is_taken_and_other_names_are_free() {
        let mut registry = Registry::default();
        assert!(!registry.hook::<Uppercase>("system_message"));
        assert!(registry.hook::<Uppercase>("shout"));
        assert!(registry.authored().eq(["shout"]));
        assert!(!registry.is_library("shout") && registry.is_library("uppercase"));
    }

    #[test]
    fn a_library_kind_is_foreseen_named_and_checked_as_the_library_checks_it() {
        let registry = Registry::default();
        let checked = registry.check(
            "recent_window",
            Some("w"),
            &config(serde_json::json!({"last": 2})),
        );
        let Ok(Checked::Foreseen(spec, _)) = checked else {
            panic!("not foreseen")
        };
        let window = RecentWindow {
            name: Some("w".into()),
            last: 2,
        };
        assert_eq!(spec, HookSpec::RecentWindow(window));
        let refused = registry.check(
            "recent_window",
            None,
            &config(serde_json::json!({"last": 0})),
        );
        let message = "recent_window: must be at least 1: a window of 0 sends the model nothing";
        assert_eq!(refused.err(), Some(Refusal::at(Some("last"), message)));
        let unknown = registry.check("recnt_window", None, &Map::new()).err();
        let unknown = unknown.map(|r| (r.field, r.message.contains("beyond the built-in library")));
        assert_eq!(unknown, Some((None, true)));
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Quiet {}

    struct Silent;

    impl pai_runtime::LanguageModel for Silent {
        fn stream<'a>(
            &'a self,
            _: &'a pai_runtime::ModelRequest,
        ) -> pai_runtime::HookFuture<
            'a,
            Result<pai_runtime::model::BoxStream, pai_runtime::ModelError>,
        > {
            pai_runtime::HookFuture::ready(Err(pai_runtime::ModelError::Provider("silent".into())))
        }
    }

    impl crate::UserModel for Quiet {
        fn build(&self, _: &str) -> Arc<dyn pai_runtime::LanguageModel> {
            Arc::new(Silent)
        }
    }

    #[test]
    fn a_model_name_is_taken_once_and_an_unknown_one_names_the_registered() {
        let mut registry = Registry::default();
        assert!(registry.check_model("quiet", &Map::new()).is_err());
        assert!(registry.model::<Quiet>("quiet"));
        assert!(!registry.model::<Quiet>("quiet"));
        assert!(registry.model_names().eq(["quiet"]));
        assert!(registry.check_model("quiet", &Map::new()).is_ok());
        let refused = registry.check_model("quite", &Map::new()).err();
        assert_eq!(
            refused.map(|e| e.message).as_deref(),
            Some("no model is registered as \"quite\"; registered: [\"quiet\"]")
        );
        let bad = registry.check_model("quiet", &config(serde_json::json!({"x": 1})));
        assert!(bad.is_ok(), "Quiet reads past unknown fields");
    }
}
