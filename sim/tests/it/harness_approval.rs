//! Library mode, approval decided per call (issue 39 items 1 and 2): a
//! registered tool whose calls need approval when a predicate on their
//! input holds, judged by the T7 oracle; and harness fuzz that draws the
//! author's tool with inputs from the author's strategy, finds an
//! off-by-one in its predicate with the author's oracle, and counts what
//! each author hook decided.

use std::sync::Arc;

use pai_runtime::event::EventKind;
use pai_runtime::hook::ToolCallDecision;
use pai_runtime::store::Answer;
use pai_runtime::tool::NeedsApproval;
use pai_runtime::{HookFuture, Tool, ToolError, hook, typed_tool};
use pai_sim::hooks::{SimHook, UserHook};
use pai_sim::observe::{Finding, Observation};
use pai_sim::{Harness, OracleName};
use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Books a fare; fares over `limit` need a person's approval. `slack`
/// plants an off-by-one: approval only over `limit + slack`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Booking {
    limit: u64,
    #[serde(default)]
    slack: u64,
}

#[derive(Debug, Serialize, Deserialize)]
struct Fare {
    fare: u64,
    to: String,
}

impl pai_sim::UserTool for Booking {
    fn build(&self, name: &str) -> Arc<dyn Tool> {
        let over = self.limit + self.slack;
        let approval = NeedsApproval::when(move |f: &Fare| f.fare > over);
        typed_tool(name, "Books a fare.", approval, |_cx, f: Fare| async move {
            Ok::<_, ToolError>(serde_json::json!({ "booked": f.to, "fare": f.fare }))
        })
        .tool()
    }
}

