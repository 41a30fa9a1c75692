//! The `expect` tables of scripted model turns: each request must carry what
//! the turn that answered it expects. Only the fields given are compared.

use std::collections::BTreeMap;

use pai_runtime::{
    ModelRequest,
    message::{ModelContent, ModelMessage},
};

use super::observed::{Observed, Violation};
use crate::format::{diff, model_message};
use crate::scenario::{OracleId, RequestExpect};
use crate::world::{Answer, ScriptName};

/// Each call whose request differs from its turn's expectation: the call's
/// index and the difference.
pub(super) fn mismatches(o: &Observed<'_>) -> Vec<(usize, String)> {
    o.calls
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let Answer::Turn(n) = c.answer else {
                return None;
            };
            let script = match &c.script {
                ScriptName::Default => &o.scenario.model,
                ScriptName::Model(name) => o.scenario.models.get(name)?,
            };
            let turn = script.turns.get(n - 1)?;
            let expect = turn.expect.as_ref()?;
            mismatch(expect, &c.request, o.calls.messages(c)).map(|m| (i, m))
        })
        .collect()
}

/// The violations the mismatches make.
pub(super) fn violations(o: &Observed<'_>, mismatches: &[(usize, String)]) -> Vec<Violation> {
    mismatches
        .iter()
        .map(|(i, m)| {
            let c = &o.calls[*i];
            Violation {
                oracle: OracleId::Request.into(),
                run: Some(c.request.run_id.to_string()),
                message: format!("step {} ({}): {m}", c.request.step, c.answer),
            }
        })
        .collect()
}

/// Compares a request with a turn's expectation; `None` when it matches.
fn mismatch(
    expect: &RequestExpect,
    request: &ModelRequest,
    messages: &[ModelMessage],
) -> Option<String> {
    let mut out = Vec::new();
    let mut field = |name: &str, expected: String, got: String| {
        if expected != got {
            out.push(format!("{name}: expected {expected}, got {got}"));
        }
    };
    if let Some(m) = &expect.model {
        field("model", m.clone(), request.route.model.clone());
    }
    if let Some(s) = &expect.settings {
        field("settings", text(s), text(&request.route.settings));
    }
    if let Some(p) = &expect.provider_options {
        field(
            "provider_options",
            text(p),
            text(&request.route.provider_options),
        );
    }
    if let Some(t) = &expect.tools {
        let got: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
        field("tools", format!("{t:?}"), format!("{got:?}"));
    }
    if let Some(t) = expect.timeout_ms {
        let got = request
            .timeout_ms
            .map_or_else(|| "none".into(), |t| t.to_string());
        field("timeout_ms", t.to_string(), got);
    }
    if let Some(m) = &expect.messages {
        let got: Vec<String> = seed_free(messages).iter().map(model_message).collect();
        if *m != got {
            let d = diff(
                &(m.join("\n") + "\n"),
                &(got.join("\n") + "\n"),
                "expected",
                "sent",
            );
            out.push(format!("messages differ:\n{d}"));
        }
    }
    (!out.is_empty()).then(|| out.join("; "))
}

/// The messages with each tool call id replaced by `#n`, its order of first
/// appearance in the request, so an expectation never spells a seeded id.
fn seed_free(messages: &[ModelMessage]) -> Vec<ModelMessage> {
    let mut ids: BTreeMap<String, String> = BTreeMap::new();
    let mut placeholder = |id: &str| {
        let n = ids.len() + 1;
        ids.entry(id.to_string())
            .or_insert_with(|| format!("#{n}"))
            .clone()
    };
    let mut out = messages.to_vec();
    for m in &mut out {
        for c in &mut m.content {
            match c {
                ModelContent::ToolCall { call_id, .. }
                | ModelContent::ToolResult { call_id, .. } => {
                    *call_id = placeholder(call_id).into();
                }
                ModelContent::Text { .. } => {}
            }
        }
    }
    out
}

/// JSON text of a value, for comparing.
fn text(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).unwrap_or_default()
}
