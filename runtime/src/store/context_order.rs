//! The order in which runs read stored messages (SPEC M1, K1, L1): the
//! order in which each message entered the context, which is the order
//! it was stored in, except for user messages a run took later than they
//! were stored. A queued run's trigger is hidden from every context until
//! its run is claimed, then enters after every message committed before
//! the claim; a steer enters after the messages committed before the step
//! (or `prepare_run`) that takes it; the message of a run cancelled while
//! queued enters only when a run admitted after it is claimed, never the
//! context of a run admitted before it.

use std::collections::HashSet;

use super::ThreadRec;
use crate::id::MessageId;
use crate::message::Message;

impl ThreadRec {
    /// Whether `m` has not entered any context yet.
    pub(crate) fn is_hidden(&self, m: &Message) -> bool {
        !self.hidden.is_empty() && self.hidden.contains_key(m.id.as_str())
    }

    /// Whether `m` entered the context after a later message: the
    /// sequence number it entered after, and its place among the messages
    /// that entered after that one.
    fn moved(&self, m: &Message) -> Option<(u64, u64)> {
        match self.entered.is_empty() {
            true => None,
            false => self.entered.get(&m.seq).copied(),
        }
    }

    /// Whether `m` is in the context a step anchored at `anchor` reads, at
    /// its own place (neither hidden nor moved).
    pub(crate) fn in_place(&self, m: &Message) -> bool {
        !self.is_hidden(m) && self.moved(m).is_none()
    }

    /// The messages a run may see, in context order; with `anchor`, only
    /// those that had entered by the time the newest stored message was
    /// `anchor` (SPEC M1).
    pub(crate) fn visible_messages(&self, anchor: Option<u64>) -> Vec<&Message> {
        let bound = anchor.unwrap_or(u64::MAX);
        let mut out = Vec::with_capacity(self.messages.len());
        let mut moved: Vec<((u64, u64), u64, &Message)> = Vec::new();
        for m in self.messages.iter().take_while(|m| m.seq <= bound) {
            if self.is_hidden(m) {
                continue;
            }
            match self.moved(m) {
                Some(key) if key.0 <= bound => moved.push((key, m.seq, m)),
                Some(_) => {}
                None => out.push(m),
            }
        }
        if moved.is_empty() {
            return out;
        }
        moved.sort_unstable_by_key(|(key, seq, _)| (*key, *seq));
        let mut merged = Vec::with_capacity(out.len() + moved.len());
        let mut later = moved.into_iter().peekable();
        for m in out {
            while let Some((_, _, x)) = later.next_if(|(key, _, _)| key.0 < m.seq) {
                merged.push(x);
            }
            merged.push(m);
        }
        merged.extend(later.map(|(_, _, x)| x));
        merged
    }

    /// `run` is claimed (K1): its messages enter the context now, and so do
    /// those of runs cancelled while queued that were admitted before it.
    pub(in crate::store) fn enter_run(&mut self, run: &str) {
        if self.hidden.is_empty() {
            return;
        }
        let rank = |id: &str| self.runs.iter().position(|r| r.id == id);
        let Some(own) = rank(run) else { return };
        // Most hidden messages are triggers of runs still queued: one set
        // of them per claim keeps a claim linear in the queue, and only
        // the rare owner that left the queue is ranked.
        let queued: HashSet<&str> = self.queue.iter().map(String::as_str).collect();
        let entering: Vec<String> = self
            .hidden
            .iter()
            .filter(|(_, owner)| {
                owner.as_str() == run
                    || (!queued.contains(owner.as_str())
                        && self.current.as_deref() != Some(owner.as_str())
                        && rank(owner).is_some_and(|r| r < own))
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in &entering {
            self.hidden.remove(id.as_str());
        }
        self.enter_now(&entering);
    }

    /// Messages `ids` enter the context now, together, in the order they
    /// were stored: after every other message that has entered so far (a
    /// message still hidden, a later queued run's trigger, enters after
    /// them when its own run is claimed), moved ones included: each entry
    /// is marked later than every earlier one. One that is not already
    /// there moves (the history epoch changes, so cached contexts are read
    /// again).
    pub(in crate::store) fn enter_now(&mut self, ids: &[String]) {
        let entering = |m: &&Message| ids.iter().any(|id| *id == m.id);
        let seqs: Vec<u64> = self
            .messages
            .iter()
            .filter(entering)
            .map(|m| m.seq)
            .collect();
        // The last place in context order: the newest message at its own
        // place, or the place a moved one entered after, if later.
        let in_place = self
            .messages
            .iter()
            .rev()
            .find(|m| !entering(m) && self.in_place(m))
            .map_or(0, |m| m.seq);
        let moved = self
            .entered
            .iter()
            .filter(|(seq, _)| !seqs.contains(seq))
            .map(|(_, &(after, _))| after)
            .max()
            .unwrap_or(0);
        let after = in_place.max(moved);
        let mark = self
            .entered
            .values()
            .map(|&(_, m)| m + 1)
            .max()
            .unwrap_or(0);
        for seq in seqs {
            let before = self.entered.remove(&seq);
            // At `after` itself it still moves: messages that entered
            // after that place earlier come first.
            let behind_moved = seq == after && self.entered.values().any(|&(a, _)| a == seq);
            if seq < after || behind_moved {
                self.entered.insert(seq, (after, mark));
            }
            if before != self.entered.get(&seq).copied() {
                self.epoch += 1;
            }
        }
    }

    /// A regeneration removed these messages (R1): they are forgotten
    /// here too.
    pub(in crate::store) fn forget_removed(&mut self, removed: &[MessageId]) {
        if removed.is_empty() {
            return;
        }
        for id in removed {
            self.hidden.remove(id.as_str());
        }
        let kept: Vec<u64> = self.messages.iter().map(|m| m.seq).collect();
        self.entered
            .retain(|seq, _| kept.binary_search(seq).is_ok());
        // One that entered after a message now gone sits after the newest
        // one left before it, in the order they entered.
        for (after, _) in self.entered.values_mut() {
            if kept.binary_search(after).is_err() {
                let below = kept.partition_point(|s| *s < *after);
                *after = below.checked_sub(1).map_or(0, |k| kept[k]);
            }
        }
    }
}
