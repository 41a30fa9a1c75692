//! One deterministic run of a scenario: seeded rng, virtual clock, runtime,
//! timeline, oracles, transcript.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pai_runtime::{Agent, Event, Runtime, compose};

use crate::hooks::{self, SimContext};
use crate::oracle::{self, Violation};
use crate::scenario::{Action, Expect, FaultSpec, Scenario};
use crate::transcript;
use crate::world::{
    CallLog, Recorder, Rng, ScriptedModel, ScriptedProvider, ScriptedTool, SimIds, VirtualClock,
};

/// The provider handed to the runtime; the simulator keeps its own handle to
/// read the scripts afterwards.
#[derive(Debug)]
struct SharedProvider(Arc<ScriptedProvider>);

impl pai_runtime::ModelProvider for SharedProvider {
    fn model(&self, name: &str) -> Option<&dyn pai_runtime::LanguageModel> {
        pai_runtime::ModelProvider::model(&*self.0, name)
    }
}

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
    pub threads: Vec<pai_runtime::StoredThread>,
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

async fn simulate_in(s: &Scenario, seed: u64) -> Result<Report, SimError> {
    let rng = Arc::new(Mutex::new(Rng::new(seed)));
    let clock = Arc::new(VirtualClock::new());
    let ids = Arc::new(SimIds::new(rng));
    let recorder = Arc::new(Recorder::default());
    let log: CallLog = Arc::default();
    let script = |name: &str, spec| {
        Arc::new(ScriptedModel::new(
            name,
            spec,
            ids.clone(),
            clock.clone(),
            log.clone(),
        ))
    };
    let provider = Arc::new(ScriptedProvider {
        default: script("default", &s.model),
        by_name: s
            .models
            .iter()
            .map(|(name, spec)| (name.clone(), script(name, spec)))
            .collect(),
    });
    let mut agent = Agent::new(s.agent.name.clone(), s.agent.model.clone())
        .instructions(s.agent.instructions.clone())
        .max_steps(s.agent.max_steps);
    for t in &s.agent.tools {
        agent = agent.tool(Arc::new(ScriptedTool::new(t.clone())));
    }
    let agent = agent.lifecycle(compose(hooks::build(&s.lifecycle)));
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

    let mut timeline = s.timeline.clone();
    timeline.sort_by_key(|t| t.at);
    let start = tokio::time::Instant::now();
    let mut notes = Vec::new();
    let mut watches: Vec<(String, pai_runtime::Watch)> = Vec::new();
    let drive = async {
        let mut touched: Vec<(String, String)> = Vec::new();
        for entry in &timeline {
            tokio::time::sleep_until(start + Duration::from_millis(entry.at)).await;
            let thread = runtime
                .client(entry.client.clone())
                .thread(entry.thread.clone());
            let done = match entry.action() {
                Action::Send(text) => thread.send(text).await.map(drop),
                Action::Steer(text) => thread.steer(text).await.map(drop),
                Action::Cancel => thread.cancel().map(drop),
                Action::Watch(name, live) => thread
                    .watch(hooks::live_stages(live))
                    .map(|w| watches.push((name.to_string(), w))),
            };
            if let Err(e) = done {
                notes.push(format!(
                    "at {}ms {} could not act on {}: {e}",
                    entry.at, entry.client, entry.thread
                ));
                continue;
            }
            let key = (entry.client.clone(), entry.thread.clone());
            if !touched.contains(&key) {
                touched.push(key);
            }
        }
        for (client, thread) in touched {
            let _ = runtime
                .client(client)
                .thread(thread)
                .wait_until_idle()
                .await;
        }
    };
    let limit = Duration::from_millis(VIRTUAL_TIME_LIMIT_MS);
    if tokio::time::timeout(limit, drive).await.is_err() {
        notes.push(format!(
            "stopped: not idle after {VIRTUAL_TIME_LIMIT_MS}ms of virtual time"
        ));
    }
    use pai_runtime::Clock as _;
    let virtual_ms = clock.now();

    let mut events = recorder.take();
    for fault in &s.faults {
        notes.push(plant(&mut events, fault));
    }
    let threads: Vec<_> = runtime
        .thread_ids()
        .iter()
        .filter_map(|id| runtime.inspect(id))
        .collect();
    for m in provider.scripts() {
        let unused = m.unused_turns();
        if unused > 0 {
            notes.push(format!(
                "{unused} turn(s) of script {} were never used",
                m.script()
            ));
        }
    }
    let calls = log.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let mut live = Vec::new();
    for (name, watch) in &mut watches {
        while let Some(e) = watch.try_next() {
            live.push((name.clone(), e));
        }
    }
    let redacted: Vec<pai_runtime::Pattern> = s
        .lifecycle
        .iter()
        .filter_map(|h| match h {
            crate::scenario::HookSpec::Redact { patterns, .. } => {
                pai_runtime::text::patterns(patterns).ok()
            }
            _ => None,
        })
        .flatten()
        .collect();
    let violations = oracle::check_all(&oracle::Observed {
        events: &events,
        threads: &threads,
        calls: &calls,
        live: &live,
        redacted: &redacted,
    });
    let transcript = transcript::render(&transcript::Parts {
        scenario: s,
        seed,
        events: &events,
        calls: &calls,
        threads: &threads,
        violations: &violations,
        notes: &notes,
        live: &live,
    });
    Ok(Report {
        transcript,
        steps: threads.iter().flat_map(|t| &t.runs).map(|r| r.steps).sum(),
        virtual_ms,
        violations,
        threads,
    })
}

/// Applies one planted fault to the observed events; returns a note saying what it did.
fn plant(events: &mut Vec<Event>, fault: &FaultSpec) -> String {
    match fault {
        FaultSpec::Drop { event } => match events.iter().position(|e| e.kind.name() == event) {
            Some(i) => {
                events.remove(i);
                format!("planted fault: dropped the first {event} event")
            }
            None => format!("planted fault: no {event} event to drop"),
        },
        FaultSpec::SwapWithPrevious { event } => {
            match events.iter().position(|e| e.kind.name() == event) {
                Some(i) if i > 0 => {
                    events.swap(i - 1, i);
                    format!("planted fault: moved the first {event} event one place earlier")
                }
                _ => format!("planted fault: no {event} event to move"),
            }
        }
    }
}

/// Whether a report meets its scenario's expectation (SPEC D5).
pub fn verdict(s: &Scenario, report: &Report) -> Result<(), String> {
    match s.expect {
        Expect::Pass => match report.violations.first() {
            None => Ok(()),
            Some(v) => Err(format!(
                "oracle {} reported a violation (run {}): {}",
                v.oracle,
                v.run.as_deref().unwrap_or("-"),
                v.message
            )),
        },
        Expect::Violation => {
            let oracle = s.oracle.as_deref().unwrap_or("?");
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
        problems.push(format!(
            "D4: two runs with seed {seed} differ:\n{}",
            crate::snapshot::diff(
                &first.transcript,
                &second.transcript,
                "first run",
                "second run"
            )
        ));
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
