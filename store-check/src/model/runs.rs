//! Leases and a run's writes (SPEC K1, K2, K3, K6, T7, T9): claims,
//! takeovers, renewals, and every write a run makes under its token.

use pai_runtime::store::FencingToken;
use pai_runtime::store::{AdminReply, RunOp, RunReply};
use pai_runtime::{
    Part, Role, StoreError,
    message::{NewMessage, Outcome, Producer, ResultSource, ToolStatus},
    store::{Finish, HandOver, RunEnd, RunStatus, StoreReply, StoreRequest, WaitingCall},
    tool::ToolKind,
};
use serde_json::Value;

use super::thread::{Reason, ThreadModel};
use super::{Action, ClaimExpect, Expected, Model, Step};
use crate::ops::{EndPick, RunPick, TokenPick};
use pai_runtime::id::RunId;

const WORKERS: [&str; 2] = ["w0", "w1"];

impl Model {
    pub(super) fn claim(&mut self, thread: Option<usize>, worker: u8, ttl: Option<u64>) -> Step {
        let worker = WORKERS[worker as usize % WORKERS.len()];
        let now = self.now;
        // Without a thread, the first thread in id order that has a run to take.
        let order: Vec<usize> = match thread {
            Some(t) => vec![t],
            None => (0..self.threads.len()).collect(),
        };
        let claimed = order
            .into_iter()
            .find_map(|t| claim_on(&mut self.threads[t], t, worker, ttl, now));
        let rule = match &claimed {
            Some(c) if c.takeover.is_some() => "K3",
            Some(c) if c.resumed => "T9",
            _ => "K1",
        };
        Step {
            action: Action::Call {
                request: StoreRequest::claim(
                    thread.map(|t| self.threads[t].id.as_str().into()),
                    worker.to_string(),
                    ttl,
                ),
                expect: Expected::Claim(claimed),
            },
            rule,
        }
    }

    /// `Renew`, or with `next`, `NextEpisode`: only the holder, under the newest token.
    pub(super) fn renew(&mut self, t: usize, run: RunPick, token: TokenPick, next: bool) -> Step {
        let run = self.pick_run(t, run);
        let token = self.pick_token(t, token);
        let (thread, now) = (self.threads[t].id.clone(), self.now);
        let request = match next {
            true => StoreRequest::run(thread, run.clone(), token, RunOp::NextEpisode),
            false => StoreRequest::run(thread, run.clone(), token, RunOp::Renew),
        };
        let rule = self.token_rule(t, token, "K3");
        if let Err(e) = self
            .reach(t, Some(&run))
            .and_then(|()| holding(&self.threads[t], &run, token))
        {
            return Step::call(request, Err(e), rule);
        }
        // K6: a renewal closes nothing but keeps a cancelled run's lease
        // (it says the cancel); a new episode is no way to end.
        if let Err(e) = closing(&self.threads[t], &run, !next) {
            return Step::call(request, Err(e), "K6");
        }
        let th = &mut self.threads[t];
        th.touch(now);
        // H1: a renewal and a new episode are lease revisions: one commit each.
        let version = th.commit();
        if !next {
            let cancel_requested = th.cancel_requested(&run);
            let reply = StoreReply::Run(RunReply::Renewed {
                cancel_requested,
                version,
            });
            return Step::call(request, Ok(reply), rule);
        }
        th.lease.token_known = false;
        let r = th.run_mut(&run).expect("the holder is a run of the thread");
        r.episodes += 1;
        let episode = r.episodes;
        Step {
            action: Action::Call {
                request,
                expect: Expected::Lease {
                    thread: t,
                    episode,
                    version,
                },
            },
            rule,
        }
    }

    /// The fence every run write meets first (H5, then K2): a write under
    /// a token lands only if it is the newest and `run` holds the lease.
    fn fence(&self, t: usize, run: &str, token: Option<FencingToken>) -> Result<(), StoreError> {
        self.reach(t, Some(run))?;
        match token {
            Some(token) => holding(&self.threads[t], run, token),
            None => Ok(()),
        }
    }

