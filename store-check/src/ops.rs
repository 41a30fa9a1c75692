//! The operations a generated case is made of. Each names its targets
//! abstractly (a thread index, "the lease holder", "a stale token"), and
//! the model turns it into a concrete [`StoreRequest`](pai_runtime::store::StoreRequest)
//! against its current state, so every subsequence of a case is still a
//! meaningful case and proptest can shrink freely.

use proptest::collection::vec;
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

/// How many threads a case works on.
pub(crate) const THREADS: u8 = 3;

/// One generated operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    /// `Open`, as the thread's owner or as another identity (H4).
    Open {
        thread: u8,
        foreign: bool,
    },
    /// A user message: a new run (K1), or a steer (A4) with `steer`.
    Submit {
        thread: u8,
        steer: bool,
        new_run: bool,
        foreign: bool,
    },
    /// A worker takes a lease (K1, K3, T9); `thread: None` asks any thread.
    Claim {
        thread: Option<u8>,
        worker: u8,
        ttl: Option<u64>,
    },
    Renew {
        thread: u8,
        run: RunPick,
        token: TokenPick,
    },
    NextEpisode {
        thread: u8,
        run: RunPick,
        token: TokenPick,
    },
    /// A run's commit of `messages` messages (with `step`, a model step;
    /// with `results`, tool messages: a cancelled run's closing write when
    /// without a step, K6; with `metadata`, the run metadata its hooks
    /// wrote about tool results, in the same commit: K5).
    Append {
        thread: u8,
        run: RunPick,
        token: TokenPick,
        messages: u8,
        step: bool,
        #[serde(default)]
        results: bool,
        #[serde(default)]
        metadata: Option<u8>,
    },
    SetRunMetadata {
        thread: u8,
        run: RunPick,
        token: TokenPick,
        value: u8,
    },
    TakeSteer {
        thread: u8,
        run: RunPick,
        token: TokenPick,
    },
    /// The run gives its answerable calls up (A3, T9).
    CloseCalls {
        thread: u8,
        run: RunPick,
        token: TokenPick,
    },
    /// The run waits on client calls (`true`: an approval, `false`: a client
    /// tool); with `early`, it only makes them answerable while it still
    /// works (T9's `Await`).
    Wait {
        thread: u8,
        run: RunPick,
        token: TokenPick,
        approvals: Vec<bool>,
        #[serde(default)]
        early: bool,
    },
    /// A client answers the `call`-th waiting call (T9).
    Answer {
        thread: u8,
        call: u8,
        answer: AnswerPick,
        foreign: bool,
    },
    /// A resumed run's results, with the run metadata their hooks wrote
    /// (K5) when `metadata` is given.
    CommitResumed {
        thread: u8,
        run: RunPick,
        token: TokenPick,
        #[serde(default)]
        metadata: Option<u8>,
    },
    Finish {
        thread: u8,
        run: RunPick,
        token: Option<TokenPick>,
        end: EndPick,
        next_run: bool,
    },
    Cancel {
        thread: u8,
        target: CancelPick,
    },
    Mutate {
        thread: u8,
        writer: WriterPick,
        expect: ExpectPick,
        incarnation: IncarnationPick,
        writes: Vec<WritePick>,
    },
    /// Regenerates from the `from`-th message (R1, K4).
    Regenerate {
        thread: u8,
        from: u8,
        expect: ExpectPick,
        writes: Vec<WritePick>,
    },
    Delete {
        thread: u8,
    },
    /// Moves the store's clock forward (lease expiry, K3).
    Advance {
        ms: u64,
    },
    Read {
        thread: u8,
        run: RunPick,
        read: ReadPick,
    },
}

impl Op {
    /// The thread the op names (`Claim` without one, and `Advance`: 0).
    pub(crate) fn thread(&self) -> u8 {
        match self {
            Op::Open { thread, .. }
            | Op::Submit { thread, .. }
            | Op::Renew { thread, .. }
            | Op::NextEpisode { thread, .. }
            | Op::Append { thread, .. }
            | Op::SetRunMetadata { thread, .. }
            | Op::TakeSteer { thread, .. }
            | Op::CloseCalls { thread, .. }
            | Op::Wait { thread, .. }
            | Op::Answer { thread, .. }
            | Op::CommitResumed { thread, .. }
            | Op::Finish { thread, .. }
            | Op::Cancel { thread, .. }
            | Op::Mutate { thread, .. }
            | Op::Regenerate { thread, .. }
            | Op::Delete { thread }
            | Op::Read { thread, .. } => *thread,
            Op::Claim { thread, .. } => thread.unwrap_or(0),
            Op::Advance { .. } => 0,
        }
    }
}

/// Which run a run's request speaks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RunPick {
    /// The lease holder, else the current run, else the newest run.
    Holder,
    /// A run of a deleted incarnation, if there is one (H5).
    Retired,
    /// A run still queued behind the current one, if there is one: it
    /// holds no lease, so its writes are refused (K2).
    Queued,
    /// A run that has ended, if there is one: it holds no lease (K2).
    Ended,
}

