//! One deterministic run of a scenario: seeded rng, virtual clock, runtime,
//! timeline; then, after the run, the oracles and the transcript over one
//! observed value.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pai_runtime::{Agent, Clock as _, Event, LiveEvent, Runtime, StoredThread, Watch, compose};

use crate::hooks::{self, SimContext};
use crate::oracle::{self, Observed, Violation};
use crate::scenario::{Action, EventName, Expectation, FaultSpec, Scenario};
use crate::transcript;
use crate::world::{
    Recorder, Rng, ScriptedProvider, ScriptedTool, SharedProvider, SimIds, VirtualClock,
};

/// Virtual time after which a scenario that has not gone idle is stopped (a liveness bound).
pub const VIRTUAL_TIME_LIMIT_MS: u64 = 3_600_000;

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
    for t in &s.agent.tools {
        agent = agent.tool(Arc::new(ScriptedTool::new(t.clone())));
    }
    let hooks = s.hooks.iter().map(|h| h.spec.build(&h.name)).collect();
    let agent = agent.lifecycle(compose(hooks));
    let context = SimContext {
        docs: s.docs.clone(),
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
        clock,
        recorder,
        provider,
    })
}

/// Plays the timeline: each client action at its virtual time, then waits
/// until every thread touched is idle. What it noted and the watches it
/// opened stay with the caller even if the time limit cuts it short.
async fn play(
    s: &Scenario,
    rt: &Runtime<SimContext>,
    notes: &mut Vec<String>,
    watches: &mut Vec<(String, Watch)>,
) {
    let start = tokio::time::Instant::now();
    let mut touched: Vec<(String, String)> = Vec::new();
    for m in &s.timeline {
        tokio::time::sleep_until(start + Duration::from_millis(m.at)).await;
        let thread = rt.client(m.client.clone()).thread(m.thread.clone());
        let done = match &m.action {
            Action::Send(text) => thread.send(text).await.map(drop),
            Action::Steer(text) => thread.steer(text).await.map(drop),
            Action::Cancel => thread.cancel().map(drop),
            Action::Watch { name, live } => thread
                .watch(hooks::live_stages(live))
                .map(|w| watches.push((name.clone(), w))),
        };
        if let Err(e) = done {
            notes.push(format!(
                "at {}ms {} could not act on {}: {e}",
                m.at, m.client, m.thread
            ));
            continue;
        }
        let key = (m.client.clone(), m.thread.clone());
        if !touched.contains(&key) {
            touched.push(key);
        }
    }
    for (client, thread) in touched {
        let _ = rt.client(client).thread(thread).wait_until_idle().await;
    }
}

async fn simulate_in(s: &Scenario, seed: u64) -> Result<Report, SimError> {
    let w = world(s, seed)?;
    let mut notes = Vec::new();
    let limit = Duration::from_millis(VIRTUAL_TIME_LIMIT_MS);
    let mut watches = Vec::new();
    let played = tokio::time::timeout(limit, play(s, &w.runtime, &mut notes, &mut watches)).await;
    if played.is_err() {
        notes.push(format!(
            "stopped: not idle after {VIRTUAL_TIME_LIMIT_MS}ms of virtual time"
        ));
    }
    let virtual_ms = w.clock.now();
    let mut events = w.recorder.take();
    for fault in &s.faults {
        notes.push(plant(&mut events, fault));
    }
    let threads: Vec<_> = w
        .runtime
        .thread_ids()
        .iter()
        .filter_map(|id| w.runtime.inspect(id))
        .collect();
    for m in w.provider.scripts() {
        let unused = m.unused_turns();
        if unused > 0 {
            notes.push(format!(
                "{unused} turn(s) of script {} were never used",
                m.script()
            ));
        }
    }
    let calls = w.provider.calls();
    let live = drain(&mut watches);
    let observed = Observed {
        scenario: s,
        seed,
        events: &events,
        threads: &threads,
        calls: &calls,
        live: &live,
    };
    let verdicts = oracle::check_all(&observed);
    let transcript = transcript::render(&observed, &verdicts, &notes);
    Ok(Report {
        transcript,
        steps: threads.iter().flat_map(|t| &t.runs).map(|r| r.steps).sum(),
        virtual_ms,
        violations: verdicts.violations,
        threads,
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

/// Applies one planted fault to the observed events; returns a note saying what it did.
fn plant(events: &mut Vec<Event>, fault: &FaultSpec) -> String {
    let first = |name: EventName| events.iter().position(|e| EventName::of(&e.kind) == name);
    match fault {
        FaultSpec::Drop { event } => match first(*event) {
            Some(i) => {
                events.remove(i);
                format!("planted fault: dropped the first {event} event")
            }
            None => format!("planted fault: no {event} event to drop"),
        },
        FaultSpec::SwapWithPrevious { event } => match first(*event) {
            Some(i) if i > 0 => {
                events.swap(i - 1, i);
                format!("planted fault: moved the first {event} event one place earlier")
            }
            _ => format!("planted fault: no {event} event to move"),
        },
    }
}

/// Whether a report meets its scenario's expectation (SPEC D5).
pub fn verdict(s: &Scenario, report: &Report) -> Result<(), String> {
    match s.expect {
        Expectation::Pass => match report.violations.first() {
            None => Ok(()),
            Some(v) => Err(format!(
                "oracle {} reported a violation (run {}): {}",
                v.oracle,
                v.run.as_deref().unwrap_or("-"),
                v.message
            )),
        },
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

/// The one command that replays a scenario (SPEC D2).
pub fn replay_command(path: &std::path::Path, seed: u64) -> String {
    format!("pai-sim run {} --seed {seed}", path.display())
}
