//! Transcript lines of the thread facade's events (SPEC H2–H5, R1–R3, C1).

use pai_runtime::{event::EventKind, message::Visibility, store::VisibilityChange};

use crate::format::{opt, quoted};

fn vis(v: Visibility) -> &'static str {
    match (v.transcript, v.context) {
        (true, true) => "all",
        (true, false) => "transcript-only",
        (false, true) => "context-only",
        (false, false) => "hidden",
    }
}

fn changes(cs: &[VisibilityChange]) -> String {
    let shown: Vec<String> = cs
        .iter()
        .map(|c| format!("{}:{}->{}", c.message, vis(c.before), vis(c.after)))
        .collect();
    format!("[{}]", shown.join(", "))
}

fn list(xs: &[impl AsRef<str>]) -> String {
    let shown: Vec<&str> = xs.iter().map(AsRef::as_ref).collect();
    format!("[{}]", shown.join(", "))
}

/// The line of a facade event; `None` for any other event.
pub(super) fn facade_event(kind: &EventKind) -> Option<String> {
    Some(match kind {
        EventKind::Mutated {
            version,
            appended,
            metadata,
            private,
            visibility,
        } => format!(
            "mutated version={version} appended={} metadata={} private={} visibility={}",
            list(appended),
            list(metadata),
            list(private),
            changes(visibility)
        ),
        EventKind::MutationRefused {
            op,
            reason,
            conflict,
        } => format!(
            "mutation_refused op={op} conflict={conflict} reason={}",
            quoted(reason)
        ),
        EventKind::HistoryRewritten {
            version,
            kind,
            removed,
            patched,
            started,
        } => format!(
            "history_rewritten kind={kind} version={version} removed={} patched={} started={}",
            list(removed),
            list(patched),
            opt(started)
        ),
        EventKind::RewriteDelivered { versions, error } => {
            let vs: Vec<String> = versions.iter().map(u64::to_string).collect();
            format!(
                "rewrite_delivered versions={} error={}",
                list(&vs),
                opt(error)
            )
        }
        EventKind::ThreadRead {
            version,
            incarnation,
            messages,
        } => format!("read_thread version={version} incarnation={incarnation} messages={messages}"),
        EventKind::ThreadDeleted {
            incarnation,
            cancelled,
        } => format!(
            "thread_deleted incarnation={incarnation} cancelled={}",
            list(cancelled)
        ),
        EventKind::ThreadCreated { incarnation } => {
            format!("thread_created incarnation={incarnation}")
        }
        _ => return compaction_event(kind),
    })
}

/// The line of a compaction event (SPEC C1); `None` for any other event.
fn compaction_event(kind: &EventKind) -> Option<String> {
    Some(match kind {
        EventKind::CompactionStarted {
            step,
            through,
            messages,
        } => format!("compaction_started step={step} through=#{through} messages={messages}"),
        EventKind::Compacted {
            step,
            summary,
            through,
            version,
        } => format!("compacted step={step} summary={summary} cursor=#{through} version={version}"),
        EventKind::CompactionSkipped { step, reason } => {
            format!("compaction_skipped step={step} reason={}", quoted(reason))
        }
        _ => return None,
    })
}
