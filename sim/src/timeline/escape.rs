//! Escaping for text and attribute values. Scenario text is user input, so
//! everything the page shows goes through [`esc`]: the result is valid both
//! as HTML5 and as XML (the page is parsed as XML by its tests).

use std::fmt;

/// Text made safe for element content and quoted attribute values.
#[derive(Debug, Clone, Copy)]
pub(super) struct Esc<'a>(pub(super) &'a str);

/// Shorthand for [`Esc`].
pub(super) fn esc(s: &str) -> Esc<'_> {
    Esc(s)
}

impl fmt::Display for Esc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(i) = rest.find(needs_escape) {
            f.write_str(&rest[..i])?;
            let c = rest[i..].chars().next().unwrap_or('\u{fffd}');
            f.write_str(replacement(c))?;
            rest = &rest[i + c.len_utf8()..];
        }
        f.write_str(rest)
    }
}

fn needs_escape(c: char) -> bool {
    matches!(c, '&' | '<' | '>' | '"' | '\'') || !allowed(c)
}

/// Characters XML 1.0 allows in a document and HTML does not reject: no
/// control characters but tab and line ends, no noncharacters U+FFFE/F.
fn allowed(c: char) -> bool {
    match c {
        '\t' | '\n' | '\r' => true,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => false,
        '\u{fffe}' | '\u{ffff}' => false,
        _ => true,
    }
}

fn replacement(c: char) -> &'static str {
    match c {
        '&' => "&amp;",
        '<' => "&lt;",
        '>' => "&gt;",
        '"' => "&quot;",
        '\'' => "&#39;",
        _ => "\u{fffd}",
    }
}

#[cfg(test)]
mod tests {
    use super::esc;

    #[test]
    fn markup_and_quotes_are_escaped() {
        assert_eq!(
            esc("<script>&\"'</script>").to_string(),
            "&lt;script&gt;&amp;&quot;&#39;&lt;/script&gt;"
        );
    }

    #[test]
    fn control_characters_are_replaced_and_the_rest_kept() {
        assert_eq!(
            esc("a\u{0}b\tc\nd\u{1b}é →").to_string(),
            "a\u{fffd}b\tc\nd\u{fffd}é →"
        );
    }
}
