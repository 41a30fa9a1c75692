//! Where in a file a parse error is (SPEC X1): line and column.

/// 1-based line and column (in characters) of a byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// Serde reports an unknown field inside a tagged table at the table itself;
/// point at the offending key when it can be found inside that span.
pub(crate) fn refine(text: &str, span: std::ops::Range<usize>, message: &str) -> usize {
    let Some(rest) = message.strip_prefix("unknown field `") else {
        return span.start;
    };
    let Some(field) = rest.split('`').next() else {
        return span.start;
    };
    // The span may cover only the table header: search the table's own lines.
    let mut offset = span.start;
    for (i, line) in text[span.start.min(text.len())..]
        .split_inclusive('\n')
        .enumerate()
    {
        let trimmed = line.trim_start();
        if i > 0 && offset >= span.end && trimmed.starts_with('[') {
            break;
        }
        if let Some(after) = trimmed.strip_prefix(field)
            && after.trim_start().starts_with('=')
        {
            return offset + (line.len() - trimmed.len());
        }
        offset += line.len();
    }
    span.start
}

/// serde_json's message without its own " at line L column C" suffix.
pub(crate) fn strip_json_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}
