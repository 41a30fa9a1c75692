//! Every model call of a run as the scripted (or registered) models
//! received it, with
//! the requests' messages kept once: a request that extends the one
//! recorded just before it (the same context plus the step's new
//! messages, or the next run's context on a long thread) stores only
//! what it adds. A long thread's calls then take memory linear in the
//! thread, not in the sum of every context sent (issue 27).

use std::fmt;
use std::ops::{Deref, Range};
use std::sync::Arc;

use pai_runtime::message::ModelMessage;
use pai_runtime::{Millis, ModelRequest};

use crate::scenario::Recording;

/// How a script answered one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// With its turn number `n` (from 1).
    Turn(usize),
    /// The model is down (`unavailable = true`).
    Unavailable,
    /// The script had no turn left.
    Exhausted,
    /// A model a harness registered (`use = "..."`) answered: its own code
    /// decides what it streams, so no oracle foresees it.
    Registered,
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Answer::Turn(n) => write!(f, "turn {n}"),
            Answer::Unavailable => f.write_str("unavailable"),
            Answer::Exhausted => f.write_str("exhausted"),
            Answer::Registered => f.write_str("registered"),
        }
    }
}

/// Which script answered a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptName {
    /// The default script (`[[model.turns]]`).
    Default,
    /// The script of this model name (`[models.<name>]`).
    Model(String),
}

impl ScriptName {
    /// The key of the script's model in the scenario's maps: `None` for
    /// the default `[model]`, its name for a `[models.NAME]`.
    pub fn key(&self) -> Option<String> {
        match self {
            ScriptName::Default => None,
            ScriptName::Model(name) => Some(name.clone()),
        }
    }
}

impl fmt::Display for ScriptName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScriptName::Default => f.write_str("default"),
            ScriptName::Model(name) => f.write_str(name),
        }
    }
}

/// One model call as a scripted model received it. Its request's
/// `messages` are kept in the [`Calls`] that holds it: read them with
/// [`Calls::messages`] (the request's own list is left empty).
#[derive(Debug, Clone)]
pub struct ModelCallRecord {
    pub at: Millis,
    pub request: ModelRequest,
    /// Which script answered.
    pub script: ScriptName,
    pub answer: Answer,
    /// The recording the turn replayed, if it was one.
    pub recording: Option<Arc<Recording>>,
    /// Where the request's messages are in the log's arena.
    messages: Range<usize>,
}

/// Every model call of a run, in order, across scripts.
#[derive(Debug, Clone, Default)]
pub struct Calls {
    records: Vec<ModelCallRecord>,
    /// Every request's messages, each run of shared ones stored once.
    arena: Vec<ModelMessage>,
}

impl Calls {
    /// Records a call: the request's messages extend the previous call's
    /// in place when they begin with all of them and nothing was stored
    /// after them; otherwise they are stored whole.
    pub(crate) fn push(
        &mut self,
        (at, request): (Millis, &ModelRequest),
        script: ScriptName,
        answer: Answer,
        recording: Option<Arc<Recording>>,
    ) {
        let sent = &request.messages;
        let extends = self.records.last().map(|p| p.messages.clone()).filter(|p| {
            p.end == self.arena.len()
                && sent.len() >= p.len()
                && sent[..p.len()] == self.arena[p.clone()]
        });
        let messages = match extends {
            Some(p) => {
                self.arena.extend_from_slice(&sent[p.len()..]);
                p.start..self.arena.len()
            }
            None => {
                let start = self.arena.len();
                self.arena.extend_from_slice(sent);
                start..self.arena.len()
            }
        };
        let mut request = request.clone();
        request.messages = Vec::new();
        self.records.push(ModelCallRecord {
            at,
            request,
            script,
            answer,
            recording,
            messages,
        });
    }

    /// The messages call `c` (one of these calls) was sent, in order.
    pub fn messages(&self, c: &ModelCallRecord) -> &[ModelMessage] {
        self.arena.get(c.messages.clone()).unwrap_or_default()
    }

    /// Edits what call `index` was sent (a planted fault): the edited
    /// list is stored anew, so no other call's messages change. `false`
    /// when there is no such call.
    pub fn edit_messages(&mut self, index: usize, f: impl FnOnce(&mut Vec<ModelMessage>)) -> bool {
        let Some(c) = self.records.get(index) else {
            return false;
        };
        let mut edited = self.arena[c.messages.clone()].to_vec();
        f(&mut edited);
        let start = self.arena.len();
        self.arena.extend(edited);
        self.records[index].messages = start..self.arena.len();
        true
    }
}

impl Deref for Calls {
    type Target = [ModelCallRecord];

    fn deref(&self) -> &[ModelCallRecord] {
        &self.records
    }
}

impl<'a> IntoIterator for &'a Calls {
    type Item = &'a ModelCallRecord;
    type IntoIter = std::slice::Iter<'a, ModelCallRecord>;

    fn into_iter(self) -> Self::IntoIter {
        self.records.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pai_runtime::model::Route;

    fn said(text: &str) -> ModelMessage {
        ModelMessage::user(text)
    }

    fn push(calls: &mut Calls, messages: &[&str]) {
        let sent: Vec<ModelMessage> = messages.iter().map(|m| said(m)).collect();
        let request = ModelRequest::new(Route::new("m"), "", sent, Vec::new());
        calls.push((0, &request), ScriptName::Default, Answer::Turn(1), None);
    }

    fn texts(calls: &Calls, i: usize) -> Vec<String> {
        let got = calls.messages(&calls[i]);
        got.iter()
            .flat_map(|m| &m.content)
            .filter_map(|c| match c {
                pai_runtime::message::ModelContent::Text { text } => Some(text.clone()),
                _ => None,
            })
            .collect()
    }

    /// A request that extends the previous one stores only what it adds;
    /// one that does not is stored whole; each reads back as it was sent.
    #[test]
    fn each_call_reads_back_what_it_was_sent() {
        let mut calls = Calls::default();
        push(&mut calls, &["a"]);
        push(&mut calls, &["a", "b", "c"]);
        assert_eq!(calls.arena.len(), 3, "the second call extends the first");
        push(&mut calls, &["x", "b"]);
        push(&mut calls, &["x"]);
        assert_eq!(calls.arena.len(), 6, "a different start is stored whole");
        assert_eq!(texts(&calls, 0), ["a"]);
        assert_eq!(texts(&calls, 1), ["a", "b", "c"]);
        assert_eq!(texts(&calls, 2), ["x", "b"]);
        assert_eq!(texts(&calls, 3), ["x"]);
        assert!(calls.edit_messages(1, |m| m.truncate(1)));
        assert_eq!(texts(&calls, 1), ["a"]);
        assert_eq!(texts(&calls, 0), ["a"]);
        assert!(!calls.edit_messages(9, |_| {}));
        assert!(calls.iter().all(|c| c.request.messages.is_empty()));
        let mut seen = 0;
        for c in &calls {
            assert!(!calls.messages(c).is_empty());
            seen += 1;
        }
        assert_eq!(seen, 4, "iterating the log visits every call");
    }
}
