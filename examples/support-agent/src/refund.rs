//! Refunds: a guardrail on what customers ask, and a limit on what the
//! model may do.

use pai_runtime::hook::{Response, RunDecision, ToolCallDecision};
use pai_runtime::message::Outcome;
use pai_runtime::{HookFuture, Lifecycle, Part, hook};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Answers a customer who asks for a refund over `max_amount` without
/// running the model: a person handles those.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RefundPolicy {
    /// The largest refund, in whole dollars, the agent may discuss.
    pub max_amount: u64,
    /// The answer to a larger request.
    pub reply: String,
}

impl RefundPolicy {
    /// The hook, named `name` in the event log.
    pub fn hook<C: Send + Sync + 'static>(&self, name: &str) -> impl Lifecycle<C> + use<C> {
        let me = self.clone();
        hook::prepare_run(name, move |_, input| {
            let text = input
                .latest_user_message
                .map(|m| m.text())
                .unwrap_or_default();
            let asks = text.to_lowercase().contains("refund");
            let over = amount_in(&text).is_some_and(|a| a > me.max_amount);
            if !(asks && over) {
                return HookFuture::ready(Ok(RunDecision::default()));
            }
            HookFuture::ready(Ok(RunDecision::Respond(Response {
                outcome: Outcome::Completed,
                reason: Some("refund over the limit".into()),
                parts: vec![Part::text(me.reply.clone())],
            })))
        })
    }
}

/// Rejects a call of `tool` whose `amount` is over `max_amount`: the
/// model sees the rejection as the call's error, and no refund is made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RefundLimit {
    /// The refund tool's name.
    pub tool: String,
    /// The largest `amount` a call may carry, in whole dollars.
    pub max_amount: u64,
}

impl RefundLimit {
    /// The hook, named `name` in the event log.
    pub fn hook<C: Send + Sync + 'static>(&self, name: &str) -> impl Lifecycle<C> + use<C> {
        let me = self.clone();
        hook::before_tool_call(name, move |_, input| {
            let amount = input.input.get("amount").and_then(|a| a.as_u64());
            let over = input.tool == me.tool && amount.is_some_and(|a| a > me.max_amount);
            HookFuture::ready(Ok(match over {
                true => ToolCallDecision::Reject {
                    message: format!("refunds over ${} need a person", me.max_amount),
                },
                false => ToolCallDecision::Continue,
            }))
        })
    }
}

/// The first dollar amount in `text` (`$120` is 120), if any.
pub fn amount_in(text: &str) -> Option<u64> {
    let (_, after) = text.split_once('$')?;
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::amount_in;

    #[test]
    fn amounts_are_read_after_a_dollar_sign() {
        assert_eq!(amount_in("a refund of $120, please"), Some(120));
        assert_eq!(amount_in("no amount"), None);
        assert_eq!(amount_in("just $"), None);
    }
}
