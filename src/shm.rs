//! A worker connection's WAL index in memory this crate maps itself, so that
//! the pages of it holding nothing can be given back to the OS.
//!
//! Why: with `locking_mode=EXCLUSIVE` set before WAL, SQLite keeps the index
//! in a 32 KiB heap block it zeroes, all of it resident for as long as the
//! worker is open: over half of what SQLite held per open worker. What a
//! small log actually uses of it is the header, the start of the frame list
//! and the few hash slots its pages hash to. This VFS is the system's own
//! (`unix`) for everything but the index, which it serves from anonymous
//! memory private to the connection; [`trim`] gives back its pages that are
//! all zeros (SQLite zeroes the whole block when the log restarts, then fills
//! a few entries), which the OS maps again, zeroed, if SQLite touches them.
//!
//! The index is private to one connection, as the heap block was: nothing
//! else may open the file while it is open. The catalog's lock keeps other
//! processes out of the directory, and the worker's connection holds its file
//! in exclusive locking mode from its first write (see `sqlite::configure`).
//! So the index needs no locks, and its lock calls succeed at once.
//!
//! Linux only: elsewhere workers keep SQLite's heap index.
//!
//! Safety: SQLite calls the methods below only with a file this VFS opened
//! as a main database (ours at offset 0, the system's at [`REAL_AT`], both
//! sized by `szOsFile`), with the pointer arguments its VFS contract
//! describes, and never on one file from two threads at once (one connection
//! per file, used by one thread at a time).

use std::ffi::{c_char, c_int, c_void, CStr};
use std::ptr;
use std::sync::atomic::{fence, Ordering};
use std::sync::OnceLock;

use parking_lot::Mutex;
use rusqlite::ffi;
use rusqlite::Connection;

/// The VFS's registered name.
pub const NAME: &CStr = c"durable-workers";
/// SQLite's WAL index comes in blocks of this size (`WALINDEX_PGSZ`).
const BLOCK: usize = 32 * 1024;
/// Blocks mapped at a time: one mapping per 32 open workers, not one each
/// (a process may hold only so many mappings, `vm.max_map_count`).
const CHUNK_BLOCKS: usize = 32;

/// Our part of an open main database file; the system VFS's file follows it
/// at [`REAL_AT`].
#[repr(C)]
struct Wrapped {
    base: ffi::sqlite3_file,
    /// The index's blocks, in order; null until SQLite maps the first.
    index: *mut Vec<usize>,
    /// The file's size as this connection last read or made it, or -1: see
    /// [`x_file_size`].
    size: i64,
}

/// Where the system VFS's file starts inside ours (16-aligned for any field).
const REAL_AT: usize = (std::mem::size_of::<Wrapped>() + 15) & !15;
// A log's wrapper fits the size registered for a main database's.
const _: () = assert!(crate::log_files::REAL_AT <= REAL_AT);

struct Registered {
    system: *mut ffi::sqlite3_vfs,
}
// SAFETY: the pointer is to SQLite's own `unix` VFS, a static that lives as
// long as the process and is only read.
unsafe impl Send for Registered {}
unsafe impl Sync for Registered {}

static REGISTERED: OnceLock<Option<Registered>> = OnceLock::new();

/// Registers the VFS once; `None` if SQLite has no `unix` VFS to build on,
/// in which case callers open with the default VFS.
pub fn vfs_name() -> Option<&'static CStr> {
    REGISTERED.get_or_init(register).as_ref().map(|_| NAME)
}

fn register() -> Option<Registered> {
    // SAFETY: sqlite3_vfs_find reads SQLite's VFS list (after initializing
    // the library); the copy is of a valid struct, and the leaked Box it is
    // written into lives for the process, as sqlite3_vfs_register requires.
    unsafe {
        if ffi::sqlite3_initialize() != ffi::SQLITE_OK {
            return None;
        }
        let system = ffi::sqlite3_vfs_find(c"unix".as_ptr());
        if system.is_null() {
            return None;
        }
        let mut ours: ffi::sqlite3_vfs = ptr::read(system);
        ours.szOsFile = c_int::try_from(REAL_AT).ok()? + (*system).szOsFile;
        ours.zName = NAME.as_ptr();
        ours.pNext = ptr::null_mut();
        ours.xOpen = Some(x_open);
        let ours = Box::into_raw(Box::new(ours));
        if ffi::sqlite3_vfs_register(ours, 0) != ffi::SQLITE_OK {
            drop(Box::from_raw(ours));
            return None;
        }
        Some(Registered { system })
    }
}

