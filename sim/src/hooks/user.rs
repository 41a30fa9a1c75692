//! Hooks an agent author registers with a [`crate::Harness`]: the
//! [`UserHook`] trait a configuration type implements, the registry of
//! names, and a registered hook of one scenario, checked at load.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use pai_runtime::hook::{Phase, Phases};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::shared::SimHook;

/// A configuration that builds a hook: the type a scenario's
/// `[[lifecycle]] use = "..."` entry is read into (its fields are the
/// entry's other fields), and whose [`build`](UserHook::build) makes the
/// hook. The hook runs with the simulator's context, so write it generic
/// over the context (`impl<C: Send + Sync + 'static> Lifecycle<C> for ...`)
/// or for [`SimContext`](crate::hooks::SimContext).
pub trait UserHook: DeserializeOwned + JsonSchema + Send + Sync + 'static {
    /// The hook this configuration describes, named `name` in the event
    /// log (return it from `Lifecycle::name`, so a failing oracle names it).
    fn build(&self, name: &str) -> SimHook;
}

/// Makes a registered kind's hooks from an entry's configuration.
trait Factory: Send + Sync {
    /// The configuration read, as a maker of hooks; or why it is refused.
    fn check(&self, config: &Map<String, Value>) -> Result<Maker, String>;
    /// The configuration's schema.
    fn schema(&self, generator: &mut SchemaGenerator) -> Schema;
}

/// Builds one scenario's hook (under the name the log shows).
type Maker = Arc<dyn Fn(&str) -> SimHook + Send + Sync>;

struct Typed<C>(PhantomData<fn() -> C>);

impl<C: UserHook> Factory for Typed<C> {
    fn check(&self, config: &Map<String, Value>) -> Result<Maker, String> {
        let typed: C =
            serde_json::from_value(Value::Object(config.clone())).map_err(|e| e.to_string())?;
        Ok(Arc::new(move |name: &str| typed.build(name)))
    }

    fn schema(&self, generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<C>()
    }
}

/// The hooks a harness knows by name (`use = "<name>"`), in name order.
#[derive(Clone, Default)]
pub struct Registry {
    hooks: BTreeMap<String, Arc<dyn Factory>>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.hooks.keys()).finish()
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

    /// The registered names, in order.
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

/// A registered hook of one scenario, checked: the name it was registered
/// under, its configuration as written, and the phases it handles.
#[derive(Clone)]
pub struct UserHookDef {
    pub use_name: String,
    pub config: Map<String, Value>,
    pub phases: Phases,
    make: Maker,
}

impl UserHookDef {
    /// The hook, named `name` in the event log.
    pub fn build(&self, name: &str) -> SimHook {
        (self.make)(name)
    }

    pub fn handles(&self, phase: Phase) -> bool {
        self.phases.contains(phase)
    }
}

impl fmt::Debug for UserHookDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserHookDef")
            .field("use_name", &self.use_name)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl PartialEq for UserHookDef {
    fn eq(&self, other: &UserHookDef) -> bool {
        (&self.use_name, &self.config) == (&other.use_name, &other.config)
    }
}
