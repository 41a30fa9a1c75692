//! One `[[lifecycle]]` entry as a file writes it: a hook of the built-in
//! library (`hook = "..."`, its fields, parsed as a typed [`HookSpec`]) or
//! a hook registered by name (`use = "..."`, its configuration inline,
//! read by the hook's own config type at load): an agent author's,
//! registered with a [`crate::Harness`], or a library kind by its `hook`
//! name. Both are checked by the one registry (`scenario::hooks`).

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, de::Error as _};
use serde_json::{Map, Value};

use crate::hooks::HookSpec;

/// One `[[lifecycle]]` entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum LifecycleEntry {
    /// A hook of the built-in library (`hook = "..."`).
    Library(HookSpec),
    /// A hook registered under a name (`use = "..."`).
    User(UseSpec),
}

impl LifecycleEntry {
    /// The library hook, if the entry names one.
    pub fn library(&self) -> Option<&HookSpec> {
        match self {
            LifecycleEntry::Library(h) => Some(h),
            LifecycleEntry::User(_) => None,
        }
    }
}

impl From<HookSpec> for LifecycleEntry {
    fn from(h: HookSpec) -> LifecycleEntry {
        LifecycleEntry::Library(h)
    }
}

/// A registered hook as an entry names it: `use = "pii"`, an optional
/// `name`, and every other field its configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UseSpec {
    /// The name the hook was registered under (`Harness::hook`).
    #[serde(rename = "use")]
    #[schemars(length(min = 1))]
    pub use_: String,
    /// The name the event log shows (default: `<use>#<index>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The hook's configuration: the entry's other fields, read by the
    /// configuration type the hook was registered with.
    #[serde(flatten)]
    pub config: Map<String, Value>,
}

impl<'de> Deserialize<'de> for LifecycleEntry {
    /// A table with a `use` key is a registered hook; any other is a
    /// library hook, tagged by `hook` (a library hook's errors read as
    /// before: the entry is buffered either way).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        let registered = value.as_object().is_some_and(|m| m.contains_key("use"));
        let entry = match registered {
            true => UseSpec::deserialize(value).map(LifecycleEntry::User),
            false => HookSpec::deserialize(value).map(LifecycleEntry::Library),
        };
        entry.map_err(D::Error::custom)
    }
}

impl JsonSchema for LifecycleEntry {
    fn schema_name() -> Cow<'static, str> {
        "LifecycleEntry".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let library = generator.subschema_for::<HookSpec>();
        let registered = generator.subschema_for::<UseSpec>();
        json_schema!({
            "description": "A hook of the built-in library (`hook`), or one a harness registered (`use`, with its configuration inline).",
            "anyOf": [library, registered]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_with_use_is_registered_and_keeps_its_fields_as_configuration() {
        let e: LifecycleEntry =
            toml::from_str("use = \"pii\"\nname = \"p\"\nmask = \"#\"\n").unwrap();
        let LifecycleEntry::User(u) = &e else {
            panic!("{e:?}")
        };
        assert_eq!((u.use_.as_str(), u.name.as_deref()), ("pii", Some("p")));
        assert_eq!(u.config.get("mask"), Some(&Value::from("#")));
        assert_eq!(u.config.len(), 1);
        let back = toml::to_string(&e).unwrap();
        assert_eq!(toml::from_str::<LifecycleEntry>(&back).unwrap(), e);
    }

    #[test]
    fn a_library_entry_reads_and_fails_as_before() {
        let e: LifecycleEntry = toml::from_str("hook = \"uppercase\"\n").unwrap();
        assert!(e.library().is_some());
        let err = toml::from_str::<LifecycleEntry>("hook = \"uppercase\"\nbogus = 1\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown field `bogus`"), "{err}");
        let err = toml::from_str::<LifecycleEntry>("hook = \"nope\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown variant `nope`"), "{err}");
    }
}
