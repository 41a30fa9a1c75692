//! Recorded provider responses as model scripts (`[model] replay = [...]`):
//! the checks a replay script must pass, and the recordings themselves,
//! read and decoded whole at load time so that a missing file or a body
//! that does not decode is a located error (SPEC X1), never a surprise in
//! the middle of a run. A body cut before its end is no bad file: it is a
//! real dropped connection, and loads to be replayed as the provider error
//! the run sees where it was cut (SPEC S6).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use pai_providers::{DecodeError, Decoder, StreamReport};

use super::field::{CheckError, Segment, fail};
use super::spec::{ModelSpec, ReplayFormat};

/// One recorded response body.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    /// The path as the scenario wrote it (the transcript names it).
    pub file: String,
    pub format: ReplayFormat,
    /// The raw body, as a client received it.
    pub body: Arc<[u8]>,
    /// What the whole body decodes to, beside its parts.
    pub kind: RecordingKind,
}

/// What a recording holds.
#[derive(Debug, Clone, PartialEq)]
pub enum RecordingKind {
    /// An event stream; the report of decoding it whole (usage, the
    /// provider's stop reason, a refusal, skipped events).
    Stream(StreamReport),
    /// A stream cut before its answer ended (a dropped connection, SPEC
    /// S6): what it carried before the cut, and the decoder's
    /// [`DecodeError::Truncated`] saying where it was cut. Replayed, its
    /// parts stream and then the cut is the stream's error part (P7).
    Cut {
        /// What the stream carried before the cut.
        report: StreamReport,
        /// Where and how it was cut.
        cut: DecodeError,
    },
    /// A JSON error body where a stream was expected (an HTTP error
    /// response): the attempt fails before any stream exists, with the
    /// provider's message and the status its error stands for (SPEC P7:
    /// code around `next()` sees it).
    ErrorBody {
        /// The provider's message.
        message: String,
        /// The HTTP status, where the body names one.
        status: Option<u16>,
    },
}

/// A replayed model: its recordings answer its calls in order, paced alike.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    pub recordings: Vec<Arc<Recording>>,
    /// Virtual milliseconds before each stream exists.
    pub latency_ms: u64,
    /// Virtual milliseconds before each decoded text delta.
    pub delta_ms: u64,
    /// Bytes fed to the decoder at a time (the whole body when `None`).
    pub chunk: Option<usize>,
}

/// The replayed models: `None` is the default `[model]`, `Some(name)` a
/// `[models.NAME]`.
pub type Replays = BTreeMap<Option<String>, Arc<Replay>>;

/// The checks of one script that need no file: `replay` with neither
/// `turns` nor `unavailable`, with its `format`; pacing only with `replay`;
/// no empty path; `chunk` at least 1. `at` names the script.
pub(super) fn check(m: &ModelSpec, at: &[Segment]) -> Result<(), CheckError> {
    let field = |key: &'static str| [at, &[Segment::Key(key)]].concat();
    if m.replay.is_empty() {
        let pacing = [
            ("format", m.format.is_some()),
            ("latency_ms", m.latency_ms.is_some()),
            ("delta_ms", m.delta_ms.is_some()),
            ("chunk", m.chunk.is_some()),
        ];
        return match pacing.iter().find(|(_, given)| *given) {
            Some((key, _)) => fail(
                &field(key),
                "only with `replay`: scripted turns set their own latency and pacing",
            ),
            None => Ok(()),
        };
    }
    if !m.turns.is_empty() {
        let message = "a model is scripted by `turns` or replayed from recordings, not both: each call takes the next recording";
        return fail(&field("replay"), message);
    }
    if m.unavailable {
        let message =
            "an unavailable model answers no call, so its recordings would never be replayed";
        return fail(&field("replay"), message);
    }
    if m.format.is_none() {
        let message = "needs `format` (\"openai-chat\", \"openai-responses\" or \"anthropic\"): the recordings' streaming format";
        return fail(&field("replay"), message);
    }
    if m.chunk == Some(0) {
        return fail(
            &field("chunk"),
            "must be at least 1: a chunk of 0 bytes never feeds the decoder",
        );
    }
    if let Some(i) = m.replay.iter().position(|f| f.trim().is_empty()) {
        let at = [field("replay"), vec![Segment::Index(i)]].concat();
        return fail(&at, "a recording's path must not be empty");
    }
    Ok(())
}

