//! The continuous archive: every committed change of every worker, shipped
//! to another directory as it commits, over periodic base snapshots, so that
//! a directory can be restored as it was at any moment the archive retains.
//!
//! What is shipped is physical: a commit's pages as its log holds them, read
//! after the commit's sync ([`crate::wal::Unsynced::pages`]); a new worker's
//! whole file; a deletion. A record is made only once its commit is durable
//! here, so the archive never holds a write the worker does not have. Each
//! record carries a sequence number, the sequence number of the same worker's
//! record before it (its chain), and the time it was made, which is the
//! commit's time for restores: a commit made at T was durable by T and was
//! acknowledged after T.
//!
//! Records are queued to one thread that writes them in segments
//! ([`segment`]) every [`FLUSH`], each written aside, synced and renamed in,
//! so a kill loses at most the records of the last [`FLUSH`] and what writing
//! them takes. A base ([`base`]) is a snapshot whose every file notes the
//! sequence number it was copied at; one is taken when the host opens and
//! every `base_every` after, and what `retain` no longer needs is deleted.
//!
//! Layout of the destination:
//!
//! ```text
//! <to>/log/<first seq, 16 hex digits>.seg     records
//! <to>/base/<seq>/...                         a base: worker files as in a durable directory
//! <to>/base/<seq>/base.idx                    its index, written last: a base without one is unfinished
//! ```

pub mod base;
pub mod restore;
pub mod segment;

/// For tests: an engine over `<dir>/d` archiving to `<dir>/archive` (returned),
/// with its first base taken.
#[cfg(test)]
pub(crate) fn test_engine(
    dir: &std::path::Path,
) -> crate::error::Result<(std::path::PathBuf, std::sync::Arc<crate::engine::Engine>)> {
    let to = dir.join("archive");
    let config = Config {
        to: to.clone(),
        retain: std::time::Duration::from_secs(3600),
        base_every: std::time::Duration::from_secs(3600),
        first_seq: None,
    };
    let engine = std::sync::Arc::new(crate::engine::Engine::open_archived(
        &dir.join("d"),
        crate::sqlite::Durability::Full,
        Some(config),
    )?);
    base::take(&engine)?;
    Ok((to, engine))
}

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::{Condvar, Mutex};

use crate::error::{Error, Result};
use crate::wal::Pages;

/// How often queued records are written: the archive's lag, before the
/// time a segment takes to write and sync.
pub const FLUSH: Duration = Duration::from_millis(200);
/// A segment is written early once its records hold this many bytes.
const SEGMENT_BYTES: usize = 8 << 20;

/// What a record says happened to a worker.
pub enum Change {
    /// Its whole file, as its first write created it.
    Image(Vec<u8>),
    /// A commit's pages.
    Pages(Pages),
    /// It was deleted.
    Removed,
}

/// One change of one worker.
pub struct Record {
    pub class: String,
    pub id: String,
    pub seq: u64,
    /// The sequence number of this worker's record (or base copy) before
    /// this one, 0 when this process has shipped none for it.
    pub prev: u64,
    /// When it was made, epoch ms.
    pub at: i64,
    pub change: Change,
}

/// Where and how long.
#[derive(Clone)]
pub struct Config {
    pub to: PathBuf,
    /// How far back a restore must be possible.
    pub retain: Duration,
    /// How often a base is taken.
    pub base_every: Duration,
    /// The least sequence number to go on from (what a bucket the
    /// destination is shipped to holds already).
    pub first_seq: Option<u64>,
}

/// What the archive has done, for `stats()`.
#[derive(Default)]
pub struct ArchiveCounters {
    pub records: AtomicU64,
    pub segments: AtomicU64,
    pub bytes: AtomicU64,
    pub bases: AtomicU64,
}

