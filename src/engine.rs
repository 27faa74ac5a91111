//! A durable directory, opened: its catalog, its workers' files and the
//! counters that say what durability has cost.
//!
//! Everything here blocks; the napi layer runs it off the JS thread.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rusqlite::Connection;

use crate::archive::{Archive, Change, Config as ArchiveConfig};
use crate::catalog::{Catalog, Op, Reply};
use crate::collections::{Schema, Tables};
pub use crate::counters::Counters;
use crate::error::{Error, Result};
use crate::handles::Handles;
use crate::layout;
use crate::sqlite::Durability;
use crate::store::{Batch, Page, WorkerFile};
use crate::wal::Unsynced;

/// One open durable directory. Owning it means holding the catalog's lock.
pub struct Engine {
    dir: PathBuf,
    pub(crate) durability: Durability,
    catalog: Catalog,
    pub counters: Counters,
    closed: AtomicBool,
    /// Each class's declared collections.
    schemas: Mutex<HashMap<String, Arc<Schema>>>,
    /// A moving average of a log sync's time in µs: `u32::MAX` until one has
    /// been measured, 0 when commits are not synced (`Relaxed`).
    sync_micros: AtomicU32,
    /// The worker and Durable Object handles alive, for snapshots.
    pub(crate) handles: Handles,
    /// Where every commit is shipped as it is made, when configured.
    pub(crate) archive: Option<Archive>,
}

/// Syncs slower than this (on [`Engine::sync_micros`]) are never made on the
/// JS thread: each would stall its event loop for as long. A millisecond is
/// about a young-generation GC pause; an SSD syncs in tens to hundreds of
/// microseconds (this VM's disk: 90 µs, ~300 µs while a log still grows), a
/// spinning disk or a network volume in milliseconds.
pub const INLINE_SYNC_MICROS: u32 = 1_000;

impl Engine {
    /// Creates `dir` if needed and takes ownership of it.
    pub fn open(dir: &Path, durability: Durability) -> Result<Self> {
        Self::open_archived(dir, durability, None)
    }

    /// [`Engine::open`], shipping every commit to `archive` when given (see
    /// [`crate::archive`]); its bases are started by [`Engine::start_bases`].
    pub fn open_archived(
        dir: &Path,
        durability: Durability,
        archive: Option<ArchiveConfig>,
    ) -> Result<Self> {
        crate::files::create_dirs_synced(dir)?;
        let catalog = Catalog::open(dir, durability).map_err(|e| match e {
            Error::Corrupt { path, detail } => Error::Corrupt {
                path,
                detail: format!(
                    "{detail}; the catalog can be rebuilt from the worker files with `npx durable-workers repair {}`",
                    dir.display()
                ),
            },
            e => e,
        })?;
        // A catalog lost (deleted, or made and never filled) under worker
        // files: rebuilt from the files, which each hold their own class, id
        // and alarms.
        if catalog.needs_rebuild() {
            crate::repair::rebuild(dir, durability, &catalog)?;
        }
        let archive = archive.map(Archive::start).transpose()?;
        Ok(Engine {
            dir: dir.to_path_buf(),
            durability,
            catalog,
            counters: Counters::default(),
            closed: AtomicBool::new(false),
            schemas: Mutex::new(HashMap::new()),
            sync_micros: AtomicU32::new(match durability {
                Durability::Full => u32::MAX,
                Durability::Relaxed => 0,
            }),
            handles: Handles::default(),
            archive,
        })
    }

    /// Starts taking the archive's bases, the first now.
    pub fn start_bases(self: &Arc<Self>) -> Result<()> {
        if let Some(a) = &self.archive {
            a.set_base_thread(crate::archive::base::schedule(Arc::downgrade(self))?);
        }
        Ok(())
    }

    /// Records a class's collections; workers handed out later use them.
    pub fn declare(&self, class: &str, schema: Schema) {
        self.schemas
            .lock()
            .insert(class.to_string(), Arc::new(schema));
    }

    fn schema(&self, class: &str) -> Arc<Schema> {
        self.schemas.lock().get(class).cloned().unwrap_or_default()
    }

