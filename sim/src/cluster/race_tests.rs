//! Claim races: the seed, not the order of `[[workers]]`, picks who wins
//! a tie, and the loser's claim is logged.

use std::path::Path;

use crate::scenario::Scenario;
use crate::world::{ClusterEvent, StoreKind};

const RACE: &str = r#"
name = "two workers race for one run"
rules = ["K1"]
[[workers]]
name = "w1"
[[workers]]
name = "w2"
[cluster]
max_latency_ms = 0
[[model.turns]]
text = ["hi"]
[[timeline]]
send = "hello"
"#;

/// The worker that claims the first run, and whether a lost claim was logged.
fn race(text: &str, seed: u64) -> (String, bool) {
    let s = Scenario::parse(Path::new("race.toml"), text).expect("scenario");
    let ran = super::simulate(&s, seed, StoreKind::Memory, Default::default()).expect("run");
    let log = &ran.obs.cluster.as_ref().expect("cluster").log;
    let winner = log.iter().find_map(|r| match &r.what {
        ClusterEvent::Claimed { from, .. } => Some(from.clone()),
        _ => None,
    });
    let lost = log
        .iter()
        .any(|r| matches!(r.what, ClusterEvent::LostClaim { .. }));
    (winner.expect("a claim"), lost)
}

#[test]
fn the_seed_picks_the_winner_of_a_tie() {
    let runs: Vec<_> = (1..=16).map(|seed| race(RACE, seed)).collect();
    assert!(runs.iter().any(|(w, _)| w == "w1"), "{runs:?}");
    assert!(runs.iter().any(|(w, _)| w == "w2"), "{runs:?}");
    assert!(runs.iter().any(|(_, lost)| *lost), "{runs:?}");
}

#[test]
fn a_declared_order_lets_the_first_worker_win_every_tie() {
    let declared = RACE.replace("[cluster]", "[cluster]\nhost_order = \"declared\"");
    for seed in 1..=8 {
        assert_eq!(race(&declared, seed).0, "w1", "seed {seed}");
    }
}
