//! A harness's tools and models in generated cases (issue 39, item 2):
//! each case of a campaign with drawn tools gets some of them, each with a
//! configuration drawn from the case's seed, and calls of them in its
//! model scripts with inputs from the author's strategy, the boundary of
//! the tool's approval predicate, and the numbers of the case's own
//! configurations one either side; the timeline answers some of the calls
//! that may wait. A drawn model takes the place of the default script in
//! some cases.

use std::panic::{AssertUnwindSafe, catch_unwind};

use serde_json::{Map, Value};

use crate::registry::Registry;
use crate::scenario::{
    ApprovalSpec, CallRef, DenySpec, LifecycleEntry, ModelSpec, ScenarioSpec, TimelineEntry,
    ToolCallSpec, ToolEntry, TurnSpec, UseToolSpec,
};
use crate::world::Rng;

/// How many inputs of the author's strategy a case draws per tool, to
/// look for both sides of its predicate among them.
const POOL: usize = 12;

/// Mixes the registry's drawn tools and models into `spec`, the case of
/// `case_seed`. Fails with why a configuration or an input could not be
/// drawn.
pub(crate) fn mix_tools(
    case_seed: u64,
    registry: &Registry,
    spec: &mut ScenarioSpec,
) -> Result<(), String> {
    let mut rng = Rng::new(case_seed ^ 0x7001_5EED_0F0A_0039);
    let drawers: Vec<_> = registry.tool_drawers().collect();
    let mut chosen: Vec<usize> = (0..drawers.len()).filter(|_| rng.below(2) == 0).collect();
    if chosen.is_empty() && !drawers.is_empty() {
        chosen.push(rng.below(drawers.len() as u64) as usize);
    }
    for i in chosen {
        let (name, (configs, inputs)) = drawers[i];
        let config = configs(rng.next_u64())
            .map_err(|e| format!("cannot draw a configuration of tool {name:?}: {e}"))?;
        let pool = (0..POOL)
            .map(|_| inputs(rng.next_u64()))
            .collect::<Result<Vec<Value>, String>>()
            .map_err(|e| format!("cannot draw an input of tool {name:?}: {e}"))?;
        if spec.agent.tools.iter().any(|t| t.name() == name) {
            continue;
        }
        let needs = needs_approval(registry, name, &config)?;
        let mut constants = numbers_of(spec);
        numbers(&Value::Object(config.clone()), &mut constants);
        let choices = Choices {
            boundary: boundary(&needs, &pool),
            constants,
            pool,
        };
        let approval = ApprovalSpec::Flag(rng.below(5) == 0);
        let may_wait = approval.may_wait() || choices.any_waits(&needs);
        spec.agent.tools.push(ToolEntry::User(UseToolSpec {
            use_: name.to_string(),
            name: None,
            latency_ms: rng.below(30),
            approval,
            on_output: None,
            config,
        }));
        let calls = call(&mut rng, name, &choices, spec);
        if may_wait {
            answer(&mut rng, name, calls, spec);
        }
    }
    mix_model(&mut rng, registry, spec)
}

/// The tool registered as `name` with `config`, built once: whether a
/// call with an input needs approval, as the tool itself says (a
/// panicking predicate: no).
fn needs_approval(
    registry: &Registry,
    name: &str,
    config: &Map<String, Value>,
) -> Result<impl Fn(&Value) -> bool + use<>, String> {
    let (def, _) = registry.check_tool(name, config).map_err(|e| e.message)?;
    let tool = def.build(name);
    Ok(move |input: &Value| {
        catch_unwind(AssertUnwindSafe(|| tool.needs_approval(input))).unwrap_or(false)
    })
}

/// Where a case's inputs of one tool come from.
struct Choices {
    /// The author's strategy's draws.
    pool: Vec<Value>,
    /// The two inputs either side of the tool's approval predicate.
    boundary: Option<(Value, Value)>,
    /// The numbers of the case's configurations.
    constants: Vec<f64>,
}

impl Choices {
    fn any_waits(&self, needs: &impl Fn(&Value) -> bool) -> bool {
        self.boundary.is_some() || self.pool.iter().any(needs)
    }

