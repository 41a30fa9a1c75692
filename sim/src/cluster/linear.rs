//! The event log the per-run oracles read when several workers drive runs.
//! Processes record events when they hear the store's answers, so their
//! logs interleave out of the store's order; this puts them back:
//!
//! - events that report a store transaction take the place where the
//!   store applied it: a client's writes (`admit`, `steered`, `answer`),
//!   and a worker's claims (`taken_over`, `lease_acquired`);
//! - each run keeps only the events of the worker that holds it now. A
//!   worker that lost a run's lease (it paused, crashed or was cut off, and
//!   another took the run over) may go on doing things locally for a
//!   while; those events stay in the transcript and in the raw log the
//!   lease oracles read (K2, K5), but they are not the run's story.

use std::collections::BTreeMap;

use pai_runtime::{Event, EventKind};

use crate::world::{ActionRecord, ClusterEvent, ClusterRecord};

/// The linear log, and for each place in the raw log (0..=len) the place
/// it maps to in the linear one.
pub fn linearize(raw: &[Event], log: &[ClusterRecord]) -> (Vec<Event>, Vec<usize>) {
    let placed = client_writes(raw, log);
    // At one place, in the order the store applied them.
    let mut at: BTreeMap<usize, BTreeMap<usize, &Event>> = BTreeMap::new();
    for (&i, &(pos, seq)) in &placed {
        at.entry(pos).or_default().insert(seq, &raw[i]);
    }
    // The store's order first, then each run's driver only.
    let mut merged: Vec<&Event> = Vec::with_capacity(raw.len());
    let mut merged_at = Vec::with_capacity(raw.len() + 1);
    for (i, e) in raw.iter().enumerate() {
        merged.extend(at.remove(&i).into_iter().flat_map(BTreeMap::into_values));
        merged_at.push(merged.len());
        if !placed.contains_key(&i) {
            merged.push(e);
        }
    }
    merged.extend(at.into_values().flat_map(BTreeMap::into_values));
    merged_at.push(merged.len());
    let mut driver: BTreeMap<(&str, &str), Option<&str>> = BTreeMap::new();
    let mut out = Vec::with_capacity(merged.len());
    let mut out_at = Vec::with_capacity(merged.len() + 1);
    for e in merged {
        out_at.push(out.len());
        if driven_by_its_holder(&mut driver, e) {
            out.push(e.clone());
        }
    }
    out_at.push(out.len());
    let places = merged_at.into_iter().map(|j| out_at[j]).collect();
    (out, places)
}

/// Whether `e` belongs in its run's story: a claim (which makes its worker
/// the run's driver), a client's write, or the driver's own event.
fn driven_by_its_holder<'a>(
    driver: &mut BTreeMap<(&'a str, &'a str), Option<&'a str>>,
    e: &'a Event,
) -> bool {
    let key = (e.thread_id.as_str(), e.run_id.as_str());
    let worker = e.worker.as_deref();
    let current = driver.entry(key).or_default();
    match &e.kind {
        EventKind::TakenOver { .. } | EventKind::LeaseAcquired { .. } => {
            *current = worker;
            true
        }
        _ => current.is_none() || *current == worker || client_write(&e.kind).is_some(),
    }
}

/// What a store transaction is known by: a client write's key, or a
/// lease's token (a takeover by the token it made stale).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Key<'a> {
    Write(&'a str),
    /// A run a run's end admitted for a leftover steer.
    Admit(&'a str),
    /// A run's n-th wait (T7).
    Wait(&'a str, usize),
    Lease(u64),
    Stale(u64),
}

/// For each event that reports a store transaction (by index), the place
/// the store applied it (the number of events recorded then) and the
/// transaction's place in the store's log.
fn client_writes(raw: &[Event], log: &[ClusterRecord]) -> BTreeMap<usize, (usize, usize)> {
    let mut stored: BTreeMap<(&str, Key<'_>), (usize, usize)> = BTreeMap::new();
    let mut waits: BTreeMap<&str, usize> = BTreeMap::new();
    for (seq, r) in log.iter().enumerate() {
        let (thread, key) = match &r.what {
            ClusterEvent::Stored {
                thread,
                key,
                request,
                ..
            } if *request != "cancel" => (thread, Key::Write(key)),
            ClusterEvent::Claimed {
                thread,
                token,
                takeover,
                ..
            } => {
                // A takeover's event comes before the lease it took.
                if let Some(t) = takeover {
                    stored.insert((thread, Key::Stale(t.token)), (r.after_event, 2 * seq));
                }
                (thread, Key::Lease(*token))
            }
            ClusterEvent::Wrote {
                thread,
                next_token: Some(token),
                ..
            } => (thread, Key::Lease(*token)),
            ClusterEvent::Wrote {
                thread,
                admitted: Some(run),
                ..
            } => (thread, Key::Admit(run)),
            ClusterEvent::Wrote {
                thread,
                run,
                request: "wait",
                releases: true,
                ..
            } => {
                let n = waits.entry(run).or_default();
                *n += 1;
                (thread, Key::Wait(run, *n))
            }
            _ => continue,
        };
        stored
            .entry((thread, key))
            .or_insert((r.after_event, 2 * seq + 1));
    }
    let mut waited: BTreeMap<&str, usize> = BTreeMap::new();
    raw.iter()
        .enumerate()
        .filter_map(|(i, e)| {
            let thread = e.thread_id.as_str();
            let key = match &e.kind {
                EventKind::Waiting { .. } => {
                    let n = waited.entry(&e.run_id).or_default();
                    *n += 1;
                    Key::Wait(&e.run_id, *n)
                }
                EventKind::LeaseAcquired { token, .. } => Key::Lease(*token),
                EventKind::TakenOver { stale_token, .. } => Key::Stale(*stale_token),
                EventKind::Admitted { trigger }
                    if !stored.contains_key(&(thread, Key::Write(trigger))) =>
                {
                    Key::Admit(&e.run_id)
                }
                kind => Key::Write(client_write(kind)?),
            };
            let (pos, seq) = stored.remove(&(thread, key))?;
            Some((i, (pos.min(i), seq)))
        })
        .collect()
}

/// The key of a client's write an event reports: the message stored, or
/// the call answered.
fn client_write(kind: &EventKind) -> Option<&str> {
    match kind {
        EventKind::Admitted { trigger: m } | EventKind::Steered { message: m } => Some(m),
        EventKind::Answered { call_id, .. } => Some(call_id),
        _ => None,
    }
}

/// Moves each client action to its place in the linear log: a cancel to
/// where the store applied it (the run it reached is in its answer), any
/// other action to where its answer came.
pub fn place_actions(
    actions: &mut [ActionRecord],
    is_cancel: impl Fn(&ActionRecord) -> bool,
    log: &[ClusterRecord],
    places: &[usize],
) {
    let mut cancels: BTreeMap<&str, usize> = BTreeMap::new();
    for r in log {
        if let ClusterEvent::Stored {
            request: "cancel",
            key,
            ..
        } = &r.what
        {
            cancels.entry(key.as_str()).or_insert(r.after_event);
        }
    }
    for a in actions {
        let raw = match &a.outcome {
            Ok(Some(run)) if is_cancel(a) => cancels.remove(run.as_str()).unwrap_or(a.after_event),
            _ => a.after_event,
        };
        a.after_event = places.get(raw).copied().unwrap_or(a.after_event);
    }
}
