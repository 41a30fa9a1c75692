//! The hand-written recordings of `recordings/`, compiled in: what the
//! decoders' tests replay, and what the simulator's fuzzer draws replayed
//! models from (a scenario names one as `pai-providers:<path>`), so a
//! generated case replays a real provider's byte stream without a file
//! beside it.

use crate::decoder::Format;

/// One recording: its path under `recordings/`, its format, its body as a
/// client received it.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// `<format>/<name>.sse`, as filed under `recordings/`.
    pub path: &'static str,
    /// The format it is in.
    pub format: Format,
    /// The raw body.
    pub body: &'static [u8],
}

/// Every recording, in path order.
pub const SAMPLES: &[Sample] = &[
    Sample {
        path: "anthropic/cut-mid-event.sse",
        format: Format::Anthropic,
        body: include_bytes!("../recordings/anthropic/cut-mid-event.sse"),
    },
    Sample {
        path: "anthropic/message-start-content.sse",
        format: Format::Anthropic,
        body: include_bytes!("../recordings/anthropic/message-start-content.sse"),
    },
    Sample {
        path: "anthropic/overloaded-error.sse",
        format: Format::Anthropic,
        body: include_bytes!("../recordings/anthropic/overloaded-error.sse"),
    },
    Sample {
        path: "anthropic/refusal.sse",
        format: Format::Anthropic,
        body: include_bytes!("../recordings/anthropic/refusal.sse"),
    },
    Sample {
        path: "anthropic/text-multibyte.sse",
        format: Format::Anthropic,
        body: include_bytes!("../recordings/anthropic/text-multibyte.sse"),
    },
    Sample {
        path: "anthropic/thinking-max-tokens.sse",
        format: Format::Anthropic,
        body: include_bytes!("../recordings/anthropic/thinking-max-tokens.sse"),
    },
    Sample {
        path: "anthropic/tool-use-split.sse",
        format: Format::Anthropic,
        body: include_bytes!("../recordings/anthropic/tool-use-split.sse"),
    },
    Sample {
        path: "openai-chat/content-filter.sse",
        format: Format::OpenAiChat,
        body: include_bytes!("../recordings/openai-chat/content-filter.sse"),
    },
    Sample {
        path: "openai-chat/cut-between-events.sse",
        format: Format::OpenAiChat,
        body: include_bytes!("../recordings/openai-chat/cut-between-events.sse"),
    },
    Sample {
        path: "openai-chat/llamacpp-crlf.sse",
        format: Format::OpenAiChat,
        body: include_bytes!("../recordings/openai-chat/llamacpp-crlf.sse"),
    },
    Sample {
        path: "openai-chat/midstream-error.sse",
        format: Format::OpenAiChat,
        body: include_bytes!("../recordings/openai-chat/midstream-error.sse"),
    },
    Sample {
        path: "openai-chat/no-done.sse",
        format: Format::OpenAiChat,
        body: include_bytes!("../recordings/openai-chat/no-done.sse"),
    },
    Sample {
        path: "openai-chat/refusal.sse",
        format: Format::OpenAiChat,
        body: include_bytes!("../recordings/openai-chat/refusal.sse"),
    },
    Sample {
        path: "openai-chat/text-multibyte.sse",
        format: Format::OpenAiChat,
        body: include_bytes!("../recordings/openai-chat/text-multibyte.sse"),
    },
    Sample {
        path: "openai-chat/tool-calls-split.sse",
        format: Format::OpenAiChat,
        body: include_bytes!("../recordings/openai-chat/tool-calls-split.sse"),
    },
    Sample {
        path: "openai-responses/function-call-split.sse",
        format: Format::OpenAiResponses,
        body: include_bytes!("../recordings/openai-responses/function-call-split.sse"),
    },
    Sample {
        path: "openai-responses/incomplete-length.sse",
        format: Format::OpenAiResponses,
        body: include_bytes!("../recordings/openai-responses/incomplete-length.sse"),
    },
    Sample {
        path: "openai-responses/midstream-error.sse",
        format: Format::OpenAiResponses,
        body: include_bytes!("../recordings/openai-responses/midstream-error.sse"),
    },
    Sample {
        path: "openai-responses/refusal.sse",
        format: Format::OpenAiResponses,
        body: include_bytes!("../recordings/openai-responses/refusal.sse"),
    },
    Sample {
        path: "openai-responses/text-multibyte.sse",
        format: Format::OpenAiResponses,
        body: include_bytes!("../recordings/openai-responses/text-multibyte.sse"),
    },
    Sample {
        path: "openai-responses/two-messages.sse",
        format: Format::OpenAiResponses,
        body: include_bytes!("../recordings/openai-responses/two-messages.sse"),
    },
];

/// The recording filed at `path` (`openai-chat/tool-calls-split.sse`).
pub fn sample(path: &str) -> Option<&'static Sample> {
    SAMPLES.iter().find(|s| s.path == path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_under_recordings_is_a_sample_in_its_folders_format() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/recordings");
        let mut on_disk = Vec::new();
        for format in std::fs::read_dir(root).unwrap() {
            let format = format.unwrap().path();
            for file in std::fs::read_dir(&format).unwrap() {
                let file = file.unwrap().path();
                let rel = file
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                on_disk.push(rel);
            }
        }
        on_disk.sort();
        let listed: Vec<&str> = SAMPLES.iter().map(|s| s.path).collect();
        assert_eq!(on_disk, listed);
        for s in SAMPLES {
            assert!(s.path.starts_with(s.format.as_str()), "{}", s.path);
            assert_eq!(sample(s.path).map(|f| f.body.len()), Some(s.body.len()));
        }
    }
}
