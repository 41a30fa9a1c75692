//! The scenario schema of one harness (issue 28, item 5): the published
//! schema, with each registered hook's entry (`use = "<name>"`, its
//! configuration's fields) in place of the open `UseSpec`, and each
//! registered tool's in place of the open `UseToolSpec`, and each
//! registered model's in place of the open branch of `ModelSpec`, so an editor
//! completes and checks an author's configurations too.

use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::registry::Registry;
use crate::scenario::ScenarioSpec;

/// The scenario schema with `registry`'s hooks, tools and models; an error names a
/// configuration type whose schema name is the library's own (rename it).
pub(crate) fn schema(registry: &Registry) -> Result<Value, String> {
    let mut doc = ScenarioSpec::schema();
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    let configs = registry.schemas(&mut generator);
    let tools = registry.tool_schemas(&mut generator);
    let models = registry.model_schemas(&mut generator);
    let added = generator.take_definitions(true);
    let Some(defs) = doc.get_mut("$defs").and_then(Value::as_object_mut) else {
        return Err("the published schema has no $defs".into());
    };
    for (name, def) in &added {
        if defs.contains_key(name) {
            return Err(format!(
                "the configuration type {name:?} has the name of a type of the scenario format; give it another name (or #[schemars(rename = \"...\")])"
            ));
        }
        defs.insert(name.clone(), def.clone());
    }
    let hook_fields = Map::from_iter([(
        "name".to_string(),
        json!({ "type": "string", "description": "The name the event log shows (default: `<use>#<index>`)." }),
    )]);
    let entries: Vec<Value> = configs
        .into_iter()
        .map(|(name, config)| entry(&name, config.to_value(), defs, &hook_fields))
        .collect();
    let tool_fields = tool_fields(defs);
    let tool_entries: Vec<Value> = tools
        .into_iter()
        .map(|(name, config)| entry(&name, config.to_value(), defs, &tool_fields))
        .collect();
    let model_entries: Vec<Value> = models
        .into_iter()
        .map(|(name, config)| entry(&name, config.to_value(), defs, &Map::new()))
        .collect();
    let registered_model = json!({
        "description": "A model this harness registered: `use` names it, its configuration's fields beside it.",
        "oneOf": model_entries,
    });
    match defs
        .get_mut("ModelSpec")
        .and_then(|m| m.pointer_mut("/anyOf/1"))
    {
        Some(branch) => *branch = registered_model,
        None => return Err("the published schema's ModelSpec has no registered branch".into()),
    }
    defs.insert(
        "UseToolSpec".into(),
        json!({
            "description": "A tool this harness registered: `use` names it, its configuration's fields beside it.",
            "oneOf": tool_entries,
        }),
    );
    let oracles: Vec<&str> = registry.oracle_names().collect();
    if !oracles.is_empty()
        && let Some(built_in) = defs.get("OracleId").cloned()
    {
        let either = json!({
            "description": "A built-in oracle, or one this harness registered (Harness::oracle).",
            "anyOf": [built_in, { "enum": oracles }],
        });
        defs.insert("OracleId".into(), either);
    }
    defs.insert(
        "UseSpec".into(),
        json!({
            "description": "A hook this harness registered: `use` names it, its configuration's fields beside it.",
            "oneOf": entries,
        }),
    );
    Ok(doc)
}

/// The fields a registered tool's entry has beside its configuration: the
/// published `UseToolSpec`'s own (`name`, `latency_ms`, `approval`,
/// `on_output`), `use` and the open rest left out.
fn tool_fields(defs: &Map<String, Value>) -> Map<String, Value> {
    let mut fields = defs
        .get("UseToolSpec")
        .and_then(|d| d.get("properties"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    fields.remove("use");
    fields
}

/// One registered entry: its configuration's object schema (looked up
/// when it is a reference) with `use` (this name) and the entry's own
/// `fields` added.
fn entry(
    name: &str,
    config: Value,
    defs: &Map<String, Value>,
    fields: &Map<String, Value>,
) -> Value {
    let target = config
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        .and_then(|d| defs.get(d))
        .cloned()
        .unwrap_or(config);
    let mut object = match target {
        Value::Object(o) if o.get("type") == Some(&json!("object")) => o,
        other => return json!({ "allOf": [other, head(name)] }),
    };
    let properties = object.entry("properties").or_insert_with(|| json!({}));
    if let Some(p) = properties.as_object_mut() {
        p.insert("use".into(), json!({ "const": name }));
        p.extend(fields.clone());
    }
    let required = object.entry("required").or_insert_with(|| json!([]));
    if let Some(r) = required.as_array_mut() {
        r.insert(0, json!("use"));
    }
    Value::Object(object)
}

/// What every registered entry has: `use` naming it.
fn head(name: &str) -> Value {
    json!({ "type": "object", "properties": { "use": { "const": name } }, "required": ["use"] })
}
