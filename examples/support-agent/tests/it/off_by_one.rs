//! The harness can fail, per call: a refund tool whose approval rule is
//! off by one (a refund of exactly one dollar over the limit goes through
//! unasked) is caught by the agent's `no_large_refund_without_approval`
//! oracle in a scenario and by the fuzzer, which draws the tool's inputs
//! from the agent's strategy and adds the boundary of its predicate. An
//! amount drawn from $0–$10,000 lands on that one dollar once in ten
//! thousand draws; the boundary lands on it every time.

use std::sync::Arc;

use pai_runtime::Tool;
use pai_sim::{Harness, OracleName, UserTool};
use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use support_agent::RefundTool;

use crate::harness::{no_large_refund_without_approval, refund_inputs};

/// The refund tool with the planted off-by-one: approval only over
/// `approval_over + 1`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
struct Sloppy(RefundTool);

impl UserTool for Sloppy {
    fn build(&self, name: &str) -> Arc<dyn Tool> {
        let off = RefundTool {
            approval_over: self.0.approval_over + 1,
        };
        off.tool(name)
    }
}

fn sloppy_harness() -> Harness {
    let mut h = Harness::new();
    let configs = || (20u64..500).prop_map(|approval_over| Sloppy(RefundTool { approval_over }));
    h.tool_with("refund_tool", configs, refund_inputs).oracle(
        "no_large_refund_without_approval",
        no_large_refund_without_approval,
    );
    h
}

const ONE_OVER: &str = r#"
name = "a refund one dollar over the limit"
rules = ["T7"]

[[agent.tools]]
use = "refund_tool"
name = "refund"
approval_over = 100

[[model.turns]]
tool_calls = [{ tool = "refund", input = { order = 7, amount = 101 } }]

[[model.turns]]
text = ["Refunded."]

[[timeline]]
send = "Refund $101 on order 7, please."
"#;

fn oracle() -> OracleName {
    OracleName::User("no_large_refund_without_approval".into())
}

#[test]
fn an_off_by_one_approval_rule_is_caught_by_the_agents_oracle() {
    let s = sloppy_harness().parse("one_over.toml", ONE_OVER).unwrap();
    let report = pai_sim::simulate(&s, s.seed).unwrap();
    assert!(
        report.violations.iter().any(|v| v.oracle == oracle()),
        "{}",
        report.transcript
    );
    // The real tool waits for approval on the same scenario.
    let s = crate::harness::harness()
        .parse("one_over.toml", ONE_OVER)
        .unwrap();
    let report = pai_sim::simulate(&s, s.seed).unwrap();
    assert!(report.violations.is_empty(), "{}", report.transcript);
}

#[test]
fn an_off_by_one_approval_rule_is_caught_by_the_fuzzer() {
    let dir = std::env::temp_dir().join(format!("support-agent-off-by-one-{}", std::process::id()));
    let mut h = sloppy_harness();
    h.finds_dir(&dir);
    let outcome = h.check_fuzz(60, 2026);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        !outcome.passed(),
        "the fuzzer missed the off-by-one\n{}",
        outcome.report()
    );
    let find = &outcome.summary.finds[0];
    assert_eq!(find.failure, pai_sim::fuzz::Failure::Oracle(oracle()));
}
