//! Writing a shrunk failure as an ordinary scenario file a person can read
//! and replay with `pai-sim run FILE`.

use std::io;
use std::path::{Path, PathBuf};

use super::judge::Failure;
use crate::scenario::ScenarioSpec;

/// Writes `spec` (shrunk from case `index` of the campaign with `seed`)
/// into `dir`; returns the file. TOML when the spec survives a write and a
/// load unchanged, JSON otherwise.
pub fn write_find(
    dir: &Path,
    spec: &ScenarioSpec,
    failure: &Failure,
    (seed, index, steps): (u64, u64, usize),
) -> io::Result<PathBuf> {
    let mut spec = spec.clone();
    spec.name = format!("fuzz find: {failure} (campaign seed {seed}, case {index})");
    spec.rules = vec![failure.rule().to_string()];
    spec.description = Some(format!(
        "Found by `pai-sim fuzz --seed {seed}` at case {index} and shrunk in {steps} steps. \
         The run fails: {failure}. Replay it with `pai-sim run` on this file{}.",
        match failure.replay_flags() {
            "" => String::new(),
            flags => format!(" and `{}`", flags.trim()),
        }
    ));
    std::fs::create_dir_all(dir)?;
    let stem = format!("fuzz-{}-{seed}-{index}", failure.rule().to_lowercase());
    let toml_file = dir.join(format!("{stem}.toml"));
    if let Ok(text) = toml::to_string(&spec)
        && ScenarioSpec::parse(&toml_file, &text).is_ok_and(|back| back == spec)
    {
        std::fs::write(&toml_file, text)?;
        return Ok(toml_file);
    }
    let json_file = dir.join(format!("{stem}.json"));
    let text = serde_json::to_string_pretty(&spec).map_err(io::Error::other)?;
    std::fs::write(&json_file, text + "\n")?;
    Ok(json_file)
}
