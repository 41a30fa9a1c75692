//! Workers and their faults, checked (SPEC K2, K3, K5): the names a fault
//! uses exist, times fall inside the scenario, and the faults become one
//! schedule of actions in time order, beside the faults placed at a store
//! request (carried out when that request arrives).

use super::field::{CheckError, Segment, fail};
use super::spec::{ClusterSpec, FaultSpec, RequestAt, WorkerSpec};

/// Host names a worker may not take: the store's and the clients'.
const RESERVED_HOSTS: [&str; 2] = ["store", "client"];

/// Several workers on one store.
#[derive(Debug, Clone, PartialEq)]
pub struct Cluster {
    /// Worker names, in file order.
    pub workers: Vec<String>,
    /// When each worker starts looking for work, by its index.
    pub starts: Vec<u64>,
    /// Lease and network settings (`[cluster]`), defaults filled in.
    pub settings: ClusterSpec,
    /// What happens to workers and links, in time order (file order at one time).
    pub schedule: Vec<Timed>,
    /// Faults placed at a store request, in file order.
    pub placed: Vec<Placed>,
    /// Bugs planted in the store (SPEC D5).
    pub bugs: StoreBugs,
}

/// Bugs a violation scenario plants in the store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreBugs {
    /// Run writes land whatever their token (K2 forbids it).
    pub accept_stale: bool,
    /// A run whose lease expired is never taken over (K3 needs it).
    pub refuse_takeover: bool,
    /// A takeover's claim says the run was cancelled (K3 forbids it).
    pub cancel_on_takeover: bool,
}

/// One thing the simulator does to the system at a virtual time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timed {
    pub at: u64,
    pub action: FaultAction,
    /// The worker it acts on.
    pub worker: String,
}

/// A fault placed at a store request: when the store receives the `nth`
/// request of kind `request` from worker `by`, `action` happens to
/// `worker`, and `end` follows `length` ms later (never, without one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// The fault's index in the scenario's `faults`.
    pub fault: usize,
    pub by: String,
    pub request: &'static str,
    pub nth: usize,
    /// The store drops the request unapplied and unanswered.
    pub lost: bool,
    pub action: FaultAction,
    pub end: FaultAction,
    pub worker: String,
    pub length: Option<u64>,
}

impl Placed {
    /// Where the fault happened, for the transcript: "at its wait #1, its
    /// answer in flight", "at w1's claim #2, the request lost".
    pub fn describe(&self) -> String {
        let what = match self.lost {
            true => "the request lost",
            false => "its answer in flight",
        };
        format!("{}, {what}", self.at())
    }

    /// The request it is placed at: "at its wait #1", "at w1's claim #2".
    pub fn at(&self) -> String {
        let whose = match self.by == self.worker {
            true => "its".to_string(),
            false => format!("{}'s", self.by),
        };
        format!("at {whose} {} #{}", self.request, self.nth)
    }
}

/// What happens to a worker or its link to the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultAction {
    Crash,
    Restart,
    Partition,
    Heal,
    Hold,
    Release,
    Pause,
    Resume,
}

impl FaultAction {
    pub fn as_str(self) -> &'static str {
        match self {
            FaultAction::Crash => "crash",
            FaultAction::Restart => "restart",
            FaultAction::Partition => "partition",
            FaultAction::Heal => "heal",
            FaultAction::Hold => "hold",
            FaultAction::Release => "release",
            FaultAction::Pause => "pause",
            FaultAction::Resume => "resume",
        }
    }
}

impl Cluster {
    /// When the last timed fault ends (0 with none): the liveness phase
    /// starts here at the earliest (faults placed at a request move it on
    /// when they fire).
    pub fn healed_at(&self) -> u64 {
        self.schedule.iter().map(|t| t.at).max().unwrap_or(0)
    }
}

