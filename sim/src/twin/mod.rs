//! The fault-free twin (issue 38): a scenario with runtime faults (crash,
//! restart, partition, hold, pause, lost requests, at a time or at a
//! store request) is run again with those faults removed, everything else
//! the same (workers, seed, planted faults, the world's answers to the
//! calls both make), and its committed outcome must equal the twin's up
//! to what the rules allow: could a run without the fault have ended like
//! this? The comparison (`compare.rs`) reads the committed outcome
//! (`outcome.rs`) of both runs, per run, ids renamed; what the scenario's
//! hooks make fault-sensitive is left out (`mask.rs`); a run whose
//! timeline races its faults is not judged (`racing.rs`).
//!
//! Like every oracle it never calls the runtime's code: it reads stored
//! threads and the simulator's own records.

mod compare;
mod mask;
mod outcome;
mod racing;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use crate::oracle::{Observed, Verdicts, Violation};
use crate::report::{Ran, SimError, report};
use crate::scenario::{FaultSpec, OracleId, Scenario};
use crate::world::StoreKind;

pub(crate) use outcome::Outcome;
pub use racing::NotJudged;

/// What a run is judged against.
#[derive(Debug, Clone, Default)]
pub enum Twin {
    /// The scenario has no runtime fault: there is no twin.
    #[default]
    Absent,
    /// The run is not judged, and why.
    NotJudged(NotJudged),
    /// The twin's committed outcome.
    Judge(Arc<Outcome>),
}

impl Twin {
    /// Whether the run was compared with its twin.
    pub fn judged(&self) -> bool {
        matches!(self, Twin::Judge(_))
    }

    /// Why the run was not judged, if it has a twin and was not.
    pub fn not_judged(&self) -> Option<&NotJudged> {
        match self {
            Twin::NotJudged(why) => Some(why),
            _ => None,
        }
    }
}

/// Whether a fault happens to the running system (a runtime fault the
/// twin removes), rather than to what the oracles read or to the store's
/// code (planted, D5: the twin keeps those).
pub fn is_runtime_fault(f: &FaultSpec) -> bool {
    matches!(
        f,
        FaultSpec::Crash { .. }
            | FaultSpec::Partition { .. }
            | FaultSpec::Hold { .. }
            | FaultSpec::Pause { .. }
    )
}

/// `s` without its runtime faults (the checked scenario keeps them in its
/// cluster's schedule and placements); `None` when it has none.
pub fn without_runtime_faults(s: &Scenario) -> Option<Scenario> {
    let c = s.cluster.as_ref()?;
    if c.schedule.is_empty() && c.placed.is_empty() {
        return None;
    }
    let mut twin = s.clone();
    if let Some(c) = twin.cluster.as_mut() {
        c.schedule.clear();
        c.placed.clear();
    }
    Some(twin)
}

/// The twin `ran` (a run of `s` with `seed` on `store`) is judged
/// against: run when `s` has runtime faults and its run can be judged.
pub(crate) fn twin(s: &Scenario, seed: u64, store: StoreKind, ran: &Ran) -> Result<Twin, SimError> {
    let Some(twin_s) = without_runtime_faults(s) else {
        return Ok(Twin::Absent);
    };
    if let Some(why) = racing::not_judged(s, &ran.obs) {
        return Ok(Twin::NotJudged(why));
    }
    let twin_ran = crate::run::run_on(&twin_s, seed, store, ran.plan.clone())?;
    if twin_ran.obs.cut_short {
        return Ok(Twin::NotJudged(NotJudged::TwinCutShort));
    }
    let missed = twin_ran.missed.iter().map(|(i, _)| *i).collect();
    let twin_report = report(&twin_s, seed, twin_ran, Twin::Absent);
    let retired = twin_report.cluster.as_ref().map_or(&[][..], |c| &c.retired);
    let mut outcome = Outcome::of(&twin_s, &twin_report.threads, retired);
    outcome.missed = missed;
    Ok(Twin::Judge(Arc::new(outcome)))
}

/// How a run fared against its twin: the transcript's `twin:` line, and
/// the fuzz report's counter (`judged`, or why not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Judgement {
    pub(crate) line: String,
    pub(crate) counter: &'static str,
}

/// Judges the run `o` (whose timeline entries `missed` never came)
/// against `twin`: the `twin:` line, and a violation of oracle `twin` when
/// the committed outcomes differ in a way the rules do not allow.
pub(crate) fn judge(
    twin: &Twin,
    (o, missed): (&Observed<'_>, &[usize]),
    verdicts: &mut Verdicts,
) -> Option<Judgement> {
    let not_judged = |why: &NotJudged| Judgement {
        line: format!("not judged: {why}"),
        counter: why.kind(),
    };
    let judged = |line: String| Judgement {
        line,
        counter: "judged",
    };
    let judgement = match twin {
        Twin::Absent => return None,
        Twin::NotJudged(why) => not_judged(why),
        Twin::Judge(theirs) => {
            let retired = o.cluster.map_or(&[][..], |c| &c.retired);
            let mut mine = Outcome::of(o.scenario, o.threads, retired);
            mine.missed = missed.to_vec();
            match compare::compare(&mine, theirs) {
                Ok(allowed) => judged(compare::judged_line(&mine, &allowed)),
                Err(d) => match d
                    .after_cut
                    .then(|| racing::came_in_one(o.scenario, &mine, theirs))
                {
                    Some(Some(why)) => not_judged(&why),
                    _ => {
                        verdicts.violations.push(Violation {
                            oracle: OracleId::Twin.into(),
                            run: None,
                            message: d.message,
                        });
                        judged(
                            "judged: the committed outcome differs from the fault-free twin's"
                                .into(),
                        )
                    }
                },
            }
        }
    };
    verdicts.twin = Some(judgement.line.clone());
    Some(judgement)
}
