//! One worker's database file.
//!
//! Guarantee: a batch handed to [`WorkerFile::write`] is one SQLite transaction:
//! after a crash it is wholly there or wholly absent, and when `write` returns it
//! is on disk (synced, under `Durability::Full`).
//!
//! Schema (`user_version` 1):
//!
//! ```text
//! meta(k TEXT PRIMARY KEY, v)          'id', 'class', 'format'
//! kv(key TEXT PRIMARY KEY, tag INTEGER, value BLOB) WITHOUT ROWID
//! alarms(name TEXT PRIMARY KEY, at, attempt, scheduled) WITHOUT ROWID
//! ```
//!
//! and, once a collection is first written, its table and the `fields` table
//! (see [`crate::collections`]).
//!
//! `tag` names the codec of `value`. The core never decodes values: JS owns the
//! codec and refuses a tag it does not know, so a newer build's data is never
//! misread by an older one.
//!
//! A worker that has only been read has no file. The file is created by its
//! first write, schema and data in one transaction.

use std::fs;
use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OptionalExtension};

use crate::cache::{self, PageCache};
use crate::collections::{self, Backfill, DocChanges, Schema, Tables};
use crate::error::{Error, Result};
use crate::files::{create_worker_dir, remove_sidecars, sync_dir};
use crate::sqlite::{self, Durability};
use crate::wal::{Unsynced, Wal};
use rusqlite::config::DbConfig;

mod build;
mod image;

const SCHEMA_VERSION: i64 = 1;
/// One stored value, as it crosses to JS on load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub key: String,
    pub tag: u32,
    pub value: Vec<u8>,
}

/// One named alarm as the worker's file holds it: the truth the catalog's
/// index is kept from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alarm {
    /// `""` is the default (unnamed) alarm.
    pub name: String,
    /// When it fires next, epoch milliseconds (a retry's time after a failure).
    pub at: i64,
    /// Failed attempts so far; kept so a restart does not reset the backoff.
    pub attempt: u32,
    /// When it was set for: what a retried run was for.
    pub scheduled: i64,
}

/// A write batch: the final value of every key the batch sets, the keys it
/// deletes, the alarms it sets or removes, and its collection changes.
#[derive(Debug, Default)]
pub struct Batch {
    pub sets: Vec<Row>,
    pub deletes: Vec<String>,
    pub alarms: Vec<Alarm>,
    pub alarm_deletes: Vec<String>,
    pub docs: DocChanges,
}

impl Batch {
    /// The batch's one change, when it is a single set and nothing else.
    fn one_set(&self) -> Option<&Row> {
        let alone = self.deletes.is_empty()
            && self.alarms.is_empty()
            && self.alarm_deletes.is_empty()
            && self.docs.is_empty();
        match &self.sets[..] {
            [row] if alone => Some(row),
            _ => None,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
            && self.deletes.is_empty()
            && self.alarms.is_empty()
            && self.alarm_deletes.is_empty()
            && self.docs.is_empty()
    }
}

/// What a worker's file holds: its key/value page and its alarms, and which
/// declared fields must be filled from stored documents before it runs.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Page {
    pub rows: Vec<Row>,
    pub alarms: Vec<Alarm>,
    pub backfill: Vec<Backfill>,
}

/// Who a worker file belongs to, as it says itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub class: String,
    pub id: String,
    /// Its earliest alarm, epoch ms.
    pub earliest: Option<i64>,
}

/// An open worker database.
pub struct WorkerFile {
    conn: Connection,
    path: PathBuf,
    /// The collection tables that exist, as of the last commit.
    tables: Tables,
    /// How much page cache it keeps, and when it gives it back.
    cache: PageCache,
    /// Its log: commits are written unsynced and synced after (see [`crate::wal`]).
    wal: Wal,
}

