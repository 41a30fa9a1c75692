//! The harness can fail: a redactor broken the way hand-written ones
//! often are (it redacts each stream delta alone, so an account number
//! cut across two deltas gets through) is caught by the agent's oracle in
//! a scenario and by the fuzzer.

use pai_runtime::StreamPart;
use pai_runtime::hook;
use pai_runtime::stream::{Emit, StreamTransform};
use pai_sim::hooks::{SimHook, UserHook};
use pai_sim::{Harness, OracleName};
use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Replaces `ACCT-` and its digits in each delta on its own (it reads
/// the real redactor's configuration and ignores its `patterns`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct PerDeltaRedactor {
    replacement: String,
    #[serde(default)]
    patterns: Vec<String>,
}

#[derive(Debug)]
struct PerDelta(String);

impl StreamTransform for PerDelta {
    fn push(&mut self, part: StreamPart, out: &mut Emit) {
        match part {
            StreamPart::TextDelta(t) => out.text(redact_alone(&t, &self.0)),
            other => out.part(other),
        }
    }
}

fn redact_alone(text: &str, replacement: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("ACCT-") {
        out.push_str(&rest[..i]);
        let tail = &rest[i + 5..];
        let digits = tail.len() - tail.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        out.push_str(if digits > 0 { replacement } else { "ACCT-" });
        rest = &tail[digits..];
    }
    out.push_str(rest);
    out
}

impl UserHook for PerDeltaRedactor {
    fn build(&self, name: &str) -> SimHook {
        let replacement = self.replacement.clone();
        Box::new(hook::transform_step_stream(name, move |_, _| {
            Some(Box::new(PerDelta(replacement.clone())) as Box<dyn StreamTransform>)
        }))
    }
}

fn broken_harness() -> Harness {
    let mut h = Harness::new();
    h.hook_with("pii", || {
        "\\[[a-z]{1,8}\\]".prop_map(|replacement| PerDeltaRedactor {
            replacement,
            patterns: vec![],
        })
    })
    .fuzz_words(["ACCT-4417"])
    .oracle(
        "no_account_number_from_the_model",
        crate::harness::no_account_number_from_the_model,
    );
    h
}

const SPLIT: &str = r#"
name = "an account number cut across two deltas"
rules = ["S3"]

[[lifecycle]]
use = "pii"
patterns = ["ACCT-[0-9]+"]
replacement = "[redacted]"

[[model.turns]]
text = ["Your account is ACC", "T-4417, all set."]

[[timeline]]
send = "Which account is mine?"
"#;

#[test]
fn a_per_delta_redactor_is_caught_by_the_agents_oracle() {
    let h = broken_harness();
    let s = h.parse("split.toml", SPLIT).unwrap();
    let report = pai_sim::simulate(&s, s.seed).unwrap();
    let oracle = OracleName::User("no_account_number_from_the_model".into());
    assert!(
        report.violations.iter().any(|v| v.oracle == oracle),
        "{}",
        report.transcript
    );
    // The real redactor passes the same scenario.
    let s = crate::harness::harness()
        .parse("split.toml", SPLIT)
        .unwrap();
    let report = pai_sim::simulate(&s, s.seed).unwrap();
    assert!(report.violations.is_empty(), "{}", report.transcript);
}

#[test]
fn a_per_delta_redactor_is_caught_by_the_fuzzer() {
    let dir = std::env::temp_dir().join(format!("support-agent-finds-{}", std::process::id()));
    let mut h = broken_harness();
    h.finds_dir(&dir);
    let outcome = h.check_fuzz(200, 1);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        !outcome.passed(),
        "the fuzzer missed the split account number\n{}",
        outcome.report()
    );
    let failure = &outcome.summary.finds[0].failure;
    assert_eq!(
        failure.to_string(),
        "oracle no_account_number_from_the_model"
    );
}
