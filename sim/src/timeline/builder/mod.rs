//! One run's lane, built as its story arrives: events open and close spans
//! (episodes, steps, attempts, tools) and leave marks.
//!
//! Among workers an episode belongs to the worker that acquired its lease,
//! and it can end without a release: the holder hears its lease is lost,
//! another worker takes the run over, or the holder crashes mid-work (its
//! open step, attempt and tools end there; the lease itself lasts until the
//! takeover). What was cut off is drawn as such: a started call with no
//! result from its worker, a result its worker never committed; the call's
//! committed result, from whichever worker, is its own span or mark.

use std::collections::BTreeMap;

use pai_runtime::store::FencingToken;
use pai_runtime::{
    Event,
    event::{EventKind, Transition},
    hook::ToolCallDecision,
    message::{ResultSource, ToolStatus},
};

use super::axis::Pos;
use super::model::{Holder, Item, Kind, RunLane};
use super::rows::rows;
use super::stream::{fault_effect, fault_label};
use crate::scenario::FaultAction;
use crate::steps::step_of;
use crate::transcript::{describe, transition};

/// The worker every run runs on while there is one process.
const LOCAL: &str = "local";

/// A span that has begun and not yet ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Key {
    Episode,
    Step,
    Attempt,
    Tool(String),
}

/// One run's items as its story arrives.
#[derive(Debug, Default)]
pub(super) struct Builder {
    /// Several workers drive runs (events name their worker).
    workers: bool,
    items: Vec<Item>,
    open: Vec<(Key, usize)>,
    step: Option<u32>,
    last: Pos,
    ending: Option<String>,
    /// The worker of the event being read (among workers).
    now: Option<String>,
    /// The worker that acquired the run's lease last.
    holder: Option<String>,
    holders: Vec<Holder>,
    /// Tool results of this episode not yet committed: call id and item.
    uncommitted: Vec<(String, usize)>,
    /// Calls cut off in an earlier episode: their items, by call id.
    cut_calls: BTreeMap<String, Vec<usize>>,
}

impl Builder {
    pub(super) fn new(workers: bool) -> Builder {
        Builder {
            workers,
            ..Builder::default()
        }
    }

    pub(super) fn feed(&mut self, pos: Pos, e: &Event) {
        let kind = &e.kind;
        self.last = pos;
        self.now = if self.workers { e.worker.clone() } else { None };
        let detail = describe(kind);
        if let Some(step) = step_of(kind)
            && self.step != Some(step)
        {
            self.close(&Key::Step, pos, "ok", "");
            self.step = Some(step);
            self.begin(Key::Step, Kind::Step, pos, format!("step {step}"), &detail);
        }
        match kind {
            EventKind::LeaseAcquired { episode, token, .. } => {
                self.acquire(pos, *episode, *token, &detail)
            }
            EventKind::LeaseReleased { .. } => {
                self.extend(&Key::Episode, &detail);
                self.close(&Key::Episode, pos, "ok", "");
                self.uncommitted.clear();
            }
            EventKind::LeaseLost { .. } | EventKind::TakenOver { .. } => {
                self.lease_gone(pos, kind, detail)
            }
            EventKind::Waiting { .. } => {
                // The episode ends and releases its lease; the run waits (T7).
                self.close(&Key::Step, pos, "ok", "");
                self.step = None;
                self.extend(&Key::Episode, &detail);
                self.close(&Key::Episode, pos, "ok", " · waits");
                self.uncommitted.clear();
                self.mark(Kind::Phase, "ok", pos, "wait".into(), detail);
            }
            EventKind::Answered { .. } => {
                self.mark(Kind::Phase, "ok", pos, "answer".into(), detail)
            }
            EventKind::ModelCall { .. }
            | EventKind::AttemptFailed { .. }
            | EventKind::Stream { .. } => self.attempt(pos, kind, &detail),
            EventKind::ToolStart { .. } | EventKind::ToolEnd { .. } => {
                self.tool(pos, kind, &detail)
            }
            EventKind::CommitStep { version, .. } | EventKind::Respond { version, .. } => {
                self.mark(Kind::Commit, "ok", pos, format!("v{version}"), detail)
            }
            EventKind::CommitToolResults { version, .. } => {
                self.committed(*version);
                self.mark(Kind::Commit, "ok", pos, format!("v{version}"), detail)
            }
            EventKind::Failed { .. } | EventKind::Cancelled { .. } | EventKind::Ended { .. } => {
                self.end(pos, kind, detail)
            }
            EventKind::AfterStep { transition: t, .. } => self.after_step(pos, t, detail),
            EventKind::Hook(n) => self.mark(Kind::Hook, "ok", pos, format!("· {}", n.hook), detail),
            _ => self.phase(pos, kind, detail),
        }
    }

