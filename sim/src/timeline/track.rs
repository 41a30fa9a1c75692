//! The timeline section: an axis row, then (with several workers) one lane
//! per worker, one lane per run under its thread's header, then one lane
//! per watcher; each lane a few rows whose items are absolutely placed divs
//! (no SVG, no script: hover text comes from `title`, and starts with the
//! item's whole label). Marks on a `flat` row carry their labels
//! horizontally, stacked on as many lines as keep them from overlapping.

use std::fmt::Write as _;

use super::axis::{Axis, SLOT_PX};
use super::escape::esc;
use super::model::{Item, Model, Row, RunLane, ThreadLanes, WatcherLane, WorkerLane};

/// Width of the row headers (`--head` in the style sheet).
const HEAD_PX: u64 = 168;
/// The least room between two tick labels.
const LABEL_PX: u64 = 56;
/// Room after the axis for the labels of the last marks.
const TAIL_PX: u64 = 240;
/// The height of one line of labels on a `flat` row.
const LINE_PX: u64 = 15;

const LEGEND: &str = "Time runs left to right. Each virtual millisecond at which \
something happened is a column (shaded on the axis); inside a column, items \
follow event order, one slot each; between columns, the gap grows with the \
virtual time that passed. Hover an item for its whole label and the full event.";

const WORKERS_LEGEND: &str = "With several workers, each episode names the \
worker that held its lease; each worker's lane shows the faults that hit it \
(at_ms: the virtual time it was carried out), the episodes it held, and what \
it did after it lost a lease (left out of the runs' lanes) or wrote with a \
stale token (refused by the store). Work a worker was cut off from is drawn \
cut (✗), a result it never committed as such.";

pub(super) fn timeline(out: &mut String, model: &Model) {
    let axis = &model.axis;
    let width = HEAD_PX + axis.width() + TAIL_PX;
    out.push_str("<section id=\"timeline\">\n<h2>Timeline</h2>\n");
    let _ = writeln!(out, "<p class=\"legend\">{LEGEND}</p>");
    if !model.workers.is_empty() {
        let _ = writeln!(out, "<p class=\"legend\">{WORKERS_LEGEND}</p>");
    }
    let _ = writeln!(
        out,
        "<div class=\"scroll\"><div class=\"grid\" style=\"width:{width}px\">"
    );
    gridlines(out, axis);
    axis_row(out, axis);
    if !model.workers.is_empty() {
        out.push_str("<div class=\"group workers\">\n");
        out.push_str(
            "<div class=\"group-head\"><span class=\"sticky\">workers \
             <span class=\"sub\">faults, episodes held, what each did without a lease</span>\
             </span></div>\n",
        );
        for w in &model.workers {
            worker(out, w, axis);
        }
        out.push_str("</div>\n");
    }
    let workers = !model.workers.is_empty();
    for t in &model.threads {
        thread(out, t, axis, workers);
    }
    if !model.watchers.is_empty() {
        out.push_str("<div class=\"group watchers\">\n");
        out.push_str(
            "<div class=\"group-head\"><span class=\"sticky\">watchers \
             <span class=\"sub\">what each live client received</span></span></div>\n",
        );
        for w in &model.watchers {
            watcher(out, w, axis);
        }
        out.push_str("</div>\n");
    }
    out.push_str("</div></div>\n</section>\n");
}

/// The instants whose label is drawn, each at least `LABEL_PX` after the last.
fn labelled(axis: &Axis) -> Vec<(u64, u64)> {
    let mut shown: Vec<(u64, u64)> = Vec::new();
    for (at, x, _) in axis.ticks() {
        if shown.last().is_none_or(|&(_, last)| x >= last + LABEL_PX) {
            shown.push((at, x));
        }
    }
    shown
}

fn gridlines(out: &mut String, axis: &Axis) {
    for (_, x) in labelled(axis) {
        let _ = writeln!(
            out,
            "<div class=\"gridline\" style=\"left:{}px\"></div>",
            HEAD_PX + x
        );
    }
}