/// Reads and decodes every recording of every replayed script, paths
/// relative to `dir` (the scenario file's folder). Run after [`check`].
pub(super) fn load(
    model: &ModelSpec,
    models: &BTreeMap<String, ModelSpec>,
    dir: &Path,
) -> Result<Replays, CheckError> {
    let named = models.iter().map(|(n, m)| (Some(n), m));
    let mut out = Replays::new();
    for (name, m) in std::iter::once((None, model)).chain(named) {
        let (Some(format), false) = (m.format, m.replay.is_empty()) else {
            continue;
        };
        let at = match name {
            None => vec![Segment::Key("model")],
            Some(n) => vec![Segment::Key("models"), Segment::Name(n.clone())],
        };
        let mut recordings = Vec::with_capacity(m.replay.len());
        for (i, file) in m.replay.iter().enumerate() {
            let at = [&at[..], &[Segment::Key("replay"), Segment::Index(i)]].concat();
            recordings.push(Arc::new(recording(file, format, dir, &at)?));
        }
        let replay = Replay {
            recordings,
            latency_ms: m.latency_ms.unwrap_or(0),
            delta_ms: m.delta_ms.unwrap_or(0),
            chunk: m.chunk.map(|c| usize::try_from(c).unwrap_or(usize::MAX)),
        };
        out.insert(name.cloned(), Arc::new(replay));
    }
    Ok(out)
}

/// One recording, read and decoded whole.
fn recording(
    file: &str,
    format: ReplayFormat,
    dir: &Path,
    at: &[Segment],
) -> Result<Recording, CheckError> {
    let body = match file.strip_prefix(BUILT_IN) {
        Some(name) => built_in(name, format, at)?,
        None => match std::fs::read(dir.join(file)) {
            Ok(body) => body,
            Err(e) => {
                let path = dir.join(file);
                return fail(at, format!("cannot read recording {}: {e}", path.display()));
            }
        },
    };
    let name = format.decoder().as_str();
    let mut decoder = Decoder::new(format.decoder());
    let fed = decoder.feed(&body, &mut Vec::new());
    let report = decoder.report().clone();
    let kind = match fed.and_then(|()| decoder.finish()) {
        Ok(report) => RecordingKind::Stream(report),
        Err(cut @ DecodeError::Truncated { .. }) => RecordingKind::Cut { report, cut },
        Err(DecodeError::ErrorBody { message, status }) => {
            RecordingKind::ErrorBody { message, status }
        }
        Err(e) => {
            return fail(
                at,
                format!("recording {file} does not decode as {name}: {e}"),
            );
        }
    };
    Ok(Recording {
        file: file.to_owned(),
        format,
        body: body.into(),
        kind,
    })
}

/// The prefix that names a recording compiled into `pai-providers`
/// (`pai-providers:anthropic/tool-use-split.sse`) instead of a file.
pub const BUILT_IN: &str = "pai-providers:";

