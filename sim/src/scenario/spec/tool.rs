//! One `[[agent.tools]]` entry as a file writes it: a scripted tool
//! (`name`, one behaviour) or a tool an agent author registered with a
//! [`crate::Harness`] (`use = "..."`, its configuration inline, read by the
//! tool's own config type at load); and a tool's `on_output` handler.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, de::Error as _};
use serde_json::{Map, Value};

/// One `[[agent.tools]]` entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ToolEntry {
    /// A tool scripted in the file.
    Scripted(ToolSpec),
    /// A tool registered under a name (`use = "..."`).
    User(UseToolSpec),
}

impl ToolEntry {
    /// The scripted tool, if the entry is one.
    pub fn scripted(&self) -> Option<&ToolSpec> {
        match self {
            ToolEntry::Scripted(t) => Some(t),
            ToolEntry::User(_) => None,
        }
    }

    /// The scripted tool, if the entry is one, to change.
    pub fn scripted_mut(&mut self) -> Option<&mut ToolSpec> {
        match self {
            ToolEntry::Scripted(t) => Some(t),
            ToolEntry::User(_) => None,
        }
    }

    /// The name model tool calls use: a registered tool's `name`, else
    /// its `use` name.
    pub fn name(&self) -> &str {
        match self {
            ToolEntry::Scripted(t) => &t.name,
            ToolEntry::User(u) => u.name.as_deref().unwrap_or(&u.use_),
        }
    }

    /// Whether calls of the tool may wait (approval, or a client tool); a
    /// registered tool may say so itself, so it is counted as waiting.
    pub fn may_wait(&self) -> bool {
        match self {
            ToolEntry::Scripted(t) => t.approval.may_wait() || t.client,
            ToolEntry::User(_) => true,
        }
    }
}

impl From<ToolSpec> for ToolEntry {
    fn from(t: ToolSpec) -> ToolEntry {
        ToolEntry::Scripted(t)
    }
}

/// A registered tool as an entry names it: `use = "refund"`, an optional
/// `name`, the scenario-level fields below, and every other field its
/// configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UseToolSpec {
    /// The name the tool was registered under (`Harness::tool`).
    #[serde(rename = "use")]
    #[schemars(length(min = 1))]
    pub use_: String,
    /// The name model tool calls use (default: the `use` name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub name: Option<String>,
    /// Virtual milliseconds before each call reaches the tool.
    #[serde(default, skip_serializing_if = "crate::defaults::is_zero")]
    #[schemars(extend("default" = 0))]
    pub latency_ms: u64,
    /// Which calls wait for a client's `approve` (they then run) or `deny`
    /// (SPEC T7): `true` every call, `{ when = "..." }` a call whose input
    /// the predicate holds on. A call waits too when the tool itself says
    /// so (`Tool::needs_approval`).
    #[serde(default, skip_serializing_if = "ApprovalSpec::is_never")]
    pub approval: ApprovalSpec,
    /// An `on_output` handler beside this tool (SPEC T6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_output: Option<OnOutputSpec>,
    /// The tool's configuration: the entry's other fields, read by the
    /// configuration type the tool was registered with.
    #[serde(flatten)]
    pub config: Map<String, Value>,
}

impl<'de> Deserialize<'de> for ToolEntry {
    /// A table with a `use` key is a registered tool; any other is a
    /// scripted one (its errors read as before, located in the entry).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        let registered = value.as_object().is_some_and(|m| m.contains_key("use"));
        let entry = match registered {
            true => UseToolSpec::deserialize(value).map(ToolEntry::User),
            false => ToolSpec::deserialize(value).map(ToolEntry::Scripted),
        };
        entry.map_err(D::Error::custom)
    }
}

impl JsonSchema for ToolEntry {
    fn schema_name() -> Cow<'static, str> {
        "ToolEntry".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let scripted = generator.subschema_for::<ToolSpec>();
        let registered = generator.subschema_for::<UseToolSpec>();
        json_schema!({
            "description": "A tool scripted in the file (`name` and one behaviour), or one a harness registered (`use`, with its configuration inline).",
            "anyOf": [scripted, registered]
        })
    }
}

/// A scripted tool. Exactly one behaviour: `output`, `echo`, `fail`, `throw`
/// or `panic`; a client tool (`client = true`) has none, since the client
/// runs it (SPEC T7).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = crate::schema::checks::tool)]
pub struct ToolSpec {
    /// The tool's name, as model tool calls name it.
    #[schemars(length(min = 1))]
    pub name: String,
    /// The description the model is given.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(extend("default" = ""))]
    pub description: String,
    /// Virtual milliseconds the tool takes.
    #[serde(default, skip_serializing_if = "crate::defaults::is_zero")]
    #[schemars(extend("default" = 0))]
    pub latency_ms: u64,
    /// Input fields the tool requires; a call without them gets a typed invalid-input error (X2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<String>,
    /// Return this value as the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// Return the call's input as the output.
    #[serde(default, skip_serializing_if = "crate::defaults::is_false")]
    #[schemars(extend("default" = false))]
    pub echo: bool,
    /// Fail deliberately with this value (SPEC T5 `fail`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail: Option<Value>,
    /// Raise an error with this detail (SPEC T5 `throw`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throw: Option<String>,
    /// Panic with this message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub panic: Option<String>,
    /// Which calls wait for a client's `approve` (they then run) or `deny`
    /// (SPEC T7): `true` every call, `{ when = "amount > 500" }` a call
    /// whose input the predicate holds on (decided per call, on the input
    /// the call would run with).
    #[serde(default, skip_serializing_if = "ApprovalSpec::is_never")]
    pub approval: ApprovalSpec,
    /// A client tool: each call waits until a client submits its output
    /// (`submit_result`, SPEC T7). It has no behaviour of its own.
    #[serde(default, skip_serializing_if = "crate::defaults::is_false")]
    #[schemars(extend("default" = false))]
    pub client: bool,
    /// With `client`: fields a submitted output must have (the tool's output
    /// type); an output without them is refused and never stored.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_requires: Vec<String>,
    /// An `on_output` handler beside this tool (SPEC T6): for each
    /// successful output it updates the run metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_output: Option<OnOutputSpec>,
}

