//! One worker connection's page cache: how much it may hold, and when it
//! gives its pages back.
//!
//! A worker's state is resident in JS, so its connection needs pages only for
//! the commit in progress, and for its collection reads.

use std::cell::Cell;
use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::error::{Error, Result};

/// Page cache per worker: the pages one commit touches.
pub const WORKER_KIB: i64 = 32;
/// Page cache for a commit that writes many documents (or a backfill): their
/// index pages are revisited across the batch, and with 32 KiB a 10,000-document
/// commit into a 100,000-document collection took 3–4× longer. Given back at
/// the end of the commit.
const BULK_KIB: i64 = 8192;
/// Documents in one commit from which it counts as bulk.
const BULK_DOCS: usize = 256;
/// Page cache of a worker once it reads its collections. Reads revisit the
/// same index and table pages, and with 32 KiB every query fetched them again
/// from the OS (a `pread` each): an indexed find of 10 among 10,000 documents
/// ran at about half the rate it does with this. SQLite allocates pages as
/// they are read, so a worker that only reads a few pages pays for those.
const READ_KIB: i64 = 1024;
/// A worker that commits again within this keeps its pages between commits
/// (a serial writer rereads nothing); a commit after a longer pause gives them
/// back.
const HOT_COMMIT: Duration = Duration::from_millis(10);
/// A commit after a pause this long (or the first since the load) also gives
/// back what the next commit would rebuild at a cost: its cached statements
/// and the empty pages of its WAL index. Most open workers are idle ones, and
/// that is a third of what each holds; a worker committing several times a
/// second keeps them, rather than rebuilding them at each commit.
const IDLE_COMMIT: Duration = Duration::from_secs(1);

/// Whether a commit of `docs` documents gets the bulk cache.
pub fn is_bulk(docs: usize) -> bool {
    docs >= BULK_DOCS
}

/// The policy's state for one connection.
pub struct PageCache {
    /// The cache outside bulk commits: [`WORKER_KIB`] until the first
    /// collection read, then [`READ_KIB`].
    kib: Cell<i64>,
    last_commit: Cell<Option<Instant>>,
}

impl Default for PageCache {
    fn default() -> Self {
        PageCache {
            kib: WORKER_KIB.into(),
            last_commit: None.into(),
        }
    }
}

impl PageCache {
    /// After the worker's load: nothing reads its pages until it commits.
    pub fn loaded(&self, conn: &Connection) {
        self.release(conn, true);
    }

    /// After a commit: the pages go back unless the one before was recent.
    pub fn committed(&self, conn: &Connection) {
        let now = Instant::now();
        match self.last_commit.replace(Some(now)).map(|t| now - t) {
            Some(pause) if pause <= HOT_COMMIT => {}
            Some(pause) if pause <= IDLE_COMMIT => self.release(conn, false),
            _ => self.release(conn, true),
        }
    }

    /// Before a collection read: the reader's cache, kept from then on.
    pub fn reading(&self, conn: &Connection, path: &Path) -> Result<()> {
        if self.kib.get() != READ_KIB {
            set(conn, path, READ_KIB)?;
            self.kib.set(READ_KIB);
        }
        Ok(())
    }

    /// Runs `body` with the bulk cache when `bulk`, then shrinks it back
    /// (which frees the pages).
    pub fn around<T>(
        &self,
        conn: &Connection,
        path: &Path,
        bulk: bool,
        body: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        if !bulk {
            return body();
        }
        set(conn, path, BULK_KIB)?;
        let out = body();
        set(conn, path, self.kib.get())?;
        out
    }

    /// Gives the pages back, unless the worker reads its collections. Kept,
    /// they were 22 KB of every open worker (`sqlite3_db_status`); the next
    /// commit reads the two or three it needs again from the OS's cache.
    /// `idle` also drops the cached statements (2.8 KB) and the WAL index's
    /// empty pages (24 of its 32 KiB after a small commit: SQLite zeroes the
    /// whole block when its log restarts, then fills a few entries).
    fn release(&self, conn: &Connection, idle: bool) {
        if self.kib.get() == WORKER_KIB {
            // Only memory is at stake: a failure leaves the pages cached.
            let _ = conn.execute_batch("PRAGMA shrink_memory");
            if idle {
                conn.flush_prepared_statement_cache();
            }
        }
        #[cfg(target_os = "linux")]
        if idle {
            crate::shm::trim(conn);
        }
    }
}

fn set(conn: &Connection, path: &Path, kib: i64) -> Result<()> {
    conn.execute_batch(&format!("PRAGMA cache_size=-{kib}"))
        .map_err(|e| Error::sqlite("cache size", path, e))
}
