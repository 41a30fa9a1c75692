//! One deterministic run of a scenario: seeded rng, virtual clock, runtime,
//! timeline; then, after the run, the oracles and the transcript over one
//! observed value.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pai_runtime::{
    Clock as _, Runtime,
    event::{LiveEvent, Watch},
    store::StoredThread,
};

use crate::hooks::{BuildContext, HistoryRead, SimContext};
use crate::oracle::Observations;
use crate::play::{Played, agent, play};
use crate::report::{Ran, Report, SimError, report, unused_turns};
use crate::scenario::FaultSpec;
use crate::scenario::{Expectation, Scenario};
use crate::twin::Twin;
use crate::world::{
    AnswerBook, ClientView, Plan, Recorder, Rng, ScriptedProvider, SharedProvider, SimIds,
    SimStore, StoreKind, StoreTap, StoreWatch, VirtualClock,
};

/// Runs `scenario` with `seed` on a fresh single-threaded Tokio runtime with
/// paused (virtual) time, keeping threads in the memory store; a scenario
/// with runtime faults is also run without them and judged against that
/// fault-free twin (`crate::twin`).
pub fn simulate(scenario: &Scenario, seed: u64) -> Result<Report, SimError> {
    simulate_on(scenario, seed, StoreKind::Memory)
}

/// [`simulate`] with threads kept in a store of kind `store`: the
/// transcript must not depend on it.
pub fn simulate_on(scenario: &Scenario, seed: u64, store: StoreKind) -> Result<Report, SimError> {
    let ran = run_on(scenario, seed, store, Plan::new())?;
    let twin = crate::twin::twin(scenario, seed, store, &ran)?;
    Ok(report(scenario, seed, ran, twin))
}

/// [`simulate_on`] judged against a twin found before (by a run of the
/// same scenario and seed): D4's second run, a run on the other store.
pub(crate) fn simulate_against(
    scenario: &Scenario,
    seed: u64,
    store: StoreKind,
    twin: &Twin,
) -> Result<Report, SimError> {
    let ran = run_on(scenario, seed, store, Plan::new())?;
    Ok(report(scenario, seed, ran, twin.clone()))
}