/// Which calls of a tool wait for a client's approval (SPEC T7): `true`,
/// `false` (the default) or `{ when = "<predicate>" }`, decided per call
/// on its input (the predicate language: `crate::scenario::Predicate`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ApprovalSpec {
    /// Every call (`true`) or none (`false`).
    Flag(bool),
    /// A call whose input the predicate holds on.
    When(WhenSpec),
}

/// `{ when = "<predicate>" }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WhenSpec {
    /// Comparisons of input fields with literals, joined by `and` / `or`:
    /// `amount > 500 and currency == "EUR"`.
    pub when: String,
}

impl Default for ApprovalSpec {
    fn default() -> ApprovalSpec {
        ApprovalSpec::Flag(false)
    }
}

impl From<bool> for ApprovalSpec {
    fn from(always: bool) -> ApprovalSpec {
        ApprovalSpec::Flag(always)
    }
}

impl ApprovalSpec {
    /// `false`, the default (left out when written).
    pub fn is_never(&self) -> bool {
        *self == ApprovalSpec::Flag(false)
    }

    /// Whether some call may wait for approval.
    pub fn may_wait(&self) -> bool {
        !self.is_never()
    }

    /// Approval when `predicate` holds.
    pub fn when(predicate: impl Into<String>) -> ApprovalSpec {
        let when = predicate.into();
        ApprovalSpec::When(WhenSpec { when })
    }
}

impl JsonSchema for ApprovalSpec {
    fn schema_name() -> Cow<'static, str> {
        "ApprovalSpec".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Which calls wait for a client's approval (SPEC T7): `true` every call, `false` none, `{ when = \"amount > 500\" }` a call whose input the predicate holds on: comparisons (<, <=, >, >=, ==, !=) of input fields (dotted paths) with numbers, \"strings\", true, false or null, joined by `and` / `or`, each optionally negated with `not`; a missing field's comparison is false.",
            "default": false,
            "anyOf": [
                { "type": "boolean" },
                {
                    "type": "object",
                    "properties": {
                        "when": { "type": "string", "pattern": crate::scenario::predicate::PATTERN }
                    },
                    "required": ["when"],
                    "additionalProperties": false
                }
            ]
        })
    }
}

/// What a tool's `on_output` handler does to the run metadata (an object).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = crate::schema::checks::on_output)]
pub struct OnOutputSpec {
    /// Add 1 to the number under this key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub count: Option<String>,
    /// Keep the output under this key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub keep: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_with_use_is_registered_and_keeps_its_other_fields_as_configuration() {
        let text = "use = \"refund\"\napproval = true\nlatency_ms = 5\nlimit = 30\n";
        let e: ToolEntry = toml::from_str(text).unwrap();
        let ToolEntry::User(u) = &e else {
            panic!("{e:?}")
        };
        assert_eq!(
            (u.use_.as_str(), &u.approval, u.latency_ms),
            ("refund", &ApprovalSpec::Flag(true), 5)
        );
        assert_eq!(u.config.get("limit"), Some(&Value::from(30)));
        assert_eq!((u.config.len(), e.name()), (1, "refund"));
        let back = toml::to_string(&e).unwrap();
        assert_eq!(toml::from_str::<ToolEntry>(&back).unwrap(), e);
    }

    #[test]
    fn approval_is_a_flag_or_a_predicate() {
        let e: ToolEntry =
            toml::from_str("name = \"t\"\necho = true\napproval = { when = \"amount > 5\" }\n")
                .unwrap();
        let t = e.scripted().unwrap();
        assert_eq!(t.approval, ApprovalSpec::when("amount > 5"));
        let back = toml::to_string(&e).unwrap();
        assert_eq!(toml::from_str::<ToolEntry>(&back).unwrap(), e);
        let bad =
            toml::from_str::<ToolEntry>("name = \"t\"\necho = true\napproval = { if = \"x\" }\n");
        assert!(bad.is_err());
    }

    #[test]
    fn a_scripted_entry_reads_and_fails_as_before() {
        let e: ToolEntry = toml::from_str("name = \"t\"\necho = true\n").unwrap();
        assert_eq!(e.scripted().map(|t| t.echo), Some(true));
        let err = toml::from_str::<ToolEntry>("name = \"t\"\nbogus = 1\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown field `bogus`"), "{err}");
    }
}
