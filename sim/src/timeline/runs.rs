//! Run lanes from the event log: a pure function of the events (and the
//! stored threads, for run records that left no event).

use std::collections::BTreeMap;

use pai_runtime::{
    Event, EventKind, ResultSource, StoredThread, ToolCallDecision, ToolStatus, Transition,
};

use super::axis::{Pos, Ranker};
use super::detail::{describe, transition};
use super::model::{Item, Kind, Row, RunLane, ThreadLanes, thread_summary};
use crate::steps::step_of;

/// The worker every run runs on while there is one process.
const WORKER: &str = "local";

/// One lane per run, grouped by thread, both in order of first appearance.
pub(super) fn collect(events: &[Event], threads: &[StoredThread]) -> Vec<ThreadLanes> {
    let mut order: Vec<(String, Vec<String>)> = Vec::new();
    let mut builders: BTreeMap<String, Builder> = BTreeMap::new();
    let mut ranker = Ranker::default();
    for e in events {
        let pos = ranker.next(e.at);
        place(&mut order, &e.thread_id, &e.run_id);
        builders
            .entry(e.run_id.clone())
            .or_default()
            .feed(pos, &e.kind);
    }
    for t in threads {
        for r in &t.runs {
            place(&mut order, &t.id, &r.id);
        }
    }
    order
        .into_iter()
        .map(|(thread, runs)| ThreadLanes {
            summary: threads
                .iter()
                .find(|t| t.id == thread)
                .map(thread_summary)
                .unwrap_or_default(),
            runs: runs
                .into_iter()
                .map(|run| {
                    let b = builders.remove(&run).unwrap_or_default();
                    b.finish(run)
                })
                .collect(),
            thread,
        })
        .collect()
}

/// Notes a run under its thread, once.
fn place(order: &mut Vec<(String, Vec<String>)>, thread: &str, run: &str) {
    let i = match order.iter().position(|(t, _)| t == thread) {
        Some(i) => i,
        None => {
            order.push((thread.to_string(), Vec::new()));
            order.len() - 1
        }
    };
    let runs = &mut order[i].1;
    if !runs.iter().any(|r| r == run) {
        runs.push(run.to_string());
    }
}

/// A span that has begun and not yet ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Key {
    Episode,
    Step,
    Attempt,
    Tool(String),
}

/// One run's items as its events arrive.
#[derive(Debug, Default)]
struct Builder {
    items: Vec<Item>,
    open: Vec<(Key, usize)>,
    step: Option<u32>,
    last: Pos,
    ending: Option<String>,
}

