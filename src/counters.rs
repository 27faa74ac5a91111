//! What the disk has been asked to do, counted for `stats()`.

use std::sync::atomic::AtomicU64;

/// One durable directory's counters.
#[derive(Default, Debug)]
pub struct Counters {
    /// Worker transactions committed.
    pub commits: AtomicU64,
    /// Commits that waited for the device (every commit under `Full`).
    pub syncs: AtomicU64,
    /// Commits written and synced on the JS thread (see `NativeWorker::write_inline`).
    pub commits_inline: AtomicU64,
    /// Syncs of a log rewritten in place, made without its inode (see
    /// [`crate::inplace`]).
    pub syncs_in_place: AtomicU64,
    /// Worker files created.
    pub created: AtomicU64,
    /// Value and document bytes handed to SQLite.
    pub bytes_written: AtomicU64,
    /// Collection reads (get, find, count, scan).
    pub queries: AtomicU64,
    /// Those that could not run on the JS thread (a commit held the file, or
    /// it was not open yet) and went to the libuv pool.
    pub queries_deferred: AtomicU64,
    /// Documents those reads returned.
    pub docs_read: AtomicU64,
}
