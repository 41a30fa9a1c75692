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

/// Why an entry's configuration was refused: the field at fault, where
/// it can be told (SPEC X1: located at that field, as built-in entries
/// are), and serde's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConfigError {
    /// The configuration's field at fault (a top-level key of the entry);
    /// `None`: the entry as a whole (a missing field, a name not
    /// registered).
    pub(crate) field: Option<String>,
    pub(crate) message: String,
}

impl From<String> for ConfigError {
    fn from(message: String) -> ConfigError {
        ConfigError {
            field: None,
            message,
        }
    }
}

/// Reads `config` as a `C`; an error names the field at fault where it
/// can: an unknown field by its name, any other by the one key whose
/// removal changes the error (a field of the wrong type or value).
pub(crate) fn read<C: DeserializeOwned>(config: &Map<String, Value>) -> Result<C, ConfigError> {
    let read = |c: &Map<String, Value>| C::deserialize(Value::Object(c.clone()));
    let e = match read(config) {
        Ok(c) => return Ok(c),
        Err(e) => e.to_string(),
    };
    let named = |prefix: &str| {
        let rest = e.strip_prefix(prefix)?;
        rest.split('`').next().map(str::to_string)
    };
    if let Some(field) = named("unknown field `") {
        return Err(ConfigError {
            field: Some(field),
            message: e,
        });
    }
    if e.starts_with("missing field `") {
        return Err(e.into());
    }
    let field = config.keys().find(|k| {
        let mut without = config.clone();
        without.remove(*k);
        read(&without).err().map(|e| e.to_string()) != Some(e.clone())
    });
    Err(ConfigError {
        field: field.cloned(),
        message: e,
    })
}

/// Makes a registered kind's `Out`s from an entry's configuration.
pub(crate) trait Factory<Out>: Send + Sync {
    /// The configuration read, as a maker; or why it is refused.
    fn check(&self, config: &Map<String, Value>) -> Result<Maker<Out>, ConfigError>;
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
    fn check(&self, config: &Map<String, Value>) -> Result<Maker<Out>, ConfigError> {
        let typed: C = read(config)?;
        Ok(Arc::new(move |name: &str| typed.make(name)))
    }

    fn schema(&self, generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<C>()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Slow {
        work_ms: u64,
        #[serde(default)]
        label: String,
    }

    fn err(v: Value) -> ConfigError {
        read::<Slow>(v.as_object().unwrap()).unwrap_err()
    }

    /// Issue 39 item 4: an error names the field at fault.
    #[test]
    fn a_config_error_names_its_field() {
        let e = err(json!({"work_ms": "slow", "label": "x"}));
        assert_eq!(e.field.as_deref(), Some("work_ms"));
        assert!(e.message.contains("expected u64"), "{e:?}");
        let e = err(json!({"work_ms": 1, "label": 3}));
        assert_eq!(e.field.as_deref(), Some("label"));
        let e = err(json!({"work_ms": 1, "lable": "x"}));
        assert_eq!(e.field.as_deref(), Some("lable"));
        let e = err(json!({"label": "x"}));
        assert_eq!(
            (e.field, e.message.contains("missing field `work_ms`")),
            (None, true)
        );
    }
}
