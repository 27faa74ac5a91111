//! One Durable Object's database file and its connection.
//!
//! The file is what workerd's would be as user SQL sees it: no engine tables,
//! `_cf_KV` and `_cf_METADATA` made at their first write. What marks it as a
//! Durable Object's lies outside any table: `application_id` ([`APPLICATION_ID`])
//! and, as the check that it is this object's, 32 bits of `blake3(id)` in
//! `user_version`. Neither pragma is one user SQL may run.
//!
//! Every statement runs on the caller's thread (the JS thread). A write opens
//! a transaction if none is open (the implicit one of a JS turn, which the
//! caller ends with [`ObjectFile::commit`]); a commit is written to the log
//! without a sync, and the caller syncs what `commit` returns on another
//! thread before it releases anything that depends on it (`wal`). User SQL
//! runs in `exec.rs`, key-value storage and the alarm in `kv.rs`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::Connection;

use super::authorizer::{self, Guard};
use super::errors;
use super::kv::AlarmCache;
use super::stmt::StmtCache;
use crate::cache;
use crate::error::{Error, Result};
use crate::files::create_worker_dir;
use crate::sqlite::{self, Durability};
use crate::wal::{Unsynced, Wal};

/// The settings user SQL may change (workerd's pragma allow-list), at their
/// defaults: what a connection to a new file has (foreign keys are on by
/// default in this build, as in workerd's).
const DEFAULT_SETTINGS: &str = "PRAGMA foreign_keys = ON; PRAGMA case_sensitive_like = OFF; \
     PRAGMA ignore_check_constraints = OFF; PRAGMA legacy_alter_table = OFF; \
     PRAGMA recursive_triggers = OFF; PRAGMA reverse_unordered_selects = OFF;";

/// An object's id and its alarm (ms), as a rebuilt catalog indexes it.
type IdAndAlarm = (String, i64);

/// `PRAGMA application_id` of a Durable Object's file ("DO" and 1).
pub const APPLICATION_ID: i32 = 0x444f_0001;

/// A value bound to user SQL, as workerd maps a JS value: a number is REAL.
pub enum Bind {
    Null,
    Real(f64),
    /// UTF-8, or the generalized UTF-8 workerd writes for a lone surrogate.
    Text(Vec<u8>),
    Blob(Vec<u8>),
}

/// The rows of the last statement of one `exec`, and its counts.
#[derive(Default)]
pub struct Exec {
    pub columns: Vec<String>,
    /// Cells row after row (see [`pack_cell`]).
    pub cells: Vec<u8>,
    pub rows: u32,
    pub rows_read: u64,
    pub rows_written: u64,
}

/// A user's SQL error (the message workerd gives), or the engine's.
pub enum ExecError {
    Sql(String),
    /// The statement writes and the object has no file yet: make it, then
    /// run the whole `exec` again there (nothing has run).
    NeedsFile,
    Engine(Error),
}

impl From<Error> for ExecError {
    fn from(e: Error) -> Self {
        ExecError::Engine(e)
    }
}

/// An object's connection: to its file, or, before its first write, to an
/// empty database in memory that reads see.
pub struct ObjectFile {
    /// First: its statements are finalized before the connection closes.
    pub(super) stmts: StmtCache,
    pub(super) conn: Connection,
    pub(super) path: PathBuf,
    /// `None` for the in-memory stand-in.
    pub(super) wal: Option<Wal>,
    pub(super) guard: Arc<Guard>,
    /// Made by this handle and not yet synced: the next sync covers the file
    /// and its directory too.
    fresh: bool,
    /// Syncs [`make_durable_if_replayed`] made as it was opened.
    pub(super) synced_at_open: u64,
    pub(super) alarm: std::cell::RefCell<AlarmCache>,
}

/// The size of the file a creation writes (one page, `empty_image`): a file
/// with any table is larger once checkpointed.
pub(crate) const CREATION_BYTES: u64 = 4096;
/// A log's header: a log no longer than this holds no commit.
const WAL_HEADER_BYTES: u64 = 32;