fn axis_row(out: &mut String, axis: &Axis) {
    let labels = labelled(axis);
    out.push_str("<div class=\"row axis\"><div class=\"row-head\">virtual time</div>");
    let _ = write!(
        out,
        "<div class=\"track\" style=\"width:{}px\">",
        axis.width() + TAIL_PX
    );
    for (at, x, w) in axis.ticks() {
        let _ = write!(
            out,
            "<div class=\"col\" style=\"left:{x}px;width:{w}px\" title=\"{at} ms\">"
        );
        if labels.iter().any(|&(a, _)| a == at) {
            let _ = write!(out, "<span>{at} ms</span>");
        }
        out.push_str("</div>");
    }
    out.push_str("</div></div>\n");
}

fn thread(out: &mut String, t: &ThreadLanes, axis: &Axis, workers: bool) {
    let _ = writeln!(
        out,
        "<div class=\"group thread\" data-thread=\"{}\">\n<div class=\"group-head\">\
         <span class=\"sticky\">thread {} <span class=\"sub\">{}</span></span></div>",
        esc(&t.thread),
        esc(&t.thread),
        esc(&t.summary)
    );
    for r in &t.runs {
        run(out, r, &t.thread, axis, workers);
    }
    out.push_str("</div>\n");
}

fn run(out: &mut String, r: &RunLane, thread: &str, axis: &Axis, workers: bool) {
    let mut names: Vec<&str> = Vec::new();
    for h in &r.holders {
        if !names.contains(&h.worker.as_str()) {
            names.push(&h.worker);
        }
    }
    let _ = write!(
        out,
        "<div class=\"lane run\" id=\"run-{}\" data-run=\"{}\" data-thread=\"{}\" data-worker=\"{}\">\n\
         <div class=\"lane-head\"><span class=\"sticky\">run <b class=\"mono\">{}</b> · ",
        esc(&r.run),
        esc(&r.run),
        esc(thread),
        esc(&names.join(" ")),
        esc(&r.run),
    );
    holders(out, r, workers);
    let _ = writeln!(
        out,
        " <span class=\"sub\">{}</span></span></div>",
        esc(&r.ending)
    );
    for row in &r.rows {
        self::row(out, row, axis);
    }
    out.push_str("</div>\n");
}

/// Who held the run: the one process's `local`, or each worker in turn
/// with the episodes it held.
fn holders(out: &mut String, r: &RunLane, workers: bool) {
    if !workers {
        let name = r.holders.first().map_or("local", |h| h.worker.as_str());
        let _ = write!(out, "worker <b class=\"worker\">{}</b>", esc(name));
        return;
    }
    if r.holders.is_empty() {
        out.push_str("never claimed by a worker");
        return;
    }
    out.push_str("held by ");
    for (n, h) in r.holders.iter().enumerate() {
        let eps: Vec<String> = h.episodes.iter().map(u32::to_string).collect();
        let word = if eps.len() == 1 {
            "episode"
        } else {
            "episodes"
        };
        let _ = write!(
            out,
            "{}<b class=\"worker\">{}</b> ({word} {})",
            if n == 0 { "" } else { " → " },
            esc(&h.worker),
            eps.join(", ")
        );
    }
}

fn worker(out: &mut String, w: &WorkerLane, axis: &Axis) {
    let _ = writeln!(
        out,
        "<div class=\"lane worker\" id=\"worker-{}\" data-worker=\"{}\">\n\
         <div class=\"lane-head\"><span class=\"sticky\">worker <b class=\"worker\">{}</b> \
         <span class=\"sub\">{}</span></span></div>",
        esc(&w.name),
        esc(&w.name),
        esc(&w.name),
        esc(&w.summary)
    );
    for row in &w.rows {
        self::row(out, row, axis);
    }
    out.push_str("</div>\n");
}

fn watcher(out: &mut String, w: &WatcherLane, axis: &Axis) {
    let thread = w.thread.as_deref().unwrap_or("?");
    let _ = writeln!(
        out,
        "<div class=\"lane watcher\" data-watcher=\"{}\" data-thread=\"{}\">\n\
         <div class=\"lane-head\"><span class=\"sticky\">watcher <b>{}</b> \
         <span class=\"sub\">on thread {}</span></span></div>",
        esc(&w.name),
        esc(thread),
        esc(&w.name),
        esc(thread)
    );
    for row in &w.rows {
        self::row(out, row, axis);
    }
    out.push_str("</div>\n");
}

