//! The reference model: the SPEC's thread, lease and facade rules written
//! again, independent of any store's internals (only the public protocol
//! types are shared). For each generated [`Op`] it builds the concrete
//! request, says what the store must answer, and moves itself to the state
//! the store must be in afterwards.
//!
//! Where the SPEC leaves a detail open and MemoryStore (the first store)
//! fixes it, the model follows MemoryStore and says so in a comment.

mod client;
mod facade;
mod order;
mod runs;
pub(crate) mod thread;

use pai_runtime::store::FencingToken;
use pai_runtime::{
    Part, Role, StoreError,
    message::{NewMessage, PaiMeta, Producer, Visibility},
    store::{StoreReply, StoreRequest},
};

use crate::ops::{Op, RunPick, THREADS, TokenPick};
use thread::ThreadModel;

/// What a store must answer to one request.
// Built once per step and dropped after it: the size does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub(crate) enum Expected {
    /// Exactly this.
    Reply(Result<StoreReply, StoreError>),
    /// A claim: which run it takes, with a token newer than every one before.
    Claim(Option<ClaimExpect>),
    /// A new episode's lease: a newer token, this episode, and the
    /// thread's version after the commit (H1).
    Lease {
        thread: usize,
        episode: u32,
        version: u64,
    },
}

/// What a claim must take (K1, K3, T9); its token is checked against `floor`.
#[derive(Debug, Clone)]
pub(crate) struct ClaimExpect {
    pub(crate) thread: usize,
    pub(crate) run: String,
    pub(crate) resumed: bool,
    pub(crate) cancel_requested: bool,
    pub(crate) episode: u32,
    pub(crate) steps: u32,
    /// A takeover: the worker that held the lease (when it was held) and its token.
    pub(crate) takeover: Option<(Option<String>, FencingToken)>,
    /// The newest token before the claim: the new one must be above it (K2).
    pub(crate) floor: FencingToken,
    /// The thread's version after the claim's commit (H1).
    pub(crate) version: u64,
}

/// One operation, made concrete.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub(crate) enum Action {
    Call {
        request: StoreRequest,
        expect: Expected,
    },
    /// Move the clock.
    Advance(u64),
    /// Nothing to send (an op the model leaves out in this state).
    Skip(&'static str),
}

/// An action and the rule it exercises, for the report.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    pub(crate) action: Action,
    pub(crate) rule: &'static str,
}

impl Step {
    fn call(
        request: StoreRequest,
        reply: Result<StoreReply, StoreError>,
        rule: &'static str,
    ) -> Step {
        Step {
            action: Action::Call {
                request,
                expect: Expected::Reply(reply),
            },
            rule,
        }
    }

    fn skip(why: &'static str) -> Step {
        Step {
            action: Action::Skip(why),
            rule: "-",
        }
    }
}

/// The model of a whole store: a few threads, the clock, id counters.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Model {
    pub(crate) threads: Vec<ThreadModel>,
    pub(crate) now: u64,
    next_id: u64,
}

impl Model {
    pub(crate) fn new() -> Model {
        Model {
            threads: (0..THREADS)
                .map(|i| ThreadModel::new(format!("t{i}")))
                .collect(),
            now: 0,
            next_id: 0,
        }
    }

