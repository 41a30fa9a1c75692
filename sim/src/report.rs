//! What one run reports: the oracles' verdicts and the transcript over its
//! observations, after the planted faults edit them.

use pai_runtime::{
    Event,
    event::{EventKind, LiveEvent, RunStage},
    store::StoredThread,
};

use crate::faults;
use crate::oracle::{self, ClusterObs, Observations, Violation};
use crate::scenario::Scenario;
use crate::transcript;
use crate::twin::Twin;
use crate::world::{Plan, ScriptedProvider};

/// A scenario that could not be run at all.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The simulated runtime (or the store of the kind asked for) could not be
    /// built; the message says why.
    #[error("cannot start the simulated runtime: {0}")]
    Setup(String),
}

/// One run of a scenario, observed and not yet judged.
#[derive(Debug)]
pub(crate) struct Ran {
    pub(crate) obs: Observations,
    pub(crate) notes: Vec<String>,
    /// Timeline entries placed after a moment that never came: their
    /// index in the timeline, and why.
    pub(crate) missed: Vec<(usize, String)>,
    /// Notes on scripted turns the run never used.
    pub(crate) unused: Vec<String>,
    pub(crate) virtual_ms: u64,
    /// Which answer each call of the world's answering sources got.
    pub(crate) plan: Plan,
}

/// The result of one run.
#[derive(Debug, Clone)]
pub struct Report {
    /// The run's transcript: the text its snapshot holds (see
    /// [`snapshot::locate`](crate::snapshot::locate)), the same for every run
    /// with the same seed (SPEC D4).
    pub transcript: String,
    /// Model steps committed, over all runs.
    pub steps: u32,
    /// Virtual time when the scenario went idle.
    pub virtual_ms: u64,
    /// Every invariant the oracles found broken, in the order the transcript
    /// lists them under `== oracles ==`; empty when all is quiet.
    pub violations: Vec<Violation>,
    /// Every stored thread at the end, as trusted code sees it.
    pub threads: Vec<StoredThread>,
    /// The runtime's event log, as the oracles read it.
    pub events: Vec<Event>,
    /// What each watcher received, in order.
    pub live: Vec<(String, LiveEvent)>,
    /// The scenario was stopped at its virtual-time limit before it went idle.
    pub limit_reached: bool,
    /// Planted faults that found nothing to change, as notes.
    pub idle_faults: Vec<String>,
    /// Timeline entries placed after a moment of a run that never came
    /// (each also a note): the scenario did not test what it says.
    pub missed: Vec<String>,
    /// Worker faults placed at a store request that never came (or came
    /// only after the runs settled), each naming the fault: the scenario
    /// did not test what it placed them for.
    pub unfired_faults: Vec<String>,
    /// The runtime's own step loop panicked (a runtime bug, caught).
    pub runtime_panicked: bool,
    /// With several workers: every worker's own events and the store's and
    /// the simulator's log (faults), as the transcript shows them; the HTML
    /// timeline reads them.
    pub(crate) cluster: Option<ClusterObs>,
    /// The fault-free twin the run was judged against, if it has runtime
    /// faults: a second run of the scenario and seed is judged against the
    /// same (D4).
    pub(crate) twin: Twin,
    /// How the run fared against its twin, as the fuzz report counts it
    /// (`judged`, or why not); `None` without runtime faults.
    pub(crate) twin_counter: Option<&'static str>,
}

impl Report {
    /// Whether a watcher among workers was told the version a worker's
    /// claim committed (the store's change feed at work).
    pub fn watched_among_workers(&self) -> bool {
        self.cluster.is_some()
            && self.live.iter().any(|(_, e)| {
                let pai_runtime::event::LiveEvent::Committed { version, .. } = e else {
                    return false;
                };
                self.events.iter().any(|ev| {
                    ev.worker.is_some()
                        && matches!(ev.kind, EventKind::LeaseAcquired { version: v, .. } if v == *version)
                })
            })
    }

    /// Whether a fault placed at a worker's renewal fired while that worker
    /// had decided a call and not started it: the renewal that confirms
    /// its lease just before tools start (issue 25, K3).
    pub fn faulted_before_tools(&self) -> bool {
        let Some(c) = &self.cluster else {
            return false;
        };
        c.log.iter().any(|r| {
            let crate::world::ClusterEvent::Fault {
                worker,
                placed: Some(placed),
                ..
            } = &r.what
            else {
                return false;
            };
            let upto = r.after_event.min(c.raw_events.len());
            placed.contains("renew")
                && c.raw_events[..upto]
                    .iter()
                    .rev()
                    .find(|e| e.worker.as_deref() == Some(worker.as_str()))
                    .is_some_and(|e| matches!(e.kind, EventKind::BeforeToolCall { .. }))
        })
    }

