//! How every connection this crate opens is configured.
//!
//! Exclusive locking is what makes a directory belong to one process: the OS
//! lock is taken by the first write and held until the connection closes or the
//! process dies, so there is no lock file to go stale. No connection uses a
//! `-shm` file: the catalog's WAL index is in heap memory (exclusive locking set
//! before WAL), a worker's in memory of its own (`shm`, on Linux).

use std::path::Path;

use rusqlite::config::DbConfig;
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

/// Read-write, and creating the file only when `create` is set.
fn flags(create: bool) -> OpenFlags {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    match create {
        true => flags | OpenFlags::SQLITE_OPEN_CREATE,
        false => flags,
    }
}

/// Opens `path` read-write, creating it only when `create` is set.
pub fn open(path: &Path, create: bool) -> Result<Connection> {
    Connection::open_with_flags(path, flags(create)).map_err(|e| Error::sqlite("open", path, e))
}

/// Opens an existing worker file (already in WAL mode: `WorkerFile::create`)
/// through the VFS that keeps its WAL index in memory it can give back
/// (`shm`), where there is one.
pub fn open_worker(path: &Path) -> Result<Connection> {
    #[cfg(target_os = "linux")]
    if let Some(vfs) = crate::shm::vfs_name() {
        return Connection::open_with_flags_and_vfs(path, flags(false), vfs)
            .map_err(|e| Error::sqlite("open", path, e));
    }
    open(path, false)
}

/// The bytes of the in-memory database `conn` as a file in WAL mode: its
/// file format read and write versions set to 2, which is what
/// `PRAGMA journal_mode=WAL` writes and an in-memory database refuses to.
pub fn wal_image(conn: &mut Connection) -> rusqlite::Result<Vec<u8>> {
    let mut image = conn.serialize(rusqlite::MAIN_DB)?.to_vec();
    if let Some(versions) = image.get_mut(18..20) {
        versions.copy_from_slice(&[2, 2]);
    }
    Ok(image)
}

/// The file SQLite holds for `conn`'s main database (`SQLITE_FCNTL_FILE_POINTER`),
/// valid while the connection is open.
pub fn main_file(conn: &Connection) -> Option<*mut rusqlite::ffi::sqlite3_file> {
    use rusqlite::ffi;
    let mut file: *mut ffi::sqlite3_file = std::ptr::null_mut();
    // SAFETY: the handle is this open connection's, "main" is a NUL-terminated
    // schema name, and FILE_POINTER writes one pointer through the argument,
    // which lives across the call.
    let rc = unsafe {
        ffi::sqlite3_file_control(
            conn.handle(),
            c"main".as_ptr(),
            ffi::SQLITE_FCNTL_FILE_POINTER,
            (&mut file as *mut *mut ffi::sqlite3_file).cast(),
        )
    };
    (rc == ffi::SQLITE_OK && !file.is_null()).then_some(file)
}

