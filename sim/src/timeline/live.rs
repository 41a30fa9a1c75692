//! Watcher lanes from what each watcher received: text deltas joined into
//! readable stretches (one per run and step), and marks for everything else.

use pai_runtime::{StreamPart, event::LiveEvent};

use super::axis::{Pos, Ranker};
use super::model::{Item, Kind, Row, Segment, WatcherLane};
use crate::format::{opt, quoted, stream_part};
use crate::{Action, Scenario};

/// One lane per watcher, in the order each first received something.
pub(super) fn collect(scenario: &Scenario, live: &[(String, LiveEvent)]) -> Vec<WatcherLane> {
    let mut lanes: Vec<(WatcherLane, Ranker)> = Vec::new();
    for (name, event) in live {
        let i = match lanes.iter().position(|(l, _)| l.name == *name) {
            Some(i) => i,
            None => {
                lanes.push((empty(scenario, name), Ranker::default()));
                lanes.len() - 1
            }
        };
        let (lane, ranker) = &mut lanes[i];
        receive(lane, ranker.next(at(event)), event);
    }
    lanes
        .into_iter()
        .map(|(mut lane, _)| {
            let text = text_row(&lane.segments);
            lane.rows.insert(0, text);
            lane
        })
        .collect()
}

/// When a live event happened.
pub(super) fn at(event: &LiveEvent) -> u64 {
    match event {
        LiveEvent::Part { at, .. }
        | LiveEvent::Aborted { at, .. }
        | LiveEvent::Committed { at, .. }
        | LiveEvent::RunWaiting { at, .. }
        | LiveEvent::RunEnded { at, .. } => *at,
    }
}

/// A lane for `name`, on the thread the scenario watches under that name.
fn empty(scenario: &Scenario, name: &str) -> WatcherLane {
    let thread = scenario.timeline.iter().find_map(|m| match &m.action {
        Action::Watch { name: n, .. } if n == name => Some(m.thread.clone()),
        _ => None,
    });
    WatcherLane {
        name: name.to_string(),
        thread,
        segments: Vec::new(),
        rows: vec![Row {
            name: "received".to_string(),
            class: "marks",
            items: Vec::new(),
        }],
    }
}

/// A mark's status, label and hover text.
type Mark = (&'static str, String, String);

fn receive(lane: &mut WatcherLane, pos: Pos, event: &LiveEvent) {
    let (status, label, detail) = match event {
        LiveEvent::Part {
            run_id, step, part, ..
        } => match part {
            StreamPart::TextDelta(t) => return text(lane, pos, run_id, *step, t),
            other => self::part(lane, run_id, *step, other),
        },
        LiveEvent::Aborted {
            run_id,
            step,
            reason,
            ..
        } => {
            close(lane, run_id, *step, format!("aborted: {reason}"));
            let detail = format!("{run_id} step={step} aborted {}", quoted(reason));
            ("aborted", "aborted".to_string(), detail)
        }
        LiveEvent::Committed { version, .. } => (
            "ok",
            format!("refresh v{version}"),
            format!("refresh: version {version}"),
        ),
        LiveEvent::RunWaiting { run_id, calls, .. } => {
            let ids: Vec<&str> = calls.iter().map(|c| c.call_id.as_str()).collect();
            (
                "ok",
                "waits".to_string(),
                format!("{run_id} waits on {}", ids.join(", ")),
            )
        }
        LiveEvent::RunEnded {
            run_id,
            status,
            outcome,
            reason,
            ..
        } => (
            outcome.as_str(),
            format!("ended: {}", outcome.as_str()),
            format!(
                "{run_id} ended status={} outcome={} reason={}",
                status.as_str(),
                outcome.as_str(),
                opt(reason)
            ),
        ),
    };
    lane.rows[0]
        .items
        .push(Item::new(Kind::Live, status, (pos, None), label, detail));
}

/// A stream part other than text: a mark (a finish also ends the stretch).
fn part(lane: &mut WatcherLane, run: &str, step: u32, part: &StreamPart) -> Mark {
    let said = format!("{run} step={step} {}", stream_part(part));
    match part {
        StreamPart::ToolCall(c) => ("ok", format!("call {}", c.tool), said),
        StreamPart::Finish(f) => {
            close(lane, run, step, format!("finish {}", f.as_str()));
            ("ok", format!("finish {}", f.as_str()), said)
        }
        StreamPart::Error(_) => ("failed", "error".to_string(), said),
        StreamPart::Refusal(_) => ("failed", "refusal".to_string(), said),
        StreamPart::TextEnd | StreamPart::TextDelta(_) => ("ok", "text".to_string(), said),
    }
}

/// Appends a delta to the open stretch of its step, or begins one.
fn text(lane: &mut WatcherLane, pos: Pos, run: &str, step: u32, delta: &str) {
    match lane.segments.last_mut() {
        Some(s) if s.run == run && s.step == step && s.note.is_none() => {
            s.text.push_str(delta);
            s.end = pos;
        }
        _ => lane.segments.push(Segment {
            run: run.to_string(),
            step,
            start: pos,
            end: pos,
            text: delta.to_string(),
            note: None,
        }),
    }
}

/// Ends the open stretch of this step, saying how.
fn close(lane: &mut WatcherLane, run: &str, step: u32, note: String) {
    if let Some(s) = lane.segments.last_mut()
        && s.run == run
        && s.step == step
        && s.note.is_none()
    {
        s.note = Some(note);
    }
}

/// The stretches of text as spans.
fn text_row(segments: &[Segment]) -> Row {
    let items = segments
        .iter()
        .map(|s| {
            let note = s
                .note
                .as_deref()
                .map(|n| format!(" [{n}]"))
                .unwrap_or_default();
            let aborted = s.note.as_deref().is_some_and(|n| n.starts_with("aborted"));
            Item::new(
                Kind::LiveText,
                if aborted { "aborted" } else { "ok" },
                (s.start, Some(s.end)),
                s.text.clone(),
                format!("{} step={}: {}{note}", s.run, s.step, quoted(&s.text)),
            )
        })
        .collect();
    Row {
        name: "text".to_string(),
        class: "spans",
        items,
    }
}
