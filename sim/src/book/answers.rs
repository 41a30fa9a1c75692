//! Which scripted answer each call of the world's answering sources gets
//! (a model script, a compaction summary model): a deterministic world. A
//! call is named by its run, step and attempt (`ModelRequest::attempt`);
//! the first call of a name takes the source's next free answer, and a
//! call made again under the same name (a step a taker makes again after
//! its holder was cut off, SPEC K3) gets the answer the first one got, as a
//! provider that answers the same question alike would. Answers are shared
//! by every worker: the world outlives a crash.
//!
//! The fault-free twin of a run (`crate::twin`) is given the faulted run's
//! [`Plan`]: every call the two runs both make gets the same answer in
//! both, whatever order the runs of different threads happened to call
//! in. Calls are named there by [`RunPlace`] (ids differ between the two
//! runs), through the store's admissions ([`StoreWatch`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use super::lock::lock;
use super::store_watch::{RunPlace, StoreWatch};

/// One call's name within a run of the simulation.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct CallKey {
    run: String,
    step: u32,
    attempt: u32,
}

/// One call's name across two runs of a scenario: the run by its place.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PlacedCall {
    /// The answering source (a script's name, `compaction:<hook>`).
    pub source: String,
    /// The run's thread and place.
    pub run: RunPlace,
    /// The step, from 0.
    pub step: u32,
    /// The attempt within the step, from 1.
    pub attempt: u32,
}

/// Which answer (from 1) each placed call got in a run.
pub type Plan = BTreeMap<PlacedCall, usize>;

/// The answers given so far, per source, and the plan to follow.
#[derive(Debug, Default)]
pub struct AnswerBook {
    state: Mutex<BookState>,
    watch: Arc<StoreWatch>,
    plan: Plan,
}

#[derive(Debug, Default)]
struct BookState {
    /// Per source: each call's answer.
    given: BTreeMap<String, BTreeMap<CallKey, usize>>,
}

/// What a call got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Given {
    /// The answer, from 1.
    pub n: usize,
    /// The call was made before under the same name.
    pub again: bool,
}

impl AnswerBook {
    /// A book reading run places from `watch`, following `plan` (empty:
    /// answers in the order of first calls).
    pub fn new(watch: Arc<StoreWatch>, plan: Plan) -> AnswerBook {
        AnswerBook {
            state: Mutex::default(),
            watch,
            plan,
        }
    }

    /// The store's admissions this book reads run places from.
    pub fn watch(&self) -> &Arc<StoreWatch> {
        &self.watch
    }

    /// The answer of `source` (with `count` answers, from 1) for the call
    /// `(run, step, attempt)`; `None` when every answer is taken.
    pub fn answer(
        &self,
        source: &str,
        (run, step, attempt): (&str, u32, u32),
        count: usize,
    ) -> Option<Given> {
        let key = CallKey {
            run: run.to_string(),
            step,
            attempt,
        };
        let mut s = lock(&self.state);
        let given = s.given.entry(source.to_string()).or_default();
        if let Some(&n) = given.get(&key) {
            return Some(Given { n, again: true });
        }
        let planned = self.planned(source, &key);
        let taken: BTreeSet<usize> = given.values().copied().collect();
        let n = match planned.filter(|n| !taken.contains(n)) {
            Some(n) => n,
            None => (1..=count).find(|n| !taken.contains(n) && !self.reserved(source, *n))?,
        };
        given.insert(key, n);
        Some(Given { n, again: false })
    }

    /// The plan's answer for `key` of `source`, if the plan names it.
    fn planned(&self, source: &str, key: &CallKey) -> Option<usize> {
        if self.plan.is_empty() {
            return None;
        }
        let run = self.watch.place(&key.run)?;
        let placed = PlacedCall {
            source: source.to_string(),
            run,
            step: key.step,
            attempt: key.attempt,
        };
        self.plan.get(&placed).copied()
    }

    /// Whether the plan keeps answer `n` of `source` for a call it names.
    fn reserved(&self, source: &str, n: usize) -> bool {
        self.plan
            .iter()
            .any(|(call, &m)| m == n && call.source == source)
    }

    /// How many distinct calls `source` answered.
    pub fn answered(&self, source: &str) -> usize {
        lock(&self.state).given.get(source).map_or(0, |g| g.len())
    }

    /// Which answers `source` gave, whatever calls got them.
    pub fn used(&self, source: &str) -> BTreeSet<usize> {
        let s = lock(&self.state);
        s.given
            .get(source)
            .map(|g| g.values().copied().collect())
            .unwrap_or_default()
    }

    /// The answers given so far, each call named by its run's place (a call
    /// of a run the store never admitted is left out).
    pub fn plan(&self) -> Plan {
        let s = lock(&self.state);
        let mut out = Plan::new();
        for (source, given) in &s.given {
            for (key, &n) in given {
                let Some(run) = self.watch.place(&key.run) else {
                    continue;
                };
                let call = PlacedCall {
                    source: source.clone(),
                    run,
                    step: key.step,
                    attempt: key.attempt,
                };
                out.insert(call, n);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book(plan: Plan) -> AnswerBook {
        AnswerBook::new(Arc::new(StoreWatch::default()), plan)
    }

    /// The first call of a name takes the next free answer; the same name
    /// again gets the same answer (a step made again after a takeover).
    #[test]
    fn a_repeated_call_gets_the_answer_it_got() {
        let b = book(Plan::new());
        let first = b.answer("default", ("r1", 0, 1), 3).unwrap();
        let retry = b.answer("default", ("r1", 0, 2), 3).unwrap();
        let again = b.answer("default", ("r1", 0, 1), 3).unwrap();
        assert_eq!((first.n, first.again), (1, false));
        assert_eq!((retry.n, retry.again), (2, false));
        assert_eq!((again.n, again.again), (1, true));
        assert_eq!(b.answer("other", ("r1", 0, 1), 3).unwrap().n, 1);
        assert_eq!(b.answer("default", ("r2", 0, 1), 3).unwrap().n, 3);
        assert_eq!(b.answer("default", ("r3", 0, 1), 3), None, "exhausted");
        assert_eq!(b.answered("default"), 3);
    }

    /// A twin given a plan answers each call the plan names as the plan
    /// says, whatever order the calls come in, and a call it does not
    /// name with an answer the plan leaves free.
    #[test]
    fn a_plan_pins_the_answers_of_the_calls_it_names() {
        let first = book(Plan::new());
        first.watch.admit_for_test("main", "run1_aaaa");
        first.watch.admit_for_test("side", "run2_aaaa");
        // The side thread's run called first here.
        assert_eq!(
            first.answer("default", ("run2_aaaa", 0, 1), 3).unwrap().n,
            1
        );
        assert_eq!(
            first.answer("default", ("run1_aaaa", 0, 1), 3).unwrap().n,
            2
        );
        let twin = book(first.plan());
        twin.watch.admit_for_test("main", "run1_bbbb");
        twin.watch.admit_for_test("side", "run2_bbbb");
        // The main thread's run calls first in the twin, and one more.
        assert_eq!(twin.answer("default", ("run1_bbbb", 1, 1), 3).unwrap().n, 3);
        assert_eq!(twin.answer("default", ("run1_bbbb", 0, 1), 3).unwrap().n, 2);
        assert_eq!(twin.answer("default", ("run2_bbbb", 0, 1), 3).unwrap().n, 1);
    }
}
