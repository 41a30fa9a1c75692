//! The driver (SPEC K1, K3, L3): a run is taken with its lease (a queued
//! run, a waiting run that can resume, or a run whose holder's lease
//! expired), driven through its episodes, each under a newer token (K2),
//! and ended. In one process, a task per thread drains its queue; among
//! several workers, each worker claims whatever run is free. Queue
//! admission, leases and wake-ups happen here, whatever hooks the agent has.

use std::sync::Arc;

use tracing::Instrument;

use super::episode::{EpisodeEnd, Start};
use super::exec::{Exec, Fail};
use super::lease::{RunLease, hear_cancel, heard, learned_cancel, renew, renew_once};
use crate::clock::IdKind;
use crate::context::cache::ContextCache;
use crate::event::{EventKind, RunStage};
use crate::future::{alongside, catch_panic};
use crate::message::Outcome;
use crate::shared::Shared;
use crate::stop::StopSignal;
use crate::store::{Claimed, Finish, RunEnd, RunStatus, WaitingCall};
use crate::store::{FencingToken, StoreError};

/// Drains a thread's run queue, one run at a time, then lets the thread go idle.
pub(crate) async fn drive<C: Send + Sync + 'static>(sh: Arc<Shared<C>>, thread: String) {
    while let Some((claimed, stop)) = next_run(&sh, &thread).await {
        drive_claimed(&sh, claimed, stop).await;
    }
}

/// One round of a worker sharing its store with others: claims a run of
/// any thread and drives it. `false` when there was nothing to claim (or
/// the store could not be reached).
pub(crate) async fn work_once<C: Send + Sync + 'static>(sh: &Arc<Shared<C>>) -> bool {
    let w = &sh.worker;
    let Ok(Some(claimed)) = sh.store.claim(None, w.holder(), w.lease_ttl).await else {
        return false;
    };
    let stop = {
        let mut attached = sh.process.attach(&claimed.thread).await;
        attached.start_run(&claimed.run)
    };
    if claimed.cancel_requested {
        stop.trigger();
    }
    drive_claimed(sh, claimed, stop).await;
    true
}

/// The run to drive next on `thread` with its stop signal, already set
/// for a run whose cancel came while it waited; `None` (and the driver
/// released, in the same critical section as admission and answers) when
/// there is none.
async fn next_run<C>(sh: &Shared<C>, thread: &str) -> Option<(Claimed, Arc<StopSignal>)> {
    let mut attached = sh.process.attach(thread).await;
    let w = &sh.worker;
    match sh.store.claim(Some(thread), w.holder(), w.lease_ttl).await {
        Ok(Some(claimed)) => {
            sh.told(&mut attached, claimed.version);
            let stop = attached.start_run(&claimed.run);
            if claimed.cancel_requested {
                stop.trigger();
            }
            Some((claimed, stop))
        }
        _ => {
            attached.release_driver();
            None
        }
    }
}

/// Drives a claimed run; a panic in the step loop fails it.
async fn drive_claimed<C: Send + Sync + 'static>(
    sh: &Shared<C>,
    claimed: Claimed,
    stop: Arc<StopSignal>,
) {
    let (thread, run) = (claimed.thread.as_str(), claimed.run.as_str());
    let span = tracing::info_span!("run", run_id = %run, thread_id = %thread);
    let lease = RunLease::new(claimed.token);
    if claimed.cancel_requested {
        lease.cancel_known();
    }
    let ran = catch_panic(run_one(sh, &claimed, &stop, &lease).instrument(span)).await;
    if let Err(panic) = ran {
        // A bug in the runtime itself (user code is guarded where it is
        // called): the run fails and the thread stays usable.
        tracing::error!(run_id = %run, panic = %panic, "the step loop panicked");
        recover(sh, thread, run, &lease, panic).await;
    }
}

