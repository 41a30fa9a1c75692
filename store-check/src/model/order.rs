//! The order the model reads a thread in (SPEC M1), kept as the model's
//! own list of messages in the order they entered the context, and where
//! a regeneration cuts it (R1). Written from the SPEC, not from any
//! store's bookkeeping: a message a run or trusted code stores enters at
//! once; a steer when a step takes it; a queued run's trigger (and a
//! leftover steer given to the next run) when that run is first claimed,
//! together with the messages of runs cancelled while queued that were
//! admitted before it, in the order they were stored.

use std::collections::BTreeSet;

use pai_runtime::{Message, Part};

use super::thread::ThreadModel;

impl ThreadModel {
    /// Messages `ids` enter the context now, in this order.
    pub(crate) fn enter(&mut self, ids: impl IntoIterator<Item = String>) {
        self.context.extend(ids);
    }

    /// Message `id` enters no context until `run` is first claimed.
    pub(crate) fn hold_for(&mut self, id: &str, run: &str) {
        self.context.retain(|m| m != id);
        self.unentered.retain(|(m, _)| m != id);
        self.unentered.push((id.to_string(), run.to_string()));
    }

    /// `run` is claimed for the first time (K1): what waited for it enters,
    /// and so does what waited for a run admitted before it that will never
    /// be claimed (cancelled while queued), in the order they were stored.
    pub(crate) fn enter_claimed(&mut self, run: &str) {
        let rank = |r: &str| self.runs.iter().position(|x| x.id == r);
        let own = rank(run);
        let lets_in = |owner: &str| {
            owner == run || (self.run(owner).is_some_and(|o| o.ended()) && rank(owner) < own)
        };
        let entering: BTreeSet<&str> = self
            .unentered
            .iter()
            .filter(|(_, owner)| lets_in(owner))
            .map(|(m, _)| m.as_str())
            .collect();
        let ids: Vec<String> = self
            .messages
            .iter()
            .filter(|m| entering.contains(m.id.as_str()))
            .map(|m| m.id.to_string())
            .collect();
        self.unentered.retain(|(m, _)| !ids.contains(m));
        self.enter(ids);
    }

    /// SPEC R1: what a regeneration from `from` removes, in stored order:
    /// everything the model reads after `from` (M1), except a result of a
    /// call read at or before it; and what no context took yet, when it was
    /// stored after `from` (it would enter after `from` at the new run's
    /// claim).
    pub(crate) fn cut(&self, from: &str) -> Vec<String> {
        let Some(from_seq) = self.seq_of(from) else {
            return Vec::new();
        };
        let mut gone: BTreeSet<&str> = self
            .unentered
            .iter()
            .filter(|(m, _)| self.seq_of(m).is_some_and(|s| s > from_seq))
            .map(|(m, _)| m.as_str())
            .collect();
        let read: Vec<&Message> = self.context.iter().filter_map(|m| self.find(m)).collect();
        if let Some(at) = read.iter().position(|m| m.id == from) {
            let mut open: Vec<(&str, bool)> = Vec::new();
            for (k, m) in read.iter().enumerate() {
                let mut answers_kept = false;
                for p in &m.parts {
                    match p {
                        Part::ToolCall { call_id, .. } => open.push((call_id, k <= at)),
                        Part::ToolResult { call_id, .. } => {
                            if let Some(i) = open.iter().position(|(c, _)| *c == call_id.as_str()) {
                                answers_kept |= open.remove(i).1;
                            }
                        }
                        Part::Text { .. } => {}
                    }
                }
                if k > at && !answers_kept {
                    gone.insert(m.id.as_str());
                }
            }
        }
        self.messages
            .iter()
            .filter(|m| gone.contains(m.id.as_str()))
            .map(|m| m.id.to_string())
            .collect()
    }

    /// Removed messages leave every order.
    pub(crate) fn forget(&mut self, removed: &[String]) {
        self.messages
            .retain(|m| !removed.iter().any(|r| *r == m.id));
        self.context.retain(|m| !removed.contains(m));
        self.unentered.retain(|(m, _)| !removed.contains(m));
    }

    fn find(&self, id: &str) -> Option<&Message> {
        self.messages.iter().find(|m| m.id == id)
    }

    fn seq_of(&self, id: &str) -> Option<u64> {
        self.find(id).map(|m| m.seq)
    }

    /// The newest call `run` made that has no result yet.
    pub(crate) fn open_call(&self, run: &str) -> Option<(String, String)> {
        let mut open: Vec<(String, String)> = Vec::new();
        for m in &self.messages {
            for p in &m.parts {
                match p {
                    Part::ToolCall { call_id, tool, .. }
                        if m.pai.run_id.as_deref() == Some(run) =>
                    {
                        open.push((call_id.to_string(), tool.clone()))
                    }
                    Part::ToolResult { call_id, .. } => open.retain(|(c, _)| *c != **call_id),
                    _ => {}
                }
            }
        }
        open.pop()
    }
}