/// The author's rule, as their oracle says it: no fare over the limit is
/// booked without an approval before it.
fn no_fare_over_the_limit_unapproved(obs: &Observation<'_>) -> Result<(), Finding> {
    let mut approved = std::collections::BTreeSet::new();
    for e in obs.events() {
        match &e.kind {
            EventKind::Answered {
                call_id,
                answer: Answer::Approved,
                ..
            } => {
                approved.insert(call_id.clone());
            }
            EventKind::ToolStart {
                tool,
                call_id,
                input,
                ..
            } if tool == "book" && !approved.contains(call_id) => {
                let fare = input.get("fare").and_then(|f| f.as_u64()).unwrap_or(0);
                if fare > LIMIT {
                    let m = format!("booked a fare of {fare} without an approval");
                    return Err(Finding::in_run(&e.run_id, m));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

const LIMIT: u64 = 500;

fn booking_harness(slack: u64) -> Harness {
    let mut h = Harness::new();
    h.tool_with(
        "book",
        move || {
            Just(Booking {
                limit: LIMIT,
                slack,
            })
        },
        || (0u64..100_000, "[A-Z][a-z]{2,6}").prop_map(|(fare, to)| Fare { fare, to }),
    )
    .oracle(
        "no_fare_over_the_limit_unapproved",
        no_fare_over_the_limit_unapproved,
    );
    h
}

const AT_THE_BOUNDARY: &str = r#"
name = "a registered tool asks for approval over its limit only"
rules = ["T7"]

[[agent.tools]]
use = "book"
limit = 500

[[model.turns]]
tool_calls = [
  { tool = "book", input = { fare = 500, to = "Oslo" } },
  { tool = "book", input = { fare = 501, to = "Rome" } },
]

[[model.turns]]
text = ["Booked."]

[[timeline]]
send = "Book Oslo and Rome."

[[timeline]]
at = 10
expect_waiting = [{ tool = "book", nth = 2 }]

[[timeline]]
at = 20
approve = { tool = "book", nth = 2 }
"#;

/// SPEC T7, item 1: a registered tool's own predicate decides per call;
/// the T7 oracle judges it from the log with the tool's rule.
#[test]
fn t7_a_registered_tools_predicate_decides_per_call() {
    let h = booking_harness(0);
    let s = h.parse("boundary.toml", AT_THE_BOUNDARY).unwrap();
    let report = pai_sim::simulate(&s, s.seed).unwrap();
    assert!(report.violations.is_empty(), "{}", report.transcript);
    let waits: Vec<usize> = report
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Waiting { calls, .. } => Some(calls.len()),
            _ => None,
        })
        .collect();
    assert_eq!(waits, [1], "{}", report.transcript);
    // The scenario says approval too: `approval = { when = ... }` on a
    // registered tool joins the tool's own rule.
    let both = AT_THE_BOUNDARY.replace(
        "limit = 500\n",
        "limit = 500\napproval = { when = \"to == \\\"Oslo\\\"\" }\n",
    );
    let both = both.replace("nth = 2 }]", "nth = 1 }, { tool = \"book\", nth = 2 }]");
    let s = h.parse("both.toml", &both).unwrap();
    let report = pai_sim::simulate(&s, s.seed).unwrap();
    let checks = report
        .transcript
        .contains("expect_waiting [book#1, book#2]: holds");
    assert!(checks, "{}", report.transcript);
}

/// Item 2: the fuzzer draws the author's tool with inputs from their
/// strategy, and the boundary of its predicate: an off-by-one (approval
/// over 501, not 500) that 100,000 possible fares would hide is found by
/// the author's oracle, and the correct tool passes the same campaign.
#[test]
fn fuzz_finds_an_off_by_one_in_a_registered_tools_predicate() {
    let dir = std::env::temp_dir().join(format!("pai-sim-approval-finds-{}", std::process::id()));
    let mut broken = booking_harness(1);
    broken.finds_dir(&dir);
    let outcome = broken.check_fuzz(80, 39);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        !outcome.passed(),
        "missed the off-by-one\n{}",
        outcome.report()
    );
    let find = &outcome.summary.finds[0];
    let oracle = OracleName::User("no_fare_over_the_limit_unapproved".into());
    assert_eq!(find.failure, pai_sim::fuzz::Failure::Oracle(oracle));
    assert!(find.message.contains("fare of 501"), "{}", find.message);
    let correct = booking_harness(0).check_fuzz(find.index + 1, 39);
    assert!(correct.passed(), "{}", correct.report());
}

/// Rejects `book` calls over `cap`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Cap {
    cap: u64,
}

impl UserHook for Cap {
    fn build(&self, name: &str) -> SimHook {
        let cap = self.cap;
        Box::new(hook::before_tool_call(name, move |_, input| {
            let fare = input.input.get("fare").and_then(|f| f.as_u64());
            HookFuture::ready(Ok(match fare.is_some_and(|f| f > cap) {
                true => ToolCallDecision::Reject {
                    message: format!("over {cap}"),
                },
                false => ToolCallDecision::Continue,
            }))
        }))
    }
}

/// Item 2: the report counts, per author hook, the cases where it
/// decided something, not only those that held it.
#[test]
fn the_fuzz_report_counts_what_each_authors_hook_decided() {
    let mut h = booking_harness(0);
    h.hook_with("cap", || (0u64..1000).prop_map(|cap| Cap { cap }));
    let outcome = h.check_fuzz(40, 5);
    assert!(outcome.passed(), "{}", outcome.report());
    let mixed = &outcome.summary.mixed;
    let (held, rejected) = (
        mixed.count_of("cap", "cases"),
        mixed.count_of("cap", "rejected"),
    );
    assert!(
        held > 0 && rejected > 0 && rejected < held,
        "{held} {rejected}"
    );
    assert_eq!(mixed.count_of("cap", "decided"), rejected);
    let report = outcome.report();
    assert!(
        report.contains("rejected") && report.contains("decided"),
        "{report}"
    );
}

/// Item 6: `Harness::show` gives the transcript and the timeline page of
/// any scenario with the author's tools, a passing one included.
#[test]
fn show_gives_the_transcript_and_page_of_a_passing_run() {
    let dir = std::env::temp_dir().join(format!("pai-sim-show-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("boundary.toml");
    std::fs::write(&path, AT_THE_BOUNDARY).unwrap();
    let shown = booking_harness(0).show(&path, None).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(shown.verdict, Ok(()));
    assert!(
        shown.transcript.contains("wait on ["),
        "{}",
        shown.transcript
    );
    assert!(
        shown.html.starts_with("<!DOCTYPE html>"),
        "{}",
        &shown.html[..80]
    );
    assert!(shown.html.contains("book"));
    let other = booking_harness(0).show(dir.join("missing.toml"), Some(3));
    assert!(matches!(other, Err(pai_sim::ShowError::Load(_))));
}
