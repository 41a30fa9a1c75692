//! Library mode, registered models (issue 28 item 1): models the test
//! registers with `Harness::model`, named by `[model] use = "..."` scripts
//! of the scenarios in `sim/tests/harness/scenarios/` (which `harness.rs`
//! runs with every oracle against their snapshots).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use pai_runtime::message::{ModelContent, ModelMessage};
use pai_runtime::model::{BoxStream, FinishReason, ReadyStream};
use pai_runtime::{HookFuture, LanguageModel, ModelError, ModelRequest, StreamPart};
use pai_sim::{Harness, UserModel};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// The parts as a stream, every one at once.
fn ready(parts: Vec<StreamPart>) -> Result<BoxStream, ModelError> {
    Ok(Box::new(ReadyStream::new(parts)) as BoxStream)
}

/// Every content of the request's messages, in order.
fn contents(request: &ModelRequest) -> impl Iterator<Item = &ModelContent> {
    request
        .messages
        .iter()
        .flat_map(|m: &ModelMessage| &m.content)
}

/// Greets: after `wait_ms` virtual milliseconds, streams `greeting`,
/// then the request's last text, as text deltas.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Greeter {
    greeting: String,
    #[serde(default)]
    wait_ms: u64,
}

struct GreeterModel {
    greeting: String,
    wait_ms: u64,
}

impl LanguageModel for GreeterModel {
    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> HookFuture<'a, Result<BoxStream, ModelError>> {
        HookFuture::new(async move {
            tokio::time::sleep(Duration::from_millis(self.wait_ms)).await;
            let last = contents(request).filter_map(|c| match c {
                ModelContent::Text { text } => Some(text.clone()),
                _ => None,
            });
            let said = last.last().unwrap_or_default();
            ready(vec![
                StreamPart::text(self.greeting.clone()),
                StreamPart::text(format!(" You said: {said}")),
                StreamPart::Finish(FinishReason::Stop),
            ])
        })
    }
}

impl UserModel for Greeter {
    fn build(&self, _name: &str) -> Arc<dyn LanguageModel> {
        Arc::new(GreeterModel {
            greeting: self.greeting.clone(),
            wait_ms: self.wait_ms,
        })
    }
}

/// Calls `tool` with `input`; once the request holds a tool result,
/// answers `reply` and the result's output.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Caller {
    tool: String,
    input: Value,
    reply: String,
}

impl LanguageModel for Caller {
    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> HookFuture<'a, Result<BoxStream, ModelError>> {
        let result = contents(request).find_map(|c| match c {
            ModelContent::ToolResult { output, .. } => Some(output.to_string()),
            _ => None,
        });
        let parts = match result {
            Some(output) => vec![
                StreamPart::text(format!("{} {output}", self.reply)),
                StreamPart::Finish(FinishReason::Stop),
            ],
            None => vec![
                StreamPart::tool_call(
                    format!("mcall_{}", request.step),
                    self.tool.clone(),
                    self.input.clone(),
                ),
                StreamPart::Finish(FinishReason::ToolCalls),
            ],
        };
        HookFuture::ready(ready(parts))
    }
}

impl UserModel for Caller {
    fn build(&self, _name: &str) -> Arc<dyn LanguageModel> {
        Arc::new(self.clone())
    }
}

/// A provider that is down: every call fails before a stream exists.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Down {
    message: String,
}

impl LanguageModel for Down {
    fn stream<'a>(&'a self, _: &'a ModelRequest) -> HookFuture<'a, Result<BoxStream, ModelError>> {
        HookFuture::ready(Err(ModelError::Provider(self.message.clone())))
    }
}

impl UserModel for Down {
    fn build(&self, _name: &str) -> Arc<dyn LanguageModel> {
        Arc::new(self.clone())
    }
}

/// Registers the models the scenarios of the folder use.
pub(crate) fn register_models(h: &mut Harness) {
    h.model::<Greeter>("greeter")
        .model::<Caller>("caller")
        .model::<Down>("down");
}

fn harness() -> Harness {
    let mut h = Harness::new();
    register_models(&mut h);
    h
}

fn run(file: &str) -> (pai_sim::Scenario, pai_sim::Report) {
    crate::harness::run_with(&harness(), file)
}

/// The model streams from its configuration and the request, on the
/// virtual clock; the call is recorded as registered, with its
/// configuration, and no oracle foresees its text.
#[test]
fn a_registered_model_answers_from_its_configuration() {
    let (s, report) = run("a_registered_model_answers_from_its_configuration.toml");
    let def = &s.registered[&None];
    assert_eq!(def.use_name, "greeter");
    assert!(s.model.turns.is_empty());
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    let t = &report.transcript;
    assert!(
        t.contains("call 1 at 0ms run=") && t.contains("script=default registered route"),
        "{t}"
    );
    assert!(
        t.contains(
            r#"answered by the model registered as "greeter" {"greeting":"Hello.","wait_ms":5}"#
        ),
        "{t}"
    );
    assert!(t.contains("Hello. You said: Where is my parcel?"), "{t}");
}

