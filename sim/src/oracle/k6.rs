//! SPEC K6: a cancel reaches the run it names, or the thread's current run
//! (active, just admitted or queued), and that run ends cancelled; a run
//! cancelled while queued runs no phase; a cancel that finds no run says so,
//! and only when there was none. A cancel by an identity that does not own
//! the thread (SPEC H4) is refused and reaches nothing: it must be refused,
//! and nothing is expected of the thread's runs.

use pai_runtime::{Event, event::EventKind, store::RunStatus};

use super::observed::{Observed, Violation};
use crate::scenario::{Action, OracleId};
use crate::world::{ActionRecord, ClusterEvent};

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let mut out = Vec::new();
    for a in o.actions {
        let m = &o.scenario.timeline[a.moment];
        let Action::Cancel(named) = &m.action else {
            continue;
        };
        let before = &o.events[..a.after_event.min(o.events.len())];
        let named_run = named.and_then(|n| nth_send(o, &m.thread, n));
        if named.is_some() && named_run.is_none() {
            continue; // it named a send that never made a run: the runtime was not asked
        }
        let owner = owner_before(o, a, &m.thread);
        let foreign = owner.is_some_and(|owner| owner != m.client);
        let problem = match &a.outcome {
            Ok(Some(run)) if foreign => Some(format!(
                "{} does not own {} ({} does), yet the cancel reached {run} (H4)",
                m.client,
                m.thread,
                owner.unwrap_or_default()
            )),
            // Refused by scope: it reached nothing, so it missed nothing.
            Err(_) if foreign => None,
            Ok(Some(run)) => reached(o, before, run, named_run.as_deref())
                .filter(|_| !o.cut_short || ended(o.events, run)),
            Ok(None) => Some("the cancel reached no run and said nothing".to_string()),
            Err(_) => missed(before, &m.thread, named_run.as_deref())
                .filter(|_| !ended_unseen(o, (before, a.at), &m.thread, named_run.as_deref())),
        };
        if let Some(p) = problem {
            out.push(Violation::new(
                OracleId::K6,
                None,
                format!("cancel at {}ms: {p}", a.at),
            ));
        }
    }
    out
}

/// Who owned `thread` when `cancel` was made, from the client actions
/// before it: the first identity whose send, steer or `create_thread`
/// made the thread (after its last deletion); `None` while it does not
/// exist.
fn owner_before<'a>(o: &Observed<'a>, cancel: &ActionRecord, thread: &str) -> Option<&'a str> {
    let mut owner = None;
    let earlier = o.actions.iter().take_while(|a| !std::ptr::eq(*a, cancel));
    for a in earlier.filter(|a| a.outcome.is_ok()) {
        let m = &o.scenario.timeline[a.moment];
        if m.thread != thread {
            continue;
        }
        match m.action {
            Action::Send(_) | Action::Steer(_) => {
                owner = owner.or(Some(m.client.as_str()));
            }
            Action::CreateThread => owner = Some(m.client.as_str()),
            Action::DeleteThread => owner = None,
            _ => {}
        }
    }
    owner
}

/// The run of the thread's `n`-th send, if it was admitted.
fn nth_send(o: &Observed<'_>, thread: &str, n: usize) -> Option<String> {
    let sends = o.actions.iter().filter(|a| {
        let m = &o.scenario.timeline[a.moment];
        m.thread == thread && matches!(m.action, Action::Send(_))
    });
    let record: &ActionRecord = sends.into_iter().nth(n - 1)?;
    record.outcome.clone().ok().flatten()
}

fn ended(events: &[Event], run: &str) -> bool {
    let ends = |e: &Event| e.run_id == run && matches!(e.kind, EventKind::Ended { .. });
    events.iter().any(ends)
}