/// Drives one run through its episodes, then records how it ended; a run
/// that waits for a client stays current and is left for its resume (T9);
/// a run whose lease is lost is left to whoever takes it next (K3).
async fn run_one<C: Send + Sync + 'static>(
    sh: &Shared<C>,
    claimed: &Claimed,
    stop: &StopSignal,
    lease: &RunLease,
) {
    let (thread, run) = (claimed.thread.as_str(), claimed.run.as_str());
    let mut next_step = claimed.steps;
    let mut start = Start::of(claimed);
    taken_over(sh, claimed);
    let mut episode = claimed.episode;
    let mut version = claimed.version;
    // Valid across episodes: every read checks the store's history epoch.
    let context = ContextCache::default();
    let end = loop {
        let token = lease.token();
        sh.emit(thread, run, || EventKind::LeaseAcquired {
            episode,
            token,
            version,
        });
        let exec = Exec {
            sh,
            thread,
            run,
            episode,
            resumed: start != Start::Fresh,
            token,
            stop,
            lease,
            context: &context,
            batch: Default::default(),
        };
        let working = exec
            .episode(&mut next_step, start)
            .instrument(tracing::info_span!("episode", episode));
        let ended = alongside(working, renew(sh, thread, run, lease, stop)).await;
        if !matches!(ended, Ok(EpisodeEnd::Wait(..))) {
            hear_the_store(sh, thread, run, lease, stop).await;
        }
        start = Start::Fresh;
        let (ended, says) = settle(stop, lease, ended);
        match ended {
            EpisodeEnd::Wait(calls, version) => {
                return waits(sh, (thread, run), calls, version).await;
            }
            EpisodeEnd::Lost(reason) => return lost(sh, thread, run, lease, reason, says).await,
            EpisodeEnd::Steer => match next_episode(sh, thread, run, token).await {
                Ok((newer, next, at)) => {
                    sh.emit(thread, run, || EventKind::LeaseReleased { episode });
                    lease.set_token(newer);
                    episode = next;
                    version = at;
                }
                Err(StoreError::Cancelled { .. }) => {
                    // A cancel came before the new episode (K6): the run
                    // ends cancelled instead.
                    hear_cancel(sh, (thread, run), lease, stop, "next_episode");
                    let says = Some(EventKind::Cancelled {
                        phase: RunStage::EpisodeEnd,
                    });
                    let end = cancelled();
                    break Ending { end, says, episode };
                }
                Err(e) => {
                    heard(sh, (thread, run), lease, "next_episode", &e);
                    return lost(sh, thread, run, lease, e.to_string(), None).await;
                }
            },
            EpisodeEnd::Run(end) => break Ending { end, says, episode },
        }
    };
    finish(sh, thread, run, lease, end).await;
}

/// Tells the thread's watchers that the claim took the run over from a
/// holder whose lease expired (K3), if it did.
fn taken_over<C>(sh: &Shared<C>, claimed: &Claimed) {
    if let Some(t) = &claimed.takeover {
        sh.emit(&claimed.thread, &claimed.run, || EventKind::TakenOver {
            from: t.from.clone(),
            stale_token: t.token,
            expired_at: t.expired_at,
            next_step: claimed.steps,
        });
    }
}

/// The run waits for a client on `calls` (T9); the store released the
/// lease when it recorded the wait at `version`.
async fn waits<C>(
    sh: &Shared<C>,
    (thread, run): (&str, &str),
    calls: Vec<WaitingCall>,
    version: u64,
) {
    sh.emit(thread, run, || EventKind::Waiting {
        calls: calls.iter().map(|c| c.call_id.clone()).collect(),
        version,
    });
    sh.run_waits(thread, run, calls).await;
}

/// The holder's lease moves to a new episode (A4): one commit, told to
/// the thread's watchers.
async fn next_episode<C>(
    sh: &Shared<C>,
    thread: &str,
    run: &str,
    token: FencingToken,
) -> Result<(FencingToken, u32, u64), crate::store::StoreError> {
    let mut attached = sh.process.attach(thread).await;
    let moved = sh.store.next_episode(thread, run, token).await?;
    sh.told(&mut attached, moved.2);
    Ok(moved)
}

/// Among workers, before the outcome of an episode that still holds its
/// lease is settled: one renewal, so
/// a cancel asked through another process still makes the run end
/// cancelled (K6), and a store this worker can no longer reach makes it
/// leave the run rather than end it (K3).
async fn hear_the_store<C>(
    sh: &Shared<C>,
    thread: &str,
    run: &str,
    lease: &RunLease,
    stop: &StopSignal,
) {
    if sh.worker.lease_ttl.is_none() || lease.lost().is_some() {
        return;
    }
    match renew_once(sh, thread, run, lease.token()).await {
        Ok(true) => hear_cancel(sh, (thread, run), lease, stop, "renew"),
        Ok(false) => {}
        Err(e) => {
            if heard(sh, (thread, run), lease, "renew", &e) && lease.deleted() {
                stop.trigger();
            }
        }
    }
}

/// A run's end on its way to the store, with what the log says of it
/// first (`failed` or `cancelled`) once the store has it.
struct Ending {
    end: RunEnd,
    says: Option<EventKind>,
    episode: u32,
}

/// How an episode's outcome ends the run, and the event that says so. A
/// lost lease leaves it (K3). A failure fails it (L4). A run whose stop was
/// set before it ended ends cancelled (T8, K6), whether it failed,
/// completed or was about to take a steer in a new episode.
fn settle(
    stop: &StopSignal,
    lease: &RunLease,
    ended: Result<EpisodeEnd, Fail>,
) -> (EpisodeEnd, Option<EventKind>) {
    if let Some(reason) = lease.lost() {
        // A run stopped by a delete it heard of says where it stopped (H5):
        // in the phase a refused request failed, else at the episode's end.
        let stage = match &ended {
            Err(fail) => fail.stage,
            Ok(_) => RunStage::EpisodeEnd,
        };
        let says = lease
            .deleted()
            .then_some(EventKind::Cancelled { phase: stage });
        return (EpisodeEnd::Lost(reason), says);
    }
    let stage = match ended {
        // A wait is recorded only while no cancel was asked for; a cancel
        // that comes later finds the run waiting and resumes it.
        Ok(end @ EpisodeEnd::Wait(..)) => return (end, None),
        Ok(end) if !stop.is_set() => return (end, None),
        Ok(_) => RunStage::EpisodeEnd,
        Err(fail) if stop.is_set() => fail.stage,
        Err(fail) => {
            tracing::warn!(phase = %fail.stage, message = %fail.message, "run failed");
            let says = EventKind::Failed {
                phase: fail.stage,
                message: fail.message.clone(),
            };
            return (EpisodeEnd::Run(failed(fail.message)), Some(says));
        }
    };
    let says = EventKind::Cancelled { phase: stage };
    (EpisodeEnd::Run(cancelled()), Some(says))
}

