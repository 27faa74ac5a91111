//! One object's storage: its connection and where it stands.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::file::{ExecError, ObjectFile, Written};
use crate::archive::Change;
use crate::backup::{waited_too_long, Image, UNSYNCED_WAIT};
use crate::catalog::Op;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::layout;
use crate::wal::Pages;

/// How long a copy holds an object's connection waiting for those syncs
/// before it lets go and tries again.
const HOLD: Duration = Duration::from_millis(5);

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
    /// [`Object::syncing`]'s flag, read by a copy that holds `state`
    /// (which a failing sync takes after `syncing`).
    failed: AtomicBool,
    /// Its file is made and not yet synced: the next sync covers the file
    /// and its directory first, whichever commit it is for (syncs of one
    /// object's commits may run in any order).
    file_unsynced: AtomicBool,
    /// Commits written and not yet settled; `drained` is signalled when
    /// none is left (a copy waits for it: [`Object::with_image`]).
    pending: AtomicUsize,
    drained: (Mutex<()>, Condvar),
    /// Commits numbered as written ([`Written::n`]).
    written: AtomicU64,
    /// With an archive: each written commit's pages, read from the log as
    /// it was written (a later commit may start the log over before this
    /// one's sync), until a sync makes them durable and they are recorded
    /// in order.
    unshipped: Mutex<VecDeque<(u64, Result<Option<Pages>>)>>,
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
            failed: AtomicBool::new(false),
            file_unsynced: AtomicBool::new(false),
            pending: AtomicUsize::new(0),
            drained: Default::default(),
            written: AtomicU64::new(0),
            unshipped: Mutex::default(),
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
        // A copy may have pinned the file before this handle was made.
        self.engine.handles.wait_unpinned(&self.path);
        let (file, exists) = match ObjectFile::open(&self.path, &self.id, self.engine.durability)? {
            Some(f) => {
                let c = &self.engine.counters;
                c.syncs.fetch_add(f.synced_at_open, Ordering::Relaxed);
                (self.opened(f), true)
            }
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
                self.opened(f)
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

    /// A file opened that may never have been synced (an empty database
    /// whose first write never committed): its next commit syncs it first.
    fn opened(&self, f: ObjectFile) -> ObjectFile {
        if f.is_fresh() {
            self.file_unsynced.store(true, Ordering::Release);
        }
        f
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
        self.file_unsynced.store(true, Ordering::Release);
        if let State::Open(standin) = &*state {
            file.follow(standin);
        }
        file.restore_settings(&settings)?;
        *state = State::Open(Box::new(file));
        self.engine.counters.created.fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }

    /// Ends the implicit transaction ([`ObjectFile::commit`]): the commit it
    /// writes counts as pending until its [`Object::settle`]; with an
    /// archive, its pages are read now, while no other commit can be written.
    pub fn commit(&self) -> Result<std::result::Result<Option<Written>, ExecError>> {
        self.with(|f| {
            let mut out = f.commit();
            if let Ok(Some(w)) = &mut out {
                self.pending.fetch_add(1, Ordering::AcqRel);
                w.n = self.written.fetch_add(1, Ordering::Relaxed) + 1;
                if self.engine.archive.is_some() {
                    self.unshipped.lock().push_back((w.n, w.unsynced.pages()));
                }
            }
            out
        })
    }

    /// Makes a written commit durable (on a commit thread, or on the JS
    /// thread for a commit alone on an idle loop), ships it to the archive
    /// if there is one, then checkpoints the log if it has grown. A failed
    /// sync closes the file and cuts the commit from the log: no later open
    /// finds what was reported failed.
    pub fn settle(&self, written: &Written) -> Result<()> {
        let mut failed = self.syncing.lock();
        if *failed {
            // Reported failed, so cut from the log too: it may lie before
            // the commit whose sync failed (the syncs ran out of order).
            let _ = written.unsynced.discard(&self.path);
            self.settled();
            return Err(Error::io(
                format!("sync the log of {}", self.path.display()),
                std::io::Error::other("an earlier commit of this object failed to sync"),
            ));
        }
        let started = Instant::now();
        if let Err(e) = self.sync(written) {
            self.fail(&mut failed, written);
            return Err(e);
        }
        let c = &self.engine.counters;
        c.commits.fetch_add(1, Ordering::Relaxed);
        if written.unsynced.syncs() {
            self.engine.record_sync(started.elapsed());
            c.syncs.fetch_add(1, Ordering::Relaxed);
        }
        // Durable, and archived if it is: a copy that finds nothing pending
        // may take the archive's mark for what it copies.
        self.settled();
        if written.unsynced.checkpoint {
            if let State::Open(f) = &*self.state.lock() {
                // Tried again after the next commit if it fails (a full disk).
                let _ = f.checkpoint();
            }
        }
        Ok(())
    }

    /// Syncs one commit (the file and its directory first while they are
    /// not), then records it in the archive: never before it is durable here.
    fn sync(&self, written: &Written) -> Result<()> {
        let first = self.file_unsynced.load(Ordering::Acquire);
        if first {
            let dir = self.path.parent().unwrap_or(Path::new("."));
            crate::files::sync_new_files_in(dir, &[&self.path])?;
            self.file_unsynced.store(false, Ordering::Release);
        }
        if written.unsynced.sync(&self.path)? {
            let c = &self.engine.counters;
            c.syncs_in_place.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(a) = &self.engine.archive {
            if first {
                match super::file::empty_image(&self.id) {
                    Ok(image) => a.record(&self.path, &self.class, &self.id, Change::Image(image)),
                    Err(e) => a.lost(&self.path, &Error::sqlite("archive", &self.path, e)),
                }
            }
            // The log is synced up to this commit, so every commit before it
            // is durable too, whichever order their syncs run in.
            let mut queue = self.unshipped.lock();
            while queue.front().is_some_and(|(n, _)| *n <= written.n) {
                match queue.pop_front().map(|(_, pages)| pages) {
                    Some(Ok(Some(pages))) => {
                        a.record(&self.path, &self.class, &self.id, Change::Pages(pages))
                    }
                    Some(Err(e)) => a.lost(&self.path, &e),
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// A written commit that will never be settled (its hand-off to a
    /// commit thread failed): the object fails as for a failed sync, so no
    /// later close checkpoints into the file a commit reported failed.
    pub fn dropped(&self, written: &Written) {
        let mut failed = self.syncing.lock();
        self.fail(&mut failed, written);
    }

    /// The object fails (`failed` is `syncing`'s flag, held): `written` is
    /// no longer pending and is cut from the log, and the file is closed
    /// without a checkpoint.
    fn fail(&self, failed: &mut bool, written: &Written) {
        *failed = true;
        self.failed.store(true, Ordering::Release);
        self.settled();
        if let State::Open(f) = std::mem::replace(&mut *self.state.lock(), State::Closed) {
            f.abandon();
        }
        let _ = written.unsynced.discard(&self.path);
        self.engine.handles.forget_object(self);
    }

    /// One written commit fewer pending.
    fn settled(&self) {
        let was = self
            .pending
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        if was == Ok(1) {
            let _lock = self.drained.0.lock();
            self.drained.1.notify_all();
        }
    }

    /// Hands `copy` the object's file as of its last synced commit, and the
    /// archive's `mark` taken for it, for a snapshot or an archive's base
    /// ([`crate::backup`]).
    ///
    /// The file's only connection is the object's (it holds the file in
    /// exclusive mode), so the copy is read through it, held between two
    /// events: once the commits it wrote are synced (nothing copied can
    /// still be lost, and no other is written meanwhile) and with no
    /// transaction open. The object's next storage call waits for the read,
    /// not for the copy to be written out.
    pub(crate) fn with_image<T>(
        &self,
        mark: impl Fn() -> u64,
        copy: impl FnOnce(&[u8], u64) -> Result<T>,
    ) -> Result<Image<T>> {
        let deadline = Instant::now() + UNSYNCED_WAIT;
        loop {
            self.engine.check_open()?;
            if self.failed.load(Ordering::Acquire) {
                return Ok(Image::Closed);
            }
            // Most often nothing is pending: waited for without the connection.
            self.drained_within(HOLD);
            let mut state = self.state.lock();
            if matches!(&*state, State::Closed) {
                return Ok(Image::Closed);
            }
            // Holding the connection, so that no commit is written meanwhile,
            // but briefly: a commit alone on an idle loop is synced on the JS
            // thread, which may be waiting for it.
            if !self.drained_within(HOLD) {
                drop(state);
                if Instant::now() > deadline {
                    return Err(waited_too_long(&self.path, "a commit waiting for its sync"));
                }
                continue;
            }
            if self.failed.load(Ordering::Acquire) {
                return Ok(Image::Closed);
            }
            let (image, seq) = match &mut *state {
                State::Closed => return Ok(Image::Closed),
                // A turn's transaction (or an explicit one across awaits).
                State::Open(f) if f.in_transaction() => {
                    drop(state);
                    if Instant::now() > deadline {
                        return Err(waited_too_long(&self.path, "a transaction open"));
                    }
                    std::thread::sleep(Duration::from_micros(200));
                    continue;
                }
                // Made, and nothing in it synced or reported yet.
                State::Open(f)
                    if f.is_empty_standin()
                        || f.is_fresh()
                        || self.file_unsynced.load(Ordering::Acquire) =>
                {
                    return Ok(Image::NoFile)
                }
                State::Open(f) => (f.image()?, mark()),
                State::Parked { file: false, .. } => return Ok(Image::NoFile),
                State::Parked { .. } | State::Unopened => {
                    // No connection: read from the disk, the object's next
                    // use waiting (as its load waits for a copy's pin).
                    self.engine.handles.wait_unpinned(&self.path);
                    match crate::backup::closed_image(&self.path, self.engine.durability, |b| {
                        Ok(b.to_vec())
                    })? {
                        Image::Copied(bytes) => (bytes, mark()),
                        _ => return Ok(Image::NoFile),
                    }
                }
            };
            drop(state);
            return copy(&image, seq).map(Image::Copied);
        }
    }

    /// Whether every written commit is synced, waiting `wait` at most.
    fn drained_within(&self, wait: Duration) -> bool {
        let until = Instant::now() + wait;
        let mut lock = self.drained.0.lock();
        while self.pending.load(Ordering::Acquire) > 0 {
            if self.drained.1.wait_until(&mut lock, until).timed_out() {
                return self.pending.load(Ordering::Acquire) == 0;
            }
        }
        true
    }

    /// Checkpoints and closes; later use fails with `Closed`. A parked
    /// object's file is opened to be checkpointed too (on the commit thread
    /// that closes it), as an open one is: a closed directory's database
    /// files hold everything committed.
    pub fn close(&self) -> Result<()> {
        let out = match std::mem::replace(&mut *self.state.lock(), State::Closed) {
            State::Open(f) => f.close(),
            State::Parked { file: true, .. } => {
                ObjectFile::open(&self.path, &self.id, self.engine.durability)
                    .and_then(|f| f.map_or(Ok(()), ObjectFile::close))
            }
            _ => Ok(()),
        };
        self.engine.handles.forget_object(self);
        out
    }

    pub fn register_op(&self) -> Op {
        Op::Register {
            class: self.class.clone(),
            id: self.id.clone(),
        }
    }
}
