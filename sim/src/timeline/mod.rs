//! A self-contained HTML timeline of one run (`pai-sim show --html`).
//!
//! The page is one document with its own styles: no script, no external
//! URL, readable offline. It shows a header (scenario, rules, seed, virtual
//! duration), then the timeline: one lane per run, grouped under its
//! thread, headed with the worker it ran on (`local` while there is one
//! process), with rows for episodes (lease acquired → released, with the
//! fencing token), steps, phase and hook marks, model attempts with their
//! outcome, tool spans (packed into as many rows as overlap), commits with
//! the thread version, and the end of the run; then one lane per watcher
//! with the live text it received and marks for tool calls, aborts,
//! refreshes and run ends. Below: the oracle verdicts, each watcher's text
//! in full, and the transcript.
//!
//! The horizontal axis is a hybrid of time and event order (see [`axis`]):
//! each virtual millisecond at which something happened is a column, one
//! slot wide per event at that time, so events at the same instant stand
//! apart in log order; the gaps between columns grow linearly with the
//! virtual time between them, the whole run's duration spread over a fixed
//! width. Ticks label the columns' milliseconds.
//!
//! Collecting lanes ([`model`], [`runs`], [`live`]) is a pure function of
//! the report, kept apart from rendering ([`html`], [`track`]). Everything
//! iterates vectors or ordered maps, so one report gives one page, byte for
//! byte; all text is escaped ([`escape`]) and the markup is polyglot, so
//! the page also parses as XML.

mod axis;
mod detail;
mod escape;
mod html;
mod live;
mod model;
mod runs;
mod track;

use crate::{Report, Scenario};
use axis::Axis;
use model::Model;

/// The page: one HTML document with its own styles, readable offline.
pub fn timeline_html(scenario: &Scenario, seed: u64, report: &Report) -> String {
    let model = collect(scenario, report);
    html::page(scenario, seed, report, &model)
}

/// The lanes of every run and watcher, and an axis that fits them all.
fn collect(scenario: &Scenario, report: &Report) -> Model {
    let threads = runs::collect(&report.events, &report.threads);
    let watchers = live::collect(scenario, &report.live);
    let rows = threads
        .iter()
        .flat_map(|t| t.runs.iter().flat_map(|r| r.rows.iter()))
        .chain(watchers.iter().flat_map(|w| w.rows.iter()));
    let positions = rows
        .flat_map(|r| r.items.iter())
        .flat_map(|i| std::iter::once(i.start).chain(i.end));
    let duration = report.virtual_ms.max(last_event(report));
    let axis = Axis::new(positions, duration);
    Model {
        threads,
        watchers,
        axis,
    }
}

/// The last virtual time anything happened (the report's duration may be
/// shorter if the time limit stopped the run).
fn last_event(report: &Report) -> u64 {
    let events = report.events.iter().map(|e| e.at);
    let live = report.live.iter().map(|(_, e)| live::at(e));
    events.chain(live).max().unwrap_or(0)
}
