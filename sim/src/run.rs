//! One deterministic run of a scenario: seeded rng, virtual clock, runtime,
//! timeline; then, after the run, the oracles and the transcript over one
//! observed value.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pai_runtime::{
    Agent, Clock as _, Event, EventKind, LiveEvent, RunStage, Runtime, StoredThread, TypedTool,
    Watch, compose,
};

use crate::faults;
use crate::hooks::{self, HistoryRead, SimContext, SimMetadata};
use crate::oracle::{self, Observations, Violation};
use crate::scenario::{Action, Expectation, Scenario};
use crate::transcript;
use crate::world::{
    self, ActionRecord, Answering, Recorder, Rng, ScriptedProvider, ScriptedTool, SharedProvider,
    SimIds, VirtualClock,
};

/// A scenario that could not be run at all.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("cannot start the simulated runtime: {0}")]
    Setup(String),
}

/// The result of one run.
#[derive(Debug, Clone)]
pub struct Report {
    pub transcript: String,
    /// Model steps committed, over all runs.
    pub steps: u32,
    /// Virtual time when the scenario went idle.
    pub virtual_ms: u64,
    pub violations: Vec<Violation>,
    /// Every stored thread at the end, as trusted code sees it.
    pub threads: Vec<StoredThread>,
    /// The runtime's event log, as the oracles read it.
    pub events: Vec<Event>,
    /// What each watcher received, in order.
    pub live: Vec<(String, LiveEvent)>,
    /// The scenario was stopped at its virtual-time limit before it went idle.
    pub limit_reached: bool,
    /// Planted faults that found nothing to change, as notes.
    pub idle_faults: Vec<String>,
    /// The runtime's own step loop panicked (a runtime bug, caught).
    pub runtime_panicked: bool,
}

/// Runs `scenario` with `seed` on a fresh single-threaded Tokio runtime with
/// paused (virtual) time.
pub fn simulate(scenario: &Scenario, seed: u64) -> Result<Report, SimError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .map_err(|e| SimError::Setup(e.to_string()))?;
    rt.block_on(simulate_in(scenario, seed))
}

/// The simulated world of one run, and the runtime living in it.
struct World {
    runtime: Runtime<SimContext>,
    /// What history probes read, recorded as they read it.
    reads: Arc<Mutex<Vec<HistoryRead>>>,
    clock: Arc<VirtualClock>,
    recorder: Arc<Recorder>,
    provider: Arc<ScriptedProvider>,
}

fn world(s: &Scenario, seed: u64) -> Result<World, SimError> {
    let rng = Arc::new(Mutex::new(Rng::new(seed)));
    let clock = Arc::new(VirtualClock::new());
    let ids = Arc::new(SimIds::new(rng));
    let recorder = Arc::new(Recorder::default());
    let provider = Arc::new(ScriptedProvider::new(&s.model, &s.models, &ids, &clock));
    let mut agent = Agent::new(s.agent.name.clone(), s.agent.model.clone())
        .instructions(s.agent.instructions.clone())
        .max_steps(s.agent.max_steps);
    agent = agent.run_metadata::<SimMetadata>();
    for t in &s.agent.tools {
        let tool = TypedTool::dynamic(Arc::new(ScriptedTool::new(t.clone())));
        agent = agent.typed_tool(&tool);
        if let Some(spec) = &t.on_output {
            agent = agent.on_output(&tool, world::on_output(spec.clone()));
        }
    }
    let hooks = s.hooks.iter().map(|h| h.spec.build(&h.name)).collect();
    let agent = agent.lifecycle(compose(hooks));
    let reads = Arc::new(Mutex::new(Vec::new()));
    let context = SimContext {
        docs: s.docs.clone(),
        reads: reads.clone(),
    };
    let runtime = Runtime::builder(agent, context)
        .models(SharedProvider(provider.clone()))
        .clock(clock.clone())
        .ids(ids)
        .events(recorder.clone())
        .build()
        .map_err(|e| SimError::Setup(e.to_string()))?;
    Ok(World {
        runtime,
        reads,
        clock,
        recorder,
        provider,
    })
}

/// What playing the timeline leaves behind, even if the time limit cuts it short.
#[derive(Debug, Default)]
struct Played {
    notes: Vec<String>,
    watches: Vec<(String, Watch)>,
    actions: Vec<ActionRecord>,
}