/// Which token a run's write carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TokenPick {
    Current,
    /// The `n`-th older token handed out on the thread, or one below the current.
    Stale(u8),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AnswerPick {
    Approve,
    Deny,
    Submit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EndPick {
    Completed,
    Failed,
    Cancelled,
}

/// Which run a cancel names (K6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CancelPick {
    /// None: the store picks the current run, else the oldest queued.
    Unnamed,
    Current,
    /// The `n`-th queued run.
    Queued(u8),
    Ended,
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WriterPick {
    Trusted,
    /// The lease holder (or current run) under this token.
    Run(TokenPick),
}

/// What a mutation expects (H3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExpectPick {
    Nothing,
    Version,
    StaleVersion,
    PrivateMetadata,
    StalePrivateMetadata,
    /// Today's private metadata, read as if from the incarnation before (H5).
    OldIncarnation,
}

/// Which incarnation a mutation is bound to (H5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum IncarnationPick {
    Unbound,
    Current,
    Previous,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WritePick {
    Append,
    Metadata {
        key: u8,
        value: Option<u8>,
    },
    PrivateMetadata {
        key: u8,
        value: Option<u8>,
    },
    /// The visibility of the `message`-th message: 0 all, 1 hidden from context, 2 none.
    Visibility {
        message: u8,
        visibility: u8,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReadPick {
    HasSteer,
    RunMetadata,
    WaitingCalls,
    ThreadIds,
}

/// Mostly the first thread, so that runs meet each other there (K1).
/// Below [`THREADS`], requests other than `Open` and `Submit` go to the
/// `n`-th live thread (when one is live); from [`THREADS`] on, to thread
/// `n - THREADS` whether it lives or not (a deleted or missing thread).
fn thread() -> impl Strategy<Value = u8> {
    prop_oneof![
        12 => Just(0),
        5 => Just(1),
        2 => Just(THREADS - 1),
        2 => THREADS..2 * THREADS,
    ]
}

fn token() -> impl Strategy<Value = TokenPick> {
    prop_oneof![3 => Just(TokenPick::Current), 1 => (0u8..4).prop_map(TokenPick::Stale)]
}

fn run_pick() -> impl Strategy<Value = RunPick> {
    prop_oneof![
        16 => Just(RunPick::Holder),
        2 => Just(RunPick::Retired),
        1 => Just(RunPick::Queued),
        1 => Just(RunPick::Ended),
    ]
}

fn small_key() -> impl Strategy<Value = (u8, Option<u8>)> {
    (0u8..2, prop::option::weighted(0.8, 0u8..3))
}

fn write() -> impl Strategy<Value = WritePick> {
    prop_oneof![
        2 => Just(WritePick::Append),
        2 => small_key().prop_map(|(key, value)| WritePick::Metadata { key, value }),
        2 => small_key().prop_map(|(key, value)| WritePick::PrivateMetadata { key, value }),
        1 => (0u8..8, 0u8..3).prop_map(|(message, visibility)| WritePick::Visibility { message, visibility }),
    ]
}

fn expect() -> impl Strategy<Value = ExpectPick> {
    prop_oneof![
        Just(ExpectPick::Nothing),
        Just(ExpectPick::Version),
        Just(ExpectPick::StaleVersion),
        Just(ExpectPick::PrivateMetadata),
        Just(ExpectPick::StalePrivateMetadata),
        Just(ExpectPick::OldIncarnation),
    ]
}

/// A regeneration's expectation: mostly one that holds, so that cuts
/// commit (R1) and meet steers and queued triggers (M1).
fn regenerate_expect() -> impl Strategy<Value = ExpectPick> {
    prop_oneof![3 => Just(ExpectPick::Nothing), 3 => Just(ExpectPick::Version), 2 => expect()]
}

fn writer() -> impl Strategy<Value = WriterPick> {
    prop_oneof![2 => Just(WriterPick::Trusted), 1 => token().prop_map(WriterPick::Run)]
}

fn incarnation() -> impl Strategy<Value = IncarnationPick> {
    prop_oneof![
        4 => Just(IncarnationPick::Unbound),
        2 => Just(IncarnationPick::Current),
        1 => Just(IncarnationPick::Previous),
    ]
}

fn end() -> impl Strategy<Value = EndPick> {
    prop_oneof![
        3 => Just(EndPick::Completed),
        1 => Just(EndPick::Failed),
        1 => Just(EndPick::Cancelled),
    ]
}

fn cancel_target() -> impl Strategy<Value = CancelPick> {
    prop_oneof![
        3 => Just(CancelPick::Unnamed),
        2 => Just(CancelPick::Current),
        2 => (0u8..3).prop_map(CancelPick::Queued),
        1 => Just(CancelPick::Ended),
        1 => Just(CancelPick::Unknown),
    ]
}

fn read() -> impl Strategy<Value = ReadPick> {
    prop_oneof![
        Just(ReadPick::HasSteer),
        Just(ReadPick::RunMetadata),
        Just(ReadPick::WaitingCalls),
        Just(ReadPick::ThreadIds),
    ]
}

fn answer() -> impl Strategy<Value = AnswerPick> {
    prop_oneof![
        Just(AnswerPick::Approve),
        Just(AnswerPick::Deny),
        Just(AnswerPick::Submit)
    ]
}

/// Client operations: opening, messages, answers, cancels, deletes.
fn client_op() -> impl Strategy<Value = Op> {
    let foreign = prop::bool::weighted(0.05);
    prop_oneof![
        1 => (thread(), foreign).prop_map(|(thread, foreign)| Op::Open { thread, foreign }),
        6 => (thread(), prop::bool::weighted(0.3), prop::bool::weighted(0.9), foreign)
            .prop_map(|(thread, steer, new_run, foreign)| Op::Submit { thread, steer, new_run, foreign }),
        3 => (thread(), 0u8..3, answer(), foreign)
            .prop_map(|(thread, call, answer, foreign)| Op::Answer { thread, call, answer, foreign }),
        2 => (thread(), cancel_target()).prop_map(|(thread, target)| Op::Cancel { thread, target }),
        1 => thread().prop_map(|thread| Op::Delete { thread }),
        3 => prop_oneof![Just(5u64), Just(30), Just(60)].prop_map(|ms| Op::Advance { ms }),
        1 => (thread(), run_pick(), read()).prop_map(|(thread, run, read)| Op::Read { thread, run, read }),
    ]
}

/// A worker's operations: claims and a run's writes under its token.
fn worker_op() -> impl Strategy<Value = Op> {
    let ttl = prop_oneof![1 => Just(None), 2 => Just(Some(20u64)), 2 => Just(Some(50))];
    prop_oneof![
        6 => (prop::option::weighted(0.7, thread()), 0u8..2, ttl)
            .prop_map(|(thread, worker, ttl)| Op::Claim { thread, worker, ttl }),
        2 => (thread(), run_pick(), token()).prop_map(|(thread, run, token)| Op::Renew { thread, run, token }),
        1 => (thread(), run_pick(), token()).prop_map(|(thread, run, token)| Op::NextEpisode { thread, run, token }),
        5 => (thread(), run_pick(), token(), 1u8..3, any::<bool>(), prop::bool::weighted(0.3), prop::option::weighted(0.3, 0u8..3))
            .prop_map(|(thread, run, token, messages, step, results, metadata)| Op::Append { thread, run, token, messages, step, results, metadata }),
        1 => (thread(), run_pick(), token(), 0u8..3)
            .prop_map(|(thread, run, token, value)| Op::SetRunMetadata { thread, run, token, value }),
        3 => (thread(), run_pick(), token()).prop_map(|(thread, run, token)| Op::TakeSteer { thread, run, token }),
        1 => (thread(), run_pick(), token()).prop_map(|(thread, run, token)| Op::CloseCalls { thread, run, token }),
        3 => (thread(), run_pick(), token(), vec(any::<bool>(), 1..3), prop::bool::weighted(0.4))
            .prop_map(|(thread, run, token, approvals, early)| Op::Wait { thread, run, token, approvals, early }),
        1 => (thread(), run_pick(), token(), prop::option::weighted(0.5, 0u8..3))
            .prop_map(|(thread, run, token, metadata)| Op::CommitResumed { thread, run, token, metadata }),
        3 => (thread(), run_pick(), prop::option::weighted(0.9, token()), end(), any::<bool>())
            .prop_map(|(thread, run, token, end, next_run)| Op::Finish { thread, run, token, end, next_run }),
    ]
}

/// The thread facade's operations (H2, H3, H5, K4, R1).
fn facade_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (thread(), writer(), expect(), incarnation(), vec(write(), 0..3)).prop_map(
            |(thread, writer, expect, incarnation, writes)| Op::Mutate { thread, writer, expect, incarnation, writes }
        ),
        2 => (thread(), 0u8..8, regenerate_expect(), vec(write(), 0..2))
            .prop_map(|(thread, from, expect, writes)| Op::Regenerate { thread, from, expect, writes }),
    ]
}

/// A case: up to `max_ops` operations. Most cases start with a user
/// message on the first thread, so that the rest meets a live thread.
pub(crate) fn ops(max_ops: usize) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![4 => client_op(), 5 => worker_op(), 2 => facade_op()];
    let first = Op::Submit {
        thread: 0,
        steer: false,
        new_run: true,
        foreign: false,
    };
    (prop::bool::weighted(0.8), vec(op, 1..=max_ops.max(2) - 1)).prop_map(move |(lead, mut ops)| {
        if lead {
            ops.insert(0, first.clone());
        }
        ops
    })
}
