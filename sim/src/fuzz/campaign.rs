//! A fuzz campaign: the cases of one seed (or of one shard of them), each
//! judged twice; failures shrunk; coverage summed.

use super::case::case_with;
use super::coverage::Coverage;
use super::draw::Features;
use super::judge::{Evaluation, Failure, case_seed, differential, evaluate_with, in_shard};
use super::mix::{MixCoverage, mix};
use super::shrink::shrink;
use crate::registry::Registry;
use crate::scenario::ScenarioSpec;
use crate::world::StoreKind;

/// What a campaign runs.
#[derive(Debug, Clone)]
pub struct Campaign {
    /// The campaign's seed: with the same seed, shard and settings a campaign
    /// draws the same cases in the same order, so a find is reproduced by its
    /// seed and case index (D4).
    pub seed: u64,
    /// Case indices `0..cases` (those of this shard); `None` runs until the
    /// caller says stop.
    pub cases: Option<u64>,
    /// This shard and the number of shards, from 1: `(1, 1)` is everything.
    pub shard: (u64, u64),
    /// Go on after a failure.
    pub keep_going: bool,
    /// At most this many candidate cases are run while shrinking one failure.
    pub shrink_budget: usize,
    /// Where the cases keep their threads.
    pub store: StoreKind,
    /// One case in this many (chosen by its seed) also runs on the other
    /// store, and must give the same transcript, event log and stored
    /// threads (D1); 0: none, 1: every case.
    pub differential: u64,
    /// Swarm testing: each case draws from a random half of the
    /// generator's kinds (`Features::swarm`); off, every case may use every
    /// kind.
    pub swarm: bool,
    /// A harness's hooks and oracles: the hooks it lets cases draw are
    /// mixed into every case, and its oracles judge every case (empty:
    /// the built-in library only, as `pai-sim fuzz` runs).
    pub registry: Registry,
}

/// The default share of cases run differentially: one in eight.
pub const DIFFERENTIAL_EVERY: u64 = 8;

/// One failing case, shrunk.
#[derive(Debug, Clone)]
pub struct Find {
    /// The case's index in the campaign (`0..cases`), as printed in the find's
    /// report.
    pub index: u64,
    /// The seed the case was drawn from ([`case_seed`](super::case_seed) of the
    /// campaign's seed and the index).
    pub case_seed: u64,
    /// The first way the case failed, as judged on the unshrunk case.
    pub failure: Failure,
    /// What the first run said about the failure: the oracle's message, the
    /// differing output, or the error.
    pub message: String,
    /// The case as generated, before shrinking.
    pub original: ScenarioSpec,
    /// The smallest case found that still fails the same way; the one written
    /// as a reproduction.
    pub shrunk: ScenarioSpec,
    /// The number of shrink candidates kept (each one smaller and still
    /// failing) on the way from `original` to `shrunk`.
    pub steps: usize,
}

/// What a campaign did.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Cases judged; each ran twice (D4).
    pub cases: u64,
    /// Every failing case, in case order; at most one unless `keep_going`.
    pub finds: Vec<Find>,
    /// Which generator behaviours the judged cases reached, summed over every
    /// case.
    pub coverage: Coverage,
    /// How the harness's hooks met the runtime's other features (empty
    /// without a harness).
    pub mixed: MixCoverage,
}

impl Campaign {
    /// Runs the cases; `go_on` is asked before each case (a time budget, a
    /// progress display) and may stop the campaign.
    pub fn run(&self, mut go_on: impl FnMut(&Summary) -> bool) -> Summary {
        let (shard, shards) = self.shard;
        let mut summary = Summary::default();
        // Bounded by `cases`, or by the caller's `go_on`.
        for index in 0.. {
            if self.cases.is_some_and(|n| index >= n) || !go_on(&summary) {
                break;
            }
            if !in_shard(index, shard, shards) {
                continue;
            }
            let case_seed = case_seed(self.seed, index);
            let features = match self.swarm {
                true => Features::swarm(case_seed),
                false => Features::ALL,
            };
            let mut spec = case_with(case_seed, features);
            let across = differential(case_seed, self.differential);
            let judged = match mix(case_seed, &self.registry, &mut spec) {
                Ok(()) => evaluate_with(&spec, self.store, across, &self.registry),
                Err(e) => Evaluation::failed(Failure::Error(e)),
            };
            summary.cases += 1;
            summary.coverage.merge(&judged.coverage);
            summary.mixed.count(&spec, &judged.coverage);
            summary.mixed.decided(&judged.decisions);
            let Some(failure) = judged.failure else {
                continue;
            };
            let budget = (self.shrink_budget, self.store);
            let (shrunk, steps) = shrink(&spec, &failure, budget, &self.registry);
            summary.finds.push(Find {
                index,
                case_seed,
                failure,
                message: judged.message,
                original: spec,
                shrunk,
                steps,
            });
            if !self.keep_going {
                break;
            }
        }
        summary
    }
}