/// The archive of one open directory.
pub struct Archive {
    config: Config,
    next_seq: AtomicU64,
    /// Each worker's last sequence number (by the path key of [`crate::handles`]).
    last: Mutex<HashMap<[u8; 32], u64>>,
    queue: Arc<Queue>,
    writer: Mutex<Option<JoinHandle<()>>>,
    /// The last failure writing to the destination, until a write succeeds.
    pub failure: Arc<Mutex<Option<String>>>,
    pub counters: Arc<ArchiveCounters>,
    /// The thread that takes bases ([`base::schedule`]).
    base_thread: Mutex<Option<JoinHandle<()>>>,
    /// The host is closing: no base is started, and one underway is given
    /// up if this process has finished one.
    stopping: AtomicBool,
    /// This process has finished a base. Its records can be restored only
    /// from one: a worker's first record here names no earlier one as its
    /// `prev` (what an earlier process queued and never wrote may be missing).
    based: AtomicBool,
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl Archive {
    /// Starts archiving to `config.to` (created if needed): sequence numbers
    /// go on from the last the destination holds.
    pub fn start(config: Config) -> Result<Self> {
        for sub in ["log", "base"] {
            crate::files::create_dirs_synced(&config.to.join(sub))?;
        }
        let first = segment::next_seq(&config.to)?.max(config.first_seq.unwrap_or(1));
        let queue = Arc::new(Queue::default());
        let failure = Arc::new(Mutex::new(None));
        let counters = Arc::new(ArchiveCounters::default());
        let (dir, q, fail, count) = (
            config.to.join("log"),
            queue.clone(),
            failure.clone(),
            counters.clone(),
        );
        let writer = std::thread::Builder::new()
            .name("durable-archive".into())
            .spawn(move || write_loop(&dir, &q, &fail, &count))
            .map_err(|e| Error::io("start the archive thread", e))?;
        Ok(Archive {
            config,
            next_seq: AtomicU64::new(first),
            last: Mutex::new(HashMap::new()),
            queue,
            writer: Mutex::new(Some(writer)),
            failure,
            counters,
            base_thread: Mutex::new(None),
            stopping: AtomicBool::new(false),
            based: AtomicBool::new(false),
        })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Queues a change of the worker at `path`; made after it is durable here.
    pub fn record(&self, path: &Path, class: &str, id: &str, change: Change) {
        let key = crate::handles::key(path);
        // Under the lock, so that records are queued in sequence order.
        let mut last = self.last.lock();
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        let prev = match change {
            Change::Removed => last.remove(&key),
            _ => last.insert(key, seq),
        }
        .unwrap_or(0);
        let record = Record {
            class: class.to_string(),
            id: id.to_string(),
            seq,
            prev,
            at: now_ms(),
            change,
        };
        self.queue.push(record);
    }

    /// A commit of the worker at `path` could not be read for the archive:
    /// its chain is cut, so that a restore past this point fails that worker
    /// by name instead of silently missing the commit.
    pub fn lost(&self, path: &Path, why: &Error) {
        // A number no record has: the next record's `prev` matches nothing
        // but a base copy made since, which holds the lost commit.
        let gap = self.take_seq();
        self.last.lock().insert(crate::handles::key(path), gap);
        *self.failure.lock() = Some(format!(
            "a commit of {} was not archived: {why}",
            path.display()
        ));
    }

    /// A base copies the worker at `path` now: the sequence number of its
    /// last record (0 when this process has made none), which the copy holds
    /// and its next record names as its `prev`.
    pub(crate) fn mark(&self, path: &Path) -> u64 {
        let key = crate::handles::key(path);
        self.last.lock().get(&key).copied().unwrap_or(0)
    }

    /// A sequence number of its own, to name a base.
    pub(crate) fn take_seq(&self) -> u64 {
        self.next_seq.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn set_base_thread(&self, t: JoinHandle<()>) {
        *self.base_thread.lock() = Some(t);
    }

    /// Whether this process has finished a base.
    fn has_base(&self) -> bool {
        self.based.load(Ordering::Acquire)
    }

    pub(crate) fn base_finished(&self) {
        self.based.store(true, Ordering::Release);
    }

    /// Whether a base underway should stop: the host is closing and what it
    /// recorded can be restored without it.
    pub(crate) fn abandons_bases(&self) -> bool {
        self.stopping.load(Ordering::Acquire) && self.has_base()
    }

    pub(crate) fn stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    /// Stops the base thread and waits for it, then takes a base of
    /// `engine` if this process has finished none: without one, what it
    /// recorded cannot be restored. A base the thread has underway is
    /// finished when it would be this process's first, and given up otherwise.
    pub(crate) fn stop_bases(&self, engine: &crate::engine::Engine) {
        self.join_bases();
        if !self.has_base() && engine.check_open().is_ok() {
            if let Err(e) = base::take(engine) {
                *self.failure.lock() = Some(format!("base at close: {e}"));
            }
        }
    }

    fn join_bases(&self) {
        self.stopping.store(true, Ordering::Release);
        if let Some(t) = self.base_thread.lock().take() {
            let _ = t.join();
        }
    }

    /// Stops the base thread, then writes what is queued and stops the
    /// writer. Blocks until both ended.
    pub fn close(&self) {
        self.join_bases();
        self.queue.close();
        if let Some(t) = self.writer.lock().take() {
            let _ = t.join();
        }
    }
}

impl Drop for Archive {
    fn drop(&mut self) {
        self.close();
    }
}

/// Records waiting for the writer. A commit adds its record without waking
/// anyone: the writer wakes every [`FLUSH`] by itself, and is woken only when
/// a segment's worth is waiting or the host closes. (A wake-up per record
/// cost the shop a tenth of its journeys: each is a futex call on the
/// committing thread and a context switch.)
#[derive(Default)]
struct Queue {
    state: Mutex<Waiting>,
    wake: Condvar,
}

#[derive(Default)]
struct Waiting {
    records: Vec<Record>,
    bytes: usize,
    closed: bool,
}

impl Queue {
    fn push(&self, r: Record) {
        let mut w = self.state.lock();
        if w.closed {
            return;
        }
        let was_below = w.bytes < SEGMENT_BYTES;
        w.bytes += segment::size_of(&r);
        w.records.push(r);
        if was_below && w.bytes >= SEGMENT_BYTES {
            self.wake.notify_one();
        }
    }

    fn close(&self) {
        self.state.lock().closed = true;
        self.wake.notify_one();
    }

    /// Waits up to [`FLUSH`] (less when woken), then takes what is waiting,
    /// and whether the queue has closed.
    fn take(&self) -> (Vec<Record>, bool) {
        let mut w = self.state.lock();
        if !w.closed && w.bytes < SEGMENT_BYTES {
            let _ = self.wake.wait_for(&mut w, FLUSH);
        }
        w.bytes = 0;
        (std::mem::take(&mut w.records), w.closed)
    }
}

/// The writer: writes what is waiting as one segment every [`FLUSH`] (or
/// sooner when it is large), until the queue closes.
fn write_loop(
    dir: &Path,
    queue: &Queue,
    failure: &Mutex<Option<String>>,
    counters: &ArchiveCounters,
) {
    let mut pending: Vec<Record> = Vec::new();
    loop {
        let (mut more, closed) = queue.take();
        pending.append(&mut more);
        if !pending.is_empty() {
            match segment::write(dir, &pending) {
                Ok(n) => {
                    counters
                        .records
                        .fetch_add(pending.len() as u64, Ordering::Relaxed);
                    counters.segments.fetch_add(1, Ordering::Relaxed);
                    counters.bytes.fetch_add(n, Ordering::Relaxed);
                    pending.clear();
                    *failure.lock() = None;
                }
                // Kept and tried again at the next flush: a full destination
                // may be given room.
                Err(e) => *failure.lock() = Some(e.to_string()),
            }
        }
        if closed {
            if !pending.is_empty() {
                *failure.lock() = Some(format!(
                    "{} records could not be written to {} before the host closed",
                    pending.len(),
                    dir.display()
                ));
            }
            return;
        }
    }
}
