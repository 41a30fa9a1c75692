//! A worker fault placed at a store request that never comes fails the
//! scenario, naming the fault (README: "a placed fault whose request never
//! came fails the scenario with a note"); one that fires does not. Under a
//! seed other than the scenario's own the run is a pure oracle check: the
//! placement that never fired is only noted.

use std::path::Path;

use crate::scenario::Scenario;

/// Two workers; w1 drives a one-tool run and renews a few times. The
/// fault holds w1 at its `nth` renewal.
fn held_at_renewal(nth: usize) -> Scenario {
    let text = format!(
        r#"
name = "a hold placed at w1's renewal #{nth}"
rules = ["K3"]
seed = 3
[[workers]]
name = "w1"
[[workers]]
name = "w2"
start_ms = 50
[[agent.tools]]
name = "charge"
latency_ms = 50
output = {{ charged = true }}
[[model.turns]]
latency_ms = 20
tool_calls = [{{ tool = "charge", input = {{ amount = 10 }} }}]
[[model.turns]]
latency_ms = 20
text = ["Charged."]
[[timeline]]
send = "Charge 10."
[[faults]]
kind = "partition"
worker = "w2"
at_ms = 1
heal_after_ms = 10
[[faults]]
kind = "hold"
worker = "w1"
at = {{ request = "renew", nth = {nth} }}
release_after_ms = 1000
"#
    );
    Scenario::parse(Path::new("held.toml"), &text).expect("scenario")
}

#[test]
fn a_fault_placed_at_a_request_that_never_came_fails_the_run() {
    let s = held_at_renewal(50);
    let (report, problems) = crate::check(&s, s.seed).expect("run");
    let named: Vec<&String> = problems
        .iter()
        .filter(|p| p.contains("faults[1]: hold w1 at its renew #50 never fired"))
        .collect();
    assert_eq!(named.len(), 1, "{problems:#?}");
    assert!(named[0].contains("the store received"), "{}", named[0]);
    assert!(named[0].contains("does not test what the fault was placed for"));
    assert_eq!(report.unfired_faults.len(), 1);
    assert!(
        report
            .transcript
            .contains("note: hold w1 at its renew #50 never fired")
    );
}

#[test]
fn a_fault_placed_at_a_request_that_came_passes() {
    let s = held_at_renewal(1);
    let (report, problems) = crate::check(&s, s.seed).expect("run");
    assert!(
        report.unfired_faults.is_empty(),
        "{:?}",
        report.unfired_faults
    );
    assert!(
        !problems.iter().any(|p| p.contains("never fired")),
        "{problems:#?}"
    );
}

#[test]
fn under_another_seed_an_unfired_placement_is_only_noted() {
    let s = held_at_renewal(50);
    let (report, problems) = crate::check(&s, s.seed + 1).expect("run");
    assert!(report.unfired_faults.is_empty());
    assert!(
        !problems.iter().any(|p| p.contains("never fired")),
        "{problems:#?}"
    );
    assert!(
        report
            .transcript
            .contains("(not judged under a seed other than 3)")
    );
}
