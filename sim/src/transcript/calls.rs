//! The model calls of a transcript. A call lists only what changed in its
//! context since the previous call on the same thread (a diff of the two
//! message lists), so a transcript grows with a thread's length, not with
//! its square.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};

use pai_runtime::message::{ModelContent, ModelMessage};
use similar::{Algorithm, DiffOp};

use crate::format::{model_message, quoted, route};
use crate::oracle::{Observed, Verdicts};
use crate::scenario::{Recording, RecordingKind};
use crate::world::{Answer, Calls, ModelCallRecord, ScriptName};

/// Every model call with the request it carried.
pub(super) fn calls(out: &mut String, o: &Observed<'_>, verdicts: &Verdicts) {
    out.push_str("\n== model calls ==\n");
    if o.calls.is_empty() {
        out.push_str("(none)\n");
    }
    let threads: BTreeMap<&str, &str> = o
        .events
        .iter()
        .map(|e| (e.run_id.as_str(), e.thread_id.as_str()))
        .collect();
    let mut previous: BTreeMap<&str, (usize, Sent<'_>)> = BTreeMap::new();
    for (i, c) in o.calls.iter().enumerate() {
        let r = &c.request;
        let _ = writeln!(
            out,
            "call {} at {}ms run={} step={} script={} {} route {{{}}}",
            i + 1,
            c.at,
            r.run_id,
            r.step,
            c.script,
            c.answer,
            route(&r.route)
        );
        if let Some(t) = r.timeout_ms {
            let _ = writeln!(out, "    timeout {t}ms");
        }
        if let Some(rec) = &c.recording {
            let chunk = o
                .scenario
                .replays
                .get(&c.script.key())
                .and_then(|r| r.chunk);
            let _ = writeln!(out, "    {}", replayed(rec, chunk));
        }
        if c.answer == Answer::Registered {
            let _ = writeln!(out, "    {}", registered(o, &c.script));
        }
        if let Some((_, m)) = verdicts.mismatches.iter().find(|(k, _)| *k == i) {
            let _ = writeln!(out, "    EXPECT MISMATCH {}", m.replace('\n', "\n    "));
        }
        let tools: Vec<&str> = r.tools.iter().map(|t| t.name.as_str()).collect();
        let _ = writeln!(out, "    tools [{}]", tools.join(","));
        let thread = threads.get(r.run_id.as_str()).copied().unwrap_or("?");
        let now = Sent::of(o.calls, c);
        let before = previous.get(thread).copied();
        sent_changes(out, now, before);
        previous.insert(thread, (i + 1, now));
    }
}

/// The recording a call replayed, and what its body said beside the parts.
/// The registered model that answered `script`'s call, with its
/// configuration as the scenario wrote it.
fn registered(o: &Observed<'_>, script: &ScriptName) -> String {
    let key = match script {
        ScriptName::Default => None,
        ScriptName::Model(n) => Some(n.clone()),
    };
    match o.scenario.registered.get(&key) {
        Some(def) => format!(
            "answered by the model registered as {} {}",
            quoted(&def.use_name),
            serde_json::Value::Object(def.config.clone())
        ),
        None => "answered by a registered model".into(),
    }
}

/// The recording a call replayed (with the chunk size it was fed in), and
/// what its body said beside the parts: usage, stop reason, a refusal, a
/// cut, what it carried that is no part (by kind, then by type), and what
/// the decoder noted.
fn replayed(rec: &Recording, chunk: Option<usize>) -> String {
    let format = rec.format.decoder().as_str();
    let bytes = rec.body.len();
    let chunk = match chunk {
        Some(n) => format!("chunks of {n}"),
        None => "whole".to_string(),
    };
    let mut line = format!(
        "replayed {} ({format}, {bytes} bytes, {chunk})",
        quoted(&rec.file)
    );
    let said = match &rec.kind {
        RecordingKind::ErrorBody { message, status } => {
            let status = status.map(|s| format!(" (HTTP {s})")).unwrap_or_default();
            let _ = write!(line, ": an error body{status} {}", quoted(message));
            return line;
        }
        RecordingKind::Stream(report) => said(report),
        RecordingKind::Cut { report, cut } => {
            let mut said = said(report);
            said.insert(0, format!("cut: {cut}"));
            said
        }
    };
    if !said.is_empty() {
        let _ = write!(line, ": {}", said.join("; "));
    }
    line
}

/// What a stream's report says, one phrase each.
fn said(report: &pai_providers::StreamReport) -> Vec<String> {
    let mut said = Vec::new();
    if let Some(reason) = &report.stop_reason {
        said.push(format!("stop reason {}", quoted(reason)));
    }
    if let Some(u) = report.usage {
        said.push(format!(
            "usage {} in, {} out",
            u.input_tokens, u.output_tokens
        ));
    }
    if let Some(refusal) = &report.refusal {
        said.push(format!("refusal {}", quoted(refusal)));
    }
    let kinds: Vec<String> = report
        .kinds()
        .iter()
        .map(|(kind, n)| format!("{kind} x{n}"))
        .collect();
    if !kinds.is_empty() {
        said.push(format!("carried {}", kinds.join(", ")));
    }
    let skipped: Vec<String> = report
        .skipped
        .iter()
        .map(|(kind, n)| format!("{kind} x{n}"))
        .collect();
    if !skipped.is_empty() {
        said.push(format!("skipped {}", skipped.join(", ")));
    }
    for note in &report.notes {
        said.push(format!("noted: {note}"));
    }
    said
}

/// What a model call was sent, as the transcript compares it between calls.
#[derive(Clone, Copy)]
struct Sent<'a> {
    instructions: &'a str,
    messages: &'a [ModelMessage],
}

