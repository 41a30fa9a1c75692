//! Invariant oracles (SPEC D3, D7). Each judges one rule, in its own file
//! named after it, after the run, from one observed value: the events, the
//! stored threads, the model calls, what watchers received, what clients did
//! and what history probes read. Oracles only observe; they never steer a
//! run, and references they need are written again here (reference.rs).

mod a2;
mod a3;
mod a4;
mod c1;
mod c2;
mod check;
mod composition;
mod facts;
#[cfg(test)]
mod facts_tests;
mod h1;
mod h2;
mod h3;
mod h4;
mod h5;
mod h5_bound;
mod h5_learned;
mod h5_watchers;
mod h6;
mod k1;
mod k2;
mod k2_lease;
mod k2_steps;
mod k3_confirm;
mod k4;
mod k5;
mod k5_hooks;
mod k6;
mod k6_heard;
mod l1;
mod l12;
mod l13;
mod l14;
mod l1_once;
mod l4;
mod lifecycle;
mod liveness;
mod lost;
mod m1;
mod m1_begun;
mod m1_cluster;
mod m1_order;
mod m1_visible;
mod m2;
mod m3;
mod observed;
mod p8;
mod r1_kept;
mod reference;
mod request;
mod rewrites;
mod routes;
mod s1;
mod s3;
mod s4;
mod t1;
mod t2;
mod t5;
mod t6;
mod t7;
mod t7_per_call;
mod t8_results;
mod t9;
mod t9_awaiting;
mod t9_cancelled;
mod x3;

pub use observed::{ClusterObs, Observations, Observed, Verdicts, Violation};

use crate::scenario::OracleName;

/// Runs every oracle over one run.
pub fn check_all(o: &Observed<'_>) -> Verdicts {
    let mismatches = request::mismatches(o);
    let mut violations = run_oracles(o, &mismatches);
    violations.extend(lease_and_thread_oracles(o));
    // A harness's own oracles, after the built-in ones (none without one).
    let findings = o.scenario.oracles.judge(o).into_iter();
    violations.extend(findings.map(|(name, f)| Violation {
        oracle: OracleName::User(name),
        run: f.run,
        message: f.message,
    }));
    Verdicts {
        violations,
        mismatches,
        twin: None,
    }
}

/// The oracles of a run's grammar, its requests and context, its hooks,
/// waits and steers.
fn run_oracles(o: &Observed<'_>, mismatches: &[(usize, String)]) -> Vec<Violation> {
    let stored = o.cluster.map(|_| o.threads);
    let raw = o.cluster.map_or(&[][..], |c| &c.raw_events[..]);
    let mut violations = l14::check(o.events, o.cut_short, stored, raw);
    violations.extend(t1::check(o.events));
    violations.extend(h1::versions_reported(o.commits, o.threads));
    if o.cluster.is_none() {
        violations.extend(h1::versions(o.events));
    }
    violations.extend(m1::check(o));
    violations.extend(m1_visible::check(o));
    violations.extend(m1_order::check(o));
    violations.extend(h6::check(o.calls));
    violations.extend(x3::check(o.events, o.threads));
    violations.extend(request::violations(o, mismatches));
    violations.extend(s1::check(o));
    violations.extend(s3::check(o));
    violations.extend(h1::watchers(o));
    violations.extend(l1::check(o));
    violations.extend(l1_once::check(o));
    violations.extend(l4::check(o));
    violations.extend(composition::check(o));
    violations.extend(l12::check(o));
    violations.extend(t2::check(o));
    violations.extend(t5::check(o));
    violations.extend(t7::check(o));
    violations.extend(t7_per_call::check(o));
    violations.extend(t9::check(o));
    violations.extend(t9_awaiting::check(o));
    violations.extend(t9_cancelled::check(o));
    violations.extend(t8_results::check(o));
    violations.extend(s4::check(o));
    violations.extend(a2::check(o));
    violations.extend(a3::check(o));
    violations.extend(a4::check(o));
    violations
}

/// The oracles of leases and workers, the store's versions, the thread
/// facade, compaction and liveness.
fn lease_and_thread_oracles(o: &Observed<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    match o.cluster {
        // Among workers, processes' logs interleave out of the store's
        // order: K1 and K2 are judged from the store's own log instead.
        Some(c) => {
            violations.extend(k2_lease::check(c));
            violations.extend(k3_confirm::check(c));
        }
        None => {
            violations.extend(k1::check(o));
            violations.extend(k2::check(o));
        }
    }
    violations.extend(k5::check(o));
    violations.extend(k5_hooks::check(o));
    violations.extend(k6::check(o));
    violations.extend(k6_heard::check(o));
    violations.extend(lifecycle::check(o));
    violations.extend(m2::check(o));
    violations.extend(m3::check(o));
    violations.extend(p8::check(o));
    violations.extend(routes::check(o));
    violations.extend(check::check(o));
    violations.extend(t6::check(o));
    violations.extend(l13::check(o));
    violations.extend(k2_steps::check(o.threads));
    violations.extend(h2::check(o));
    violations.extend(h3::check(o));
    violations.extend(h4::check(o));
    violations.extend(h5::check(o));
    violations.extend(h5_watchers::check(o));
    violations.extend(h5_bound::check(o));
    violations.extend(k4::check(o));
    violations.extend(lost::check(o));
    violations.extend(r1_kept::check(o));
    violations.extend(c1::check(o));
    violations.extend(c2::check(o));
    if let Some(c) = o.cluster {
        violations.extend(liveness::check(c, o.threads));
    }
    violations
}
