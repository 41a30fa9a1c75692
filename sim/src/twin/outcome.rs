//! A run's committed outcome, as the twin compares it: per thread and
//! incarnation (a deleted one as it was when deleted), its metadata and
//! private metadata; per run, in the order the store admitted them, its
//! status, outcome, reason and steps, the user message it answered, and
//! its messages in storage order (the user messages it took among them)
//! with roles, producers, visibility, steps, parts, calls with their
//! inputs, results with their status, source and output; its run
//! metadata and the calls it waits on. Not versions, times, sequence
//! numbers, episodes or leases.
//!
//! The order of two runs' messages in the thread is left out: a send that
//! queues behind a run stores its message wherever that run has got to,
//! which is timing (the run it starts reads it in its own order, M1).
//!
//! Ids come from the seeded rng and differ between the two runs: each is
//! renamed by where it first appears, within its run (`R2/m3` is the
//! third message id the second run of the thread shows, `R2/c1` its first
//! call), so an extra message in one run does not rename another run's.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use pai_runtime::message::{Producer, ResultSource, ToolStatus};
use pai_runtime::store::{RunRecord, RunStatus, StoredThread};
use pai_runtime::{Message, Part, Role};
use serde_json::{Map, Value};

use super::mask::Mask;
use crate::format::{json, opt, quoted, role};
use crate::scenario::{Action, Scenario};

/// The committed outcome of one run of a scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub(crate) threads: Vec<ThreadOutcome>,
    /// What the comparison leaves out, and why.
    pub(crate) masked: Vec<String>,
    /// The timeline entries (by index) placed after a moment that never
    /// came in this run.
    pub(crate) missed: Vec<usize>,
}

/// One incarnation of a thread.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ThreadOutcome {
    /// `thread main, incarnation 1` (`, deleted`).
    pub(crate) name: String,
    /// How a run of the thread may end when the timeline's cancels and
    /// deletes reach it at another point (K6, H5): the reasons those give
    /// (none: the timeline neither cancels nor deletes on the thread).
    pub(crate) cancels: Vec<&'static str>,
    /// Client-readable metadata, as one line (empty when there is none).
    pub(crate) metadata: String,
    /// Private metadata, key by key.
    pub(crate) private: BTreeMap<String, String>,
    /// The runs, in admission order.
    pub(crate) runs: Vec<RunOutcome>,
    /// Messages of no run of the thread, in storage order.
    pub(crate) loose: Vec<MessageOutcome>,
}

/// One run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunOutcome {
    /// `R1`: its place in the thread.
    pub(crate) name: String,
    /// `completed outcome=completed reason=-`.
    pub(crate) end: String,
    pub(crate) steps: u32,
    pub(crate) cancelled: bool,
    /// Why it ended, if it says.
    pub(crate) reason: Option<String>,
    /// The user message it answered.
    pub(crate) trigger: String,
    pub(crate) messages: Vec<MessageOutcome>,
    pub(crate) metadata: String,
    pub(crate) waiting: Vec<String>,
}

/// One stored message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MessageOutcome {
    pub(crate) head: String,
    pub(crate) parts: Vec<PartOutcome>,
}

/// One part of a message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PartOutcome {
    pub(crate) line: String,
    /// A tool result: its call, and whether it says the run was cancelled
    /// (or completed) before the call finished.
    pub(crate) result: Option<(String, bool)>,
}

pub(crate) use super::mask::COMPACTION_KEY;

/// The reasons a cancel and a delete give a run (K6, H5), written again
/// here: an active run's, a queued run's, a deleted incarnation's.
const CANCELLED: &str = "cancelled by the client";
const CANCELLED_QUEUED: &str = "cancelled while queued";
const DELETED: &str = "deleted";