    /// How long a commit's sync takes here, lately (see `sync_micros`).
    pub fn sync_micros(&self) -> u32 {
        self.sync_micros.load(Ordering::Relaxed)
    }

    /// Whether a commit may be synced on the JS thread: the device syncs fast.
    pub fn syncs_fast(&self) -> bool {
        self.sync_micros() <= INLINE_SYNC_MICROS
    }

    pub(crate) fn record_sync(&self, took: Duration) {
        let us = u32::try_from(took.as_micros()).unwrap_or(u32::MAX - 1);
        // One weighted eighth per sync: a burst of slow ones moves it within a few.
        let _ = self
            .sync_micros
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
                Some(if old == u32::MAX {
                    us
                } else {
                    let (old, us) = (i64::from(old), i64::from(us));
                    (old + (us - old) / 8) as u32
                })
            });
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn catalog_commits(&self) -> u64 {
        self.catalog.commits()
    }

    pub fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            Err(Error::Closed)
        } else {
            Ok(())
        }
    }

    pub async fn catalog(&self, op: Op) -> Result<Reply> {
        self.check_open()?;
        self.catalog.call(op).await
    }

    /// [`Engine::catalog`] for a thread outside any async runtime.
    pub fn catalog_blocking(&self, op: Op) -> Result<Reply> {
        self.check_open()?;
        self.catalog.call_blocking(op)
    }

    /// Releases the directory. Worker files must be closed first. The
    /// archive writes what it holds before the lock is released, and takes
    /// a base if this process has finished none: without one, what it
    /// recorded cannot be restored.
    pub fn close(&self) {
        if let Some(a) = &self.archive {
            a.stop_bases(self);
        }
        self.closed.store(true, Ordering::Release);
        if let Some(a) = &self.archive {
            a.close();
        }
        self.catalog.close();
    }
}

/// Where a worker's file stands. Next states: `Unopened` → `Absent` | `Open`
/// (load); `Unopened` | `Absent` → `Made` (first write); `Made` → `Open`
/// (next write); any → `Closed` (close, destroy).
enum FileState {
    Unopened,
    /// Looked for and not there: the worker has only been read.
    Absent,
    /// Created by this handle's first write and left closed.
    Made,
    Open(Box<WorkerFile>),
    Closed,
}

/// One worker's storage. The JS layer keeps at most one operation in flight
/// per worker; the mutex only makes that safe to rely on.
pub struct Worker {
    engine: Arc<Engine>,
    class: String,
    id: String,
    path: PathBuf,
    schema: Arc<Schema>,
    file: Mutex<FileState>,
    /// A commit is written and not yet synced: a snapshot must not copy it
    /// (its sync may still fail, and then no one has it).
    unsynced: AtomicBool,
}

impl Worker {
    pub fn new(engine: Arc<Engine>, class: String, id: String) -> Self {
        let path = layout::worker_path(engine.dir(), &class, &id);
        let schema = engine.schema(&class);
        Worker {
            engine,
            class,
            id,
            path,
            schema,
            file: Mutex::new(FileState::Unopened),
            unsynced: AtomicBool::new(false),
        }
    }

    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the file if there is one and returns its whole key/value page
    /// and its alarms.
    pub fn load(&self) -> Result<Page> {
        self.engine.check_open()?;
        let mut file = self.file.lock();
        match &*file {
            FileState::Unopened | FileState::Absent => {
                self.engine.handles.wait_unpinned(&self.path)
            }
            // Already loaded by this handle (the caller holds the state).
            FileState::Made | FileState::Open(_) => return Ok(Page::default()),
            FileState::Closed => return Err(Error::Closed),
        }
        let durability = self.engine.durability;
        match WorkerFile::open(&self.path, &self.class, &self.id, durability, &self.schema)? {
            Some((f, page)) => {
                *file = FileState::Open(Box::new(f));
                Ok(page)
            }
            None => {
                *file = FileState::Absent;
                Ok(Page::default())
            }
        }
    }