    /// One input: from the strategy (half the time), the boundary, or a
    /// draw with one of its numbers moved to a constant, one either side.
    fn pick(&self, rng: &mut Rng) -> Value {
        let drawn = self.pool[rng.below(self.pool.len() as u64) as usize].clone();
        match (rng.below(4), &self.boundary) {
            (2, Some((below, above))) => match rng.below(2) {
                0 => below.clone(),
                _ => above.clone(),
            },
            (3, _) if !self.constants.is_empty() => {
                let paths = numeric_paths(&drawn);
                if paths.is_empty() {
                    return drawn;
                }
                let path = &paths[rng.below(paths.len() as u64) as usize];
                let c = self.constants[rng.below(self.constants.len() as u64) as usize];
                let moved = c + rng.below(3) as f64 - 1.0;
                set(&drawn, path, moved)
            }
            _ => drawn,
        }
    }
}

/// Adds calls of tool `name` to the case's scripts (a third of the turns
/// that are not errors, at least one): returns how many.
fn call(rng: &mut Rng, name: &str, choices: &Choices, spec: &mut ScenarioSpec) -> usize {
    let mut added = 0;
    let scripts = std::iter::once(&mut spec.model).chain(spec.models.values_mut());
    for script in scripts.filter(|m| m.use_.is_none() && m.replay.is_empty()) {
        for turn in script.turns.iter_mut().filter(|t| t.error.is_none()) {
            if rng.below(3) == 0 {
                let input = choices.pick(rng);
                turn.tool_calls.push(ToolCallSpec {
                    tool: name.to_string(),
                    input,
                });
                added += 1;
            }
        }
    }
    let default = &mut spec.model;
    if added == 0 && default.use_.is_none() && default.replay.is_empty() && !default.unavailable {
        let input = choices.pick(rng);
        let tool_calls = vec![ToolCallSpec {
            tool: name.to_string(),
            input,
        }];
        let turn = TurnSpec {
            tool_calls,
            ..TurnSpec::default()
        };
        default.turns.insert(0, turn);
        added = 1;
    }
    added
}

/// Approves or denies some of the `calls` calls of `name`, at random
/// times (an answer to a call that does not wait is refused, as a
/// client's would be).
fn answer(rng: &mut Rng, name: &str, calls: usize, spec: &mut ScenarioSpec) {
    for nth in 1..=calls.min(3) {
        if rng.below(4) == 0 {
            continue;
        }
        let call = CallRef {
            tool: Some(name.to_string()),
            nth: Some(nth),
            call: None,
        };
        let mut entry = TimelineEntry {
            at: rng.below(400),
            ..TimelineEntry::default()
        };
        match rng.below(3) {
            0 => {
                entry.deny = Some(DenySpec {
                    tool: call.tool,
                    nth: call.nth,
                    call: None,
                    reason: "not now".into(),
                })
            }
            _ => entry.approve = Some(call),
        }
        in_play_order(&mut spec.timeline, entry);
    }
}

/// Inserts a timed entry behind the last timed entry not later than it.
/// Not a sort: an entry placed after a moment of a run (`after`) keeps
/// its place behind the entry before it, behind the send of its run.
fn in_play_order(timeline: &mut Vec<TimelineEntry>, entry: TimelineEntry) {
    let behind = timeline
        .iter()
        .rposition(|e| e.after.is_none() && e.at <= entry.at);
    timeline.insert(behind.map_or(0, |i| i + 1), entry);
}

/// A drawn model in place of the default script, in a quarter of the
/// cases (when there is one to draw).
fn mix_model(rng: &mut Rng, registry: &Registry, spec: &mut ScenarioSpec) -> Result<(), String> {
    let drawers: Vec<_> = registry.model_drawers().collect();
    if drawers.is_empty() || rng.below(4) != 0 {
        return Ok(());
    }
    let (name, configs) = drawers[rng.below(drawers.len() as u64) as usize];
    let config = configs(rng.next_u64())
        .map_err(|e| format!("cannot draw a configuration of model {name:?}: {e}"))?;
    spec.model = ModelSpec {
        use_: Some(name.to_string()),
        config,
        ..ModelSpec::default()
    };
    Ok(())
}

/// Two inputs either side of `needs`, adjacent in one number: found by
/// bisection on a number that differs between an input the predicate
/// holds on and one it does not (the rest kept from the first); `None`
/// when the pool has one side only, or no such number moves it.
fn boundary(needs: &impl Fn(&Value) -> bool, pool: &[Value]) -> Option<(Value, Value)> {
    let held = pool.iter().find(|v| needs(v))?;
    let free = pool.iter().find(|v| !needs(v))?;
    for path in numeric_paths(held) {
        let (Some(a), Some(b)) = (at(held, &path), at(free, &path)) else {
            continue;
        };
        if needs(&set(held, &path, b)) {
            continue;
        }
        // needs(a) holds, needs(b) does not: close in on where it turns.
        let (mut yes, mut no) = (a, b);
        let integral = a.fract() == 0.0 && b.fract() == 0.0;
        for _ in 0..64 {
            if (integral && (yes - no).abs() <= 1.0) || (yes - no).abs() < 1e-9 {
                break;
            }
            let mid = match integral {
                true => ((yes + no) / 2.0).floor(),
                false => (yes + no) / 2.0,
            };
            if mid == yes || mid == no {
                break;
            }
            match needs(&set(held, &path, mid)) {
                true => yes = mid,
                false => no = mid,
            }
        }
        return Some((set(held, &path, no), set(held, &path, yes)));
    }
    None
}

