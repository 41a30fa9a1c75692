//! `history_probe`: a resolver that reads the history view (SPEC M3), after
//! an optional wait during which other messages may arrive (M1), records
//! every read for the oracles, and reports the reads as one more system
//! message: `collect`, `model_messages` and `before` pages.

use std::time::Duration;

use pai_runtime::{
    HookCx, HookFuture, HookResult, context::ContextInput, hook, message::ModelMessage,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::{HistoryRead, SimContext, SimHook};

fn default_page() -> usize {
    2
}

/// Resolver: read the history view, record and report what it returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistoryProbe {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
    /// Page size of the `before` reads.
    #[serde(default = "default_page")]
    #[schemars(range(min = 1))]
    pub page: usize,
    /// Virtual milliseconds to wait before reading.
    #[serde(default, skip_serializing_if = "crate::defaults::is_zero")]
    #[schemars(extend("default" = 0))]
    pub wait_ms: u64,
}

/// Every read of the history view, recorded, and as one line.
async fn probe(
    cx: &HookCx<'_, SimContext>,
    input: &ContextInput<'_>,
    page: usize,
) -> HookResult<ModelMessage> {
    let h = input.history;
    let anchor = h.anchor();
    let record = |read, seqs: Vec<u64>, ids: Vec<String>| {
        let mut reads = cx.context.reads.lock().unwrap_or_else(|e| e.into_inner());
        reads.push(HistoryRead {
            run_id: cx.run_id.to_string(),
            episode: cx.episode,
            step: input.step,
            anchor,
            read,
            seqs,
            ids,
        });
    };
    let ids = |ms: &[pai_runtime::Message]| ms.iter().map(|m| m.id.to_string()).collect();
    let collected = h.collect(1, u64::MAX).await?;
    let all: Vec<u64> = collected.iter().map(|m| m.seq).collect();
    record("collect", all.clone(), ids(&collected));
    let tail = h
        .model_messages(anchor.saturating_sub(1).max(1), anchor)
        .await?;
    let mut pages = Vec::new();
    let mut cursor = None;
    for _ in 0..8 {
        let p = h.before(cursor, page).await?;
        let seqs: Vec<u64> = p.messages.iter().map(|m| m.seq).collect();
        record("before", seqs.clone(), ids(&p.messages));
        pages.push(format!("[{}]", hashes(&seqs)));
        match p.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    Ok(ModelMessage::system(format!(
        "history anchor=#{anchor} collect(1..)={} model_messages(last two)={} before(pages of {page})={}",
        hashes(&all),
        tail.len(),
        pages.join(" ")
    )))
}

/// `#1 #2 #3`
fn hashes(seqs: &[u64]) -> String {
    let words: Vec<String> = seqs.iter().map(|s| format!("#{s}")).collect();
    words.join(" ")
}

impl HistoryProbe {
    pub(super) fn hook(&self, name: &str) -> SimHook {
        let (page, wait) = (self.page, self.wait_ms);
        Box::new(hook::resolve_model_context::<SimContext, _>(
            name,
            move |cx, input, next| {
                HookFuture::new(async move {
                    let mut out = next.run().await?;
                    if wait > 0 {
                        tokio::time::sleep(Duration::from_millis(wait)).await;
                    }
                    out.push(probe(cx, input, page).await?);
                    Ok(out)
                })
            },
        ))
    }
}
