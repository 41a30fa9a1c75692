//! Invariant oracles (SPEC D3, D7). Each judges one rule, in its own file,
//! after the run, from one observed value: the events, the stored threads,
//! the model calls and what watchers received. Oracles only observe; they
//! never steer a run.

mod h1;
mod h6;
mod m1;
mod observed;
mod phase_grammar;
mod request;
mod s3;
mod t1;
mod x3;

pub use observed::{Observed, Verdicts, Violation};

/// Runs every oracle over one run.
pub fn check_all(o: &Observed<'_>) -> Verdicts {
    let mismatches = request::mismatches(o);
    let mut violations = phase_grammar::check(o.events);
    violations.extend(t1::check(o.events));
    violations.extend(h1::versions(o.events, o.threads));
    violations.extend(m1::check(o.events, o.threads, o.calls));
    violations.extend(h6::check(o.calls));
    violations.extend(x3::check(o.events, o.threads));
    violations.extend(request::violations(o, &mismatches));
    violations.extend(s3::check(o));
    violations.extend(h1::watchers(o.live));
    Verdicts {
        violations,
        mismatches,
    }
}