impl WorkerFile {
    /// Opens an existing worker file and reads its whole key/value page.
    /// `Ok(None)` when the worker has no file yet (or only an empty one left by
    /// a crash before its first commit, which is removed).
    ///
    /// The file's collections are compared with `schema`: columns no longer
    /// declared are marked inactive (a small write, only when something left
    /// the declaration), and the fields to backfill are in the page.
    pub fn open(
        path: &Path,
        class: &str,
        id: &str,
        durability: Durability,
        schema: &Schema,
    ) -> Result<Option<(Self, Page)>> {
        if !path.exists() {
            return Ok(None);
        }
        let mut conn = sqlite::open_worker(path)?;
        sqlite::configure(&conn, path, durability, cache::WORKER_KIB)?;
        let wal = Wal::attach(&mut conn, path, durability)?;
        let has_meta: bool = conn
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE type='table' AND name='meta'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n > 0)
            .map_err(|e| Error::sqlite("read schema", path, e))?;
        if !has_meta {
            let tables: i64 = conn
                .query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))
                .map_err(|e| Error::sqlite("read schema", path, e))?;
            // A worker's file is built aside and renamed in whole, so an empty
            // one here is damage (a truncation), not a worker yet to exist.
            return Err(Error::Corrupt {
                path: path.to_path_buf(),
                detail: if tables == 0 {
                    "it is empty".into()
                } else {
                    "it has tables but no worker metadata".into()
                },
            });
        }
        check_format(&conn, path)?;
        let tables = Tables::read(&conn).map_err(|e| Error::sqlite("read schema", path, e))?;
        let file = WorkerFile {
            conn,
            path: path.to_path_buf(),
            tables,
            cache: PageCache::default(),
            wal,
        };
        file.check_owner(class, id)?;
        let mut page = file.load()?;
        let (backfill, gone) = collections::reconcile(&file.conn, schema, &file.tables)
            .map_err(|e| Error::sqlite("read collections", path, e))?;
        if !gone.is_empty() {
            file.in_transaction("mark undeclared fields", |c| {
                collections::deactivate(c, &gone)
            })?;
            // Not synced by itself: lost, it is marked again at the next open.
            file.wal.forget();
        }
        page.backfill = backfill;
        file.cache.loaded(&file.conn);
        Ok(Some((file, page)))
    }

    /// Opens the file `create` made, to write to it again; its state is
    /// already resident in the caller, so nothing is read but the owner.
    pub fn attach(path: &Path, class: &str, id: &str, durability: Durability) -> Result<Self> {
        let mut conn = sqlite::open_worker(path)?;
        sqlite::configure(&conn, path, durability, cache::WORKER_KIB)?;
        let wal = Wal::attach(&mut conn, path, durability)?;
        let tables = Tables::read(&conn).map_err(|e| Error::sqlite("read schema", path, e))?;
        let file = WorkerFile {
            conn,
            path: path.to_path_buf(),
            tables,
            cache: PageCache::default(),
            wal,
        };
        file.check_owner(class, id)?;
        Ok(file)
    }

    /// Creates the file for a worker that has none, with `batch` as its first
    /// commit.
    ///
    /// The file is built in memory from an empty worker file ([`template`]),
    /// written under a temporary name with one write, synced once, then
    /// renamed into place and its directory synced: the name appears only for
    /// a complete file. Built in place through SQLite, the same file costs
    /// seven syncs (a rollback journal to enter WAL mode, then a new WAL's
    /// header, its directory and its first commit); built aside, it costs two.
    ///
    /// The file is left closed: many workers are written once and evicted,
    /// and opening it here would create its WAL (a second inode, the most
    /// expensive part of making a worker on ext4) for nothing. `attach` opens
    /// it when there is more to write.
    pub fn create(
        path: &Path,
        class: &str,
        id: &str,
        durability: Durability,
        schema: &Schema,
        batch: &Batch,
    ) -> Result<Vec<u8>> {
        let parent = path.parent().ok_or_else(|| Error::Corrupt {
            path: path.to_path_buf(),
            detail: "a worker path has a directory".into(),
        })?;
        create_worker_dir(parent)?;
        let image = build::build(class, id, schema, batch)
            .map_err(|e| Error::sqlite("create worker", path, e))?;
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".new");
        let tmp = PathBuf::from(tmp);
        // A leftover from a crash mid-create is an unfinished file: truncated
        // and written over.
        crate::files::write_file_then(&tmp, &image, false, |f| {
            crate::files::sync_new_file(f, parent)
        })
        .map_err(|e| Error::io(format!("write {}", tmp.display()), e))?;
        // A log left at the target would be replayed into the new file: a
        // delete cut short by a power loss can keep the unlink of a worker's
        // file and lose that of its log. Its removal is synced with the rename.
        let stale = remove_sidecars(path)?;
        fs::rename(&tmp, path)
            .map_err(|e| Error::io(format!("rename into {}", path.display()), e))?;
        // Synced under either durability: with 'relaxed' the rename is not
        // synced here, but the directory is synced by SQLite at the first sync
        // of the file's new WAL (its header, at the next write), and a name
        // made durable for unsynced data is an empty worker file after a power
        // loss: damage (ERR_DURABLE_CORRUPT for ever), not a lost write.
        if durability == Durability::Full || stale {
            sync_dir(parent)?;
        }
        Ok(image)
    }

    /// Commits one batch as one transaction, written to the log and not yet
    /// synced: the caller syncs what this returns before it reports the commit.
    pub fn write(&mut self, schema: &Schema, batch: &Batch) -> Result<Unsynced> {
        if batch.is_empty() {
            return Ok(Unsynced::none());
        }
        // One statement, which SQLite commits by itself: no BEGIN and COMMIT,
        // each a statement of its own (together a tenth of a serial write's
        // instructions in user space). Not inside an open transaction, which
        // it would join uncommitted; BEGIN refuses that with an error.
        let out = match batch.one_set().filter(|_| self.conn.is_autocommit()) {
            Some(row) => upsert(&self.conn, row).map_err(|e| Error::sqlite("write", &self.path, e)),
            None => {
                let mut tables = self.tables.clone();
                let out = self.cache.around(
                    &self.conn,
                    &self.path,
                    cache::is_bulk(batch.docs.ops.len()),
                    || self.in_transaction("write", |c| apply(c, schema, &mut tables, batch)),
                );
                // The tables the transaction made, once it has committed.
                out.map(|()| self.tables = tables)
            }
        };
        if let Err(e) = out {
            self.wal.forget();
            return Err(e);
        }
        self.cache.committed(&self.conn);
        self.wal.written()
    }

    /// Copies the log into the database file (syncing both, in order), so it
    /// starts over from its beginning at the next commit.
    pub fn checkpoint(&self) -> Result<()> {
        self.conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
            .map_err(|e| Error::sqlite("checkpoint", &self.path, e))
    }

    /// Closes without copying the log into the file: after a failed sync,
    /// whose commit [`Unsynced::discard`] then cuts from the log.
    pub fn abandon(self) {
        // Errors add nothing to the failed sync the caller reports.
        let _ = self
            .conn
            .set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true);
        let _ = self.conn.close();
    }

    /// Fills declared fields of stored documents (see [`collections::backfill`]) in
    /// one transaction: a crash leaves them all to do again on the next wake.
    pub fn backfill(
        &self,
        schema: &Schema,
        coll: usize,
        fields: &[usize],
        ids: &[String],
        columns: &[rusqlite::types::Value],
    ) -> Result<()> {
        let c = schema
            .get(coll)
            .map_err(|e| Error::sqlite("backfill", &self.path, e))?;
        let out = self.cache.around(&self.conn, &self.path, true, || {
            self.in_transaction("backfill", |conn| {
                collections::backfill(conn, c, fields, ids, columns)
            })
        });
        // Not synced by itself: lost, it is done again at the next wake.
        self.wal.forget();
        out
    }

    /// Runs a read over this file's connection and its collection tables.
    pub fn read<T>(
        &self,
        body: impl FnOnce(&Connection, &Tables) -> rusqlite::Result<T>,
    ) -> Result<T> {
        self.cache.reading(&self.conn, &self.path)?;
        body(&self.conn, &self.tables).map_err(|e| Error::sqlite("read", &self.path, e))
    }

    /// Checkpoints the WAL into the file and empties it, then closes. The WAL
    /// file itself is kept (see `sqlite::persist_wal`); emptied, it cannot be
    /// replayed over a database file that later replaces this one.
    pub fn close(self) -> Result<()> {
        let path = self.path;
        // TRUNCATE empties the WAL only after every frame is in the database
        // file and synced; if it cannot, the frames stay and are recovered on
        // the next open.
        self.conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(|e| Error::sqlite("checkpoint", &path, e))?;
        self.conn
            .close()
            .map_err(|(_, e)| Error::sqlite("close", &path, e))
    }

    /// What a worker file says it is, without knowing its id beforehand: for
    /// rebuilding the catalog. Its class, id and earliest alarm.
    pub fn identity(path: &Path, durability: Durability) -> Result<Identity> {
        let mut conn = sqlite::open_worker(path)?;
        sqlite::configure(&conn, path, durability, cache::WORKER_KIB)?;
        let wal = Wal::attach(&mut conn, path, durability)?;
        let read = || -> rusqlite::Result<(Option<String>, Option<String>, Option<i64>)> {
            let meta = |k: &str| {
                conn.query_row("SELECT v FROM meta WHERE k = ?1", [k], |r| r.get(0))
                    .optional()
            };
            let at = conn.query_row("SELECT min(at) FROM alarms", [], |r| r.get(0))?;
            Ok((meta("class")?, meta("id")?, at))
        };
        let (class, id, earliest) = read().map_err(|e| match e {
            rusqlite::Error::SqliteFailure(_, Some(ref m)) if m.starts_with("no such table") => {
                Error::Corrupt {
                    path: path.to_path_buf(),
                    detail: "it has no worker tables".into(),
                }
            }
            e => Error::sqlite("read identity", path, e),
        })?;
        let file = WorkerFile {
            conn,
            path: path.to_path_buf(),
            tables: Tables::default(),
            cache: PageCache::default(),
            wal,
        };
        file.close()?;
        match (class, id) {
            (Some(class), Some(id)) => Ok(Identity {
                class,
                id,
                earliest,
            }),
            _ => Err(Error::Corrupt {
                path: path.to_path_buf(),
                detail: "it has no stored class and id".into(),
            }),
        }
    }

    fn check_owner(&self, class: &str, id: &str) -> Result<()> {
        let stored: Option<String> = self
            .conn
            .query_row("SELECT v FROM meta WHERE k='id'", [], |r| r.get(0))
            .optional()
            .map_err(|e| Error::sqlite("read id", &self.path, e))?;
        match stored {
            Some(s) if s == id => Ok(()),
            Some(s) => Err(Error::Corrupt {
                path: self.path.clone(),
                detail: format!(
                    "it holds worker {class}:{} and was opened as {class}:{}",
                    abbreviate(&s),
                    abbreviate(id)
                ),
            }),
            None => Err(Error::Corrupt {
                path: self.path.clone(),
                detail: "it has no stored id".into(),
            }),
        }
    }

    fn load(&self) -> Result<Page> {
        let ctx = |e| Error::sqlite("load", &self.path, e);
        let mut stmt = self
            .conn
            .prepare("SELECT key, tag, value FROM kv ORDER BY key")
            .map_err(ctx)?;
        let rows = stmt
            .query_map([], |r| {
                Ok(Row {
                    key: r.get(0)?,
                    tag: r.get(1)?,
                    value: r.get(2)?,
                })
            })
            .map_err(ctx)?;
        let rows = rows.collect::<rusqlite::Result<Vec<_>>>().map_err(ctx)?;
        let mut stmt = self
            .conn
            .prepare("SELECT name, at, attempt, scheduled FROM alarms ORDER BY at")
            .map_err(ctx)?;
        let alarms = stmt
            .query_map([], |r| {
                Ok(Alarm {
                    name: r.get(0)?,
                    at: r.get(1)?,
                    attempt: r.get(2)?,
                    scheduled: r.get(3)?,
                })
            })
            .map_err(ctx)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(ctx)?;
        Ok(Page {
            rows,
            alarms,
            backfill: Vec::new(),
        })
    }

    fn in_transaction(
        &self,
        what: &str,
        body: impl FnOnce(&Connection) -> rusqlite::Result<()>,
    ) -> Result<()> {
        let c = &self.conn;
        // Cached, not parsed again for every commit.
        let run = |sql: &str| {
            c.prepare_cached(sql)
                .and_then(|mut s| s.execute([]))
                .map(drop)
        };
        run("BEGIN IMMEDIATE").map_err(|e| Error::sqlite(what, &self.path, e))?;
        match body(c).and_then(|()| run("COMMIT")) {
            Ok(()) => Ok(()),
            Err(e) => {
                // The transaction may already be gone (a failed COMMIT rolls back
                // by itself); a failing ROLLBACK adds nothing to the first error.
                let _ = c.execute_batch("ROLLBACK");
                Err(Error::sqlite(what, &self.path, e))
            }
        }
    }
}

