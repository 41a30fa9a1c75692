//! Generated timelines (SPEC D8): sends, steers, cancels and watchers at
//! random virtual times, so runs queue and overlap; and, where the agent has
//! approval or client tools its scripts call, answers to those calls
//! (T7, T9), timed after the sends so that a call often waits when its
//! answer comes, with cancels and sends landing while a run waits. An
//! answer that finds no waiting call is a typed error to the client, noted
//! in the transcript: misses are useful too. Timeline checks
//! (`expect_waiting`, `expect_error`) appear where their outcome is known.

use std::collections::BTreeMap;

use super::draw::{Family, Gen};
use super::tools::{Waiter, output};
use crate::hooks::TransformSpec;
use crate::scenario::{CallRef, CancelRun, CancelSpec, DenySpec, SubmitSpec, TimelineEntry};

/// Client actions at random virtual times; answers for `waiters`.
pub(super) fn timeline(g: &mut Gen, waiters: &[Waiter]) -> Vec<TimelineEntry> {
    let mut out = Vec::new();
    let mut watchers = 0;
    for _ in 0..g.range(1, 6) {
        let at = g.range(0, 200);
        let base = TimelineEntry {
            at,
            thread: thread(g),
            ..TimelineEntry::default()
        };
        action(g, base, &mut watchers, &mut out);
    }
    if !out.iter().any(|e| e.send.is_some() || e.steer.is_some()) {
        out.push(TimelineEntry {
            send: Some(g.text(4)),
            ..TimelineEntry::default()
        });
    }
    if !waiters.is_empty() {
        answers(g, waiters, &mut out);
    }
    checks(g, &mut out);
    out
}

/// Timeline checks whose outcome the generator knows whatever the runtime
/// does right: a thread nothing is sent to waits on nothing, and an answer
/// naming a call no script makes is refused. A check that fails is then a
/// real finding (the `check` oracle), never a wrong guess.
fn checks(g: &mut Gen, out: &mut Vec<TimelineEntry>) {
    if g.chance(10) {
        out.push(TimelineEntry {
            at: g.range(0, 300),
            thread: "quiet".into(),
            expect_waiting: Some(Vec::new()),
            ..TimelineEntry::default()
        });
    }
    if g.chance(10) {
        out.push(TimelineEntry {
            at: g.range(0, 300),
            approve: Some(CallRef {
                tool: Some("absent_tool".into()),
                nth: Some(9),
                call: None,
            }),
            expect_error: Some("has no call".into()),
            ..TimelineEntry::default()
        });
    }
}

fn thread(g: &mut Gen) -> String {
    match g.chance(15) {
        true => "side".into(),
        false => "main".into(),
    }
}

/// One send, steer, cancel (also at the same instant as a send) or watcher.
fn action(g: &mut Gen, base: TimelineEntry, watchers: &mut u32, out: &mut Vec<TimelineEntry>) {
    let text = Some(g.text(5));
    // Send 5 in 10, steer 2, cancel 1, send and cancel 1, watch 1.
    match g.kind(Family::Action, &[5, 2, 1, 1, 1]) {
        0 => out.push(TimelineEntry { send: text, ..base }),
        1 => out.push(TimelineEntry {
            steer: text,
            ..base
        }),
        2 => {
            let cancel = cancel(g);
            out.push(TimelineEntry { cancel, ..base });
        }
        3 => {
            out.push(TimelineEntry {
                send: text,
                ..base.clone()
            });
            out.push(TimelineEntry {
                cancel: CancelSpec::Current(true),
                ..base
            });
        }
        _ => {
            *watchers += 1;
            let live = match g.index(3) {
                0 => vec![TransformSpec::Uppercase],
                _ => vec![],
            };
            out.push(TimelineEntry {
                watch: Some(format!("w{watchers}")),
                live,
                ..base
            });
        }
    }
}

/// The thread's current run, or the run of one of its first sends.
fn cancel(g: &mut Gen) -> CancelSpec {
    match g.chance(50) {
        true => CancelSpec::Current(true),
        false => CancelSpec::Run(CancelRun {
            run: g.range(1, 3) as usize,
        }),
    }
}

