//! The agent's scenarios (`tests/scenarios/`), each run twice with every
//! oracle (the simulator's and the agent's) and compared with its
//! snapshot in `tests/snapshots/`. A new or changed transcript is left as
//! a `.snap.new` for `cargo insta review`.

use crate::harness::harness;

#[test]
fn every_scenario_passes_every_oracle_and_matches_its_snapshot() {
    harness().run_dir("tests/scenarios");
}

/// An editor completes the agent's hooks in scenario files from this
/// schema (`#:schema ../scenario.schema.json` on a file's first line);
/// it is kept current, as a snapshot is.
#[test]
fn the_scenario_schema_is_current() {
    let text = pai_sim::schema_text(&harness().schema());
    let path = "tests/scenario.schema.json";
    let stored = std::fs::read_to_string(path).unwrap_or_default();
    if stored != text && std::env::var_os("CI").is_none() {
        std::fs::write(path, &text).expect("write the schema");
        return;
    }
    assert!(
        stored == text,
        "{path} is stale: run `cargo test -p support-agent` outside CI and commit it"
    );
}
