//! A configuration type registered by name that builds something for a
//! run (an author's tool or model): the factory that reads a scenario
//! entry's fields into it, one definition for both. (Hooks have their own
//! factory in `hooks/user.rs`: theirs also yields what the oracles
//! foresee, and builds in a run's context.)

use std::marker::PhantomData;
use std::sync::Arc;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// A configuration type that builds an `Out` under a name.
pub(crate) trait Builds<Out>: DeserializeOwned + JsonSchema + Send + Sync + 'static {
    /// What the configuration describes, named `name`.
    fn make(&self, name: &str) -> Out;
}

/// Builds one scenario's `Out` under a name.
pub(crate) type Maker<Out> = Arc<dyn Fn(&str) -> Out + Send + Sync>;

/// Makes a registered kind's `Out`s from an entry's configuration.
pub(crate) trait Factory<Out>: Send + Sync {
    /// The configuration read, as a maker; or why it is refused.
    fn check(&self, config: &Map<String, Value>) -> Result<Maker<Out>, String>;
    /// The configuration's schema.
    fn schema(&self, generator: &mut SchemaGenerator) -> Schema;
}

/// The factory of the configuration type `C`.
pub(crate) struct Typed<C>(PhantomData<fn() -> C>);

impl<C> Typed<C> {
    pub(crate) fn new() -> Typed<C> {
        Typed(PhantomData)
    }
}

impl<Out, C: Builds<Out>> Factory<Out> for Typed<C> {
    fn check(&self, config: &Map<String, Value>) -> Result<Maker<Out>, String> {
        let typed: C =
            serde_json::from_value(Value::Object(config.clone())).map_err(|e| e.to_string())?;
        Ok(Arc::new(move |name: &str| typed.make(name)))
    }

    fn schema(&self, generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<C>()
    }
}