/// One run of `scenario`, its world's answers following `plan`, not yet
/// judged.
pub(crate) fn run_on(
    scenario: &Scenario,
    seed: u64,
    store: StoreKind,
    plan: Plan,
) -> Result<Ran, SimError> {
    if scenario.cluster.is_some() {
        return crate::cluster::simulate(scenario, seed, store, plan);
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .map_err(|e| SimError::Setup(e.to_string()))?;
    rt.block_on(simulate_in(scenario, seed, store, plan))
}

/// The simulated world of one run, and the runtime living in it.
struct World {
    runtime: Runtime<SimContext>,
    /// What history probes read, recorded as they read it.
    reads: Arc<Mutex<Vec<HistoryRead>>>,
    /// What the hooks were lent: what compaction's summary model was
    /// asked, the answer book.
    lent: BuildContext,
    clock: Arc<VirtualClock>,
    recorder: Arc<Recorder>,
    provider: Arc<ScriptedProvider>,
    tap: Arc<StoreTap>,
}

fn world(s: &Scenario, seed: u64, store: StoreKind, plan: Plan) -> Result<World, SimError> {
    let rng = Arc::new(Mutex::new(Rng::new(seed)));
    let clock = Arc::new(VirtualClock::new());
    let ids = Arc::new(SimIds::new(rng));
    let recorder = Arc::new(Recorder::default());
    let watch = Arc::new(StoreWatch::default());
    let lent = BuildContext {
        answers: Arc::new(AnswerBook::new(watch.clone(), plan)),
        ..BuildContext::default()
    };
    let provider = Arc::new(ScriptedProvider::new(s, &ids, &clock, &lent.answers));
    let reads = Arc::new(Mutex::new(Vec::new()));
    let (agent, context) = agent(s, &reads, &lent);
    let ignore = s.faults.contains(&FaultSpec::IgnoreExpectations);
    let inner = SimStore::new(store, None)
        .map_err(|e| SimError::Setup(format!("opening the {} store: {e}", store.as_str())))?;
    let tap = Arc::new(StoreTap::new(inner, (recorder.clone(), watch), ignore));
    let runtime = Runtime::builder(agent, context)
        .store(tap.clone())
        .models(SharedProvider(provider.clone()))
        .clock(clock.clone())
        .ids(ids)
        .events(recorder.clone())
        .build()
        .map_err(|e| SimError::Setup(e.to_string()))?;
    Ok(World {
        runtime,
        reads,
        lent,
        clock,
        recorder,
        provider,
        tap,
    })
}

/// Plays the timeline, then waits until every thread touched is idle.
async fn play_and_settle(s: &Scenario, w: &World, played: &mut Played) {
    let watch = w.lent.answers.watch();
    play(s, (&w.runtime, None, watch), &w.recorder, played).await;
    for (client, thread) in played.touched.clone() {
        let _ = w
            .runtime
            .client(client)
            .thread(thread)
            .wait_until_idle()
            .await;
    }
    w.runtime.rewrites_delivered().await;
}

async fn simulate_in(
    s: &Scenario,
    seed: u64,
    store: StoreKind,
    plan: Plan,
) -> Result<Ran, SimError> {
    let w = world(s, seed, store, plan)?;
    let limit = Duration::from_millis(s.time_limit_ms);
    let mut played = Played::default();
    let in_time = tokio::time::timeout(limit, play_and_settle(s, &w, &mut played)).await;
    let Played {
        mut notes,
        mut watches,
        actions,
        missed,
        ..
    } = played;
    if in_time.is_err() {
        notes.push(format!(
            "stopped: not idle after {}ms of virtual time (time_limit_ms)",
            s.time_limit_ms
        ));
    }
    let virtual_ms = w.clock.now();
    let mut tap = w.tap.take();
    let commits = std::mem::take(&mut tap.commits);
    let threads = stored_threads(&w.runtime).await;
    let client_views = client_views(&w.runtime, &threads).await;
    let obs = Observations {
        events: w.recorder.take(),
        threads,
        calls: w.provider.take_calls(),
        live: drain(&mut watches),
        actions,
        reads: w.reads.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        summaries: w
            .lent
            .summaries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone(),
        tap,
        commits,
        client_views,
        cut_short: in_time.is_err(),
        cluster: None,
    };
    Ok(Ran {
        obs,
        notes,
        missed,
        unused: unused_turns(&w.provider),
        virtual_ms,
        plan: w.lent.answers.plan(),
    })
}

/// Everything the watchers received, watcher by watcher.
fn drain(watches: &mut [(String, Watch)]) -> Vec<(String, LiveEvent)> {
    let mut live = Vec::new();
    for (name, watch) in watches {
        while let Some(e) = watch.try_next() {
            live.push((name.clone(), e));
        }
    }
    live
}

/// Whether a report meets its scenario's expectation (SPEC D5). A run
/// stopped at its time limit, a planted fault that changed nothing, or a
/// worker fault placed at a store request that never came, fails whatever
/// the oracles said.
pub fn verdict(s: &Scenario, report: &Report) -> Result<(), String> {
    let mut problems = Vec::new();
    if report.limit_reached {
        problems.push(format!(
            "stopped at the virtual-time limit of {}ms before every thread was idle (raise time_limit_ms if the scenario needs longer)",
            s.time_limit_ms
        ));
    }
    for f in &report.idle_faults {
        problems.push(format!("planted fault changed nothing: {f}"));
    }
    for m in &report.missed {
        problems.push(format!("a timeline entry never happened: {m}"));
    }
    for f in &report.unfired_faults {
        problems.push(format!(
            "{f} (the store request it is placed at never came: the scenario does not test what the fault was placed for)"
        ));
    }
    if let Err(e) = expectation_met(s, report) {
        problems.push(e);
    }
    match problems.is_empty() {
        true => Ok(()),
        false => Err(problems.join("\n")),
    }
}

fn expectation_met(s: &Scenario, report: &Report) -> Result<(), String> {
    match &s.expect {
        Expectation::Pass if report.violations.is_empty() => Ok(()),
        Expectation::Pass => {
            const SHOWN: usize = 5;
            let mut lines: Vec<String> = report
                .violations
                .iter()
                .take(SHOWN)
                .map(|v| {
                    let run = v.run.as_deref().unwrap_or("-");
                    format!(
                        "oracle {} reported a violation (run {run}): {}",
                        v.oracle, v.message
                    )
                })
                .collect();
            if report.violations.len() > SHOWN {
                lines.push(format!("... and {} more", report.violations.len() - SHOWN));
            }
            Err(lines.join("\n"))
        }
        Expectation::Violation(oracle) => {
            if report.violations.iter().any(|v| &v.oracle == oracle) {
                Ok(())
            } else {
                Err(format!(
                    "expected oracle {oracle} to report a violation, but it stayed quiet"
                ))
            }
        }
    }
}

/// Runs a scenario twice with one seed (SPEC D4) and checks its expectation.
/// Returns the first report and every problem found.
pub fn check(s: &Scenario, seed: u64) -> Result<(Report, Vec<String>), SimError> {
    check_on(s, seed, StoreKind::Memory)
}

/// [`check`] with threads kept in a store of kind `store`.
pub fn check_on(
    s: &Scenario,
    seed: u64,
    store: StoreKind,
) -> Result<(Report, Vec<String>), SimError> {
    let first = simulate_on(s, seed, store)?;
    let second = simulate_against(s, seed, store, &first.twin)?;
    let mut problems = Vec::new();
    if first.transcript != second.transcript {
        let d = crate::format::diff(
            &first.transcript,
            &second.transcript,
            "first run",
            "second run",
        );
        problems.push(format!("D4: two runs with seed {seed} differ:\n{d}"));
    }
    if let Err(e) = verdict(s, &first) {
        problems.push(e);
    }
    Ok((first, problems))
}

/// The one command that replays a scenario (SPEC D2), quoted for a shell.
pub fn replay_command(path: &std::path::Path, seed: u64) -> String {
    replay_on(path, seed, StoreKind::Memory)
}

/// [`replay_command`] for a run on a store of kind `store`.
pub fn replay_on(path: &std::path::Path, seed: u64, store: StoreKind) -> String {
    let shown = path.display().to_string();
    let quoted = shlex::try_quote(&shown).map_or(shown.clone(), |q| q.into_owned());
    match store {
        StoreKind::Memory => format!("pai-sim run {quoted} --seed {seed}"),
        other => format!(
            "pai-sim run {quoted} --seed {seed} --store {}",
            other.as_str()
        ),
    }
}

/// Every stored thread, as trusted code reads it.
async fn stored_threads(runtime: &pai_runtime::Runtime<SimContext>) -> Vec<StoredThread> {
    let mut threads = Vec::new();
    for id in runtime.thread_ids().await.unwrap_or_default() {
        if let Ok(Some(t)) = runtime.inspect(&id).await {
            threads.push(t);
        }
    }
    threads
}

/// Each stored thread as its owner's client reads it (SPEC H4).
async fn client_views(runtime: &Runtime<SimContext>, threads: &[StoredThread]) -> Vec<ClientView> {
    let mut views = Vec::new();
    for t in threads {
        let handle = runtime.client(t.owner.clone()).thread(t.id.clone());
        if let Ok(state) = handle.state().await {
            views.push(ClientView {
                owner: t.owner.clone(),
                state,
            });
        }
    }
    views
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SPEC D2: the replay line survives a shell, whatever the path holds.
    #[test]
    fn d2_replay_lines_are_shell_quoted() {
        let path = std::path::Path::new("scenarios/a b/it's $HOME.toml");
        let line = replay_command(path, 7);
        let words = shlex::split(&line).expect("a shell can split it");
        assert_eq!(
            words,
            [
                "pai-sim",
                "run",
                "scenarios/a b/it's $HOME.toml",
                "--seed",
                "7"
            ]
        );
        assert_eq!(
            replay_command(std::path::Path::new("s/x.toml"), 3),
            "pai-sim run s/x.toml --seed 3"
        );
    }
}