/// Plays the timeline: each client action at its virtual time, recorded with
/// the runtime's answer; then waits until every thread touched is idle.
async fn play(s: &Scenario, w: &World, played: &mut Played) {
    let start = tokio::time::Instant::now();
    let mut touched: Vec<(String, String)> = Vec::new();
    // Run ids of each thread's sends, in order, for `cancel = { run = N }`.
    let mut sends: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (i, m) in s.timeline.iter().enumerate() {
        tokio::time::sleep_until(start + Duration::from_millis(m.at)).await;
        let thread = w.runtime.client(m.client.clone()).thread(m.thread.clone());
        let mut waiting_check = None;
        let outcome = match &m.action {
            Action::Send(text) => thread.send(text).await.map(|sent| {
                sends
                    .entry(&m.thread)
                    .or_default()
                    .push(sent.run_id.clone());
                Ok(Some(sent.run_id))
            }),
            Action::Steer(text) => thread.steer(text).await.map(|sent| Ok(Some(sent.run_id))),
            Action::Cancel(None) => thread.cancel().await.map(|r| Ok(Some(r))),
            Action::Cancel(Some(n)) => {
                match sends.get(m.thread.as_str()).and_then(|r| r.get(n - 1)) {
                    Some(run) => thread.cancel_run(run).await.map(|r| Ok(Some(r))),
                    None => Err(pai_runtime::ClientError::NoRun {
                        thread: format!("{} (it has no send #{n} yet)", m.thread),
                    }),
                }
            }
            Action::Watch { name, live } => thread
                .watch(hooks::live_stages(live))
                .await
                .map(|w| played.watches.push((name.clone(), w)))
                .map(|()| Ok(None)),
            Action::Approve(c) => {
                Ok(world::answer(&w.runtime, &thread, c, Answering::Approve).await)
            }
            Action::Deny(c, reason) => {
                Ok(world::answer(&w.runtime, &thread, c, Answering::Deny(reason)).await)
            }
            Action::Submit(c, output) => {
                Ok(world::answer(&w.runtime, &thread, c, Answering::Submit(output)).await)
            }
            Action::ExpectWaiting(calls) => {
                waiting_check = world::check_waiting(&w.runtime, &thread, calls).await;
                Ok(Ok(None))
            }
        };
        let outcome = match outcome {
            Ok(Ok(done)) => Ok(done),
            Ok(Err(e)) => Err(e),
            Err(e) => Err(e.to_string()),
        };
        let check = waiting_check.take().or_else(|| error_check(m, &outcome));
        if let Err(e) = &outcome {
            let expected = if m.expect_error.is_some() {
                " (expected)"
            } else {
                ""
            };
            let note = format!(
                "at {}ms {} could not {} on {}{expected}: {e}",
                m.at,
                m.client,
                m.action.name(),
                m.thread
            );
            played.notes.push(note);
        }
        played.actions.push(ActionRecord {
            moment: i,
            at: m.at,
            after_event: w.recorder.len(),
            outcome,
            check,
        });
        let key = (m.client.clone(), m.thread.clone());
        if !touched.contains(&key) {
            touched.push(key);
        }
    }
    for (client, thread) in touched {
        let _ = w
            .runtime
            .client(client)
            .thread(thread)
            .wait_until_idle()
            .await;
    }
}

async fn simulate_in(s: &Scenario, seed: u64) -> Result<Report, SimError> {
    let w = world(s, seed)?;
    let limit = Duration::from_millis(s.time_limit_ms);
    let mut played = Played::default();
    let in_time = tokio::time::timeout(limit, play(s, &w, &mut played)).await;
    let Played {
        mut notes,
        mut watches,
        actions,
    } = played;
    if in_time.is_err() {
        notes.push(format!(
            "stopped: not idle after {}ms of virtual time (time_limit_ms)",
            s.time_limit_ms
        ));
    }
    let virtual_ms = w.clock.now();
    let mut obs = Observations {
        events: w.recorder.take(),
        threads: stored_threads(&w.runtime).await,
        calls: w.provider.take_calls(),
        live: drain(&mut watches),
        actions,
        reads: w.reads.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        cut_short: in_time.is_err(),
    };
    let mut idle_faults = Vec::new();
    for (i, fault) in s.faults.iter().enumerate() {
        match faults::plant(fault, &mut obs) {
            Ok(note) => notes.push(note),
            Err(note) => {
                idle_faults.push(format!("faults[{i}]: {note}"));
                notes.push(note);
            }
        }
    }
    for m in w.provider.scripts() {
        let unused = m.unused_turns();
        if unused > 0 {
            notes.push(format!(
                "{unused} turn(s) of script {} were never used",
                m.script()
            ));
        }
    }
    let observed = obs.view(s, seed);
    let verdicts = oracle::check_all(&observed);
    let transcript = transcript::render(&observed, &verdicts, &notes);
    let runtime_panicked = obs.events.iter().any(|e| {
        matches!(
            e.kind,
            EventKind::Failed {
                phase: RunStage::Runtime,
                ..
            }
        )
    });
    Ok(Report {
        transcript,
        steps: obs
            .threads
            .iter()
            .flat_map(|t| &t.runs)
            .map(|r| r.steps)
            .sum(),
        virtual_ms,
        violations: verdicts.violations,
        threads: obs.threads,
        events: obs.events,
        live: obs.live,
        limit_reached: in_time.is_err(),
        idle_faults,
        runtime_panicked,
    })
}

/// Whether an action's `expect_error` held: `None` if so (or none was
/// expected), else what happened instead.
fn error_check(
    m: &crate::scenario::Moment,
    outcome: &Result<Option<String>, String>,
) -> Option<String> {
    let wanted = m.expect_error.as_deref()?;
    match outcome {
        Err(e) if e.contains(wanted) => None,
        Err(e) => Some(format!("expected an error containing {wanted:?}, got: {e}")),
        Ok(_) => Some(format!(
            "expected an error containing {wanted:?}, but the {} succeeded",
            m.action.name()
        )),
    }
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
/// stopped at its time limit, or a planted fault that changed nothing, fails
/// whatever the oracles said.
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
    if let Err(e) = expectation_met(s, report) {
        problems.push(e);
    }
    match problems.is_empty() {
        true => Ok(()),
        false => Err(problems.join("\n")),
    }
}

fn expectation_met(s: &Scenario, report: &Report) -> Result<(), String> {
    match s.expect {
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
            if report.violations.iter().any(|v| v.oracle == oracle) {
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
    let first = simulate(s, seed)?;
    let second = simulate(s, seed)?;
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
    let shown = path.display().to_string();
    let quoted = shlex::try_quote(&shown).map_or(shown.clone(), |q| q.into_owned());
    format!("pai-sim run {quoted} --seed {seed}")
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