    /// Whether the next write creates the file (and so must be registered in
    /// the catalog first).
    pub fn needs_file(&self) -> bool {
        matches!(&*self.file.lock(), FileState::Unopened | FileState::Absent)
    }

    /// Commits one batch and syncs it; creates the file if the worker has
    /// none. Runs on a commit thread.
    pub fn write(&self, batch: &Batch) -> Result<()> {
        self.engine.check_open()?;
        let mut file = self.file.lock();
        if batch.is_empty() && !matches!(&*file, FileState::Unopened | FileState::Absent) {
            return Ok(());
        }
        if !matches!(&*file, FileState::Open(_)) {
            self.engine.handles.wait_unpinned(&self.path);
        }
        let unsynced = match &mut *file {
            FileState::Open(f) => f.write(&self.schema, batch)?,
            FileState::Made => {
                let mut f =
                    WorkerFile::attach(&self.path, &self.class, &self.id, self.engine.durability)?;
                let unsynced = f.write(&self.schema, batch)?;
                *file = FileState::Open(Box::new(f));
                unsynced
            }
            FileState::Unopened | FileState::Absent => {
                let image = WorkerFile::create(
                    &self.path,
                    &self.class,
                    &self.id,
                    self.engine.durability,
                    &self.schema,
                    batch,
                )?;
                if let Some(a) = &self.engine.archive {
                    a.record(&self.path, &self.class, &self.id, Change::Image(image));
                }
                self.engine.counters.created.fetch_add(1, Ordering::Relaxed);
                *file = FileState::Made;
                // Created whole and synced (see `WorkerFile::create`).
                if self.engine.durability == Durability::Full {
                    self.engine.counters.syncs.fetch_add(1, Ordering::Relaxed);
                }
                Unsynced::none()
            }
            FileState::Closed => return Err(Error::Closed),
        };
        self.unsynced.store(unsynced.syncs(), Ordering::Release);
        drop(file);
        self.count(batch);
        self.settle(unsynced)
    }

    /// Commits one batch on the calling thread, unsynced, when the file is
    /// open and no one holds it: what it returns must be synced
    /// ([`Worker::settle`], or [`Worker::sync`] and a checkpoint when owed)
    /// before the commit is reported. `Ok(None)` when it cannot run here, and
    /// [`Worker::write`] must.
    ///
    /// The host's workers take it only for a commit alone on an idle event
    /// loop (`NativeWorker::write_inline`): under load, transactions on the JS
    /// thread cost the shop 30% of its journeys/s (the commit threads write
    /// them in parallel with JS).
    pub fn write_now(&self, batch: &Batch) -> Result<Option<Unsynced>> {
        self.engine.check_open()?;
        let Some(mut file) = self.file.try_lock() else {
            return Ok(None);
        };
        let FileState::Open(f) = &mut *file else {
            return Ok(None);
        };
        let unsynced = f.write(&self.schema, batch)?;
        self.unsynced.store(unsynced.syncs(), Ordering::Release);
        drop(file);
        self.count(batch);
        Ok(Some(unsynced))
    }

    /// Makes a written commit durable, then checkpoints the log if it has
    /// grown. A failed sync closes the file and cuts the commit from its log
    /// (see [`Unsynced::discard`]): the commit is reported failed, and no later
    /// open finds it.
    pub fn settle(&self, unsynced: Unsynced) -> Result<()> {
        if self.sync(&unsynced)? {
            self.checkpoint();
        }
        Ok(())
    }

    /// [`Worker::settle`]'s sync alone: true when the log has grown enough
    /// that [`Worker::checkpoint`] is owed (by whoever may hold the file for it).
    pub fn sync(&self, unsynced: &Unsynced) -> Result<bool> {
        let out = self.sync_log(unsynced);
        if let (Ok(_), Some(a)) = (&out, &self.engine.archive) {
            // Durable here first: the archive never holds a commit the worker lacks.
            match unsynced.pages() {
                Ok(Some(pages)) => {
                    a.record(&self.path, &self.class, &self.id, Change::Pages(pages))
                }
                Ok(None) => {}
                Err(e) => a.lost(&self.path, &e),
            }
        }
        self.unsynced.store(false, Ordering::Release);
        out
    }