fn system() -> *mut ffi::sqlite3_vfs {
    match REGISTERED.get() {
        Some(Some(r)) => r.system,
        _ => ptr::null_mut(),
    }
}

/// The system VFS's file inside ours.
///
/// SAFETY: `f` is a file this VFS opened as a main database.
unsafe fn real(f: *mut ffi::sqlite3_file) -> *mut ffi::sqlite3_file {
    // SAFETY: see "Safety" at the top of this module.
    unsafe { f.cast::<u8>().add(REAL_AT).cast() }
}

unsafe extern "C" fn x_open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    f: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    // SAFETY: see "Safety" at the top of this module.
    unsafe {
        let system = system();
        let Some(open) = system.as_ref().and_then(|s| s.xOpen) else {
            return ffi::SQLITE_CANTOPEN;
        };
        // Only a main database has a WAL index; a log or journal has its
        // first sync made under its directory's entry lock, and any other
        // file is the system's own, in place (our size is larger than its).
        if flags & ffi::SQLITE_OPEN_MAIN_DB == 0 {
            return crate::log_files::open(system, name, f, flags, out_flags);
        }
        let w = f.cast::<Wrapped>();
        (*w).base.pMethods = ptr::null();
        (*w).index = ptr::null_mut();
        (*w).size = -1;
        let inner = real(f);
        let rc = open(system, name, inner, flags, out_flags);
        // SQLite calls xClose on any file whose methods are set, failed or not.
        if !(*inner).pMethods.is_null() {
            (*w).base.pMethods = &METHODS;
        }
        rc
    }
}

/// Forwards a method to the system VFS's file, found by the `real` of the
/// module it is used in (`log_files` uses it too).
macro_rules! forward {
    ($name:ident, $method:ident, ($($arg:ident: $ty:ty),*)) => {
        unsafe extern "C" fn $name(f: *mut ffi::sqlite3_file $(, $arg: $ty)*) -> c_int {
            // SAFETY: see "Safety" at the top of this module.
            unsafe {
                let inner = real(f);
                match (*(*inner).pMethods).$method {
                    Some(m) => m(inner $(, $arg)*),
                    None => ffi::SQLITE_IOERR,
                }
            }
        }
    };
}
pub(crate) use forward;

forward!(x_read, xRead, (buf: *mut c_void, n: c_int, at: ffi::sqlite3_int64));
forward!(sys_write, xWrite, (buf: *const c_void, n: c_int, at: ffi::sqlite3_int64));
forward!(sys_truncate, xTruncate, (size: ffi::sqlite3_int64));
forward!(x_sync, xSync, (flags: c_int));
forward!(sys_file_size, xFileSize, (size: *mut ffi::sqlite3_int64));
forward!(sys_file_control, xFileControl, (op: c_int, arg: *mut c_void));
forward!(x_lock, xLock, (level: c_int));
forward!(x_unlock, xUnlock, (level: c_int));
forward!(x_check_reserved_lock, xCheckReservedLock, (out: *mut c_int));

// The file's size, kept: SQLite asks for it at the start of every read
// transaction while the log is empty (a log holding a commit knows the
// database's size), and the system VFS answers each time with an `fstat`,
// a system call per point read. Only this connection changes the file while
// it is open (see "Safety"): a write can only grow it to its end, a
// truncate or a size hint makes it unknown again, and a failed call too.

unsafe extern "C" fn x_file_size(
    f: *mut ffi::sqlite3_file,
    size: *mut ffi::sqlite3_int64,
) -> c_int {
    // SAFETY: see "Safety" at the top of this module.
    unsafe {
        let w = f.cast::<Wrapped>();
        if (*w).size >= 0 {
            *size = (*w).size;
            return ffi::SQLITE_OK;
        }
        let rc = sys_file_size(f, size);
        if rc == ffi::SQLITE_OK {
            (*w).size = *size;
        }
        rc
    }
}

