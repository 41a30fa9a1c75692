//! A model script as a file writes it may name a model a harness
//! registered (`use = "..."`, its configuration inline): the scripted
//! fields are read as before, every other field of such a script is its
//! configuration, read by the model's own config type at load.

use std::collections::BTreeMap;

use schemars::Schema;
use serde::{Deserialize, Deserializer, Serialize, Serializer, de::Error as _};
use serde_json::{Map, Value, json};

use super::ModelSpec;

/// The fields of a script that are the script's own, `use` among them;
/// beside `use`, every other field is the registered model's
/// configuration.
const OWN: [&str; 8] = [
    "use",
    "turns",
    "unavailable",
    "replay",
    "format",
    "latency_ms",
    "delta_ms",
    "chunk",
];

/// One script from `value`: a table with `use` keeps its other fields (the
/// script's own aside) as the configuration; any other is read as before.
fn from_value(value: Value) -> Result<ModelSpec, serde_json::Error> {
    let Value::Object(mut table) = value else {
        return ModelSpec::deserialize(value);
    };
    if !table.contains_key("use") {
        return ModelSpec::deserialize(Value::Object(table));
    }
    let config_keys: Vec<String> = table
        .keys()
        .filter(|k| !OWN.contains(&k.as_str()))
        .cloned()
        .collect();
    let mut config = Map::new();
    for k in config_keys {
        if let Some(v) = table.remove(&k) {
            config.insert(k, v);
        }
    }
    let mut spec = ModelSpec::deserialize(Value::Object(table))?;
    spec.config = config;
    Ok(spec)
}

/// The script as written: its own fields, then its configuration.
fn to_value(spec: &ModelSpec) -> Result<Value, serde_json::Error> {
    let mut value = serde_json::to_value(spec)?;
    if let Value::Object(table) = &mut value {
        table.extend(spec.config.clone());
    }
    Ok(value)
}

/// Reads `[model]`.
pub(super) fn read_one<'de, D: Deserializer<'de>>(d: D) -> Result<ModelSpec, D::Error> {
    from_value(Value::deserialize(d)?).map_err(D::Error::custom)
}

/// Reads `[models.<name>]`.
pub(super) fn read_map<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, ModelSpec>, D::Error> {
    let raw = BTreeMap::<String, Value>::deserialize(d)?;
    let read = raw.into_iter().map(|(n, v)| Ok((n, from_value(v)?)));
    read.collect::<Result<_, serde_json::Error>>()
        .map_err(D::Error::custom)
}

/// Writes `[model]` (a script without configuration as before).
pub(super) fn write_one<S: Serializer>(spec: &ModelSpec, s: S) -> Result<S::Ok, S::Error> {
    match spec.config.is_empty() {
        true => spec.serialize(s),
        false => to_value(spec)
            .map_err(serde::ser::Error::custom)?
            .serialize(s),
    }
}

/// Writes `[models.<name>]`.
pub(super) fn write_map<S: Serializer>(
    specs: &BTreeMap<String, ModelSpec>,
    s: S,
) -> Result<S::Ok, S::Error> {
    let mut out = BTreeMap::new();
    for (name, spec) in specs {
        out.insert(name, to_value(spec).map_err(serde::ser::Error::custom)?);
    }
    out.serialize(s)
}

/// The published schema of a script: a scripted one (`turns`, `replay` or
/// `unavailable`, as derived and checked), or one a harness registered
/// (`use`, with its configuration's fields; a harness's own schema lists
/// them, see `Harness::schema`).
pub(crate) fn schema(schema: &mut Schema) {
    crate::schema::checks::model(schema);
    let mut scripted = schema.clone().to_value();
    let description = scripted
        .as_object_mut()
        .and_then(|o| o.remove("description"))
        .unwrap_or(Value::Null);
    let registered = json!({
        "type": "object",
        "description": "A model a harness registered (`Harness::model`): `use` names it, its configuration's fields beside it; it answers every call itself, so no `turns`, `replay` or `unavailable`.",
        "properties": { "use": { "type": "string", "minLength": 1 } },
        "required": ["use"],
        "not": { "anyOf": [
            { "required": ["turns"] },
            { "required": ["replay"] },
            { "required": ["unavailable"] }
        ] }
    });
    let mut object = Map::new();
    if !description.is_null() {
        object.insert("description".into(), description);
    }
    object.insert("anyOf".into(), json!([scripted, registered]));
    *schema = Schema::from(object);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_with_use_keeps_its_other_fields_as_configuration() {
        let text = "use = \"echo\"\nreply = \"hi\"\nturns = [{ text = [\"a\"] }]\n";
        let spec = from_value(toml::from_str(text).unwrap()).unwrap();
        assert_eq!(spec.use_.as_deref(), Some("echo"));
        assert_eq!(spec.config.get("reply"), Some(&Value::from("hi")));
        assert_eq!((spec.config.len(), spec.turns.len()), (1, 1));
        let back = toml::to_string(&to_value(&spec).unwrap()).unwrap();
        let again = from_value(toml::from_str(&back).unwrap()).unwrap();
        assert_eq!(again, spec);
    }

    #[test]
    fn a_script_without_use_refuses_unknown_fields_as_before() {
        let err = from_value(toml::from_str("tunrs = []\n").unwrap()).unwrap_err();
        assert!(err.to_string().contains("unknown field `tunrs`"), "{err}");
    }

    /// The script's own fields are the derived schema's properties.
    #[test]
    fn the_own_fields_are_the_scripts_properties() {
        let schema = crate::scenario::ScenarioSpec::schema();
        let props = schema.pointer("/$defs/ModelSpec/anyOf/0/properties");
        let mut names: Vec<&str> = props
            .and_then(Value::as_object)
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        names.push("use");
        names.sort_unstable();
        let mut own = OWN.to_vec();
        own.sort_unstable();
        assert_eq!(names, own);
    }
}
