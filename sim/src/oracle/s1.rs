//! SPEC S1, S2: one canonical stream per step: what a step stores as its
//! assistant text is the provider's text through the canonical stages,
//! nothing lost, added or reordered on the way (the scripted model's
//! deltas, or a replayed recording cut into chunks). Judged where the
//! provider's text is known and the step had one model call that streamed
//! to its end: a scripted turn without errors, or a recording whose whole
//! body decodes without an error part (the reference: the recording
//! decoded at once, which the decoders' own tests check against every
//! chunking). A stream guard that may abort (S4) and a registered stream
//! hook leave the step unjudged.

use std::collections::BTreeMap;

use pai_runtime::message::Producer;
use pai_runtime::{Part, Role, StreamPart};

use super::observed::{Observed, Violation};
use super::reference::canonical;
use crate::hooks::HookSpec;
use crate::scenario::{OracleId, Scenario};
use crate::world::{Answer, ModelCallRecord, ScriptName};

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let guarded = o
        .scenario
        .hooks
        .iter()
        .any(|h| matches!(h.library(), Some(HookSpec::StreamGuard(_))));
    if guarded {
        return Vec::new();
    }
    let mut per_step: BTreeMap<(&str, u32), Vec<&ModelCallRecord>> = BTreeMap::new();
    for c in o.calls.iter() {
        let key = (c.request.run_id.as_str(), c.request.step);
        per_step.entry(key).or_default().push(c);
    }
    let mut out = Vec::new();
    for ((run, step), calls) in per_step {
        let [call] = calls[..] else { continue };
        let Some(segments) = provider_text(o.scenario, call) else {
            continue;
        };
        let Some(stored) = stored_text(o, run, step) else {
            continue;
        };
        let expected: Option<String> = segments.iter().map(|t| canonical(o.scenario, t)).collect();
        let Some(expected) = expected else { continue };
        if stored != expected {
            out.push(Violation::new(
                OracleId::S1,
                Some(run),
                format!(
                    "step {step} stored {stored:?}, but its provider streamed {:?}, which the canonical stages make {expected:?}",
                    segments.concat()
                ),
            ));
        }
    }
    out
}

/// The text the call's answer streamed, in runs between its other parts;
/// `None` when it is not known or did not stream to its end.
fn provider_text(s: &Scenario, c: &ModelCallRecord) -> Option<Vec<String>> {
    let Answer::Turn(n) = c.answer else {
        return None;
    };
    if let Some(rec) = &c.recording {
        let decoded = pai_providers::decode(rec.format.decoder(), &rec.body).ok()?;
        let mut runs = vec![String::new()];
        for part in &decoded.parts {
            match part {
                StreamPart::TextDelta(d) => runs.last_mut()?.push_str(d),
                StreamPart::Error(_) => return None,
                _ => runs.push(String::new()),
            }
        }
        return Some(runs);
    }
    let script = match &c.script {
        ScriptName::Default => &s.model,
        ScriptName::Model(name) => s.models.get(name)?,
    };
    let turn = script.turns.get(n.checked_sub(1)?)?;
    if turn.error.is_some() || turn.stream_error.is_some() {
        return None;
    }
    Some(vec![turn.text.concat()])
}

/// The text of the assistant message run `run` committed for `step`, if
/// it committed one.
fn stored_text(o: &Observed<'_>, run: &str, step: u32) -> Option<String> {
    let messages = o.threads.iter().flat_map(|t| &t.messages);
    let m = messages.into_iter().find(|m| {
        m.role == Role::Assistant
            && m.pai.producer == Producer::Model
            && m.pai.step == Some(step)
            && m.pai.run_id.as_ref().is_some_and(|r| r.as_str() == run)
    })?;
    let text = m.parts.iter().filter_map(|p| match p {
        Part::Text { text } => Some(text.as_str()),
        _ => None,
    });
    Some(text.collect())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use pai_runtime::ModelRequest;
    use pai_runtime::model::Route;

    use super::provider_text;
    use crate::scenario::Scenario;
    use crate::world::{Answer, Calls, ScriptName};

    fn scenario(model: &str) -> Scenario {
        let text =
            format!("name = \"x\"\nrules = [\"S1\"]\n\n[[timeline]]\nsend = \"hi\"\n\n{model}");
        Scenario::parse(&Path::new(env!("CARGO_MANIFEST_DIR")).join("x.toml"), &text).unwrap()
    }

    /// What S1 takes the provider to have streamed for turn `n`.
    fn streamed(s: &Scenario, n: usize) -> Option<Vec<String>> {
        let recording = s.replays.get(&None).map(|r| r.recordings[n - 1].clone());
        let request = ModelRequest::new(Route::new("m"), "", Vec::new(), Vec::new());
        let mut calls = Calls::default();
        calls.push(
            (0, &request),
            ScriptName::Default,
            Answer::Turn(n),
            recording,
        );
        provider_text(s, &calls[0])
    }

    #[test]
    fn a_turn_that_did_not_stream_to_its_end_is_not_judged() {
        let s = scenario(
            "[[model.turns]]\ntext = [\"a\", \"b\"]\n\n[[model.turns]]\ntext = [\"c\"]\nstream_error = \"reset\"\n\n[[model.turns]]\nerror = \"overloaded\"",
        );
        assert_eq!(streamed(&s, 1), Some(vec!["ab".to_string()]));
        assert_eq!(streamed(&s, 2), None);
        assert_eq!(streamed(&s, 3), None);
    }

    #[test]
    fn a_recording_is_judged_by_its_text_runs_unless_it_holds_an_error() {
        let s = scenario(
            "[model]\nreplay = [\"pai-providers:openai-chat/text-multibyte.sse\", \"pai-providers:openai-chat/midstream-error.sse\"]\nformat = \"openai-chat\"",
        );
        let text = streamed(&s, 1).expect("a whole stream");
        assert!(text.concat().chars().count() > 3, "{text:?}");
        assert_eq!(streamed(&s, 2), None);
    }
}