fn cancelled() -> RunEnd {
    RunEnd {
        status: RunStatus::Cancelled,
        outcome: Outcome::Cancelled,
        reason: Some("cancelled by the client".to_string()),
    }
}

fn failed(reason: String) -> RunEnd {
    RunEnd {
        status: RunStatus::Failed,
        outcome: Outcome::Failed,
        reason: Some(reason),
    }
}

/// The run's lease is lost: this process forgets the run and writes
/// nothing more for it; its lease expires and another worker takes it.
/// When its thread was deleted under it, the store has ended it cancelled
/// (SPEC H5), and the log says so (`says`: where it stopped).
async fn lost<C>(
    sh: &Shared<C>,
    thread: &str,
    run: &str,
    lease: &RunLease,
    reason: String,
    says: Option<EventKind>,
) {
    let token = lease.token();
    let mut attached = sh.process.attach(thread).await;
    if lease.deleted() {
        let end = deleted();
        sh.run_ended(&mut attached, run, &end);
        drop(attached);
        sh.emit(thread, run, || {
            says.unwrap_or(EventKind::Cancelled {
                phase: RunStage::EpisodeEnd,
            })
        });
        sh.emit(thread, run, || EventKind::ended(&end, None));
        return;
    }
    attached.end_run(run);
    drop(attached);
    tracing::warn!(run_id = %run, %reason, "lease lost");
    sh.emit(thread, run, || EventKind::LeaseLost { token, reason });
}

fn deleted() -> RunEnd {
    RunEnd {
        status: RunStatus::Cancelled,
        outcome: Outcome::Cancelled,
        reason: Some(crate::store::DELETED.to_string()),
    }
}

/// Records how a run ended (under its lease: a stale holder cannot end
/// it), says so in the log and tells its watchers. A steering message that
/// arrived too late for this run starts the next one (A4). A cancel that
/// reached the run before its end was stored makes it end cancelled (K6).
async fn finish<C>(sh: &Shared<C>, thread: &str, run: &str, lease: &RunLease, ending: Ending) {
    let Ending {
        mut end,
        mut says,
        episode,
    } = ending;
    let token = lease.token();
    let mut attached = sh.process.attach(thread).await;
    let mut next_run = None;
    // Three rounds at most: a cancel first, then a run id for a leftover steer.
    let mut admitted = None;
    let mut version = None;
    for _ in 0..3 {
        match sh
            .store
            .finish(thread, run, token, &end, next_run.clone())
            .await
        {
            Ok(Finish::Stored {
                admitted: a,
                version: v,
            }) => {
                admitted = a;
                version = Some(v);
                sh.told(&mut attached, v);
                break;
            }
            Ok(Finish::NeedRunId) => next_run = Some(sh.ids.next_id(IdKind::Run).into()),
            Ok(Finish::CancelFirst) => {
                learned_cancel(sh, (thread, run), lease, "finish");
                end = cancelled();
                // Where the run stopped stays said: a hook that failed
                // just before the cancel reached the run (L4) committed
                // nothing more, and its phase is where the run ended.
                let phase = match &says {
                    Some(EventKind::Failed { phase, .. } | EventKind::Cancelled { phase }) => {
                        *phase
                    }
                    _ => RunStage::EpisodeEnd,
                };
                says = Some(EventKind::Cancelled { phase });
            }
            Err(e) => {
                drop(attached);
                heard(sh, (thread, run), lease, "finish", &e);
                return lost(sh, thread, run, lease, e.to_string(), None).await;
            }
        }
    }
    sh.run_ended(&mut attached, run, &end);
    drop(attached);
    if let Some(says) = says {
        sh.emit(thread, run, || says);
    }
    sh.emit(thread, run, || EventKind::LeaseReleased { episode });
    sh.emit(thread, run, || EventKind::ended(&end, version));
    if let Some((next, trigger)) = admitted {
        sh.emit(thread, &next, || EventKind::Admitted { trigger });
    }
}

/// After a panic in the step loop: the run fails, its lease is released,
/// the log says so, and the run ends as any other does.
async fn recover<C>(sh: &Shared<C>, thread: &str, run: &str, lease: &RunLease, panic: String) {
    let reason = format!("runtime panicked: {panic}");
    let says = EventKind::Failed {
        phase: RunStage::Runtime,
        message: reason.clone(),
    };
    let ending = Ending {
        end: failed(reason),
        says: Some(says),
        episode: 0,
    };
    finish(sh, thread, run, lease, ending).await;
}
