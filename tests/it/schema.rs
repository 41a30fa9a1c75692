//! SPEC D6: scenario files are language-neutral data with a published JSON
//! Schema (`schema/scenario.schema.json`), and so is the event log
//! (`schema/events.schema.json`), so another implementation can be driven by
//! the same suite and its log checked. These tests keep the published files
//! equal to what the code generates, check the whole suite against the
//! scenario schema, show which checks the schema makes and which only the
//! loader makes (`tests/malformed/` against `tests/refused/`), and check
//! event logs against the events schema.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use pai_sim::{EventRecord, ScenarioSpec};
use serde_json::Value;

/// The published schemas: the name `pai-sim schema NAME` takes, the file
/// under `schema/`, and the schema the code generates.
fn published() -> [(&'static str, &'static str, Value); 2] {
    [
        (
            "scenario",
            "schema/scenario.schema.json",
            ScenarioSpec::schema(),
        ),
        ("events", "schema/events.schema.json", EventRecord::schema()),
    ]
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// A compiled schema (draft 2020-12; `boon` also checks the schema against
/// its meta-schema when it compiles it).
struct Validator {
    schemas: boon::Schemas,
    index: boon::SchemaIndex,
}

impl Validator {
    fn new(schema: Value) -> Validator {
        let id = schema["$id"]
            .as_str()
            .expect("every published schema has an $id")
            .to_string();
        let mut schemas = boon::Schemas::new();
        let mut compiler = boon::Compiler::new();
        compiler
            .add_resource(&id, schema)
            .unwrap_or_else(|e| panic!("{id}: {e:#}"));
        let index = compiler
            .compile(&id, &mut schemas)
            .unwrap_or_else(|e| panic!("the schema {id} does not compile: {e:#}"));
        Validator { schemas, index }
    }

    fn check(&self, instance: &Value) -> Result<(), String> {
        self.schemas
            .validate(instance, self.index)
            .map_err(|e| format!("{e}"))
    }
}

/// A scenario file as the JSON data model: TOML converted (comments
/// vanish), JSON as is.
fn data(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    if path.extension().is_some_and(|e| e == "json") {
        serde_json::from_str(&text).map_err(|e| e.to_string())
    } else {
        toml::from_str(&text).map_err(|e| e.to_string())
    }
}

/// The `.toml` and `.json` files of a folder, in name order.
fn fixtures(folder: &str) -> Vec<PathBuf> {
    let dir = root().join(folder);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a readable entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml" || x == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{folder} holds no fixture");
    files
}

