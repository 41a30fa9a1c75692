//! Client requests and reads (SPEC H4, H5, K1, K6, T9, A4): opening,
//! user messages, answers, cancels, deletes.

use pai_runtime::store::{AdminOp, AdminReply, ClientOp, ClientReply, ReadOp, ReadReply};
use pai_runtime::{
    Role,
    message::{Outcome, Producer},
    store::{
        Answer, AnswerMiss, Answered, CancelMiss, CancelReached, CancelTarget, DELETED, Deletion,
        RunStatus, StoreReply, StoreRequest, Submitted,
    },
};

use super::thread::{AGENT, INTRUDER, Life, OWNER, Reason, ThreadModel};
use super::{Model, Step};
use crate::ops::{AnswerPick, CancelPick, ReadPick, RunPick};
use pai_runtime::id::RunId;

fn owner(foreign: bool) -> &'static str {
    if foreign { INTRUDER } else { OWNER }
}

impl Model {
    pub(super) fn open(&mut self, t: usize, foreign: bool) -> Step {
        let th = &mut self.threads[t];
        let request = StoreRequest::client(
            th.id.clone(),
            AGENT.to_string(),
            owner(foreign).to_string(),
            ClientOp::Open,
        );
        th.open(owner(foreign));
        let reply = th
            .scope(owner(foreign))
            .map(|()| StoreReply::Client(ClientReply::Opened));
        Step::call(request, reply, "H4")
    }

    pub(super) fn submit(&mut self, t: usize, steer: bool, new_run: bool, foreign: bool) -> Step {
        let message = self.message(Role::User, Producer::User, None, None);
        let new_run = new_run.then(|| self.fresh("r"));
        let th = &mut self.threads[t];
        let request = StoreRequest::client(
            th.id.clone(),
            AGENT.to_string(),
            owner(foreign).to_string(),
            ClientOp::Submit {
                message: message.clone(),
                steer,
                new_run: new_run.clone().map(RunId::from),
            },
        );
        // A thread is created by the first message (H5: a deleted one anew).
        th.open(owner(foreign));
        if let Err(e) = th.scope(owner(foreign)) {
            return Step::call(request, Err(e), "H4");
        }
        let steered = th.current().filter(|_| steer);
        let (run, is_steer) = match (steered, new_run) {
            (Some(run), _) => (run, true),
            (None, Some(run)) => (run, false),
            (None, None) => {
                return Step::call(
                    request,
                    Ok(StoreReply::Client(ClientReply::NeedRunId)),
                    "A4",
                );
            }
        };
        let mut message = message;
        message.pai.run_id = Some(run.clone().into());
        let id = message.id.clone();
        let (version, _) = th.append(vec![message]);
        let submitted = match is_steer {
            true => {
                th.steers.push(id.to_string());
                Submitted::Steer {
                    run: run.into(),
                    version,
                }
            }
            false => {
                th.admit(&run, &id);
                Submitted::Run {
                    run: run.into(),
                    version,
                }
            }
        };
        let rule = if is_steer { "A4" } else { "K1" };
        Step::call(
            request,
            Ok(StoreReply::Client(ClientReply::Submitted(submitted))),
            rule,
        )
    }

    pub(super) fn cancel(&mut self, t: usize, target: CancelPick) -> Step {
        let th = &mut self.threads[t];
        let run = match target {
            CancelPick::Unnamed => None,
            CancelPick::Current => th.current(),
            CancelPick::Queued(n) => {
                let queued = th.queued();
                (!queued.is_empty()).then(|| queued[n as usize % queued.len()].clone())
            }
            CancelPick::Ended => Some(
                th.runs
                    .iter()
                    .find(|r| r.ended())
                    .map_or("r-unknown".to_string(), |r| r.id.clone()),
            ),
            CancelPick::Unknown => Some("r-unknown".to_string()),
        };
        let request = StoreRequest::client(
            th.id.clone(),
            AGENT.to_string(),
            OWNER.to_string(),
            ClientOp::Cancel {
                run: run.clone().map(RunId::from),
            },
        );
        if let Err(e) = self
            .reach(t, None)
            .and_then(|()| self.threads[t].scope(OWNER))
        {
            return Step::call(request, Err(e), "K6");
        }
        let reply = cancel_on(&mut self.threads[t], run);
        Step::call(
            request,
            Ok(StoreReply::Client(ClientReply::Cancelled(reply))),
            "K6",
        )
    }

