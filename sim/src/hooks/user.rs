//! Hooks an agent author registers with a [`crate::Harness`]: the
//! [`UserHook`] trait a configuration type implements, the factory that
//! reads an entry into it, and a registered hook of one scenario, checked
//! at load. The names live in the [`crate::Registry`].

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
pub(crate) trait Factory: Send + Sync {
    /// The configuration read, as a maker of hooks; or why it is refused.
    fn check(&self, config: &Map<String, Value>) -> Result<Maker, String>;
    /// The configuration's schema.
    fn schema(&self, generator: &mut SchemaGenerator) -> Schema;
}

/// Builds one scenario's hook (under the name the log shows).
pub(crate) type Maker = Arc<dyn Fn(&str) -> SimHook + Send + Sync>;

/// The factory of the configuration type `C`.
pub(crate) struct Typed<C>(pub(crate) PhantomData<fn() -> C>);

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

/// A registered hook of one scenario, checked: the name it was registered
/// under, its configuration as written, and the phases it handles.
#[derive(Clone)]
pub struct UserHookDef {
    /// The name the hook was registered under (`use = "..."`).
    pub use_name: String,
    /// The entry's configuration, as the scenario wrote it.
    pub config: Map<String, Value>,
    /// The phases the built hook handles (the oracles know no more of it).
    pub phases: Phases,
    pub(crate) make: Maker,
}

impl UserHookDef {
    /// The hook, named `name` in the event log.
    pub fn build(&self, name: &str) -> SimHook {
        (self.make)(name)
    }

    /// Whether the hook handles `phase`.
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
