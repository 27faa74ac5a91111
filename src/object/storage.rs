//! One object's storage: its connection and where it stands.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use super::file::{ObjectFile, Written};
use crate::catalog::Op;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::layout;

enum State {
    Unopened,
    /// Its file, or the in-memory stand-in before the first write.
    Open(Box<ObjectFile>),
    /// Its connection is closed until the next use ([`Object::park`]):
    /// whether it has a file (else it was the in-memory stand-in), and the
    /// settings user SQL had changed on it, which the next connection gets.
    Parked {
        file: bool,
        settings: String,
    },
    Closed,
}

/// One object's storage. Its connection is used on the JS thread; a commit
/// thread takes it only to checkpoint, between the object's events.
pub struct Object {
    engine: Arc<Engine>,
    class: String,
    id: String,
    path: PathBuf,
    state: Mutex<State>,
    /// Held through a sync and what follows a failed one. An object may have
    /// several commits written and waiting for their syncs (one per turn),
    /// on different threads; once one sync fails, none after it may succeed:
    /// the failed one cut its commit and every later one from the log, and a
    /// device that failed a sync may report the next as done without having
    /// written what the failed one lost. True once a sync has failed.
    syncing: Mutex<bool>,
}

impl Object {
    pub fn new(engine: Arc<Engine>, class: String, id: String) -> Self {
        let path = layout::worker_path(engine.dir(), &class, &id);
        Object {
            engine,
            class,
            id,
            path,
            state: Mutex::new(State::Unopened),
            syncing: Mutex::new(false),
        }
    }

    /// The object's id (64 hex digits).
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Opens the file, or the stand-in when there is none: true if there is a file.
    pub fn load(&self) -> Result<bool> {
        self.engine.check_open()?;
        let mut state = self.state.lock();
        match &*state {
            State::Open(f) => return Ok(!f.is_empty_standin()),
            State::Closed => return Err(Error::Closed),
            State::Parked { file, settings } => {
                let exists = *file;
                *state = State::Open(Box::new(self.reopen(exists, settings)?));
                return Ok(exists);
            }
            State::Unopened => {}
        }
        let (file, exists) = match ObjectFile::open(&self.path, &self.id, self.engine.durability)? {
            Some(f) => (f, true),
            None => (ObjectFile::empty(&self.path)?, false),
        };
        // Read at the start, as workerd reads it to schedule it.
        file.get_alarm()?;
        *state = State::Open(Box::new(file));
        Ok(exists)
    }

    /// Runs `body` on the connection, opening it again if it was parked.
    /// Blocks only behind a checkpoint.
    pub fn with<T>(&self, body: impl FnOnce(&mut ObjectFile) -> T) -> Result<T> {
        self.engine.check_open()?;
        let mut state = self.state.lock();
        if let State::Parked { file, settings } = &*state {
            *state = State::Open(Box::new(self.reopen(*file, settings)?));
        }
        match &mut *state {
            State::Open(f) => Ok(body(f)),
            State::Unopened => Err(Error::internal("an object was used before its load")),
            State::Parked { .. } => Err(Error::internal("an object stayed parked")),
            State::Closed => Err(Error::Closed),
        }
    }

    /// The parked object's connection, made again: to its file (the alarm
    /// read as at a load), or a new stand-in; the settings put back.
    fn reopen(&self, file: bool, settings: &str) -> Result<ObjectFile> {
        let f = match ObjectFile::open(&self.path, &self.id, self.engine.durability)? {
            Some(f) => {
                f.get_alarm()?;
                f
            }
            None if !file => ObjectFile::empty(&self.path)?,
            None => {
                return Err(Error::Corrupt {
                    path: self.path.clone(),
                    detail: "the file of a Durable Object vanished while its object was live"
                        .into(),
                })
            }
        };
        f.restore_settings(settings)?;
        Ok(f)
    }

