//! Generated tools (SPEC D8): backend tools with every behaviour, approval
//! tools (each call waits for an approve or a deny, T7), client tools (each
//! call waits for a submitted output, sometimes of a required shape), and
//! `on_output` handlers beside any of them (T6).

use serde_json::{Value, json};

use super::draw::{Family, Gen, META_KEYS, OUTPUT_FIELDS};
use crate::scenario::{OnOutputSpec, ScenarioSpec, ToolEntry, ToolSpec};

/// A tool whose calls wait for a client, as the timeline answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Waiter {
    pub name: String,
    /// A client tool (answered by a submitted output); else an approval tool.
    pub client: bool,
    /// The fields a submitted output must have.
    pub requires: Vec<String>,
    /// How many calls of it the scripts make (1 to 3), so answers name
    /// `nth` among them.
    pub calls: usize,
}

/// Up to three tools of any kind.
pub(super) fn tools(g: &mut Gen) -> Vec<ToolSpec> {
    (0..g.range(0, 3)).map(|i| tool(g, i)).collect()
}

fn tool(g: &mut Gen, i: u64) -> ToolSpec {
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
    // Client (2 in 10), approval (2 in 10) or plain (6 in 10).
    match g.kind(Family::Tool, &[2, 2, 6]) {
        // A client tool has no behaviour of its own (the loader refuses one).
        0 => {
            t.client = true;
            if g.chance(50) {
                let n = g.range(1, OUTPUT_FIELDS.len() as u64) as usize;
                t.output_requires = OUTPUT_FIELDS[..n].iter().map(|f| f.to_string()).collect();
            }
        }
        kind => {
            behaviour(g, &mut t, i);
            t.approval = (kind == 1).into();
        }
    }
    t.on_output = g.maybe(30, on_output);
    t
}

/// One backend behaviour: what the tool does when it runs.
fn behaviour(g: &mut Gen, t: &mut ToolSpec, i: u64) {
    match g.kind(Family::Behaviour, &[1; 5]) {
        0 => t.echo = true,
        1 => t.fail = Some(json!("no such record")),
        2 => t.throw = Some(format!("backend {i} unreachable")),
        3 => t.panic = Some(format!("bug in tool {i}")),
        _ => t.output = Some(json!({ "hits": g.range(0, 9), "secret": "sk-Hid3" })),
    }
}

/// A handler that counts outputs, keeps the last one, or both.
fn on_output(g: &mut Gen) -> OnOutputSpec {
    let key = |g: &mut Gen| g.pick(META_KEYS).to_string();
    match g.index(3) {
        0 => OnOutputSpec {
            count: Some(key(g)),
            keep: None,
        },
        1 => OnOutputSpec {
            count: None,
            keep: Some(key(g)),
        },
        _ => OnOutputSpec {
            count: Some(key(g)),
            keep: Some(key(g)),
        },
    }
}

/// The approval and client tools of `spec` that its scripts call, so
/// answers name calls that are actually made.
pub(super) fn waiters(spec: &ScenarioSpec) -> Vec<Waiter> {
    let calls = |name: &str| {
        std::iter::once(&spec.model)
            .chain(spec.models.values())
            .flat_map(|m| &m.turns)
            .flat_map(|t| &t.tool_calls)
            .filter(|c| c.tool == name)
            .count()
    };
    spec.agent
        .tools
        .iter()
        .filter_map(ToolEntry::scripted)
        .filter(|t| t.approval.may_wait() || t.client)
        .map(|t| Waiter {
            name: t.name.clone(),
            client: t.client,
            requires: t.output_requires.clone(),
            calls: calls(&t.name).min(3),
        })
        .filter(|w| w.calls > 0)
        .collect()
}

/// An output a client submits for `w`: usually of the shape it requires,
/// sometimes missing a field, now and then not an object at all.
pub(super) fn output(g: &mut Gen, w: &Waiter) -> Value {
    if g.chance(8) {
        return json!("14:00");
    }
    let mut fields: Vec<&str> = w.requires.iter().map(String::as_str).collect();
    if !fields.is_empty() && g.chance(25) {
        fields.remove(g.index(fields.len()));
    }
    let mut out = serde_json::Map::new();
    for f in fields {
        out.insert(f.to_string(), json!(g.text(2)));
    }
    if g.chance(50) {
        out.insert("picked".into(), json!(g.range(0, 9)));
    }
    Value::Object(out)
}