impl<'a> Sent<'a> {
    /// Call `c` of `calls`: its instructions and the messages it was sent.
    fn of(calls: &'a Calls, c: &'a ModelCallRecord) -> Self {
        Sent {
            instructions: &c.request.instructions,
            messages: calls.messages(c),
        }
    }
}

/// A message compared by value; hashed by its role and texts only (equal
/// messages hash alike, which is all a diff needs).
struct Msg<'a>(&'a ModelMessage);

impl PartialEq for Msg<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

// JSON values hold no NaN, so equality is an equivalence.
impl Eq for Msg<'_> {}

impl Hash for Msg<'_> {
    fn hash<H: Hasher>(&self, h: &mut H) {
        (self.0.role as u8).hash(h);
        for c in &self.0.content {
            match c {
                ModelContent::Text { text } => text.hash(h),
                ModelContent::ToolCall { call_id, .. } => call_id.hash(h),
                ModelContent::ToolResult { call_id, .. } => call_id.hash(h),
            }
        }
    }
}

/// Instructions and messages; with `before` (the previous call on the
/// thread, numbered from 1) only what differs from it.
fn sent_changes(out: &mut String, now: Sent<'_>, before: Option<(usize, Sent<'_>)>) {
    let same_instructions = before.is_some_and(|(_, b)| b.instructions == now.instructions);
    if !now.instructions.is_empty() && !same_instructions {
        let _ = writeln!(out, "    instructions {}", quoted(now.instructions));
    }
    let Some((n, b)) = before else {
        for m in now.messages {
            let _ = writeln!(out, "    {}", model_message(m));
        }
        return;
    };
    if now.instructions.is_empty() && !b.instructions.is_empty() {
        let _ = writeln!(out, "    instructions none (call {n} had some)");
    }
    let old: Vec<Msg<'_>> = b.messages.iter().map(Msg).collect();
    let new: Vec<Msg<'_>> = now.messages.iter().map(Msg).collect();
    let ops = similar::capture_diff_slices(Algorithm::Myers, &old, &new);
    let (total, had) = (now.messages.len(), b.messages.len());
    match appended(&ops) {
        Some(kept) => {
            let _ = write!(
                out,
                "    messages {total}: first {kept} as in call {n}, then {} new",
                total - kept
            );
            if had > kept {
                let _ = write!(out, " (call {n} had {had})");
            }
            out.push('\n');
            for m in &now.messages[kept..] {
                let _ = writeln!(out, "    {}", model_message(m));
            }
        }
        None => changed_within(out, &ops, now.messages, (n, had)),
    }
}

