//! What a Responses stream says twice (SPEC S6): each message item whole
//! at its `response.output_item.done`, and the whole output at
//! `response.completed`, beside the deltas that streamed it. What the
//! deltas assembled is kept per output item and compared; a difference is
//! a decode problem, written in the report's notes (the parts keep what
//! streamed: it may already have reached a watcher).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::calls::PendingCall;
use crate::error::DecodeError;
use crate::event::{Raw, opt};
use crate::report::StreamReport;

/// A message item as its deltas assembled it.
#[derive(Debug, Default)]
struct Streamed {
    text: String,
    refusal: String,
    /// Whether any delta came for it.
    deltas: bool,
}

/// A message item as the stream gives it whole.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Whole {
    pub(super) text: String,
    pub(super) refusal: String,
}

/// What streamed, by output index.
#[derive(Debug, Default)]
pub(super) struct Said {
    messages: BTreeMap<u64, Streamed>,
    /// Each call emitted: its id, name and arguments.
    calls: BTreeMap<u64, (String, String, String)>,
    /// The message item opened last (a delta without an index is its).
    last: u64,
}

/// A message item's content, whole: its `output_text` parts' texts and
/// its `refusal` parts' words, each joined in order.
pub(super) fn message(raw: &Raw<'_>, item: &Value) -> Result<Whole, DecodeError> {
    let mut whole = Whole::default();
    let Some(content) = opt(item, "content") else {
        return Ok(whole);
    };
    let parts = content
        .as_array()
        .ok_or_else(|| raw.malformed("a message item's `content` is not a list"))?;
    for part in parts {
        match opt(part, "type").and_then(Value::as_str) {
            Some("output_text") => whole.text.push_str(raw.str(part, "text")?),
            Some("refusal") => whole.refusal.push_str(raw.str(part, "refusal")?),
            _ => {}
        }
    }
    Ok(whole)
}

impl Said {
    fn at(&mut self, index: Option<&Value>) -> &mut Streamed {
        let index = index.and_then(Value::as_u64).unwrap_or(self.last);
        self.messages.entry(index).or_default()
    }

    pub(super) fn message(&mut self, index: u64) {
        self.last = index;
        self.messages.entry(index).or_default();
    }

    pub(super) fn text(&mut self, index: Option<&Value>, delta: &str) {
        let streamed = self.at(index);
        streamed.text.push_str(delta);
        streamed.deltas = true;
    }

    pub(super) fn refusal(&mut self, index: Option<&Value>, delta: &str) {
        let streamed = self.at(index);
        streamed.refusal.push_str(delta);
        streamed.deltas = true;
    }

    pub(super) fn call(&mut self, index: u64, call: &PendingCall) {
        let whole = (call.id.clone(), call.tool.clone(), call.arguments.clone());
        self.calls.insert(index, whole);
    }

    /// The text of a message item that no delta streamed, taken as
    /// streamed now; `None` when deltas came (or there is no text).
    pub(super) fn unstreamed(&mut self, index: u64, whole: &Whole) -> Option<String> {
        let streamed = self.messages.entry(index).or_default();
        if streamed.deltas || whole.text.is_empty() {
            return None;
        }
        streamed.text.clone_from(&whole.text);
        streamed.refusal.clone_from(&whole.refusal);
        streamed.deltas = true;
        Some(whole.text.clone())
    }

    /// A message item's `output_item.done` against its deltas.
    pub(super) fn compare_message(
        &self,
        raw: &Raw<'_>,
        index: u64,
        whole: &Whole,
        report: &mut StreamReport,
    ) {
        let streamed = self.messages.get(&index);
        let (text, refusal) = streamed.map_or(("", ""), |s| (&*s.text, &*s.refusal));
        if text != whole.text {
            report.note(format!(
                "event {}: output item {index} streamed text {} but its done event says {}",
                raw.index,
                short(text),
                short(&whole.text)
            ));
        }
        if refusal != whole.refusal && !refusal.is_empty() {
            report.note(format!(
                "event {}: output item {index} streamed the refusal {} but its done event says {}",
                raw.index,
                short(refusal),
                short(&whole.refusal)
            ));
        }
    }

    /// `response.completed`'s whole output against what streamed: each
    /// message's text and each call's id, name and arguments (as JSON).
    pub(super) fn compare_output(
        &self,
        raw: &Raw<'_>,
        output: &Value,
        report: &mut StreamReport,
    ) -> Result<(), DecodeError> {
        let items = output
            .as_array()
            .ok_or_else(|| raw.malformed("`response.output` is not a list"))?;
        for (index, item) in items.iter().enumerate() {
            let index = index as u64;
            let note = match opt(item, "type").and_then(Value::as_str) {
                Some("message") => self.differs_message(index, &message(raw, item)?),
                Some("function_call") => self.differs_call(index, item),
                _ => None,
            };
            if let Some(note) = note {
                report.note(format!(
                    "event {}: response.output[{index}] {note}",
                    raw.index
                ));
            }
        }
        Ok(())
    }

    fn differs_message(&self, index: u64, whole: &Whole) -> Option<String> {
        let Some(streamed) = self.messages.get(&index) else {
            return Some(format!(
                "is a message {} that never streamed",
                short(&whole.text)
            ));
        };
        (streamed.text != whole.text).then(|| {
            format!(
                "says text {} but the stream gave {}",
                short(&whole.text),
                short(&streamed.text)
            )
        })
    }

    fn differs_call(&self, index: u64, item: &Value) -> Option<String> {
        let field = |key: &str| opt(item, key).and_then(Value::as_str).unwrap_or("");
        let (id, name, arguments) = (field("call_id"), field("name"), field("arguments"));
        let Some((s_id, s_name, s_arguments)) = self.calls.get(&index) else {
            return Some(format!("is a call {id} ({name}) that never streamed"));
        };
        let json = |s: &str| match s.trim() {
            "" => Some(Value::Object(Default::default())),
            s => serde_json::from_str::<Value>(s).ok(),
        };
        let same = id == s_id && name == s_name && json(arguments) == json(s_arguments);
        (!same).then(|| {
            format!("says call {id} ({name}) {arguments} but the stream gave {s_id} ({s_name}) {s_arguments}")
        })
    }
}

/// A text as a note quotes it: at most 60 characters.
fn short(text: &str) -> String {
    match text.char_indices().nth(60) {
        Some((cut, _)) => format!("{:?}…", &text[..cut]),
        None => format!("{text:?}"),
    }
}
