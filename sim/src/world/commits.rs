//! The commits a store reported (SPEC H1), recorded as the store answered
//! them: by the one-process store tap and by the store host among
//! workers. Which answers report a commit, and its version, is written
//! here again from the protocol's types, not taken from the runtime's
//! store code. It only records; the H1 oracle judges.

use pai_runtime::{
    StoreError,
    store::{AdminReply, ClientReply, FacadeReply, Finish, RunReply, StoreReply, Submitted},
};

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
    use StoreReply as S;
    let Ok(reply) = reply else { return None };
    let version = match reply {
        S::Client(ClientReply::Submitted(
            Submitted::Run { version, .. } | Submitted::Steer { version, .. },
        )) => *version,
        S::Client(ClientReply::Cancelled(Ok(c))) => c.version,
        S::Client(ClientReply::Answered(Ok(a))) => a.version,
        S::Admin(AdminReply::Claimed(Some(c))) => return Some((c.thread.to_string(), c.version)),
        S::Admin(AdminReply::Finished(Finish::Stored { version, .. })) => *version,
        S::Admin(AdminReply::Deleted(Some(d))) => d.version,
        S::Run(reply) => run_version(reply)?,
        S::Facade(FacadeReply::Mutated(Ok(m))) => m.version,
        S::Facade(FacadeReply::Regenerated(Ok(r))) => r.version,
        _ => return None,
    };
    Some((thread?.to_string(), version))
}

/// The thread's version after a run's write, as its answer says.
pub fn run_version(reply: &RunReply) -> Option<u64> {
    use RunReply as R;
    Some(match reply {
        R::Lease { version, .. }
        | R::Renewed { version, .. }
        | R::MetadataSet { version }
        | R::Awaited { version }
        | R::Finished(Finish::Stored { version, .. }) => *version,
        R::Appended(a) => a.version,
        R::Waited(Some((_, v))) => *v,
        _ => return None,
    })
}
