//! The reads a store answers from one thread record: what `prepare_run`
//! sees (SPEC L1), history reads fenced to their agent and incarnation
//! (M3), and the incremental visible read (M1, the runtime's context
//! cache).

use super::protocol::{CachedThrough, HistoryRead};
use super::record::StoreError;
use super::reply::{ReadReply, RunReply};
use super::thread::ThreadRec;
use crate::message::Message;

/// What `prepare_run` sees of the thread (SPEC L1).
pub(super) fn run_messages(rec: &ThreadRec, run: &str, all: bool) -> RunReply {
    let latest = rec.latest_user_of(run);
    let messages: Vec<Message> = match (all, latest) {
        (true, _) => rec.visible_messages(None).into_iter().cloned().collect(),
        (false, Some(m)) => vec![m.clone()],
        (false, None) => Vec::new(),
    };
    RunReply::RunMessages {
        latest: latest.map(|m| m.seq),
        messages,
    }
}

/// A history read, fenced to the agent and incarnation (SPEC M3).
pub(super) fn history(
    rec: &ThreadRec,
    thread: &str,
    agent: &str,
    incarnation: u64,
    read: HistoryRead,
) -> Result<ReadReply, StoreError> {
    if rec.incarnation() != incarnation || rec.agent() != agent {
        return Err(StoreError::Forbidden {
            thread: thread.into(),
        });
    }
    let messages = rec.messages().iter();
    Ok(match read {
        HistoryRead::Range { from, through } => ReadReply::Messages(
            messages
                .filter(|m| m.seq >= from && m.seq <= through)
                .cloned()
                .collect(),
        ),
        HistoryRead::Before { end, limit } => {
            let below: Vec<&Message> = messages.filter(|m| m.seq < end).collect();
            let start = below.len().saturating_sub(limit);
            ReadReply::Messages(below[start..].iter().map(|m| (*m).clone()).collect())
        }
        HistoryRead::Visible { anchor } => ReadReply::Messages(
            rec.visible_messages(Some(anchor))
                .into_iter()
                .cloned()
                .collect(),
        ),
        HistoryRead::VisibleAfter { anchor, cached } => visible_after(rec, anchor, cached),
        HistoryRead::Metadata => ReadReply::Metadata(rec.metadata().clone()),
        HistoryRead::PrivateMetadata => ReadReply::Metadata(rec.private_metadata().clone()),
    })
}

/// The visible messages up to `anchor`, in context order, that a reader
/// holding `cached` lacks (all of them once the history epoch moved on).
/// While the epoch stays, no message entered the context anywhere but at
/// its end, so the ones the reader lacks are the appends after its cached
/// sequence number, found by a binary search.
fn visible_after(rec: &ThreadRec, anchor: u64, cached: Option<CachedThrough>) -> ReadReply {
    let epoch = rec.epoch();
    let after = cached.filter(|c| c.epoch == epoch).map(|c| c.seq);
    let messages = match after {
        None => rec
            .visible_messages(Some(anchor))
            .into_iter()
            .cloned()
            .collect(),
        Some(seq) => {
            let all = rec.messages();
            let start = all.partition_point(|m| m.seq <= seq);
            all[start..]
                .iter()
                .take_while(|m| m.seq <= anchor)
                .filter(|m| rec.in_place(m))
                .cloned()
                .collect()
        }
    };
    ReadReply::Visible {
        epoch,
        whole: after.is_none(),
        messages,
    }
}

#[cfg(test)]
#[path = "visible_after_tests.rs"]
mod visible_after_tests;
