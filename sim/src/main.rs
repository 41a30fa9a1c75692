//! The `pai-sim` command line.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cli {
    pub mod fuzz;
    pub mod fuzz_merge;
    pub mod locate;
    #[cfg(feature = "record")]
    pub mod record;
    pub mod rules;
    pub mod run;
    pub mod schema;
    pub mod show;
}

#[derive(Debug, Parser)]
#[command(
    name = "pai-sim",
    version,
    about = "Deterministic scenario runner for pai-runtime"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Generate cases from a seed, run every oracle on each (twice), and
    /// shrink each failure into a scenario file.
    Fuzz(cli::fuzz::Args),
    /// Run scenario files and folders; compare each transcript with its snapshot.
    Run(cli::run::Args),
    /// Record a real conversation: a proxy to a provider that writes each
    /// streamed response to a file the simulator can replay.
    #[cfg(feature = "record")]
    Record(cli::record::Args),
    /// Record a real conversation (this binary was built without the
    /// feature `record`: it says how to build one with it).
    #[cfg(not(feature = "record"))]
    Record {
        /// The recorder's arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// List every rule with the scenarios, oracles and tests that check it,
    /// and the rules nothing checks.
    Rules(cli::rules::Args),
    /// Print the JSON Schema of the scenario format or of the event log
    /// (the files under schema/).
    Schema(cli::schema::Args),
    /// Print the transcript of one scenario under any seed; optionally
    /// write an HTML timeline of the run.
    Show(cli::show::Args),
}

fn main() -> ExitCode {
    pai_sim::quiet_planted_panics();
    match real_main() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn real_main() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    match cli.command {
        Command::Fuzz(args) => cli::fuzz::run(args),
        Command::Run(args) => cli::run::run(args),
        Command::Show(args) => cli::show::run(args),
        Command::Rules(args) => cli::rules::run(args),
        #[cfg(feature = "record")]
        Command::Record(args) => cli::record::run(args),
        #[cfg(not(feature = "record"))]
        Command::Record { .. } => {
            eprintln!(
                "this pai-sim was built without the recorder (its HTTP stack is not a default feature): \
                 cargo run --release -p pai-sim --features record -- record ..."
            );
            Ok(ExitCode::from(2))
        }
        Command::Schema(args) => cli::schema::run(args),
    }
}