/// Checks the workers, their settings and the faults that act on them.
pub(super) fn cluster(
    workers: &[WorkerSpec],
    settings: Option<ClusterSpec>,
    faults: &[FaultSpec],
    time_limit_ms: u64,
) -> Result<Option<Cluster>, CheckError> {
    let acting = faults.iter().enumerate().filter(|(_, f)| f.is_cluster());
    if workers.is_empty() {
        if settings.is_some() {
            return fail(&[Segment::Key("cluster")], "needs [[workers]]");
        }
        if let Some((i, _)) = acting.clone().next() {
            let at = [Segment::Key("faults"), Segment::Index(i)];
            return fail(&at, "this fault acts on workers: declare [[workers]]");
        }
        return Ok(None);
    }
    if let Some(i) = faults
        .iter()
        .position(|f| *f == FaultSpec::IgnoreExpectations)
    {
        let at = [Segment::Key("faults"), Segment::Index(i)];
        return fail(
            &at,
            "this fault plants a bug in the one-process store: not available with [[workers]]",
        );
    }
    let names = worker_names(workers)?;
    let settings = settings.unwrap_or_default();
    if settings.renew_ms.is_some_and(|r| r >= settings.lease_ms) {
        let at = [Segment::Key("cluster"), Segment::Key("renew_ms")];
        return fail(
            &at,
            "must be less than lease_ms, or the lease expires between renewals",
        );
    }
    let mut schedule = Vec::new();
    let mut placed = Vec::new();
    let mut bugs = StoreBugs::default();
    for (i, f) in acting {
        let at = [Segment::Key("faults"), Segment::Index(i)];
        match f {
            FaultSpec::AcceptStale => bugs.accept_stale = true,
            FaultSpec::RefuseTakeover => bugs.refuse_takeover = true,
            FaultSpec::CancelOnTakeover => bugs.cancel_on_takeover = true,
            _ => {
                let Some(w) = WorkerFault::of(f) else {
                    continue;
                };
                match w.place(&names, time_limit_ms, &at)? {
                    Place::Time(start) => w.schedule(start, &mut schedule),
                    Place::Request(r) => placed.push(w.placed(i, r)),
                }
            }
        }
    }
    schedule.sort_by_key(|t| t.at);
    Ok(Some(Cluster {
        starts: workers.iter().map(|w| w.start_ms).collect(),
        workers: names,
        settings,
        schedule,
        placed,
        bugs,
    }))
}

fn worker_names(workers: &[WorkerSpec]) -> Result<Vec<String>, CheckError> {
    let mut names: Vec<String> = Vec::new();
    for (i, w) in workers.iter().enumerate() {
        let at = [
            Segment::Key("workers"),
            Segment::Index(i),
            Segment::Key("name"),
        ];
        if RESERVED_HOSTS.contains(&w.name.as_str()) {
            return fail(&at, format!("{:?} is the name of another host", w.name));
        }
        if names.contains(&w.name) {
            return fail(&at, format!("a second worker named {:?}", w.name));
        }
        names.push(w.name.clone());
    }
    Ok(names)
}

/// A worker fault as written: whom it acts on, where it is placed, how
/// long it lasts, and its start and end actions.
struct WorkerFault<'a> {
    worker: &'a String,
    at_ms: Option<u64>,
    at: Option<&'a RequestAt>,
    length: Option<u64>,
    actions: (FaultAction, FaultAction),
}

/// Where a checked worker fault happens.
enum Place<'a> {
    Time(u64),
    Request(&'a RequestAt),
}

