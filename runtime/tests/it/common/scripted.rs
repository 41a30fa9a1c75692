//! A scripted model: answers each call with the next of a list of turns
//! (text, tool calls, raw parts, an error), or with a turn computed from
//! the request; it keeps every request it was sent.

use std::sync::{Arc, Mutex};

use pai_runtime::{
    HookFuture, LanguageModel, ModelError, ModelRequest, Role, StreamPart,
    message::{ModelContent, ModelMessage},
    model::{BoxStream, FinishReason, ReadyStream},
};
use serde_json::Value;

/// One answer of a [`ScriptedModel`].
#[derive(Debug, Clone)]
pub enum Turn {
    /// These parts, as given.
    Parts(Vec<StreamPart>),
    /// The attempt fails before its stream exists.
    Error(ModelError),
}

impl Turn {
    /// A text answer that ends the step (`Stop`).
    pub fn text(text: impl Into<String>) -> Turn {
        Turn::Parts(vec![
            StreamPart::TextDelta(text.into().into()),
            StreamPart::Finish(FinishReason::Stop),
        ])
    }

    /// Tool calls `(id, tool, input)`, finished with `ToolCalls`.
    pub fn calls<'a>(calls: impl IntoIterator<Item = (&'a str, &'a str, Value)>) -> Turn {
        let mut parts: Vec<StreamPart> = calls
            .into_iter()
            .map(|(id, tool, input)| StreamPart::tool_call(id, tool, input))
            .collect();
        parts.push(StreamPart::Finish(FinishReason::ToolCalls));
        Turn::Parts(parts)
    }

    /// One tool call `(id, tool, input)`.
    pub fn call(id: &str, tool: &str, input: Value) -> Turn {
        Turn::calls([(id, tool, input)])
    }

    /// `self`'s parts with a text delta in front.
    pub fn after_text(self, text: impl Into<String>) -> Turn {
        match self {
            Turn::Parts(mut parts) => {
                parts.insert(0, StreamPart::TextDelta(text.into().into()));
                Turn::Parts(parts)
            }
            error => error,
        }
    }
}

type Answer = Box<dyn Fn(&ModelRequest, usize) -> Turn + Send + Sync>;

/// A model that answers from a script and records every request.
pub struct ScriptedModel {
    answer: Answer,
    seen: Mutex<Vec<ModelRequest>>,
}

impl ScriptedModel {
    /// Answers `turns` in order; once they ran out, the last one again.
    pub fn turns(turns: Vec<Turn>) -> Arc<ScriptedModel> {
        assert!(!turns.is_empty(), "a script needs a turn");
        ScriptedModel::by(move |_, n| turns[n.min(turns.len() - 1)].clone())
    }

    /// Answers `text` to every call.
    pub fn text(text: &str) -> Arc<ScriptedModel> {
        ScriptedModel::turns(vec![Turn::text(text)])
    }

    /// Answers with `f(request, calls before this one)`.
    pub fn by(
        f: impl Fn(&ModelRequest, usize) -> Turn + Send + Sync + 'static,
    ) -> Arc<ScriptedModel> {
        Arc::new(ScriptedModel {
            answer: Box::new(f),
            seen: Mutex::default(),
        })
    }

    /// Every request, in the order they came.
    pub fn seen(&self) -> Vec<ModelRequest> {
        self.seen.lock().unwrap().clone()
    }

    /// How many calls the model had.
    pub fn calls(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    /// The step-`step` request of `run`.
    pub fn request(&self, run: &str, step: u32) -> ModelRequest {
        let seen = self.seen.lock().unwrap();
        let found = seen.iter().find(|r| r.run_id == run && r.step == step);
        found.cloned().expect("no such request")
    }
}

impl LanguageModel for ScriptedModel {
    fn stream<'a>(&'a self, r: &'a ModelRequest) -> HookFuture<'a, Result<BoxStream, ModelError>> {
        let n = {
            let mut seen = self.seen.lock().unwrap();
            seen.push(r.clone());
            seen.len() - 1
        };
        HookFuture::ready(match (self.answer)(r, n) {
            Turn::Parts(parts) => Ok(Box::new(ReadyStream::new(parts)) as BoxStream),
            Turn::Error(e) => Err(e),
        })
    }
}

/// The texts of a model message.
pub fn texts(m: &ModelMessage) -> Vec<String> {
    m.content
        .iter()
        .filter_map(|c| match c {
            ModelContent::Text { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// The newest user text of a request.
pub fn last_user_text(r: &ModelRequest) -> String {
    r.messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| texts(m).join(""))
        .unwrap_or_default()
}
