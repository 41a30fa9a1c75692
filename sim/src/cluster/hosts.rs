//! The software of each turmoil host: a worker (a runtime claiming runs
//! from the shared store), and the client host that plays the timeline
//! through a gateway runtime that stores sends and answers but drives
//! nothing. Everything a worker holds is built inside its host's software,
//! so a crash loses all of it; the store, the scripted models, the id
//! source and the recorders are the world's and survive.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pai_runtime::{
    Clock as _, Runtime, WorkerConfig,
    store::{ClientOp, StoreRequest},
};

use super::feed::Feeds;
use super::net::{RemoteStore, store_listening};
use super::triggers::Triggers;
use crate::hooks::{BuildContext, HistoryRead, SimContext};
use crate::play::{Played, WatchFeed, agent, play, run_settled, waits_for_a_client};
use crate::scenario::Scenario;
use crate::world::{
    ClusterLog, Recorder, ScriptedProvider, SharedProvider, SimIds, StoreWatch, VirtualClock,
};

/// What every host reaches of the world.
#[derive(Debug, Clone)]
pub struct Env {
    pub scenario: Arc<Scenario>,
    pub ids: Arc<SimIds>,
    pub provider: Arc<ScriptedProvider>,
    pub recorder: Arc<Recorder>,
    pub reads: Arc<Mutex<Vec<HistoryRead>>>,
    /// What the world lends the hooks: the summary log, the answer book.
    pub lent: BuildContext,
    /// What the store applied that the world reads as it goes (admissions,
    /// milestones).
    pub watch: Arc<StoreWatch>,
    /// The store's and the simulator's log.
    pub log: Arc<ClusterLog>,
    /// Whether the store host listens yet.
    pub store_up: Arc<AtomicBool>,
    /// The store's change feed and what each watcher received.
    pub feeds: Arc<Feeds>,
}

/// The client host's watchers subscribe at the store (H1, H5).
struct StoreFeed<'e> {
    env: &'e Env,
}

impl WatchFeed for StoreFeed<'_> {
    fn subscribe<'a>(
        &'a self,
        name: &'a str,
        client: &'a str,
        thread: &'a str,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + 'a>> {
        let agent = self.env.scenario.agent.name.clone();
        let open = StoreRequest::client(thread, agent, client, ClientOp::Open);
        let feeds = self.env.feeds.clone();
        Box::pin(async move {
            super::feed::subscribe(feeds, name, open)
                .await
                .map_err(|e| e.to_string())
        })
    }
}

impl Env {
    /// A runtime for host `name` whose store is reached over the network.
    fn runtime(&self, name: &str) -> Result<Runtime<SimContext>, String> {
        let s = &self.scenario;
        let c = s.cluster.as_ref().ok_or("no cluster")?;
        let (agent, context) = agent(s, &self.reads, &self.lent);
        let worker = WorkerConfig {
            name: Some(name.to_string()),
            lease_ttl: Some(c.settings.lease_ms),
            renew_every: c.settings.renew_ms,
            drive_sends: false,
            poll_every: c.settings.poll_ms,
        };
        Runtime::builder(agent, context)
            .models(SharedProvider(self.provider.clone()))
            .clock(Arc::new(VirtualClock::turmoil()))
            .ids(self.ids.clone())
            .events(self.recorder.clone())
            .store(Arc::new(RemoteStore::new(c.settings.request_timeout_ms)))
            .worker(worker)
            .build()
            .map_err(|e| e.to_string())
    }
}

/// A worker's software: claim, drive, repeat, until the simulation ends.
/// A worker that starts late waits for its start only at first boot.
pub async fn worker(env: Env, name: String, start_ms: u64) -> turmoil::Result {
    let now = VirtualClock::turmoil().now();
    tokio::time::sleep(Duration::from_millis(start_ms.saturating_sub(now))).await;
    store_listening(&env.store_up).await;
    let runtime = env.runtime(&name)?;
    runtime.work().await;
    Ok(())
}

