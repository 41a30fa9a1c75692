//! What the store did that the world needs while the simulation goes on,
//! read off each request and its answer as the store applied it (the
//! one-process store tap and the store host among workers both report
//! here): which runs were admitted, in each thread's order (so a scripted
//! model can name a run the same way in two runs of one scenario whose
//! ids differ), and the milestones a timeline entry may be placed after
//! (`after = { run = N, event = ... }`: a step committed, a wait, an end).
//! Written again from the protocol's types; it only records.

use std::collections::BTreeMap;
use std::sync::Mutex;

use pai_runtime::{
    StoreError,
    store::{
        AdminOp, AdminReply, CancelTarget, ClientOp, ClientReply, FacadeOp, FacadeReply, Finish,
        Op, RunOp, RunReply, StoreReply, StoreRequest, Submitted,
    },
};

use super::lock::lock;

/// A run named the same way in every run of one scenario: its thread and
/// its place (from 1) among the runs the store admitted on that thread,
/// incarnations included.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunPlace {
    /// The thread's id (the name the scenario gives it).
    pub thread: String,
    /// The run's place among the thread's admitted runs, from 1.
    pub nth: usize,
}

/// A moment of a run's life the store applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Milestone {
    /// The commit of model step `k` (from 0).
    CommitStep(u32),
    /// The run's wait was recorded (its lease released).
    Wait,
    /// The run's end was recorded (finished, cancelled while queued, or
    /// ended by a deletion).
    End,
}

/// What a request asked, kept until its answer says what it did.
#[derive(Debug)]
enum Asked {
    Submit,
    Regenerate(String),
    RunWrite { run: String, milestone: Milestone },
    AdminFinish(String),
    Cancel,
    Delete,
}

/// The store's admissions and milestones, shared by the world.
#[derive(Debug, Default)]
pub struct StoreWatch {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Every admitted run's place.
    runs: BTreeMap<String, RunPlace>,
    /// Runs admitted per thread so far.
    admitted: BTreeMap<String, usize>,
    /// Every milestone, in the order the store applied them: (thread, run, what).
    milestones: Vec<(String, String, Milestone)>,
}

/// What a request may turn out to have done, read before the store
/// takes it (a request is moved into the store).
#[derive(Debug)]
pub struct Pending(Option<(String, Asked)>);

impl StoreWatch {
    /// What `request` asks, to be noted with its answer by [`StoreWatch::note`].
    pub fn ask(request: &StoreRequest) -> Pending {
        Pending(asked(request))
    }

    /// Notes what a request did, by its answer.
    pub fn note(&self, pending: Pending, reply: &Result<StoreReply, StoreError>) {
        let Some((thread, asked)) = pending.0 else {
            return;
        };
        let Ok(reply) = reply else { return };
        let mut s = lock(&self.state);
        for (run, what) in did(asked, reply) {
            match what {
                Did::Admitted => s.admit(&thread, run),
                Did::Reached(m) => s.milestones.push((thread.clone(), run, m)),
            }
        }
    }

    /// The place of run `run`, if the store admitted it.
    pub fn place(&self, run: &str) -> Option<RunPlace> {
        lock(&self.state).runs.get(run).cloned()
    }

    /// How often run `run` of `thread` reached `milestone` (a run may
    /// wait several times).
    pub fn reached(&self, thread: &str, run: &str, milestone: Milestone) -> usize {
        lock(&self.state)
            .milestones
            .iter()
            .filter(|(t, r, m)| t == thread && r == run && *m == milestone)
            .count()
    }
}

#[cfg(test)]
impl StoreWatch {
    /// Notes run `run` admitted on `thread`, as a store would.
    pub(crate) fn admit_for_test(&self, thread: &str, run: &str) {
        lock(&self.state).admit(thread, run.to_string());
    }
}

impl State {
    fn admit(&mut self, thread: &str, run: String) {
        let n = self.admitted.entry(thread.to_string()).or_default();
        *n += 1;
        let place = RunPlace {
            thread: thread.to_string(),
            nth: *n,
        };
        self.runs.entry(run).or_insert(place);
    }
}