/// A cancel that reached `run`: it was the run asked for, it ends
/// cancelled, and if it had not started it never does.
/// Among workers a run's end may be stored by a worker that vanished
/// before logging it; the store then says how it ended.
fn reached(o: &Observed<'_>, before: &[Event], run: &str, named: Option<&str>) -> Option<String> {
    let all = o.events;
    if let Some(n) = named
        && n != run
    {
        return Some(format!("it named {n} but reached {run}"));
    }
    let of_run = |e: &&Event| e.run_id == run;
    let logged = all.iter().filter(of_run).find_map(|e| match &e.kind {
        EventKind::Ended { status, .. } => Some(*status),
        _ => None,
    });
    let stored = || {
        let runs = o.threads.iter().flat_map(|t| &t.runs);
        runs.filter(|r| r.id == run).map(|r| r.status).next()
    };
    let status = logged.or_else(|| o.cluster.and_then(|_| stored()));
    // Among workers, a thread deleted since takes its runs with it: the
    // end a cut-off worker never logged cannot be read back.
    let deleted_since = o.cluster.is_some()
        && all.iter().any(|e| {
            e.thread_id
                == o.events
                    .iter()
                    .find(of_run)
                    .map_or("", |x| x.thread_id.as_str())
                && matches!(e.kind, EventKind::ThreadDeleted { .. })
        });
    if status.is_none() && deleted_since {
        return None;
    }
    if status != Some(RunStatus::Cancelled) {
        let s = status.map_or("never ended", |s| s.as_str());
        return Some(format!("it reached {run}, which then ended {s}"));
    }
    let leased = |events: &[Event]| {
        events
            .iter()
            .filter(of_run)
            .any(|e| matches!(e.kind, EventKind::LeaseAcquired { .. }))
    };
    // A run whose first claim event is a takeover had been claimed before
    // by a worker that vanished without a word (K3): it was not queued.
    let claimed_unseen = all
        .iter()
        .filter(of_run)
        .find(|e| {
            matches!(
                e.kind,
                EventKind::LeaseAcquired { .. } | EventKind::TakenOver { .. }
            )
        })
        .is_some_and(|e| matches!(e.kind, EventKind::TakenOver { .. }));
    if !leased(before) && leased(all) && !claimed_unseen {
        return Some(format!("{run} was cancelled while queued, then started"));
    }
    // In one process the cancel is stored before anything after it is
    // logged: no tool of the run starts after it (T8).
    let after = &all[before.len()..];
    let started = |e: &&Event| matches!(&e.kind, EventKind::ToolStart { .. });
    if o.cluster.is_none()
        && let Some(e) = after.iter().filter(of_run).find(started)
        && let EventKind::ToolStart { call_id, .. } = &e.kind
    {
        return Some(format!(
            "{run} started {call_id} after the cancel reached it"
        ));
    }
    None
}

/// Among workers: the named run, or every run the log leaves open before
/// the cancel, was ended in the store by a worker that vanished (or was
/// cut off) before logging it: the stored thread says it is over, or the
/// store log has its `finish` by the time the cancel was made (the thread
/// may be deleted since, taking its runs with it).
fn ended_unseen(
    o: &Observed<'_>,
    (before, at): (&[Event], u64),
    thread: &str,
    named: Option<&str>,
) -> bool {
    let Some(cluster) = o.cluster else {
        return false;
    };
    let finished_by_then = |run: &str| {
        cluster.log.iter().any(|r| {
            r.at <= at
                && matches!(&r.what, ClusterEvent::Wrote { request, run: w, releases: true, .. }
                    if *request == "finish" && w == run)
        })
    };
    let logged_end = |run: &str| {
        o.events
            .iter()
            .any(|e| e.run_id == run && matches!(e.kind, EventKind::Ended { .. }))
    };
    let admitted = before
        .iter()
        .filter(|e| e.thread_id == thread)
        .filter_map(|e| match e.kind {
            EventKind::Admitted { .. } => Some(e.run_id.as_str()),
            _ => None,
        });
    let stored_over = |run: &str| {
        o.threads.iter().flat_map(|t| &t.runs).any(|r| {
            r.id == run
                && matches!(
                    r.status,
                    RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled
                )
        })
    };
    admitted
        .filter(|r| named.is_none_or(|n| n == *r))
        .filter(|r| {
            !before
                .iter()
                .any(|e| e.run_id == *r && matches!(e.kind, EventKind::Ended { .. }))
        })
        .all(|r| !logged_end(r) && (stored_over(r) || finished_by_then(r)))
}

/// A cancel that found no run: true only if no run it could reach was open.
fn missed(before: &[Event], thread: &str, named: Option<&str>) -> Option<String> {
    let mut open: Vec<&str> = Vec::new();
    for e in before.iter().filter(|e| e.thread_id == thread) {
        match &e.kind {
            EventKind::Admitted { .. } => open.push(&e.run_id),
            EventKind::Ended { .. } => open.retain(|r| *r != e.run_id),
            // A deletion retires the thread's runs (H5): none is left to find.
            EventKind::ThreadDeleted { .. } => open.clear(),
            _ => {}
        }
    }
    let lost = match named {
        Some(n) => open.contains(&n),
        None => !open.is_empty(),
    };
    lost.then(|| {
        format!(
            "it found no run while {} was active or queued",
            open.join(", ")
        )
    })
}
