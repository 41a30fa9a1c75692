//! The loader's checks after parsing (`scenario/checked.rs`,
//! `HookSpec::check`) that the derive cannot see, written as JSON Schema:
//! "exactly one of" as `oneOf`, "this needs that" as `if`/`then`. Each
//! function is a `#[schemars(transform = ...)]` of one scenario type.
//!
//! What JSON Schema cannot say stays with the loader only, and
//! `tests/refused/` holds a file for each: duplicate tool names, duplicate
//! watcher names, a timeline entry at or past the scenario's own
//! `time_limit_ms`, a swap of an event with itself, a redaction class whose
//! range descends.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::{Value, json};

/// A non-blank text: `trim()` leaves something.
pub const NONBLANK: &str = r"\S";

/// `field` is given, and not `null` (serde reads `null` as left out).
fn present(field: &str) -> Value {
    json!({ "required": [field], "properties": { field: { "not": { "type": "null" } } } })
}

/// `field` is given as `true`.
fn set(field: &str) -> Value {
    json!({ "required": [field], "properties": { field: { "const": true } } })
}

/// Adds `rule` to the schema's `allOf`.
fn also(schema: &mut Schema, rule: Value) {
    let all = schema
        .ensure_object()
        .entry("allOf")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(a) = all {
        a.push(rule);
    }
}

/// A whole scenario: `expect = "violation"` names its oracle, and without
/// its own `time_limit_ms` every timeline entry is before the default limit.
pub fn scenario(schema: &mut Schema, default_limit_ms: u64) {
    also(
        schema,
        json!({
            "description": "`expect = \"violation\"` needs `oracle`: the oracle that must report it.",
            "if": { "required": ["expect"], "properties": { "expect": { "const": "violation" } } },
            "then": present("oracle"),
        }),
    );
    also(
        schema,
        json!({
            "description": "Without `time_limit_ms`, every timeline entry is before the default limit of one hour (with it, the loader checks `at < time_limit_ms`).",
            "if": { "not": present("time_limit_ms") },
            "then": {
                "properties": {
                    "timeline": {
                        "items": { "properties": { "at": { "exclusiveMaximum": default_limit_ms } } }
                    }
                }
            },
        }),
    );
}

/// A timeline entry: exactly one of `send`, `steer`, `cancel` and `watch`
/// (`cancel = false` is none), and `live` only with `watch`.
pub fn timeline_entry(schema: &mut Schema) {
    let obj = schema.ensure_object();
    obj.insert(
        "oneOf".into(),
        json!([
            present("send"),
            present("steer"),
            { "required": ["cancel"], "properties": { "cancel": { "not": { "const": false } } } },
            present("watch"),
            present("approve"),
            present("deny"),
            present("submit_result"),
            present("expect_waiting"),
            { "required": ["read_thread"], "properties": { "read_thread": { "const": true } } },
            present("mutate"),
            { "required": ["delete_thread"], "properties": { "delete_thread": { "const": true } } },
            { "required": ["create_thread"], "properties": { "create_thread": { "const": true } } },
            present("regenerate"),
            present("set_visibility"),
            present("bind_thread"),
        ]),
    );
    also(
        schema,
        json!({
            "description": "`live` goes with `watch`.",
            "if": { "required": ["live"], "properties": { "live": { "minItems": 1 } } },
            "then": present("watch"),
        }),
    );
    also(
        schema,
        json!({
            "description": "An entry is placed at a time (`at`) or after a moment of a run (`after`), not both.",
            "if": present("after"),
            "then": { "properties": { "at": { "const": 0 } } },
        }),
    );
    also(
        schema,
        json!({
            "description": "`handle` goes with `read_thread`, `mutate`, `delete_thread`, `regenerate` or `set_visibility`.",
            "if": present("handle"),
            "then": { "anyOf": [
                set("read_thread"),
                present("mutate"),
                set("delete_thread"),
                present("regenerate"),
                present("set_visibility"),
            ] },
        }),
    );
}

/// `after`: `step` exactly with `commit_step`, `nth` only with `wait`.
pub fn after(schema: &mut Schema) {
    let event =
        |e: &str| json!({ "required": ["event"], "properties": { "event": { "const": e } } });
    also(
        schema,
        json!({
            "description": "`step` goes with `commit_step`, which needs it.",
            "if": event("commit_step"),
            "then": present("step"),
            "else": { "not": present("step") },
        }),
    );
    also(
        schema,
        json!({
            "description": "`nth` goes with `wait`.",
            "if": present("nth"),
            "then": event("wait"),
        }),
    );
}

/// A call an answer names: exactly one of `tool` (with an optional `nth`)
/// and `call`.
pub fn call_ref(schema: &mut Schema) {
    schema
        .ensure_object()
        .insert("oneOf".into(), json!([present("tool"), present("call"),]));
    also(
        schema,
        json!({
            "description": "`nth` goes with `tool`.",
            "if": present("nth"),
            "then": present("tool"),
        }),
    );
}

/// A scripted tool: exactly one of `output`, `echo`, `fail`, `throw`,
/// `panic` and `client` (`echo = false` is none); a client tool needs no
/// approval, and `output_requires` goes with `client`.
pub fn tool(schema: &mut Schema) {
    schema.ensure_object().insert(
        "oneOf".into(),
        json!([
            present("output"),
            set("echo"),
            present("fail"),
            present("throw"),
            present("panic"),
            set("client"),
        ]),
    );
    also(
        schema,
        json!({
            "description": "A client tool is run by the client: it waits for a submitted output, never for an approval.",
            "not": { "allOf": [
                { "required": ["approval"], "properties": { "approval": { "not": { "const": false } } } },
                set("client"),
            ] },
        }),
    );
    also(
        schema,
        json!({
            "description": "`output_requires` checks submitted outputs: it goes with `client`.",
            "if": { "required": ["output_requires"], "properties": { "output_requires": { "minItems": 1 } } },
            "then": set("client"),
        }),
    );
}