    fn sync_log(&self, unsynced: &Unsynced) -> Result<bool> {
        let started = Instant::now();
        let in_place = match unsynced.sync(&self.path) {
            Ok(in_place) => in_place,
            Err(e) => {
                let mut file = self.file.lock();
                if let FileState::Open(f) = std::mem::replace(&mut *file, FileState::Closed) {
                    f.abandon();
                }
                drop(file);
                // The sync's error is the one to report; a failed cut adds nothing.
                let _ = unsynced.discard(&self.path);
                // Only once the failed commit is cut may a snapshot open the file.
                self.engine.handles.forget(self);
                return Err(e);
            }
        };
        if unsynced.syncs() {
            self.engine.record_sync(started.elapsed());
            let c = &self.engine.counters;
            c.syncs.fetch_add(1, Ordering::Relaxed);
            c.syncs_in_place
                .fetch_add(u64::from(in_place), Ordering::Relaxed);
        }
        Ok(unsynced.checkpoint)
    }

    /// Checkpoints the log, holding the file. The commits in it are durable
    /// whatever happens here: a checkpoint that fails (a full disk cannot
    /// grow the database file) is tried again after the next commit, as
    /// SQLite's own would be.
    pub fn checkpoint(&self) {
        if let FileState::Open(f) = &*self.file.lock() {
            let _ = f.checkpoint();
        }
    }