    pub(super) fn answer(&mut self, t: usize, call: u8, pick: AnswerPick, foreign: bool) -> Step {
        let th = &self.threads[t];
        let calls = th
            .current()
            .and_then(|c| th.run(&c))
            .map(|r| r.waiting.clone())
            .unwrap_or_default();
        let call_id = match calls.is_empty() {
            true => "c-unknown".into(),
            false => calls[call as usize % calls.len()].call_id.clone(),
        };
        let answer = match pick {
            AnswerPick::Approve => Answer::Approved,
            AnswerPick::Deny => Answer::Denied {
                reason: "no".into(),
            },
            AnswerPick::Submit => Answer::Submitted {
                output: serde_json::json!({ "ok": true }),
            },
        };
        let request = StoreRequest::client(
            th.id.clone(),
            AGENT.to_string(),
            owner(foreign).to_string(),
            ClientOp::Answer {
                call_id: call_id.clone(),
                answer: answer.clone(),
            },
        );
        if let Err(e) = self
            .reach(t, None)
            .and_then(|()| self.threads[t].scope(owner(foreign)))
        {
            return Step::call(request, Err(e), "H4");
        }
        let reply = answer_on(&mut self.threads[t], &call_id, answer);
        Step::call(
            request,
            Ok(StoreReply::Client(ClientReply::Answered(reply))),
            "T9",
        )
    }

    /// H5: the incarnation ends; its runs end cancelled (reason `deleted`).
    pub(super) fn delete(&mut self, t: usize) -> Step {
        let th = &mut self.threads[t];
        let request = StoreRequest::admin(th.id.clone(), AdminOp::Delete);
        if !th.live() {
            return Step::call(
                request,
                Ok(StoreReply::Admin(AdminReply::Deleted(None))),
                "H5",
            );
        }
        let open: Vec<(RunId, RunStatus)> = th
            .runs
            .iter()
            .filter(|r| !r.ended())
            .map(|r| (r.id.as_str().into(), r.status))
            .collect();
        for (run, _) in &open {
            let reason = Reason::Exact(Some(DELETED.to_string()));
            th.finish_run(run, RunStatus::Cancelled, Outcome::Cancelled, reason);
        }
        let incarnation = th.incarnation;
        let runs: Vec<_> = th.runs.drain(..).map(|r| (r.id, incarnation)).collect();
        th.retired.extend(runs);
        th.messages.clear();
        th.metadata.clear();
        th.private_metadata.clear();
        th.steers.clear();
        th.context.clear();
        th.unentered.clear();
        th.lease.holder = None;
        th.lease.worker = None;
        th.lease.expires = None;
        // K2: tokens never go back; the store may move it on (MemoryStore does).
        th.lease.token_known = false;
        // MemoryStore counts the delete as a commit (H1) and keeps counting
        // versions and sequence numbers in the next incarnation.
        let version = th.commit();
        th.life = Life::Deleted;
        let deletion = Deletion {
            incarnation,
            cancelled: open,
            version,
        };
        Step::call(
            request,
            Ok(StoreReply::Admin(AdminReply::Deleted(Some(deletion)))),
            "H5",
        )
    }

