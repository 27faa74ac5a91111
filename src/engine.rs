//! A durable directory, opened: its catalog, its workers' files and the
//! counters that say what durability has cost.
//!
//! Everything here blocks; the napi layer runs it off the JS thread.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use rusqlite::Connection;

use crate::catalog::{Catalog, Op, Reply};
use crate::collections::{Schema, Tables};
use crate::error::{Error, Result};
use crate::layout;
use crate::sqlite::Durability;
use crate::store::{Batch, Page, WorkerFile};

/// What the disk has been asked to do, for `stats()`.
#[derive(Default, Debug)]
pub struct Counters {
    /// Worker transactions committed.
    pub commits: AtomicU64,
    /// Commits that waited for the device (every commit under `Full`).
    pub syncs: AtomicU64,
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

/// One open durable directory. Owning it means holding the catalog's lock.
pub struct Engine {
    dir: PathBuf,
    durability: Durability,
    catalog: Catalog,
    pub counters: Counters,
    closed: AtomicBool,
    /// Each class's declared collections.
    schemas: Mutex<HashMap<String, Arc<Schema>>>,
}

impl Engine {
    /// Creates `dir` if needed and takes ownership of it.
    pub fn open(dir: &Path, durability: Durability) -> Result<Self> {
        crate::files::create_dirs_synced(dir)?;
        let lost =
            !dir.join(crate::layout::REGISTRY_FILE).exists() && crate::repair::has_workers(dir);
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
        // A catalog deleted under worker files: rebuilt from the files, which
        // each hold their own class, id and alarms.
        if lost {
            crate::repair::rebuild(dir, durability, &catalog)?;
        }
        Ok(Engine {
            dir: dir.to_path_buf(),
            durability,
            catalog,
            counters: Counters::default(),
            closed: AtomicBool::new(false),
            schemas: Mutex::new(HashMap::new()),
        })
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

    /// Releases the directory. Worker files must be closed first.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
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
    Open(WorkerFile),
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
            FileState::Unopened | FileState::Absent => {}
            // Already loaded by this handle (the caller holds the state).
            FileState::Made | FileState::Open(_) => return Ok(Page::default()),
            FileState::Closed => return Err(Error::Closed),
        }
        let durability = self.engine.durability;
        match WorkerFile::open(&self.path, &self.class, &self.id, durability, &self.schema)? {
            Some((f, page)) => {
                *file = FileState::Open(f);
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

    /// Commits one batch; creates the file if the worker has none.
    pub fn write(&self, batch: &Batch) -> Result<()> {
        self.engine.check_open()?;
        let mut file = self.file.lock();
        let c = &self.engine.counters;
        if batch.is_empty() && !matches!(&*file, FileState::Unopened | FileState::Absent) {
            return Ok(());
        }
        match &mut *file {
            FileState::Open(f) => f.write(&self.schema, batch)?,
            FileState::Made => {
                let mut f =
                    WorkerFile::attach(&self.path, &self.class, &self.id, self.engine.durability)?;
                f.write(&self.schema, batch)?;
                *file = FileState::Open(f);
            }
            FileState::Unopened | FileState::Absent => {
                WorkerFile::create(
                    &self.path,
                    &self.class,
                    &self.id,
                    self.engine.durability,
                    &self.schema,
                    batch,
                )?;
                c.created.fetch_add(1, Ordering::Relaxed);
                *file = FileState::Made;
            }
            FileState::Closed => return Err(Error::Closed),
        }
        c.commits.fetch_add(1, Ordering::Relaxed);
        if self.engine.durability == Durability::Full {
            c.syncs.fetch_add(1, Ordering::Relaxed);
        }
        let bytes: usize = batch.sets.iter().map(|r| r.value.len()).sum::<usize>()
            + batch
                .docs
                .ops
                .iter()
                .filter_map(|op| op.put.as_ref().map(|p| p.doc.len()))
                .sum::<usize>();
        c.bytes_written.fetch_add(bytes as u64, Ordering::Relaxed);
        Ok(())
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
            let f = WorkerFile::attach(&self.path, &self.class, &self.id, self.engine.durability)?;
            *file = FileState::Open(f);
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
        let c = &self.engine.counters;
        c.commits.fetch_add(1, Ordering::Relaxed);
        if self.engine.durability == Durability::Full {
            c.syncs.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Closes the file; later operations fail with `Closed`.
    pub fn close(&self) -> Result<()> {
        let prev = std::mem::replace(&mut *self.file.lock(), FileState::Closed);
        match prev {
            FileState::Open(f) => f.close(),
            _ => Ok(()),
        }
    }

    /// Closes and removes the file; true if there was one.
    pub fn remove_file(&self) -> Result<bool> {
        self.close()?;
        crate::files::remove_files(&self.path)
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
mod tests {
    use super::*;
    use crate::store::Row;

    fn engine(dir: &Path) -> Result<Arc<Engine>> {
        Ok(Arc::new(Engine::open(dir, Durability::Full)?))
    }

    fn set(key: &str, v: &[u8]) -> Batch {
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
