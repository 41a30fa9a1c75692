//! One SSE event as the format decoders see it, with the JSON accessors
//! that turn a missing or mistyped field into a located error, and what a
//! decoder writes to.

use pai_runtime::StreamPart;
use serde_json::Value;

use crate::error::DecodeError;
use crate::report::{StreamReport, Usage};

/// One SSE event: its number in the stream, type and data.
#[derive(Debug)]
pub(crate) struct Raw<'a> {
    pub index: u64,
    /// The `event:` field; `"message"` when the stream set none.
    pub name: &'a str,
    pub data: &'a str,
}

impl Raw<'_> {
    /// The data as JSON.
    pub(crate) fn json(&self) -> Result<Value, DecodeError> {
        serde_json::from_str(self.data)
            .map_err(|e| self.malformed(format!("data is not JSON: {e}")))
    }

    pub(crate) fn malformed(&self, detail: impl Into<String>) -> DecodeError {
        DecodeError::Malformed {
            event: self.index,
            name: self.name.to_owned(),
            detail: detail.into(),
        }
    }

    /// A string at `path` (keys separated by `.`).
    pub(crate) fn str<'v>(&self, v: &'v Value, path: &str) -> Result<&'v str, DecodeError> {
        self.as_str(self.at(v, path)?, path)
    }

    /// `v` as a string (`what` names it in the error).
    pub(crate) fn as_str<'v>(&self, v: &'v Value, what: &str) -> Result<&'v str, DecodeError> {
        v.as_str()
            .ok_or_else(|| self.malformed(format!("`{what}` is not a string")))
    }

    /// A whole number at `path`.
    pub(crate) fn u64(&self, v: &Value, path: &str) -> Result<u64, DecodeError> {
        self.at(v, path)?
            .as_u64()
            .ok_or_else(|| self.malformed(format!("`{path}` is not a whole number")))
    }

    /// The value at `path`, which must be there.
    pub(crate) fn at<'v>(&self, v: &'v Value, path: &str) -> Result<&'v Value, DecodeError> {
        opt(v, path).ok_or_else(|| self.malformed(format!("`{path}` is missing")))
    }

    /// A usage object: the two counts under the names the format uses;
    /// `null` or absent is no usage.
    pub(crate) fn usage(
        &self,
        v: &Value,
        input: &str,
        output: &str,
    ) -> Result<Option<Usage>, DecodeError> {
        if v.is_null() {
            return Ok(None);
        }
        let count = |key: &str| match v.get(key) {
            None | Some(Value::Null) => Ok(0),
            Some(n) => n
                .as_u64()
                .ok_or_else(|| self.malformed(format!("usage `{key}` is not a whole number"))),
        };
        Ok(Some(Usage {
            input_tokens: count(input)?,
            output_tokens: count(output)?,
        }))
    }
}

/// The value at `path` (keys separated by `.`), if there and not `null`.
pub(crate) fn opt<'v>(v: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.')
        .try_fold(v, |v, key| v.get(key))
        .filter(|v| !v.is_null())
}

/// What a decoder writes: parts, and the report beside them.
#[derive(Debug)]
pub(crate) struct Out<'a> {
    pub parts: &'a mut Vec<StreamPart>,
    pub report: &'a mut StreamReport,
    /// The event was not one the format knows (it was skipped).
    pub foreign: bool,
}

impl Out<'_> {
    /// An event of a type the format does not know: skipped and counted.
    pub(crate) fn unknown(&mut self, name: &str) {
        self.foreign = true;
        self.report.skip(name);
    }

    /// A text delta; an empty one is no part.
    pub(crate) fn text(&mut self, text: &str) {
        if !text.is_empty() {
            self.parts.push(StreamPart::text(text));
        }
    }
}

/// What an event did to the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// More events follow.
    Continue,
    /// The answer is whole (its finish part was written): the body may end
    /// here, as the provider's SDK accepts, and only events that add nothing
    /// to the parts (usage, the terminal event) may follow.
    Finished,
    /// The provider reported a failure (an error part was written); only
    /// the format's terminal event may follow.
    Failed,
    /// The terminal event: nothing may follow.
    End,
}