/// The model's tool call waits for approval, named by tool in the
/// timeline; the loader stands down from checking the answer against the
/// scripts (it refused it, "no script calls `refund`", before). The
/// resumed step's request holds the result, and the model answers.
#[test]
fn a_registered_model_calls_a_tool_then_answers() {
    let (_, report) = run("a_registered_model_calls_a_tool_then_answers.toml");
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    let t = &report.transcript;
    let waits = t.find("wait on [mcall_0]").expect("the run waits");
    let approved = t.find("answer mcall_0 approved").expect("approved");
    let answered = t
        .find(r#"text "Refunded: {\"amount\":30,\"order\":7}""#)
        .expect("the model answers from the result");
    assert!(waits < approved && approved < answered, "{t}");
    assert_eq!(t.matches("script=default registered").count(), 2, "{t}");
}

/// The model's failure before its stream is the attempt's: the fallback
/// hook around the call sees it and retries on the scripted backup.
#[test]
fn a_registered_models_failure_reaches_the_fallback_hook() {
    let (_, report) = run("a_registered_model_fails_and_the_fallback_answers.toml");
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    let t = &report.transcript;
    let first = t.find("script=default registered").expect("the first call");
    let second = t.find("script=backup turn 1").expect("the retry");
    assert!(first < second, "{t}");
    assert!(t.contains("The backup answers."), "{t}");
}

/// Without a fallback, the model's failure fails the run's attempt and
/// the run.
#[test]
fn a_registered_models_failure_fails_the_run_without_a_fallback() {
    let text = "name = \"n\"\nrules = [\"P7\"]\n[model]\nuse = \"down\"\nmessage = \"gone\"\n[[timeline]]\nsend = \"hi\"\n";
    let s = harness().parse("x.toml", text).unwrap();
    let report = pai_sim::simulate(&s, s.seed).unwrap();
    let t = &report.transcript;
    assert!(t.contains("gone"), "{t}");
    assert!(t.contains("run_failed") || t.contains("failed"), "{t}");
}

/// A name no one registered, a configuration its type refuses, a
/// registered model under the plain loader, and `use` beside a scripted
/// field are located errors.
#[test]
fn unknown_models_bad_configurations_and_mixed_scripts_are_located_errors() {
    let h = harness();
    let head = "name = \"n\"\nrules = [\"S1\"]\n[[timeline]]\nsend = \"hi\"\n\n[model]\n";
    let err = |body: &str| h.parse("x.toml", &format!("{head}{body}")).unwrap_err();
    let e = err("use = \"greter\"\ngreeting = \"a\"\n");
    assert_eq!(e.location.map(|l| l.0), Some(7), "{}", e.render(false));
    assert!(
        e.message.contains("no model is registered as \"greter\"")
            && e.message.contains("[\"caller\", \"down\", \"greeter\"]"),
        "{}",
        e.message
    );
    let e = err("use = \"greeter\"\n");
    assert!(
        e.message.contains("missing field `greeting`"),
        "{}",
        e.message
    );
    let e = err("use = \"greeter\"\ngreeting = \"a\"\ntone = 2\n");
    assert!(e.message.contains("unknown field `tone`"), "{}", e.message);
    let e = err("use = \"greeter\"\ngreeting = \"a\"\n[[model.turns]]\ntext = [\"b\"]\n");
    assert!(
        e.message.contains("answers every call itself")
            && e.message.contains("`use` or `turns`, not both"),
        "{}",
        e.message
    );
    assert_eq!(e.location.map(|l| l.0), Some(9), "{}", e.render(false));
    let e = err("use = \"down\"\nmessage = \"x\"\nunavailable = true\n");
    assert_eq!(e.location.map(|l| l.0), Some(9), "{}", e.render(false));
    assert!(e.message.contains("`unavailable`"), "{}", e.message);
    let named = "name = \"n\"\nrules = [\"S1\"]\n[[timeline]]\nsend = \"hi\"\n\n[models.big]\nuse = \"nope\"\n";
    let e = h.parse("x.toml", named).unwrap_err();
    assert_eq!(e.location.map(|l| l.0), Some(7), "{}", e.render(false));
    assert!(
        e.message.contains("no model is registered"),
        "{}",
        e.message
    );
    let plain = pai_sim::Scenario::parse(
        Path::new("x.toml"),
        &format!("{head}use = \"greeter\"\ngreeting = \"a\"\n"),
    );
    let e = plain.unwrap_err();
    assert!(
        e.message
            .contains("only a pai_sim::Harness knows models by name"),
        "{}",
        e.message
    );
}

/// The harness's schema checks each registered model's script against
/// its configuration type; a scripted one still has its own schema.
#[test]
fn the_schema_names_each_registered_model_with_its_fields() {
    let schema = harness().schema();
    let model = &schema["$defs"]["ModelSpec"];
    let entries = model["anyOf"][1]["oneOf"].as_array().unwrap();
    let names: Vec<&str> = entries
        .iter()
        .map(|e| e["properties"]["use"]["const"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["caller", "down", "greeter"]);
    let greeter = &entries[2];
    assert_eq!(greeter["required"], serde_json::json!(["use", "greeting"]));
    assert_eq!(greeter["additionalProperties"], false, "{greeter}");
    assert!(model["anyOf"][0]["properties"]["turns"].is_object());
}
