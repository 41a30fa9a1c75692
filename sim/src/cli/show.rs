//! `pai-sim show`: the transcript of one scenario under any seed, and
//! optionally a self-contained HTML timeline of the run.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use pai_sim::Scenario;

/// What `pai-sim show` was asked.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The scenario file.
    file: PathBuf,
    /// Run with this seed instead of the scenario's own.
    #[arg(long)]
    seed: Option<u64>,
    /// Also write a self-contained HTML timeline of the run here.
    #[arg(long)]
    html: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let scenario = match Scenario::load(&args.file) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{}", e.render(super::run::stderr_color()));
            return Ok(ExitCode::from(2));
        }
    };
    let seed = args.seed.unwrap_or(scenario.seed);
    let report = pai_sim::simulate(&scenario, seed)?;
    // A closed pipe (`| head`) is not an error: nobody reads any more.
    let _ = std::io::stdout()
        .lock()
        .write_all(report.transcript.as_bytes());
    if let Some(out) = &args.html {
        let page = pai_sim::timeline_html(&scenario, seed, &report);
        std::fs::write(out, page).with_context(|| format!("writing {}", out.display()))?;
        eprintln!("timeline written to {}", out.display());
    }
    let verdict = pai_sim::verdict(&scenario, &report);
    if let Err(problem) = &verdict {
        eprintln!("{problem}");
    }
    Ok(if verdict.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