    fn count(&self, batch: &Batch) {
        if batch.is_empty() {
            return;
        }
        let c = &self.engine.counters;
        c.commits.fetch_add(1, Ordering::Relaxed);
        let bytes: usize = batch.sets.iter().map(|r| r.value.len()).sum::<usize>()
            + batch
                .docs
                .ops
                .iter()
                .filter_map(|op| op.put.as_ref().map(|p| p.doc.len()))
                .sum::<usize>();
        c.bytes_written.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// Runs a collection read on this worker's connection, one statement at a
    /// time with its commits (the file's lock is held throughout): the read
    /// [`Worker::try_read`] could not run. A worker
    /// without a file reads from an empty in-memory database, so that its
    /// uncommitted writes (the overlay) are still read through SQL.
    pub fn read<T>(
        &self,
        body: impl FnOnce(&Connection, &Tables) -> rusqlite::Result<T>,
    ) -> Result<T> {
        self.engine.check_open()?;
        let mut file = self.file.lock();
        let c = &self.engine.counters;
        c.queries.fetch_add(1, Ordering::Relaxed);
        c.queries_deferred.fetch_add(1, Ordering::Relaxed);
        if matches!(&*file, FileState::Made)
            || (matches!(&*file, FileState::Unopened) && self.path.exists())
        {
            self.engine.handles.wait_unpinned(&self.path);
            let f = WorkerFile::attach(&self.path, &self.class, &self.id, self.engine.durability)?;
            *file = FileState::Open(Box::new(f));
        }
        match &*file {
            FileState::Open(f) => f.read(body),
            FileState::Unopened | FileState::Absent | FileState::Made => {
                let conn = Connection::open_in_memory()
                    .map_err(|e| Error::sqlite("read", &self.path, e))?;
                body(&conn, &Tables::default()).map_err(|e| Error::sqlite("read", &self.path, e))
            }
            FileState::Closed => Err(Error::Closed),
        }
    }

    /// Runs a collection read now, on the calling thread, when the file is
    /// open and no commit holds it; `Ok(None)` otherwise, and the caller reads
    /// through [`Worker::read`] on another thread. Waiting here instead would
    /// stall the JS thread for a commit's sync.
    pub fn try_read<T>(
        &self,
        body: impl FnOnce(&Connection, &Tables) -> rusqlite::Result<T>,
    ) -> Result<Option<T>> {
        self.engine.check_open()?;
        let Some(file) = self.file.try_lock() else {
            return Ok(None);
        };
        let FileState::Open(f) = &*file else {
            return Ok(None);
        };
        self.engine.counters.queries.fetch_add(1, Ordering::Relaxed);
        f.read(body).map(Some)
    }

    /// Fills declared fields of stored documents; see [`WorkerFile::backfill`].
    pub fn backfill(
        &self,
        coll: usize,
        fields: &[usize],
        ids: &[String],
        columns: &[rusqlite::types::Value],
    ) -> Result<()> {
        self.engine.check_open()?;
        let file = self.file.lock();
        match &*file {
            FileState::Open(f) => f.backfill(&self.schema, coll, fields, ids, columns)?,
            // Only a loaded file asks for a backfill.
            _ => return Err(Error::Closed),
        }
        self.engine.counters.commits.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Closes the file; later operations fail with `Closed`.
    pub fn close(&self) -> Result<()> {
        let mut file = self.file.lock();
        let out = match std::mem::replace(&mut *file, FileState::Closed) {
            FileState::Open(f) => {
                if let Some(a) = &self.engine.archive {
                    match f.unshipped() {
                        Ok(Some(pages)) => {
                            a.record(&self.path, &self.class, &self.id, Change::Pages(pages))
                        }
                        Ok(None) => {}
                        Err(e) => a.lost(&self.path, &e),
                    }
                }
                f.close()
            }
            _ => Ok(()),
        };
        drop(file);
        // Only once its connection is gone may a snapshot open the file
        // without a handle.
        self.engine.handles.forget(self);
        out
    }

    /// [`Worker::close`] on the calling thread when the worker holds no
    /// connection (its file was made and left closed, or it has none), so
    /// there is nothing to checkpoint: true. False when its file is open (or
    /// held), and `close` must run on a commit thread.
    pub fn close_now(&self) -> bool {
        let Some(mut file) = self.file.try_lock() else {
            return false;
        };
        if matches!(&*file, FileState::Open(_)) {
            return false;
        }
        *file = FileState::Closed;
        drop(file);
        self.engine.handles.forget(self);
        true
    }

    /// Closes and removes the file; true if there was one.
    pub fn remove_file(&self) -> Result<bool> {
        self.close()?;
        // Pinned, so that no copy reads the file while it goes.
        let _pin = self.engine.handles.hold(&self.path);
        let removed = crate::files::remove_files(&self.path)?;
        if let (true, Some(a)) = (removed, &self.engine.archive) {
            a.record(&self.path, &self.class, &self.id, Change::Removed);
        }
        Ok(removed)
    }

    /// Hands `copy` this worker's file as of its last commit, holding the
    /// file meanwhile so that no commit runs; see [`crate::backup`].
    pub(crate) fn with_image<T>(
        &self,
        copy: impl FnOnce(&[u8]) -> Result<T>,
    ) -> Result<crate::backup::Image<T>> {
        use crate::backup::Image;
        let mut file = self.file.lock();
        if self.unsynced.load(Ordering::Acquire) {
            return Ok(Image::Unsynced);
        }
        match &mut *file {
            FileState::Open(f) => f.with_image(copy).map(Image::Copied),
            FileState::Closed => Ok(Image::Closed),
            FileState::Unopened | FileState::Absent | FileState::Made => {
                // Another copy may have pinned it before this handle was made.
                self.engine.handles.wait_unpinned(&self.path);
                crate::backup::closed_image(&self.path, self.engine.durability, copy)
            }
        }
    }

    pub fn register_op(&self) -> Op {
        Op::Register {
            class: self.class.clone(),
            id: self.id.clone(),
        }
    }

    pub fn remove_op(&self) -> Op {
        Op::Remove {
            class: self.class.clone(),
            id: self.id.clone(),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::store::Row;

    fn engine(dir: &Path) -> Result<Arc<Engine>> {
        Ok(Arc::new(Engine::open(dir, Durability::Full)?))
    }

    /// A batch that sets one key.
    pub(crate) fn set(key: &str, v: &[u8]) -> Batch {
        Batch {
            sets: vec![Row {
                key: key.into(),
                tag: 1,
                value: v.to_vec(),
            }],
            ..Batch::default()
        }
    }

    fn state(w: &Worker) -> &'static str {
        match &*w.file.lock() {
            FileState::Unopened => "unopened",
            FileState::Absent => "absent",
            FileState::Made => "made",
            FileState::Open(_) => "open",
            FileState::Closed => "closed",
        }
    }

    #[test]
    fn a_worker_goes_unopened_absent_made_open_and_its_data_survives_a_new_handle() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let e = engine(tmp.path())?;
        let w = Worker::new(e.clone(), "Cart".into(), "a".into());
        assert_eq!(state(&w), "unopened");
        assert!(w.needs_file());
        assert_eq!(w.load()?, Page::default());
        assert_eq!(state(&w), "absent");
        assert!(w.needs_file(), "a worker only read has no file yet");
        assert!(!w.path().exists());
        // A read without a file runs against an empty database.
        assert_eq!(
            w.read(|c, _| c.query_row("SELECT 41 + 1", [], |r| r.get::<_, i64>(0)))?,
            42
        );
        w.write(&set("x", b"1"))?;
        assert_eq!(state(&w), "made");
        assert!(!w.needs_file());
        assert!(w.path().exists());
        // Loading again hands back nothing: the caller already holds the state.
        assert_eq!(w.load()?, Page::default());
        w.write(&set("y", b"2"))?;
        assert_eq!(state(&w), "open");
        w.close()?;
        assert_eq!(state(&w), "closed");

        let again = Worker::new(e.clone(), "Cart".into(), "a".into());
        let page = again.load()?;
        assert_eq!(state(&again), "open");
        let keys: Vec<_> = page.rows.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, ["x", "y"]);
        again.close()?;
        e.close();
        Ok(())
    }

    #[test]
    fn try_read_runs_only_on_an_open_file_no_one_holds() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let e = engine(tmp.path())?;
        let w = Worker::new(e.clone(), "Cart".into(), "r".into());
        let one = |c: &Connection, _: &Tables| c.query_row("SELECT 1", [], |r| r.get::<_, i64>(0));
        assert_eq!(w.try_read(one)?, None, "unopened");
        w.write(&set("x", b"1"))?;
        assert_eq!(w.try_read(one)?, None, "made, and left closed");
        assert_eq!(w.read(one)?, 1, "a waiting read opens it");
        assert_eq!(w.try_read(one)?, Some(1));
        let held = w.file.lock();
        assert_eq!(w.try_read(one)?, None, "held by a commit");
        drop(held);
        let c = &e.counters;
        assert_eq!(c.queries.load(Ordering::Relaxed), 2);
        assert_eq!(c.queries_deferred.load(Ordering::Relaxed), 1);
        w.close()?;
        assert!(
            matches!(w.try_read(one), Ok(None)),
            "closed: the waiting read reports it"
        );
        e.close();
        assert!(matches!(w.try_read(one), Err(Error::Closed)));
        Ok(())
    }