fn row(out: &mut String, row: &Row, axis: &Axis) {
    let lines = if row.class == "flat" {
        stack(&row.items, axis)
    } else {
        spill(&row.items, axis)
    };
    let height = match row.class {
        "flat" => {
            let n = lines.iter().max().map_or(1, |m| m + 1);
            format!(";height:{}px", n * LINE_PX + 8)
        }
        _ => String::new(),
    };
    let _ = write!(
        out,
        "<div class=\"row {}\"><div class=\"row-head\">{}</div>\
         <div class=\"track\" style=\"width:{}px{height}\">",
        row.class,
        esc(&row.name),
        axis.width() + TAIL_PX
    );
    for (i, line) in row.items.iter().zip(lines) {
        item(out, i, axis, line);
    }
    out.push_str("</div></div>\n");
}

/// The width a label takes, roughly (10px type, with a margin).
fn label_px(label: &str) -> u64 {
    let chars = u64::try_from(label.chars().count()).unwrap_or(u64::MAX / 8);
    chars.saturating_mul(13) / 2 + 10
}

/// A line for each item of a flat row: the first on which its label does
/// not run into the label before it.
fn stack(items: &[Item], axis: &Axis) -> Vec<u64> {
    let mut ends: Vec<u64> = Vec::new();
    items
        .iter()
        .map(|i| {
            let x = axis.x(i.start);
            let end = x + label_px(&i.label);
            match ends.iter().position(|&e| e <= x) {
                Some(l) => {
                    ends[l] = end;
                    l as u64
                }
                None => {
                    ends.push(end);
                    (ends.len() - 1) as u64
                }
            }
        })
        .collect()
}

/// For each item of a row of spans, 1 if its label does not fit in it but
/// fits before the next item (it is then drawn past the span's end).
fn spill(items: &[Item], axis: &Axis) -> Vec<u64> {
    let limit = axis.width() + TAIL_PX;
    items
        .iter()
        .enumerate()
        .map(|(n, i)| {
            let Some(end) = i.end else {
                return 0;
            };
            let x = axis.x(i.start);
            let width = (axis.x(end) + SLOT_PX).saturating_sub(x);
            let next = items.get(n + 1).map_or(limit, |j| axis.x(j.start));
            let need = label_px(&i.label);
            u64::from(need > width && x + need <= next)
        })
        .collect()
}

/// The item's attributes after its classes: kind, worker, more data, and
/// the hover text (its whole label, then the full story).
fn attributes(i: &Item) -> String {
    let kind = i.kind.as_str();
    let mut s = format!(" data-kind=\"{kind}\"");
    if let Some(w) = &i.worker {
        let _ = write!(s, " data-worker=\"{}\"", esc(w));
    }
    for (name, value) in &i.data {
        let _ = write!(s, " data-{name}=\"{}\"", esc(value));
    }
    let title = format!("{}\n{}", i.label, i.detail);
    let _ = write!(s, " title=\"{}\"", esc(&title));
    s
}

/// One item; `line` is a mark's line on a flat row, or 1 for a span whose
/// label spills past its end.
fn item(out: &mut String, i: &Item, axis: &Axis, line: u64) {
    let x = axis.x(i.start);
    let kind = i.kind.as_str();
    let attrs = attributes(i);
    match i.end {
        Some(end) => {
            let w = (axis.x(end) + SLOT_PX).saturating_sub(x + 2);
            let spill = if line > 0 { " spill" } else { "" };
            let _ = writeln!(
                out,
                "<div class=\"it span {kind} {}{spill}\"{attrs} style=\"left:{x}px;width:{w}px\">{}</div>",
                i.status,
                esc(&i.label)
            );
        }
        None => {
            let style = match line {
                0 => format!("left:{x}px"),
                n => format!("left:{x}px;height:{}px", (n + 1) * LINE_PX),
            };
            let _ = writeln!(
                out,
                "<div class=\"it mark {kind} {}\"{attrs} style=\"{style}\">\
                 <span class=\"lbl\">{}</span></div>",
                i.status,
                esc(&i.label)
            );
        }
    }
}
