//! One generated case (SPEC D8): tools, a composition of hooks, scripted
//! models and a timeline, all from one seed. The case is an ordinary
//! scenario spec, so it can be written to a file and replayed.

use serde_json::json;

use super::draw::{DOCS, Gen, MODELS, WORDS};
use super::hooks::hook;
use crate::hooks::{HookSpec, TransformSpec};
use crate::scenario::{
    AgentSpec, CancelRun, CancelSpec, ModelSpec, ScenarioSpec, TimelineEntry, ToolCallSpec,
    ToolSpec, TurnSpec,
};

/// The case of `seed`.
pub fn case(seed: u64) -> ScenarioSpec {
    let mut g = Gen::new(seed);
    let tools = tools(&mut g);
    let names: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
    let lifecycle: Vec<HookSpec> = (0..g.range(0, 8)).map(|_| hook(&mut g, &names)).collect();
    let model = script(&mut g, &names);
    let models = MODELS[1..]
        .iter()
        .filter_map(|m| g.maybe(40, |g| (m.to_string(), named_script(g, &names))))
        .collect();
    let docs = DOCS
        .iter()
        .map(|d| (d.to_string(), format!("About {d}: {}", WORDS[d.len()])))
        .collect();
    ScenarioSpec {
        name: format!("fuzz case {seed:016x}"),
        rules: vec!["D8".into()],
        description: None,
        seed: g.u64() >> 11,
        expect: Default::default(),
        oracle: None,
        agent: AgentSpec {
            max_steps: g.range(1, 5) as u32,
            tools,
            ..AgentSpec::default()
        },
        lifecycle,
        model,
        models,
        docs,
        timeline: timeline(&mut g),
        faults: vec![],
        format: None,
        schema: None,
        time_limit_ms: None,
    }
}

fn tools(g: &mut Gen) -> Vec<ToolSpec> {
    (0..g.range(0, 3))
        .map(|i| {
            let mut t = ToolSpec {
                name: format!("tool{i}"),
                latency_ms: g.range(0, 60),
                requires: if g.chance(20) {
                    vec!["q".into()]
                } else {
                    vec![]
                },
                ..ToolSpec::default()
            };
            match g.index(5) {
                0 => t.echo = true,
                1 => t.fail = Some(json!("no such record")),
                2 => t.throw = Some(format!("backend {i} unreachable")),
                3 => t.panic = Some(format!("bug in tool {i}")),
                _ => t.output = Some(json!({ "hits": g.range(0, 9), "secret": "sk-Hid3" })),
            }
            t
        })
        .collect()
}

/// A turn: text deltas or tool calls, sometimes a provider error.
fn turn(g: &mut Gen, tools: &[String]) -> TurnSpec {
    let mut t = TurnSpec {
        latency_ms: g.range(0, 40),
        ..TurnSpec::default()
    };
    if tools.is_empty() || g.chance(50) {
        let text = g.text(6);
        t.text = g.deltas(&text);
        t.delta_ms = if g.chance(20) { g.range(1, 5) } else { 0 };
    } else {
        t.tool_calls = (0..g.range(1, 2)).map(|_| call(g, tools)).collect();
    }
    match g.index(20) {
        0 => {
            // The provider fails before any stream: the turn has nothing else.
            t.error = Some("overloaded".into());
            t.text.clear();
            t.tool_calls.clear();
            t.delta_ms = 0;
        }
        1 => t.stream_error = Some("connection reset".into()),
        _ => {}
    }
    t
}

/// A call of one of the tools, now and then of an unknown one or without
/// the input a tool requires.
fn call(g: &mut Gen, tools: &[String]) -> ToolCallSpec {
    let tool = if g.chance(10) {
        "ghost".to_string()
    } else {
        g.pick(tools).clone()
    };
    let input = if g.chance(20) {
        json!({})
    } else {
        json!({ "q": g.pick(WORDS).to_string() })
    };
    ToolCallSpec { tool, input }
}

fn script(g: &mut Gen, tools: &[String]) -> ModelSpec {
    ModelSpec {
        turns: (0..g.range(2, 10)).map(|_| turn(g, tools)).collect(),
        unavailable: false,
    }
}

/// A named model's script: a few turns, or a model that is down.
fn named_script(g: &mut Gen, tools: &[String]) -> ModelSpec {
    match g.chance(30) {
        true => ModelSpec {
            turns: vec![],
            unavailable: true,
        },
        false => ModelSpec {
            turns: (0..g.range(1, 3)).map(|_| turn(g, tools)).collect(),
            unavailable: false,
        },
    }
}

/// Client actions at random virtual times, so runs queue and overlap.
fn timeline(g: &mut Gen) -> Vec<TimelineEntry> {
    let mut out = Vec::new();
    let mut watchers = 0;
    for _ in 0..g.range(1, 6) {
        let at = g.range(0, 200);
        let base = TimelineEntry {
            at,
            thread: if g.chance(15) {
                "side".into()
            } else {
                "main".into()
            },
            ..TimelineEntry::default()
        };
        let text = Some(g.text(5));
        match g.index(10) {
            0..=4 => out.push(TimelineEntry { send: text, ..base }),
            5 | 6 => out.push(TimelineEntry {
                steer: text,
                ..base
            }),
            7 => {
                let cancel = match g.chance(50) {
                    true => CancelSpec::Current(true),
                    false => CancelSpec::Run(CancelRun {
                        run: g.range(1, 3) as usize,
                    }),
                };
                out.push(TimelineEntry { cancel, ..base });
            }
            8 => {
                out.push(TimelineEntry {
                    send: text,
                    ..base.clone()
                });
                out.push(TimelineEntry {
                    cancel: CancelSpec::Current(true),
                    ..base
                });
            }
            _ => {
                watchers += 1;
                let live = match g.index(3) {
                    0 => vec![TransformSpec::Uppercase],
                    _ => vec![],
                };
                out.push(TimelineEntry {
                    watch: Some(format!("w{watchers}")),
                    live,
                    ..base
                });
            }
        }
    }
    if !out.iter().any(|e| e.send.is_some() || e.steer.is_some()) {
        out.push(TimelineEntry {
            send: Some(g.text(4)),
            ..TimelineEntry::default()
        });
    }
    out
}
