//! Library mode (issue 28): hooks the test registers, named by scenario
//! files in `sim/tests/harness/scenarios/`, run with every oracle and
//! compared with the snapshots in `sim/tests/harness/snapshots/`.

use std::path::Path;

use pai_runtime::{
    HookFuture, Part, hook,
    hook::{Response, RunDecision, StepDecision},
    message::{ModelMessage, Outcome},
    model::Patch,
};
use pai_sim::Harness;
use pai_sim::hooks::{SimHook, UserHook};
use schemars::JsonSchema;
use serde::Deserialize;

/// A prepare_run policy: answers the run itself when the latest user
/// message contains `contains`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Policy {
    contains: String,
    reply: String,
}

impl UserHook for Policy {
    fn build(&self, name: &str) -> SimHook {
        let (contains, reply) = (self.contains.clone(), self.reply.clone());
        Box::new(hook::prepare_run(name, move |_, input| {
            let asks = input
                .latest_user_message
                .is_some_and(|m| m.text().contains(&contains));
            if !asks {
                return HookFuture::ready(Ok(RunDecision::default()));
            }
            HookFuture::ready(Ok(RunDecision::Respond(Response {
                outcome: Outcome::Completed,
                reason: Some("policy".into()),
                parts: vec![Part::text(reply.clone())],
            })))
        }))
    }
}

/// A prepare_model_step hook: a system note on every model call.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct StepNote {
    text: String,
}

impl UserHook for StepNote {
    fn build(&self, name: &str) -> SimHook {
        let text = self.text.clone();
        Box::new(hook::prepare_model_step(name, move |_, _| {
            let patch = Patch::append_system(text.clone());
            HookFuture::ready(Ok(StepDecision::Continue(patch)))
        }))
    }
}

/// A prepare_model_step hook that appends a user message to every call
/// (`harness_fuzz.rs` draws it too).
#[derive(Debug, Clone, serde::Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Inject {
    pub(crate) text: String,
}

impl UserHook for Inject {
    fn build(&self, name: &str) -> SimHook {
        let text = self.text.clone();
        Box::new(hook::prepare_model_step(name, move |_, _| {
            let patch = Patch {
                append_model_messages: vec![ModelMessage::user(text.clone())],
                ..Patch::default()
            };
            HookFuture::ready(Ok(StepDecision::Continue(patch)))
        }))
    }
}

fn harness() -> Harness {
    let mut h = Harness::new();
    h.hook::<Policy>("policy")
        .hook::<StepNote>("step_note")
        .hook::<Inject>("inject");
    crate::harness_tools::register_tools(&mut h);
    crate::harness_models::register_models(&mut h);
    h
}

/// The folder of library mode's scenarios (`harness_tools.rs` and
/// `harness_models.rs` load from it too).
pub(crate) const DIR: &str = "tests/harness/scenarios";

/// Loads `file` of [`DIR`] with `h`'s registrations and runs it once.
pub(crate) fn run_with(h: &Harness, file: &str) -> (pai_sim::Scenario, pai_sim::Report) {
    let s = h.load(Path::new(DIR).join(file)).unwrap();
    let report = pai_sim::simulate(&s, s.seed).unwrap();
    (s, report)
}

/// Every scenario of the folder passes every oracle, twice alike (D4),
/// and matches its snapshot.
#[test]
fn registered_hooks_run_under_every_oracle_and_match_their_snapshots() {
    harness().run_dir(DIR);
}

/// The transcript names the author's hook by the name the entry gave it
/// (or `<use>#<index>`), and the policy answered without a model call.
#[test]
fn the_transcript_names_the_authors_hooks() {
    let h = harness();
    let s = h
        .load(Path::new(DIR).join("note_on_every_step.toml"))
        .unwrap();
    assert_eq!(s.hooks[0].name, "house-style");
    assert!(s.hooks[0].is_user());
    let report = pai_sim::simulate(&s, s.seed).unwrap();
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    assert!(
        report.transcript.contains("house-style"),
        "{}",
        report.transcript
    );
    let s = h
        .load(Path::new(DIR).join("policy_answers_refunds_itself.toml"))
        .unwrap();
    assert_eq!(s.hooks[0].name, "policy#0");
    let report = pai_sim::simulate(&s, s.seed).unwrap();
    assert!(
        report.transcript.contains("policy#0"),
        "{}",
        report.transcript
    );
    assert!(report.transcript.contains("Refunds go through support"));
}

/// A name no one registered, a configuration its type refuses, and a
/// registered hook under the plain loader are located errors.
#[test]
fn unknown_names_and_bad_configurations_are_located_errors() {
    let h = harness();
    let head = "name = \"n\"\nrules = [\"L1\"]\n[[timeline]]\nsend = \"hi\"\n\n[[lifecycle]]\n";
    let err = |body: &str| h.parse("x.toml", &format!("{head}{body}")).unwrap_err();
    let e = err("use = \"polcy\"\n");
    assert_eq!(e.location.map(|l| l.0), Some(7), "{}", e.render(false));
    assert!(e.message.contains("\"polcy\""), "{}", e.message);
    assert!(
        e.message
            .contains("[\"inject\", \"policy\", \"step_note\"]"),
        "{}",
        e.message
    );
    let e = err("use = \"policy\"\ncontains = \"x\"\n");
    assert!(e.message.contains("missing field `reply`"), "{}", e.message);
    assert_eq!(e.location.map(|l| l.0), Some(7), "{}", e.render(false));
    let e = err("use = \"policy\"\ncontains = 3\nreply = \"r\"\n");
    assert!(e.message.contains("invalid type"), "{}", e.message);
    let e = err("use = \"step_note\"\ntext = \"t\"\ntone = \"dry\"\n");
    assert!(e.message.contains("unknown field `tone`"), "{}", e.message);
    let plain = pai_sim::Scenario::parse(
        Path::new("x.toml"),
        &format!("{head}use = \"policy\"\ncontains = \"a\"\nreply = \"b\"\n"),
    );
    let e = plain.unwrap_err();
    assert!(
        e.message
            .contains("only a pai_sim::Harness knows hooks by name"),
        "{}",
        e.message
    );
}

