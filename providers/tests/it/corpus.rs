//! The corpus of real captured streams (issue 40, SPEC S6): public SDKs'
//! test fixtures, listed with their source, commit and licence in
//! `corpus/manifest.json`, their bodies in the folder
//! `PAI_PROVIDER_CORPUS` names, else the workspace's
//! `shared/provider-corpus/` (see `corpus/README.md` for why they live
//! apart from the project's own files). Each body is decoded whole and in two chunks
//! at a sample of cut points, and what it means is compared with what the
//! provider meant, known without the decoders: the final object where the
//! stream has one (Responses' `response.completed`, read here with a line
//! splitter of this file's own), and a hand-written expectation
//! (`corpus/expect/`) for every body. Each body is also cut off at the
//! same points, as a dropped connection cuts it: the decoder must say the
//! stream was cut, and where (mid-event or between events), having given
//! only parts the whole body gives, in the same order.

use std::path::PathBuf;

use pai_providers::{Cut, DecodeError, Decoded, Decoder, Format, decode};
use pai_runtime::StreamPart;
use serde_json::Value;

use crate::common::decode_cut;

/// One body of the manifest.
struct Body {
    file: String,
    format: Format,
    bytes: Vec<u8>,
    expect: Value,
}

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

/// Where the bodies are.
/// Where the bodies are: the folder `PAI_PROVIDER_CORPUS` names (then it
/// must hold them), else the workspace's `shared/provider-corpus/` if it
/// exists; `None` when neither: the bodies are third-party data kept
/// outside the repository (`providers/corpus/README.md`), so a clean
/// clone without them skips the corpus tests and says so.
fn shared() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("PAI_PROVIDER_CORPUS") {
        return Some(PathBuf::from(dir));
    }
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/provider-corpus");
    if here.is_dir() {
        return Some(here);
    }
    eprintln!(
        "SKIPPED: the provider corpus is not here (set PAI_PROVIDER_CORPUS to its folder, or put it in shared/provider-corpus/; see providers/corpus/README.md)"
    );
    None
}

/// Every body the manifest lists, with its expectation; empty when the
/// corpus is not here (`shared`). With a corpus folder, a body missing
/// from it fails the test: the corpus is whole or it is not a corpus.
fn bodies() -> Vec<Body> {
    let manifest = std::fs::read_to_string(corpus_dir().join("manifest.json")).unwrap();
    let manifest: Vec<Value> = serde_json::from_str(&manifest).unwrap();
    let Some(shared) = shared() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in &manifest {
        let file = entry["file"].as_str().unwrap().to_owned();
        for key in [
            "repository",
            "path",
            "commit",
            "licence",
            "framing",
            "shape",
        ] {
            let given = entry[key].as_str().is_some_and(|v| !v.trim().is_empty());
            assert!(given, "{file}: the manifest entry has no {key}");
        }
        let licence = entry["licence"].as_str().unwrap();
        assert!(
            ["MIT", "Apache-2.0"].contains(&licence),
            "{file}: licence {licence}"
        );
        let path = shared.join(&file);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e}; the corpus bodies live in PAI_PROVIDER_CORPUS or the workspace's shared/provider-corpus/ (see providers/corpus/README.md)",
                path.display()
            )
        });
        assert_eq!(entry["bytes"].as_u64(), Some(bytes.len() as u64), "{file}");
        let format = match file.split('/').next() {
            Some("openai-chat") => Format::OpenAiChat,
            Some("openai-responses") => Format::OpenAiResponses,
            Some("anthropic") => Format::Anthropic,
            other => panic!("{file}: no format {other:?}"),
        };
        let expect = corpus_dir()
            .join("expect")
            .join(file.replace(".sse", ".json"));
        let expect = std::fs::read_to_string(&expect)
            .unwrap_or_else(|e| panic!("{}: {e}", expect.display()));
        out.push(Body {
            file,
            format,
            bytes,
            expect: serde_json::from_str(&expect).unwrap(),
        });
    }
    out
}

/// What a stream means, as the expectations write it.
#[derive(Debug, Default, PartialEq)]
struct Meaning {
    /// The texts, apart where a part of another kind came between.
    texts: Vec<String>,
    /// Each call's id, name and input.
    calls: Vec<(String, String, Value)>,
    refusal: String,
    finish: Option<String>,
    error: Option<String>,
}

