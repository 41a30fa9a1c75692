//! A thread's rows: locking and reading a record (from the cache when the
//! locked row's revision says it is current) and writing back what
//! changed. Every call runs inside the request's transaction.

use tokio_postgres::{Row, Transaction};

use super::error::Backend;
use super::schema::Statements;
use crate::id::ThreadId;
use crate::message::Message;
use crate::store::thread::ThreadRec;

/// A record as it was read, with what saving it must compare against.
#[derive(Debug)]
pub(super) struct Loaded {
    pub(super) rec: ThreadRec,
    before: Before,
}

/// How a thread's rows were when its record was read.
#[derive(Debug, Clone)]
pub(super) struct Before {
    /// The row's revision: one more at every change of the record.
    rev: i64,
    head: String,
    /// Messages stored for the thread.
    stored: usize,
}

/// A locked thread row: its revision and head.
#[derive(Debug)]
pub(super) struct Locked {
    rev: i64,
    head: String,
}

/// Decoded records kept between requests (see `record_cache.rs`).
pub(super) type Cache = crate::store::record_cache::RecordCache<Loaded>;

fn locked(row: &Row, at: usize) -> Result<Locked, Backend> {
    Ok(Locked {
        rev: row.try_get(at)?,
        head: row.try_get(at + 1)?,
    })
}

/// Locks thread `id`'s row until the transaction ends, and answers it, or
/// `None` if the store never had the thread. A thread without a row is
/// locked too, by an advisory lock on its id: of two requests creating it
/// at once, the second waits for the first to commit, then finds its row.
pub(super) async fn lock(
    tx: &Transaction<'_>,
    st: &Statements,
    id: &str,
) -> Result<Option<Locked>, Backend> {
    if let Some(row) = tx.query_opt(&st.lock_row, &[&id]).await? {
        return Ok(Some(locked(&row, 0)?));
    }
    let key = format!("{}{id}", st.lock_prefix);
    tx.execute(&st.lock_new, &[&key]).await?;
    // A new statement sees what committed while it waited (READ COMMITTED).
    match tx.query_opt(&st.lock_row, &[&id]).await? {
        Some(row) => Ok(Some(locked(&row, 0)?)),
        None => Ok(None),
    }
}

/// The next claimable thread after `after` (from the first, without it)
/// that no other transaction holds, locked, with its id.
pub(super) async fn lock_claimable(
    tx: &Transaction<'_>,
    st: &Statements,
    after: Option<&str>,
) -> Result<Option<(String, Locked)>, Backend> {
    let row = match after {
        None => tx.query_opt(&st.first_claimable, &[]).await?,
        Some(after) => tx.query_opt(&st.next_claimable, &[&after]).await?,
    };
    match row {
        Some(row) => Ok(Some((row.try_get(0)?, locked(&row, 1)?))),
        None => Ok(None),
    }
}

/// Thread `id`'s record, from its locked row: the cached one if its
/// revision is the row's, else decoded from the rows.
pub(super) async fn load(
    tx: &Transaction<'_>,
    st: &Statements,
    cache: &mut Cache,
    id: &str,
    row: Locked,
) -> Result<Loaded, Backend> {
    if let Some(cached) = cache.take(id)
        && cached.before.rev == row.rev
    {
        return Ok(cached);
    }
    let mut messages: Vec<Message> = Vec::new();
    for r in tx.query(&st.messages, &[&id]).await? {
        let body: &str = r.try_get(0)?;
        messages.push(serde_json::from_str(body).map_err(Backend::corrupt(id))?);
    }
    let stored = messages.len();
    let rec = ThreadRec::from_parts(&row.head, messages).map_err(Backend::corrupt(id))?;
    Ok(Loaded {
        rec,
        before: Before {
            rev: row.rev,
            head: row.head,
            stored,
        },
    })
}

/// Writes back thread `id`'s record if the request changed it: the head
/// row (its revision moved on) and the messages from the first changed
/// position. `before` is how it was read (`None`: the request created
/// it). Answers the record as the rows now hold it, for the cache once
/// the transaction commits.
pub(super) async fn save(
    tx: &Transaction<'_>,
    st: &Statements,
    id: &str,
    mut rec: ThreadRec,
    before: Option<Before>,
) -> Result<Loaded, Backend> {
    let head = rec.head().map_err(Backend::corrupt(id))?;
    let (from, changed) = rec.changed_messages();
    let (rev, stored) = match before {
        Some(b) if b.head == head && from == b.stored && changed.is_empty() => {
            return Ok(Loaded { rec, before: b });
        }
        Some(b) => (b.rev + 1, Some((b.rev, b.stored))),
        None => (1, None),
    };
    let (deleted, claimable) = (rec.is_deleted(), rec.may_claim());
    match stored {
        None => {
            let args = [
                &id as _,
                &rev as _,
                &deleted as _,
                &claimable as _,
                &head as _,
            ];
            tx.execute(&st.insert_head, &args).await?;
        }
        Some((old, stored)) => {
            let args = [
                &id as _,
                &rev as _,
                &deleted as _,
                &claimable as _,
                &head as _,
                &old as _,
            ];
            if tx.execute(&st.update_head, &args).await? != 1 {
                return Err(Backend::Lost(id.to_string()));
            }
            if from < stored {
                tx.execute(&st.cut_messages, &[&id, &(from as i64)]).await?;
            }
        }
    }
    if !changed.is_empty() {
        insert_messages(tx, st, id, from, changed).await?;
    }
    rec.persisted();
    let stored = rec.messages().len();
    Ok(Loaded {
        rec,
        before: Before { rev, head, stored },
    })
}

/// Inserts `messages` at positions `from..`, in one statement.
async fn insert_messages(
    tx: &Transaction<'_>,
    st: &Statements,
    id: &str,
    from: usize,
    messages: &[Message],
) -> Result<(), Backend> {
    let pos: Vec<i64> = (from..from + messages.len()).map(|p| p as i64).collect();
    let seq: Vec<i64> = messages.iter().map(|m| m.seq as i64).collect();
    let ids: Vec<&str> = messages.iter().map(|m| m.id.as_str()).collect();
    let mut bodies = Vec::with_capacity(messages.len());
    for m in messages {
        bodies.push(serde_json::to_string(m).map_err(Backend::corrupt(id))?);
    }
    tx.execute(&st.insert_messages, &[&id, &pos, &seq, &ids, &bodies])
        .await?;
    Ok(())
}

impl Loaded {
    /// The record, and how it was read (for [`save`]).
    pub(super) fn split(self) -> (ThreadRec, Before) {
        (self.rec, self.before)
    }
}

/// Every live thread's id, in id order (byte order, as the memory store's).
pub(super) async fn live_ids(
    tx: &Transaction<'_>,
    st: &Statements,
) -> Result<Vec<ThreadId>, Backend> {
    let mut ids = Vec::new();
    for row in tx.query(&st.live_ids, &[]).await? {
        ids.push(ThreadId::new(row.try_get::<_, String>(0)?));
    }
    Ok(ids)
}
