//! A published schema as a document: draft 2020-12, generated from a type,
//! with its `$id`, title and description first, and the text of its file.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

/// The draft 2020-12 schema of `T` as a root document, with `$id`, `title`
/// and `description` (replacing the type's own) right after `$schema`.
pub fn document<T: JsonSchema>(id: &str, title: &str, description: &str) -> Value {
    let generated = SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    let Value::Object(generated) = generated else {
        return generated;
    };
    let mut out = Map::new();
    if let Some(v) = generated.get("$schema") {
        out.insert("$schema".into(), v.clone());
    }
    out.insert("$id".into(), id.into());
    out.insert("title".into(), title.into());
    out.insert("description".into(), description.into());
    for (k, v) in generated {
        if !out.contains_key(&k) {
            out.insert(k, v);
        }
    }
    Value::Object(out)
}

/// A schema as its published file has it: pretty JSON and a final newline.
/// The same schema always gives the same text.
pub fn schema_text(schema: &Value) -> String {
    let mut text = serde_json::to_string_pretty(schema).unwrap_or_default();
    text.push('\n');
    text
}