fn apply(
    c: &Connection,
    schema: &Schema,
    tables: &mut Tables,
    batch: &Batch,
) -> rusqlite::Result<()> {
    if !batch.sets.is_empty() {
        let mut up = c.prepare_cached(UPSERT_KV)?;
        for row in &batch.sets {
            up.execute(params![row.key, row.tag, row.value])?;
        }
    }
    if !batch.deletes.is_empty() {
        let mut del = c.prepare_cached("DELETE FROM kv WHERE key = ?1")?;
        for key in &batch.deletes {
            del.execute(params![key])?;
        }
    }
    if !batch.alarms.is_empty() {
        let mut up = c.prepare_cached(
            "INSERT INTO alarms(name, at, attempt, scheduled) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT(name) DO UPDATE SET at = excluded.at, attempt = excluded.attempt, scheduled = excluded.scheduled",
        )?;
        for a in &batch.alarms {
            up.execute(params![a.name, a.at, a.attempt, a.scheduled])?;
        }
    }
    if !batch.alarm_deletes.is_empty() {
        let mut del = c.prepare_cached("DELETE FROM alarms WHERE name = ?1")?;
        for name in &batch.alarm_deletes {
            del.execute(params![name])?;
        }
    }
    collections::apply(c, schema, tables, &batch.docs)
}

