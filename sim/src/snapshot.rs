//! Snapshot files in insta's format, so `cargo insta review` shows what the
//! CLI leaves pending and the test suite and the CLI share one set of files.

use std::io;
use std::path::{Component, Path, PathBuf};

/// The source insta records for scenario snapshots.
pub const SOURCE: &str = "sim/tests/scenarios.rs";

/// Snapshot name for a scenario path: its path below `scenarios/`, without the
/// extension, `/` replaced by `__` (`scenarios/tools/parallel.toml` → `tools__parallel`).
pub fn name_for(path: &Path) -> String {
    let comps: Vec<String> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    let start = comps
        .iter()
        .rposition(|c| c == "scenarios")
        .map_or(comps.len().saturating_sub(1), |i| i + 1);
    let mut rel: Vec<String> = comps[start..].to_vec();
    if let Some(last) = rel.last_mut()
        && let Some(dot) = last.rfind('.')
    {
        last.truncate(dot);
    }
    rel.join("__")
}

/// The project root of a scenario: the folder holding its `scenarios/` ancestor,
/// or the current folder.
pub fn root_for(path: &Path) -> PathBuf {
    let mut cur = path.parent();
    while let Some(dir) = cur {
        if dir.file_name().is_some_and(|n| n == "scenarios") {
            return dir.parent().map(Path::to_path_buf).unwrap_or_default();
        }
        cur = dir.parent();
    }
    PathBuf::new()
}

/// The `.snap` file of a scenario.
pub fn file_for(path: &Path) -> PathBuf {
    let root = root_for(path);
    root.join("snapshots")
        .join(format!("{}.snap", name_for(path)))
}

/// The scenario path as insta records it (relative to the project root).
pub fn input_file(path: &Path) -> String {
    let root = root_for(path);
    let rel = path.strip_prefix(&root).unwrap_or(path);
    rel.components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Reads a snapshot's contents (without its metadata header), if it exists.
pub fn read(file: &Path) -> io::Result<Option<String>> {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(Some(strip_header(&text).to_string()))
}

fn strip_header(text: &str) -> &str {
    if let Some(rest) = text.strip_prefix("---\n")
        && let Some(end) = rest.find("\n---\n")
    {
        return &rest[end + 5..];
    }
    text
}

/// Writes a snapshot in insta's layout.
pub fn write(file: &Path, input_file: &str, contents: &str) -> io::Result<()> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let body = format!(
        "---\nsource: {SOURCE}\ninput_file: {input_file}\n---\n{}\n",
        contents.trim_end()
    );
    std::fs::write(file, body)
}

/// Compares as insta does: trailing whitespace and CRLF ignored.
pub fn same(a: &str, b: &str) -> bool {
    a.trim_end().replace("\r\n", "\n") == b.trim_end().replace("\r\n", "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_path_below_scenarios() {
        assert_eq!(
            name_for(Path::new("scenarios/tools/parallel.toml")),
            "tools__parallel"
        );
        assert_eq!(name_for(Path::new("/x/y/scenarios/a.json")), "a");
        assert_eq!(name_for(Path::new("elsewhere/b.toml")), "b");
        assert_eq!(
            file_for(Path::new("/p/scenarios/t/x.toml")),
            PathBuf::from("/p/snapshots/t__x.snap")
        );
        assert_eq!(
            input_file(Path::new("/p/scenarios/t/x.toml")),
            "scenarios/t/x.toml"
        );
    }

    #[test]
    fn header_is_stripped() {
        let t = "---\nsource: a\ninput_file: b\n---\nline 1\nline 2\n";
        assert_eq!(strip_header(t), "line 1\nline 2\n");
        assert!(same("a\n", "a"));
        assert!(!same("a", "b"));
    }
}