    /// The faults carried out among workers, by name (`crash`, `heal`,
    /// ...), in the order they happened.
    pub fn faults_carried_out(&self) -> Vec<&'static str> {
        let Some(c) = &self.cluster else {
            return Vec::new();
        };
        c.log
            .iter()
            .filter_map(|r| match &r.what {
                crate::world::ClusterEvent::Fault { action, .. } => Some(action.as_str()),
                _ => None,
            })
            .collect()
    }

    /// Whether a fault placed at a store request fired (with workers).
    pub fn fired_at_request(&self) -> bool {
        self.cluster.as_ref().is_some_and(|c| {
            c.log.iter().any(|r| {
                matches!(
                    &r.what,
                    crate::world::ClusterEvent::Fault {
                        placed: Some(_),
                        ..
                    }
                )
            })
        })
    }
}

/// Notes on the scripts' turns a run never used.
pub(crate) fn unused_turns(provider: &ScriptedProvider) -> Vec<String> {
    let mut notes = Vec::new();
    for m in provider.scripts() {
        let unused = m.unused_turns();
        if unused > 0 {
            notes.push(format!(
                "{unused} turn(s) of script {} were never used",
                m.script()
            ));
        }
    }
    notes
}

/// The oracles (the fault-free twin's comparison among them), the
/// transcript and the report over one run's observations, after the
/// planted faults edit them.
pub(crate) fn report(s: &Scenario, seed: u64, ran: Ran, twin: Twin) -> Report {
    let Ran {
        mut obs,
        mut notes,
        missed,
        unused,
        virtual_ms,
        ..
    } = ran;
    let mut idle_faults = Vec::new();
    let unfired_faults = unfired(s, seed, obs.cluster.as_ref(), &mut notes);
    for (i, fault) in s.faults.iter().enumerate() {
        match faults::plant(fault, &mut obs) {
            Ok(note) => notes.push(note),
            Err(note) => {
                idle_faults.push(format!("faults[{i}]: {note}"));
                notes.push(note);
            }
        }
    }
    notes.extend(unused);
    let observed = obs.view(s, seed);
    let mut verdicts = oracle::check_all(&observed);
    let missed_at: Vec<usize> = missed.iter().map(|(i, _)| *i).collect();
    let judgement = crate::twin::judge(&twin, (&observed, &missed_at), &mut verdicts);
    let transcript = transcript::render(&observed, &verdicts, &notes);
    let runtime_panicked = obs.events.iter().any(|e| {
        matches!(
            e.kind,
            EventKind::Failed {
                phase: RunStage::Runtime,
                ..
            }
        )
    });
    Report {
        transcript,
        steps: obs
            .threads
            .iter()
            .flat_map(|t| &t.runs)
            .map(|r| r.steps)
            .sum(),
        virtual_ms,
        violations: verdicts.violations,
        threads: obs.threads,
        events: obs.events,
        live: obs.live,
        limit_reached: obs.cut_short,
        idle_faults,
        missed: missed.into_iter().map(|(_, why)| why).collect(),
        unfired_faults,
        runtime_panicked,
        cluster: obs.cluster,
        twin,
        twin_counter: judgement.map(|j| j.counter),
    }
}

/// The worker faults placed at a store request that never fired, each
/// named by its index in the file's `faults` (worker faults included,
/// unlike the checked scenario's planted faults), and noted in the
/// transcript. Judged only under the scenario's own seed: another seed
/// may interleave the workers so that the request never comes, and that
/// run is a pure oracle check (no snapshot is compared either).
fn unfired(
    s: &Scenario,
    seed: u64,
    cluster: Option<&ClusterObs>,
    notes: &mut Vec<String>,
) -> Vec<String> {
    let Some(c) = cluster else {
        return Vec::new();
    };
    let own = seed == s.seed;
    let mut out = Vec::new();
    for (i, why) in &c.unfired {
        match own {
            true => {
                notes.push(why.clone());
                out.push(format!("faults[{i}]: {why}"));
            }
            false => notes.push(format!(
                "{why} (not judged under a seed other than {})",
                s.seed
            )),
        }
    }
    out
}
