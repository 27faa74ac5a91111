//! A durable directory, opened: its catalog, its workers' files and the
//! counters that say what durability has cost.
//!
//! Everything here blocks; the napi layer runs it off the JS thread.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::catalog::{Catalog, Op, Reply};
use crate::error::{Error, Result};
use crate::layout;
use crate::sqlite::Durability;
use crate::store::{self, Batch, Page, WorkerFile};

/// What the disk has been asked to do, for `stats()`.
#[derive(Default, Debug)]
pub struct Counters {
    /// Worker transactions committed.
    pub commits: AtomicU64,
    /// Commits that waited for the device (every commit under `Full`).
    pub syncs: AtomicU64,
    /// Worker files created.
    pub created: AtomicU64,
    /// Value bytes handed to SQLite.
    pub bytes_written: AtomicU64,
}

/// One open durable directory. Owning it means holding the catalog's lock.
pub struct Engine {
    dir: PathBuf,
    durability: Durability,
    catalog: Catalog,
    pub counters: Counters,
    closed: AtomicBool,
}

impl Engine {
    /// Creates `dir` if needed and takes ownership of it.
    pub fn open(dir: &Path, durability: Durability) -> Result<Self> {
        store::create_dirs_synced(dir)?;
        let catalog = Catalog::open(dir, durability)?;
        Ok(Engine {
            dir: dir.to_path_buf(),
            durability,
            catalog,
            counters: Counters::default(),
            closed: AtomicBool::new(false),
        })
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
    file: Mutex<FileState>,
}

impl Worker {
    pub fn new(engine: Arc<Engine>, class: String, id: String) -> Self {
        let path = layout::worker_path(engine.dir(), &class, &id);
        Worker {
            engine,
            class,
            id,
            path,
            file: Mutex::new(FileState::Unopened),
        }
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
        match WorkerFile::open(&self.path, &self.class, &self.id, self.engine.durability)? {
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
        match &*file {
            FileState::Open(f) => f.write(batch)?,
            FileState::Made => {
                let f =
                    WorkerFile::attach(&self.path, &self.class, &self.id, self.engine.durability)?;
                f.write(batch)?;
                *file = FileState::Open(f);
            }
            FileState::Unopened | FileState::Absent => {
                WorkerFile::create(
                    &self.path,
                    &self.class,
                    &self.id,
                    self.engine.durability,
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
        let bytes: usize = batch.sets.iter().map(|r| r.value.len()).sum();
        c.bytes_written.fetch_add(bytes as u64, Ordering::Relaxed);
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
        store::remove_files(&self.path)
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
