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

use pai_runtime::store::FencingToken;
use pai_runtime::{Event, event::EventKind};

use crate::world::{ActionRecord, ClientWrite, ClusterEvent, ClusterRecord};

/// The linear log.
#[derive(Debug)]
pub struct Linear {
    pub events: Vec<Event>,
    /// For each place in the raw log (0..=len), its place in the linear one,
    /// after (`places`) or before (`starts`) the store transactions applied
    /// while the raw log had that many events.
    pub places: Vec<usize>,
    pub starts: Vec<usize>,
    /// For each store log record asked about, its place in the linear log.
    pub records: BTreeMap<usize, usize>,
}

/// One item of the merged log: an event, or a store log record whose place
/// someone wants to know.
enum Item<'a> {
    Event(&'a Event),
    Record(usize),
}

/// Puts the raw log in the store's order; `asked` are the store log
/// records (by index) whose places in the linear log are wanted.
pub fn linearize(raw: &[Event], log: &[ClusterRecord], asked: &[usize]) -> Linear {
    let placed = client_writes(raw, log);
    let unlogged = unlogged_waits(raw, log);
    // At one place, in the order the store applied them (and the events
    // that report one transaction in the order they were logged).
    let mut at: BTreeMap<usize, BTreeMap<(usize, usize), Item<'_>>> = BTreeMap::new();
    for (&i, &(pos, seq)) in &placed {
        at.entry(pos)
            .or_default()
            .insert((seq, i), Item::Event(&raw[i]));
    }
    for (k, e) in &unlogged {
        let pos = log[*k].after_event;
        at.entry(pos)
            .or_default()
            .insert((2 * k + 1, usize::MAX - 1), Item::Event(e));
    }
    for &k in asked {
        // A record's own order is twice its index, as `client_writes` has it.
        let pos = log[k].after_event;
        at.entry(pos)
            .or_default()
            .insert((2 * k + 1, usize::MAX), Item::Record(k));
    }
    let mut merged: Vec<Item<'_>> = Vec::with_capacity(raw.len());
    let mut merged_at = Vec::with_capacity(raw.len() + 1);
    let mut merged_start = Vec::with_capacity(raw.len() + 1);
    for (i, e) in raw.iter().enumerate() {
        merged_start.push(merged.len());
        merged.extend(at.remove(&i).into_iter().flat_map(BTreeMap::into_values));
        merged_at.push(merged.len());
        if !placed.contains_key(&i) {
            merged.push(Item::Event(e));
        }
    }
    merged_start.push(merged.len());
    merged.extend(at.into_values().flat_map(BTreeMap::into_values));
    merged_at.push(merged.len());
    let mut driver = Drivers::new();
    let mut events = Vec::with_capacity(merged.len());
    let mut records = BTreeMap::new();
    let mut out_at = Vec::with_capacity(merged.len() + 1);
    for item in merged {
        out_at.push(events.len());
        match item {
            Item::Record(k) => {
                records.insert(k, events.len());
            }
            Item::Event(e) if driven_by_its_holder(&mut driver, e) => events.push(e.clone()),
            Item::Event(_) => {}
        }
    }
    out_at.push(events.len());
    let places = merged_at.into_iter().map(|j| out_at[j]).collect();
    let starts = merged_start.into_iter().map(|j| out_at[j]).collect();
    Linear {
        events,
        places,
        starts,
        records,
    }
}

/// Each run's driver, and whether its episode already ended with a wait.
type Drivers<'a> = BTreeMap<(&'a str, &'a str), (Option<&'a str>, bool)>;

/// Whether `e` belongs in its run's story: a claim (which makes its worker
/// the run's driver), a client's write, or the driver's own event. A lost
/// lease after the store recorded the episode's wait ends nothing more.
fn driven_by_its_holder<'a>(driver: &mut Drivers<'a>, e: &'a Event) -> bool {
    let key = (e.thread_id.as_str(), e.run_id.as_str());
    let worker = e.worker.as_deref();
    let (current, waited) = driver.entry(key).or_default();
    match &e.kind {
        EventKind::TakenOver { .. } | EventKind::LeaseAcquired { .. } => {
            *current = worker;
            *waited = false;
            true
        }
        EventKind::LeaseLost { .. } if *waited => false,
        EventKind::Waiting { .. } => {
            *waited = true;
            current.is_none() || *current == worker
        }
        EventKind::CancelRequested { .. } => true,
        _ => current.is_none() || *current == worker || client_write(&e.kind).is_some(),
    }
}