    /// A new episode under the event's worker (`local` with one process).
    fn acquire(&mut self, pos: Pos, episode: u32, token: FencingToken, detail: &str) {
        if self.is_open(&Key::Episode) {
            self.cut_work(pos, "a new episode began before this one ended");
            self.close(&Key::Episode, pos, "lost", " ✗ no end seen");
        }
        let worker = self.now.clone().unwrap_or_else(|| LOCAL.to_string());
        match self.holders.last_mut() {
            Some(h) if h.worker == worker => h.episodes.push(episode),
            _ => self.holders.push(Holder {
                worker: worker.clone(),
                episodes: vec![episode],
            }),
        }
        let label = match self.workers {
            true => format!("episode {episode} · token {token} · {worker}"),
            false => format!("episode {episode} · token {token}"),
        };
        self.holder = Some(worker);
        self.begin(Key::Episode, Kind::Episode, pos, label, detail);
        if let Some(&(_, i)) = self.open.last() {
            self.items[i].data.push(("episode", episode.to_string()));
        }
    }

    /// The holder heard its lease is lost, or another worker took the run
    /// over: the episode (if still open) ends there, lost.
    fn lease_gone(&mut self, pos: Pos, kind: &EventKind, detail: String) {
        let status = match kind {
            EventKind::LeaseLost { .. } => "lost",
            _ => "ok",
        };
        self.mark(Kind::Phase, status, pos, kind.name().to_string(), detail);
        if !self.is_open(&Key::Episode) {
            return;
        }
        let holder = self.holder.clone().unwrap_or_else(|| LOCAL.to_string());
        let (short, why) = match kind {
            EventKind::TakenOver {
                from,
                stale_token,
                expired_at,
                ..
            } => {
                let by = self.now.as_deref().unwrap_or(LOCAL);
                let from = from.as_deref().unwrap_or(&holder);
                (
                    format!("taken over by {by}"),
                    format!(
                        "{by} took the run over: the lease of {from} (token {stale_token}) \
                         expired at {expired_at} ms"
                    ),
                )
            }
            EventKind::LeaseLost { reason, .. } => (
                "lease lost".to_string(),
                format!("{holder} lost the lease: {reason}"),
            ),
            _ => ("lost".to_string(), kind.name().to_string()),
        };
        self.cut_work(pos, &why);
        self.extend(&Key::Episode, &why);
        self.close(&Key::Episode, pos, "lost", &format!(" ✗ {short}"));
    }

    /// A fault the simulator carried out: marked on the lane while it hits
    /// the run's holder; a crash also ends the holder's work in progress.
    pub(super) fn fault(&mut self, pos: Pos, action: FaultAction, worker: &str) {
        if !self.workers || self.holder.as_deref() != Some(worker) || !self.is_open(&Key::Episode) {
            return;
        }
        let label = format!("{} {worker}", fault_label(action, pos.at));
        let detail = format!("fault: {label} ({})", fault_effect(action));
        self.extend(&Key::Episode, &detail);
        let mut item = Item::new(Kind::Fault, "fault", (pos, None), label, detail);
        item.worker = Some(worker.to_string());
        self.items.push(item);
        if action == FaultAction::Crash {
            let why = format!("{worker} crashed at_ms={}", pos.at);
            self.cut_work(pos, &why);
        }
    }