/// After most sends, a burst of answers timed past the model's latency;
/// sometimes a send that queues behind the waiting run, or a cancel that
/// reaches it; then, often, a sweep that answers every call the scripts
/// make, so runs queued behind long waits resume too; and now and then an
/// answer at any time at all.
fn answers(g: &mut Gen, waiters: &[Waiter], out: &mut Vec<TimelineEntry>) {
    let sends: Vec<(u64, String)> = out
        .iter()
        .filter(|e| e.send.is_some() || e.steer.is_some())
        .map(|e| (e.at, e.thread.clone()))
        .collect();
    // How many calls of each tool each thread's bursts have answered.
    let mut answered: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (at, thread) in &sends {
        if g.chance(70) {
            burst(g, waiters, (*at, thread), &mut answered, out);
        }
        let base = TimelineEntry {
            at: at + g.range(5, 250),
            thread: thread.clone(),
            ..TimelineEntry::default()
        };
        match g.index(8) {
            0 | 1 => out.push(TimelineEntry {
                send: Some(g.text(4)),
                ..base
            }),
            2 => cancel_then_answer(g, waiters, base, out),
            _ => {}
        }
    }
    let last = sends.iter().map(|(at, _)| *at).max().unwrap_or(0);
    let mut threads: Vec<&str> = sends.iter().map(|(_, t)| t.as_str()).collect();
    threads.sort_unstable();
    threads.dedup();
    for _ in 0..g.range(0, 2) {
        let at = last + g.range(30, 400);
        let thread = g.pick(&threads).to_string();
        sweep(g, waiters, (at, thread), out);
    }
    if g.chance(30) {
        let w = g.pick(waiters).clone();
        // Only calls the scripts make: the loader refuses an answer that
        // names any other (without `expect_error`).
        let call = (w.name.clone(), g.range(1, w.calls as u64) as usize);
        let at = g.range(0, 400);
        let thread = thread(g);
        let mut entry = answer(g, &w, call, at, thread);
        if g.chance(40) {
            let scripted: usize = waiters.iter().map(|w| w.calls).sum();
            by_call_id(&mut entry, g.range(1, scripted.min(4) as u64) as usize);
        }
        out.push(entry);
    }
}

/// A cancel that reaches a waiting (or answerable) run, and often an
/// answer to one of its calls soon after: the store must refuse it and
/// change nothing (SPEC T8, T9; `cross.answer_after_cancel`).
fn cancel_then_answer(
    g: &mut Gen,
    waiters: &[Waiter],
    base: TimelineEntry,
    out: &mut Vec<TimelineEntry>,
) {
    let (at, thread) = (base.at, base.thread.clone());
    out.push(TimelineEntry {
        cancel: cancel(g),
        ..base
    });
    if g.chance(60) {
        let w = g.pick(waiters).clone();
        let call = (w.name.clone(), g.range(1, w.calls as u64) as usize);
        let at = at + g.range(0, 40);
        out.push(answer(g, &w, call, at, thread));
    }
}

/// Answers, in order, to calls of the waiting tools on one thread: mostly
/// the next call of a tool, sometimes any of the calls the scripts make.
fn burst(
    g: &mut Gen,
    waiters: &[Waiter],
    (sent, thread): (u64, &str),
    answered: &mut BTreeMap<(String, String), usize>,
    out: &mut Vec<TimelineEntry>,
) {
    let mut at = sent + g.range(5, 150);
    for _ in 0..g.range(1, 3) {
        let w = g.pick(waiters).clone();
        let next = answered
            .entry((thread.to_string(), w.name.clone()))
            .or_default();
        let nth = match g.chance(80) {
            true => {
                *next = *next % w.calls + 1;
                *next
            }
            false => g.range(1, w.calls as u64) as usize,
        };
        out.push(answer(g, &w, (w.name.clone(), nth), at, thread.to_string()));
        at += g.range(0, 60);
    }
}

/// Every call of every waiting tool the scripts make, answered in order on
/// one thread.
fn sweep(
    g: &mut Gen,
    waiters: &[Waiter],
    (mut at, thread): (u64, String),
    out: &mut Vec<TimelineEntry>,
) {
    for w in waiters {
        for nth in 1..=w.calls {
            out.push(answer(g, w, (w.name.clone(), nth), at, thread.clone()));
            at += g.range(0, 30);
        }
    }
}

/// An answer to call `nth` of `w`: approve or deny an approval call, submit
/// an output for a client call; now and then the wrong kind of answer.
pub(super) fn answer(
    g: &mut Gen,
    w: &Waiter,
    (tool, nth): (String, usize),
    at: u64,
    thread: String,
) -> TimelineEntry {
    let base = TimelineEntry {
        at,
        thread,
        ..TimelineEntry::default()
    };
    let client = if g.chance(8) { !w.client } else { w.client };
    match (client, g.chance(30)) {
        (true, _) => TimelineEntry {
            submit_result: Some(SubmitSpec {
                tool: Some(tool),
                nth: Some(nth),
                call: None,
                output: output(g, w),
            }),
            ..base
        },
        (false, true) => TimelineEntry {
            deny: Some(DenySpec {
                tool: Some(tool),
                nth: Some(nth),
                call: None,
                reason: g.text(3),
            }),
            ..base
        },
        (false, false) => TimelineEntry {
            approve: Some(CallRef {
                tool: Some(tool),
                nth: Some(nth),
                call: None,
            }),
            ..base
        },
    }
}

/// Names an answer's call by `call = "#N"` (the N-th call the timeline
/// saw its thread store) instead of by tool and order: after a delete or a
/// regeneration it may name a call that is gone (SPEC T9, H5).
pub(super) fn by_call_id(entry: &mut TimelineEntry, n: usize) {
    let call = Some(format!("#{n}"));
    if let Some(c) = &mut entry.approve {
        (c.tool, c.nth, c.call) = (None, None, call);
    } else if let Some(d) = &mut entry.deny {
        (d.tool, d.nth, d.call) = (None, None, call);
    } else if let Some(s) = &mut entry.submit_result {
        (s.tool, s.nth, s.call) = (None, None, call);
    }
}
