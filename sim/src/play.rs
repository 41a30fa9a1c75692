//! Playing a scenario's timeline through a runtime: the scenario's agent
//! (scripted tools, the composed hook library), each client action at its
//! virtual time or right after the moment of a run it is placed after,
//! recorded with the runtime's answer. Shared by the single runtime's run
//! and the client host among workers.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pai_runtime::{
    Agent, Clock as _, Runtime, ThreadHandle, compose,
    event::Watch,
    store::{RunRecord, RunStatus},
    tool::TypedTool,
};

use crate::hooks::{self, BuildContext, HistoryRead, SimContext};
use crate::scenario::{Action, After, AfterEvent, Moment, Scenario};
use crate::world::{self, ActionRecord, Answering, Milestone, Recorder, StoreWatch, VirtualClock};

/// The scenario's agent (scripted tools, the composed hook library) and
/// the context its hooks read.
pub(crate) fn agent(
    s: &Scenario,
    reads: &Arc<Mutex<Vec<HistoryRead>>>,
    lent: &BuildContext,
) -> (Agent<SimContext>, SimContext) {
    let mut agent = Agent::new(s.agent.name.clone(), s.agent.model.clone())
        .instructions(s.agent.instructions.clone())
        .max_steps(s.agent.max_steps);
    agent = s.agent_types.declare(agent);
    for t in &s.agent.tools {
        let tool = TypedTool::dynamic(world::runtime_tool(t));
        agent = agent.typed_tool(&tool);
        if let Some(spec) = &t.on_output {
            agent = agent.on_output(&tool, world::on_output(spec.clone()));
        }
    }
    let hooks = s.hooks.iter().map(|h| h.build(lent)).collect();
    let agent = agent.lifecycle(compose(hooks));
    let context = SimContext {
        docs: s.docs.clone(),
        reads: reads.clone(),
        author: s.agent_types.context(),
    };
    (agent, context)
}

/// What playing the timeline leaves behind, even if the time limit cuts it short.
#[derive(Debug, Default)]
pub(crate) struct Played {
    pub(crate) notes: Vec<String>,
    pub(crate) watches: Vec<(String, Watch)>,
    pub(crate) actions: Vec<ActionRecord>,
    /// Every (client, thread) an action touched, in first-touch order.
    pub(crate) touched: Vec<(String, String)>,
    /// Entries placed after a moment that never came: their index in the
    /// timeline, and why.
    pub(crate) missed: Vec<(usize, String)>,
}

/// Where watchers subscribe when they cannot sit in the process that
/// drives their thread: among workers, the store's change feed (H1, H5).
pub(crate) trait WatchFeed {
    /// Subscribes watcher `name` to `thread` for `client` (scope checked,
    /// the thread created if needed); an error is the store's answer.
    fn subscribe<'a>(
        &'a self,
        name: &'a str,
        client: &'a str,
        thread: &'a str,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + 'a>>;
}

/// Plays the timeline: each client action at its virtual time (from the
/// clock's zero), recorded with the runtime's answer. Watchers subscribe to
/// `feed` when given, else to the runtime's own process.
pub(crate) async fn play(
    s: &Scenario,
    (runtime, feed, watch): (&Runtime<SimContext>, Option<&dyn WatchFeed>, &StoreWatch),
    recorder: &Recorder,
    played: &mut Played,
) {
    let start = tokio::time::Instant::now();
    let clock = Now {
        turmoil: turmoil::sim_elapsed().is_some(),
        start,
    };
    let mut player = Player {
        runtime,
        feed,
        sends: BTreeMap::new(),
        snapshots: crate::play_facade::Snapshots::default(),
        by_id: s.timeline.iter().any(|m| m.action.names_call_by_id()),
        seen: BTreeMap::new(),
    };
    for (i, m) in s.timeline.iter().enumerate() {
        let placed = match &m.after {
            None => {
                clock.sleep_until(m.at).await;
                m.at
            }
            Some(a) => match player.wait_for(m, a, watch).await {
                Ok(()) => clock.now(),
                Err(why) => {
                    let missed =
                        format!("{} on {} {a} never came: {why}", m.action.name(), m.thread);
                    played.notes.push(missed.clone());
                    played.missed.push((i, missed));
                    continue;
                }
            },
        };
        let thread = runtime.client(m.client.clone()).thread(m.thread.clone());
        let seen = player.seen.entry(m.thread.clone()).or_default();
        if player.by_id {
            world::saw_calls(runtime, &m.thread, seen).await;
        }
        let before_event = recorder.len();
        let done = player.act(m, &thread, &mut played.watches).await;
        let times = (placed, clock.now());
        record(played, (i, m), (before_event, recorder.len()), times, done);
    }
}