/// When the only kept messages are a prefix: how many.
fn appended(ops: &[DiffOp]) -> Option<usize> {
    let mut kept = 0;
    for (i, op) in ops.iter().enumerate() {
        if let DiffOp::Equal { len, .. } = op {
            if i > 0 {
                return None;
            }
            kept = *len;
        }
    }
    Some(kept)
}

/// Messages kept in place, with new ones inserted between them: each new
/// one with its position (from 1) in this call's list.
fn changed_within(
    out: &mut String,
    ops: &[DiffOp],
    now: &[ModelMessage],
    (n, had): (usize, usize),
) {
    let kept: usize = ops
        .iter()
        .map(|op| match op {
            DiffOp::Equal { len, .. } => *len,
            _ => 0,
        })
        .sum();
    let _ = writeln!(
        out,
        "    messages {}: {kept} as in call {n} (which had {had}), {} new at [position]",
        now.len(),
        now.len() - kept
    );
    for op in ops {
        let range = match *op {
            DiffOp::Insert {
                new_index, new_len, ..
            }
            | DiffOp::Replace {
                new_index, new_len, ..
            } => new_index..new_index + new_len,
            DiffOp::Equal { .. } | DiffOp::Delete { .. } => continue,
        };
        for i in range {
            let _ = writeln!(out, "    [{}] {}", i + 1, model_message(&now[i]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pai_runtime::message::ModelMessage as M;

    fn changes(now: (&str, &[M]), before: Option<(&str, &[M])>) -> String {
        let mut out = String::new();
        let before = before.map(|(i, m)| {
            (
                3,
                Sent {
                    instructions: i,
                    messages: m,
                },
            )
        });
        let now = Sent {
            instructions: now.0,
            messages: now.1,
        };
        sent_changes(&mut out, now, before);
        out
    }

    #[test]
    fn a_first_call_lists_everything() {
        let m = [M::user("a"), M::system("s")];
        assert_eq!(
            changes(("be brief", &m), None),
            "    instructions \"be brief\"\n    user: \"a\"\n    system: \"s\"\n"
        );
    }

    #[test]
    fn a_later_call_lists_only_what_follows_the_shared_prefix() {
        let before = [M::user("a"), M::system("s")];
        let now = [M::user("a"), M::user("b"), M::system("s2")];
        assert_eq!(
            changes(("i", &now), Some(("i", &before))),
            "    messages 3: first 1 as in call 3, then 2 new (call 3 had 2)\n    user: \"b\"\n    system: \"s2\"\n"
        );
        let grown = [M::user("a"), M::system("s"), M::user("c")];
        assert_eq!(
            changes(("", &grown), Some(("i", &before))),
            "    instructions none (call 3 had some)\n    messages 3: first 2 as in call 3, then 1 new\n    user: \"c\"\n"
        );
        assert_eq!(
            changes(("j", &before), Some(("i", &before))),
            "    instructions \"j\"\n    messages 2: first 2 as in call 3, then 0 new\n"
        );
    }

    /// A message inserted before kept ones (a queued run's message entering
    /// context ahead of earlier answers) is listed alone, with its place.
    #[test]
    fn an_insertion_inside_lists_only_the_new_messages() {
        let before = [M::user("u1"), M::user("u2"), M::system("a1")];
        let now = [
            M::user("u1"),
            M::user("u2"),
            M::user("u3"),
            M::system("a1"),
            M::system("a2"),
        ];
        assert_eq!(
            changes(("", &now), Some(("", &before))),
            "    messages 5: 3 as in call 3 (which had 3), 2 new at [position]\n    [3] user: \"u3\"\n    [5] system: \"a2\"\n"
        );
    }
}
