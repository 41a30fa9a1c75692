//! Where in a file an error is (SPEC X1): line and column of parse errors,
//! and the span a field path names in the raw text, for errors found after
//! parsing.

use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::field::Segment;

/// 1-based line and column (in characters) of a byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// The byte offset of a 1-based line and column (in characters).
pub(crate) fn offset(text: &str, line: usize, col: usize) -> Option<usize> {
    let start = if line <= 1 {
        0
    } else {
        text.match_indices('\n').nth(line - 2)?.0 + 1
    };
    let row = &text[start..];
    let within = row
        .char_indices()
        .nth(col.saturating_sub(1))
        .map_or(row.len(), |(i, _)| i);
    Some(start + within)
}

/// Serde reports an error inside a table at the table itself. Point at the
/// offending key of an unknown field, or at a quoted value the message
/// names (`pattern "sk-(a|b)": ...`), when it can be found in the table.
/// Returns the range to underline.
pub(crate) fn refine(text: &str, span: Range<usize>, message: &str) -> Range<usize> {
    if let Some(field) = message
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.split('`').next())
    {
        let found = find_in_table(text, &span, |line| {
            let after = line.strip_prefix(field)?;
            after
                .trim_start()
                .starts_with('=')
                .then_some(0..field.len())
        });
        return found.unwrap_or(span);
    }
    // A lifecycle entry is read whole, so its tag's own span is lost: the
    // unknown hook kind is found by its quoted value in the entry.
    if let Some(variant) = message
        .strip_prefix("unknown variant `")
        .and_then(|rest| rest.split('`').next())
    {
        let quoted = format!("\"{variant}\"");
        let found = find_in_table(text, &span, |line| {
            line.find(&quoted).map(|i| i..i + quoted.len())
        });
        if let Some(found) = found {
            return found;
        }
    }
    if let Some(value) = message.split('"').nth(1).filter(|v| !v.is_empty()) {
        let quoted = format!("\"{value}\"");
        let found = find_in_table(text, &span, |line| {
            line.find(&quoted).map(|i| i..i + quoted.len())
        });
        return found.unwrap_or(span);
    }
    span
}

/// The first match of `find` (a range within one trimmed line) among the
/// lines of the table that starts at `span` (which may cover only its header).
fn find_in_table(
    text: &str,
    span: &Range<usize>,
    find: impl Fn(&str) -> Option<Range<usize>>,
) -> Option<Range<usize>> {
    let mut offset = span.start.min(text.len());
    for (i, line) in text[offset..].split_inclusive('\n').enumerate() {
        let trimmed = line.trim_start();
        if i > 0 && offset >= span.end && trimmed.starts_with('[') {
            return None;
        }
        if let Some(r) = find(trimmed) {
            let at = offset + (line.len() - trimmed.len());
            return Some(at + r.start..at + r.end);
        }
        offset += line.len();
    }
    None
}

/// serde_json's message without its own " at line L column C" suffix.
pub(crate) fn strip_json_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

/// The byte range in TOML `text` that a field path names: a key and its
/// value, or an array element. A path that goes further than the file (a
/// field left out) resolves to the deepest part that is there.
pub(crate) fn toml_span(text: &str, path: &[Segment]) -> Option<Range<usize>> {
    let doc = DeTable::parse(text).ok()?;
    let mut table = doc.get_ref();
    let mut best: Option<Range<usize>> = None;
    let mut value: Option<&Spanned<DeValue<'_>>> = None;
    for seg in path {
        let next = match (seg, value.map(Spanned::get_ref)) {
            (Segment::Key(k), None) => keyed(table, k),
            (Segment::Name(k), None) => keyed(table, k),
            (Segment::Key(k), Some(DeValue::Table(t))) => keyed(t, k),
            (Segment::Name(k), Some(DeValue::Table(t))) => keyed(t, k),
            (Segment::Index(i), Some(DeValue::Array(a))) => a.get(*i).map(|v| (v.span(), v)),
            _ => None,
        };
        let Some((span, v)) = next else { break };
        best = Some(span);
        value = Some(v);
        if let DeValue::Table(t) = v.get_ref() {
            table = t;
        }
    }
    best
}

/// A key of a table: the span from the key to the end of its value.
fn keyed<'t, 'i>(
    table: &'t DeTable<'i>,
    key: &str,
) -> Option<(Range<usize>, &'t Spanned<DeValue<'i>>)> {
    let (k, v) = table.iter().find(|(k, _)| k.get_ref().as_ref() == key)?;
    let (ks, vs) = (k.span(), v.span());
    // A table given by a header (`[agent]`) spans its whole body: show the key.
    let span = match v.get_ref() {
        DeValue::Table(_) | DeValue::Array(_) if vs.end - ks.start > 200 => ks,
        _ => ks.start.min(vs.start)..vs.end.max(ks.end),
    };
    Some((span, v))
}

/// A field path as a JSON pointer (RFC 6901), for JSON files.
pub(crate) fn json_pointer(path: &[Segment]) -> String {
    let mut out = String::new();
    for seg in path {
        out.push('/');
        match seg {
            Segment::Key(k) => out.push_str(k),
            Segment::Name(k) => out.push_str(&k.replace('~', "~0").replace('/', "~1")),
            Segment::Index(i) => out.push_str(&i.to_string()),
        }
    }
    out
}
