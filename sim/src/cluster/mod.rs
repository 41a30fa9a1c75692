//! Several workers on one store under turmoil (SPEC K2, K3, K5): the store
//! is a host serving the store protocol over simulated TCP (`net.rs`,
//! `store_host.rs`), each worker a host running a runtime that claims runs
//! (`hosts.rs`), and the timeline a client host. The simulator's loop steps
//! turmoil one tick at a time and carries out the scenario's faults at
//! their virtual times (crash and restart, partition and heal, hold and
//! release, pause and resume), and the faults placed at a store request
//! right after the step in which that request arrived (`triggers.rs`);
//! `log.rs` records them beside what the store did with leases. One seed drives turmoil's rng (message latencies) and
//! the world's (ids, models), so a run replays exactly (D1).

mod driven;
mod feed;
mod feed_server;
mod hosts;
mod linear;
mod net;
#[cfg(test)]
mod race_tests;
mod store_host;
mod triggers;
#[cfg(test)]
mod unfired_tests;
mod wire;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use pai_runtime::store::{AdminOp, AdminReply, StoreReply, StoreRequest, StoredThread};

use crate::hooks::BuildContext;
use crate::oracle::{ClusterObs, Observations};
use crate::report::{Ran, SimError, unused_turns};
use crate::scenario::{Action, Cluster, FaultAction, HostOrder, Scenario, Timed};
use crate::world::{
    ActionRecord, AnswerBook, ClusterEvent, ClusterLog, Plan, Recorder, Rng, ScriptedProvider,
    SimIds, StoreKind, StoreWatch, VirtualClock,
};
use hosts::{ClientOut, Env};
use net::STORE_HOST;
use store_host::StoreHost;
use triggers::Triggers;

/// The simulated time one turmoil step advances.
const TICK_MS: u64 = 1;

/// Runs a scenario with `[[workers]]` under turmoil, its world's answers
/// following `plan`.
pub(crate) fn simulate(
    s: &Scenario,
    seed: u64,
    kind: StoreKind,
    plan: Plan,
) -> Result<Ran, SimError> {
    let cluster = s
        .cluster
        .clone()
        .ok_or_else(|| SimError::Setup("the scenario has no workers".into()))?;
    let rng = Arc::new(Mutex::new(Rng::new(seed)));
    let ids = Arc::new(SimIds::new(rng));
    let clock = Arc::new(VirtualClock::turmoil());
    let recorder = Arc::new(Recorder::default());
    let watch = Arc::new(StoreWatch::default());
    let lent = BuildContext {
        answers: Arc::new(AnswerBook::new(watch.clone(), plan)),
        ..BuildContext::default()
    };
    let provider = Arc::new(ScriptedProvider::new(s, &ids, &clock, &lent.answers));
    let log = Arc::new(ClusterLog::new(recorder.clone()));
    let env = Env {
        scenario: Arc::new(s.clone()),
        ids,
        provider: provider.clone(),
        recorder: recorder.clone(),
        reads: Arc::new(Mutex::new(Vec::new())),
        lent,
        watch: watch.clone(),
        log: log.clone(),
        store_up: Default::default(),
        feeds: Default::default(),
    };
    let triggers = Arc::new(Triggers::new(cluster.placed.clone()));
    let store = Arc::new(StoreHost::new(
        cluster.bugs,
        log.clone(),
        triggers.clone(),
        (kind, env.feeds.clone(), watch),
    )?);
    let mut sim = turmoil_sim(s, seed, &cluster);
    let host = store.clone();
    let up = env.store_up.clone();
    sim.host(STORE_HOST, move || net::serve(host.clone(), up.clone()));
    for (name, start) in cluster.workers.iter().zip(&cluster.starts) {
        let (env, owned, start) = (env.clone(), name.clone(), *start);
        sim.host(name.as_str(), move || {
            hosts::worker(env.clone(), owned.clone(), start)
        });
    }
    let out = Rc::new(RefCell::new(ClientOut::default()));
    let phases = (cluster.healed_at(), triggers.clone());
    sim.client("client", hosts::client(env.clone(), phases, out.clone()));
    // turmoil panics on what it cannot simulate; that is a failed run of
    // the harness, never a crash of the suite or the fuzzer.
    let driven = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        drive(&mut sim, s, &cluster, (&log, &triggers))
    }));
    let cut_short = match driven {
        Ok(done) => done?,
        Err(p) => {
            return Err(SimError::Setup(format!(
                "turmoil panicked: {}",
                crate::observe::panic_text(&*p)
            )));
        }
    };
    let virtual_ms = millis(sim.elapsed());
    let out = std::mem::take(&mut *out.borrow_mut());
    let mut ran = observe((&cluster, &triggers), store, (&env, &log), out, cut_short);
    ran.virtual_ms = virtual_ms;
    ran.unused = unused_turns(&provider);
    ran.plan = env.lent.answers.plan();
    Ok(ran)
}

