//! A thread's rows: reading a record back (from the cache when the row's
//! revision says it is current) and writing back what changed. Every call
//! runs inside the request's transaction.

use rusqlite::{OptionalExtension, Transaction, params};

use super::error::Backend;
use crate::id::ThreadId;
use crate::message::Message;
use crate::store::thread::ThreadRec;

/// A record as it was read, with what saving it must compare against.
#[derive(Debug)]
pub(super) struct Loaded {
    pub(super) rec: ThreadRec,
    /// The row's revision: one more at every change of the record.
    rev: i64,
    head: String,
    /// Messages stored for the thread.
    stored: usize,
}

/// Decoded records kept between requests (see `record_cache.rs`).
pub(super) type Cache = crate::store::record_cache::RecordCache<Loaded>;

/// Reads thread `id`'s record, or `None` if the store never had it.
pub(super) fn load(
    tx: &Transaction<'_>,
    cache: &mut Cache,
    id: &str,
) -> Result<Option<Loaded>, Backend> {
    let row: Option<(i64, String)> = tx
        .prepare_cached("SELECT rev, head FROM pai_threads WHERE id = ?1")?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let Some((rev, head)) = row else {
        return Ok(None);
    };
    if let Some(cached) = cache.take(id)
        && cached.rev == rev
    {
        return Ok(Some(cached));
    }
    let messages = read_messages(tx, id)?;
    let stored = messages.len();
    let rec = ThreadRec::from_parts(&head, messages).map_err(Backend::corrupt(id))?;
    Ok(Some(Loaded {
        rec,
        rev,
        head,
        stored,
    }))
}

fn read_messages(tx: &Transaction<'_>, id: &str) -> Result<Vec<Message>, Backend> {
    let mut stmt =
        tx.prepare_cached("SELECT body FROM pai_messages WHERE thread = ?1 ORDER BY pos")?;
    let bodies = stmt.query_map([id], |r| r.get::<_, String>(0))?;
    let mut messages = Vec::new();
    for body in bodies {
        messages.push(serde_json::from_str(&body?).map_err(Backend::corrupt(id))?);
    }
    Ok(messages)
}

/// Writes back thread `id`'s record if the request changed it: the head
/// row (its revision moved on) and the messages from the first changed
/// position. `before` is how it was read (`None`: the request created it).
pub(super) fn save(
    tx: &Transaction<'_>,
    cache: &mut Cache,
    id: &str,
    mut rec: ThreadRec,
    before: Option<(i64, String, usize)>,
) -> Result<(), Backend> {
    let head = rec.head().map_err(Backend::corrupt(id))?;
    let (from, changed) = {
        let (from, changed) = rec.changed_messages();
        (from, changed.len())
    };
    let (rev, stored) = match &before {
        Some((rev, old_head, stored)) if *old_head == head && from == *stored && changed == 0 => {
            (*rev, *stored)
        }
        Some((rev, _, stored)) => (
            rev + 1,
            write_rows(tx, id, rev + 1, &mut rec, &head, *stored)?,
        ),
        None => (1, write_rows(tx, id, 1, &mut rec, &head, 0)?),
    };
    cache.keep(
        id.to_string(),
        Loaded {
            rec,
            rev,
            head,
            stored,
        },
    );
    Ok(())
}

/// Writes the head row under revision `rev` and the messages from the
/// first changed position (`stored` were in the table); answers how many
/// messages are stored now.
fn write_rows(
    tx: &Transaction<'_>,
    id: &str,
    rev: i64,
    rec: &mut ThreadRec,
    head: &str,
    stored: usize,
) -> Result<usize, Backend> {
    write_head(tx, id, rev, rec, head)?;
    let (from, changed) = rec.changed_messages();
    if from < stored {
        tx.prepare_cached("DELETE FROM pai_messages WHERE thread = ?1 AND pos >= ?2")?
            .execute(params![id, from as i64])?;
    }
    let mut insert = tx.prepare_cached(
        "INSERT INTO pai_messages (thread, pos, seq, id, body) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (k, m) in changed.iter().enumerate() {
        let body = serde_json::to_string(m).map_err(Backend::corrupt(id))?;
        insert.execute(params![
            id,
            (from + k) as i64,
            m.seq as i64,
            m.id.as_str(),
            body
        ])?;
    }
    rec.persisted();
    Ok(rec.messages().len())
}

fn write_head(
    tx: &Transaction<'_>,
    id: &str,
    rev: i64,
    rec: &ThreadRec,
    head: &str,
) -> Result<(), Backend> {
    tx.prepare_cached(
        "INSERT INTO pai_threads (id, rev, deleted, claimable, head) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (id) DO UPDATE SET rev = excluded.rev, deleted = excluded.deleted,
             claimable = excluded.claimable, head = excluded.head",
    )?
    .execute(params![id, rev, rec.is_deleted(), rec.may_claim(), head])?;
    Ok(())
}

impl Loaded {
    /// The record, and how it was read (for [`save`]).
    pub(super) fn split(self) -> (ThreadRec, (i64, String, usize)) {
        (self.rec, (self.rev, self.head, self.stored))
    }
}

/// Every live thread's id, in id order (byte order, as the memory store's).
pub(super) fn live_ids(tx: &Transaction<'_>) -> Result<Vec<ThreadId>, Backend> {
    let live = ids(
        tx,
        "SELECT id FROM pai_threads WHERE deleted = 0 ORDER BY id",
    )?;
    Ok(live.into_iter().map(ThreadId::from).collect())
}

/// The threads an unscoped claim may find a run on, in id order.
pub(super) fn claimable_ids(tx: &Transaction<'_>) -> Result<Vec<String>, Backend> {
    ids(
        tx,
        "SELECT id FROM pai_threads WHERE claimable = 1 ORDER BY id",
    )
}

fn ids(tx: &Transaction<'_>, sql: &str) -> Result<Vec<String>, Backend> {
    let mut stmt = tx.prepare_cached(sql)?;
    let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
    let mut ids = Vec::new();
    for id in rows {
        ids.push(id?);
    }
    Ok(ids)
}