/// The meaning of decoded parts.
fn meaning(parts: &[StreamPart]) -> Meaning {
    let mut m = Meaning::default();
    let mut text = String::new();
    let apart = |m: &mut Meaning, text: &mut String| {
        if !text.is_empty() {
            m.texts.push(std::mem::take(text));
        }
    };
    for part in parts {
        match part {
            StreamPart::TextDelta(d) => text.push_str(d),
            StreamPart::ToolCall(c) => {
                apart(&mut m, &mut text);
                m.calls
                    .push((c.call_id.to_string(), c.tool.clone(), c.input.clone()));
            }
            StreamPart::TextEnd => apart(&mut m, &mut text),
            StreamPart::Refusal(words) => m.refusal.push_str(words),
            StreamPart::Finish(f) => m.finish = Some(f.as_str().to_owned()),
            StreamPart::Error(e) => m.error = Some(e.to_string()),
        }
    }
    apart(&mut m, &mut text);
    m
}

/// The meaning an expectation writes.
fn expected(e: &Value) -> Meaning {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    Meaning {
        texts: e["texts"]
            .as_array()
            .map_or(Vec::new(), |t| t.iter().map(text).collect()),
        calls: e["calls"].as_array().map_or(Vec::new(), |calls| {
            calls
                .iter()
                .map(|c| (text(&c["id"]), text(&c["name"]), c["input"].clone()))
                .collect()
        }),
        refusal: text(&e["refusal"]),
        finish: e["finish"].as_str().map(str::to_owned),
        error: e["error"].as_str().map(str::to_owned),
    }
}