enum Did {
    Admitted,
    Reached(Milestone),
}

fn asked(request: &StoreRequest) -> Option<(String, Asked)> {
    let StoreRequest::On { thread, op } = request else {
        return None;
    };
    let asked = match op {
        Op::Client { op, .. } => match op {
            ClientOp::Submit { .. } => Asked::Submit,
            ClientOp::Cancel { .. } => Asked::Cancel,
            _ => return None,
        },
        Op::Facade(FacadeOp::Regenerate { new_run, .. }) => Asked::Regenerate(new_run.to_string()),
        Op::Run { run, op, .. } => {
            let milestone = match op {
                RunOp::Append { step: Some(k), .. } => Milestone::CommitStep(*k),
                RunOp::Wait { .. } => Milestone::Wait,
                RunOp::Finish { .. } => Milestone::End,
                _ => return None,
            };
            Asked::RunWrite {
                run: run.to_string(),
                milestone,
            }
        }
        Op::Admin(AdminOp::Finish { run, .. }) => Asked::AdminFinish(run.to_string()),
        Op::Admin(AdminOp::Delete) => Asked::Delete,
        _ => return None,
    };
    Some((thread.to_string(), asked))
}

/// What an applied request did, by its answer: runs admitted, milestones.
fn did(asked: Asked, reply: &StoreReply) -> Vec<(String, Did)> {
    use StoreReply as S;
    let finished = |f: &Finish, run: String| match f {
        Finish::Stored { admitted, .. } => {
            let mut out = vec![(run, Did::Reached(Milestone::End))];
            if let Some((next, _)) = admitted {
                out.push((next.to_string(), Did::Admitted));
            }
            out
        }
        _ => Vec::new(),
    };
    match (asked, reply) {
        (Asked::Submit, S::Client(ClientReply::Submitted(Submitted::Run { run, .. }))) => {
            vec![(run.to_string(), Did::Admitted)]
        }
        (Asked::Regenerate(run), S::Facade(FacadeReply::Regenerated(Ok(_)))) => {
            vec![(run, Did::Admitted)]
        }
        (Asked::RunWrite { run, milestone }, S::Run(r)) => match (milestone, r) {
            (Milestone::End, RunReply::Finished(f)) => finished(f, run),
            (Milestone::Wait, RunReply::Waited(Some(_)))
            | (Milestone::CommitStep(_), RunReply::Appended(_)) => {
                vec![(run, Did::Reached(milestone))]
            }
            _ => Vec::new(),
        },
        (Asked::AdminFinish(run), S::Admin(AdminReply::Finished(f))) => finished(f, run),
        (Asked::Cancel, S::Client(ClientReply::Cancelled(Ok(c)))) => match &c.target {
            CancelTarget::Queued(run) => vec![(run.to_string(), Did::Reached(Milestone::End))],
            _ => Vec::new(),
        },
        (Asked::Delete, S::Admin(AdminReply::Deleted(Some(d)))) => d
            .cancelled
            .iter()
            .map(|(run, _)| (run.to_string(), Did::Reached(Milestone::End)))
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs are placed by their thread's admission order, whatever their ids.
    #[test]
    fn runs_are_placed_per_thread_in_admission_order() {
        let w = StoreWatch::default();
        let mut s = lock(&w.state);
        s.admit("main", "run7_aaaa".into());
        s.admit("side", "run2_bbbb".into());
        s.admit("main", "run1_cccc".into());
        drop(s);
        let at = |r: &str| w.place(r).map(|p| (p.thread, p.nth));
        assert_eq!(at("run7_aaaa"), Some(("main".into(), 1)));
        assert_eq!(at("run2_bbbb"), Some(("side".into(), 1)));
        assert_eq!(at("run1_cccc"), Some(("main".into(), 2)));
        assert_eq!(at("run9_dddd"), None);
    }
}