/// The paths of every number in `v` (object keys and array indices).
fn numeric_paths(v: &Value) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    walk(v, &mut Vec::new(), &mut out);
    out
}

fn walk(v: &Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match v {
        Value::Number(_) => out.push(path.clone()),
        Value::Object(m) => {
            for (k, x) in m {
                path.push(k.clone());
                walk(x, path, out);
                path.pop();
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                path.push(i.to_string());
                walk(x, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

fn at(v: &Value, path: &[String]) -> Option<f64> {
    let found = path.iter().try_fold(v, |v, k| match v {
        Value::Array(a) => a.get(k.parse::<usize>().ok()?),
        _ => v.get(k),
    });
    found.and_then(Value::as_f64)
}

/// `v` with the number at `path` set to `n` (an integer where `n` is one).
fn set(v: &Value, path: &[String], n: f64) -> Value {
    let mut out = v.clone();
    let mut slot = &mut out;
    for k in path {
        slot = match slot {
            Value::Array(a) => match k.parse::<usize>().ok().and_then(|i| a.get_mut(i)) {
                Some(x) => x,
                None => return out,
            },
            Value::Object(m) => match m.get_mut(k) {
                Some(x) => x,
                None => return out,
            },
            _ => return out,
        };
    }
    *slot = match n.fract() == 0.0 && n.abs() < 9.0e15 {
        true if n >= 0.0 => Value::from(n as u64),
        true => Value::from(n as i64),
        false => serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number),
    };
    out
}

/// The numbers in the case's configurations of registered hooks and tools.
fn numbers_of(spec: &ScenarioSpec) -> Vec<f64> {
    let mut out = Vec::new();
    for e in &spec.lifecycle {
        if let LifecycleEntry::User(u) = e {
            numbers(&Value::Object(u.config.clone()), &mut out);
        }
    }
    for t in &spec.agent.tools {
        if let ToolEntry::User(u) = t {
            numbers(&Value::Object(u.config.clone()), &mut out);
        }
    }
    out
}

fn numbers(v: &Value, out: &mut Vec<f64>) {
    for path in numeric_paths(v) {
        if let Some(n) = at(v, &path)
            && !out.contains(&n)
        {
            out.push(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Item 2: the boundary of an opaque predicate is found exactly, on
    /// integers and inside nested inputs.
    #[test]
    fn the_boundary_of_a_predicate_is_found_by_bisection() {
        let needs = |v: &Value| v["b"]["fare"].as_f64().is_some_and(|f| f > 500.0);
        let pool = [
            json!({"b": {"fare": 1700}, "to": "x"}),
            json!({"b": {"fare": 3}, "to": "y"}),
        ];
        let (below, above) = boundary(&needs, &pool).unwrap();
        assert_eq!(below, json!({"b": {"fare": 500}, "to": "x"}));
        assert_eq!(above, json!({"b": {"fare": 501}, "to": "x"}));
        assert_eq!(boundary(&needs, &pool[..1]), None);
        let off_by_one = |v: &Value| v["n"].as_i64().is_some_and(|n| n >= 502);
        let pool = [json!({"n": 0}), json!({"n": 90000})];
        let (below, above) = boundary(&off_by_one, &pool).unwrap();
        assert_eq!((below, above), (json!({"n": 501}), json!({"n": 502})));
    }

    #[test]
    fn numbers_are_found_and_set_at_their_paths() {
        let v = json!({"a": [1, {"b": 2.5}], "c": "x", "d": -3});
        let paths = numeric_paths(&v);
        assert_eq!(paths.len(), 3);
        let mut found = Vec::new();
        numbers(&v, &mut found);
        assert_eq!(found, vec![1.0, 2.5, -3.0]);
        assert_eq!(set(&v, &paths[1], 7.0)["a"][1]["b"], json!(7));
        assert_eq!(set(&v, &paths[2], -4.0)["d"], json!(-4));
    }
}
