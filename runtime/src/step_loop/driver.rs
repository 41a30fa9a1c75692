//! The per-thread driver (SPEC K1, L3): one task drains a thread's run queue,
//! one run at a time; each run is one or more episodes, each under a fresh
//! lease (K2). Queue admission, leases and wake-ups happen here, whatever
//! hooks the agent has.

use std::sync::Arc;

use tracing::Instrument;

use super::episode::EpisodeEnd;
use super::exec::{Exec, Fail};
use crate::clock::IdKind;
use crate::event::{EventKind, RunStage};
use crate::future::catch_panic;
use crate::message::Outcome;
use crate::shared::Shared;
use crate::stop::StopSignal;
use crate::store::{RunEnd, RunStatus, Started};

/// Drains a thread's run queue, one run at a time, then lets the thread go idle.
pub(crate) async fn drive<C: Send + Sync + 'static>(sh: Arc<Shared<C>>, thread: String) {
    while let Some((started, stop)) = next_run(&sh, &thread) {
        let run = started.run.clone();
        let span = tracing::info_span!("run", run_id = %run, thread_id = %thread);
        let ran = catch_panic(run_one(&sh, &thread, &started, &stop).instrument(span)).await;
        if let Err(panic) = ran {
            // A bug in the runtime itself (user code is guarded where it is
            // called): the run fails and the thread stays usable.
            tracing::error!(run_id = %run, panic = %panic, "the step loop panicked");
            recover(&sh, &thread, &run, panic);
        }
    }
}

/// The run to drive next (a waiting run that can resume, or the next
/// queued run, now current) with its stop signal, already set for a run
/// whose cancel came while it waited; `None` (and the driver released, in
/// the same critical section as admission and answers) when there is none.
fn next_run<C>(sh: &Shared<C>, thread: &str) -> Option<(Started, Arc<StopSignal>)> {
    let mut process = sh.process.lock();
    let attached = process.entry(thread.to_string()).or_default();
    match sh.store.write(thread, |rec| rec.start_next()) {
        Ok(Some(started)) => {
            let stop = attached.start_run(&started.run);
            if started.cancel_requested {
                stop.trigger();
            }
            Some((started, stop))
        }
        _ => {
            attached.release_driver();
            None
        }
    }
}

/// Drives one run through its episodes, then records how it ended; a run
/// that waits for a client stays current and is left for its resume (T9).
async fn run_one<C: Send + Sync + 'static>(
    sh: &Shared<C>,
    thread: &str,
    started: &Started,
    stop: &StopSignal,
) {
    let run = started.run.as_str();
    let mut next_step = match started.resumed {
        true => sh.store.read(thread, |rec| rec.steps(run)).unwrap_or(0),
        false => 0,
    };
    let mut resumed = started.resumed;
    let end = loop {
        let acquired = sh
            .store
            .write(thread, |rec| (rec.acquire_lease(run), rec.episodes(run)));
        let Ok((token, episode)) = acquired else {
            // The thread is gone: nothing is left to act on.
            return;
        };
        sh.emit(thread, run, || EventKind::LeaseAcquired { episode, token });
        let exec = Exec {
            sh,
            thread,
            run,
            episode,
            token,
            stop,
        };
        let ended = exec
            .episode(&mut next_step, resumed)
            .instrument(tracing::info_span!("episode", episode))
            .await;
        resumed = false;
        let ended = settle(sh, thread, run, stop, ended);
        if let EpisodeEnd::Wait(calls) = ended {
            // The store released the lease when it recorded the wait.
            sh.emit(thread, run, || EventKind::Waiting {
                calls: calls.iter().map(|c| c.call_id.clone()).collect(),
            });
            sh.run_waits(thread, run, calls);
            return;
        }
        let _ = sh.store.write(thread, |rec| rec.release_lease(run));
        sh.emit(thread, run, || EventKind::LeaseReleased { episode });
        match ended {
            EpisodeEnd::Run(end) => break end,
            EpisodeEnd::Steer | EpisodeEnd::Wait(_) => {}
        }
    };
    finish(sh, thread, run, &end);
}

/// How an episode's outcome ends the run. A failure fails it (L4). A run
/// whose stop was set before it ended ends cancelled (T8, K6), whether it
/// failed, completed or was about to take a steer in a new episode.
fn settle<C>(
    sh: &Shared<C>,
    thread: &str,
    run: &str,
    stop: &StopSignal,
    ended: Result<EpisodeEnd, Fail>,
) -> EpisodeEnd {
    let stage = match ended {
        // A wait is recorded only while no cancel was asked for; a cancel
        // that comes later finds the run waiting and resumes it.
        Ok(end @ EpisodeEnd::Wait(_)) => return end,
        Ok(end) if !stop.is_set() => return end,
        Ok(_) => RunStage::EpisodeEnd,
        Err(fail) if stop.is_set() => fail.stage,
        Err(fail) => {
            tracing::warn!(phase = %fail.stage, message = %fail.message, "run failed");
            sh.emit(thread, run, || EventKind::Failed {
                phase: fail.stage,
                message: fail.message.clone(),
            });
            return EpisodeEnd::Run(failed(fail.message));
        }
    };
    sh.emit(thread, run, || EventKind::Cancelled { phase: stage });
    EpisodeEnd::Run(RunEnd {
        status: RunStatus::Cancelled,
        outcome: Outcome::Cancelled,
        reason: Some("cancelled by the client".to_string()),
    })
}

fn failed(reason: String) -> RunEnd {
    RunEnd {
        status: RunStatus::Failed,
        outcome: Outcome::Failed,
        reason: Some(reason),
    }
}

/// Records how a run ended and tells its watchers. A steering message that
/// arrived too late for this run starts the next one (A4).
fn finish<C>(sh: &Shared<C>, thread: &str, run: &str, end: &RunEnd) {
    let leftover = {
        let mut process = sh.process.lock();
        let attached = process.entry(thread.to_string()).or_default();
        sh.run_ended(attached, run, end);
        sh.store
            .write(thread, |rec| {
                rec.finish_run(run, end);
                let steer = rec.take_steer()?;
                let next = sh.ids.next_id(IdKind::Run);
                rec.admit(&next, &steer);
                Some((next, steer))
            })
            .ok()
            .flatten()
    };
    sh.emit(thread, run, || EventKind::ended(end));
    if let Some((next, trigger)) = leftover {
        sh.emit(thread, &next, || EventKind::Admitted { trigger });
    }
}

/// After a panic in the step loop: the run fails, its lease is released,
/// the log says so, and the run ends as any other does.
fn recover<C>(sh: &Shared<C>, thread: &str, run: &str, panic: String) {
    let reason = format!("runtime panicked: {panic}");
    sh.emit(thread, run, || EventKind::Failed {
        phase: RunStage::Runtime,
        message: reason.clone(),
    });
    let _ = sh.store.write(thread, |rec| rec.release_lease(run));
    sh.emit(thread, run, || EventKind::LeaseReleased { episode: 0 });
    finish(sh, thread, run, &failed(reason));
}