impl Outcome {
    /// The outcome of `threads` (the stored ones at the end) and `retired`
    /// (deleted incarnations as they were when deleted) of a run of `s`.
    pub(crate) fn of(s: &Scenario, threads: &[StoredThread], retired: &[StoredThread]) -> Outcome {
        let mask = Mask::of(s);
        let cancels = |thread: &str| {
            let on = |a: fn(&Action) -> bool| {
                s.timeline
                    .iter()
                    .any(|m| m.thread == thread && a(&m.action))
            };
            let mut reasons = Vec::new();
            if on(|a| matches!(a, Action::Cancel(_))) {
                reasons.extend([CANCELLED, CANCELLED_QUEUED]);
            }
            if on(|a| matches!(a, Action::DeleteThread)) {
                reasons.push(DELETED);
            }
            reasons
        };
        let mut all: Vec<(&StoredThread, bool)> = retired.iter().map(|t| (t, true)).collect();
        all.extend(threads.iter().map(|t| (t, false)));
        all.sort_by(|(a, _), (b, _)| (&a.id, a.incarnation).cmp(&(&b.id, b.incarnation)));
        Outcome {
            threads: all
                .iter()
                .map(|(t, gone)| {
                    let mut out = thread(t, *gone, &mask);
                    out.cancels = cancels(&t.id);
                    out
                })
                .collect(),
            masked: mask.why,
            missed: Vec::new(),
        }
    }

    /// Every line, in order: what a difference is shown in.
    pub(crate) fn lines(&self) -> Vec<String> {
        self.threads.iter().flat_map(ThreadOutcome::lines).collect()
    }
}

impl ThreadOutcome {
    pub(crate) fn lines(&self) -> Vec<String> {
        let mut out = vec![self.name.clone()];
        if !self.metadata.is_empty() {
            out.push(format!("  {}", self.metadata));
        }
        for (k, v) in &self.private {
            out.push(format!("  private {k} = {v}"));
        }
        for r in &self.runs {
            out.extend(r.lines());
        }
        if !self.loose.is_empty() {
            out.push("  messages of no run:".into());
            out.extend(self.loose.iter().flat_map(|m| m.lines("    ")));
        }
        out
    }
}

impl RunOutcome {
    /// Its head line: name, end and steps.
    pub(crate) fn head(&self) -> String {
        format!("  run {} {} steps={}", self.name, self.end, self.steps)
    }

    pub(crate) fn lines(&self) -> Vec<String> {
        let mut out = vec![self.head(), format!("    trigger {}", self.trigger)];
        out.extend(self.messages.iter().flat_map(|m| m.lines("    ")));
        if !self.metadata.is_empty() {
            out.push(format!("    {}", self.metadata));
        }
        out.extend(self.waiting.iter().map(|w| format!("    {w}")));
        out
    }
}

impl MessageOutcome {
    pub(crate) fn lines(&self, indent: &str) -> Vec<String> {
        let mut out = vec![format!("{indent}{}", self.head)];
        out.extend(self.parts.iter().map(|p| format!("{indent}  {}", p.line)));
        out
    }

    /// Whether every part is a result that says the run stopped first.
    pub(crate) fn only_cancelled(&self) -> bool {
        !self.parts.is_empty()
            && self
                .parts
                .iter()
                .all(|p| matches!(p.result, Some((_, true))))
    }
}

/// One incarnation's outcome.
fn thread(t: &StoredThread, gone: bool, mask: &Mask) -> ThreadOutcome {
    let mut names = Namer::default();
    for (k, r) in t.runs.iter().enumerate() {
        names.fix(&r.id, format!("R{}", k + 1));
    }
    let triggers: Vec<&str> = t.runs.iter().map(|r| r.trigger.as_str()).collect();
    let kept = |m: &&Message| !hidden_first_episode(m, mask);
    let runs = t
        .runs
        .iter()
        .enumerate()
        .map(|(k, r)| {
            let scope = format!("R{}", k + 1);
            let own = t.messages.iter().filter(kept).filter(|m| {
                m.pai.run_id.as_deref() == Some(r.id.as_str())
                    && !(m.role == Role::User && m.id != r.trigger && triggers.contains(&&*m.id))
            });
            run(
                r,
                (&t.messages, own.collect()),
                gone,
                mask,
                (&mut names, &scope),
            )
        })
        .collect();
    let ran = |m: &Message| {
        t.runs
            .iter()
            .any(|r| m.pai.run_id.as_deref() == Some(&*r.id))
    };
    let loose = t.messages.iter().filter(kept).filter(|m| !ran(m));
    let loose = loose.map(|m| message(m, &mut names, "T", mask)).collect();
    let metadata = masked(&t.metadata, &mask.thread_keys);
    let metadata = match metadata.is_empty() {
        true => String::new(),
        false => names.rename(&format!("metadata {}", json(&Value::Object(metadata))), "T"),
    };
    let private = masked(&t.private_metadata, &mask.private_keys)
        .into_iter()
        .map(|(k, v)| {
            let v = match k == COMPACTION_KEY {
                true => cursor_by_ids(v, &t.messages),
                false => v,
            };
            (k, names.rename(&json(&v), "T"))
        })
        .collect();
    let gone = if gone { ", deleted" } else { "" };
    ThreadOutcome {
        name: format!("thread {}, incarnation {}{gone}", t.id, t.incarnation),
        cancels: Vec::new(),
        metadata,
        private,
        runs,
        loose,
    }
}

