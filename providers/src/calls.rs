//! Tool calls assembled from streamed argument fragments. Fragments are
//! appended to one buffer (no re-concatenation per delta) and parsed as
//! JSON once, when the call closes.

use pai_runtime::StreamPart;
use serde_json::Value;

use crate::error::DecodeError;

/// A tool call whose arguments are still streaming.
#[derive(Debug, Default)]
pub(crate) struct PendingCall {
    pub id: String,
    pub tool: String,
    pub arguments: String,
}

impl PendingCall {
    pub(crate) fn new(id: &str, tool: &str, arguments: &str) -> PendingCall {
        PendingCall {
            id: id.to_owned(),
            tool: tool.to_owned(),
            arguments: arguments.to_owned(),
        }
    }

    /// How the call is named in errors.
    pub(crate) fn label(&self) -> String {
        format!("{} ({})", self.id, self.tool)
    }

    /// The finished call, its arguments parsed. Arguments that are empty
    /// (a tool without parameters, as some servers stream it) are `{}`.
    pub(crate) fn finish(self, event: u64) -> Result<StreamPart, DecodeError> {
        let input = if self.arguments.trim().is_empty() {
            Value::Object(Default::default())
        } else {
            serde_json::from_str(&self.arguments).map_err(|e| DecodeError::ToolArguments {
                event,
                call_id: self.id.clone(),
                tool: self.tool.clone(),
                detail: e.to_string(),
            })?
        };
        Ok(StreamPart::tool_call(self.id, self.tool, input))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_parse_once_whole() {
        let mut call = PendingCall::new("c", "t", "{\"a\":");
        call.arguments.push_str(" [1, 2]}");
        assert_eq!(
            call.finish(7),
            Ok(StreamPart::tool_call(
                "c",
                "t",
                serde_json::json!({"a": [1, 2]})
            ))
        );
    }

    #[test]
    fn arguments_that_never_close_are_an_error() {
        let call = PendingCall::new("c", "t", "{\"a\": [1, ");
        assert!(matches!(
            call.finish(7),
            Err(DecodeError::ToolArguments { event: 7, .. })
        ));
    }
}