/// Waits, awaits and admissions the store recorded that no event reports
/// (the worker vanished, or lost touch, before it heard the store's
/// answer): the store is the witness, so the run's story gets the `wait`,
/// `awaiting` or `admit` it would have logged, by the store's log index.
fn unlogged_waits(raw: &[Event], log: &[ClusterRecord]) -> Vec<(usize, Event)> {
    // (run, is a wait, the version it committed), as some process logged it
    let mut logged: std::collections::BTreeSet<(&str, bool, u64)> = Default::default();
    let mut admitted: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
    for e in raw {
        match e.kind {
            EventKind::Waiting { version, .. } => logged.insert((&e.run_id, true, version)),
            EventKind::Awaiting { version, .. } => logged.insert((&e.run_id, false, version)),
            _ => false,
        };
        if let EventKind::Admitted { .. } = e.kind {
            admitted.insert(&e.run_id);
        }
    }
    let mut out = Vec::new();
    for (k, r) in log.iter().enumerate() {
        if let ClusterEvent::Wrote {
            from,
            thread,
            admitted: Some((run, trigger)),
            ..
        } = &r.what
            && !admitted.contains(run.as_str())
        {
            let kind = EventKind::Admitted {
                trigger: trigger.clone().into(),
            };
            out.push((k, witnessed(r, from, thread, run, kind)));
        }
        let ClusterEvent::Wrote {
            from,
            request,
            releases,
            thread,
            run,
            waits_on,
            version,
            ..
        } = &r.what
        else {
            continue;
        };
        let wait = match (*request, *releases) {
            ("wait", true) => true,
            ("await", _) => false,
            _ => continue,
        };
        let version = version.unwrap_or_default();
        if logged.contains(&(run.as_str(), wait, version)) {
            continue;
        }
        let calls = waits_on.iter().map(|c| c.as_str().into()).collect();
        let kind = match wait {
            true => EventKind::Waiting { calls, version },
            false => EventKind::Awaiting { calls, version },
        };
        out.push((k, witnessed(r, from, thread, run, kind)));
    }
    out
}

/// An event the store witnessed for `run`, as its worker would have logged it.
fn witnessed(r: &ClusterRecord, from: &str, thread: &str, run: &str, kind: EventKind) -> Event {
    Event {
        at: r.at,
        thread_id: thread.into(),
        run_id: run.into(),
        worker: Some(from.to_string()),
        kind,
    }
}

