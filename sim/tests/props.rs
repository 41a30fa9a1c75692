//! Property tests over whole simulated runs.
//!
//! M1 (concurrent appends): for random timelines of sends, steering messages
//! and cancels arriving while steps and tools run, no step's context holds a
//! message stored after that step's anchor (the M1 oracle, which runs with
//! every other oracle on every run, the phase grammar and H1 among them), and
//! every message sent is stored exactly once. Some generated runs carry a
//! throwing tool and a hook that fails or panics mid-run; the X3 oracle then
//! checks that nothing committed is lost.

use std::collections::BTreeMap;

use pai_sim::hooks::{Fail, HookSpec, PhaseName, SlowResolver};
use pai_sim::{
    AgentSpec, Expect, ModelSpec, Scenario, ScenarioSpec, TimelineEntry, ToolCallSpec, ToolSpec,
    TurnSpec,
};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::json;

/// One client action: at a virtual time, send (0), steer (1) or cancel (2).
#[derive(Debug, Clone)]
struct Action {
    at: u64,
    kind: u8,
}

/// One scripted model turn: text, or a call of tool `0` or `1`.
#[derive(Debug, Clone)]
enum Turn {
    Text { latency: u64 },
    Call { tool: usize, latency: u64 },
}

fn scenario(
    seed: u64,
    tool_latency: [u64; 2],
    resolver_ms: u64,
    turns: &[Turn],
    actions: &[Action],
) -> Scenario {
    let tools = (0..2)
        .map(|i| ToolSpec {
            name: format!("tool{i}"),
            latency_ms: tool_latency[i],
            // tool1 throws: its error result must still be stored and paired.
            output: (i == 0).then(|| json!({ "tool": i })),
            throw: (i == 1).then(|| "tool1 is down".to_string()),
            ..ToolSpec::default()
        })
        .collect();
    let turns = turns
        .iter()
        .enumerate()
        .map(|(i, t)| match t {
            Turn::Text { latency } => TurnSpec {
                text: vec![format!("answer {i}")],
                latency_ms: *latency,
                ..TurnSpec::default()
            },
            Turn::Call { tool, latency } => TurnSpec {
                tool_calls: vec![ToolCallSpec {
                    tool: format!("tool{tool}"),
                    input: json!({ "turn": i }),
                }],
                latency_ms: *latency,
                ..TurnSpec::default()
            },
        })
        .collect();
    let timeline = actions
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let text = Some(format!("message {i}"));
            TimelineEntry {
                at: a.at,
                send: if a.kind == 0 { text.clone() } else { None },
                steer: if a.kind == 1 { text } else { None },
                cancel: a.kind == 2,
                ..TimelineEntry::default()
            }
        })
        .collect();
    let spec = ScenarioSpec {
        name: "generated".into(),
        rules: vec!["M1".into(), "A4".into()],
        description: None,
        seed,
        expect: Expect::Pass,
        oracle: None,
        agent: AgentSpec {
            max_steps: 4,
            tools,
            ..AgentSpec::default()
        },
        // A resolver that waits before it reads history, so messages arrive
        // between the step's start and its read; and, for odd seeds, a hook
        // that fails at step 2 (X3: failures lose nothing committed).
        lifecycle: std::iter::once(HookSpec::SlowResolver(SlowResolver {
            name: None,
            ms: resolver_ms,
        }))
        .chain((seed % 2 == 1).then(|| {
            HookSpec::Fail(Fail {
                name: None,
                phase: PhaseName::AfterToolResult,
                message: "planted failure".into(),
                panic: seed % 4 == 3,
                step: Some(2),
            })
        }))
        .collect(),
        model: ModelSpec {
            turns,
            unavailable: false,
        },
        models: BTreeMap::new(),
        docs: BTreeMap::new(),
        timeline,
        faults: vec![],
    };
    Scenario::from_spec(spec).expect("a generated scenario is well formed")
}

fn turn() -> impl Strategy<Value = Turn> {
    prop_oneof![
        (0u64..40).prop_map(|latency| Turn::Text { latency }),
        (0usize..2, 0u64..40).prop_map(|(tool, latency)| Turn::Call { tool, latency }),
    ]
}

fn action() -> impl Strategy<Value = Action> {
    (
        0u64..200,
        prop_oneof![3 => Just(0u8), 2 => Just(1u8), 1 => Just(2u8)],
    )
        .prop_map(|(at, kind)| Action { at, kind })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 128,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            concat!(env!("CARGO_MANIFEST_DIR"), "/proptest-regressions/props.txt"),
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn m1_concurrent_appends_never_enter_a_running_step(
        seed in any::<u64>(),
        tool_latency in [0u64..80, 0u64..80],
        resolver_ms in 0u64..60,
        turns in prop::collection::vec(turn(), 1..16),
        actions in prop::collection::vec(action(), 1..6),
    ) {
        let s = scenario(seed, tool_latency, resolver_ms, &turns, &actions);
        let report = pai_sim::simulate(&s, seed).expect("a generated scenario runs");
        prop_assert!(
            report.violations.is_empty(),
            "{:?}\n{}",
            report.violations,
            report.transcript
        );
        for (i, _) in actions.iter().enumerate().filter(|(_, a)| a.kind != 2) {
            let text = format!("message {i}");
            let stored = report
                .threads
                .iter()
                .flat_map(|t| &t.messages)
                .filter(|m| m.role == pai_runtime::Role::User && m.text() == text)
                .count();
            prop_assert_eq!(stored, 1, "{} stored {} times\n{}", text, stored, report.transcript);
        }
    }
}
