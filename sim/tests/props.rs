//! Property tests over whole simulated runs: generated scenarios, every
//! oracle on every case (SPEC D3, D7).
//!
//! A case has two to three tools with random latencies and behaviours (some
//! fail, throw or panic), a scripted model whose turns are text cut into
//! random deltas (secrets across delta boundaries, multi-byte characters) or
//! one or two parallel tool calls, canonical redaction, a history probe that
//! waits before it reads (M1, M3: messages arrive meanwhile), sometimes a
//! resolver that waits before the default context and a hook that only waits
//! in some phase (moving when steers land: before or after an anchor), a
//! hook that fails or panics in a random phase at a random step (L4, X3),
//! and a timeline of sends, steers, cancels (of the current run, right after
//! a send, or of a named queued run: K6) and watchers with live stages.
//! Beyond the oracles, every message sent is stored exactly once.

use std::collections::BTreeMap;

use pai_sim::hooks::{
    Delay, Fail, HistoryProbe, HookSpec, PhaseName, Redact, RedactPattern, SlowResolver,
    TransformSpec,
};
use pai_sim::{
    AgentSpec, CancelRun, CancelSpec, Expect, ModelSpec, Scenario, ScenarioSpec, TimelineEntry,
    ToolCallSpec, ToolSpec, TurnSpec,
};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::json;

/// What a generated tool does.
#[derive(Debug, Clone, Copy)]
enum Behaviour {
    Output,
    Echo,
    Fail,
    Throw,
    Panic,
}

/// One client action at a virtual time.
#[derive(Debug, Clone)]
enum Act {
    Send,
    Steer,
    Cancel,
    /// A send and a cancel at the same instant.
    SendThenCancel,
    /// Cancel the run of the thread's n-th send.
    CancelSend(usize),
    Watch {
        uppercase: bool,
    },
}

/// One scripted model turn.
#[derive(Debug, Clone)]
enum Turn {
    /// A text cut into deltas at the given byte-independent char points.
    Text {
        secret: bool,
        cuts: Vec<usize>,
        latency: u64,
    },
    Calls {
        tools: Vec<usize>,
        latency: u64,
    },
}

/// A hook that fails or panics.
#[derive(Debug, Clone)]
struct Failing {
    phase: PhaseName,
    step: u32,
    panic: bool,
}

#[derive(Debug, Clone)]
struct Case {
    seed: u64,
    tools: Vec<(Behaviour, u64)>,
    turns: Vec<Turn>,
    probe_wait: u64,
    /// A resolver that waits before it reads the default context.
    slow_resolver: Option<u64>,
    /// A hook that only waits, in a phase.
    delay: Option<(PhaseName, u64)>,
    failing: Option<Failing>,
    actions: Vec<(u64, Act)>,
}

const WORDS: &str = "héllo wörld the key is ";
const SECRET: &str = "sk-Ab9_x7Q";

fn text(i: usize, secret: bool, cuts: &[usize]) -> Vec<String> {
    let mut whole = format!("{WORDS}{i} ");
    if secret {
        whole.push_str(SECRET);
        whole.push_str(" ok");
    }
    let chars: Vec<char> = whole.chars().collect();
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (chars.len() + 1)).collect();
    points.sort_unstable();
    points.dedup();
    let mut out = Vec::new();
    let mut from = 0;
    for p in points.into_iter().chain([chars.len()]) {
        out.push(chars[from..p].iter().collect());
        from = p;
    }
    out
}

fn tool(i: usize, (b, latency): (Behaviour, u64)) -> ToolSpec {
    let mut t = ToolSpec {
        name: format!("tool{i}"),
        latency_ms: latency,
        ..ToolSpec::default()
    };
    match b {
        Behaviour::Output => t.output = Some(json!({ "tool": i })),
        Behaviour::Echo => t.echo = true,
        Behaviour::Fail => t.fail = Some(json!("no such record")),
        Behaviour::Throw => t.throw = Some(format!("tool{i} backend unreachable")),
        Behaviour::Panic => t.panic = Some(format!("tool{i} bug")),
    }
    t
}

fn turn(i: usize, t: &Turn) -> TurnSpec {
    match t {
        Turn::Text {
            secret,
            cuts,
            latency,
        } => TurnSpec {
            text: text(i, *secret, cuts),
            latency_ms: *latency,
            ..TurnSpec::default()
        },
        Turn::Calls { tools, latency } => TurnSpec {
            tool_calls: tools
                .iter()
                .map(|k| ToolCallSpec {
                    tool: format!("tool{k}"),
                    input: json!({ "turn": i }),
                })
                .collect(),
            latency_ms: *latency,
            ..TurnSpec::default()
        },
    }
}

fn entry(i: usize, at: u64, act: &Act) -> Vec<TimelineEntry> {
    let base = TimelineEntry {
        at,
        ..TimelineEntry::default()
    };
    let text = Some(format!("message {i}"));
    match act {
        Act::Send => vec![TimelineEntry { send: text, ..base }],
        Act::Steer => vec![TimelineEntry {
            steer: text,
            ..base
        }],
        Act::Cancel => vec![TimelineEntry {
            cancel: CancelSpec::Current(true),
            ..base
        }],
        Act::SendThenCancel => vec![
            TimelineEntry {
                send: text,
                ..base.clone()
            },
            TimelineEntry {
                cancel: CancelSpec::Current(true),
                ..base
            },
        ],
        Act::CancelSend(n) => vec![TimelineEntry {
            cancel: CancelSpec::Run(CancelRun { run: *n }),
            ..base
        }],
        Act::Watch { uppercase } => vec![TimelineEntry {
            watch: Some(format!("w{i}")),
            live: if *uppercase {
                vec![TransformSpec::Uppercase]
            } else {
                vec![]
            },
            ..base
        }],
    }
}

