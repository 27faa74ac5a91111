//! Which worker files this process holds a handle on, so that a snapshot can
//! copy every file while the workers go on: through the handle's lock when a
//! worker (or a Durable Object, [`Object`]) has one, and with the file pinned
//! when none does.
//!
//! A worker file may be written by one connection at a time, and only through
//! its [`Worker`] handle, whose file lock each commit holds. A snapshot of a
//! file with a handle takes that lock for the copy. A file with no handle is
//! copied from the disk with its path pinned: a handle made meanwhile waits,
//! before it first touches the file (load, create, attach), until the pin is
//! gone. Registering a handle and pinning a path happen under one lock, so
//! either the snapshot sees the handle or the handle sees the pin.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::{Condvar, Mutex};

use crate::engine::Worker;
use crate::object::Object;

type Key = [u8; 32];

pub(crate) fn key(path: &Path) -> Key {
    *blake3::hash(path.to_string_lossy().as_bytes()).as_bytes()
}

/// A handle on a file: a worker's, or a Durable Object's.
enum Live {
    Worker(Weak<Worker>),
    Object(Weak<Object>),
}

impl Live {
    fn alive(&self) -> bool {
        match self {
            Live::Worker(w) => w.strong_count() > 0,
            Live::Object(o) => o.strong_count() > 0,
        }
    }

    fn is(&self, p: *const ()) -> bool {
        match self {
            Live::Worker(w) => std::ptr::eq(w.as_ptr().cast(), p),
            Live::Object(o) => std::ptr::eq(o.as_ptr().cast(), p),
        }
    }
}

#[derive(Default)]
struct Inner {
    live: HashMap<Key, Live>,
    pinned: HashSet<Key>,
    /// `live`'s size after its last sweep of dropped handles.
    swept: usize,
}

#[derive(Default)]
pub struct Handles {
    inner: Mutex<Inner>,
    /// Paths pinned now; read without the lock on every first touch.
    pins: AtomicUsize,
    unpinned: Condvar,
}

/// What [`Handles::claim`] found for a path.
pub enum Claim<'a> {
    /// A handle exists: copy under its file lock.
    Handle(Arc<Worker>),
    /// A Durable Object's handle exists: copy through it ([`Object::with_image`]).
    Object(Arc<Object>),
    /// None does: the path is pinned until this is dropped.
    Pinned(Pin<'a>),
}

pub struct Pin<'a> {
    handles: &'a Handles,
    key: Key,
}

impl Drop for Pin<'_> {
    fn drop(&mut self) {
        let mut inner = self.handles.inner.lock();
        inner.pinned.remove(&self.key);
        self.handles.pins.fetch_sub(1, Ordering::SeqCst);
        drop(inner);
        self.handles.unpinned.notify_all();
    }
}

impl Handles {
    /// Records `worker` as the handle on its file (replacing a closed one).
    pub fn insert(&self, worker: &Arc<Worker>) {
        self.insert_live(worker.path(), Live::Worker(Arc::downgrade(worker)));
    }

    /// Records `object` as the handle on its file.
    pub fn insert_object(&self, object: &Arc<Object>) {
        self.insert_live(object.path(), Live::Object(Arc::downgrade(object)));
    }

    fn insert_live(&self, path: &Path, live: Live) {
        let mut inner = self.inner.lock();
        inner.live.insert(key(path), live);
        // Dropped handles are swept once the map has doubled since the last
        // sweep, so its size stays within twice the handles alive.
        if inner.live.len() > 2 * inner.swept + 64 {
            inner.live.retain(|_, w| w.alive());
            inner.swept = inner.live.len();
        }
    }

    /// Waits while a snapshot copies `path` without a handle. Called by a
    /// handle before it first opens, creates or attaches its file.
    pub fn wait_unpinned(&self, path: &Path) {
        if self.pins.load(Ordering::SeqCst) == 0 {
            return;
        }
        let k = key(path);
        let mut inner = self.inner.lock();
        while inner.pinned.contains(&k) {
            self.unpinned.wait(&mut inner);
        }
    }

    /// The handle on `path`, or a pin on it when there is none alive.
    pub fn claim(&self, path: &Path) -> Claim<'_> {
        let k = key(path);
        let inner = self.inner.lock();
        match inner.live.get(&k) {
            Some(Live::Worker(w)) => {
                if let Some(worker) = w.upgrade() {
                    return Claim::Handle(worker);
                }
            }
            Some(Live::Object(o)) => {
                if let Some(object) = o.upgrade() {
                    return Claim::Object(object);
                }
            }
            None => {}
        }
        // A second snapshot of the same path waits for the first.
        Claim::Pinned(self.pin(inner, k))
    }

    /// Pins `k` once no one else has it pinned, under `inner`'s lock.
    fn pin(&self, mut inner: parking_lot::MutexGuard<'_, Inner>, k: Key) -> Pin<'_> {
        while inner.pinned.contains(&k) {
            self.unpinned.wait(&mut inner);
        }
        inner.pinned.insert(k);
        self.pins.fetch_add(1, Ordering::SeqCst);
        Pin {
            handles: self,
            key: k,
        }
    }

    /// Pins `path` whether or not a handle is alive (waiting for another
    /// pin first): a handle removing its file.
    pub fn hold(&self, path: &Path) -> Pin<'_> {
        self.pin(self.inner.lock(), key(path))
    }

    /// Forgets `worker` if it is still the handle on its file (it closed).
    pub fn forget(&self, worker: &Worker) {
        self.forget_live(worker.path(), (worker as *const Worker).cast());
    }

    /// Forgets `object` if it is still the handle on its file (it closed or broke).
    pub fn forget_object(&self, object: &Object) {
        self.forget_live(object.path(), (object as *const Object).cast());
    }

    fn forget_live(&self, path: &Path, p: *const ()) {
        let k = key(path);
        let mut inner = self.inner.lock();
        if inner.live.get(&k).is_some_and(|l| l.is(p)) {
            inner.live.remove(&k);
        }
    }
}