/// The events of a body as a plain reading of the SSE lines gives them
/// (`event` and `data` fields; a block without its blank line is lost):
/// this file's own, not the decoders' `sse-parse`.
fn events(body: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(body)
        .replace("\r\n", "\n")
        .replace('\r', "\n");
    let mut blocks: Vec<&str> = text.split("\n\n").collect();
    blocks.pop(); // whatever follows the last blank line is no event
    let mut out = Vec::new();
    for block in blocks {
        let (mut name, mut data) = ("message".to_owned(), Vec::new());
        for line in block.lines().filter(|l| !l.starts_with(':')) {
            let (key, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match key {
                "event" => name = value.to_owned(),
                "data" => data.push(value),
                _ => {}
            }
        }
        if !data.is_empty() {
            out.push((name, data.join("\n")));
        }
    }
    out
}

/// A Responses body's final object read as the meaning: each message
/// item's text and refusal, each function call, the finish its status
/// gives.
fn final_object(body: &[u8]) -> Option<Meaning> {
    let last = events(body).into_iter().rev().find_map(|(_, data)| {
        let v: Value = serde_json::from_str(&data).ok()?;
        matches!(
            v["type"].as_str(),
            Some("response.completed" | "response.incomplete")
        )
        .then(|| v["response"].clone())
    })?;
    let mut m = Meaning::default();
    for item in last["output"].as_array()? {
        match item["type"].as_str() {
            Some("message") => {
                let mut text = String::new();
                for c in item["content"].as_array()? {
                    match c["type"].as_str() {
                        Some("output_text") => text.push_str(c["text"].as_str()?),
                        Some("refusal") => m.refusal.push_str(c["refusal"].as_str()?),
                        _ => {}
                    }
                }
                if !text.is_empty() {
                    m.texts.push(text);
                }
            }
            Some("function_call") => {
                let arguments = item["arguments"].as_str().unwrap_or("");
                let input = match arguments.trim() {
                    "" => Value::Object(Default::default()),
                    a => serde_json::from_str(a).ok()?,
                };
                let id = item["call_id"].as_str()?.to_owned();
                m.calls.push((id, item["name"].as_str()?.to_owned(), input));
            }
            _ => {}
        }
    }
    let finish = match (
        last["status"].as_str(),
        last["incomplete_details"]["reason"].as_str(),
    ) {
        (Some("incomplete"), Some("max_output_tokens")) => "length",
        (Some("incomplete"), Some("content_filter")) => "content_filter",
        _ if !m.refusal.is_empty() => "refusal",
        _ if !m.calls.is_empty() => "tool_calls",
        _ => "stop",
    };
    m.finish = Some(finish.to_owned());
    Some(m)
}

/// The cut points sampled for a body of `n` bytes: both ends, 23 points
/// evenly apart, and 8 drawn from a fixed sequence.
fn cut_points(n: usize) -> Vec<usize> {
    let mut points: Vec<usize> = (0..=24).map(|k| n * k / 24).collect();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15 ^ n as u64;
    for _ in 0..8 {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        points.push((x >> 33) as usize % (n + 1));
    }
    points.sort_unstable();
    points.dedup();
    points
}

/// The body decodes whole to what the provider meant.
fn check_whole(b: &Body, whole: &Result<Decoded, DecodeError>) {
    let file = &b.file;
    let e = &b.expect;
    if e["malformed"].as_bool() == Some(true) {
        assert!(
            matches!(whole, Err(DecodeError::Malformed { .. })),
            "{file}: {whole:?}"
        );
        return;
    }
    let decoded = whole.as_ref().unwrap_or_else(|err| panic!("{file}: {err}"));
    let got = meaning(&decoded.parts);
    assert_eq!(got, expected(e), "{file}");
    let notes = e["notes"].as_u64().unwrap_or(0) as usize;
    assert_eq!(
        decoded.report.notes.len(),
        notes,
        "{file}: {:?}",
        decoded.report.notes
    );
    if e["final_object"].as_bool() == Some(true) {
        let said = final_object(&b.bytes).unwrap_or_else(|| panic!("{file}: no final object"));
        match e["final_object_differs"].as_bool() == Some(true) {
            // The fixture's authors trimmed its deltas: the decoder keeps
            // what streamed and notes each difference.
            true => assert!(said.texts != got.texts && notes > 0, "{file}"),
            false => assert_eq!(got, said, "{file}: the final object says otherwise"),
        }
    }
}

/// Cut at `at`, as a dropped connection cuts it: the stream was cut, where
/// the body says, after parts the whole body gives in that order; or, cut
/// after its finish, the whole answer.
fn check_cut(b: &Body, at: usize, whole: &Decoded) {
    let mut decoder = Decoder::new(b.format);
    let mut parts = Vec::new();
    let fed = decoder.feed(&b.bytes[..at], &mut parts);
    let ended = fed.and_then(|()| decoder.finish());
    let file = &b.file;
    let prefix = &whole.parts[..parts.len().min(whole.parts.len())];
    assert_eq!(
        parts, prefix,
        "{file} cut at {at}: parts that the whole does not give"
    );
    let boundary =
        at == 0 || b.bytes[..at].ends_with(b"\n\n") || b.bytes[..at].ends_with(b"\r\n\r\n");
    match ended {
        Ok(_) => assert_eq!(parts, whole.parts, "{file} cut at {at} ended well early"),
        Err(DecodeError::Truncated { cut, bytes, .. }) => {
            let want = if boundary {
                Cut::BetweenEvents
            } else {
                Cut::MidEvent
            };
            assert_eq!((cut, bytes), (want, at as u64), "{file} cut at {at}");
        }
        Err(other) => panic!("{file} cut at {at}: {other}"),
    }
}

/// SPEC S6: the corpus holds at least 40 bodies of the three formats, with
/// the shapes the issue names.
#[test]
fn s6_the_corpus_is_whole() {
    let all = bodies();
    if all.is_empty() {
        return;
    }
    assert!(all.len() >= 40, "{} bodies", all.len());
    for format in [
        Format::OpenAiChat,
        Format::OpenAiResponses,
        Format::Anthropic,
    ] {
        assert!(
            all.iter().filter(|b| b.format == format).count() >= 8,
            "{format:?}"
        );
    }
    let expects = |f: fn(&Value) -> bool| all.iter().filter(|b| f(&b.expect)).count();
    assert!(expects(|e| e["finish"] == "refusal") >= 4);
    assert!(expects(|e| e["error"].is_string()) >= 1);
    assert!(expects(|e| e["calls"].as_array().is_some_and(|c| c.len() > 1)) >= 1);
    assert!(expects(|e| e["texts"].as_array().is_some_and(|t| t.len() > 1)) >= 2);
    // The corpus folder holds nothing the manifest does not list.
    let listed: Vec<&str> = all.iter().map(|b| b.file.as_str()).collect();
    let shared = shared().expect("bodies were read from it");
    for format in std::fs::read_dir(&shared).unwrap() {
        let format = format.unwrap().path();
        for file in std::fs::read_dir(&format).unwrap() {
            let file = file.unwrap().path();
            let rel = file
                .strip_prefix(&shared)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            assert!(
                listed.contains(&rel.as_str()),
                "{rel} is not in the manifest"
            );
        }
    }
}

/// SPEC S6: every body means what its provider meant, whole, split in two
/// at each sampled point, and cut off there.
#[test]
fn s6_every_body_means_what_the_provider_meant_at_every_sampled_split() {
    let mut failed = Vec::new();
    for b in bodies() {
        let checked = std::panic::catch_unwind(|| {
            let whole = decode(b.format, &b.bytes);
            check_whole(&b, &whole);
            for at in cut_points(b.bytes.len()) {
                let split = decode_cut(b.format, &b.bytes, &[at]);
                assert_eq!(split, whole, "{} split at {at}", b.file);
                if let Ok(whole) = &whole {
                    check_cut(&b, at, whole);
                }
            }
        });
        if checked.is_err() {
            failed.push(b.file.clone());
        }
    }
    assert!(
        failed.is_empty(),
        "bodies that failed (each above): {failed:?}"
    );
}
