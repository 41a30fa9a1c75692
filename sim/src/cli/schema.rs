//! `pai-sim schema`: prints a published JSON Schema (SPEC D6): the scenario
//! format, or one line of the event log. `schema/` at the repository root
//! holds the same text; regenerate it with
//! `cargo run -p pai-sim -- schema scenario > schema/scenario.schema.json`.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context as _;
use pai_sim::{EventRecord, ScenarioSpec};

/// What `pai-sim schema` was asked.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Which schema: the scenario format, or one line of the event log.
    #[arg(value_enum, default_value_t = Which::Scenario)]
    which: Which,
}

/// The schemas by the names the command line takes.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Which {
    /// The scenario format (`scenarios/**/*.toml`, `.json`).
    Scenario,
    /// One line of the event log (JSON lines).
    Events,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let schema = match args.which {
        Which::Scenario => ScenarioSpec::schema(),
        Which::Events => EventRecord::schema(),
    };
    std::io::stdout()
        .lock()
        .write_all(pai_sim::schema_text(&schema).as_bytes())
        .context("writing the schema")?;
    Ok(ExitCode::SUCCESS)
}
