//! A model script as a file writes it may name a model a harness
//! registered (`use = "..."`, its configuration inline): the scripted
//! fields are read as before, every other field of such a script is its
//! configuration, read by the model's own config type at load; and the
//! scripted answers (`turns`, `replay`).

use std::collections::BTreeMap;

use pai_runtime::model::{ModelSettings, ProviderOptions};
use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer, de::Error as _};
use serde_json::{Map, Value, json};

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
pub(crate) fn script_schema(schema: &mut Schema) {
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

/// A scripted model: its turns answer its calls in order, or recorded
/// provider responses do (`replay`, one file per call); or a model a
/// harness registered (`use`) answers them itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = script_schema)]
pub struct ModelSpec {
    /// The name of a model a harness registered (`Harness::model`): it
    /// answers every call, its configuration the script's other fields.
    /// Not with `turns`, `replay` or `unavailable`.
    #[serde(rename = "use", default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub use_: Option<String>,
    /// With `use`: the script's other fields, read by the configuration
    /// type the model was registered with.
    #[serde(skip)]
    #[schemars(skip)]
    pub config: Map<String, Value>,
    /// The scripted answers, one per model call, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<TurnSpec>,
    /// Every call fails at once: the model is down.
    #[serde(default, skip_serializing_if = "crate::defaults::is_false")]
    #[schemars(extend("default" = false))]
    pub unavailable: bool,
    /// Recorded provider responses, one file per model call, in order: each
    /// the raw response body as a client receives it (what `curl -N`
    /// prints), its path relative to the scenario file. Not with `turns`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(min = 1)), length(min = 1))]
    pub replay: Vec<String>,
    /// With `replay` (required there): the recordings' streaming format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<ReplayFormat>,
    /// With `replay`: virtual milliseconds before each recorded stream exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 0))]
    pub latency_ms: Option<u64>,
    /// With `replay`: virtual milliseconds before each decoded text delta.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 0))]
    pub delta_ms: Option<u64>,
    /// With `replay`: the body is fed to the decoder in pieces of this many
    /// bytes (cutting events, lines and UTF-8 characters where they fall);
    /// left out, the whole body at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub chunk: Option<u64>,
}

impl ModelSpec {
    /// Whether the script says nothing (the model is then left out when a spec
    /// is written).
    pub fn is_empty(&self) -> bool {
        self.use_.is_none()
            && self.config.is_empty()
            && self.turns.is_empty()
            && !self.unavailable
            && self.replay.is_empty()
            && self.format.is_none()
            && self.latency_ms.is_none()
            && self.delta_ms.is_none()
            && self.chunk.is_none()
    }
}

/// The streaming format of recorded provider responses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ReplayFormat {
    /// OpenAI-compatible Chat Completions (`data:` chunks, `[DONE]`).
    #[serde(rename = "openai-chat")]
    OpenAiChat,
    /// The OpenAI Responses API (`response.*` events).
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    /// Anthropic Messages (`message_start` ... `message_stop`).
    #[serde(rename = "anthropic")]
    Anthropic,
}

impl ReplayFormat {
    /// The decoder's format.
    pub fn decoder(self) -> pai_providers::Format {
        match self {
            ReplayFormat::OpenAiChat => pai_providers::Format::OpenAiChat,
            ReplayFormat::OpenAiResponses => pai_providers::Format::OpenAiResponses,
            ReplayFormat::Anthropic => pai_providers::Format::Anthropic,
        }
    }
}

/// One scripted answer of a model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = crate::schema::checks::turn)]
pub struct TurnSpec {
    /// Text deltas, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub text: Vec<String>,
    /// Tool calls, after the text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallSpec>,
    /// Virtual milliseconds before the stream exists.
    #[serde(default, skip_serializing_if = "crate::defaults::is_zero")]
    #[schemars(extend("default" = 0))]
    pub latency_ms: u64,
    /// The provider fails before the stream starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Virtual milliseconds before each text delta.
    #[serde(default, skip_serializing_if = "crate::defaults::is_zero")]
    #[schemars(extend("default" = 0))]
    pub delta_ms: u64,
    /// The provider fails mid-stream, after this turn's text deltas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_error: Option<String>,
    /// What the request answered by this turn must contain; a mismatch is a
    /// violation of the `request` oracle that shows the difference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<RequestExpect>,
}

/// Expected parts of a model request. Only the fields given are compared.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestExpect {
    /// The model the request went to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The request's sampling settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<ModelSettings>,
    /// The request's provider options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_options: Option<ProviderOptions>,
    /// The names of the tools the request offered, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Every message, as the transcript prints it: `user: "hi"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<String>>,
    /// The attempt's deadline in virtual milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// One tool call of a scripted turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCallSpec {
    /// The tool called (an unknown one gets a typed error).
    pub tool: String,
    /// The call's input.
    #[serde(default = "empty_object")]
    pub input: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
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