/// The compaction cursor with the sequence numbers it names (`through`,
/// `covers`) given as the ids of the messages stored under them: where a
/// message was stored among other runs' messages is timing, which message
/// the cursor names is not.
fn cursor_by_ids(mut v: Value, messages: &[Message]) -> Value {
    if let Value::Object(cursor) = &mut v {
        for field in ["through", "covers"] {
            let Some(seq) = cursor.get(field).and_then(Value::as_u64) else {
                continue;
            };
            if let Some(m) = messages.iter().find(|m| m.seq == seq) {
                cursor.insert(field.to_string(), Value::String(m.id.to_string()));
            }
        }
    }
    v
}

/// A hidden context message a hook stores in a run's first episode only,
/// or a compaction's summary record the mask leaves out.
fn hidden_first_episode(m: &Message, mask: &Mask) -> bool {
    let first = m.pai.producer == Producer::Lifecycle
        && !m.visibility.transcript
        && mask.first_episode_texts.contains(&m.text());
    first || (mask.compaction && m.pai.producer == Producer::Compaction)
}

/// One run's outcome: `all` the thread's messages (to find its trigger),
/// `own` the messages it committed.
fn run(
    r: &RunRecord,
    (all, own): (&[Message], Vec<&Message>),
    gone: bool,
    mask: &Mask,
    (names, scope): (&mut Namer, &str),
) -> RunOutcome {
    // A deletion ends every run of the incarnation that had not ended.
    let ended = matches!(
        r.status,
        RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled
    );
    let (status, outcome, reason) = match gone && !ended {
        true => ("cancelled", "cancelled", DELETED),
        false => (
            r.status.as_str(),
            r.outcome.map_or("-", |o| o.as_str()),
            opt(&r.reason),
        ),
    };
    let trigger = all.iter().find(|m| m.id == r.trigger);
    let trigger = match trigger {
        Some(m) => format!("{} {}", r.trigger, quoted(&m.text())),
        None => format!("{} (not stored)", r.trigger),
    };
    let trigger = names.rename(&trigger, scope);
    let messages = own
        .into_iter()
        .map(|m| message(m, names, scope, mask))
        .collect();
    let metadata = match &r.metadata {
        Some(Value::Object(m)) => {
            let kept = masked(m, &mask.run_keys);
            match kept.is_empty() {
                true => String::new(),
                false => format!("metadata {}", json(&Value::Object(kept))),
            }
        }
        Some(other) => format!("metadata {}", json(other)),
        None => String::new(),
    };
    // A deletion ends the incarnation's runs: none waits on anything since.
    let waits = if gone && !ended {
        &[][..]
    } else {
        &r.waiting[..]
    };
    let waiting = waits.iter().map(|c| {
        let answer = c.answer.as_ref().map_or("unanswered", |a| a.as_str());
        let (kind, step) = (c.kind.as_str(), c.step);
        let line = format!(
            "waiting on {} {} ({kind}, step {step}): {answer}",
            c.call_id, c.tool
        );
        names.rename(&line, scope)
    });
    let waiting = waiting.collect();
    RunOutcome {
        name: scope.to_string(),
        end: format!("{status} outcome={outcome} reason={reason}"),
        steps: r.steps,
        cancelled: status == "cancelled",
        reason: (reason != "-").then(|| reason.to_string()),
        trigger,
        messages,
        metadata: names.rename(&metadata, scope),
        waiting,
    }
}