/// Syncs an object file's log, the file and its directory when the file is
/// the size a creation writes and its log holds commits; the syncs made (0
/// when it is not). Its creator may have died after writing its first
/// commit and before that commit's sync, which covers the file and its
/// directory: the page cache still holds all three, and SQLite reads the log
/// as if durable. So whatever opens such a file first (a load, a copy, a
/// repair) makes it durable before reading or checkpointing it: once
/// checkpointed, the file no longer looks unsynced.
pub(crate) fn make_durable_if_replayed(path: &Path) -> Result<u64> {
    let [wal, ..] = crate::layout::sidecars(path);
    let creation_sized = std::fs::metadata(path).is_ok_and(|m| m.len() <= CREATION_BYTES);
    if !creation_sized || !std::fs::metadata(&wal).is_ok_and(|m| m.len() > WAL_HEADER_BYTES) {
        return Ok(0);
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    crate::files::sync_new_files_in(dir, &[&wal, path])?;
    Ok(3)
}

/// A commit written to the log, for a commit thread to make durable
/// ([`super::Object::settle`]).
pub struct Written {
    pub unsynced: Unsynced,
    /// The first commit in a new file: its sync covers the file and its
    /// directory too (three syncs), so it is never made on the JS thread.
    pub fresh: bool,
    /// Its number among the object's commits, from 1 (`Object::commit`).
    pub n: u64,
}

fn id_check(id: &str) -> i32 {
    let h = blake3::hash(id.as_bytes());
    let b = h.as_bytes();
    i32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

impl ObjectFile {
    /// Opens the object's file if it has one, checking that it is this
    /// object's; `None` when there is none.
    pub fn open(path: &Path, id: &str, durability: Durability) -> Result<Option<Self>> {
        let mut header = [0u8; 16];
        let read =
            std::fs::File::open(path).and_then(|mut f| std::io::Read::read(&mut f, &mut header));
        match read {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(format!("read {}", path.display()), e)),
        }
        // A file made but never synced, cut by a power loss: its first commit
        // was never reported (its sync covers the file), so it held nothing.
        if header.iter().all(|&b| b == 0) {
            crate::files::remove_files(path)?;
            return Ok(None);
        }
        let synced = make_durable_if_replayed(path)?;
        let [wal, ..] = crate::layout::sidecars(path);
        let bare = std::fs::metadata(path).is_ok_and(|m| m.len() <= CREATION_BYTES)
            && !std::fs::metadata(&wal).is_ok_and(|m| m.len() > WAL_HEADER_BYTES);
        let mut f = Self::connect(path, durability, false)?;
        let (app, check): (i32, i32) = f
            .conn
            .query_row(
                "SELECT * FROM pragma_application_id, pragma_user_version",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| Error::sqlite("open", path, e))?;
        if app != APPLICATION_ID || check != id_check(id) {
            return Err(Error::Corrupt {
                path: path.to_path_buf(),
                detail: format!("not the file of Durable Object {id}"),
            });
        }
        // Only the empty database a creation writes, with no log: made by an
        // instance whose first write rolled back or never synced, so
        // possibly never synced itself. The next commit syncs it first, as
        // for a file made now (`Object::settle`).
        f.fresh = bare
            && f.conn
                .query_row("SELECT count(*) FROM sqlite_master", [], |r| {
                    r.get::<_, i64>(0)
                })
                .map_err(|e| Error::sqlite("open", path, e))?
                == 0;
        f.synced_at_open = synced;
        Ok(Some(f))
    }

    /// For a catalog rebuilt from the files (`repair.rs`): the id and the
    /// alarm (ms) of the object whose file is at `path`, when it has an
    /// alarm (its id is kept beside it); `None` when it has none, so nothing
    /// to index. An error when the file is not a Durable Object's or its id
    /// does not match its check.
    pub fn indexed_alarm(path: &Path, durability: Durability) -> Result<Option<IdAndAlarm>> {
        make_durable_if_replayed(path)?;
        let f = Self::connect(path, durability, false)?;
        let read = || -> rusqlite::Result<(i32, i32, Option<IdAndAlarm>)> {
            let (app, check) = f.conn.query_row(
                "SELECT * FROM pragma_application_id, pragma_user_version",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            if app != APPLICATION_ID || !f.has_table("_cf_METADATA").unwrap_or(false) {
                return Ok((app, check, None));
            }
            let found = f
                .conn
                .query_row(
                    "SELECT (SELECT value FROM _cf_METADATA WHERE key = 4), (SELECT value FROM _cf_METADATA WHERE key = 1)",
                    [],
                    |r| Ok((r.get::<_, Option<String>>(0)?, r.get::<_, Option<i64>>(1)?)),
                )?;
            Ok((
                app,
                check,
                match found {
                    (Some(id), Some(ns)) => Some((id, ns.div_euclid(1_000_000))),
                    _ => None,
                },
            ))
        };
        let (app, check, found) = read().map_err(|e| Error::sqlite("read identity", path, e))?;
        f.close()?;
        if app != APPLICATION_ID {
            return Err(Error::Corrupt {
                path: path.to_path_buf(),
                detail: "not a Durable Object's file".into(),
            });
        }
        match found {
            Some((id, _)) if id_check(&id) != check => Err(Error::Corrupt {
                path: path.to_path_buf(),
                detail: format!("the id it holds ({id}) is not the file's"),
            }),
            found => Ok(found),
        }
    }

    /// The stand-in before the first write: an empty database in memory.
    pub fn empty(path: &Path) -> Result<Self> {
        let conn = Connection::open_in_memory().map_err(|e| Error::sqlite("open", path, e))?;
        Self::secure(conn, path, None, false)
    }

    /// Makes the object's file (an empty database marked as this object's)
    /// and opens it. Nothing is synced here: the first commit's sync covers
    /// the file and its directory ([`Written::fresh`]), and until that sync
    /// nothing the file holds has been reported.
    pub fn create(path: &Path, id: &str, durability: Durability) -> Result<Self> {
        let parent = path.parent().ok_or_else(|| Error::Corrupt {
            path: path.to_path_buf(),
            detail: "an object path has a directory".into(),
        })?;
        create_worker_dir(parent)?;
        let image = empty_image(id).map_err(|e| Error::sqlite("create object", path, e))?;
        // A log without its database (a creation cut short) must not be
        // replayed into the new file.
        crate::files::remove_sidecars(path)?;
        crate::files::write_file(path, &image, false)
            .map_err(|e| Error::io(format!("write {}", path.display()), e))?;
        Self::connect(path, durability, true)
    }

    fn connect(path: &Path, durability: Durability, fresh: bool) -> Result<Self> {
        let mut conn = sqlite::open_worker(path)?;
        sqlite::configure(&conn, path, durability, cache::WORKER_KIB)?;
        let wal = Wal::attach(&mut conn, path, durability)?;
        Self::secure(conn, path, Some(wal), fresh)
    }

    fn secure(conn: Connection, path: &Path, wal: Option<Wal>, fresh: bool) -> Result<Self> {
        let ctx = |e| Error::sqlite("configure", path, e);
        // Plans that depend on bound values, as workerd's SQLite makes them.
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
            false,
        )
        .map_err(ctx)?;
        authorizer::secure(&conn).map_err(ctx)?;
        let guard = Guard::new();
        authorizer::install(&conn, guard.clone()).map_err(ctx)?;
        Ok(ObjectFile {
            stmts: StmtCache::default(),
            conn,
            path: path.to_path_buf(),
            wal,
            guard,
            fresh,
            synced_at_open: 0,
            alarm: Default::default(),
        })
    }

    /// Takes over what the stand-in knew of the alarm (its file is made).
    pub fn follow(&mut self, standin: &ObjectFile) {
        self.alarm.get_mut().known = standin.alarm.borrow().known;
    }

    /// Forgets the alarm, as a reset does (a `delete_all` with no file).
    pub fn forget_alarm(&mut self) {
        self.alarm.get_mut().known = None;
    }

    /// The settings user SQL may change (`DEFAULT_SETTINGS`), as they are
    /// now: statements that put them back on a new connection to this file.
    /// `case_sensitive_like` cannot be read, so it is found by its effect.
    pub fn settings(&self) -> Result<String> {
        let ctx = |e| Error::sqlite("read settings", &self.path, e);
        let mut out = String::new();
        for name in [
            "foreign_keys",
            "ignore_check_constraints",
            "legacy_alter_table",
            "recursive_triggers",
            "reverse_unordered_selects",
        ] {
            let on: i64 = self
                .conn
                .query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
                .map_err(ctx)?;
            out.push_str(&format!("PRAGMA {name} = {on}; "));
        }
        let ignores_case: i64 = self
            .conn
            .query_row("SELECT 'a' LIKE 'A'", [], |r| r.get(0))
            .map_err(ctx)?;
        out.push_str(&format!(
            "PRAGMA case_sensitive_like = {};",
            i64::from(ignores_case == 0)
        ));
        Ok(out)
    }

    /// Puts back what [`ObjectFile::settings`] read.
    pub fn restore_settings(&self, settings: &str) -> Result<()> {
        self.conn
            .execute_batch(settings)
            .map_err(|e| Error::sqlite("restore settings", &self.path, e))
    }

    /// Made by this handle, and its first commit not yet written.
    pub fn is_fresh(&self) -> bool {
        self.fresh
    }

    /// Whether this is the in-memory stand-in (no file yet).
    pub fn is_empty_standin(&self) -> bool {
        self.wal.is_none()
    }

    /// Whether a transaction is open (the implicit one, or an explicit one's
    /// savepoints).
    pub fn in_transaction(&self) -> bool {
        !self.conn.is_autocommit()
    }

    /// Opens the implicit transaction if none is open; true if it did.
    pub fn begin(&self) -> Result<bool> {
        if self.in_transaction() {
            return Ok(false);
        }
        self.conn
            .execute_batch("BEGIN")
            .map_err(|e| Error::sqlite("begin", &self.path, e))?;
        let mut alarm = self.alarm.borrow_mut();
        alarm.depth = 0;
        alarm.undo.clear();
        Ok(true)
    }

    /// Ends the implicit transaction: written to the log, not synced. `None`
    /// when no transaction was open. A failed `COMMIT` (a deferred foreign
    /// key) rolls back and reports the user's error.
    pub fn commit(&mut self) -> std::result::Result<Option<Written>, ExecError> {
        if !self.in_transaction() {
            return Ok(None);
        }
        let undo = std::mem::take(&mut self.alarm.get_mut().undo);
        if let Err(e) = self.conn.execute_batch("COMMIT") {
            let alarm = self.alarm.get_mut();
            alarm.undo = undo;
            alarm.roll_back_to(0);
            let message = match &e {
                rusqlite::Error::SqliteFailure(f, Some(m)) => {
                    format!("{m}: {}", errors::primary(f.extended_code))
                }
                other => other.to_string(),
            };
            let _ = self.conn.execute_batch("ROLLBACK");
            return Err(ExecError::Sql(message));
        }
        let Some(wal) = self.wal.as_mut() else {
            return Ok(None);
        };
        let unsynced = wal.written()?;
        let fresh = std::mem::take(&mut self.fresh);
        Ok(Some(Written {
            unsynced,
            fresh,
            n: 0,
        }))
    }

    /// Drops the open transaction's writes.
    pub fn rollback(&self) -> Result<()> {
        self.alarm.borrow_mut().roll_back_to(0);
        if self.in_transaction() {
            self.conn
                .execute_batch("ROLLBACK")
                .map_err(|e| Error::sqlite("rollback", &self.path, e))?;
        }
        Ok(())
    }

    /// `SAVEPOINT`, `RELEASE` or `ROLLBACK TO` + `RELEASE` of the savepoint
    /// of a transaction at `depth` (`_cf_savepoint_<depth>`).
    pub fn savepoint(&self, op: Savepoint, depth: u32) -> Result<()> {
        let name = format!("_cf_savepoint_{depth}");
        let sql = match op {
            Savepoint::Open => format!("SAVEPOINT {name}"),
            Savepoint::Release => format!("RELEASE {name}"),
            Savepoint::Rollback => format!("ROLLBACK TO {name}; RELEASE {name}"),
        };
        self.conn
            .execute_batch(&sql)
            .map_err(|e| Error::sqlite("savepoint", &self.path, e))?;
        let mut alarm = self.alarm.borrow_mut();
        match op {
            Savepoint::Open => alarm.depth = depth,
            Savepoint::Release => {
                // Its writes now belong to the enclosing level.
                for entry in alarm.undo.iter_mut().filter(|e| e.0 >= depth) {
                    entry.0 = depth.saturating_sub(1);
                }
                alarm.depth = depth.saturating_sub(1);
            }
            Savepoint::Rollback => {
                alarm.roll_back_to(depth);
                alarm.depth = depth.saturating_sub(1);
            }
        }
        Ok(())
    }

    /// The file's bytes as of its last commit, its log's frames included
    /// (a database file in WAL mode), for a copy: outside a transaction.
    pub(crate) fn image(&mut self) -> Result<Vec<u8>> {
        self.conn
            .serialize(rusqlite::MAIN_DB)
            .map(|d| d.to_vec())
            .map_err(|e| Error::sqlite("snapshot", &self.path, e))
    }

    /// Checkpoints the log (the caller holds the connection between events).
    pub fn checkpoint(&self) -> Result<()> {
        self.conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
            .map_err(|e| Error::sqlite("checkpoint", &self.path, e))
    }

    /// Bytes the database uses, as workerd counts them: its first page even
    /// before the file exists (workerd makes the file at once).
    pub fn database_size(&self) -> Result<f64> {
        self.conn
            .query_row(
                "SELECT max((SELECT * FROM pragma_page_count) - (SELECT * FROM pragma_freelist_count), 1), (SELECT * FROM pragma_page_size)",
                [],
                |r| Ok(r.get::<_, i64>(0)? as f64 * r.get::<_, i64>(1)? as f64),
            )
            .map_err(|e| Error::sqlite("database size", &self.path, e))
    }

    /// Drops everything the object stores, its alarm included, in one
    /// transaction (rolling back an open implicit one first): what workerd's
    /// reset of the file leaves, made atomic by SQLite rather than by a
    /// file's replacement.
    pub fn delete_all(&mut self, began: &mut bool) -> Result<()> {
        self.stmts.clear();
        self.rollback()?;
        let ctx = |e| Error::sqlite("delete all", &self.path, e);
        // Settings change only outside a transaction: what a new file's
        // connection would have, as after workerd's reset.
        self.conn.execute_batch(DEFAULT_SETTINGS).map_err(ctx)?;
        *began |= self.begin()?;
        self.alarm.borrow_mut().known = None;
        let objects: Vec<(String, String, bool)> = self
            .conn
            .prepare(
                "SELECT type, name, sql LIKE 'CREATE VIRTUAL TABLE%' FROM sqlite_master
                 WHERE type IN ('table', 'view', 'trigger') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
                 ORDER BY type = 'table', sql LIKE 'CREATE VIRTUAL TABLE%' DESC",
            )
            .and_then(|mut s| {
                s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .collect()
            })
            .map_err(ctx)?;
        self.conn
            .execute_batch("PRAGMA defer_foreign_keys = ON")
            .map_err(ctx)?;
        for (kind, name, _virtual) in objects {
            // A virtual table's shadow tables go with it.
            if kind == "table" && !self.has_table(&name)? {
                continue;
            }
            let sql = format!(
                "DROP {} IF EXISTS \"{}\"",
                kind.to_uppercase(),
                name.replace('"', "\"\"")
            );
            self.conn.execute_batch(&sql).map_err(ctx)?;
        }
        for table in ["sqlite_sequence", "sqlite_stat1"] {
            if self.has_table(table)? {
                self.conn
                    .execute_batch(&format!("DELETE FROM {table}"))
                    .map_err(ctx)?;
            }
        }
        Ok(())
    }

    /// Closes the connection, copying the log into the file first.
    pub fn close(mut self) -> Result<()> {
        self.stmts.clear();
        let path = self.path.clone();
        if self.wal.is_some() {
            let _ = self.checkpoint();
        }
        self.conn
            .close()
            .map_err(|(_, e)| Error::sqlite("close", &path, e))
    }

    /// Closes without a checkpoint: after a failed sync (see
    /// `Unsynced::discard`), or to park the object (the next open reads the
    /// log as it is).
    pub fn abandon(mut self) {
        self.stmts.clear();
        let _ = self.conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        );
        let _ = self.conn.close();
    }
}

/// Which savepoint operation [`ObjectFile::savepoint`] runs.
pub enum Savepoint {
    Open,
    Release,
    Rollback,
}

/// An empty database marked as the object `id`'s, as a file in WAL mode.
pub(crate) fn empty_image(id: &str) -> rusqlite::Result<Vec<u8>> {
    let mut conn = Connection::open_in_memory()?;
    conn.execute_batch(&format!(
        "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {};",
        id_check(id)
    ))?;
    sqlite::wal_image(&mut conn)
}
