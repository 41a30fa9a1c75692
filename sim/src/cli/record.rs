//! `pai-sim record`: a recording proxy between a client and a real
//! provider (cargo feature `record`, on by default). Each response body
//! streams through to the client and is written byte for byte to
//! `OUT/turn-NNN.sse` (or `.body` for anything but an event stream), the
//! request beside it; one line per turn on stderr. It stops after
//! `--max-turns` turns or at Ctrl-C (the turns under way finish first) and
//! prints the `[model]` table that replays them. The proxy itself is
//! `pai_providers::Recorder`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use pai_providers::{RecordConfig, Recorder, Turn};

/// What `pai-sim record` was asked.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The provider's root: requests go to this URL followed by their own
    /// path and query (`https://api.openai.com`, `https://api.anthropic.com`,
    /// `http://127.0.0.1:8080` for a local server).
    #[arg(long, value_name = "URL")]
    upstream: String,
    /// The folder the recordings go to; it must hold no `turn-*` file yet.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// The address to listen on (port 0: any free port, printed at start).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8089")]
    listen: SocketAddr,
    /// Stop after this many turns (default: run until Ctrl-C).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_turns: Option<u64>,
    /// Seconds the upstream may take to answer, and then between two
    /// chunks of a body, before the turn ends as a stall.
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    idle_timeout: u64,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let turns = runtime.block_on(serve(&args))?;
    if !turns.is_empty() {
        let mut out = std::io::stdout().lock();
        out.write_all(replay_table(&turns).as_bytes())
            .context("writing the replay table")?;
    }
    let failed = turns.iter().filter(|t| t.error.is_some()).count();
    if failed > 0 {
        eprintln!("{failed} of {} turns were not recorded whole", turns.len());
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// Binds, says where, and serves until the turn limit.
async fn serve(args: &Args) -> anyhow::Result<Vec<Turn>> {
    let limit = args
        .max_turns
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    let config = RecordConfig::new(&args.upstream, &args.out)
        .max_turns(limit)
        .idle_timeout(Duration::from_secs(args.idle_timeout))
        .on_turn(|turn| eprintln!("{turn}"));
    let recorder = Recorder::bind(args.listen, config).await?;
    let addr = recorder.local_addr();
    eprintln!(
        "recording on http://{addr} into {}: http://{addr}/PATH goes to {}/PATH",
        args.out.display(),
        args.upstream.trim_end_matches('/'),
    );
    let interrupted = async {
        match tokio::signal::ctrl_c().await {
            Ok(()) => eprintln!("interrupted: finishing the turns under way"),
            // No handler: Ctrl-C ends the process as usual.
            Err(_) => std::future::pending().await,
        }
    };
    Ok(recorder.run_until(interrupted).await?)
}

/// The `[model]` table replaying the recorded turns in order, their
/// format the one their paths name (`openai-chat` when none does).
fn replay_table(turns: &[Turn]) -> String {
    let files: Vec<String> = turns
        .iter()
        .filter_map(|t| t.recording.as_ref())
        .map(|p| toml::Value::String(p.display().to_string()).to_string())
        .collect();
    let format = turns
        .iter()
        .find_map(|t| t.format)
        .map_or("openai-chat", |f| f.as_str());
    format!(
        "[model]\nreplay = [{}]\nformat = \"{format}\"\n",
        files.join(", ")
    )
}
