//! The checks of workers and their faults: faults placed at a store
//! request name a worker, a request kind and a count that exist.

use std::path::Path;

use crate::scenario::{FaultAction, Scenario};

const WORKERS: &str = r#"
name = "x"
rules = ["K3"]
[[workers]]
name = "w1"
[[workers]]
name = "w2"
[[timeline]]
send = "hi"
"#;

fn with_fault(fault: &str) -> Result<Scenario, String> {
    let text = format!("{WORKERS}\n[[faults]]\n{fault}\n");
    Scenario::parse(Path::new("a.toml"), &text).map_err(|e| e.message)
}

#[test]
fn a_fault_placed_at_a_request_is_checked_into_the_placed_list() {
    let s = with_fault(
        "kind = \"partition\"\nworker = \"w2\"\nheal_after_ms = 300\nat = { worker = \"w1\", request = \"claim\", nth = 2, lost = true }",
    )
    .unwrap();
    let c = s.cluster.unwrap();
    assert!(c.schedule.is_empty());
    let p = &c.placed[0];
    assert_eq!(
        (p.by.as_str(), p.request, p.nth, p.lost),
        ("w1", "claim", 2, true)
    );
    assert_eq!(
        (p.action, p.end, p.length),
        (FaultAction::Partition, FaultAction::Heal, Some(300))
    );
    assert_eq!(p.describe(), "at w1's claim #2, the request lost");
}

#[test]
fn a_placed_fault_s_worker_defaults_to_its_own() {
    let s = with_fault("kind = \"crash\"\nworker = \"w1\"\nat = { request = \"wait\" }").unwrap();
    let p = &s.cluster.unwrap().placed[0];
    assert_eq!((p.by.as_str(), p.nth, p.lost), ("w1", 1, false));
    assert_eq!(p.describe(), "at its wait #1, its answer in flight");
}

#[test]
fn nth_zero_is_refused_where_it_is() {
    let e = with_fault("kind = \"hold\"\nworker = \"w1\"\nrelease_after_ms = 50\nat = { request = \"renew\", nth = 0 }")
        .unwrap_err();
    assert_eq!(e, "faults[0].at.nth: counts from 1");
}

#[test]
fn a_trigger_worker_that_does_not_exist_is_refused() {
    let e = with_fault(
        "kind = \"crash\"\nworker = \"w1\"\nat = { worker = \"w9\", request = \"claim\" }",
    )
    .unwrap_err();
    assert_eq!(e, "faults[0].at.worker: no worker is named \"w9\"");
}

#[test]
fn a_request_kind_that_does_not_exist_is_refused_with_the_kinds() {
    let e =
        with_fault("kind = \"pause\"\nworker = \"w1\"\nfor_ms = 50\nat = { request = \"wiat\" }")
            .unwrap_err();
    assert!(
        e.starts_with(
            "faults[0].at.request: no store request is of kind \"wiat\"; the kinds: submit, open,"
        ),
        "{e}"
    );
    for k in pai_runtime::store::StoreRequest::KINDS {
        assert!(e.contains(k), "{e} lacks {k}");
    }
}

#[test]
fn both_or_neither_of_at_ms_and_at_is_refused() {
    let both =
        with_fault("kind = \"crash\"\nworker = \"w1\"\nat_ms = 5\nat = { request = \"claim\" }")
            .unwrap_err();
    assert_eq!(
        both,
        "faults[0]: give at_ms (a time) or at (a store request), not both"
    );
    let neither = with_fault("kind = \"crash\"\nworker = \"w1\"").unwrap_err();
    assert_eq!(
        neither,
        "faults[0]: give at_ms (a time) or at (a store request)"
    );
}

#[test]
fn a_timed_fault_is_scheduled_as_before() {
    let s = with_fault("kind = \"crash\"\nworker = \"w2\"\nat_ms = 100\nrestart_after_ms = 50")
        .unwrap();
    let c = s.cluster.unwrap();
    assert!(c.placed.is_empty());
    let at: Vec<_> = c.schedule.iter().map(|t| (t.at, t.action)).collect();
    assert_eq!(at, [(100, FaultAction::Crash), (150, FaultAction::Restart)]);
    assert_eq!(c.healed_at(), 150);
}
