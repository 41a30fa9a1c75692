//! Worker lanes, when several workers share a store: on each worker's lane
//! the faults that hit it (at their virtual time, in the scenario format's
//! `at_ms` words), how long each lasted, the episodes it held (copied from
//! the run lanes, named by run), and what it did without the lease: its
//! events the run's story leaves out (the raw per-worker log less the
//! linear one) and its writes the store refused as stale (SPEC K2).

use std::collections::BTreeMap;

use pai_runtime::Event;

use super::axis::{Pos, Ranker};
use super::model::{Item, Kind, Row, ThreadLanes, WorkerLane};
use super::rows::pack;
use super::stream::{Placed, What, fault_effect, fault_label};
use crate::oracle::ClusterObs;
use crate::scenario::{Cluster, FaultAction};
use crate::transcript::describe;
use crate::world::{ClusterEvent, ClusterRecord};

/// One lane per worker of `cluster`, in file order.
pub(super) fn collect(
    cluster: &Cluster,
    obs: &ClusterObs,
    linear: &[Event],
    placed: &[Placed<'_>],
    threads: &[ThreadLanes],
) -> Vec<WorkerLane> {
    let end = placed.last().map(|p| p.pos).unwrap_or_default();
    let stale = stale(obs, linear);
    cluster
        .workers
        .iter()
        .zip(&cluster.starts)
        .map(|(name, start)| {
            let faults = faults(name, placed);
            let held = held(name, threads);
            let summary = format!(
                "starts looking for work at {start} ms · held {} episode(s) · {} fault(s)",
                held.len(),
                faults.len()
            );
            let outages = outages(&faults, end);
            let own: Vec<Item> = stale
                .iter()
                .filter(|i| i.worker.as_deref() == Some(name))
                .cloned()
                .collect();
            let mut rows = vec![Row {
                name: "faults".to_string(),
                class: "flat",
                items: faults.into_iter().map(|(_, i)| i).collect(),
            }];
            // Rows that would stay empty are left out.
            if !outages.is_empty() {
                rows.extend(pack("outages", "spans", outages));
            }
            rows.extend(pack("episodes held", "spans", held));
            if !own.is_empty() {
                rows.push(Row {
                    name: "without the lease".to_string(),
                    class: "flat",
                    items: own,
                });
            }
            WorkerLane {
                name: name.clone(),
                summary,
                rows,
            }
        })
        .collect()
}

/// The faults that hit `worker`, as marks.
fn faults(worker: &str, placed: &[Placed<'_>]) -> Vec<(FaultAction, Item)> {
    placed
        .iter()
        .filter_map(|p| match p.what {
            What::Fault { action, worker: w } if w == worker => {
                let label = fault_label(action, p.pos.at);
                let detail = format!("fault: {label} {worker}\n{}", fault_effect(action));
                let mut item = Item::new(Kind::Fault, "fault", (p.pos, None), label, detail);
                item.worker = Some(worker.to_string());
                item.data.push(("fault", action.as_str().to_string()));
                Some((action, item))
            }
            _ => None,
        })
        .collect()
}

/// What a fault begins, and the fault that ends it.
fn outage(action: FaultAction) -> Option<(&'static str, FaultAction)> {
    match action {
        FaultAction::Crash => Some(("down", FaultAction::Restart)),
        FaultAction::Partition => Some(("cut off", FaultAction::Heal)),
        FaultAction::Hold => Some(("held", FaultAction::Release)),
        FaultAction::Pause => Some(("paused", FaultAction::Resume)),
        _ => None,
    }
}

/// A span from each fault that begins an outage to the fault that ends it
/// (or to the end of the timeline). A fault that begins an outage already
/// under way (a second crash before the restart) is noted in it.
fn outages(faults: &[(FaultAction, Item)], end: Pos) -> Vec<Item> {
    let mut spans: Vec<Item> = Vec::new();
    // The open outage of each kind: what ends it, and its span.
    let mut open: Vec<(FaultAction, usize)> = Vec::new();
    for (action, f) in faults {
        if let Some(j) = open.iter().position(|(until, _)| until == action) {
            let (_, i) = open.remove(j);
            spans[i].end = Some(f.start);
            spans[i].label.push_str(&format!(" → {})", f.label));
            continue;
        }
        let Some((what, until)) = outage(*action) else {
            continue;
        };
        if let Some(&(_, i)) = open.iter().find(|(u, _)| *u == until) {
            spans[i].detail.push_str(&format!("\nagain: {}", f.label));
            continue;
        }
        let label = format!("{what} ({}", f.label);
        let detail = format!("{what} from {}\n{}", f.label, f.detail);
        let mut item = Item::new(Kind::Outage, "fault", (f.start, Some(end)), label, detail);
        item.worker = f.worker.clone();
        open.push((until, spans.len()));
        spans.push(item);
    }
    for (_, i) in open {
        spans[i].label.push_str(" → the end)");
    }
    spans
}

/// The episodes `worker` held, from the run lanes, each named by its run.
fn held(worker: &str, threads: &[ThreadLanes]) -> Vec<Item> {
    let mut items: Vec<Item> = threads
        .iter()
        .flat_map(|t| &t.runs)
        .flat_map(|r| {
            r.rows
                .iter()
                .flat_map(|row| &row.items)
                .filter(|i| i.kind == Kind::Episode && i.worker.as_deref() == Some(worker))
                .map(|i| {
                    let mut held = i.clone();
                    held.kind = Kind::Held;
                    held.label = format!("{} · {}", r.run, i.label);
                    held.data.push(("run", r.run.clone()));
                    held
                })
        })
        .collect();
    items.sort_by_key(|i| i.start);
    items
}

/// Each worker's events that the run's story leaves out, and its writes
/// the store refused, in the order they happened (ranked on their own).
fn stale(obs: &ClusterObs, linear: &[Event]) -> Vec<Item> {
    let kept = kept(&obs.raw_events, linear);
    let mut ranker = Ranker::default();
    let mut items = Vec::new();
    let mut log = obs.log.iter().peekable();
    for (i, e) in obs.raw_events.iter().enumerate() {
        while let Some(r) = log.next_if(|r| r.after_event <= i) {
            items.extend(refused(r, &mut ranker));
        }
        if !kept[i] {
            items.push(left_out(e, ranker.next(e.at)));
        }
    }
    for r in log {
        items.extend(refused(r, &mut ranker));
    }
    items
}

/// For each raw event, whether the linear log keeps it (as many of equal
/// events as it holds).
fn kept(raw: &[Event], linear: &[Event]) -> Vec<bool> {
    type Key<'a> = (u64, &'a str, Option<&'a str>);
    let mut left: BTreeMap<Key<'_>, Vec<&Event>> = BTreeMap::new();
    for e in linear {
        let key = (e.at, e.run_id.as_str(), e.worker.as_deref());
        left.entry(key).or_default().push(e);
    }
    raw.iter()
        .map(|e| {
            let key = (e.at, e.run_id.as_str(), e.worker.as_deref());
            let Some(bucket) = left.get_mut(&key) else {
                return false;
            };
            match bucket.iter().position(|l| *l == e) {
                Some(j) => {
                    bucket.remove(j);
                    true
                }
                None => false,
            }
        })
        .collect()
}

/// A worker's event left out of its run's story.
fn left_out(e: &Event, pos: Pos) -> Item {
    let worker = e.worker.clone().unwrap_or_default();
    let label = format!("{} {}", e.run_id, e.kind.name());
    let detail = format!(
        "{} {}\nleft out of the run's story: {worker} no longer held the run's lease",
        e.run_id,
        describe(&e.kind)
    );
    let mut item = Item::new(Kind::Stale, "stale", (pos, None), label, detail);
    item.worker = e.worker.clone();
    item.data.push(("run", e.run_id.to_string()));
    item
}

/// A write the store refused as stale, on its worker's lane.
fn refused(r: &ClusterRecord, ranker: &mut Ranker) -> Option<Item> {
    let ClusterEvent::Refused {
        from,
        request,
        run,
        given,
        current,
        ..
    } = &r.what
    else {
        return None;
    };
    let why = match given == current {
        true => format!("token {given} no longer holds the lease"),
        false => format!("stale token {given} (current {current})"),
    };
    let label = format!("refused {request} {run}");
    let detail = format!("the store refused {request} of {run} from {from}: {why}");
    let mut item = Item::new(
        Kind::Stale,
        "refused",
        (ranker.next(r.at), None),
        label,
        detail,
    );
    item.worker = Some(from.clone());
    item.data.push(("run", run.clone()));
    Some(item)
}

#[cfg(test)]
mod tests {
    use pai_runtime::event::EventKind;

    use super::*;

    fn renewal(at: u64, worker: &str) -> Event {
        Event {
            at,
            thread_id: "t".into(),
            run_id: "r".into(),
            worker: Some(worker.into()),
            kind: EventKind::LeaseRenewed {
                version: 1,
                token: 1.into(),
            },
        }
    }

    #[test]
    fn the_raw_log_less_the_linear_one_counts_equal_events() {
        let raw = [
            renewal(1, "w1"),
            renewal(1, "w1"),
            renewal(2, "w2"),
            renewal(3, "w1"),
        ];
        let linear = [renewal(1, "w1"), renewal(3, "w1")];
        assert_eq!(kept(&raw, &linear), [true, false, false, true]);
    }

    fn fault(action: FaultAction, at: u64) -> (FaultAction, Item) {
        let pos = Pos { at, rank: 0 };
        let label = fault_label(action, at);
        let item = Item::new(Kind::Fault, "fault", (pos, None), label, String::new());
        (action, item)
    }

    #[test]
    fn an_outage_lasts_until_the_fault_that_ends_it_or_the_end() {
        let faults = [
            fault(FaultAction::Crash, 10),
            fault(FaultAction::Partition, 20),
            fault(FaultAction::Crash, 25),
            fault(FaultAction::Restart, 30),
            fault(FaultAction::Restart, 40),
        ];
        let end = Pos { at: 99, rank: 0 };
        let spans = outages(&faults, end);
        let seen: Vec<(&str, u64, u64)> = spans
            .iter()
            .map(|s| (s.label.as_str(), s.start.at, s.end.map_or(0, |e| e.at)))
            .collect();
        assert_eq!(
            seen,
            [
                ("down (crash at_ms=10 → restart at_ms=30)", 10, 30),
                ("cut off (partition at_ms=20 → the end)", 20, 99),
            ]
        );
        assert!(spans[0].detail.contains("again: crash at_ms=25"));
    }
}