/// What a store transaction is known by: a client write's key, or a
/// lease's token (a takeover by the token it made stale).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Key<'a> {
    Write(&'a str),
    /// A run a run's end admitted for a leftover steer.
    Admit(&'a str),
    /// A run's wait, by the version it committed (T7).
    Wait(&'a str, u64),
    /// A run's end: its `failed` or `cancelled`, `lease_released` and `end`.
    Finish(&'a str),
    /// A worker's look for a steer for a run (by its log index): where its
    /// next `after_step` of the run decided (A3).
    Decide(&'a str, &'a str, usize),
    Lease(FencingToken),
    Stale(FencingToken),
    /// A client's cancel that reached a running or waiting run (K6).
    Cancel(&'a str),
}

/// For each event that reports a store transaction (by index), the place
/// the store applied it (the number of events recorded then) and the
/// transaction's place in the store's log.
fn client_writes(raw: &[Event], log: &[ClusterRecord]) -> BTreeMap<usize, (usize, usize)> {
    let mut places = Places::of(log);
    let ends = run_ends(raw);
    raw.iter()
        .enumerate()
        .filter_map(|(i, e)| {
            let thread = e.thread_id.as_str();
            if ends.contains(&i) {
                let (pos, seq) = *places.stored.get(&(thread, Key::Finish(&e.run_id)))?;
                return Some((i, (pos.min(i), seq)));
            }
            let key = places.key_of(i, e)?;
            let (pos, seq) = places.stored.remove(&(thread, key))?;
            Some((i, (pos.min(i), seq)))
        })
        .collect()
}

/// Where the store applied each transaction the events can report.
#[derive(Default)]
struct Places<'a> {
    /// For each (thread, key): the place the store applied it (events
    /// recorded then) and its rank in the store's log.
    stored: BTreeMap<(&'a str, Key<'a>), (usize, usize)>,
    // Each worker's looks for a run's steer, and its takes of one:
    // (place, log index), in order.
    looks: BTreeMap<(&'a str, &'a str), Vec<(usize, usize)>>,
    takes: BTreeMap<(&'a str, &'a str), Vec<(usize, usize)>>,
    // Each worker's claims of a run, the same way.
    claims: BTreeMap<(&'a str, &'a str), Vec<(usize, usize)>>,
}

impl<'a> Places<'a> {
    fn of(log: &'a [ClusterRecord]) -> Places<'a> {
        let mut p = Places::default();
        for (seq, r) in log.iter().enumerate() {
            p.mark(seq, r);
            if let Some((thread, key)) = record_key(seq, &r.what) {
                p.stored
                    .entry((thread, key))
                    .or_insert((r.after_event, 2 * seq + 1));
            }
        }
        p
    }

    /// What the `seq`th record tells besides its own key: a worker's look
    /// for a steer or take of one, a takeover's stale lease, the run a
    /// run's end admitted.
    fn mark(&mut self, seq: usize, r: &'a ClusterRecord) {
        match &r.what {
            ClusterEvent::Wrote {
                from,
                run,
                request: "take_steer",
                ..
            } => self
                .takes
                .entry((from, run))
                .or_default()
                .push((r.after_event, seq)),
            ClusterEvent::Stored {
                from,
                write: ClientWrite::SteerLook(run),
                ..
            } => self
                .looks
                .entry((from, run))
                .or_default()
                .push((r.after_event, seq)),
            ClusterEvent::Claimed {
                from,
                thread,
                run,
                takeover,
                ..
            } => {
                let claims = self.claims.entry((from, run)).or_default();
                claims.push((r.after_event, seq));
                // A takeover's event comes before the lease it took.
                if let Some(t) = takeover {
                    let key = (thread.as_str(), Key::Stale(t.token));
                    self.stored.insert(key, (r.after_event, 2 * seq));
                }
            }
            // The run a leftover steer started is admitted in the same write.
            ClusterEvent::Wrote {
                thread,
                request: "finish",
                releases: true,
                admitted: Some((next, _)),
                ..
            } => {
                let key = (thread.as_str(), Key::Admit(next));
                self.stored.insert(key, (r.after_event, 2 * seq + 1));
            }
            _ => {}
        }
    }

    /// The key the store applied the transaction event `e` (the `i`th)
    /// reports under, if it reports one.
    fn key_of(&self, i: usize, e: &'a Event) -> Option<Key<'a>> {
        let thread = e.thread_id.as_str();
        Some(match &e.kind {
            // The decision was made at the worker's last look before
            // it; a hand-over to a steer took the steer a moment later
            // (A4), at its last take. A taker's decision on the last
            // committed step looks for no steer (K3): one made before the
            // worker's last claim of the run is not this one's.
            EventKind::AfterStep { transition, .. } => {
                let from = e.worker.as_deref()?;
                let marks = match transition {
                    pai_runtime::event::Transition::Steer => &self.takes,
                    _ => &self.looks,
                };
                let key = (from, e.run_id.as_str());
                let last = |marks: &BTreeMap<_, Vec<(usize, usize)>>| {
                    let mine: &Vec<(usize, usize)> = marks.get(&key)?;
                    mine.iter().rev().find(|(pos, _)| *pos <= i).copied()
                };
                let look = last(marks)?;
                if last(&self.claims).is_some_and(|claim| claim.1 > look.1) {
                    return None;
                }
                Key::Decide(from, &e.run_id, look.1)
            }
            // A wait is known by the version it committed: a worker
            // may never hear of one wait and log the next.
            EventKind::Waiting { version, .. } => Key::Wait(&e.run_id, *version),
            EventKind::LeaseAcquired { token, .. } => Key::Lease(*token),
            EventKind::CancelRequested { .. } => Key::Cancel(&e.run_id),
            EventKind::TakenOver { stale_token, .. } => Key::Stale(*stale_token),
            EventKind::Admitted { trigger }
                if !self.stored.contains_key(&(thread, Key::Write(trigger))) =>
            {
                Key::Admit(&e.run_id)
            }
            kind => Key::Write(client_write(kind)?),
        })
    }
}

/// The thread and key of the `seq`th store log record, if it is a
/// transaction an event reports.
fn record_key(seq: usize, what: &ClusterEvent) -> Option<(&str, Key<'_>)> {
    Some(match what {
        ClusterEvent::Wrote {
            from,
            thread,
            run,
            request: "take_steer",
            ..
        }
        | ClusterEvent::Stored {
            thread,
            from,
            write: ClientWrite::SteerLook(run),
        } => (thread, Key::Decide(from, run, seq)),
        ClusterEvent::Stored {
            thread,
            write: ClientWrite::Message(key) | ClientWrite::Answer(key),
            ..
        } => (thread, Key::Write(key)),
        ClusterEvent::Stored {
            thread,
            write: ClientWrite::Cancel(Some(run)),
            ..
        } => (thread, Key::Cancel(run)),
        ClusterEvent::Claimed { thread, token, .. } => (thread, Key::Lease(*token)),
        ClusterEvent::Wrote {
            thread,
            run,
            request: "finish",
            releases: true,
            ..
        } => (thread, Key::Finish(run)),
        ClusterEvent::Wrote {
            thread,
            run,
            request: "wait",
            releases: true,
            version,
            ..
        } => (thread, Key::Wait(run, version.unwrap_or_default())),
        _ => return None,
    })
}

/// The events that report runs' ends: each `end`, and the `failed`,
/// `cancelled` and `lease_released` its worker logged for the run just
/// before it.
fn run_ends(raw: &[Event]) -> std::collections::BTreeSet<usize> {
    let mut pending: BTreeMap<(&str, Option<&str>), Vec<usize>> = BTreeMap::new();
    let mut out = std::collections::BTreeSet::new();
    for (i, e) in raw.iter().enumerate() {
        let key = (e.run_id.as_str(), e.worker.as_deref());
        match e.kind {
            EventKind::Failed { .. }
            | EventKind::Cancelled { .. }
            | EventKind::LeaseReleased { .. } => pending.entry(key).or_default().push(i),
            EventKind::Ended { .. } => {
                out.extend(pending.remove(&key).unwrap_or_default());
                out.insert(i);
            }
            _ => {
                pending.remove(&key);
            }
        }
    }
    out
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

/// For each cancel action (by its index among `actions`), the store log
/// record of its cancel: a thread's cancels reach the store in the order
/// the client made them.
pub fn cancel_records<'s>(
    actions: &[ActionRecord],
    cancel_on: impl Fn(&ActionRecord) -> Option<&'s str>,
    log: &[ClusterRecord],
) -> BTreeMap<usize, Option<usize>> {
    let mut cancels: BTreeMap<&str, std::collections::VecDeque<usize>> = BTreeMap::new();
    for (k, r) in log.iter().enumerate() {
        if let ClusterEvent::Stored {
            write: ClientWrite::Cancel(_),
            thread,
            ..
        } = &r.what
        {
            cancels.entry(thread.as_str()).or_default().push_back(k);
        }
    }
    actions
        .iter()
        .enumerate()
        .filter_map(|(i, a)| {
            let thread = cancel_on(a)?;
            // A cancel the simulator refused itself never reached the store.
            let record = cancels.get_mut(thread).filter(|_| a.reached);
            Some((i, record.and_then(|q| q.pop_front())))
        })
        .collect()
}

/// Moves each client action to its place in the linear log: a cancel to
/// where the store applied it (one that never reached the store, to where
/// it began), any other action to where its answer came.
pub fn place_actions(
    actions: &mut [ActionRecord],
    cancels: &BTreeMap<usize, Option<usize>>,
    linear: &Linear,
) {
    for (i, a) in actions.iter_mut().enumerate() {
        let placed = match cancels.get(&i) {
            Some(Some(k)) => linear.records.get(k),
            Some(None) => linear.starts.get(a.before_event),
            None => linear.places.get(a.after_event),
        };
        a.after_event = placed.copied().unwrap_or(a.after_event);
    }
}
