//! The logs and journals of files opened through the crate's VFS (`shm`):
//! the system's own files, with their first sync made under their
//! directory's entry lock ([`crate::files::entry_syncs`]).
//!
//! Why: SQLite's first sync of a log or journal it has created also syncs
//! the file's directory, and on ext4 without a journal so does the first
//! `fsync` of any new file. Two syncs of one directory's entries at once can
//! each return before the other's blocks are written (see `entry_syncs`), so
//! every sync of a worker directory's entries in this process takes the lock:
//! a new worker's rename, a deleted one's unlink, and a new log's name. A
//! later sync of the same file leaves the directory alone and takes no lock.
//!
//! Safety: as in `shm`. SQLite calls these methods only with a file
//! [`open`] wrapped (ours at offset 0, the system's at [`REAL_AT`]), never on
//! one file from two threads at once, and calls `xClose` once on any file
//! whose methods are set.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::ptr;

use rusqlite::ffi;

use crate::shm::forward;

/// Our part of an open log or journal; the system VFS's file follows it at
/// [`REAL_AT`].
#[repr(C)]
struct Log {
    base: ffi::sqlite3_file,
    /// The file's directory until its first sync has succeeded; then null.
    dir: *mut PathBuf,
}

/// Where the system VFS's file starts inside ours (16-aligned for any field).
pub const REAL_AT: usize = (std::mem::size_of::<Log>() + 15) & !15;

/// SAFETY: `f` is a file [`open`] wrapped.
unsafe fn real(f: *mut ffi::sqlite3_file) -> *mut ffi::sqlite3_file {
    // SAFETY: see "Safety" at the top of this module.
    unsafe { f.cast::<u8>().add(REAL_AT).cast() }
}

/// Opens a file other than a main database through `system`. A log or
/// journal being created is wrapped; anything else is the system's own, in
/// place.
///
/// # Safety
///
/// The arguments are those of SQLite's `xOpen` on `system`, with `f` sized
/// for at least [`REAL_AT`] plus the system VFS's `szOsFile`.
pub unsafe fn open(
    system: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    f: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    // SAFETY: see "Safety" at the top of this module and of this function.
    unsafe {
        let Some(sys_open) = system.as_ref().and_then(|s| s.xOpen) else {
            return ffi::SQLITE_CANTOPEN;
        };
        let syncs_dir =
            ffi::SQLITE_OPEN_WAL | ffi::SQLITE_OPEN_MAIN_JOURNAL | ffi::SQLITE_OPEN_SUPER_JOURNAL;
        let created_log = flags & syncs_dir != 0 && flags & ffi::SQLITE_OPEN_CREATE != 0;
        let dir = (created_log && !name.is_null())
            .then(|| Path::new(std::ffi::OsStr::from_bytes(CStr::from_ptr(name).to_bytes())))
            .and_then(Path::parent)
            .map(Path::to_path_buf);
        let Some(dir) = dir else {
            return sys_open(system, name, f, flags, out_flags);
        };
        let log = f.cast::<Log>();
        (*log).base.pMethods = ptr::null();
        (*log).dir = Box::into_raw(Box::new(dir));
        let inner = real(f);
        let rc = sys_open(system, name, inner, flags, out_flags);
        if (*inner).pMethods.is_null() {
            // SQLite calls no xClose on a file whose methods are unset.
            drop(Box::from_raw((*log).dir));
            (*log).dir = ptr::null_mut();
        } else {
            (*log).base.pMethods = &METHODS;
        }
        rc
    }
}

forward!(x_read, xRead, (buf: *mut c_void, n: c_int, at: ffi::sqlite3_int64));
forward!(x_write, xWrite, (buf: *const c_void, n: c_int, at: ffi::sqlite3_int64));
forward!(x_truncate, xTruncate, (size: ffi::sqlite3_int64));
forward!(sys_sync, xSync, (flags: c_int));
forward!(x_file_size, xFileSize, (size: *mut ffi::sqlite3_int64));
forward!(x_lock, xLock, (level: c_int));
forward!(x_unlock, xUnlock, (level: c_int));
forward!(x_check_reserved_lock, xCheckReservedLock, (out: *mut c_int));
forward!(x_file_control, xFileControl, (op: c_int, arg: *mut c_void));
forward!(x_sector_size, xSectorSize, ());
forward!(x_device_characteristics, xDeviceCharacteristics, ());

