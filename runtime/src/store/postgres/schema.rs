//! The store's tables, in the Postgres schema the options name: created
//! and migrated on first connect under a version table, and the statements
//! each connection prepares once.

use tokio_postgres::{Client, GenericClient, Statement};

use super::error::PgError;

/// The schema's migrations, in order: migration `k` takes the schema from
/// version `k` to `k + 1`. Never edit one that has shipped; add one. `{s}`
/// stands for the quoted schema name. Ids are `COLLATE "C"`: they order
/// bytewise, as Rust strings (and the memory store's map) do.
const MIGRATIONS: &[&str] = &[
    // 1: threads (the record's head as JSON text, plus what queries need
    // as columns) and their messages, one row per position. Text, not
    // jsonb: jsonb would reorder the keys of metadata maps.
    r#"CREATE TABLE {s}.pai_threads (
        id text COLLATE "C" PRIMARY KEY,
        rev bigint NOT NULL,
        deleted boolean NOT NULL,
        claimable boolean NOT NULL,
        head text NOT NULL
     );
     CREATE INDEX pai_threads_claimable ON {s}.pai_threads (id) WHERE claimable;
     CREATE TABLE {s}.pai_messages (
        thread text COLLATE "C" NOT NULL,
        pos bigint NOT NULL,
        seq bigint NOT NULL,
        id text NOT NULL,
        body text NOT NULL,
        PRIMARY KEY (thread, pos)
     );"#,
];

/// The schema version this build writes.
pub(super) const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// `name` as a quoted SQL identifier.
pub(super) fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Creates the schema and its tables, or brings them up to date, in one
/// transaction under an advisory lock (two processes starting at once
/// migrate one after the other). A schema written by a newer build is
/// refused, and nothing changes.
pub(super) async fn migrate(client: &mut Client, schema: &str) -> Result<(), PgError> {
    let s = quote(schema);
    let tx = client.transaction().await?;
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
        &[&format!("pai-schema:{schema}")],
    )
    .await?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {s};
         CREATE TABLE IF NOT EXISTS {s}.pai_schema (version bigint NOT NULL);"
    ))
    .await?;
    let found = read_version(&tx, &s).await?;
    if found > SCHEMA_VERSION {
        return Err(PgError::NewerSchema {
            schema: schema.to_string(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for migration in &MIGRATIONS[found as usize..] {
        tx.batch_execute(&migration.replace("{s}", &s)).await?;
    }
    if found == 0 {
        tx.execute(
            &format!("INSERT INTO {s}.pai_schema (version) VALUES ($1)"),
            &[&SCHEMA_VERSION],
        )
        .await?;
    } else if found < SCHEMA_VERSION {
        tx.execute(
            &format!("UPDATE {s}.pai_schema SET version = $1"),
            &[&SCHEMA_VERSION],
        )
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// The version the schema holds (0: none yet).
pub(super) async fn read_version(
    client: &impl GenericClient,
    quoted: &str,
) -> Result<i64, PgError> {
    let row = client
        .query_opt(&format!("SELECT version FROM {quoted}.pai_schema"), &[])
        .await?;
    Ok(match row {
        Some(row) => row.try_get(0)?,
        None => 0,
    })
}

/// The statements a request runs, prepared once per connection.
#[derive(Debug)]
pub(super) struct Statements {
    /// Prefix of the advisory-lock key of a thread that has no row yet.
    pub(super) lock_prefix: String,
    pub(super) lock_row: Statement,
    pub(super) lock_new: Statement,
    pub(super) messages: Statement,
    pub(super) insert_head: Statement,
    pub(super) update_head: Statement,
    pub(super) cut_messages: Statement,
    pub(super) insert_messages: Statement,
    pub(super) live_ids: Statement,
    pub(super) first_claimable: Statement,
    pub(super) next_claimable: Statement,
}

impl Statements {
    pub(super) async fn prepare(client: &Client, schema: &str) -> Result<Statements, PgError> {
        let s = quote(schema);
        let threads = format!("{s}.pai_threads");
        let messages = format!("{s}.pai_messages");
        let claimable = format!(
            "SELECT id, rev, head FROM {threads} WHERE claimable AND id > $1
             ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED"
        );
        let prepare = |sql: String| async move { client.prepare(&sql).await };
        Ok(Statements {
            lock_prefix: format!("pai-thread:{schema}:"),
            lock_row: prepare(format!(
                "SELECT rev, head FROM {threads} WHERE id = $1 FOR UPDATE"
            ))
            .await?,
            lock_new: prepare("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))".into())
                .await?,
            messages: prepare(format!(
                "SELECT body FROM {messages} WHERE thread = $1 ORDER BY pos"
            ))
            .await?,
            insert_head: prepare(format!(
                "INSERT INTO {threads} (id, rev, deleted, claimable, head)
                 VALUES ($1, $2, $3, $4, $5)"
            ))
            .await?,
            update_head: prepare(format!(
                "UPDATE {threads} SET rev = $2, deleted = $3, claimable = $4, head = $5
                 WHERE id = $1 AND rev = $6"
            ))
            .await?,
            cut_messages: prepare(format!(
                "DELETE FROM {messages} WHERE thread = $1 AND pos >= $2"
            ))
            .await?,
            insert_messages: prepare(format!(
                "INSERT INTO {messages} (thread, pos, seq, id, body)
                 SELECT $1::text, p, q, i, b
                 FROM unnest($2::int8[], $3::int8[], $4::text[], $5::text[]) AS m (p, q, i, b)"
            ))
            .await?,
            live_ids: prepare(format!(
                "SELECT id FROM {threads} WHERE NOT deleted ORDER BY id"
            ))
            .await?,
            // `id > $1` leaves out an empty id: the first query has no bound.
            first_claimable: prepare(claimable.replace("AND id > $1", "")).await?,
            next_claimable: prepare(claimable).await?,
        })
    }
}