impl<'a> WorkerFault<'a> {
    fn of(f: &'a FaultSpec) -> Option<WorkerFault<'a>> {
        use FaultAction as A;
        let (worker, at_ms, at, length, actions) = match f {
            FaultSpec::Crash {
                worker,
                at_ms,
                at,
                restart_after_ms,
            } => (worker, at_ms, at, *restart_after_ms, (A::Crash, A::Restart)),
            FaultSpec::Partition {
                worker,
                at_ms,
                at,
                heal_after_ms,
            } => (
                worker,
                at_ms,
                at,
                Some(*heal_after_ms),
                (A::Partition, A::Heal),
            ),
            FaultSpec::Hold {
                worker,
                at_ms,
                at,
                release_after_ms,
            } => (
                worker,
                at_ms,
                at,
                Some(*release_after_ms),
                (A::Hold, A::Release),
            ),
            FaultSpec::Pause {
                worker,
                at_ms,
                at,
                for_ms,
            } => (worker, at_ms, at, Some(*for_ms), (A::Pause, A::Resume)),
            _ => return None,
        };
        Some(WorkerFault {
            worker,
            at_ms: *at_ms,
            at: at.as_ref(),
            length,
            actions,
        })
    }

    /// Checks the names the fault uses and where it is placed.
    fn place(
        &self,
        names: &[String],
        time_limit_ms: u64,
        at: &[Segment],
    ) -> Result<Place<'a>, CheckError> {
        let field = |key: &'static str| {
            let mut at = at.to_vec();
            at.push(Segment::Key(key));
            at
        };
        if !names.contains(self.worker) {
            let worker = self.worker;
            return fail(&field("worker"), format!("no worker is named {worker:?}"));
        }
        let length = self.length.unwrap_or(0);
        match (self.at_ms, self.at) {
            (Some(_), Some(_)) => fail(at, "give at_ms (a time) or at (a store request), not both"),
            (None, None) => fail(at, "give at_ms (a time) or at (a store request)"),
            (Some(start), None) if start + length >= time_limit_ms => {
                fail(at, "the fault must end before the scenario's time_limit_ms")
            }
            (Some(start), None) => Ok(Place::Time(start)),
            (None, Some(_)) if length >= time_limit_ms => fail(
                at,
                "the fault must last less than the scenario's time_limit_ms",
            ),
            (None, Some(r)) => {
                request_at(r, names, &field("at"))?;
                Ok(Place::Request(r))
            }
        }
    }

    /// A timed fault's start and end, added to the schedule.
    fn schedule(&self, start: u64, schedule: &mut Vec<Timed>) {
        let (begin, end) = self.actions;
        let mut push = |at, action| {
            schedule.push(Timed {
                at,
                action,
                worker: self.worker.clone(),
            });
        };
        push(start, begin);
        if let Some(length) = self.length {
            push(start + length, end);
        }
    }

    /// The fault placed at request `r`.
    fn placed(&self, fault: usize, r: &RequestAt) -> Placed {
        Placed {
            fault,
            by: r.worker.clone().unwrap_or_else(|| self.worker.clone()),
            request: kind(&r.request).unwrap_or("?"),
            nth: r.nth,
            lost: r.lost,
            action: self.actions.0,
            end: self.actions.1,
            worker: self.worker.clone(),
            length: self.length,
        }
    }
}

/// The store's name for a request kind (one of the runtime's list).
fn kind(name: &str) -> Option<&'static str> {
    pai_runtime::store::StoreRequest::KINDS
        .iter()
        .copied()
        .find(|k| *k == name)
}

/// Checks a request placement: its worker, its kind and its count.
fn request_at(r: &RequestAt, names: &[String], at: &[Segment]) -> Result<(), CheckError> {
    let field = |key: &'static str| {
        let mut at = at.to_vec();
        at.push(Segment::Key(key));
        at
    };
    if let Some(w) = &r.worker
        && !names.contains(w)
    {
        return fail(&field("worker"), format!("no worker is named {w:?}"));
    }
    if kind(&r.request).is_none() {
        let kinds = pai_runtime::store::StoreRequest::KINDS.join(", ");
        let message = format!(
            "no store request is of kind {:?}; the kinds: {kinds}",
            r.request
        );
        return fail(&field("request"), message);
    }
    if r.nth == 0 {
        return fail(&field("nth"), "counts from 1");
    }
    Ok(())
}

#[cfg(test)]
#[path = "cluster_tests.rs"]
mod tests;
