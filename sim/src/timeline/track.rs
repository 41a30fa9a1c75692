//! The timeline section: an axis row, then one lane per run under its
//! thread's header, then one lane per watcher; each lane a few rows whose
//! items are absolutely placed divs (no SVG, no script: hover text comes
//! from `title`).

use std::fmt::Write as _;

use super::axis::{Axis, SLOT_PX};
use super::escape::esc;
use super::model::{Item, Model, Row, RunLane, ThreadLanes, WatcherLane};

/// Width of the row headers (`--head` in the style sheet).
const HEAD_PX: u64 = 168;
/// The least room between two tick labels.
const LABEL_PX: u64 = 56;

const LEGEND: &str = "Time runs left to right. Each virtual millisecond at which \
something happened is a column (shaded on the axis); inside a column, items \
follow event order, one slot each; between columns, the gap grows with the \
virtual time that passed. Hover an item for the full event.";

pub(super) fn timeline(out: &mut String, model: &Model) {
    let axis = &model.axis;
    let width = HEAD_PX + axis.width();
    out.push_str("<section id=\"timeline\">\n<h2>Timeline</h2>\n");
    let _ = writeln!(out, "<p class=\"legend\">{LEGEND}</p>");
    let _ = writeln!(
        out,
        "<div class=\"scroll\"><div class=\"grid\" style=\"width:{width}px\">"
    );
    gridlines(out, axis);
    axis_row(out, axis);
    for t in &model.threads {
        thread(out, t, axis);
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
        axis.width()
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

fn thread(out: &mut String, t: &ThreadLanes, axis: &Axis) {
    let _ = writeln!(
        out,
        "<div class=\"group thread\" data-thread=\"{}\">\n<div class=\"group-head\">\
         <span class=\"sticky\">thread {} <span class=\"sub\">{}</span></span></div>",
        esc(&t.thread),
        esc(&t.thread),
        esc(&t.summary)
    );
    for r in &t.runs {
        run(out, r, &t.thread, axis);
    }
    out.push_str("</div>\n");
}

fn run(out: &mut String, r: &RunLane, thread: &str, axis: &Axis) {
    let _ = writeln!(
        out,
        "<div class=\"lane run\" id=\"run-{}\" data-run=\"{}\" data-thread=\"{}\" data-worker=\"{}\">\n\
         <div class=\"lane-head\"><span class=\"sticky\">run <b class=\"mono\">{}</b> \
         · worker <b class=\"worker\">{}</b> <span class=\"sub\">{}</span></span></div>",
        esc(&r.run),
        esc(&r.run),
        esc(thread),
        esc(r.worker),
        esc(&r.run),
        esc(r.worker),
        esc(&r.ending)
    );
    for row in &r.rows {
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
    let _ = write!(
        out,
        "<div class=\"row {}\"><div class=\"row-head\">{}</div>\
         <div class=\"track\" style=\"width:{}px\">",
        row.class,
        esc(&row.name),
        axis.width()
    );
    for i in &row.items {
        item(out, i, axis);
    }
    out.push_str("</div></div>\n");
}

fn item(out: &mut String, i: &Item, axis: &Axis) {
    let x = axis.x(i.start);
    let kind = i.kind.as_str();
    match i.end {
        Some(end) => {
            let w = (axis.x(end) + SLOT_PX).saturating_sub(x + 2);
            let _ = writeln!(
                out,
                "<div class=\"it span {kind} {}\" data-kind=\"{kind}\" style=\"left:{x}px;width:{w}px\" \
                 title=\"{}\">{}</div>",
                i.status,
                esc(&i.detail),
                esc(&i.label)
            );
        }
        None => {
            let _ = writeln!(
                out,
                "<div class=\"it mark {kind} {}\" data-kind=\"{kind}\" style=\"left:{x}px\" \
                 title=\"{}\"><span class=\"lbl\">{}</span></div>",
                i.status,
                esc(&i.detail),
                esc(&i.label)
            );
        }
    }
}
