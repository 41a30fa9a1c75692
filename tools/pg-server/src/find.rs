//! Finding the PostgreSQL server binaries.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Where Debian (and Ubuntu) install one folder per major version.
pub(crate) const DEBIAN_ROOT: &str = "/usr/lib/postgresql";

/// The programs a bin folder must hold to be used.
const REQUIRED: [&str; 3] = ["initdb", "postgres", "createdb"];

/// The outcome of a search: the folder found, if any, and what was looked at.
#[derive(Debug)]
pub(crate) struct Found {
    pub(crate) bin_dir: Option<PathBuf>,
    pub(crate) searched: Vec<String>,
}

/// Looks for a folder holding `initdb`, `postgres` and `createdb`.
///
/// An explicit `bin_dir` is the only place looked at when given. Otherwise
/// the newest `DEBIAN_ROOT/<version>/bin`, then each folder of `path`.
pub(crate) fn find_bin_dir(
    bin_dir: Option<&Path>,
    debian_root: &Path,
    path: Option<OsString>,
) -> Found {
    let mut searched = Vec::new();
    let mut candidates: Vec<PathBuf> = Vec::new();
    match bin_dir {
        Some(dir) => {
            searched.push(format!("PAI_PG_BIN={}", dir.display()));
            candidates.push(dir.to_path_buf());
        }
        None => {
            searched.push(format!("{}/*/bin", debian_root.display()));
            candidates.extend(debian_bin_dirs(debian_root));
            if let Some(path) = path {
                searched.push("PATH".to_owned());
                candidates.extend(std::env::split_paths(&path));
            }
        }
    }
    let bin_dir = candidates.into_iter().find(|dir| has_server_binaries(dir));
    Found { bin_dir, searched }
}

/// `root/<version>/bin` folders, newest version first.
fn debian_bin_dirs(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut versions: Vec<(Vec<u64>, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            Some((version_key(&name)?, entry.path().join("bin")))
        })
        .collect();
    versions.sort_by(|a, b| b.0.cmp(&a.0));
    versions.into_iter().map(|(_, dir)| dir).collect()
}

/// "15" → [15], "9.6" → [9, 6]; anything not made of dotted numbers → None.
fn version_key(name: &str) -> Option<Vec<u64>> {
    name.split('.').map(|part| part.parse().ok()).collect()
}

fn has_server_binaries(dir: &Path) -> bool {
    REQUIRED.iter().all(|name| is_executable(&dir.join(name)))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_numerically() {
        assert!(version_key("10").unwrap() > version_key("9.6").unwrap());
        assert!(version_key("17").unwrap() > version_key("15").unwrap());
        assert_eq!(version_key("common"), None);
    }

    #[test]
    fn explicit_empty_folder_finds_nothing() {
        let empty = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let found = find_bin_dir(Some(&empty), Path::new(DEBIAN_ROOT), None);
        assert_eq!(found.bin_dir, None);
        assert_eq!(found.searched.len(), 1);
    }

    #[test]
    fn path_is_searched_after_the_debian_root() {
        let Some(debian) = debian_bin_dirs(Path::new(DEBIAN_ROOT)).into_iter().next() else {
            return;
        };
        let path = std::env::join_paths(["/nonexistent/bin".into(), debian.clone()]).unwrap();
        let found = find_bin_dir(None, Path::new("/nonexistent/pai-pg"), Some(path));
        assert_eq!(found.bin_dir, Some(debian));
        assert_eq!(found.searched.len(), 2);
    }

    #[test]
    fn missing_debian_root_and_no_path_finds_nothing() {
        let found = find_bin_dir(None, Path::new("/nonexistent/pai-pg"), None);
        assert_eq!(found.bin_dir, None);
    }
}
