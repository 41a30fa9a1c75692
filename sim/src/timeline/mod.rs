//! A self-contained HTML timeline of one run (`pai-sim show --html`).
//!
//! The page is one document with its own styles: no script, no external
//! URL, readable offline. It shows a header (scenario, rules, seed, virtual
//! duration, workers), then the timeline. With several workers, first one
//! lane per worker ([`workers`]): the faults that hit it at their virtual
//! time (`crash at_ms=150`, as the scenario format says it), how long each
//! lasted, the episodes it held, and what it did without a lease (its
//! events the runs' story leaves out, its writes the store refused). Then
//! one lane per run, grouped under its thread, headed with who held it
//! (`worker local` while there is one process; among workers each holder
//! in turn, and each episode names its own), with rows for episodes (lease
//! acquired → released, lost or taken over, with the fencing token), the
//! faults that hit the holder, steps, phase and hook marks, model attempts
//! with their outcome, tool spans (packed into as many rows as overlap; a
//! call whose worker was cut off is drawn cut, a result it never committed
//! as such), commits with the thread version, and the end of the run; then
//! one lane per watcher with the live text it received and marks for tool
//! calls, aborts, refreshes and run ends. Below: the oracle verdicts, each
//! watcher's text in full, and the transcript. Every item's hover text
//! starts with its whole label.
//!
//! The horizontal axis is a hybrid of time and event order (see [`axis`]):
//! each virtual millisecond at which something happened is a column, one
//! slot wide per event at that time, so events at the same instant stand
//! apart in log order; the gaps between columns grow linearly with the
//! virtual time between them, the whole run's duration spread over a fixed
//! width. Ticks label the columns' milliseconds.
//!
//! Collecting lanes ([`model`], [`stream`], [`runs`], [`builder`], [`rows`],
//! [`workers`], [`live`]) is a pure function of the report, kept apart from
//! rendering ([`html`], [`track`]). Everything iterates vectors or ordered
//! maps, so one report gives one page, byte for byte; all text is escaped
//! ([`escape`]) and the markup is polyglot, so the page also parses as XML.

mod axis;
mod builder;
mod escape;
mod html;
mod live;
mod model;
mod rows;
mod runs;
mod stream;
mod track;
mod workers;

use crate::{Report, Scenario};
use axis::Axis;
use model::Model;

/// The page: one HTML document with its own styles, readable offline.
pub fn timeline_html(scenario: &Scenario, seed: u64, report: &Report) -> String {
    let model = collect(scenario, report);
    html::page(scenario, seed, report, &model)
}

/// The lanes of every worker, run and watcher, and an axis that fits them
/// all.
fn collect(scenario: &Scenario, report: &Report) -> Model {
    let log = report.cluster.as_ref().map(|c| &c.log[..]).unwrap_or(&[]);
    let placed = stream::merge(&report.events, log);
    let threads = runs::collect(&placed, &report.threads, scenario.cluster.is_some());
    let workers = match (&scenario.cluster, &report.cluster) {
        (Some(cluster), Some(obs)) => {
            workers::collect(cluster, obs, &report.events, &placed, &threads)
        }
        _ => Vec::new(),
    };
    let watchers = live::collect(scenario, &report.live);
    let rows = workers
        .iter()
        .flat_map(|w| w.rows.iter())
        .chain(
            threads
                .iter()
                .flat_map(|t| t.runs.iter().flat_map(|r| r.rows.iter())),
        )
        .chain(watchers.iter().flat_map(|w| w.rows.iter()));
    let positions = rows
        .flat_map(|r| r.items.iter())
        .flat_map(|i| std::iter::once(i.start).chain(i.end));
    let duration = report.virtual_ms.max(last_event(report));
    let axis = Axis::new(positions, duration);
    Model {
        workers,
        threads,
        watchers,
        axis,
    }
}

/// The last virtual time anything happened (the report's duration may be
/// shorter if the time limit stopped the run).
fn last_event(report: &Report) -> u64 {
    let raw = report.cluster.iter().flat_map(|c| &c.raw_events);
    let events = report.events.iter().chain(raw).map(|e| e.at);
    let live = report.live.iter().map(|(_, e)| live::at(e));
    let log = report.cluster.iter().flat_map(|c| &c.log).map(|r| r.at);
    events.chain(live).chain(log).max().unwrap_or(0)
}