/// What the client host leaves for the simulator.
#[derive(Debug, Default)]
pub struct ClientOut {
    pub played: Played,
    /// When every run was over or waiting, if that happened by the deadline.
    pub settled_at: Option<u64>,
}

/// The client host: plays the timeline; once the last fault has healed
/// (the safety phase is over), waits until every run is over or waiting
/// for a client (those of deleted incarnations included: no worker still
/// drives one), or the liveness deadline passes. A fault placed at a
/// request may still fire meanwhile: the phase then starts again after it
/// heals. Once the runs settle (or the deadline passes) nothing fires any
/// more, so no fault falls after the phase that judged liveness.
pub async fn client(
    env: Env,
    (timed_healed_at, triggers): (u64, Arc<Triggers>),
    out: Rc<RefCell<ClientOut>>,
) -> turmoil::Result {
    store_listening(&env.store_up).await;
    let runtime = env.runtime("client")?;
    let mut played = Played::default();
    let feed = StoreFeed { env: &env };
    play(
        &env.scenario,
        (&runtime, Some(&feed), &env.watch),
        &env.recorder,
        &mut played,
    )
    .await;
    out.borrow_mut().played = played;
    let clock = VirtualClock::turmoil();
    // Entries placed after a moment of a run end the timeline when they
    // are played, not at a time the file gives.
    let played_at = clock.now();
    let poll = env
        .scenario
        .cluster
        .as_ref()
        .map_or(20, |c| c.settings.poll_ms);
    // Bounded: the deadline is in the scenario's time.
    loop {
        let healed_at = timed_healed_at.max(triggers.healed_at());
        let now = clock.now();
        if now < healed_at || triggers.pending() {
            let healing = healed_at.saturating_sub(now).max(1);
            tokio::time::sleep(Duration::from_millis(healing)).await;
            continue;
        }
        if now >= liveness_deadline(&env.scenario, healed_at.max(played_at)) {
            triggers.disarm(now);
            feeds_caught_up(&env).await;
            return Ok(());
        }
        if settled(&runtime).await && !deleted_runs_driven(&env) && !triggers.pending() {
            triggers.disarm(clock.now());
            out.borrow_mut().settled_at = Some(clock.now());
            // Let the workers' last events (a run's end) be recorded.
            tokio::time::sleep(Duration::from_millis(poll)).await;
            feeds_caught_up(&env).await;
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(poll)).await;
    }
}

/// Waits until every watcher received what the store pushed it so far
/// (the client's link is never faulted: frames are only in flight).
async fn feeds_caught_up(env: &Env) {
    // Bounded: at most a second of virtual time.
    for _ in 0..1000 {
        if env.feeds.caught_up() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// When the liveness phase ends: the bound after the last fault heals
/// and the timeline was played (`healed_at`, whichever is later) and
/// after the last timeline entry, within the scenario's time limit.
fn liveness_deadline(s: &Scenario, healed_at: u64) -> u64 {
    let last_entry = s.timeline.iter().map(|m| m.at).max().unwrap_or(0);
    let liveness_ms = s.cluster.as_ref().map_or(0, |c| c.settings.liveness_ms);
    (healed_at.max(last_entry) + liveness_ms).min(s.time_limit_ms)
}

/// Whether every run of every thread is over, or waits for answers that
/// have not all come (a run whose answers are in still has to resume).
async fn settled(runtime: &Runtime<SimContext>) -> bool {
    let Ok(ids) = runtime.thread_ids().await else {
        return false;
    };
    for id in ids {
        let Ok(Some(t)) = runtime.inspect(&id).await else {
            return false;
        };
        let held = t.runs.iter().any(waits_for_a_client);
        if !t.runs.iter().all(|r| run_settled(r, held)) {
            return false;
        }
    }
    true
}

/// Whether a worker still drives a run whose incarnation was deleted: the
/// store ended it, but the worker learns of it only at its next renewal
/// or write, and logs the run's end then (SPEC H5).
fn deleted_runs_driven(env: &Env) -> bool {
    env.recorder.read(|events| {
        env.log
            .read(|log| !super::driven::deleted_runs_driven(events, log).is_empty())
    })
}