/// Issue 28: the library registers itself like an author's hooks, so
/// `use = "<kind>"` names a library kind too, and checks into the very hook
/// `hook = "<kind>"` does (foreseen by the oracles, refused by the
/// library's checks), under the plain loader and a harness alike.
#[test]
fn a_library_kind_named_by_use_is_the_hook_its_hook_entry_is() {
    let head = "name = \"n\"\nrules = [\"L1\"]\n[[timeline]]\nsend = \"hi\"\n\n[[lifecycle]]\n";
    let text = |key: &str, body: &str| format!("{head}{key} = \"system_message\"\n{body}");
    let plain =
        |key: &str, body: &str| pai_sim::Scenario::parse(Path::new("x.toml"), &text(key, body));
    for body in [
        "name = \"greet\"\nat = \"run\"\ntext = \"be brief\"\n",
        "at = \"step\"\ntext = \"t\"\n",
    ] {
        let by_hook = plain("hook", body).unwrap();
        let by_use = plain("use", body).unwrap();
        assert_eq!(by_use.hooks, by_hook.hooks);
        assert!(by_use.hooks[0].library().is_some(), "{:?}", by_use.hooks);
        let harnessed = harness().parse("x.toml", &text("use", body)).unwrap();
        assert_eq!(harnessed.hooks, by_hook.hooks);
    }
    let refused = |key: &str| {
        let body = "at = \"run\"\ntext = \"t\"\nname = \" \"\n";
        let e = plain(key, body).unwrap_err();
        (e.message, e.location)
    };
    let (message, location) = refused("hook");
    assert_eq!(
        message,
        "lifecycle[0].name: system_message: must not be empty (leave it out for a generated name)"
    );
    assert_eq!((message, location), refused("use"));
}

/// The library's kinds are registered first: a harness cannot take their
/// names.
#[test]
#[should_panic(expected = "a hook is registered as \"system_message\" already")]
fn a_harness_cannot_register_over_a_library_kind() {
    harness().hook::<Policy>("system_message");
}

/// A failing scenario's report names the problem and the command that
/// replays it from the author's tests.
#[test]
fn a_failure_prints_the_line_that_replays_it() {
    let dir = std::env::temp_dir().join(format!("pai-harness-{}", std::process::id()));
    let scenarios = dir.join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    let file = scenarios.join("wrong.toml");
    let text =
        std::fs::read_to_string(Path::new(DIR).join("policy_answers_refunds_itself.toml")).unwrap();
    // The scenario claims a violation that never comes.
    let text = text.replacen(
        "rules = [\"L12\", \"L14\"]",
        "rules = [\"L12\"]\nexpect = \"violation\"\noracle = \"L12\"",
        1,
    );
    std::fs::write(&file, text).unwrap();
    let outcome = harness().check_dir(&scenarios);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!outcome.passed());
    let report = outcome.report();
    assert!(report.contains("FAIL"), "{report}");
    assert!(report.contains("PAI_SIM_FILTER="), "{report}");
    assert!(
        report.contains("wrong.toml cargo test -p pai-sim"),
        "{report}"
    );
}

/// The harness's schema checks each registered entry against its
/// configuration type: `use` is that name, the type's fields beside it.
#[test]
fn the_schema_names_each_registered_hook_with_its_fields() {
    let schema = harness().schema();
    let entries = schema["$defs"]["UseSpec"]["oneOf"].as_array().unwrap();
    let names: Vec<&str> = entries
        .iter()
        .map(|e| e["properties"]["use"]["const"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["inject", "policy", "step_note"]);
    let policy = &entries[1];
    assert_eq!(policy["required"][0], "use");
    assert!(
        policy["required"]
            .as_array()
            .unwrap()
            .contains(&"reply".into())
    );
    assert_eq!(policy["additionalProperties"], false, "{policy}");
    assert!(policy["properties"]["contains"].is_object());
    assert!(policy["properties"]["name"].is_object());
    // The library's entries are untouched.
    assert!(schema["$defs"]["HookSpec"].is_object());
    let text = pai_sim::schema_text(&schema);
    assert_eq!(text, pai_sim::schema_text(&harness().schema()), "stable");
}

/// A configuration type whose schema name is one of the format's own.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "MessageSpec")]
struct Clash {}

impl UserHook for Clash {
    fn build(&self, name: &str) -> SimHook {
        Box::new(hook::prepare_run(name, |_, _| {
            HookFuture::ready(Ok(RunDecision::default()))
        }))
    }
}

#[test]
#[should_panic(expected = "has the name of a type of the scenario format")]
fn a_configuration_named_like_a_format_type_is_refused_in_the_schema() {
    let mut h = harness();
    h.hook::<Clash>("clash");
    let _ = h.schema();
}