fn hooks(c: &Case) -> Vec<HookSpec> {
    let pattern = RedactPattern::try_from("sk-[A-Za-z0-9_]+".to_string()).expect("pattern");
    let mut out = vec![
        HookSpec::HistoryProbe(HistoryProbe {
            name: None,
            page: 2,
            wait_ms: c.probe_wait,
        }),
        HookSpec::Redact(Redact {
            name: None,
            patterns: vec![pattern],
            replacement: "[REDACTED]".into(),
        }),
    ];
    out.extend(
        c.slow_resolver
            .map(|ms| HookSpec::SlowResolver(SlowResolver { name: None, ms })),
    );
    out.extend(c.delay.map(|(phase, ms)| {
        HookSpec::Delay(Delay {
            name: None,
            phase,
            ms,
            step: None,
        })
    }));
    out.extend(c.failing.as_ref().map(|f| {
        HookSpec::Fail(Fail {
            name: None,
            phase: f.phase,
            message: "planted failure".into(),
            panic: f.panic,
            step: Some(f.step),
        })
    }));
    out
}

fn scenario(c: &Case) -> Scenario {
    let spec = ScenarioSpec {
        name: "generated".into(),
        rules: vec![
            "M1".into(),
            "M3".into(),
            "K6".into(),
            "A4".into(),
            "S3".into(),
        ],
        description: None,
        seed: c.seed,
        expect: Expect::Pass,
        oracle: None,
        agent: AgentSpec {
            max_steps: 4,
            tools: c
                .tools
                .iter()
                .enumerate()
                .map(|(i, t)| tool(i, *t))
                .collect(),
            ..AgentSpec::default()
        },
        lifecycle: hooks(c),
        model: ModelSpec {
            turns: c
                .turns
                .iter()
                .enumerate()
                .map(|(i, t)| turn(i, t))
                .collect(),
            unavailable: false,
        },
        models: BTreeMap::new(),
        docs: BTreeMap::new(),
        timeline: c
            .actions
            .iter()
            .enumerate()
            .flat_map(|(i, (at, a))| entry(i, *at, a))
            .collect(),
        faults: vec![],
    };
    Scenario::from_spec(spec).expect("a generated scenario is well formed")
}

fn behaviour() -> impl Strategy<Value = Behaviour> {
    prop_oneof![
        4 => Just(Behaviour::Output),
        2 => Just(Behaviour::Echo),
        1 => Just(Behaviour::Fail),
        1 => Just(Behaviour::Throw),
        1 => Just(Behaviour::Panic),
    ]
}

fn turn_strategy(tools: usize) -> impl Strategy<Value = Turn> {
    prop_oneof![
        (
            any::<bool>(),
            prop::collection::vec(0usize..64, 0..4),
            0u64..40
        )
            .prop_map(|(secret, cuts, latency)| Turn::Text {
                secret,
                cuts,
                latency
            }),
        (prop::collection::vec(0..tools, 1..3), 0u64..40)
            .prop_map(|(tools, latency)| Turn::Calls { tools, latency }),
    ]
}

fn phase() -> impl Strategy<Value = PhaseName> {
    prop_oneof![
        Just(PhaseName::PrepareRun),
        Just(PhaseName::ResolveModelContext),
        Just(PhaseName::PrepareModelStep),
        Just(PhaseName::AroundModelCall),
        Just(PhaseName::BeforeToolCall),
        Just(PhaseName::AfterToolResult),
        Just(PhaseName::AfterStep),
    ]
}

fn act() -> impl Strategy<Value = Act> {
    prop_oneof![
        5 => Just(Act::Send),
        2 => Just(Act::Steer),
        1 => Just(Act::Cancel),
        1 => Just(Act::SendThenCancel),
        1 => (1usize..4).prop_map(Act::CancelSend),
        1 => any::<bool>().prop_map(|uppercase| Act::Watch { uppercase }),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    let tools = prop::collection::vec((behaviour(), 0u64..80), 2..4);
    tools.prop_flat_map(|tools| {
        let n = tools.len();
        (
            any::<u64>(),
            Just(tools),
            prop::collection::vec(turn_strategy(n), 1..14),
            0u64..40,
            prop::option::of(0u64..30),
            prop::option::of((phase(), 0u64..30)),
            prop::option::weighted(
                0.4,
                (phase(), 0u32..3, any::<bool>()).prop_map(|(phase, step, panic)| Failing {
                    phase,
                    step,
                    panic,
                }),
            ),
            prop::collection::vec((0u64..200, act()), 1..7),
        )
            .prop_map(
                |(seed, tools, turns, probe_wait, slow_resolver, delay, failing, actions)| Case {
                    seed,
                    tools,
                    turns,
                    probe_wait,
                    slow_resolver,
                    delay,
                    failing,
                    actions,
                },
            )
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 192,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            concat!(env!("CARGO_MANIFEST_DIR"), "/proptest-regressions/props.txt"),
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_oracle_holds_on_generated_runs(c in case()) {
        let s = scenario(&c);
        let report = pai_sim::simulate(&s, c.seed).expect("a generated scenario runs");
        prop_assert!(
            report.violations.is_empty(),
            "{:?}\n{}",
            report.violations,
            report.transcript
        );
        for (i, (_, a)) in c.actions.iter().enumerate() {
            if !matches!(a, Act::Send | Act::Steer | Act::SendThenCancel) {
                continue;
            }
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