/// The timeline's clock: turmoil's time among workers, else the paused
/// Tokio time since the timeline began.
struct Now {
    turmoil: bool,
    start: tokio::time::Instant,
}

impl Now {
    fn now(&self) -> u64 {
        match self.turmoil {
            true => VirtualClock::turmoil().now(),
            false => u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX),
        }
    }

    async fn sleep_until(&self, at: u64) {
        match self.turmoil {
            true => {
                let now = self.now();
                tokio::time::sleep(Duration::from_millis(at.saturating_sub(now))).await;
            }
            false => tokio::time::sleep_until(self.start + Duration::from_millis(at)).await,
        }
    }
}

/// How often (in polls of one virtual millisecond) a player waiting for a
/// moment looks whether its thread has settled without it.
const LOOK_EVERY: u32 = 20;

/// What the timeline's playing keeps from one action to the next.
struct Player<'a> {
    runtime: &'a Runtime<SimContext>,
    feed: Option<&'a dyn WatchFeed>,
    /// Run ids of each thread's sends, in order, for `cancel = { run = N }`.
    sends: BTreeMap<&'a str, Vec<String>>,
    snapshots: crate::play_facade::Snapshots,
    /// Whether the timeline names a call by id (`call = "#N"`): only then
    /// are each thread's calls sampled (a store read).
    by_id: bool,
    /// Each thread's calls as the timeline saw them, for `call = "#N"`.
    seen: BTreeMap<String, Vec<String>>,
}

/// What one action came to: the runtime's answer (or the error), the
/// check of an `expect_waiting`, and whether it reached the runtime.
struct Done {
    outcome: Result<Option<String>, String>,
    waiting_check: Option<String>,
    reached: bool,
}