    /// The fence, then K6: once a cancel reached `run`, the store takes
    /// from it only what `closes` it.
    fn fence_closing(
        &self,
        t: usize,
        run: &str,
        token: FencingToken,
        closes: bool,
    ) -> Result<(), (StoreError, bool)> {
        self.fence(t, run, Some(token)).map_err(|e| (e, false))?;
        closing(&self.threads[t], run, closes).map_err(|e| (e, true))
    }

    /// The rule a run's write under `token` is judged by: `landed` when
    /// the token is the newest, else K2 (a stale write changes nothing).
    fn token_rule(&self, t: usize, token: FencingToken, landed: &'static str) -> &'static str {
        if token == self.threads[t].lease.token {
            landed
        } else {
            "K2"
        }
    }

    /// A run's append; with `metadata`, tool results whose hooks' run
    /// metadata lands in the same commit, one version (K5, H1).
    pub(super) fn append(
        &mut self,
        t: usize,
        (run, token): (RunPick, TokenPick),
        count: u8,
        (step, results): (bool, bool),
        metadata: Option<u8>,
    ) -> Step {
        let run = self.pick_run(t, run);
        let token = self.pick_token(t, token);
        let steps = self.threads[t].run(&run).map_or(0, |r| r.steps);
        let (role, producer) = match results {
            true => (Role::Tool, Producer::Tool),
            false => (Role::Assistant, Producer::Model),
        };
        let mut messages: Vec<_> = (0..count.max(1))
            .map(|_| self.message(role, producer, Some(&run), Some(steps)))
            .collect();
        // A step's message calls a tool; a run's other writes answer its
        // newest open call: pairs for a regeneration to keep together (R1).
        let open = self.threads[t].open_call(&run);
        tool_parts(&mut messages[0], step, open);
        let metadata = metadata.map(results_metadata);
        let request = StoreRequest::run(
            self.threads[t].id.clone(),
            run.clone(),
            token,
            RunOp::Append {
                messages: messages.clone(),
                step: step.then_some(steps),
                metadata: metadata.clone(),
            },
        );
        let rule = match metadata {
            Some(_) => self.token_rule(t, token, "K5"),
            None => self.token_rule(t, token, "H1"),
        };
        // K6: tool results without a step are a cancelled run's closing write.
        if let Err((e, k6)) = self.fence_closing(t, &run, token, results && !step) {
            return Step::call(request, Err(e), if k6 { "K6" } else { rule });
        }
        let now = self.now;
        let th = &mut self.threads[t];
        let ids: Vec<String> = messages.iter().map(|m| m.id.to_string()).collect();
        let (version, first_seq) = th.append(messages);
        th.enter(ids);
        if let Some(r) = th.run_mut(&run) {
            r.metadata = metadata.or(r.metadata.take());
            r.steps += u32::from(step);
        }
        th.touch(now);
        let cancel_requested = th.cancel_requested(&run);
        let reply = StoreReply::Run(RunReply::Appended(pai_runtime::store::Appended {
            version,
            first_seq,
            cancel_requested,
        }));
        Step::call(
            request,
            Ok(reply),
            if cancel_requested { "K6" } else { rule },
        )
    }

    pub(super) fn set_run_metadata(
        &mut self,
        t: usize,
        run: RunPick,
        token: TokenPick,
        value: u8,
    ) -> Step {
        let run = self.pick_run(t, run);
        let token = self.pick_token(t, token);
        let value = serde_json::json!({ "v": value });
        let request = StoreRequest::run(
            self.threads[t].id.clone(),
            run.clone(),
            token,
            RunOp::SetRunMetadata {
                value: value.clone(),
            },
        );
        let rule = self.token_rule(t, token, "H1");
        if let Err((e, k6)) = self.fence_closing(t, &run, token, false) {
            return Step::call(request, Err(e), if k6 { "K6" } else { rule });
        }
        let now = self.now;
        let th = &mut self.threads[t];
        if let Some(r) = th.run_mut(&run) {
            r.metadata = Some(value);
        }
        // MemoryStore counts a run-metadata write as a commit (H1).
        th.commit();
        th.touch(now);
        Step::call(
            request,
            Ok(StoreReply::Run(RunReply::MetadataSet {
                version: th.version,
            })),
            rule,
        )
    }

    /// A step takes every pending steer (A4, L1). Not a commit (no version).
    pub(super) fn take_steer(&mut self, t: usize, run: RunPick, token: TokenPick) -> Step {
        let run = self.pick_run(t, run);
        let token = self.pick_token(t, token);
        let request = StoreRequest::run(
            self.threads[t].id.clone(),
            run.clone(),
            token,
            RunOp::TakeSteer,
        );
        let rule = self.token_rule(t, token, "A4");
        if let Err((e, k6)) = self.fence_closing(t, &run, token, false) {
            return Step::call(request, Err(e), if k6 { "K6" } else { rule });
        }
        let th = &mut self.threads[t];
        // MemoryStore extends the lease only on commits; taking a steer is none.
        let taken = std::mem::take(&mut th.steers);
        th.enter(taken);
        // K3: the step's transition took a steer; a taker goes on with it.
        if let Some(r) = th.run_mut(&run) {
            r.handed_over_by(HandOver::Steer);
        }
        Step::call(request, Ok(StoreReply::Run(RunReply::SteerTaken)), rule)
    }

    /// The run gives its answerable calls up (A3, T9): no answer is taken
    /// for them any more; the calls come back with the answers taken so
    /// far. Fenced; not a commit (no version, the lease is not extended).
    pub(super) fn close_calls(&mut self, t: usize, run: RunPick, token: TokenPick) -> Step {
        let run = self.pick_run(t, run);
        let token = self.pick_token(t, token);
        let request = StoreRequest::run(
            self.threads[t].id.clone(),
            run.clone(),
            token,
            RunOp::CloseCalls,
        );
        let rule = self.token_rule(t, token, "T9");
        if let Err(e) = self.fence(t, &run, Some(token)) {
            return Step::call(request, Err(e), rule);
        }
        let calls = match self.threads[t].run_mut(&run) {
            Some(r) => {
                r.calls_closed = true;
                r.waiting.clone()
            }
            None => Vec::new(),
        };
        Step::call(request, Ok(StoreReply::Run(RunReply::Closed(calls))), rule)
    }

    /// Whether a status-changing write (wait, resume commit, end) of `run`
    /// under the newest token is one the model judges. The SPEC speaks of
    /// these writes only by the run that drives the thread; MemoryStore
    /// fences them by token alone, so a run that does not hold the lease
    /// (queued, ended) could change its status under another run's token.
    /// The model leaves those out (see the crate's README, "not covered").
    fn drives(&self, t: usize, run: &str, token: Option<FencingToken>, running: bool) -> bool {
        let th = &self.threads[t];
        if token.is_some_and(|k| k != th.lease.token) || !th.live() || th.retired(run).is_some() {
            return true;
        }
        let status = th.run(run).map(|r| r.status);
        th.current().as_deref() == Some(run) && (!running || status == Some(RunStatus::Running))
    }

    /// A fresh call of step `step` for a run to wait on: an approval or a
    /// client call.
    fn waiting_call(&mut self, approval: bool, step: u32) -> WaitingCall {
        let (tool, kind) = match approval {
            true => ("approve_me", ToolKind::Approval),
            false => ("client_tool", ToolKind::Client),
        };
        WaitingCall {
            call_id: self.fresh("c").into(),
            tool: tool.to_string(),
            input: Value::Null,
            kind,
            step,
            answer: None,
        }
    }

    /// `Wait`, or with `early`, `Await` (T9): the calls become answerable
    /// while the run still works. Either is one commit (H1).
    pub(super) fn wait(
        &mut self,
        t: usize,
        run: RunPick,
        token: TokenPick,
        approvals: &[bool],
        early: bool,
    ) -> Step {
        let run = self.pick_run(t, run);
        let token = self.pick_token(t, token);
        if !self.drives(t, &run, Some(token), true) {
            return Step::skip("wait of a run that is not running");
        }
        let steps = self.threads[t].run(&run).map_or(0, |r| r.steps);
        let calls: Vec<WaitingCall> = approvals
            .iter()
            .map(|approval| self.waiting_call(*approval, steps))
            .collect();
        let op = match early {
            true => RunOp::Await {
                calls: calls.clone(),
            },
            false => RunOp::Wait {
                calls: calls.clone(),
            },
        };
        let request = StoreRequest::run(self.threads[t].id.clone(), run.clone(), token, op);
        let rule = self.token_rule(t, token, if early { "T9" } else { "T7" });
        // K6: a cancelled run's calls are never made answerable; its wait
        // is answered below (refused: it must end).
        if let Err((e, k6)) = self.fence_closing(t, &run, token, !early) {
            return Step::call(request, Err(e), if k6 { "K6" } else { rule });
        }
        let now = self.now;
        let th = &mut self.threads[t];
        let r = th.run_mut(&run).expect("a running run exists");
        // Calls registered before keep the answers they have (T9).
        let calls = kept(&r.waiting, calls);
        if early {
            r.waiting = calls;
            r.calls_closed = false;
            let version = th.commit();
            th.touch(now);
            return Step::call(
                request,
                Ok(StoreReply::Run(RunReply::Awaited { version })),
                rule,
            );
        }
        // K6: a run a cancel reached does not wait; it must end. The write
        // landed all the same, and extends the lease (as MemoryStore does).
        if th.cancel_requested(&run) {
            th.touch(now);
            return Step::call(request, Ok(StoreReply::Run(RunReply::Waited(None))), "K6");
        }
        let r = th.run_mut(&run).expect("a running run exists");
        r.status = RunStatus::Waiting;
        r.waiting = calls.clone();
        r.calls_closed = false;
        r.handed_over_by(HandOver::Wait);
        th.release(&run);
        th.commit();
        let reply = StoreReply::Run(RunReply::Waited(Some((calls, th.version))));
        Step::call(request, Ok(reply), rule)
    }

    /// A resumed run's results; with `metadata`, the run metadata their
    /// hooks wrote lands in the same commit (K5).
    pub(super) fn commit_resumed(
        &mut self,
        t: usize,
        run: RunPick,
        token: TokenPick,
        metadata: Option<u8>,
    ) -> Step {
        let run = self.pick_run(t, run);
        let token = self.pick_token(t, token);
        if !self.drives(t, &run, Some(token), true) {
            return Step::skip("resume commit of a run that is not running");
        }
        let steps = self.threads[t].run(&run).map_or(0, |r| r.steps);
        let mut messages = vec![self.message(Role::Tool, Producer::Tool, Some(&run), Some(steps))];
        let open = self.threads[t].open_call(&run);
        tool_parts(&mut messages[0], false, open);
        let metadata = metadata.map(results_metadata);
        let request = StoreRequest::run(
            self.threads[t].id.clone(),
            run.clone(),
            token,
            RunOp::CommitResumed {
                messages: messages.clone(),
                metadata: metadata.clone(),
            },
        );
        let rule = self.token_rule(t, token, "T9");
        if let Err(e) = self.fence(t, &run, Some(token)) {
            return Step::call(request, Err(e), rule);
        }
        let now = self.now;
        let th = &mut self.threads[t];
        let ids: Vec<String> = messages.iter().map(|m| m.id.to_string()).collect();
        let (version, first_seq) = th.append(messages);
        th.enter(ids);
        if let Some(r) = th.run_mut(&run) {
            r.waiting.clear();
            r.metadata = metadata.or(r.metadata.take());
        }
        th.touch(now);
        // K6: a cancelled run's closing results are taken, and say so.
        let cancel_requested = th.cancel_requested(&run);
        let reply = StoreReply::Run(RunReply::Appended(pai_runtime::store::Appended {
            version,
            first_seq,
            cancel_requested,
        }));
        Step::call(
            request,
            Ok(reply),
            if cancel_requested { "K6" } else { rule },
        )
    }

    pub(super) fn finish(
        &mut self,
        t: usize,
        run: RunPick,
        token: Option<TokenPick>,
        end: EndPick,
        next: bool,
    ) -> Step {
        let run = self.pick_run(t, run);
        let token = token.map(|k| self.pick_token(t, k));
        if !self.drives(t, &run, token, false) {
            return Step::skip("end of a run that is not the current run");
        }
        let (status, outcome) = match end {
            EndPick::Completed => (RunStatus::Completed, Outcome::Completed),
            EndPick::Failed => (RunStatus::Failed, Outcome::Failed),
            EndPick::Cancelled => (RunStatus::Cancelled, Outcome::Cancelled),
        };
        let reason = Some(format!("{} by the suite", status.as_str()));
        let next_run = next.then(|| self.fresh("r"));
        let request = StoreRequest::finish(
            self.threads[t].id.clone(),
            run.clone(),
            token,
            RunEnd {
                status,
                outcome,
                reason: reason.clone(),
            },
            next_run.clone().map(RunId::from),
        );
        let rule = match token {
            Some(k) if k != self.threads[t].lease.token => "K2",
            _ => "K6",
        };
        if let Err(e) = self.fence(t, &run, token) {
            return Step::call(request, Err(e), rule);
        }
        let now = self.now;
        let th = &mut self.threads[t];
        let finished = finish_on(th, &run, status, outcome, reason, next_run);
        th.touch(now);
        let reply = match token {
            Some(_) => StoreReply::Run(RunReply::Finished(finished)),
            None => StoreReply::Admin(AdminReply::Finished(finished)),
        };
        Step::call(request, Ok(reply), rule)
    }
}

/// K6: a run a cancel reached ends cancelled; a steer left over becomes the
/// next run (A4: it is not lost), which the caller must name.
fn finish_on(
    th: &mut ThreadModel,
    run: &str,
    status: RunStatus,
    outcome: Outcome,
    reason: Option<String>,
    next_run: Option<String>,
) -> Finish {
    if status != RunStatus::Cancelled && th.cancel_requested(run) {
        return Finish::CancelFirst;
    }
    if !th.steers.is_empty() && next_run.is_none() {
        return Finish::NeedRunId;
    }
    th.finish_run(run, status, outcome, Reason::Exact(reason));
    // H1: a run's end is one commit. MemoryStore queues the run the newest
    // leftover steer starts behind any queued runs.
    th.commit();
    let steers = std::mem::take(&mut th.steers);
    let admitted = steers.last().cloned().zip(next_run).map(|(steer, next)| {
        // Every leftover steer enters with the run the newest starts (M1).
        for s in &steers {
            th.hold_for(s, &next);
        }
        th.admit(&next, &steer);
        (next.into(), steer.into())
    });
    Finish::Stored {
        admitted,
        version: th.version,
    }
}

/// `calls`, each with the answer `recorded` already holds for it (T9).
fn kept(recorded: &[WaitingCall], mut calls: Vec<WaitingCall>) -> Vec<WaitingCall> {
    for c in &mut calls {
        if let Some(r) = recorded.iter().find(|r| r.call_id == c.call_id) {
            c.answer.clone_from(&r.answer);
        }
    }
    calls
}

/// K2: the run must hold the lease under the newest token.
pub(super) fn holding(th: &ThreadModel, run: &str, token: FencingToken) -> Result<(), StoreError> {
    th.fenced(Some(token))?;
    match th.lease.holder.as_deref() == Some(run) {
        true => Ok(()),
        false => Err(StoreError::LeaseNotHeld {
            run: run.into(),
            token,
        }),
    }
}

/// The run a claim takes on one thread (K1, K3, T9): the current run if it
/// waits and can resume, or if nobody holds a live lease on it (a
/// takeover); nothing while the current run is driven; else the oldest
/// queued run.
fn claim_on(
    th: &mut ThreadModel,
    t: usize,
    worker: &str,
    ttl: Option<u64>,
    now: u64,
) -> Option<ClaimExpect> {
    if !th.live() {
        return None;
    }
    let (run, takeover) = match th.current() {
        Some(current) => {
            let r = th.run(&current)?;
            let expired = match (&th.lease.holder, th.lease.expires) {
                (None, _) => Some((None, th.lease.token)),
                (Some(_), Some(at)) if now >= at => Some((th.lease.worker.clone(), th.lease.token)),
                _ => None,
            };
            match r.status {
                RunStatus::Waiting if r.resumable() => (current, None),
                RunStatus::Running if expired.is_some() => (current, expired),
                _ => return None,
            }
        }
        // The oldest queued run becomes current (its status, below).
        None => (th.queued().into_iter().next()?, None),
    };
    let floor = th.lease.token;
    // H1: a claim is a run status change and a lease revision: one commit.
    let version = th.commit();
    th.lease.holder = Some(run.clone());
    th.lease.worker = Some(worker.to_string());
    th.lease.token_known = false;
    th.lease.ttl = ttl;
    th.lease.expires = ttl.map(|k| now + k);
    let r = th.run_mut(&run)?;
    let resumed = r.status != RunStatus::Queued;
    r.status = RunStatus::Running;
    r.episodes += 1;
    let (cancel_requested, episode, steps) = (r.cancel_requested, r.episodes, r.steps);
    if !resumed {
        th.enter_claimed(&run);
    }
    Some(ClaimExpect {
        thread: t,
        run,
        resumed,
        cancel_requested,
        episode,
        steps,
        takeover,
        floor,
        version,
    })
}

/// K6: once a client's cancel reached `run`, the store takes from its
/// holder only what closes the run (`closes`: a renewal, its calls closed,
/// tool results without a step, the results of calls it gives up, a wait,
/// which it refuses, and its end); anything else is refused, changing
/// nothing, with the word that the run was cancelled.
pub(super) fn closing(th: &ThreadModel, run: &str, closes: bool) -> Result<(), StoreError> {
    match th.cancel_requested(run) && !closes {
        true => Err(StoreError::Cancelled { run: run.into() }),
        false => Ok(()),
    }
}

/// K6: a write of `run` that is not one of its own lease requests (its
/// facade mutation) or its step's look for a steer is refused once a
/// cancel reached it while it is the thread's current run.
pub(super) fn closing_current(th: &ThreadModel, run: &str) -> Result<(), StoreError> {
    match th.current().as_deref() == Some(run) {
        true => closing(th, run, false),
        false => Ok(()),
    }
}

/// Gives a run's message a tool part: a step's message calls a tool of its
/// own id; another message answers the run's newest open call, if any.
fn tool_parts(m: &mut NewMessage, step: bool, open: Option<(String, String)>) {
    let part = match (step, open) {
        (true, _) => Part::ToolCall {
            call_id: format!("call-{}", m.id).into(),
            tool: "lookup".into(),
            input: serde_json::json!({}),
        },
        (false, Some((call_id, tool))) => Part::ToolResult {
            call_id: call_id.into(),
            tool,
            status: ToolStatus::Output,
            source: ResultSource::Tool,
            output: serde_json::json!("found"),
        },
        (false, None) => return,
    };
    m.parts.push(part);
}

/// The run metadata a model's results commit carries for pick `v`: what
/// hooks wrote about those results (SPEC K5).
fn results_metadata(v: u8) -> serde_json::Value {
    serde_json::json!({ "results": v })
}
