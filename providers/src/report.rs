//! What a stream says beside its parts: usage, the provider's own stop
//! reason, a refusal, and the events the decoder skipped.
//!
//! These live here rather than in `pai_runtime::StreamPart` on purpose: the
//! runtime's step loop has no use for them yet (it neither bills tokens nor
//! treats a refusal other than as a reply that stopped), a part is kept as
//! small as a text delta, and every `match` on parts in the runtime and the
//! simulator would have to learn variants that carry nothing it acts on. A
//! caller that wants them reads the report the decoder returns at the end.

use std::collections::BTreeMap;

/// Tokens the provider reported for the response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Tokens of the prompt (`prompt_tokens`, `input_tokens`).
    pub input_tokens: u64,
    /// Tokens generated (`completion_tokens`, `output_tokens`).
    pub output_tokens: u64,
}

/// Everything a stream carried that is not a [`pai_runtime::StreamPart`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamReport {
    /// The usage the provider reported last, if any.
    pub usage: Option<Usage>,
    /// The provider's own stop reason (`"end_turn"`, `"content_filter"`,
    /// `"max_output_tokens"`, ...), which the runtime's
    /// [`FinishReason`](pai_runtime::model::FinishReason) part can only
    /// approximate.
    pub stop_reason: Option<String>,
    /// The provider refused: its explanation (OpenAI's `refusal` deltas,
    /// appended), or empty when it gives none (Anthropic's `refusal` stop
    /// reason). The refusal text is not among the text parts.
    pub refusal: Option<String>,
    /// Events (and content the decoder does not turn into parts, such as
    /// reasoning) that were skipped, counted by type.
    pub skipped: BTreeMap<String, u64>,
    /// What the decoder noticed and tolerated, as the provider's SDK does:
    /// a final object that says otherwise than the deltas did (SPEC S6: a
    /// decode problem, reported), a body that ended after its finish
    /// without the terminal event, an unfinished tool call dropped at the
    /// output limit. In the order noticed.
    pub notes: Vec<String>,
}

impl StreamReport {
    /// What was skipped, by kind: `reasoning` (thinking blocks and their
    /// deltas, reasoning items and summaries, `reasoning_content`),
    /// `citations` (citations and annotations), `server tools` (blocks and
    /// items of tools the provider ran itself), `other`.
    pub fn kinds(&self) -> BTreeMap<&'static str, u64> {
        let mut kinds = BTreeMap::new();
        for (what, n) in &self.skipped {
            *kinds.entry(kind_of(what)).or_insert(0) += n;
        }
        kinds
    }

    /// How many events or items were skipped in all.
    pub fn skipped_total(&self) -> u64 {
        self.skipped.values().sum()
    }

    pub(crate) fn skip(&mut self, what: &str) {
        match self.skipped.get_mut(what) {
            Some(n) => *n += 1,
            None => {
                self.skipped.insert(what.to_owned(), 1);
            }
        }
    }

    pub(crate) fn note(&mut self, note: String) {
        self.notes.push(note);
    }

    pub(crate) fn refuse(&mut self, text: &str) {
        self.refusal.get_or_insert_with(String::new).push_str(text);
    }
}

/// The kind of a skipped event or content, by its name.
fn kind_of(what: &str) -> &'static str {
    let has = |words: &[&str]| words.iter().any(|w| what.contains(w));
    if has(&["thinking", "reasoning", "signature"]) {
        "reasoning"
    } else if has(&["citation", "annotation"]) {
        "citations"
    } else if has(&[
        "server_tool",
        "tool_result",
        "web_search",
        "web_fetch",
        "code_interpreter",
        "code_execution",
        "file_search",
        "tool_search",
        "mcp",
        "image_generation",
        "shell",
        "computer",
        "apply_patch",
    ]) {
        "server tools"
    } else {
        "other"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_are_counted_by_type() {
        let mut report = StreamReport::default();
        report.skip("a");
        report.skip("b");
        report.skip("a");
        assert_eq!(report.skipped.get("a"), Some(&2));
        assert_eq!(report.skipped_total(), 3);
    }

    #[test]
    fn skips_are_told_by_kind() {
        let mut report = StreamReport::default();
        for what in [
            "content_block.thinking",
            "delta.signature_delta",
            "delta.citations_delta",
            "response.output_text.annotation.added",
            "content_block.server_tool_use",
            "item.web_search_call",
            "content_block.fallback",
        ] {
            report.skip(what);
        }
        let kinds: Vec<(&str, u64)> = report.kinds().into_iter().collect();
        assert_eq!(
            kinds,
            [
                ("citations", 2),
                ("other", 1),
                ("reasoning", 2),
                ("server tools", 2)
            ]
        );
    }
}