unsafe extern "C" fn x_write(
    f: *mut ffi::sqlite3_file,
    buf: *const c_void,
    n: c_int,
    at: ffi::sqlite3_int64,
) -> c_int {
    // SAFETY: see "Safety" at the top of this module.
    unsafe {
        let rc = sys_write(f, buf, n, at);
        let w = f.cast::<Wrapped>();
        if rc != ffi::SQLITE_OK {
            (*w).size = -1;
        } else if (*w).size >= 0 {
            (*w).size = (*w).size.max(at + ffi::sqlite3_int64::from(n));
        }
        rc
    }
}

unsafe extern "C" fn x_truncate(f: *mut ffi::sqlite3_file, size: ffi::sqlite3_int64) -> c_int {
    // SAFETY: see "Safety" at the top of this module.
    unsafe {
        // The system VFS may round the size up to its chunk size.
        (*f.cast::<Wrapped>()).size = -1;
        sys_truncate(f, size)
    }
}

unsafe extern "C" fn x_file_control(
    f: *mut ffi::sqlite3_file,
    op: c_int,
    arg: *mut c_void,
) -> c_int {
    // SAFETY: see "Safety" at the top of this module.
    unsafe {
        // A size hint may extend the file; a chunk size changes how it grows.
        if op == ffi::SQLITE_FCNTL_SIZE_HINT || op == ffi::SQLITE_FCNTL_CHUNK_SIZE {
            (*f.cast::<Wrapped>()).size = -1;
        }
        sys_file_control(f, op, arg)
    }
}
forward!(x_sector_size, xSectorSize, ());
forward!(x_device_characteristics, xDeviceCharacteristics, ());

unsafe extern "C" fn x_close(f: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: see "Safety" at the top of this module.
    unsafe {
        release_index(f);
        let inner = real(f);
        match (*(*inner).pMethods).xClose {
            Some(m) => m(inner),
            None => ffi::SQLITE_OK,
        }
    }
}

unsafe extern "C" fn x_fetch(
    f: *mut ffi::sqlite3_file,
    at: ffi::sqlite3_int64,
    n: c_int,
    pp: *mut *mut c_void,
) -> c_int {
    // SAFETY: see "Safety" at the top of this module.
    unsafe {
        let inner = real(f);
        let methods = &*(*inner).pMethods;
        match methods.xFetch {
            Some(m) if methods.iVersion >= 3 => m(inner, at, n, pp),
            _ => {
                *pp = ptr::null_mut();
                ffi::SQLITE_OK
            }
        }
    }
}

unsafe extern "C" fn x_unfetch(
    f: *mut ffi::sqlite3_file,
    at: ffi::sqlite3_int64,
    p: *mut c_void,
) -> c_int {
    // SAFETY: see "Safety" at the top of this module.
    unsafe {
        let inner = real(f);
        let methods = &*(*inner).pMethods;
        match methods.xUnfetch {
            Some(m) if methods.iVersion >= 3 => m(inner, at, p),
            _ => ffi::SQLITE_OK,
        }
    }
}

unsafe extern "C" fn x_shm_map(
    f: *mut ffi::sqlite3_file,
    block: c_int,
    size: c_int,
    extend: c_int,
    pp: *mut *mut c_void,
) -> c_int {
    // SAFETY: see "Safety" at the top of this module.
    unsafe {
        *pp = ptr::null_mut();
        let (Ok(block), Ok(size)) = (usize::try_from(block), usize::try_from(size)) else {
            return ffi::SQLITE_IOERR_SHMMAP;
        };
        if size != BLOCK {
            return ffi::SQLITE_IOERR_SHMMAP;
        }
        let w = f.cast::<Wrapped>();
        if (*w).index.is_null() {
            (*w).index = Box::into_raw(Box::default());
        }
        let index = &mut *(*w).index;
        while index.len() <= block {
            // Like a shared-memory file too short to hold the block.
            if extend == 0 {
                return ffi::SQLITE_OK;
            }
            match POOL.take() {
                Some(b) => index.push(b),
                None => return ffi::SQLITE_IOERR_SHMMAP,
            }
        }
        *pp = index[block] as *mut c_void;
        ffi::SQLITE_OK
    }
}

