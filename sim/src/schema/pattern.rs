//! The schema of a redaction pattern: the grammar `pai_runtime::text::Pattern`
//! parses, as a regular expression the schema checks.

use schemars::Schema;
use serde_json::json;

/// The grammar `pai_runtime::text::Pattern::parse` accepts: a literal prefix
/// (other characters than `\ [ + * ? ( ) | . { } ^ $`, or any character
/// escaped with `\`), then at most one class of ASCII characters and ranges,
/// followed by `+`, as the last item. The ranges must ascend, which only
/// the loader checks.
pub const REDACT_PATTERN: &str =
    r"^(?:[^\\\[+*?()|.{}^$]|\\[\s\S])*(?:\[(?:[\x00-\x5B\x5E-\x7F]|\\[\x00-\x7F])*\]\+)?$";

/// The schema of a redaction pattern: a string of [`REDACT_PATTERN`]'s
/// grammar (`hooks::RedactPattern` derives a string and points here).
pub fn redact_pattern(schema: &mut Schema) {
    schema.insert(
        "description".into(),
        "A redaction pattern: a literal prefix, then at most one class of ASCII characters and ascending ranges followed by `+` (`sk-[A-Za-z0-9_-]+`); `\\` escapes the next character. Parsed when the scenario loads.".into(),
    );
    schema.insert("minLength".into(), 1.into());
    schema.insert("pattern".into(), REDACT_PATTERN.into());
    schema.insert("examples".into(), json!(["sk-[A-Za-z0-9_-]+", "password"]));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pattern grammar of the schema accepts what the runtime parses
    /// and refuses what it refuses (but for descending ranges).
    #[test]
    fn the_pattern_grammar_matches_the_parser() {
        let re = regex::Regex::new(REDACT_PATTERN).expect("a valid regex");
        for source in [
            "sk-[A-Za-z0-9_-]+",
            "password",
            "a\\.b",
            "[0-9]+",
            "x]y",
            "[]+",
            "\\[x\\]",
            "[\\]]+",
        ] {
            assert!(
                pai_runtime::text::Pattern::parse(source).is_ok(),
                "{source}"
            );
            assert!(re.is_match(source), "the schema refuses {source:?}");
        }
        for source in [
            "sk-(a|b)", "a.b", "a+", "[a-z]", "[a-z]+x", "[é]+", "\\", "[a-z", "^a", "a{2}",
        ] {
            assert!(
                pai_runtime::text::Pattern::parse(source).is_err(),
                "{source}"
            );
            assert!(!re.is_match(source), "the schema accepts {source:?}");
        }
    }
}