/// `patch_metadata` changes something: `count`, `set` or both.
pub fn patch_metadata(schema: &mut Schema) {
    schema.ensure_object().insert(
        "anyOf".into(),
        json!([present("count"), { "required": ["set"], "properties": { "set": { "minProperties": 1 } } }]),
    );
}

/// A `mutate_thread` hook sets something: `metadata`, `private` or both.
pub fn mutate_thread(schema: &mut Schema) {
    schema.ensure_object().insert(
        "anyOf".into(),
        json!([
            { "required": ["metadata"], "properties": { "metadata": { "minProperties": 1 } } },
            { "required": ["private"], "properties": { "private": { "minProperties": 1 } } },
        ]),
    );
}

/// An `on_output` handler does something: `count`, `keep` or both.
pub fn on_output(schema: &mut Schema) {
    schema
        .ensure_object()
        .insert("anyOf".into(), json!([present("count"), present("keep")]));
}

/// A scripted turn: with `error` the provider fails before any stream, so
/// the turn has no `text` or `tool_calls`.
pub fn turn(schema: &mut Schema) {
    also(
        schema,
        json!({
            "description": "With `error`, the provider fails before any stream: the turn has no text or tool calls (`stream_error` fails after the text).",
            "if": present("error"),
            "then": {
                "properties": {
                    "text": { "maxItems": 0 },
                    "tool_calls": { "maxItems": 0 },
                }
            },
        }),
    );
}

/// A model script: `replay` (recordings) or `turns`/`unavailable`, never
/// both; `replay` needs its `format`; the replay pacing fields need `replay`.
pub fn model(schema: &mut Schema) {
    also(
        schema,
        json!({
            "description": "`replay` answers every call from recordings: no `turns` or `unavailable` beside it, and its `format` is required.",
            "if": { "required": ["replay"] },
            "then": {
                "required": ["format"],
                "properties": {
                    "turns": { "maxItems": 0 },
                    "unavailable": { "const": false },
                }
            },
        }),
    );
    schema.ensure_object().insert(
        "dependentRequired".into(),
        json!({
            "format": ["replay"],
            "latency_ms": ["replay"],
            "delta_ms": ["replay"],
            "chunk": ["replay"],
        }),
    );
}

/// `edit_message`: exactly one of `text`, `reverse_parts` and `delete`.
pub fn edit_message(schema: &mut Schema) {
    schema.ensure_object().insert(
        "oneOf".into(),
        json!([present("text"), set("reverse_parts"), set("delete")]),
    );
}

/// A worker fault (`crash`, `partition`, `hold`, `pause`): placed at a
/// time (`at_ms`) or at a store request (`at`), exactly one of them.
pub fn placed(schema: &mut Schema) {
    schema
        .ensure_object()
        .insert("oneOf".into(), json!([present("at_ms"), present("at")]));
}

/// `edit_result`: `source` or `output`, or both.
pub fn edit_result(schema: &mut Schema) {
    schema.ensure_object().insert(
        "anyOf".into(),
        json!([present("source"), present("output")]),
    );
}

/// `edit_request`: `append` or `drop_message`, or both.
pub fn edit_request(schema: &mut Schema) {
    schema.ensure_object().insert(
        "anyOf".into(),
        json!([present("append"), present("drop_message")]),
    );
}

/// An internally tagged enum (`#[serde(tag = ...)]`) as a choice on its
/// tag: the tag is one of the variants' names, and the variant it names
/// must hold. The same as the derived `oneOf`, but a validator reports the
/// field at fault in the variant named, not every variant's mismatch.
fn by_tag(schema: &mut Schema, tag: &str, description: &str) {
    let Some(Value::Array(variants)) = schema.remove("oneOf") else {
        return;
    };
    let mut names = Vec::new();
    let mut rules = Vec::new();
    for v in &variants {
        let Some(name) = v.pointer(&format!("/properties/{tag}/const")) else {
            schema.insert("oneOf".into(), Value::Array(variants));
            return;
        };
        names.push(name.clone());
        rules.push(json!({
            "if": { "required": [tag], "properties": { tag: { "const": name } } },
            "then": v,
        }));
    }
    schema.insert("type".into(), "object".into());
    schema.insert("required".into(), json!([tag]));
    schema.insert(
        "properties".into(),
        json!({ tag: { "description": description, "type": "string", "enum": names } }),
    );
    schema.insert("allOf".into(), Value::Array(rules));
}

/// A `[[lifecycle]]` entry: the variant named by `hook`.
pub fn by_hook(schema: &mut Schema) {
    by_tag(schema, "hook", "The hook of the built-in library.");
}

/// A fault or a live transform: the variant named by `kind`.
pub fn by_kind(schema: &mut Schema) {
    by_tag(schema, "kind", "Which kind.");
}

/// An object with no fields but those its schema names, its subschemas'
/// included (`flatten`).
pub fn closed(schema: &mut Schema) {
    schema.insert("unevaluatedProperties".into(), false.into());
}

/// A rule id of the catalogue, `sim/rules.toml`. Schema only: the scenario
/// keeps ids as strings.
#[derive(Debug)]
pub struct RuleId;

impl JsonSchema for RuleId {
    fn schema_name() -> Cow<'static, str> {
        "RuleId".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let ids: Vec<&str> = crate::rules().iter().map(|r| r.id.as_str()).collect();
        json_schema!({
            "description": "A SPEC rule id of the catalogue (`sim/rules.toml`; `pai-sim rules` lists each with its statement).",
            "type": "string",
            "enum": ids,
        })
    }
}