/// One message, its ids renamed in `scope`.
fn message(m: &Message, names: &mut Namer, scope: &str, mask: &Mask) -> MessageOutcome {
    let vis = match (m.visibility.transcript, m.visibility.context) {
        _ if mask.client_visibility && matches!(m.role, Role::User | Role::System) => {
            "visibility not compared"
        }
        (true, true) => "transcript+context",
        (true, false) => "transcript only",
        (false, true) => "context only",
        (false, false) => "hidden",
    };
    let producer = serde_json::to_value(m.pai.producer).unwrap_or_default();
    let mut head = format!(
        "{} {} by {} [{vis}]",
        m.id,
        role(m.role),
        producer.as_str().unwrap_or("?")
    );
    if let Some(s) = m.pai.step {
        head.push_str(&format!(" step={s}"));
    }
    if let Some(o) = m.pai.outcome {
        head.push_str(&format!(" outcome={}", o.as_str()));
    }
    if let Some(r) = &m.pai.reason {
        head.push_str(&format!(" reason={r}"));
    }
    let head = names.rename(&head, scope);
    let parts = m.parts.iter().map(|p| part(p, names, scope)).collect();
    MessageOutcome { head, parts }
}

fn part(p: &Part, names: &mut Namer, scope: &str) -> PartOutcome {
    let (line, result) = match p {
        Part::Text { text } => (format!("text {}", quoted(text)), None),
        Part::ToolCall {
            call_id,
            tool,
            input,
        } => (format!("call {call_id} {tool} {}", json(input)), None),
        Part::ToolResult {
            call_id,
            tool,
            status,
            source,
            output,
        } => {
            let status = match status {
                ToolStatus::Output => "output",
                ToolStatus::Error => "error",
            };
            let line = format!(
                "result {call_id} {tool} {status} {} {}",
                source.as_str(),
                json(output)
            );
            let cancelled = *source == ResultSource::Cancelled;
            (line, Some((names.rename(call_id, scope), cancelled)))
        }
    };
    PartOutcome {
        line: names.rename(&line, scope),
        result,
    }
}

/// `m` without the keys in `masked`.
fn masked(
    m: &Map<String, Value>,
    masked: &std::collections::BTreeSet<String>,
) -> Map<String, Value> {
    m.iter()
        .filter(|(k, _)| !masked.contains(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// An id the seeded id source draws: `run3_0a1f`, `msg12_ffff`, `call1_0000`.
static ID: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"\b(run|msg|call|thr)(\d+)_([0-9a-f]{4})\b").expect("a valid pattern")
});

/// Names ids by where they first appear, per scope and kind.
#[derive(Debug, Default)]
struct Namer {
    names: BTreeMap<String, String>,
    counts: BTreeMap<(String, &'static str), usize>,
}

impl Namer {
    /// Names `id` `name` (a run by its place).
    fn fix(&mut self, id: &str, name: String) {
        self.names.insert(id.to_string(), name);
    }

    /// `text` with every id renamed; an id seen first here is named in `scope`.
    fn rename(&mut self, text: &str, scope: &str) -> String {
        ID.replace_all(text, |c: &regex::Captures<'_>| {
            let id = c[0].to_string();
            if let Some(n) = self.names.get(&id) {
                return n.clone();
            }
            let kind = match &c[1] {
                "run" => "r",
                "msg" => "m",
                "call" => "c",
                _ => "t",
            };
            let n = self.counts.entry((scope.to_string(), kind)).or_default();
            *n += 1;
            let name = format!("{scope}/{kind}{n}");
            self.names.insert(id, name.clone());
            name
        })
        .into_owned()
    }
}

#[cfg(test)]
pub(super) fn rename_for_test(texts: &[(&str, &str)]) -> Vec<String> {
    let mut n = Namer::default();
    texts.iter().map(|(t, scope)| n.rename(t, scope)).collect()
}
