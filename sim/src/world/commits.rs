//! The commits a store reported (SPEC H1), recorded as the store answered
//! them: by the one-process store tap and by the store host among
//! workers. Which answers report a commit, and its version, is written
//! here again from the protocol's types, not taken from the runtime's
//! store code. It only records; the H1 oracle judges.

use pai_runtime::{StoreError, StoreReply, StoreRequest, Submitted};

/// One commit a store reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitRecord {
    /// The process whose request it was (`local` in one process).
    pub from: String,
    /// The request's name.
    pub request: &'static str,
    pub thread: String,
    /// The thread's version after the commit.
    pub version: u64,
    /// How many runtime events had been recorded when it was answered.
    pub after_event: usize,
}

/// The thread and version of the commit an answer reports, if it reports
/// one. A mutation that staged nothing reports the thread's version
/// without a commit; the oracle tells the two apart.
pub fn reported(
    thread: Option<&str>,
    reply: &Result<StoreReply, StoreError>,
) -> Option<(String, u64)> {
    let Ok(reply) = reply else { return None };
    let version = match reply {
        StoreReply::Submitted(
            Submitted::Run { version, .. } | Submitted::Steer { version, .. },
        ) => *version,
        StoreReply::Cancelled(Ok(c)) => c.version,
        StoreReply::Answered(Ok(a)) => a.version,
        StoreReply::Claimed(Some(c)) => return Some((c.thread.clone(), c.version)),
        StoreReply::Lease { version, .. }
        | StoreReply::Renewed { version, .. }
        | StoreReply::Finished { version, .. } => *version,
        StoreReply::Appended(a) => a.version,
        StoreReply::Version(v) => *v,
        StoreReply::Waited(Some((_, v))) => *v,
        StoreReply::Mutated(Ok(m)) => m.version,
        StoreReply::Regenerated(Ok(r)) => r.version,
        StoreReply::Deleted(Some(d)) => d.version,
        _ => return None,
    };
    Some((thread?.to_string(), version))
}

/// The thread a request names.
pub fn thread_of(request: &StoreRequest) -> Option<&str> {
    use StoreRequest as R;
    Some(match request {
        R::Submit { thread, .. }
        | R::Open { thread, .. }
        | R::Cancel { thread, .. }
        | R::Answer { thread, .. }
        | R::NextEpisode { thread, .. }
        | R::Renew { thread, .. }
        | R::Append { thread, .. }
        | R::SetRunMetadata { thread, .. }
        | R::Await { thread, .. }
        | R::Wait { thread, .. }
        | R::CommitResumed { thread, .. }
        | R::Finish { thread, .. }
        | R::Mutate { thread, .. }
        | R::Regenerate { thread, .. }
        | R::Delete { thread } => thread,
        R::Claim {
            thread: Some(thread),
            ..
        } => thread,
        _ => return None,
    })
}
