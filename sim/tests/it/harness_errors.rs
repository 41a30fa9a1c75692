//! Library mode's load-time help (issue 39 items 4, 5 and 7): an error in
//! an author's entry is located at the field at fault; `expect =
//! "violation"` may name the author's own oracle; a script that calls a
//! tool the agent does not have is a load warning, unless the scenario
//! says it means to.

use std::sync::Arc;

use pai_runtime::{Tool, ToolError, tool_fn};
use pai_sim::Harness;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// Waits `work_ms` and answers.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Slow {
    work_ms: u64,
}

impl pai_sim::UserTool for Slow {
    fn build(&self, name: &str) -> Arc<dyn Tool> {
        let ms = self.work_ms;
        tool_fn(name, "Works slowly.", move |_cx, _: Value| async move {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
            Ok::<_, ToolError>(Value::from(ms))
        })
    }
}

fn harness() -> Harness {
    let mut h = Harness::new();
    h.tool::<Slow>("slow");
    h.oracle("every_run_complains", |obs| match obs.events().is_empty() {
        true => Ok(()),
        false => Err("this run happened".to_string()),
    });
    h
}

const SCENARIO: &str = r#"
name = "a slow tool"
rules = ["T2"]

[[agent.tools]]
use = "slow"
work_ms = 5

[[model.turns]]
tool_calls = [{ tool = "slow", input = {} }]

[[model.turns]]
text = ["Done."]

[[timeline]]
send = "Go."
"#;

/// Item 4: a wrong value in an author's entry is located at its field
/// (line 8 below), not at the `use` line, and names the field.
#[test]
fn x1_an_authors_entry_error_points_at_the_field() {
    let text = SCENARIO.replace("work_ms = 5", "work_ms = \"slow\"");
    let e = harness().parse("slow.toml", &text).unwrap_err();
    let shown = e.render(false);
    assert!(shown.contains("agent.tools[0].work_ms"), "{shown}");
    assert!(shown.contains("slow.toml:7:"), "{shown}");
    let text = SCENARIO.replace("work_ms = 5", "work_ms = 5\nwork_sm = 1");
    let shown = harness()
        .parse("slow.toml", &text)
        .unwrap_err()
        .render(false);
    assert!(shown.contains("agent.tools[0].work_sm"), "{shown}");
    assert!(shown.contains("slow.toml:8:"), "{shown}");
}

/// Item 5: a known gap judged by the author's own oracle is a scenario
/// file: `expect = "violation"` names it, and a misspelt name is refused.
#[test]
fn d5_expect_violation_may_name_the_authors_oracle() {
    let text = SCENARIO.replace(
        "rules = [\"T2\"]",
        "rules = [\"T2\", \"D5\"]\nexpect = \"violation\"\noracle = \"every_run_complains\"",
    );
    let h = harness();
    let s = h.parse("gap.toml", &text).unwrap();
    let report = pai_sim::simulate(&s, s.seed).unwrap();
    assert_eq!(pai_sim::verdict(&s, &report), Ok(()));
    let typo = text.replace(
        "oracle = \"every_run_complains\"",
        "oracle = \"every_run_complain\"",
    );
    let shown = h.parse("gap.toml", &typo).unwrap_err().render(false);
    assert!(
        shown.contains("did you mean \"every_run_complains\""),
        "{shown}"
    );
    let schema = h.schema().to_string();
    assert!(
        schema.contains("every_run_complains"),
        "the harness's schema names its oracle"
    );
}

/// Item 7: a tool entry with `use` but no `name` is named after the
/// `use`; a script that calls it by another name gets a warning at load,
/// in the transcript and the report, unless `agent.unknown_tools` says
/// the call is meant.
#[test]
fn a_call_of_a_tool_the_agent_lacks_is_a_load_warning() {
    let text = SCENARIO.replace("{ tool = \"slow\"", "{ tool = \"slow_tool\"");
    let h = harness();
    let s = h.parse("lacks.toml", &text).unwrap();
    assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
    let w = &s.warnings[0];
    assert!(w.starts_with("model.turns[0].tool_calls[0].tool"), "{w}");
    let typo = SCENARIO.replace("{ tool = \"slow\"", "{ tool = \"slwo\"");
    let close = &h.parse("typo.toml", &typo).unwrap().warnings[0];
    assert!(close.contains("did you mean \"slow\""), "{close}");
    let report = pai_sim::simulate(&s, s.seed).unwrap();
    assert!(
        report.transcript.contains("warning: model.turns[0]"),
        "{}",
        report.transcript
    );
    let meant = text.replace(
        "[[agent.tools]]",
        "[agent]\nunknown_tools = [\"slow_tool\"]\n\n[[agent.tools]]",
    );
    assert!(h.parse("meant.toml", &meant).unwrap().warnings.is_empty());
    let wrong = text.replace(
        "[[agent.tools]]",
        "[agent]\nunknown_tools = [\"slow\"]\n\n[[agent.tools]]",
    );
    let shown = h.parse("wrong.toml", &wrong).unwrap_err().render(false);
    assert!(shown.contains("agent.unknown_tools[0]"), "{shown}");
}
