//! How every connection this crate opens is configured.
//!
//! Exclusive locking is what makes a directory belong to one process: the OS
//! lock is taken by the first write and held until the connection closes or the
//! process dies, so there is no lock file to go stale. Setting it before WAL also
//! keeps the WAL index in heap memory rather than a `-shm` file per worker.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use crate::error::{Error, Result};

/// How hard a commit tries to reach the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Every commit is synced to the device (`synchronous=FULL`): survives power loss.
    Full,
    /// Commits reach the OS, synced at checkpoints (`synchronous=NORMAL`):
    /// survives a process crash, not a power loss.
    Relaxed,
}

impl Durability {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "full" => Some(Durability::Full),
            "relaxed" => Some(Durability::Relaxed),
            _ => None,
        }
    }
}

/// Opens `path` read-write, creating it only when `create` is set.
pub fn open(path: &Path, create: bool) -> Result<Connection> {
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if create {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    Connection::open_with_flags(path, flags).map_err(|e| Error::sqlite("open", path, e))
}

/// Applies the per-connection settings. `cache_kib` bounds the page cache:
/// worker state is resident in JS, so a worker's own cache only needs the pages
/// a commit touches.
pub fn configure(
    conn: &Connection,
    path: &Path,
    durability: Durability,
    cache_kib: i64,
) -> Result<()> {
    // A zero busy timeout: a lock held by someone else is an answer, not a wait.
    conn.busy_timeout(std::time::Duration::ZERO)
        .map_err(|e| Error::sqlite("configure", path, e))?;
    // Exclusive locking first: set before WAL, the WAL index lives in heap
    // memory rather than a -shm file per worker.
    conn.execute_batch("PRAGMA locking_mode=EXCLUSIVE")
        .map_err(|e| Error::sqlite("configure", path, e))?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
        .map_err(|e| classify_lock(e, path))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(Error::Corrupt {
            path: path.to_path_buf(),
            detail: format!("could not enter WAL mode (got {mode})"),
        });
    }
    let sync = match durability {
        Durability::Full => "FULL",
        Durability::Relaxed => "NORMAL",
    };
    conn.execute_batch(&format!(
        "PRAGMA synchronous={sync}; PRAGMA cache_size=-{cache_kib}; PRAGMA temp_store=MEMORY;"
    ))
    .map_err(|e| Error::sqlite("configure", path, e))?;
    Ok(())
}

/// A busy or locked answer means another connection owns the file.
pub fn classify_lock(e: rusqlite::Error, path: &Path) -> Error {
    use rusqlite::ErrorCode;
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => Error::Locked {
            dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
        },
        _ => Error::sqlite("open", path, e),
    }
}
