//! Where the suite is when no path is given: the nearest `scenarios/`
//! folder, in the working folder or one above it, so that every subcommand
//! works from any folder of a checkout.

use std::path::PathBuf;

use anyhow::{Context as _, bail};

/// The nearest `scenarios/` folder, relative to the working folder; else
/// an error saying where it looked and what to do: `give` names the
/// subcommand's way of giving paths (`pai-sim run PATH ...`).
pub fn scenarios_dir(give: &str) -> anyhow::Result<PathBuf> {
    let here = std::env::current_dir().context("reading the working folder")?;
    match pai_sim::nearest_scenarios(&here) {
        Some(found) => Ok(found),
        None => bail!(
            "no scenarios/ folder in {} or any folder above it; give the paths to read \
             (`{give}`), or run inside a pai-sim checkout",
            here.display()
        ),
    }
}

/// The folder the nearest `scenarios/` lies in (the checkout's root),
/// relative to the working folder; the working folder when there is none.
pub fn suite_root() -> PathBuf {
    let here = std::env::current_dir().unwrap_or_default();
    pai_sim::nearest_scenarios(&here)
        .and_then(|s| s.parent().map(|p| p.to_path_buf()))
        .unwrap_or_default()
}