    fn keys(w: &Worker) -> Result<Vec<String>> {
        Ok(w.load()?.rows.into_iter().map(|r| r.key).collect())
    }

    #[test]
    fn a_commit_written_now_is_durable_once_settled_and_a_failed_sync_cuts_it_from_the_log(
    ) -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let e = engine(tmp.path())?;
        let w = Worker::new(e.clone(), "Cart".into(), "s".into());
        assert!(w.write_now(&set("x", b"0"))?.is_none(), "no file yet");
        w.write(&set("x", b"1"))?;
        assert!(w.write_now(&set("x", b"2"))?.is_none(), "made, not open");
        w.write(&set("y", b"1"))?; // opens it
        let syncs = e.counters.syncs.load(Ordering::Relaxed);
        let now = w.write_now(&set("z", b"1"))?.ok_or(Error::Closed)?;
        assert!(now.syncs());
        w.settle(now)?;
        assert_eq!(e.counters.syncs.load(Ordering::Relaxed), syncs + 1);
        let mut failing = w.write_now(&set("lost", b"1"))?.ok_or(Error::Closed)?;
        failing.fail_sync = true;
        assert!(matches!(w.settle(failing), Err(Error::Io { .. })));
        assert_eq!(state(&w), "closed", "a failed sync closes the file");
        assert!(matches!(w.write(&set("after", b"1")), Err(Error::Closed)));
        // Its frames were written to the log; cut there, no open replays them.
        let again = Worker::new(e.clone(), "Cart".into(), "s".into());
        assert_eq!(keys(&again)?, ["x", "y", "z"]);
        again.close()?;
        e.close();
        Ok(())
    }

    #[test]
    fn the_commit_thread_checkpoints_a_grown_log_and_nothing_is_lost() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let e = engine(tmp.path())?;
        let w = Worker::new(e.clone(), "Cart".into(), "c".into());
        w.write(&set("k0", b"0"))?;
        w.write(&set("k1", b"1"))?;
        let big = vec![7u8; 4000];
        let mut checkpointed = 0;
        let n = 4 * crate::wal::CHECKPOINT_PAGES as usize;
        for i in 2..n {
            let now = w
                .write_now(&set(&format!("k{i}"), &big))?
                .ok_or(Error::Closed)?;
            checkpointed += usize::from(now.checkpoint);
            w.settle(now)?;
        }
        assert!(checkpointed >= 3, "{checkpointed} checkpoints");
        let [wal, _, _] = layout::sidecars(w.path());
        let len = std::fs::metadata(&wal)
            .map_err(|e| Error::io("stat", e))?
            .len();
        assert!(
            len < 2 * crate::wal::CHECKPOINT_PAGES as u64 * 4200,
            "the log restarts after a checkpoint: {len} bytes"
        );
        w.close()?;
        let again = Worker::new(e.clone(), "Cart".into(), "c".into());
        assert_eq!(keys(&again)?.len(), n);
        again.close()?;
        e.close();
        Ok(())
    }

    #[test]
    fn an_empty_batch_creates_a_file_only_for_a_worker_that_has_none() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let e = engine(tmp.path())?;
        let w = Worker::new(e.clone(), "Cart".into(), "empty".into());
        w.write(&Batch::default())?;
        assert_eq!(
            state(&w),
            "made",
            "the first write, even empty, makes the file"
        );
        assert!(w.path().exists());
        let commits = e.counters.commits.load(Ordering::Relaxed);
        w.write(&Batch::default())?;
        assert_eq!(
            e.counters.commits.load(Ordering::Relaxed),
            commits,
            "a later empty batch is no commit"
        );
        w.close()?;
        e.close();
        Ok(())
    }

    #[test]
    fn after_close_every_operation_is_closed_and_remove_file_says_whether_there_was_one(
    ) -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let e = engine(tmp.path())?;
        let w = Worker::new(e.clone(), "Cart".into(), "b".into());
        w.write(&set("x", b"1"))?;
        w.close()?;
        for r in [
            w.load().map(|_| ()),
            w.write(&set("x", b"2")),
            w.read(|_, _| Ok(())),
            w.backfill(0, &[], &[], &[]),
        ] {
            assert!(matches!(r, Err(Error::Closed)), "{r:?}");
        }
        let fresh = Worker::new(e.clone(), "Cart".into(), "b".into());
        assert!(fresh.remove_file()?, "the file was there");
        assert!(!fresh.path().exists());
        let none = Worker::new(e.clone(), "Cart".into(), "never".into());
        assert!(!none.remove_file()?);
        // A closed engine refuses before touching a file.
        e.close();
        let late = Worker::new(e.clone(), "Cart".into(), "c".into());
        assert!(matches!(late.load(), Err(Error::Closed)));
        Ok(())
    }

    #[test]
    fn a_backfill_is_refused_unless_the_file_is_loaded() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let e = engine(tmp.path())?;
        let w = Worker::new(e.clone(), "Cart".into(), "d".into());
        assert!(matches!(w.backfill(0, &[], &[], &[]), Err(Error::Closed)));
        e.close();
        Ok(())
    }
}