impl<'a> Player<'a> {
    /// Waits until the run `a` names reached its moment, as the store
    /// applied it; `Err` with why once it can no longer come (its thread
    /// settled without it: every run over, or waiting for an answer this
    /// timeline has not given yet).
    async fn wait_for(&self, m: &Moment, a: &After, watch: &StoreWatch) -> Result<(), String> {
        let Some(run) = self
            .sends
            .get(m.thread.as_str())
            .and_then(|r| r.get(a.run - 1))
        else {
            return Err(format!("send #{} made no run", a.run));
        };
        let milestone = match a.event {
            AfterEvent::CommitStep => Milestone::CommitStep(a.step),
            AfterEvent::Wait => Milestone::Wait,
            AfterEvent::End => Milestone::End,
        };
        let came = || watch.reached(&m.thread, run, milestone) >= a.nth;
        // Bounded by the scenario's time limit: the run's own timeout
        // stops the simulation.
        for poll in 0u32.. {
            if came() {
                return self.still(m, a, run).await;
            }
            if poll % LOOK_EVERY == LOOK_EVERY - 1 && settled(self.runtime, &m.thread).await {
                return match came() {
                    true => Ok(()),
                    false => Err(format!("its thread settled without it (run {run})")),
                };
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        Ok(())
    }

    /// An answer, a steer or a trusted writer's action placed after a
    /// wait acts while its run still waits for an answer (nothing but this
    /// timeline can then move it): once an earlier entry's answer let the
    /// run resume, it would land wherever the run has got to, so it does
    /// not act.
    async fn still(&self, m: &Moment, a: &After, run: &str) -> Result<(), String> {
        let holds_still = matches!(
            m.action,
            Action::Send(_)
                | Action::Watch { .. }
                | Action::ExpectWaiting(_)
                | Action::Cancel(_)
                | Action::DeleteThread
        );
        if a.event != AfterEvent::Wait || holds_still {
            return Ok(());
        }
        let Ok(Some(t)) = self.runtime.inspect(&m.thread).await else {
            return Err("its thread is gone".into());
        };
        match t.runs.iter().find(|r| r.id == run) {
            Some(r) if waits_for_a_client(r) => Ok(()),
            _ => Err(format!("run {run} no longer waited for an answer")),
        }
    }

    /// Performs moment `m`'s action on `thread`.
    async fn act(
        &mut self,
        m: &'a Moment,
        thread: &ThreadHandle<SimContext>,
        watches: &mut Vec<(String, Watch)>,
    ) -> Done {
        let runtime = self.runtime;
        let seen = self.seen.entry(m.thread.clone()).or_default();
        let mut waiting_check = None;
        let mut reached = true;
        let outcome = match &m.action {
            Action::Send(text) => thread.send(text).await.map(|sent| {
                self.sends
                    .entry(&m.thread)
                    .or_default()
                    .push(sent.run_id.to_string());
                Ok(Some(sent.run_id.into()))
            }),
            Action::Steer(text) => thread.steer(text).await.map(|s| Ok(Some(s.run_id.into()))),
            Action::Cancel(None) => thread.cancel().await.map(|r| Ok(Some(r.into()))),
            Action::Cancel(Some(n)) => {
                match self.sends.get(m.thread.as_str()).and_then(|r| r.get(n - 1)) {
                    Some(run) => thread.cancel_run(run).await.map(|r| Ok(Some(r.into()))),
                    None => {
                        reached = false;
                        Err(pai_runtime::ClientError::NoRun {
                            thread: format!("{} (it has no send #{n} yet)", m.thread).into(),
                        })
                    }
                }
            }
            Action::Watch { name, .. } if let Some(feed) = self.feed => Ok(feed
                .subscribe(name, &m.client, &m.thread)
                .await
                .map(|()| None)),
            Action::Watch { name, live } => thread
                .watch(hooks::live_stages(live))
                .await
                .map(|w| watches.push((name.clone(), w)))
                .map(|()| Ok(None)),
            Action::Approve(c) => {
                Ok(world::answer(runtime, thread, c, Answering::Approve, seen).await)
            }
            Action::Deny(c, reason) => {
                Ok(world::answer(runtime, thread, c, Answering::Deny(reason), seen).await)
            }
            Action::Submit(c, output) => {
                Ok(world::answer(runtime, thread, c, Answering::Submit(output), seen).await)
            }
            Action::ExpectWaiting(calls) => {
                waiting_check = world::check_waiting(runtime, thread, calls, seen).await;
                Ok(Ok(None))
            }
            facade => Ok(crate::play_facade::facade(
                runtime,
                &m.client,
                &m.thread,
                facade,
                m.handle.as_deref(),
                &mut self.snapshots,
            )
            .await),
        };
        Done {
            outcome: flat(outcome),
            waiting_check,
            reached,
        }
    }
}

/// An action's answer as one result: the runtime's refusal as text.
fn flat(
    outcome: Result<Result<Option<String>, String>, impl std::fmt::Display>,
) -> Result<Option<String>, String> {
    match outcome {
        Ok(Ok(done)) => Ok(done),
        Ok(Err(e)) => Err(e),
        Err(e) => Err(e.to_string()),
    }
}

/// Records the `i`th moment's action and what it came to: the events
/// recorded before and after it, a note when it could not be done, the
/// (client, thread) it touched.
fn record(
    played: &mut Played,
    (i, m): (usize, &Moment),
    (before_event, after_event): (usize, usize),
    (at, done_at): (u64, u64),
    done: Done,
) {
    let Done {
        outcome,
        waiting_check,
        reached,
    } = done;
    let check = waiting_check.or_else(|| error_check(m, &outcome));
    if let Err(e) = &outcome {
        let expected = if m.expect_error.is_some() {
            " (expected)"
        } else {
            ""
        };
        let note = format!(
            "at {at}ms {} could not {} on {}{expected}: {e}",
            m.client,
            m.action.name(),
            m.thread
        );
        played.notes.push(note);
    }
    played.actions.push(ActionRecord {
        moment: i,
        at,
        done_at,
        after_event,
        before_event,
        reached,
        outcome,
        check,
    });
    let key = (m.client.clone(), m.thread.clone());
    if !played.touched.contains(&key) {
        played.touched.push(key);
    }
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

/// Whether every run of `thread` is over, or waits for answers that have
/// not all come (or is queued behind such a run): nothing more happens on
/// it until the timeline acts.
pub(crate) async fn settled(runtime: &Runtime<SimContext>, thread: &str) -> bool {
    let Ok(Some(t)) = runtime.inspect(thread).await else {
        return true;
    };
    let held = t.runs.iter().any(waits_for_a_client);
    t.runs.iter().all(|r| run_settled(r, held))
}

/// Over, waiting on answers that have not all come, or queued behind such
/// a run (`held`).
pub(crate) fn run_settled(r: &RunRecord, held: bool) -> bool {
    match r.status {
        RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled => true,
        RunStatus::Waiting => waits_for_a_client(r),
        RunStatus::Queued => held,
        RunStatus::Running => false,
    }
}

/// A run that waits on a call no answer has reached yet (and no cancel).
pub(crate) fn waits_for_a_client(r: &RunRecord) -> bool {
    r.status == RunStatus::Waiting
        && !r.cancel_requested
        && r.waiting.iter().any(|c| c.answer.is_none())
}