    /// Ends the holder's work in progress, leaving the episode: open spans
    /// are cut off, results not yet committed stay uncommitted.
    fn cut_work(&mut self, pos: Pos, why: &str) {
        let holder = self.holder.clone().unwrap_or_else(|| LOCAL.to_string());
        let open: Vec<(Key, usize)> = self
            .open
            .iter()
            .filter(|(k, _)| *k != Key::Episode)
            .cloned()
            .collect();
        self.open.retain(|(k, _)| *k == Key::Episode);
        for (key, i) in open.into_iter().rev() {
            let item = &mut self.items[i];
            item.status = "cut";
            item.end = Some(pos);
            item.detail.push_str(&format!("\ncut off: {why}"));
            match key {
                Key::Tool(call) => {
                    item.label.push_str(&format!(" ✗ no result from {holder}"));
                    self.cut_calls.entry(call).or_default().push(i);
                }
                _ => item.label.push_str(" ✗ cut off"),
            }
        }
        for (call, i) in std::mem::take(&mut self.uncommitted) {
            let item = &mut self.items[i];
            item.status = "uncommitted";
            item.label.push_str(" · never committed");
            item.detail.push_str(&format!("\nnever committed: {why}"));
            self.cut_calls.entry(call).or_default().push(i);
        }
        self.step = None;
    }

    /// This episode's tool results are committed; a call cut off before
    /// learns who committed its result.
    fn committed(&mut self, version: u64) {
        let by = self.now.clone().unwrap_or_else(|| LOCAL.to_string());
        for (call, i) in std::mem::take(&mut self.uncommitted) {
            self.items[i]
                .detail
                .push_str(&format!("\nresult committed in v{version}"));
            for j in self.cut_calls.remove(&call).unwrap_or_default() {
                let line = format!("\nthe call's result was committed by {by} in v{version}");
                self.items[j].detail.push_str(&line);
            }
        }
    }

    /// A phase mark; a rejected tool call also leaves a mark on the tool row.
    fn phase(&mut self, pos: Pos, kind: &EventKind, detail: String) {
        if let EventKind::BeforeToolCall {
            tool,
            decision: ToolCallDecision::Reject { .. },
            ..
        } = kind
        {
            let label = format!("{tool} rejected");
            self.mark(Kind::Tool, "rejected", pos, label, detail.clone());
        }
        self.mark(Kind::Phase, "ok", pos, kind.name().to_string(), detail);
    }

    fn attempt(&mut self, pos: Pos, kind: &EventKind, detail: &str) {
        match kind {
            EventKind::ModelCall { attempt, route, .. } => {
                let label = format!("attempt {attempt} · {}", route.model);
                self.begin(Key::Attempt, Kind::Attempt, pos, label, detail);
            }
            EventKind::AttemptFailed { error, .. } => {
                self.extend(&Key::Attempt, detail);
                self.close(&Key::Attempt, pos, "failed", &format!(" ✗ {error}"));
            }
            EventKind::Stream {
                finish,
                error,
                aborted,
                ..
            } => {
                let (status, how) = match (error, aborted, finish) {
                    (Some(e), _, _) => ("failed", format!(" ✗ {e}")),
                    (None, Some(a), _) => ("aborted", format!(" → aborted ({a})")),
                    (None, None, Some(f)) => ("ok", format!(" → {}", f.as_str())),
                    (None, None, None) => ("ok", " → stream".to_string()),
                };
                self.extend(&Key::Attempt, detail);
                self.close(&Key::Attempt, pos, status, &how);
            }
            _ => {}
        }
    }

    /// A tool's span from its start to its end by the same worker; an end
    /// with no start of that worker (a result committed for a call another
    /// worker started) is a mark.
    fn tool(&mut self, pos: Pos, kind: &EventKind, detail: &str) {
        match kind {
            EventKind::ToolStart { call_id, tool, .. } => {
                let key = Key::Tool(call_id.to_string());
                self.begin(key, Kind::Tool, pos, tool.clone(), detail);
            }
            EventKind::ToolEnd { result, .. } => {
                let key = Key::Tool(result.call_id.to_string());
                let status = match result.status {
                    ToolStatus::Output => "output",
                    ToolStatus::Error => "error",
                };
                let how = match result.source {
                    ResultSource::Tool => format!(" → {status}"),
                    source => format!(" → {status} ({})", source.as_str()),
                };
                self.extend(&key, detail);
                let i = match self.close(&key, pos, status, &how) {
                    Some(i) => i,
                    None => {
                        let label = format!("{}{how}", result.tool);
                        self.mark(Kind::Tool, status, pos, label, detail.to_string());
                        self.items.len() - 1
                    }
                };
                self.uncommitted.push((result.call_id.to_string(), i));
            }
            _ => {}
        }
    }

