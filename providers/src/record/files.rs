//! The recorder's files: the folder made and checked empty of recordings,
//! each turn's names (`turn-001.request.json`, `turn-001.sse`,
//! `turn-001.body`), the request written, the response appended as it
//! arrives.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::RecordError;

/// Makes `out` (and its parents) and checks it holds no `turn-*` file: a
/// second recording into the same folder would mix two conversations.
pub(crate) fn prepare(out: &Path) -> Result<(), RecordError> {
    let fail = |detail: String| RecordError::Out {
        path: out.to_owned(),
        detail,
    };
    std::fs::create_dir_all(out).map_err(|e| fail(format!("cannot make the folder: {e}")))?;
    let entries = std::fs::read_dir(out).map_err(|e| fail(format!("cannot read: {e}")))?;
    let mut taken: Vec<String> = entries
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("turn-"))
        .collect();
    taken.sort();
    match taken.first() {
        Some(first) => Err(fail(format!(
            "already holds recordings ({first}); record into an empty folder"
        ))),
        None => Ok(()),
    }
}

/// The file for turn `number` with `suffix` (`sse`, `body`,
/// `request.json`).
pub(crate) fn name(out: &Path, number: usize, suffix: &str) -> PathBuf {
    out.join(format!("turn-{number:03}.{suffix}"))
}

/// Writes a request's body beside the recording: pretty-printed when it
/// is JSON (keys in their order), as is otherwise. Nothing for an empty
/// body.
pub(crate) fn write_request(
    out: &Path,
    number: usize,
    body: &[u8],
) -> std::io::Result<Option<PathBuf>> {
    if body.is_empty() {
        return Ok(None);
    }
    let (path, text) = match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(json) => {
            let mut text = serde_json::to_vec_pretty(&json).expect("a JSON value serializes");
            text.push(b'\n');
            (name(out, number, "request.json"), text)
        }
        Err(_) => (name(out, number, "request"), body.to_vec()),
    };
    std::fs::write(&path, text)?;
    Ok(Some(path))
}

/// A response body written as it arrives, and kept to decode at the end.
#[derive(Debug)]
pub(crate) struct Sink {
    file: Option<File>,
    pub(crate) body: Vec<u8>,
    /// The first write that failed; nothing is written after it.
    pub(crate) error: Option<String>,
}

impl Sink {
    /// Creates `path`.
    pub(crate) fn create(path: &Path) -> std::io::Result<Sink> {
        Ok(Sink {
            file: Some(File::create(path)?),
            body: Vec::new(),
            error: None,
        })
    }

    /// Appends `chunk` to the file (flushed: a crash keeps what came).
    pub(crate) fn write(&mut self, chunk: &[u8], path: &Path) {
        self.body.extend_from_slice(chunk);
        let Some(file) = &mut self.file else {
            return;
        };
        if let Err(e) = file.write_all(chunk).and_then(|()| file.flush()) {
            self.error = Some(format!("cannot write {}: {e}", path.display()));
            self.file = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("pai-record-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_folder_with_recordings_is_refused() {
        let dir = temp("taken");
        prepare(&dir).unwrap();
        std::fs::write(name(&dir, 1, "sse"), "x").unwrap();
        let e = prepare(&dir).unwrap_err();
        assert!(
            e.to_string()
                .contains("already holds recordings (turn-001.sse)"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_json_request_is_pretty_printed_and_other_bodies_kept() {
        let dir = temp("requests");
        prepare(&dir).unwrap();
        let json = write_request(&dir, 2, br#"{"model":"m","stream":true}"#).unwrap();
        assert_eq!(json, Some(name(&dir, 2, "request.json")));
        let text = std::fs::read_to_string(name(&dir, 2, "request.json")).unwrap();
        assert_eq!(text, "{\n  \"model\": \"m\",\n  \"stream\": true\n}\n");
        let raw = write_request(&dir, 3, b"not json").unwrap();
        assert_eq!(raw, Some(name(&dir, 3, "request")));
        assert_eq!(write_request(&dir, 4, b"").unwrap(), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