impl Builder {
    fn feed(&mut self, pos: Pos, kind: &EventKind) {
        self.last = pos;
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
                let label = format!("episode {episode} · token {token}");
                self.begin(Key::Episode, Kind::Episode, pos, label, &detail);
            }
            EventKind::LeaseReleased { .. } => {
                self.extend(&Key::Episode, &detail);
                self.close(&Key::Episode, pos, "ok", "");
            }
            EventKind::Waiting { .. } => {
                // The episode ends and releases its lease; the run waits (T7).
                self.close(&Key::Step, pos, "ok", "");
                self.step = None;
                self.extend(&Key::Episode, &detail);
                self.close(&Key::Episode, pos, "ok", " · waits");
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
            EventKind::CommitStep { version, .. }
            | EventKind::CommitToolResults { version, .. }
            | EventKind::Respond { version, .. } => {
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

    fn tool(&mut self, pos: Pos, kind: &EventKind, detail: &str) {
        match kind {
            EventKind::ToolStart { call_id, tool, .. } => {
                let key = Key::Tool(call_id.clone());
                self.begin(key, Kind::Tool, pos, tool.clone(), detail);
            }
            EventKind::ToolEnd { result, .. } => {
                let key = Key::Tool(result.call_id.clone());
                let status = match result.status {
                    ToolStatus::Output => "output",
                    ToolStatus::Error => "error",
                };
                let how = match result.source {
                    ResultSource::Tool => format!(" → {status}"),
                    source => format!(" → {status} ({})", source.as_str()),
                };
                self.extend(&key, detail);
                if !self.close(&key, pos, status, &how) {
                    let label = format!("{}{how}", result.tool);
                    self.mark(Kind::Tool, status, pos, label, detail.to_string());
                }
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
            Transition::Aborted { .. } => "aborted",
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
        let keys: Vec<Key> = self
            .open
            .iter()
            .map(|(k, _)| k.clone())
            .filter(|k| !(keep_episode && *k == Key::Episode))
            .collect();
        for k in keys.iter().rev() {
            self.close(k, pos, status, &format!(" ({status})"));
        }
    }

    fn begin(&mut self, key: Key, kind: Kind, pos: Pos, label: String, detail: &str) {
        self.open.push((key, self.items.len()));
        self.items.push(Item {
            kind,
            status: "open",
            start: pos,
            end: Some(pos),
            label,
            detail: detail.to_string(),
        });
    }

    /// Adds a line to an open span's story.
    fn extend(&mut self, key: &Key, detail: &str) {
        if let Some(&(_, i)) = self.open.iter().rev().find(|(k, _)| k == key) {
            let item = &mut self.items[i];
            item.detail.push('\n');
            item.detail.push_str(detail);
        }
    }

    /// Ends the newest open span under `key`; false if none is open.
    fn close(&mut self, key: &Key, pos: Pos, status: &'static str, suffix: &str) -> bool {
        let Some(j) = self.open.iter().rposition(|(k, _)| k == key) else {
            return false;
        };
        let (_, i) = self.open.remove(j);
        let item = &mut self.items[i];
        item.status = status;
        item.end = Some(pos);
        item.label.push_str(suffix);
        true
    }

    fn mark(&mut self, kind: Kind, status: &'static str, pos: Pos, label: String, detail: String) {
        self.items.push(Item {
            kind,
            status,
            start: pos,
            end: None,
            label,
            detail,
        });
    }

    /// The lane: spans still open reach the last event and say so.
    fn finish(mut self, run: String) -> RunLane {
        let last = self.last;
        for (_, i) in std::mem::take(&mut self.open) {
            let item = &mut self.items[i];
            item.end = Some(last);
            item.label.push_str(" (still open)");
        }
        RunLane {
            run,
            worker: WORKER,
            ending: self.ending.unwrap_or_else(|| "no end event".to_string()),
            rows: rows(self.items),
        }
    }
}

/// A lane's rows, top to bottom; tools that overlap in time get rows of
/// their own.
fn rows(items: Vec<Item>) -> Vec<Row> {
    let mut rows = vec![
        row("episodes", "spans", &items, &[Kind::Episode]),
        row("steps", "spans", &items, &[Kind::Step]),
        row(
            "phases · hooks",
            "marks tall",
            &items,
            &[Kind::Phase, Kind::Hook],
        ),
        row("model attempts", "spans", &items, &[Kind::Attempt]),
    ];
    rows.extend(tool_rows(&items));
    rows.push(row("commits", "marks short", &items, &[Kind::Commit]));
    rows.push(row("end", "marks", &items, &[Kind::End]));
    rows
}

fn row(name: &str, class: &'static str, items: &[Item], kinds: &[Kind]) -> Row {
    Row {
        name: name.to_string(),
        class,
        items: items
            .iter()
            .filter(|i| kinds.contains(&i.kind))
            .cloned()
            .collect(),
    }
}

/// Tool spans packed greedily into as few rows as keep them apart.
fn tool_rows(items: &[Item]) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    for item in items.iter().filter(|i| i.kind == Kind::Tool) {
        let free = rows.iter().position(|r| {
            r.items
                .last()
                .is_none_or(|l| l.end.unwrap_or(l.start) < item.start)
        });
        let i = free.unwrap_or_else(|| {
            let name = match rows.len() {
                0 => "tools".to_string(),
                n => format!("tools {}", n + 1),
            };
            rows.push(row(&name, "spans", &[], &[]));
            rows.len() - 1
        });
        rows[i].items.push(item.clone());
    }
    if rows.is_empty() {
        rows.push(row("tools", "spans", &[], &[]));
    }
    rows
}
