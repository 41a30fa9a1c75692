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
    let how = format!(
        "Found by `pai-sim fuzz --seed {seed}` at case {index} and shrunk in {steps} steps. \
         The run fails: {failure}. Replay it with `pai-sim run` on this file{}.",
        match failure.replay_flags() {
            "" => String::new(),
            flags => format!(" and `{}`", flags.trim()),
        }
    );
    write_find_as(dir, spec, failure, (seed, index), how)
}

/// [`write_find`] with `how` as the file's description (how it was found
/// and how to replay it).
pub fn write_find_as(
    dir: &Path,
    spec: &ScenarioSpec,
    failure: &Failure,
    (seed, index): (u64, u64),
    how: String,
) -> io::Result<PathBuf> {
    let mut spec = spec.clone();
    spec.name = format!("fuzz find: {failure} (campaign seed {seed}, case {index})");
    spec.rules = vec![failure.rule().to_string()];
    spec.description = Some(how);
    mark_unknown_tools(&mut spec);
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

/// Shrinking may remove a tool its scripts still call: those calls are
/// part of the find, so the file says it means them (no load warning).
fn mark_unknown_tools(spec: &mut ScenarioSpec) {
    let scripts = std::iter::once(&spec.model).chain(spec.models.values());
    let calls = scripts.flat_map(|m| &m.turns).flat_map(|t| &t.tool_calls);
    let mut unknown: Vec<String> = calls
        .map(|c| c.tool.clone())
        .filter(|t| !spec.agent.tools.iter().any(|e| e.name() == t))
        .collect();
    unknown.sort();
    unknown.dedup();
    spec.agent.unknown_tools = unknown;
}

/// What a shrunk find is, apart from the words that name its case (name,
/// description, rules): two finds with one digest are the same scenario,
/// whichever case or shard found them. FNV-1a over the spec's JSON, so it
/// is the same on every machine (`pai-sim fuzz merge` de-duplicates by it).
pub fn find_digest(spec: &ScenarioSpec) -> u64 {
    let mut bare = spec.clone();
    bare.name.clear();
    bare.description = None;
    bare.rules.clear();
    let bytes = serde_json::to_vec(&bare).unwrap_or_default();
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h: u64, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_ignores_the_case_name_but_not_the_scenario() {
        let path = Path::new("plain_answer.toml");
        let text = include_str!("../../../scenarios/basics/plain_answer.toml");
        let a = ScenarioSpec::parse(path, text).expect("the suite's own scenario loads");
        let mut b = a.clone();
        b.name = "fuzz find: another case".into();
        b.description = Some("found elsewhere".into());
        b.rules = vec!["K3".into()];
        assert_eq!(find_digest(&a), find_digest(&b));
        b.seed = a.seed.wrapping_add(1);
        assert_ne!(find_digest(&a), find_digest(&b));
    }
}