unsafe extern "C" fn x_shm_lock(
    _f: *mut ffi::sqlite3_file,
    _offset: c_int,
    _n: c_int,
    _flags: c_int,
) -> c_int {
    // One connection per index: nothing to exclude.
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_shm_barrier(_f: *mut ffi::sqlite3_file) {
    fence(Ordering::SeqCst);
}

unsafe extern "C" fn x_shm_unmap(f: *mut ffi::sqlite3_file, _delete: c_int) -> c_int {
    // SAFETY: see "Safety" at the top of this module.
    unsafe {
        release_index(f);
        ffi::SQLITE_OK
    }
}

/// Gives a file's index blocks back to the pool.
unsafe fn release_index(f: *mut ffi::sqlite3_file) {
    // SAFETY: see "Safety" at the top of this module.
    unsafe {
        let w = f.cast::<Wrapped>();
        if (*w).index.is_null() {
            return;
        }
        let index = Box::from_raw((*w).index);
        (*w).index = ptr::null_mut();
        for b in *index {
            POOL.give(b);
        }
    }
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
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
    xShmMap: Some(x_shm_map),
    xShmLock: Some(x_shm_lock),
    xShmBarrier: Some(x_shm_barrier),
    xShmUnmap: Some(x_shm_unmap),
    xFetch: Some(x_fetch),
    xUnfetch: Some(x_unfetch),
};

/// Index blocks not in use, as addresses; mapped [`CHUNK_BLOCKS`] at a time
/// and never unmapped (a returned block's pages are given back instead).
struct Pool(Mutex<Vec<usize>>);

static POOL: Pool = Pool(Mutex::new(Vec::new()));

impl Pool {
    fn take(&self) -> Option<usize> {
        let mut free = self.0.lock();
        if free.is_empty() {
            let len = BLOCK * CHUNK_BLOCKS;
            // SAFETY: a fresh private anonymous mapping; no existing memory is
            // touched. Huge pages are refused for it: one would make a whole
            // 2 MiB resident for the first byte any worker writes.
            let base = unsafe {
                let p = libc::mmap(
                    ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                );
                if p == libc::MAP_FAILED {
                    return None;
                }
                libc::madvise(p, len, libc::MADV_NOHUGEPAGE);
                p as usize
            };
            free.extend((0..CHUNK_BLOCKS).rev().map(|i| base + i * BLOCK));
        }
        free.pop()
    }

    /// Takes back a block, zeroed: its pages are dropped, and the OS maps
    /// zeroed ones if it is used again, as a new shared-memory file reads.
    fn give(&self, block: usize) {
        // SAFETY: the block is one of ours and no connection uses it any more.
        unsafe { libc::madvise(block as *mut c_void, BLOCK, libc::MADV_DONTNEED) };
        self.0.lock().push(block);
    }
}

/// Gives back the pages of `conn`'s WAL index that hold only zeros. Returns
/// how many pages it gave back (0 for a connection not opened with this VFS).
///
/// The caller holds the connection, so SQLite is not using its index: this
/// must not run while another thread can use `conn`, which `&Connection`
/// (not `Sync`) ensures.
pub fn trim(conn: &Connection) -> usize {
    let Some(w) = ours(conn) else { return 0 };
    // SAFETY: the file is ours and open; its index blocks are valid, BLOCK
    // bytes each, and unused while the caller holds the connection.
    unsafe {
        if (*w).index.is_null() {
            return 0;
        }
        (*(*w).index).iter().map(|&b| trim_block(b)).sum()
    }
}

/// Whether `conn`'s main database was opened through this VFS.
pub fn serves(conn: &Connection) -> bool {
    ours(conn).is_some()
}

fn ours(conn: &Connection) -> Option<*mut Wrapped> {
    let file = crate::sqlite::main_file(conn)?;
    // SAFETY: SQLite returned the file, open with the connection; its
    // methods pointer is only compared.
    unsafe { ptr::eq((*file).pMethods, &METHODS) }.then(|| file.cast::<Wrapped>())
}

/// SAFETY: `block` is an index block of a connection the caller holds.
unsafe fn trim_block(block: usize) -> usize {
    // SAFETY: see "Safety" at the top of this module.
    unsafe {
        let page = match usize::try_from(libc::sysconf(libc::_SC_PAGESIZE)) {
            Ok(p) if p > 0 && BLOCK.is_multiple_of(p) => p,
            _ => return 0,
        };
        let pages = BLOCK / page;
        let mut resident = [0u8; BLOCK / 4096];
        if pages > resident.len()
            || libc::mincore(block as *mut c_void, BLOCK, resident.as_mut_ptr().cast()) != 0
        {
            return 0;
        }
        let mut given = 0;
        for (i, r) in resident.iter().take(pages).enumerate() {
            let at = block + i * page;
            if r & 1 == 1
                && zeros(std::slice::from_raw_parts(at as *const u64, page / 8))
                && libc::madvise(at as *mut c_void, page, libc::MADV_DONTNEED) == 0
            {
                given += 1;
            }
        }
        given
    }
}

fn zeros(words: &[u64]) -> bool {
    words.iter().fold(0, |acc, w| acc | w) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Error, Result};
    use crate::sqlite::{self, Durability};
    use rusqlite::config::DbConfig;
    use std::path::Path;

    /// Resident pages of `conn`'s WAL index.
    fn resident(conn: &Connection) -> usize {
        let Some(w) = ours(conn) else { return 0 };
        let mut v = [0u8; BLOCK / 4096];
        // SAFETY: as in `trim`; mincore only reads the page tables.
        unsafe {
            if (*w).index.is_null() {
                return 0;
            }
            (*(*w).index)
                .iter()
                .map(|&b| {
                    libc::mincore(b as *mut c_void, BLOCK, v.as_mut_ptr().cast());
                    v.iter().filter(|r| *r & 1 == 1).count()
                })
                .sum()
        }
    }

    /// A worker's connection to `path`, made first (as `WorkerFile::create`
    /// does, without this VFS) if it does not exist.
    fn worker(path: &Path) -> Result<Connection> {
        let ctx = |e| Error::sqlite("setup", path, e);
        if !path.exists() {
            Connection::open(path)
                .and_then(|c| {
                    c.execute_batch("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT);")?;
                    c.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))
                })
                .map_err(ctx)?;
        }
        let conn = sqlite::open_worker(path)?;
        sqlite::configure(&conn, path, Durability::Full, 32)?;
        // As a worker's connection: the engine checkpoints, SQLite does not.
        conn.execute_batch("PRAGMA wal_autocheckpoint=0")
            .map_err(ctx)?;
        Ok(conn)
    }

    /// A worker's connection to a new file in a directory of its own.
    fn fresh() -> Result<(tempfile::TempDir, std::path::PathBuf, Connection)> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let path = tmp.path().join("w.db");
        let conn = worker(&path)?;
        Ok((tmp, path, conn))
    }

    fn insert(conn: &Connection, path: &Path, from: i64, n: i64) -> Result<()> {
        conn.execute(
            "WITH RECURSIVE s(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM s WHERE i < ?1 + ?2 - 1)
             INSERT INTO t SELECT i, printf('%0500d', i) FROM s",
            [from, n],
        )
        .map(|_| ())
        .map_err(|e| Error::sqlite("insert", path, e))
    }

    fn count(conn: &Connection, path: &Path) -> Result<i64> {
        conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .map_err(|e| Error::sqlite("count", path, e))
    }

    #[test]
    fn a_worker_connection_maps_its_own_index_and_leaves_no_shm_file() -> Result<()> {
        let (tmp, path, conn) = fresh()?;
        assert!(serves(&conn));
        insert(&conn, &path, 1, 10)?;
        assert!(
            resident(&conn) > 0,
            "SQLite wrote its index through this VFS"
        );
        assert!(!tmp.path().join("w.db-shm").exists());
        conn.close()
            .map_err(|(_, e)| Error::sqlite("close", &path, e))?;
        // The file is an ordinary WAL database to anyone else.
        let plain = Connection::open(&path).map_err(|e| Error::sqlite("open", &path, e))?;
        assert_eq!(count(&plain, &path)?, 10);
        Ok(())
    }

    #[test]
    fn trim_gives_back_the_empty_pages_only() -> Result<()> {
        let (_tmp, path, conn) = fresh()?;
        insert(&conn, &path, 1, 1)?;
        assert_eq!(
            resident(&conn),
            BLOCK / 4096,
            "the log's restart zeroed the whole block"
        );
        assert!(trim(&conn) >= BLOCK / 4096 - 2);
        assert!(
            (1..=2).contains(&resident(&conn)),
            "the header and one hash page stay"
        );
        Ok(())
    }

    #[test]
    fn reads_find_the_log_through_a_trimmed_index() -> Result<()> {
        let (_tmp, path, conn) = fresh()?;
        insert(&conn, &path, 1, 1)?;
        trim(&conn);
        // Rows in the log only, found through the index as trimmed: a page
        // given back that was not zeros would send reads to the stale file.
        for round in 0..20 {
            insert(&conn, &path, 2 + round * 50, 50)?;
            trim(&conn);
        }
        assert_eq!(count(&conn, &path)?, 1001);
        let sum: i64 = conn
            .query_row("SELECT sum(length(v)) FROM t", [], |r| r.get(0))
            .map_err(|e| Error::sqlite("sum", &path, e))?;
        assert_eq!(sum, 1001 * 500);
        let ok: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(|e| Error::sqlite("check", &path, e))?;
        assert_eq!(ok, "ok");
        Ok(())
    }

    /// The size the connection keeps for its file: unknown, or the file's.
    fn kept_size_is_true(conn: &Connection, path: &Path) -> bool {
        let Some(w) = ours(conn) else { return false };
        // SAFETY: the file is ours and open; `size` is read on this thread,
        // which holds the connection.
        let kept = unsafe { (*w).size };
        let real = std::fs::metadata(path).map_or(-1, |m| m.len() as i64);
        kept == -1 || kept == real
    }

    #[test]
    fn the_file_size_a_connection_keeps_follows_checkpoints_vacuum_and_truncation() -> Result<()> {
        let (_tmp, path, conn) = fresh()?;
        let sql = |q: &str| {
            conn.execute_batch(q)
                .map_err(|e| Error::sqlite("sql", &path, e))
        };
        for round in 0..6 {
            insert(&conn, &path, 1 + round * 200, 200)?;
            assert!(kept_size_is_true(&conn, &path), "after commit {round}");
            assert_eq!(count(&conn, &path)?, 200 * (round + 1));
            sql("PRAGMA wal_checkpoint(TRUNCATE)")?;
            // An empty log: the size comes from the file, kept or asked.
            assert_eq!(count(&conn, &path)?, 200 * (round + 1));
            assert!(kept_size_is_true(&conn, &path), "after checkpoint {round}");
        }
        sql("DELETE FROM t WHERE k % 3 != 0")?;
        sql("PRAGMA wal_checkpoint(TRUNCATE)")?;
        sql("VACUUM")?;
        sql("PRAGMA wal_checkpoint(TRUNCATE)")?;
        assert!(
            kept_size_is_true(&conn, &path),
            "after VACUUM shrank the file"
        );
        assert_eq!(count(&conn, &path)?, 400);
        insert(&conn, &path, 5000, 300)?;
        sql("PRAGMA wal_checkpoint(TRUNCATE)")?;
        assert!(kept_size_is_true(&conn, &path), "grown again");
        assert_eq!(count(&conn, &path)?, 700);
        let ok: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(|e| Error::sqlite("check", &path, e))?;
        assert_eq!(ok, "ok");
        Ok(())
    }

    #[test]
    fn a_log_left_unchecked_is_recovered_into_a_fresh_index() -> Result<()> {
        let (_tmp, path, conn) = fresh()?;
        insert(&conn, &path, 1, 300)?;
        // As after a crash: the log keeps its frames, the file lacks them.
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
            .map_err(|e| Error::sqlite("config", &path, e))?;
        conn.close()
            .map_err(|(_, e)| Error::sqlite("close", &path, e))?;
        let again = worker(&path)?;
        assert_eq!(count(&again, &path)?, 300);
        insert(&again, &path, 301, 1)?;
        assert_eq!(count(&again, &path)?, 301);
        Ok(())
    }

    #[test]
    fn blocks_go_back_to_the_pool_zeroed() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let path = tmp.path().join("w.db");
        for i in 0..3 {
            let conn = worker(&path)?;
            insert(&conn, &path, 1 + i * 100, 100)?;
            conn.close()
                .map_err(|(_, e)| Error::sqlite("close", &path, e))?;
        }
        let conn = worker(&path)?;
        assert_eq!(count(&conn, &path)?, 300);
        Ok(())
    }
}