/// Whether `conn` keeps its WAL index in `shm`'s memory.
fn private_index(conn: &Connection) -> bool {
    #[cfg(target_os = "linux")]
    return crate::shm::serves(conn);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = conn;
        false
    }
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
    persist_wal(conn, path)?;
    // Set before WAL, exclusive locking keeps the WAL index in a heap block
    // (rather than a -shm file); a connection with an index of its own enters
    // WAL first, so that SQLite maps that, and holds the file from its first
    // write on.
    let private = private_index(conn);
    let exclusive = || {
        conn.execute_batch("PRAGMA locking_mode=EXCLUSIVE")
            .map_err(|e| Error::sqlite("configure", path, e))
    };
    if !private {
        exclusive()?;
    }
    let mode: String = conn
        .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
        .map_err(|e| classify_lock(e, path))?;
    if private {
        exclusive()?;
    }
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
    // wal_autocheckpoint 100 pages (SQLite's default is 1,000): the WAL is
    // rewound after ~400 KB instead of ~4 MB. Until its first rewind every
    // commit appends to a growing file, and a sync of a growing file also
    // writes its size and new extents; after it, commits overwrite blocks in
    // place. With 1,000 pages the shop took ~5 s of load to get there (32
    // customers, ~400 commits each) and ran about 10% slower once there; 100
    // reached it within a second. A checkpoint every ~40 small commits costs
    // little, and an open worker's WAL index (heap memory, exclusive mode) and
    // its file on disk stay small. (A worker's connection syncs and
    // checkpoints from a commit thread instead, at 400 pages: see wal.rs.)
    conn.execute_batch(&format!(
        "PRAGMA synchronous={sync}; PRAGMA cache_size=-{cache_kib}; PRAGMA temp_store=MEMORY; \
         PRAGMA wal_autocheckpoint=100;"
    ))
    .map_err(|e| Error::sqlite("configure", path, e))?;
    // On macOS fsync leaves data in the drive's cache; only F_FULLFSYNC makes
    // a commit survive power loss, which is what `durability: 'full'` promises.
    if cfg!(target_os = "macos") && matches!(durability, Durability::Full) {
        conn.execute_batch("PRAGMA fullfsync=ON; PRAGMA checkpoint_fullfsync=ON;")
            .map_err(|e| Error::sqlite("configure", path, e))?;
    }
    // Collection reads build a statement per query shape; keep more of them.
    conn.set_prepared_statement_cache_capacity(64);
    // A plan that never depends on bound values. Without it a bound LIMIT
    // marks its statement to be prepared again at every new binding, and a
    // cached find was parsed and planned anew each time: that was half of
    // SQLite's time in an indexed find of 10 (perf, bench docFind).
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .map_err(|e| Error::sqlite("configure", path, e))?;
    Ok(())
}

/// Keeps a database's WAL file when the connection closes instead of deleting
/// it. Workers are opened and closed all day (eviction); creating and deleting
/// a WAL file each time costs the file system an inode search per open, which
/// was most of the kernel time when creating workers (measured with perf on
/// ext4: `recently_deleted` in `__ext4_new_inode`). A kept WAL is emptied at
/// close (see `WorkerFile::close`), so no stale frames outlive their database.
///
/// NOTE: `journal_size_limit=0` would also empty it, but costs every commit:
/// serial writes fell from ~5,000/s to ~3,000/s when it was tried.
fn persist_wal(conn: &Connection, path: &Path) -> Result<()> {
    let mut on: std::os::raw::c_int = 1;
    // SAFETY: the handle is this open connection's, "main" is a valid
    // NUL-terminated schema name, and PERSIST_WAL reads and writes one int
    // through the pointer, which lives across the call.
    let rc = unsafe {
        rusqlite::ffi::sqlite3_file_control(
            conn.handle(),
            c"main".as_ptr(),
            rusqlite::ffi::SQLITE_FCNTL_PERSIST_WAL,
            (&mut on as *mut std::os::raw::c_int).cast(),
        )
    };
    if rc == rusqlite::ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(Error::Shared {
            context: format!("configure {}", path.display()),
            detail: format!("PERSIST_WAL file control failed with code {rc}"),
        })
    }
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

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::layout::{self, FILE_MODE};
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p)
            .map(|m| m.permissions().mode() & 0o777)
            .unwrap_or(0)
    }

    #[test]
    fn the_bundled_sqlite_is_built_to_create_files_0600() {
        // SAFETY: the argument is a NUL-terminated string that outlives the call.
        let used = unsafe {
            rusqlite::ffi::sqlite3_compileoption_used(c"DEFAULT_FILE_PERMISSIONS=0600".as_ptr())
        };
        assert_eq!(
            used, 1,
            "LIBSQLITE3_FLAGS lacks -DSQLITE_DEFAULT_FILE_PERMISSIONS=0600 (.cargo/config.toml)"
        );
    }

    #[test]
    fn a_created_database_and_its_wal_are_0600() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let path = tmp.path().join("x.db");
        let conn = open(&path, true)?;
        configure(&conn, &path, Durability::Full, 64)?;
        conn.execute_batch("CREATE TABLE t(a); INSERT INTO t VALUES (1);")
            .map_err(|e| Error::sqlite("write", &path, e))?;
        let [wal, _, _] = layout::sidecars(&path);
        assert!(wal.exists());
        assert_eq!(mode(&path), FILE_MODE);
        assert_eq!(mode(&wal), FILE_MODE);
        Ok(())
    }
}