    fn fresh(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}{}", self.next_id)
    }

    fn message(
        &mut self,
        role: Role,
        producer: Producer,
        run: Option<&str>,
        step: Option<u32>,
    ) -> NewMessage {
        let id = self.fresh("m");
        NewMessage {
            parts: vec![Part::text(format!("text of {id}"))],
            id: id.into(),
            role,
            visibility: Visibility::ALL,
            pai: PaiMeta::new(producer, run, step, self.now),
        }
    }

    /// The run a run's request names.
    fn pick_run(&self, t: usize, pick: RunPick) -> String {
        let th = &self.threads[t];
        match pick {
            RunPick::Retired => th.retired.first().map(|(r, _)| r.clone()),
            RunPick::Queued => th.queued().into_iter().next(),
            RunPick::Ended => th.runs.iter().find(|r| r.ended()).map(|r| r.id.clone()),
            RunPick::Holder => None,
        }
        .unwrap_or_else(|| th.acting_run())
    }

    /// The token a run's write carries: the newest, or one handed out before.
    fn pick_token(&self, t: usize, pick: TokenPick) -> FencingToken {
        let lease = &self.threads[t].lease;
        match pick {
            TokenPick::Current => lease.token,
            TokenPick::Stale(n) => {
                let older: Vec<FencingToken> = lease
                    .issued
                    .iter()
                    .copied()
                    .filter(|k| *k < lease.token)
                    .collect();
                match older.is_empty() {
                    true => FencingToken::new(lease.token.get().saturating_sub(1)),
                    false => older[n as usize % older.len()],
                }
            }
        }
    }

    /// What a request on an existing thread meets first: no thread, or a
    /// deleted incarnation's run (H5). MemoryStore answers a retired run's
    /// request with `Deleted` before it looks whether the thread is live.
    fn reach(&self, t: usize, run: Option<&str>) -> Result<(), StoreError> {
        let th = &self.threads[t];
        if th.life == thread::Life::Never {
            return Err(StoreError::NoThread(th.id.clone().into()));
        }
        if let Some(incarnation) = run.and_then(|r| th.retired(r)) {
            return Err(StoreError::Deleted {
                thread: th.id.clone().into(),
                incarnation,
            });
        }
        match th.life == thread::Life::Deleted {
            true => Err(StoreError::NoThread(th.id.clone().into())),
            false => Ok(()),
        }
    }

    /// The next step for `op`; the model moves to the state after it.
    pub(crate) fn step(&mut self, op: &Op) -> Step {
        let raw = |i: &u8| (*i % THREADS) as usize;
        let t = self.resolve(op.thread());
        match op {
            Op::Open { thread, foreign } => self.open(raw(thread), *foreign),
            Op::Submit {
                thread,
                steer,
                new_run,
                foreign,
            } => self.submit(raw(thread), *steer, *new_run, *foreign),
            Op::Claim {
                thread,
                worker,
                ttl,
            } => self.claim(thread.map(|_| t), *worker, *ttl),
            Op::Renew { run, token, .. } => self.renew(t, *run, *token, false),
            Op::NextEpisode { run, token, .. } => self.renew(t, *run, *token, true),
            Op::Answer {
                call,
                answer,
                foreign,
                ..
            } => self.answer(t, *call, *answer, *foreign),
            Op::Cancel { target, .. } => self.cancel(t, *target),
            Op::Mutate {
                writer,
                expect,
                incarnation,
                writes,
                ..
            } => self.mutate(t, *writer, *expect, *incarnation, writes),
            Op::Regenerate {
                from,
                expect,
                writes,
                ..
            } => self.regenerate(t, *from, *expect, writes),
            Op::Delete { .. } => self.delete(t),
            Op::Advance { ms } => {
                self.now += ms;
                Step {
                    action: Action::Advance(*ms),
                    rule: "K3",
                }
            }
            Op::Read { run, read, .. } => self.read(t, *run, *read),
            run_write => self.run_write(t, run_write),
        }
    }

    /// Below [`THREADS`], the `n`-th live thread (when one lives); from
    /// [`THREADS`] on, thread `n - THREADS` whether it lives or not.
    fn resolve(&self, thread: u8) -> usize {
        let live: Vec<usize> = (0..self.threads.len())
            .filter(|k| self.threads[*k].live())
            .collect();
        match thread < THREADS && !live.is_empty() {
            true => live[thread as usize % live.len()],
            false => (thread % THREADS) as usize,
        }
    }

    /// A run's writes under its token.
    fn run_write(&mut self, t: usize, op: &Op) -> Step {
        match op {
            Op::Append {
                run,
                token,
                messages,
                step,
                results,
                metadata,
                ..
            } => self.append(t, (*run, *token), *messages, (*step, *results), *metadata),
            Op::SetRunMetadata {
                run, token, value, ..
            } => self.set_run_metadata(t, *run, *token, *value),
            Op::TakeSteer { run, token, .. } => self.take_steer(t, *run, *token),
            Op::CloseCalls { run, token, .. } => self.close_calls(t, *run, *token),
            Op::Wait {
                run,
                token,
                approvals,
                early,
                ..
            } => self.wait(t, *run, *token, approvals, *early),
            Op::CommitResumed {
                run,
                token,
                metadata,
                ..
            } => self.commit_resumed(t, *run, *token, *metadata),
            Op::Finish {
                run,
                token,
                end,
                next_run,
                ..
            } => self.finish(t, *run, *token, *end, *next_run),
            _ => Step::skip("not a run's write"),
        }
    }

    /// The store answered a claim or a new episode with `token`: the model
    /// adopts it (the SPEC fixes only that tokens grow, K2, not by how much).
    pub(crate) fn adopt_token(&mut self, t: usize, token: FencingToken) {
        let lease = &mut self.threads[t].lease;
        lease.token = token;
        lease.token_known = true;
        lease.issued.push(token);
    }
}
