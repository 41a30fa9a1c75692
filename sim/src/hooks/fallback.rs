//! `fallback`: when an attempt fails before its stream exists, try once more
//! on another model, a fresh route (SPEC P1, P6, P7). With `stream_errors`
//! or `refusals` it also answers a stream that failed or was refused
//! (SPEC S6): code around `next()` never sees such an error (P7), so the
//! hook reads the first stream whole itself before handing anything on.

use std::future::poll_fn;

use pai_runtime::model::{BoxStream, ReadyStream};
use pai_runtime::{HookError, HookFuture, ModelError, StreamPart, hook, hook::AttemptPatch};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::SimHook;
use crate::defaults::is_false;

/// Model call: on a provider failure before the stream (and, when asked,
/// a stream that fails or is refused), retry with model `to`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Fallback {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
    /// The model to try once more on.
    #[schemars(length(min = 1))]
    pub to: String,
    /// Also try `to` when the first stream fails before its end (a cut
    /// connection, the provider's error event; SPEC S6). The first stream
    /// is then read whole before anything is handed on, so none of it is
    /// released live until it ended.
    #[serde(default, skip_serializing_if = "is_false")]
    pub stream_errors: bool,
    /// Also try `to` when the first stream ends refused or filtered by the
    /// provider (SPEC S6), read whole the same way.
    #[serde(default, skip_serializing_if = "is_false")]
    pub refusals: bool,
    /// Try `to` only when the failed attempt may succeed if tried again,
    /// as the provider said (`ModelError::retryable`: HTTP 408, 409, 429,
    /// 5xx, no connection, a timeout): a 400 fails the run as it is.
    #[serde(default, skip_serializing_if = "is_false")]
    pub retryable_only: bool,
}

impl Fallback {
    pub(super) fn hook(&self, name: &str) -> SimHook {
        let this = self.clone();
        Box::new(hook::around_model_call(name, move |_, _, next| {
            let this = this.clone();
            HookFuture::new(async move {
                let first = match next.call(AttemptPatch::default()).await {
                    Ok(stream) if this.reads_streams() => this.judge(stream).await,
                    Ok(stream) => return Ok(stream),
                    // A hook failure inside is not the provider's: let it fail the run.
                    Err(ModelError::Hook(m)) => return Err(HookError::new(m)),
                    Err(e) if this.retryable_only && !e.retryable() => return Err(e.into()),
                    Err(_) => None,
                };
                match first {
                    Some(stream) => Ok(stream),
                    None => Ok(next.call(AttemptPatch::model(this.to.clone())).await?),
                }
            })
        }))
    }

    fn reads_streams(&self) -> bool {
        self.stream_errors || self.refusals
    }

    /// The first stream read whole: handed on as it was, or `None` when it
    /// failed or was refused as this hook answers.
    async fn judge(&self, mut stream: BoxStream) -> Option<BoxStream> {
        let mut parts = Vec::new();
        // Bounded by the stream: a provider stream ends.
        while let Some(part) = poll_fn(|cx| stream.poll_next(cx)).await {
            let answered = match &part {
                StreamPart::Error(_) => self.stream_errors,
                StreamPart::Finish(f) => self.refusals && f.refusal().is_some(),
                _ => false,
            };
            if answered {
                return None;
            }
            parts.push(part);
        }
        // A stream that ended without its finish is cut short, too.
        let finished = matches!(parts.last(), Some(StreamPart::Finish(_)));
        if self.stream_errors && !finished {
            return None;
        }
        Some(Box::new(ReadyStream::new(parts)))
    }
}