    pub(super) fn read(&mut self, t: usize, run: RunPick, read: ReadPick) -> Step {
        let run = self.pick_run(t, run);
        let th = &self.threads[t];
        let thread = th.id.clone();
        let (request, reply) = match read {
            ReadPick::ThreadIds => {
                let ids = self
                    .threads
                    .iter()
                    .filter(|t| t.live())
                    .map(|t| t.id.as_str().into())
                    .collect();
                return Step::call(
                    StoreRequest::ThreadIds,
                    Ok(StoreReply::Admin(AdminReply::Ids(ids))),
                    "H5",
                );
            }
            ReadPick::HasSteer => (
                StoreRequest::read(
                    thread,
                    ReadOp::HasSteer {
                        run: run.clone().into(),
                        before: None,
                    },
                ),
                StoreReply::Read(ReadReply::HasSteer(!th.steers.is_empty())),
            ),
            ReadPick::RunMetadata => (
                StoreRequest::read(
                    thread,
                    ReadOp::RunMetadata {
                        run: run.clone().into(),
                    },
                ),
                StoreReply::Read(ReadReply::RunMetadata(
                    th.run(&run).and_then(|r| r.metadata.clone()),
                )),
            ),
            ReadPick::WaitingCalls => (
                StoreRequest::read(
                    thread,
                    ReadOp::WaitingCalls {
                        run: run.clone().into(),
                    },
                ),
                StoreReply::Read(ReadReply::WaitingCalls(
                    th.run(&run).map(|r| r.waiting.clone()).unwrap_or_default(),
                )),
            ),
        };
        let reply = self.reach(t, Some(&run)).map(|()| reply);
        // K6: a cancelled current run's look for a steer says so.
        if read == ReadPick::HasSteer
            && reply.is_ok()
            && let Err(e) = super::runs::closing_current(&self.threads[t], &run)
        {
            return Step::call(request, Err(e), "K6");
        }
        Step::call(request, reply, "H5")
    }
}

/// K6: the named run, else the current one, else the oldest queued; what
/// happens to it follows from its status alone. A running or waiting run
/// is asked to stop; a queued one ends cancelled at once and never starts;
/// an ended one is out of reach. Reaching a run is one commit (H1).
fn cancel_on(th: &mut ThreadModel, run: Option<String>) -> Result<CancelReached, CancelMiss> {
    let first_queued = || th.queued().into_iter().next();
    let target = run
        .or_else(|| th.current())
        .or_else(first_queued)
        .ok_or(CancelMiss::NoRun)?;
    let Some(r) = th.run_mut(&target) else {
        return Err(CancelMiss::Unknown(target.into()));
    };
    let reached = match r.status {
        RunStatus::Running => CancelTarget::Active(target.into()),
        RunStatus::Waiting => CancelTarget::Waiting(target.into()),
        RunStatus::Queued => {
            let (done, why) = (RunStatus::Cancelled, Reason::Any);
            th.finish_run(&target, done, Outcome::Cancelled, why);
            return Ok(CancelReached {
                target: CancelTarget::Queued(target.into()),
                version: th.commit(),
            });
        }
        _ => return Err(CancelMiss::Ended(target.into())),
    };
    r.cancel_requested = true;
    Ok(CancelReached {
        target: reached,
        version: th.commit(),
    })
}

/// T9: an answer to an answerable call of the current run (waiting, or
/// made answerable while the run still works), once, of the right kind;
/// it is one commit (H1).
fn answer_on(th: &mut ThreadModel, call_id: &str, answer: Answer) -> Result<Answered, AnswerMiss> {
    let current = th.current().ok_or(AnswerMiss::NotWaiting)?;
    let r = th.run_mut(&current).ok_or(AnswerMiss::NotWaiting)?;
    if r.cancel_requested || r.calls_closed {
        return Err(AnswerMiss::NotWaiting);
    }
    let call = r
        .waiting
        .iter_mut()
        .find(|c| c.call_id == call_id)
        .ok_or(AnswerMiss::NotWaiting)?;
    if call.answer.is_some() {
        return Err(AnswerMiss::AlreadyAnswered);
    }
    let fits = match answer {
        Answer::Approved | Answer::Denied { .. } => {
            call.kind == pai_runtime::tool::ToolKind::Approval
        }
        Answer::Submitted { .. } => call.kind == pai_runtime::tool::ToolKind::Client,
    };
    if !fits {
        return Err(AnswerMiss::WrongKind(call.kind));
    }
    call.answer = Some(answer);
    let ready = r.resumable();
    Ok(Answered {
        run: current.into(),
        ready,
        version: th.commit(),
    })
}