    fn after_step(&mut self, pos: Pos, t: &Transition, detail: String) {
        self.mark(
            Kind::Phase,
            "ok",
            pos,
            "after_step".to_string(),
            detail.clone(),
        );
        let status = match t {
            Transition::Aborted { .. } | Transition::Refused { .. } => "aborted",
            _ => "ok",
        };
        self.extend(&Key::Step, &detail);
        self.close(&Key::Step, pos, status, &format!(" → {}", transition(t)));
        self.step = None;
    }

    /// A failure or cancellation cuts what is open inside the episode; the
    /// end closes everything.
    fn end(&mut self, pos: Pos, kind: &EventKind, detail: String) {
        let (status, label) = match kind {
            EventKind::Failed { phase, .. } => ("failed", format!("failed in {phase}")),
            EventKind::Cancelled { phase } => ("cancelled", format!("cancelled in {phase}")),
            EventKind::Ended {
                outcome, reason, ..
            } => {
                let r = reason
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default();
                self.ending = Some(detail.clone());
                (outcome.as_str(), format!("end: {}{r}", outcome.as_str()))
            }
            _ => ("ok", kind.name().to_string()),
        };
        let keep_episode = !matches!(kind, EventKind::Ended { .. });
        self.cut(pos, status, keep_episode);
        self.step = None;
        self.mark(Kind::End, status, pos, label, detail);
    }

    /// Closes every open span (but the episode, if `keep_episode`).
    fn cut(&mut self, pos: Pos, status: &'static str, keep_episode: bool) {
        for j in (0..self.open.len()).rev() {
            if !(keep_episode && self.open[j].0 == Key::Episode) {
                self.close_at(j, pos, status, &format!(" ({status})"));
            }
        }
    }

    fn is_open(&self, key: &Key) -> bool {
        self.open.iter().any(|(k, _)| k == key)
    }

    fn begin(&mut self, key: Key, kind: Kind, pos: Pos, label: String, detail: &str) {
        self.open.push((key, self.items.len()));
        let mut item = Item::new(kind, "open", (pos, Some(pos)), label, detail.to_string());
        item.worker = self.now.clone();
        self.items.push(item);
    }

    /// The newest open span under `key` (a tool's only if the event's
    /// worker began it): its place in `open`.
    fn find(&self, key: &Key) -> Option<usize> {
        self.open.iter().rposition(|(k, i)| {
            k == key && (!matches!(k, Key::Tool(_)) || self.items[*i].worker == self.now)
        })
    }

    /// Adds a line to an open span's story.
    fn extend(&mut self, key: &Key, detail: &str) {
        if let Some(j) = self.find(key) {
            let item = &mut self.items[self.open[j].1];
            item.detail.push('\n');
            item.detail.push_str(detail);
        }
    }

    /// Ends the newest open span under `key`; its item, or `None` if none
    /// is open.
    fn close(&mut self, key: &Key, pos: Pos, status: &'static str, suffix: &str) -> Option<usize> {
        let j = self.find(key)?;
        Some(self.close_at(j, pos, status, suffix))
    }

    fn close_at(&mut self, j: usize, pos: Pos, status: &'static str, suffix: &str) -> usize {
        let (_, i) = self.open.remove(j);
        let item = &mut self.items[i];
        item.status = status;
        item.end = Some(pos);
        item.label.push_str(suffix);
        i
    }

    fn mark(&mut self, kind: Kind, status: &'static str, pos: Pos, label: String, detail: String) {
        let mut item = Item::new(kind, status, (pos, None), label, detail);
        item.worker = self.now.clone();
        self.items.push(item);
    }

    /// The lane: spans still open reach the last event and say so.
    pub(super) fn finish(mut self, run: String) -> RunLane {
        let last = self.last;
        for (_, i) in std::mem::take(&mut self.open) {
            let item = &mut self.items[i];
            item.end = Some(last);
            item.label.push_str(" (still open)");
        }
        let holders = match (self.workers, self.holders.is_empty()) {
            (false, true) => vec![Holder {
                worker: LOCAL.to_string(),
                episodes: Vec::new(),
            }],
            _ => self.holders,
        };
        RunLane {
            run,
            holders,
            ending: self.ending.unwrap_or_else(|| "no end event".to_string()),
            rows: rows(self.items, self.workers),
        }
    }
}

#[cfg(test)]
mod tests;