/// The body of the built-in recording `name`, which must be in `format`.
fn built_in(name: &str, format: ReplayFormat, at: &[Segment]) -> Result<Vec<u8>, CheckError> {
    let Some(sample) = pai_providers::sample(name) else {
        let known: Vec<&str> = pai_providers::SAMPLES.iter().map(|s| s.path).collect();
        let message = format!("no built-in recording {BUILT_IN}{name}; there are {known:?}");
        return fail(at, message);
    };
    if sample.format != format.decoder() {
        let message = format!(
            "{BUILT_IN}{name} is recorded in the {} format, not {}",
            sample.format.as_str(),
            format.decoder().as_str()
        );
        return fail(at, message);
    }
    Ok(sample.body.to_vec())
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use crate::scenario::{Scenario, ScenarioError};

    /// A scenario file in `sim/`, so `../providers/recordings/` resolves.
    fn load(model: &str) -> Result<Scenario, ScenarioError> {
        let text = format!(
            "name = \"x\"\nrules = [\"X1\"]\n\n[[timeline]]\nsend = \"hi\"\n\n[model]\n{model}\n"
        );
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("x.toml");
        Scenario::parse(&path, &text)
    }

    const CHAT: &str = "\"../providers/recordings/openai-chat/text-multibyte.sse\"";

    /// The error's message starts with `prefix`, and it names line 8 (the
    /// model's first field) or later, with a column.
    fn refused(model: &str, prefix: &str) -> ScenarioError {
        let e = load(model).unwrap_err();
        assert!(e.message.starts_with(prefix), "{e}");
        let (line, _) = e.location.unwrap_or_else(|| panic!("not located: {e}"));
        assert!(line >= 8, "{e}");
        e
    }

    #[test]
    fn x1_a_replayed_model_loads_its_recordings() {
        let s = load(&format!(
            "replay = [{CHAT}]\nformat = \"openai-chat\"\nchunk = 3"
        ))
        .unwrap();
        let replay = &s.replays[&None];
        assert_eq!(replay.chunk, Some(3));
        assert_eq!(replay.recordings.len(), 1);
        assert!(matches!(
            replay.recordings[0].kind,
            super::RecordingKind::Stream(_)
        ));
    }

    #[test]
    fn x1_a_missing_recording_is_refused_at_its_path() {
        let model = format!("replay = [{CHAT}, \"nowhere.sse\"]\nformat = \"openai-chat\"");
        let e = refused(&model, "model.replay[1]: cannot read recording ");
        assert!(e.message.contains("nowhere.sse"), "{e}");
        // the anthropic decoder refuses the chat recording first, at [0]
        let e = load(&format!("replay = [{CHAT}]\nformat = \"anthropic\"")).unwrap_err();
        assert!(e.message.starts_with("model.replay[0]: recording"), "{e}");
    }

    #[test]
    fn x1_a_built_in_recording_loads_as_its_file_does_and_a_wrong_one_is_refused() {
        let built_in = load(
            "replay = [\"pai-providers:openai-chat/text-multibyte.sse\"]\nformat = \"openai-chat\"",
        )
        .unwrap();
        let file = load(&format!("replay = [{CHAT}]\nformat = \"openai-chat\"")).unwrap();
        let (a, b) = (&built_in.replays[&None], &file.replays[&None]);
        assert_eq!(a.recordings[0].body, b.recordings[0].body);
        assert_eq!(a.recordings[0].kind, b.recordings[0].kind);
        let e = refused(
            "replay = [\"pai-providers:openai-chat/nope.sse\"]\nformat = \"openai-chat\"",
            "model.replay[0]: no built-in recording pai-providers:openai-chat/nope.sse; there are [",
        );
        assert!(e.message.contains("anthropic/tool-use-split.sse"), "{e}");
        refused(
            "replay = [\"pai-providers:anthropic/text-multibyte.sse\"]\nformat = \"openai-chat\"",
            "model.replay[0]: pai-providers:anthropic/text-multibyte.sse is recorded in the anthropic format, not openai-chat",
        );
    }

    #[test]
    fn x1_an_unknown_format_is_refused_where_it_stands() {
        let e = refused(
            &format!("replay = [{CHAT}]\nformat = \"openai\""),
            "unknown variant `openai`",
        );
        assert_eq!(e.location, Some((9, 10)), "{e}");
    }

    #[test]
    fn x1_replay_with_turns_or_unavailable_is_refused() {
        let both =
            format!("replay = [{CHAT}]\nformat = \"openai-chat\"\n[[model.turns]]\ntext = [\"a\"]");
        refused(
            &both,
            "model.replay: a model is scripted by `turns` or replayed",
        );
        let down = format!("replay = [{CHAT}]\nformat = \"openai-chat\"\nunavailable = true");
        refused(&down, "model.replay: an unavailable model");
        refused(
            &format!("replay = [{CHAT}]"),
            "model.replay: needs `format`",
        );
    }

    #[test]
    fn x1_chunk_zero_and_pacing_without_replay_are_refused() {
        let zero = format!("replay = [{CHAT}]\nformat = \"openai-chat\"\nchunk = 0");
        let e = refused(&zero, "model.chunk: must be at least 1");
        assert_eq!(e.location.map(|l| l.0), Some(10), "{e}");
        refused("delta_ms = 5", "model.delta_ms: only with `replay`");
        refused("format = \"anthropic\"", "model.format: only with `replay`");
        refused(
            "replay = [\" \"]\nformat = \"anthropic\"",
            "model.replay[0]: a recording's path",
        );
    }

    /// A recording that does not decode names the file and the decoder's
    /// error, at the path in the scenario.
    #[test]
    fn x1_a_recording_that_does_not_decode_names_the_file_and_the_error() {
        let anthropic = "\"../providers/recordings/anthropic/text-multibyte.sse\"";
        let e = refused(
            &format!("replay = [{anthropic}]\nformat = \"openai-responses\""),
            "model.replay[0]: recording ../providers/recordings/anthropic/text-multibyte.sse does not decode as openai-responses: ",
        );
        assert_eq!(e.location.map(|l| l.0), Some(8), "{e}");
    }

    /// A named model's errors name it.
    #[test]
    fn x1_a_named_model_is_named() {
        let text = format!(
            "name = \"x\"\nrules = [\"X1\"]\n[[timeline]]\nsend = \"hi\"\n[models.big]\nreplay = [{CHAT}]\nformat = \"openai-chat\"\nchunk = 0\n"
        );
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("x.toml");
        let e = Scenario::parse(&path, &text).unwrap_err();
        assert!(
            e.message.starts_with("models[\"big\"].chunk: must be"),
            "{e}"
        );
        assert_eq!(e.location.map(|l| l.0), Some(8), "{e}");
    }
}