fn rel(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// (a) The published files are what the code generates now: a change of the
/// format without regenerating them fails here.
#[test]
fn the_published_schemas_are_current() {
    let mut stale = Vec::new();
    for (name, file, schema) in published() {
        let text = std::fs::read_to_string(root().join(file)).unwrap_or_default();
        if text != pai_sim::schema_text(&schema) {
            stale.push(format!(
                "{file} is not what the code generates; regenerate it with\n    cargo run -p pai-sim -- schema {name} > {file}"
            ));
        }
    }
    assert!(stale.is_empty(), "{}", stale.join("\n"));
}

/// The output is deterministic and the scenario schema holds what the
/// simulator defines: every rule id, oracle, hook and event name.
#[test]
fn the_scenario_schema_names_what_the_simulator_defines() {
    let schema = ScenarioSpec::schema();
    let text = pai_sim::schema_text(&schema);
    assert_eq!(text, pai_sim::schema_text(&ScenarioSpec::schema()));
    assert!(text.ends_with("}\n"));
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    let rules: BTreeSet<&str> = schema["$defs"]["RuleId"]["enum"]
        .as_array()
        .expect("rule ids are an enum")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let catalogue: BTreeSet<&str> = pai_sim::rules().iter().map(|r| r.id.as_str()).collect();
    assert_eq!(rules, catalogue);
    for oracle in pai_sim::OracleId::ALL {
        assert!(
            text.contains(&format!("\"const\": \"{oracle}\"")),
            "oracle {oracle} is missing"
        );
    }
}

/// (b) Every scenario of the suite is valid under the schema.
#[test]
fn every_scenario_is_valid_under_the_schema() {
    let schema = Validator::new(ScenarioSpec::schema());
    let files = pai_sim::discover(&[root().join("scenarios")]).expect("scenarios/ is readable");
    assert!(files.len() >= 15, "found only {} scenarios", files.len());
    let mut failures = Vec::new();
    for path in &files {
        if let Err(e) = data(path).and_then(|v| schema.check(&v)) {
            failures.push(format!("{}: {e}", rel(path)));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The schema is no stricter than the loader: every generated fuzz case
/// the loader accepts (the fuzzer reaches every hook, fault and timeline
/// action) is valid under the schema, written as the fuzzer writes it.
#[test]
fn fuzz_cases_the_loader_accepts_are_valid_under_the_schema() {
    let schema = Validator::new(ScenarioSpec::schema());
    let mut checked = 0;
    let mut failures = Vec::new();
    for seed in 0..300 {
        let spec = pai_sim::fuzz::case(seed);
        if pai_sim::Scenario::from_spec(spec.clone()).is_err() {
            continue;
        }
        checked += 1;
        let value = serde_json::to_value(&spec).expect("a spec serializes");
        if let Err(e) = schema.check(&value) {
            failures.push(format!("fuzz case {seed}: {e}\n{value}"));
        }
    }
    assert!(checked >= 100, "only {checked} fuzz cases load");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// (c) A file in `tests/malformed/` breaks a check the schema expresses: the
/// schema and the loader both reject it. A file in `tests/refused/` breaks
/// a check only the loader can make (names unique across a list, a time
/// against the scenario's own limit, two counts that must differ): the
/// schema accepts it and the loader rejects it.
#[test]
fn malformed_files_fail_the_schema_and_refused_ones_only_the_loader() {
    let schema = Validator::new(ScenarioSpec::schema());
    let mut wrong = Vec::new();
    for path in fixtures("tests/malformed") {
        let by_schema = match data(&path) {
            Ok(v) => schema.check(&v).is_err(),
            // Not even TOML or JSON: no schema can accept it.
            Err(_) => true,
        };
        if !by_schema {
            wrong.push(format!("{}: the schema accepts it", rel(&path)));
        }
        if pai_sim::Scenario::load(&path).is_ok() {
            wrong.push(format!("{}: the loader accepts it", rel(&path)));
        }
    }
    for path in fixtures("tests/refused") {
        match data(&path).map(|v| schema.check(&v)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => wrong.push(format!(
                "{}: the schema rejects it, so it belongs in tests/malformed/: {e}",
                rel(&path)
            )),
            Err(e) => wrong.push(format!("{}: does not parse: {e}", rel(&path))),
        }
        if pai_sim::Scenario::load(&path).is_ok() {
            wrong.push(format!("{}: the loader accepts it", rel(&path)));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The schema refuses each value the loader refuses, field by field: the
/// one-line edits of a valid scenario below must each fail both.
#[test]
fn schema_and_loader_agree_on_small_edits() {
    let schema = Validator::new(ScenarioSpec::schema());
    let base = serde_json::json!({
        "name": "base",
        "rules": ["K1"],
        "timeline": [{ "send": "hi" }],
    });
    assert_eq!(schema.check(&base), Ok(()));
    let edits = [scenario_edits(), agent_edits(), hook_edits(), fault_edits()].concat();
    let mut wrong = Vec::new();
    for (what, edit) in edits {
        let mut v = base.clone();
        for (k, x) in edit.as_object().expect("an object") {
            v[k] = x.clone();
        }
        if schema.check(&v).is_ok() {
            wrong.push(format!("{what}: the schema accepts {v}"));
        }
        let path = Path::new("edit.json");
        let loaded = pai_sim::ScenarioSpec::parse(path, &v.to_string())
            .ok()
            .map(pai_sim::Scenario::from_spec);
        if matches!(loaded, Some(Ok(_))) {
            wrong.push(format!("{what}: the loader accepts {v}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Edits of the scenario's own fields and its timeline.
fn scenario_edits() -> Vec<(&'static str, Value)> {
    vec![
        ("blank name", serde_json::json!({ "name": "  " })),
        ("no rules", serde_json::json!({ "rules": [] })),
        ("empty timeline", serde_json::json!({ "timeline": [] })),
        ("zero time limit", serde_json::json!({ "time_limit_ms": 0 })),
        (
            "violation without oracle",
            serde_json::json!({ "expect": "violation" }),
        ),
        (
            "send past the default limit",
            serde_json::json!({ "timeline": [{ "send": "hi", "at": 3_600_000 }] }),
        ),
        (
            "live without watch",
            serde_json::json!({ "timeline": [{ "send": "hi", "live": [{ "kind": "uppercase" }] }] }),
        ),
        (
            "nothing to do",
            serde_json::json!({ "timeline": [{ "cancel": false }] }),
        ),
        (
            "cancel run 0",
            serde_json::json!({ "timeline": [{ "cancel": { "run": 0 } }] }),
        ),
        (
            "empty watcher name",
            serde_json::json!({ "timeline": [{ "watch": "" }] }),
        ),
    ]
}

/// Edits of the agent, its tools and the model scripts.
fn agent_edits() -> Vec<(&'static str, Value)> {
    vec![
        (
            "tool without behaviour",
            serde_json::json!({ "agent": { "tools": [{ "name": "t" }] } }),
        ),
        (
            "tool with echo = false only",
            serde_json::json!({ "agent": { "tools": [{ "name": "t", "echo": false }] } }),
        ),
        (
            "empty agent model",
            serde_json::json!({ "agent": { "model": "" } }),
        ),
        (
            "unnamed model script",
            serde_json::json!({ "models": { "": { "turns": [] } } }),
        ),
        (
            "error with tool calls",
            serde_json::json!({ "model": { "turns": [{ "error": "503", "tool_calls": [{ "tool": "t" }] }] } }),
        ),
    ]
}

/// Edits of the lifecycle's hooks.
fn hook_edits() -> Vec<(&'static str, Value)> {
    vec![
        (
            "blank hook name",
            serde_json::json!({ "lifecycle": [{ "hook": "rag", "name": " " }] }),
        ),
        (
            "history page 0",
            serde_json::json!({ "lifecycle": [{ "hook": "history_probe", "page": 0 }] }),
        ),
        (
            "redact without patterns",
            serde_json::json!({ "lifecycle": [{ "hook": "redact", "patterns": [], "replacement": "x" }] }),
        ),
        (
            "fallback to nothing",
            serde_json::json!({ "lifecycle": [{ "hook": "fallback", "to": "" }] }),
        ),
        (
            "route to an empty model",
            serde_json::json!({ "lifecycle": [{ "hook": "route", "at": "run", "model": "" }] }),
        ),
        (
            "unknown setting",
            serde_json::json!({ "lifecycle": [{ "hook": "route", "at": "run", "settings": { "temp": 1 } }] }),
        ),
    ]
}

/// Edits of planted faults.
fn fault_edits() -> Vec<(&'static str, Value)> {
    vec![
        (
            "edit_message doing two things",
            serde_json::json!({ "faults": [{ "kind": "edit_message", "seq": 1, "text": "x", "delete": true }] }),
        ),
        (
            "edit_request doing nothing",
            serde_json::json!({ "faults": [{ "kind": "edit_request", "call": 1 }] }),
        ),
        (
            "edit_message of message 0",
            serde_json::json!({ "faults": [{ "kind": "edit_message", "seq": 0, "delete": true }] }),
        ),
        (
            "unknown event",
            serde_json::json!({ "faults": [{ "kind": "drop", "event": "lunch" }] }),
        ),
    ]
}

/// (d) The event log of every scenario is valid under the events schema,
/// and each line names its event as planted faults do.
#[test]
fn event_logs_are_valid_under_the_events_schema() {
    pai_sim::quiet_planted_panics();
    let schema = Validator::new(EventRecord::schema());
    let files = pai_sim::discover(&[root().join("scenarios")]).expect("scenarios/ is readable");
    let mut seen = BTreeSet::new();
    let mut failures = Vec::new();
    for path in &files {
        let scenario = pai_sim::Scenario::load(path).expect("the suite loads");
        let report = match pai_sim::simulate(&scenario, scenario.seed) {
            Ok(r) => r,
            Err(e) => {
                failures.push(format!("{}: {e}", rel(path)));
                continue;
            }
        };
        let log = pai_sim::event_log_json(&report.events);
        assert_eq!(log.lines().count(), report.events.len());
        for (line, event) in log.lines().zip(&report.events) {
            let record: Value = serde_json::from_str(line).expect("each line is JSON");
            let name = event.kind.name().to_string();
            if record["event"] != name.as_str() {
                failures.push(format!("{}: {line} is not named {name}", rel(path)));
            }
            if let Err(e) = schema.check(&record) {
                failures.push(format!("{}: {line}\n{e}", rel(path)));
            }
            seen.insert(name);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    for name in [
        "admit",
        "hook",
        "around_model_call",
        "tool_end",
        "after_step",
        "end",
    ] {
        assert!(seen.contains(name), "no scenario logs {name}");
    }
}

/// The events schema is closed: an unknown event, a missing field or an
/// extra one is refused.
#[test]
fn the_events_schema_refuses_what_no_event_is() {
    let schema = Validator::new(EventRecord::schema());
    let good = serde_json::json!({
        "at": 0, "thread": "main", "run": "run-1",
        "event": "admit", "fields": { "trigger": "msg-1" },
    });
    assert_eq!(schema.check(&good), Ok(()));
    let mut wrong = Vec::new();
    for (what, path, value) in [
        ("unknown event", "/event", serde_json::json!("lunch")),
        ("missing field", "/fields", serde_json::json!({})),
        (
            "extra field",
            "/fields",
            serde_json::json!({ "trigger": "m", "x": 1 }),
        ),
        ("negative time", "/at", serde_json::json!(-1)),
    ] {
        let mut v = good.clone();
        if let Some(slot) = v.pointer_mut(path) {
            *slot = value;
        }
        if schema.check(&v).is_ok() {
            wrong.push(format!("{what}: accepted {v}"));
        }
    }
    let mut extra = good.clone();
    extra["extra"] = Value::Bool(true);
    if schema.check(&extra).is_ok() {
        wrong.push(format!("a field beside the event: accepted {extra}"));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
