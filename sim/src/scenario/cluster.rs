//! Workers and timed faults, checked (SPEC K2, K3, K5): the names a fault
//! uses exist, times fall inside the scenario, and the faults become one
//! schedule of actions in time order.

use super::field::{CheckError, Segment, fail};
use super::spec::{ClusterSpec, FaultSpec, WorkerSpec};

/// Host names a worker may not take: the store's and the clients'.
const RESERVED_HOSTS: [&str; 2] = ["store", "client"];

/// Several workers on one store.
#[derive(Debug, Clone, PartialEq)]
pub struct Cluster {
    /// Worker names, in file order.
    pub workers: Vec<String>,
    /// When each worker starts looking for work, by its index.
    pub starts: Vec<u64>,
    pub settings: ClusterSpec,
    /// What happens to workers and links, in time order (file order at one time).
    pub schedule: Vec<Timed>,
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
}

/// One thing the simulator does to the system at a virtual time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timed {
    pub at: u64,
    pub action: FaultAction,
    /// The worker it acts on.
    pub worker: String,
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
    /// When the last fault ends (0 with none): the liveness phase starts here.
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
    let mut bugs = StoreBugs::default();
    for (i, f) in acting {
        let at = [Segment::Key("faults"), Segment::Index(i)];
        match f {
            FaultSpec::AcceptStale => bugs.accept_stale = true,
            FaultSpec::RefuseTakeover => bugs.refuse_takeover = true,
            _ => timed(f, &names, time_limit_ms, &at, &mut schedule)?,
        }
    }
    schedule.sort_by_key(|t| t.at);
    Ok(Some(Cluster {
        starts: workers.iter().map(|w| w.start_ms).collect(),
        workers: names,
        settings,
        schedule,
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

/// A timed fault's start and end, added to the schedule.
fn timed(
    f: &FaultSpec,
    names: &[String],
    time_limit_ms: u64,
    at: &[Segment],
    schedule: &mut Vec<Timed>,
) -> Result<(), CheckError> {
    let (worker, start, length, (begin, end)) = match f {
        FaultSpec::Crash {
            worker,
            at_ms,
            restart_after_ms,
        } => (
            worker,
            *at_ms,
            *restart_after_ms,
            (FaultAction::Crash, FaultAction::Restart),
        ),
        FaultSpec::Partition {
            worker,
            at_ms,
            heal_after_ms,
        } => (
            worker,
            *at_ms,
            Some(*heal_after_ms),
            (FaultAction::Partition, FaultAction::Heal),
        ),
        FaultSpec::Hold {
            worker,
            at_ms,
            release_after_ms,
        } => (
            worker,
            *at_ms,
            Some(*release_after_ms),
            (FaultAction::Hold, FaultAction::Release),
        ),
        FaultSpec::Pause {
            worker,
            at_ms,
            for_ms,
        } => (
            worker,
            *at_ms,
            Some(*for_ms),
            (FaultAction::Pause, FaultAction::Resume),
        ),
        _ => return Ok(()),
    };
    if !names.contains(worker) {
        let mut at = at.to_vec();
        at.push(Segment::Key("worker"));
        return fail(&at, format!("no worker is named {worker:?}"));
    }
    if start + length.unwrap_or(0) >= time_limit_ms {
        return fail(at, "the fault must end before the scenario's time_limit_ms");
    }
    let push = |schedule: &mut Vec<Timed>, at, action| {
        schedule.push(Timed {
            at,
            action,
            worker: worker.clone(),
        });
    };
    push(schedule, start, begin);
    if let Some(length) = length {
        push(schedule, start + length, end);
    }
    Ok(())
}
