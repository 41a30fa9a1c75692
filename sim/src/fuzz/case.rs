//! One generated case (SPEC D8): tools, a composition of hooks, scripted
//! models and a timeline, all from one seed. The case is an ordinary
//! scenario spec, so it can be written to a file and replayed.

use serde_json::json;

use super::draw::{DOCS, Features, Gen, MODELS, WORDS};
use super::hooks::hook;
use super::timeline::timeline;
use super::tools::{tools, waiters};
use crate::hooks::HookSpec;
use crate::scenario::{
    AgentSpec, LifecycleEntry, ModelSpec, ScenarioSpec, ToolCallSpec, ToolEntry, TurnSpec,
};

/// The case of `seed`, its features chosen by swarm testing.
pub fn case(seed: u64) -> ScenarioSpec {
    case_with(seed, Features::swarm(seed))
}

/// The case of `seed` drawing only from `features`' kinds
/// ([`Features::ALL`]: every kind, as without swarm testing).
pub fn case_with(seed: u64, features: Features) -> ScenarioSpec {
    let mut g = Gen::new(seed, features);
    let tools = tools(&mut g);
    let names: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
    let lifecycle: Vec<HookSpec> = (0..g.range(0, 8)).map(|_| hook(&mut g, &names)).collect();
    let mut model = script(&mut g, &names);
    let waiting: Vec<String> = tools
        .iter()
        .filter(|t| t.approval.may_wait() || t.client)
        .map(|t| t.name.clone())
        .collect();
    if !waiting.is_empty() && g.chance(75) {
        // A turn early in the script that calls waiting tools, so that runs
        // often wait and the timeline's answers find their calls.
        let at = g.index(model.turns.len().min(1) + 1);
        let mut t = turn(&mut g, &names);
        t.error = None;
        t.tool_calls = (0..g.range(1, 3)).map(|_| call(&mut g, &waiting)).collect();
        model.turns.insert(at, t);
    }
    let models = MODELS[1..]
        .iter()
        .filter_map(|m| g.maybe(40, |g| (m.to_string(), named_script(g, &names))))
        .collect();
    let docs = DOCS
        .iter()
        .map(|d| (d.to_string(), format!("About {d}: {}", WORDS[d.len()])))
        .collect();
    let mut spec = ScenarioSpec {
        name: format!("fuzz case {seed:016x}"),
        rules: vec!["D8".into()],
        description: None,
        seed: g.u64() >> 11,
        expect: Default::default(),
        oracle: None,
        agent: AgentSpec {
            max_steps: g.range(1, 5) as u32,
            tools: tools.into_iter().map(ToolEntry::from).collect(),
            ..AgentSpec::default()
        },
        lifecycle: lifecycle.into_iter().map(LifecycleEntry::from).collect(),
        model,
        models,
        docs,
        timeline: vec![],
        faults: vec![],
        workers: vec![],
        cluster: None,
        format: None,
        schema: None,
        time_limit_ms: None,
    };
    // `ghost` is called on purpose: no load warning for it.
    let scripts = std::iter::once(&spec.model).chain(spec.models.values());
    if scripts
        .flat_map(|m| &m.turns)
        .flat_map(|t| &t.tool_calls)
        .any(|c| c.tool == "ghost")
    {
        spec.agent.unknown_tools = vec!["ghost".into()];
    }
    super::replayed::replayed(seed, &mut spec);
    super::approval::approval(seed, &mut spec);
    spec.timeline = timeline(&mut g, &waiters(&spec));
    super::cluster::cluster(seed, features, &mut spec);
    super::near::cancel_mid_tool(seed, features, &mut spec);
    super::facade::facade(seed, features, &mut spec);
    super::waiting::waiting(seed, features, &mut spec);
    super::resumed_steer::resumed_steer(seed, features, &mut spec);
    super::taker::taker_faults(seed, features, &mut spec);
    super::persist::persist(seed, features, &mut spec);
    super::placed::placed(seed, features, &mut spec);
    spec
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
        ..ModelSpec::default()
    }
}

/// A named model's script: a few turns, or a model that is down.
fn named_script(g: &mut Gen, tools: &[String]) -> ModelSpec {
    match g.chance(30) {
        true => ModelSpec {
            unavailable: true,
            ..ModelSpec::default()
        },
        false => ModelSpec {
            turns: (0..g.range(1, 3)).map(|_| turn(g, tools)).collect(),
            ..ModelSpec::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    /// Every generated case loads: the loader refuses what a scenario names
    /// but does not have (a tool no agent has and no script calls, a call
    /// no script makes), so the generator names only its own.
    #[test]
    fn every_generated_case_loads() {
        let mut refused = Vec::new();
        for seed in 0..1500 {
            for (how, spec) in [
                ("swarm", case(seed)),
                ("all", case_with(seed, Features::ALL)),
            ] {
                if let Err(e) = Scenario::from_spec(spec) {
                    refused.push(format!("case {seed} ({how}): {e}"));
                }
            }
        }
        assert!(refused.is_empty(), "{}", refused.join("\n"));
    }
}