    /// Closes the connection of an object with nothing open on it (no
    /// transaction; a file whose first commit is written, or the stand-in)
    /// without a checkpoint: no I/O, and the next use makes it again
    /// (`with`) with the settings user SQL had changed. What bounds the
    /// files a host keeps open (descriptors and SQLite's memory per
    /// connection) whatever the number of live objects. False, and nothing
    /// done, when it cannot be parked now. Syncs in flight are unaffected:
    /// each holds its own descriptor of the log.
    pub fn park(&self) -> bool {
        let mut state = self.state.lock();
        let (file, settings) = match &*state {
            State::Open(f) if !f.in_transaction() && !f.is_fresh() => match f.settings() {
                Ok(settings) => (!f.is_empty_standin(), settings),
                Err(_) => return false,
            },
            _ => return false,
        };
        if let State::Open(f) = std::mem::replace(&mut *state, State::Parked { file, settings }) {
            f.abandon();
        }
        true
    }

    /// Whether the connection is parked.
    pub fn parked(&self) -> bool {
        matches!(&*self.state.lock(), State::Parked { .. })
    }

    /// Makes the file if the object has none (the first write): true if it
    /// did, and the caller registers the object in the catalog.
    pub fn ensure_file(&self) -> Result<bool> {
        self.engine.check_open()?;
        let mut state = self.state.lock();
        // The stand-in's settings (a PRAGMA run before the first write) carry over to the file.
        let settings = match &*state {
            State::Open(f) if f.is_empty_standin() => f.settings()?,
            State::Parked {
                file: false,
                settings,
            } => settings.clone(),
            State::Open(_) | State::Parked { .. } => return Ok(false),
            State::Unopened => {
                return Err(Error::internal("an object was written before its load"))
            }
            State::Closed => return Err(Error::Closed),
        };
        let mut file = ObjectFile::create(&self.path, &self.id, self.engine.durability)?;
        if let State::Open(standin) = &*state {
            file.follow(standin);
        }
        file.restore_settings(&settings)?;
        *state = State::Open(Box::new(file));
        self.engine.counters.created.fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }

    /// Makes a written commit durable (on a commit thread, or on the JS
    /// thread for a commit alone on an idle loop), then checkpoints
    /// the log if it has grown. A failed sync closes the file and cuts the
    /// commit from the log: no later open finds what was reported failed.
    pub fn settle(&self, written: &Written) -> Result<()> {
        let mut failed = self.syncing.lock();
        if *failed {
            // Reported failed, so cut from the log too: it may lie before
            // the commit whose sync failed (the syncs ran out of order).
            let _ = written.unsynced.discard(&self.path);
            return Err(Error::io(
                format!("sync the log of {}", self.path.display()),
                std::io::Error::other("an earlier commit of this object failed to sync"),
            ));
        }
        let started = Instant::now();
        if let Err(e) = written.sync(&self.path) {
            *failed = true;
            if let State::Open(f) = std::mem::replace(&mut *self.state.lock(), State::Closed) {
                f.abandon();
            }
            let _ = written.unsynced.discard(&self.path);
            return Err(e);
        }
        let c = &self.engine.counters;
        c.commits.fetch_add(1, Ordering::Relaxed);
        if written.unsynced.syncs() {
            self.engine.record_sync(started.elapsed());
            c.syncs.fetch_add(1, Ordering::Relaxed);
        }
        if written.unsynced.checkpoint {
            if let State::Open(f) = &*self.state.lock() {
                // Tried again after the next commit if it fails (a full disk).
                let _ = f.checkpoint();
            }
        }
        Ok(())
    }

    /// Checkpoints and closes; later use fails with `Closed`. A parked
    /// object's file is opened to be checkpointed too (on the commit thread
    /// that closes it), as an open one is: a closed directory's database
    /// files hold everything committed.
    pub fn close(&self) -> Result<()> {
        match std::mem::replace(&mut *self.state.lock(), State::Closed) {
            State::Open(f) => f.close(),
            State::Parked { file: true, .. } => {
                match ObjectFile::open(&self.path, &self.id, self.engine.durability)? {
                    Some(f) => f.close(),
                    None => Ok(()),
                }
            }
            _ => Ok(()),
        }
    }

    pub fn register_op(&self) -> Op {
        Op::Register {
            class: self.class.clone(),
            id: self.id.clone(),
        }
    }
}