/// The turmoil simulation `s` runs in with `seed`: its tick, its time
/// (twice the scenario's limit), the network's latencies.
fn turmoil_sim<'a>(s: &Scenario, seed: u64, cluster: &Cluster) -> turmoil::Sim<'a> {
    let mut builder = turmoil::Builder::new();
    // Hosts run in an order drawn from the seed at every tick, so who
    // wins a tie (two claims in one tick) is the seed's choice, never the
    // order the workers were declared in (unless the scenario pins it).
    if cluster.settings.host_order == HostOrder::Seeded {
        builder.enable_random_order();
    }
    builder
        .rng_seed(seed)
        .epoch(UNIX_EPOCH)
        .tick_duration(Duration::from_millis(TICK_MS))
        .simulation_duration(Duration::from_millis(s.time_limit_ms.saturating_mul(2)))
        .min_message_latency(Duration::ZERO)
        .max_message_latency(Duration::from_millis(cluster.settings.max_latency_ms))
        // Messages held for long (a pause, a hold) arrive at once when
        // released, every timed-out request's reconnect among them.
        .tcp_capacity(1 << 16)
        .build()
}

/// Steps turmoil until the client is done, carrying out faults as their
/// times come, and those placed at a request right after the step in
/// which it arrived (their ends join the schedule); `true` if the time
/// limit cut the run short.
fn drive(
    sim: &mut turmoil::Sim<'_>,
    s: &Scenario,
    c: &Cluster,
    (log, triggers): (&ClusterLog, &Triggers),
) -> Result<bool, SimError> {
    let mut schedule = std::collections::VecDeque::from(c.schedule.clone());
    // Bounded: one tick per step up to the time limit.
    loop {
        let now = millis(sim.elapsed());
        for p in triggers.take_due(now) {
            let t = Timed {
                at: now,
                action: p.action,
                worker: p.worker.clone(),
            };
            fault(sim, &t);
            log.push(now, fault_event(&t, Some(p.describe())));
            if let Some(length) = p.length {
                let end = Timed {
                    at: now + length,
                    action: p.end,
                    worker: p.worker.clone(),
                };
                // After the faults already due at that time (file order).
                let at = schedule.partition_point(|t| t.at <= end.at);
                schedule.insert(at, end);
            }
        }
        while schedule.front().is_some_and(|t| t.at <= now) {
            let Some(t) = schedule.pop_front() else {
                break;
            };
            fault(sim, &t);
            log.push(now, fault_event(&t, None));
        }
        if now >= s.time_limit_ms {
            return Ok(true);
        }
        match sim.step() {
            Ok(true) => return Ok(false),
            Ok(false) => {}
            Err(e) => return Err(SimError::Setup(format!("turmoil: {e}"))),
        }
    }
}

fn fault_event(t: &Timed, placed: Option<String>) -> ClusterEvent {
    ClusterEvent::Fault {
        action: t.action,
        worker: t.worker.clone(),
        placed,
    }
}

/// Carries out one fault.
fn fault(sim: &mut turmoil::Sim<'_>, t: &Timed) {
    let w = t.worker.as_str();
    match t.action {
        FaultAction::Crash => sim.crash(w),
        FaultAction::Restart => sim.bounce(w),
        FaultAction::Partition => sim.partition(w, STORE_HOST),
        FaultAction::Heal => sim.repair(w, STORE_HOST),
        FaultAction::Hold | FaultAction::Pause => sim.hold(w, STORE_HOST),
        FaultAction::Release | FaultAction::Resume => sim.release(w, STORE_HOST),
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Everything the run left, for the oracles and the transcript.
fn observe(
    (c, triggers): (&Cluster, &Triggers),
    store: Arc<StoreHost>,
    (env, log): (&Env, &ClusterLog),
    out: ClientOut,
    cut_short: bool,
) -> Ran {
    let s = &env.scenario;
    let raw = env.recorder.take();
    let log = log.take();
    let mut actions = out.played.actions;
    let cancel_on = |a: &ActionRecord| {
        let m = &s.timeline[a.moment];
        matches!(m.action, Action::Cancel(_)).then_some(m.thread.as_str())
    };
    let cancels = linear::cancel_records(&actions, cancel_on, &log);
    let asked: Vec<usize> = cancels.values().flatten().copied().collect();
    let linear = linear::linearize(&raw, &log, &asked);
    linear::place_actions(&mut actions, &cancels, &linear);
    let (live, watch_closed) = env.feeds.take();
    let obs = Observations {
        events: linear.events,
        threads: stored_threads(&store),
        calls: env.provider.take_calls(),
        live,
        actions,
        reads: env.reads.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        summaries: env
            .lent
            .summaries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone(),
        // The store tap and client views are one-process observations.
        tap: Default::default(),
        commits: store.take_commits(),
        client_views: Vec::new(),
        cut_short,
        cluster: Some(ClusterObs {
            raw_events: raw,
            log,
            lease_ms: c.settings.lease_ms,
            healed_at: c.healed_at().max(triggers.healed_at()),
            unfired: triggers.unfired(),
            liveness_ms: c.settings.liveness_ms,
            settled_at: out.settled_at,
            watch_closed,
            retired: store.take_retired(),
        }),
    };
    Ran {
        obs,
        notes: out.played.notes,
        missed: out.played.missed,
        unused: Vec::new(),
        virtual_ms: 0,
        plan: Plan::new(),
    }
}

/// The store's threads at the end, read directly (the store is the world's).
fn stored_threads(store: &StoreHost) -> Vec<StoredThread> {
    let Ok(StoreReply::Admin(AdminReply::Ids(ids))) = store.store().apply(StoreRequest::ThreadIds)
    else {
        return Vec::new();
    };
    let inspect = |thread| StoreRequest::admin(thread, AdminOp::Inspect);
    ids.into_iter()
        .filter_map(|thread| match store.store().apply(inspect(thread)) {
            Ok(StoreReply::Admin(AdminReply::Thread(t))) => t,
            _ => None,
        })
        .collect()
}