const UPSERT_KV: &str = "INSERT INTO kv(key, tag, value) VALUES (?1, ?2, ?3)
     ON CONFLICT(key) DO UPDATE SET tag = excluded.tag, value = excluded.value";

fn upsert(c: &Connection, row: &Row) -> rusqlite::Result<()> {
    let mut up = c.prepare_cached(UPSERT_KV)?;
    up.execute(params![row.key, row.tag, row.value]).map(drop)
}

fn abbreviate(s: &str) -> String {
    if s.chars().count() <= 80 {
        s.to_string()
    } else {
        let head: String = s.chars().take(77).collect();
        format!("{head}…")
    }
}

/// Refuses a file of a newer storage format than this build's, by name,
/// before anything of it is read as if it were ours.
fn check_format(conn: &Connection, path: &Path) -> Result<()> {
    let found: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| Error::sqlite("read format", path, e))?;
    if found > SCHEMA_VERSION {
        return Err(Error::Format {
            path: path.to_path_buf(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::{create_dirs_synced, remove_files};
    use crate::layout;

    const NONE: Schema = Schema {
        collections: Vec::new(),
    };

    fn row(key: &str, v: &[u8]) -> Row {
        Row {
            key: key.into(),
            tag: 1,
            value: v.to_vec(),
        }
    }

    #[test]
    fn a_worker_without_a_file_opens_as_none_and_its_first_write_creates_it() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let path = layout::worker_path(tmp.path(), "Cart", "a/b");
        assert!(WorkerFile::open(&path, "Cart", "a/b", Durability::Full, &NONE)?.is_none());
        let batch = Batch {
            sets: vec![row("x", b"1"), row("y", b"2")],
            ..Batch::default()
        };
        WorkerFile::create(&path, "Cart", "a/b", Durability::Full, &NONE, &batch)?;
        let (mut f, page) = WorkerFile::open(&path, "Cart", "a/b", Durability::Full, &NONE)?
            .ok_or(Error::Closed)?;
        assert_eq!(page.rows, vec![row("x", b"1"), row("y", b"2")]);
        let tick = Alarm {
            name: "tick".into(),
            at: 1_000,
            attempt: 2,
            scheduled: 900,
        };
        f.write(
            &NONE,
            &Batch {
                sets: vec![row("x", b"3")],
                deletes: vec!["y".into()],
                alarms: vec![tick.clone()],
                ..Batch::default()
            },
        )?;
        f.close()?;
        let (mut f, page) = WorkerFile::open(&path, "Cart", "a/b", Durability::Full, &NONE)?
            .ok_or(Error::Closed)?;
        assert_eq!(page.rows, vec![row("x", b"3")]);
        assert_eq!(page.alarms, vec![tick]);
        f.write(
            &NONE,
            &Batch {
                alarm_deletes: vec!["tick".into()],
                ..Batch::default()
            },
        )?;
        f.close()?;
        let (_, page) = WorkerFile::open(&path, "Cart", "a/b", Durability::Full, &NONE)?
            .ok_or(Error::Closed)?;
        assert!(page.alarms.is_empty());
        Ok(())
    }

    #[test]
    fn an_archive_reads_a_log_started_over_from_its_first_frame() -> Result<()> {
        // A log started over by a checkpoint can hold more frames than it
        // did at the last read: only its new salts say the read must begin
        // at its first frame again.
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let path = layout::worker_path(tmp.path(), "Cart", "log");
        let first = Batch {
            sets: vec![row("x", b"0")],
            ..Batch::default()
        };
        WorkerFile::create(&path, "Cart", "log", Durability::Full, &NONE, &first)?;
        let (mut f, _) = WorkerFile::open(&path, "Cart", "log", Durability::Full, &NONE)?
            .ok_or(Error::Closed)?;
        let small = f.write(
            &NONE,
            &Batch {
                sets: vec![row("x", b"1")],
                ..Batch::default()
            },
        )?;
        small.sync(&path)?;
        let read = small.pages()?.ok_or(Error::Closed)?;
        assert!(read.count() > 0 && read.count() < 4);
        f.conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(|e| Error::sqlite("checkpoint", &path, e))?;
        let big: Vec<Row> = (0..12)
            .map(|i| row(&format!("k{i}"), &[7u8; 3000]))
            .collect();
        let after = f.write(
            &NONE,
            &Batch {
                sets: big,
                ..Batch::default()
            },
        )?;
        after.sync(&path)?;
        let pages = after.pages()?.ok_or(Error::Closed)?;
        // The log's frames: those carrying its header's salts (zeros may
        // follow them, written ahead by `inplace`).
        let log =
            fs::read(layout::sidecars(&path)[0].clone()).map_err(|e| Error::io("read log", e))?;
        let frames = log[32..]
            .chunks_exact(24 + pages.page_size as usize)
            .take_while(|f| f[8..16] == log[16..24])
            .count() as u64;
        assert!(
            frames > read.count() as u64,
            "the new log outgrew the old read"
        );
        assert_eq!(pages.count() as u64, frames, "every frame of the new log");
        f.close()?;
        Ok(())
    }

    #[test]
    fn a_log_left_at_a_new_workers_path_is_not_replayed_into_its_file() -> Result<()> {
        // The log of an earlier worker under the same id, with a commit not
        // yet checkpointed: what a delete cut short by a power loss can leave.
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let path = layout::worker_path(tmp.path(), "Cart", "again");
        let first = Batch {
            sets: vec![row("x", b"old")],
            ..Batch::default()
        };
        WorkerFile::create(&path, "Cart", "again", Durability::Full, &NONE, &first)?;
        let (mut f, _) = WorkerFile::open(&path, "Cart", "again", Durability::Full, &NONE)?
            .ok_or(Error::Closed)?;
        let more = Batch {
            sets: vec![row("x", b"older"), row("gone", b"1")],
            ..Batch::default()
        };
        f.write(&NONE, &more)?.sync(&path)?;
        let wal = layout::sidecars(&path)[0].clone();
        let frames = fs::read(&wal).map_err(|e| Error::io("read log", e))?;
        assert!(frames.len() > 32, "the log holds the commit");
        f.abandon();
        remove_files(&path)?;
        fs::write(&wal, &frames).map_err(|e| Error::io("leave log", e))?;

        let fresh = Batch {
            sets: vec![row("y", b"new")],
            ..Batch::default()
        };
        WorkerFile::create(&path, "Cart", "again", Durability::Full, &NONE, &fresh)?;
        let (_, page) = WorkerFile::open(&path, "Cart", "again", Durability::Full, &NONE)?
            .ok_or(Error::Closed)?;
        assert_eq!(page.rows, vec![row("y", b"new")]);
        Ok(())
    }

    #[test]
    fn a_created_file_is_attached_for_its_next_write_and_checked_for_its_owner() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let path = layout::worker_path(tmp.path(), "Cart", "a");
        let first = Batch {
            sets: vec![row("x", b"1")],
            ..Batch::default()
        };
        WorkerFile::create(&path, "Cart", "a", Durability::Full, &NONE, &first)?;
        assert!(matches!(
            WorkerFile::attach(&path, "Cart", "b", Durability::Full),
            Err(Error::Corrupt { .. })
        ));
        let mut f = WorkerFile::attach(&path, "Cart", "a", Durability::Full)?;
        f.write(
            &NONE,
            &Batch {
                sets: vec![row("y", b"2")],
                ..Batch::default()
            },
        )?;
        f.close()?;
        let (_, page) =
            WorkerFile::open(&path, "Cart", "a", Durability::Full, &NONE)?.ok_or(Error::Closed)?;
        assert_eq!(page.rows, vec![row("x", b"1"), row("y", b"2")]);
        Ok(())
    }

    #[test]
    fn a_file_holding_another_id_is_corrupt() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let a = layout::worker_path(tmp.path(), "Cart", "a");
        let b = layout::worker_path(tmp.path(), "Cart", "b");
        WorkerFile::create(&a, "Cart", "a", Durability::Full, &NONE, &Batch::default())?;
        create_dirs_synced(b.parent().ok_or(Error::Closed)?)?;
        fs::copy(&a, &b).map_err(|e| Error::io("copy", e))?;
        match WorkerFile::open(&b, "Cart", "b", Durability::Full, &NONE) {
            Err(Error::Corrupt { .. }) => Ok(()),
            other => panic!("expected Corrupt, got {:?}", other.map(|o| o.is_some())),
        }
    }

    #[test]
    fn random_bytes_are_corrupt() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let a = layout::worker_path(tmp.path(), "Cart", "a");
        create_dirs_synced(a.parent().ok_or(Error::Closed)?)?;
        fs::write(&a, vec![7u8; 8192]).map_err(|e| Error::io("write", e))?;
        assert!(matches!(
            WorkerFile::open(&a, "Cart", "a", Durability::Full, &NONE),
            Err(Error::Corrupt { .. })
        ));
        Ok(())
    }

    #[cfg(unix)]
    fn mode(p: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(p)
            .map(|m| m.permissions().mode() & 0o777)
            .unwrap_or(0)
    }

    #[cfg(unix)]
    #[test]
    fn new_directories_are_0700_and_an_existing_one_keeps_its_mode() -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let mine = tmp.path().join("mine");
        fs::create_dir(&mine).map_err(|e| Error::io("mkdir", e))?;
        fs::set_permissions(&mine, fs::Permissions::from_mode(0o755))
            .map_err(|e| Error::io("chmod", e))?;
        create_dirs_synced(&mine.join("a/b/c"))?;
        assert_eq!(mode(&mine), 0o755);
        for d in ["a", "a/b", "a/b/c"] {
            assert_eq!(mode(&mine.join(d)), layout::DIR_MODE, "{d}");
        }
        Ok(())
    }

    #[test]
    fn a_new_file_is_a_whole_wal_database_and_a_leftover_build_is_written_over() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let path = layout::worker_path(tmp.path(), "Cart", "w");
        let mut leftover = path.as_os_str().to_owned();
        leftover.push(".new");
        create_dirs_synced(path.parent().ok_or(Error::Closed)?)?;
        fs::write(&leftover, vec![7u8; 64 * 1024]).map_err(|e| Error::io("write", e))?;
        let batch = Batch {
            sets: vec![row("k", b"v")],
            ..Batch::default()
        };
        WorkerFile::create(&path, "Cart", "w", Durability::Full, &NONE, &batch)?;
        assert!(!Path::new(&leftover).exists());
        let header = fs::read(&path).map_err(|e| Error::io("read", e))?;
        assert_eq!(header.len() % 4096, 0);
        assert_eq!(&header[18..20], &[2, 2], "marked for WAL in its header");
        let conn = Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(|e| Error::sqlite("open", &path, e))?;
        let check = |sql: &str| -> Result<String> {
            conn.query_row(sql, [], |r| r.get::<_, rusqlite::types::Value>(0))
                .map(|v| format!("{v:?}"))
                .map_err(|e| Error::sqlite("check", &path, e))
        };
        assert_eq!(check("PRAGMA integrity_check")?, "Text(\"ok\")");
        assert_eq!(check("PRAGMA journal_mode")?, "Text(\"wal\")");
        assert_eq!(check("PRAGMA user_version")?, "Integer(1)");
        assert_eq!(check("SELECT v FROM meta WHERE k = 'id'")?, "Text(\"w\")");
        drop(conn);
        let (_, page) =
            WorkerFile::open(&path, "Cart", "w", Durability::Full, &NONE)?.ok_or(Error::Closed)?;
        assert_eq!(page.rows, vec![row("k", b"v")]);
        Ok(())
    }

    #[cfg(unix)]
    #[test]
    fn a_worker_file_and_its_wal_are_0600() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let path = layout::worker_path(tmp.path(), "Cart", "a");
        let batch = Batch {
            sets: vec![row("k", b"v")],
            ..Batch::default()
        };
        WorkerFile::create(&path, "Cart", "a", Durability::Full, &NONE, &batch)?;
        assert_eq!(mode(&path), layout::FILE_MODE);
        let mut file = WorkerFile::attach(&path, "Cart", "a", Durability::Full)?;
        file.write(&NONE, &batch)?;
        let [wal, _, _] = layout::sidecars(&path);
        assert_eq!(mode(&wal), layout::FILE_MODE);
        for d in path.ancestors().skip(1).take(2) {
            assert_eq!(mode(d), layout::DIR_MODE, "{}", d.display());
        }
        Ok(())
    }

    #[test]
    fn a_file_of_a_newer_format_is_refused_by_name() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let path = layout::worker_path(tmp.path(), "Cart", "new");
        let batch = Batch {
            sets: vec![row("x", b"1")],
            ..Batch::default()
        };
        WorkerFile::create(&path, "Cart", "new", Durability::Full, &NONE, &batch)?;
        let conn = Connection::open(&path).map_err(|e| Error::sqlite("open", &path, e))?;
        conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .map_err(|e| Error::sqlite("bump", &path, e))?;
        drop(conn);
        match WorkerFile::open(&path, "Cart", "new", Durability::Full, &NONE) {
            Err(e @ Error::Format { .. }) => {
                assert_eq!(e.code(), "ERR_DURABLE_STATE_FORMAT");
                assert!(e.to_string().contains("storage format 2"), "{e}");
            }
            other => panic!("expected a format error, got {:?}", other.map(|_| ())),
        }
        Ok(())
    }
}
