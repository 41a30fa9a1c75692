//! Snapshot files in insta's format, so `cargo insta review` shows what the
//! CLI leaves pending and the test suite and the CLI share one set of files.

use std::io;
use std::path::{Component, Path, PathBuf};

/// The source insta records for scenario snapshots (relative to the suite root).
pub const SOURCE: &str = "tests/it/scenarios.rs";

/// Where a scenario file's snapshot lives. A scenario belongs to a suite
/// when a folder named `scenarios` is among its ancestors; the suite root
/// is that folder's parent, and snapshots live in its `snapshots/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The suite root.
    pub root: PathBuf,
    /// The path below `scenarios/`, without the extension, `/` as `__`:
    /// `scenarios/tools/parallel.toml` → `tools__parallel`.
    pub name: String,
    /// The scenario path relative to the root, `/`-separated, as insta records it.
    pub input_file: String,
}

impl Located {
    /// The `.snap` file.
    pub fn file(&self) -> PathBuf {
        self.root
            .join("snapshots")
            .join(format!("{}.snap", self.name))
    }

    /// The pending `.snap.new` file.
    pub fn pending(&self) -> PathBuf {
        self.file().with_extension("snap.new")
    }
}

/// Where `path`'s snapshot lives, whatever the working folder and however
/// the path was written (`..`, `./`, from inside `scenarios/`); `None` for
/// a file outside every suite (it has no snapshot).
pub fn locate(path: &Path) -> Option<Located> {
    let full = std::fs::canonicalize(path).ok()?;
    let parts: Vec<String> = full
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    let at = parts.iter().rposition(|c| c == "scenarios")?;
    let mut root = PathBuf::from("/");
    root.extend(&parts[..at]);
    let mut below: Vec<String> = parts[at + 1..].to_vec();
    let input_file = parts[at..].join("/");
    if let Some(last) = below.last_mut()
        && let Some(dot) = last.rfind('.')
    {
        last.truncate(dot);
    }
    Some(Located {
        root,
        name: below.join("__"),
        input_file,
    })
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
    fn names_follow_the_path_below_scenarios_however_it_is_written() {
        let dir = std::env::temp_dir().join(format!("pai-snap-{}", std::process::id()));
        let file = dir.join("scenarios/tools/parallel.toml");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "").unwrap();
        let a = locate(&file).expect("inside a suite");
        assert_eq!(a.name, "tools__parallel");
        assert_eq!(a.input_file, "scenarios/tools/parallel.toml");
        assert_eq!(
            a.file(),
            std::fs::canonicalize(&dir)
                .unwrap()
                .join("snapshots/tools__parallel.snap")
        );
        let roundabout = dir.join("scenarios/tools/../tools/./parallel.toml");
        assert_eq!(locate(&roundabout), Some(a));
        let outside = dir.join("elsewhere.toml");
        std::fs::write(&outside, "").unwrap();
        assert_eq!(locate(&outside), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn header_is_stripped() {
        let t = "---\nsource: a\ninput_file: b\n---\nline 1\nline 2\n";
        assert_eq!(strip_header(t), "line 1\nline 2\n");
        assert!(same("a\n", "a"));
        assert!(!same("a", "b"));
    }
}
