//! The text stages against their references: fixed cases, and every chunking
//! of every short text over a small alphabet against an independent oracle.

use super::*;
use crate::model::StreamPart;
use crate::stream::{Emit, Pipeline, StreamTransform};

fn run(stage: Box<dyn StreamTransform>, chunks: &[&str]) -> String {
    let mut p = Pipeline::new(vec![stage]);
    let mut out = String::new();
    let mut sink = |part: StreamPart| {
        if let StreamPart::TextDelta(t) = part {
            out.push_str(&t);
        }
    };
    for c in chunks {
        assert!(
            p.push(StreamPart::TextDelta((*c).into()), &mut sink)
                .is_none()
        );
    }
    assert!(p.finish(&mut sink).is_none());
    out
}

fn sk() -> Vec<Pattern> {
    patterns(&["sk-[A-Za-z0-9_-]+"]).unwrap()
}

#[test]
fn s3_secret_split_across_three_deltas() {
    let out = run(
        redact_text_deltas(sk(), "[REDACTED]"),
        &["key s", "k-abc", "DEF more"],
    );
    assert_eq!(out, "key [REDACTED] more");
}

#[test]
fn literal_and_class_only_patterns() {
    let p = patterns(&["password", "[0-9]+"]).unwrap();
    assert_eq!(redact("my password is 1234!", &p, "#"), "my # is #!");
    let out = run(
        redact_text_deltas(p, "#"),
        &["my pass", "word is 12", "34!"],
    );
    assert_eq!(out, "my # is #!");
}

#[test]
fn first_pattern_in_order_wins_at_a_position() {
    let p = patterns(&["sk-live-[a-z]+", "sk-[a-z]+"]).unwrap();
    assert_eq!(redact("sk-live-abc sk-xyz", &p, "L"), "L L");
    let out = run(
        redact_text_deltas(p.clone(), "L"),
        &["sk-l", "ive-abc sk-", "xyz"],
    );
    assert_eq!(out, "L L");
    let q = patterns(&["sk-[a-z]+", "sk-live-[a-z]+"]).unwrap();
    assert_eq!(redact("sk-live-abc", &q, "R"), "R-abc");
}

#[test]
fn a_prefix_without_its_class_char_is_not_a_match() {
    assert_eq!(redact("sk- sk-", &sk(), "X"), "sk- sk-");
    assert_eq!(run(redact_text_deltas(sk(), "X"), &["a sk", "-"]), "a sk-");
}

#[test]
fn a_literal_pattern_matches_at_the_very_end() {
    let ps = patterns(&["abc"]).unwrap();
    assert_eq!(redact("say abc", &ps, "X"), "say X");
    assert_eq!(
        run(redact_text_deltas(ps.clone(), "X"), &["say a", "bc"]),
        "say X"
    );
    assert!(matches_any("say abc", &ps));
    assert!(!matches_any("say ab", &ps));
}

#[test]
fn bad_patterns_are_errors() {
    assert!(Pattern::parse("a.*").is_err());
    assert!(Pattern::parse("[a-z]").is_err());
    assert!(Pattern::parse("[z-a]+").is_err());
    assert!(
        Pattern::parse("[bz-a]+").is_err(),
        "a descending range beside a valid member"
    );
    assert!(
        Pattern::parse("[a-é]+").is_err(),
        "a range ending outside ASCII"
    );
    assert!(
        Pattern::parse("[é-z]+").is_err(),
        "a range starting outside ASCII"
    );
    assert!(Pattern::parse("").is_err());
}

#[test]
fn s5_guard_holds_until_judged() {
    let mut p = Pipeline::new(vec![guard_text(|t: &str, _| {
        if t.len() >= 6 {
            Verdict::Release
        } else {
            Verdict::Hold
        }
    })]);
    let mut got = 0;
    assert!(
        p.push(StreamPart::TextDelta("abc".into()), &mut |_: StreamPart| {
            got += 1
        })
        .is_none()
    );
    assert_eq!(got, 0, "nothing is released before the verdict");
    assert!(
        p.push(StreamPart::TextDelta("def".into()), &mut |_: StreamPart| {
            got += 1
        })
        .is_none()
    );
    assert_eq!(got, 2);
}