unsafe extern "C" fn x_sync(f: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    // SAFETY: see "Safety" at the top of this module.
    unsafe {
        let log = f.cast::<Log>();
        let Some(dir) = (*log).dir.as_ref() else {
            return sys_sync(f, flags);
        };
        let rc = {
            let _alone = crate::files::entry_syncs(dir);
            sys_sync(f, flags)
        };
        // Until a sync succeeds, SQLite's next one syncs the directory again.
        if rc == ffi::SQLITE_OK {
            drop(Box::from_raw((*log).dir));
            (*log).dir = ptr::null_mut();
        }
        rc
    }
}

unsafe extern "C" fn x_close(f: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: see "Safety" at the top of this module.
    unsafe {
        let log = f.cast::<Log>();
        if !(*log).dir.is_null() {
            drop(Box::from_raw((*log).dir));
            (*log).dir = ptr::null_mut();
        }
        let inner = real(f);
        match (*(*inner).pMethods).xClose {
            Some(m) => m(inner),
            None => ffi::SQLITE_OK,
        }
    }
}

/// A log or journal has no shared memory and is not memory-mapped: SQLite
/// calls neither on it, so version 1 methods.
static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 1,
    xClose: Some(x_close),
    xRead: Some(x_read),
    xWrite: Some(x_write),
    xTruncate: Some(x_truncate),
    xSync: Some(x_sync),
    xFileSize: Some(x_file_size),
    xLock: Some(x_lock),
    xUnlock: Some(x_unlock),
    xCheckReservedLock: Some(x_check_reserved_lock),
    xFileControl: Some(x_file_control),
    xSectorSize: Some(x_sector_size),
    xDeviceCharacteristics: Some(x_device_characteristics),
    xShmMap: None,
    xShmLock: None,
    xShmBarrier: None,
    xShmUnmap: None,
    xFetch: None,
    xUnfetch: None,
};

#[cfg(test)]
mod tests {
    use crate::error::{Error, Result};
    use crate::sqlite;
    use std::sync::mpsc;
    use std::time::Duration;

    /// A worker-style file in WAL mode, closed (so its log is gone).
    fn wal_file(dir: &std::path::Path) -> Result<std::path::PathBuf> {
        let path = dir.join("w.db");
        let conn =
            rusqlite::Connection::open(&path).map_err(|e| Error::sqlite("open", &path, e))?;
        conn.execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE t (x);")
            .map_err(|e| Error::sqlite("create", &path, e))?;
        Ok(path)
    }

    #[test]
    fn a_new_log_s_first_sync_waits_for_its_directory_s_entry_lock() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let path = wal_file(tmp.path())?;
        let held = crate::files::entry_syncs(tmp.path());
        let (done, finished) = mpsc::channel();
        let writer = std::thread::spawn({
            let path = path.clone();
            move || -> Result<()> {
                let conn = sqlite::open_worker(&path)?;
                conn.execute_batch("PRAGMA synchronous=NORMAL; INSERT INTO t VALUES (1);")
                    .map_err(|e| Error::sqlite("write", &path, e))?;
                let _ = done.send(());
                // A later sync of the same log takes no lock.
                conn.execute_batch("PRAGMA wal_checkpoint(RESTART); INSERT INTO t VALUES (2);")
                    .map_err(|e| Error::sqlite("write", &path, e))?;
                let _ = done.send(());
                Ok(())
            }
        });
        assert!(
            finished.recv_timeout(Duration::from_millis(300)).is_err(),
            "the log's first sync ran while its directory's entry lock was held"
        );
        drop(held);
        assert!(finished.recv_timeout(Duration::from_secs(10)).is_ok());
        let _again = crate::files::entry_syncs(tmp.path());
        assert!(
            finished.recv_timeout(Duration::from_secs(10)).is_ok(),
            "a later sync of the log waited for the lock"
        );
        writer
            .join()
            .map_err(|_| Error::internal("the writer panicked"))?
    }
}
