//! Recordings on disk, and decoding a body cut into given chunks.

use std::path::PathBuf;

use pai_providers::{DecodeError, Decoded, Decoder, Format};

/// Every recording: its format, file name and body.
pub fn recordings() -> Vec<(Format, String, Vec<u8>)> {
    let mut all = Vec::new();
    for format in [
        Format::OpenAiChat,
        Format::OpenAiResponses,
        Format::Anthropic,
    ] {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("recordings")
            .join(format.as_str());
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "sse"))
            .collect();
        files.sort();
        for path in files {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            all.push((format, name, std::fs::read(&path).unwrap()));
        }
    }
    all
}

/// One recording's body.
pub fn recording(format: Format, name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("recordings")
        .join(format.as_str())
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Decodes `body` cut at `cuts` (ascending offsets).
pub fn decode_cut(format: Format, body: &[u8], cuts: &[usize]) -> Result<Decoded, DecodeError> {
    let mut decoder = Decoder::new(format);
    let mut parts = Vec::new();
    let mut start = 0;
    for &cut in cuts.iter().chain([body.len()].iter()) {
        decoder.feed(&body[start..cut], &mut parts)?;
        start = cut;
    }
    let report = decoder.finish()?;
    Ok(Decoded { parts, report })
}