/// A pattern for the oracle, written out by hand: its source, its literal
/// prefix and its class members (`None`: a literal pattern).
type Spec = (&'static str, &'static str, Option<&'static str>);

/// The oracle, independent of the parser and the scanner: at each char
/// boundary the first spec (in order) that matches there wins, greedily.
fn oracle(text: &str, specs: &[Spec], replacement: &str) -> String {
    let match_at = |rest: &str| {
        specs.iter().find_map(|(_, prefix, class)| {
            let after = rest.strip_prefix(prefix)?;
            match class {
                None => Some(prefix.len()),
                Some(members) => {
                    let run = after.chars().take_while(|c| members.contains(*c)).count();
                    (run > 0).then_some(prefix.len() + run)
                }
            }
        })
    };
    let mut out = String::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        match match_at(rest) {
            Some(len) => {
                out.push_str(replacement);
                rest = &rest[len..];
            }
            None => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    out
}

const SPECS: &[&[Spec]] = &[
    &[("sk-[a-z]+", "sk-", Some("abcdefghijklmnopqrstuvwxyz"))],
    &[
        ("s-a", "s-a", None),
        ("sk", "sk", None),
        ("[ak]+", "", Some("ak")),
    ],
    &[
        ("ké", "ké", None),
        ("é[a\\-]+", "é", Some("a-")),
        ("k", "k", None),
    ],
    &[
        ("ss-[a]+", "ss-", Some("a")),
        ("s", "s", None),
        ("[-]+", "", Some("-")),
    ],
    &[
        ("sk-s[k]+", "sk-s", Some("k")),
        ("k-[sk]+", "k-", Some("sk")),
    ],
];
const ALPHABET: &[&str] = &["s", "k", "-", "a", "é", " "];

/// Every text of `len` chars over `ALPHABET`.
fn texts(len: u32) -> impl Iterator<Item = String> {
    let n = ALPHABET.len();
    (0..n.pow(len)).map(move |mut code| {
        (0..len)
            .map(|_| {
                let c = ALPHABET[code % n];
                code /= n;
                c
            })
            .collect()
    })
}

/// Streams `text` cut at the char boundaries chosen by the bits of `cuts`;
/// a cut at bit `flush` is a tool call, which flushes the text before it.
/// The stage is finished, so it can take the next stream.
fn stream(stage: &mut dyn StreamTransform, text: &str, cuts: u32, flush: Option<usize>) -> String {
    let mut out = String::new();
    let take = |e: Emit, out: &mut String| {
        for p in e.into_parts() {
            match p {
                StreamPart::TextDelta(t) => out.push_str(&t),
                _ => out.push('|'),
            }
        }
    };
    let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).skip(1).collect();
    let mut from = 0;
    for (bit, &at) in bounds.iter().enumerate() {
        if cuts & (1 << bit) == 0 {
            continue;
        }
        let mut e = Emit::default();
        stage.push(StreamPart::TextDelta(text[from..at].into()), &mut e);
        if flush == Some(bit) {
            let call = StreamPart::tool_call("c", "t", serde_json::Value::Null);
            stage.push(call, &mut e);
        }
        take(e, &mut out);
        from = at;
    }
    let mut e = Emit::default();
    stage.push(StreamPart::TextDelta(text[from..].into()), &mut e);
    stage.push(StreamPart::TextDelta(String::new().into()), &mut e);
    stage.finish(&mut e);
    take(e, &mut out);
    out
}

#[test]
fn every_chunking_of_every_short_text_equals_the_oracle() {
    for specs in SPECS {
        let sources: Vec<&str> = specs.iter().map(|s| s.0).collect();
        let pats = patterns(&sources).unwrap();
        let mut stage = redact_text_deltas(pats.clone(), "#");
        for len in 0..=5 {
            for text in texts(len) {
                let want = oracle(&text, specs, "#");
                assert_eq!(redact(&text, &pats, "#"), want, "{sources:?} {text:?}");
                for cuts in 0..1u32 << len.saturating_sub(1) {
                    let got = stream(&mut *stage, &text, cuts, None);
                    assert_eq!(got, want, "{sources:?} {text:?} cuts {cuts:b}");
                }
            }
        }
    }
}

#[test]
fn a_non_text_part_releases_the_held_back_text_as_complete() {
    for specs in SPECS {
        let sources: Vec<&str> = specs.iter().map(|s| s.0).collect();
        let mut stage = redact_text_deltas(patterns(&sources).unwrap(), "#");
        for text in texts(4) {
            let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).skip(1).collect();
            for (bit, &at) in bounds.iter().enumerate() {
                let want = format!(
                    "{}|{}",
                    oracle(&text[..at], specs, "#"),
                    oracle(&text[at..], specs, "#")
                );
                for cuts in 0..1u32 << bounds.len() {
                    let got = stream(&mut *stage, &text, cuts | 1 << bit, Some(bit));
                    assert_eq!(got, want, "{text:?} cuts {cuts:b} flush at {bit}");
                }
            }
        }
    }
}

#[test]
fn an_untouched_delta_passes_as_the_same_string() {
    let mut stage = redact_text_deltas(sk(), "#");
    // Longer than a `Delta` keeps inline: its heap buffer is passed on.
    let d = String::from("the quick brown fox jumps over the lazy dog");
    let ptr = d.as_ptr();
    let mut e = Emit::default();
    stage.push(StreamPart::TextDelta(d.into()), &mut e);
    stage.push(StreamPart::TextDelta(String::new().into()), &mut e);
    match e.into_parts().as_slice() {
        [StreamPart::TextDelta(a), StreamPart::TextDelta(b)] => {
            assert_eq!(a.as_ptr(), ptr, "not copied");
            assert!(b.is_empty(), "an empty delta passes too");
        }
        other => panic!("{other:?}"),
    }
}
