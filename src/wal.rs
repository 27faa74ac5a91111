//! A worker's write-ahead log, written without a sync and synced after.
//!
//! Guarantee: a commit is durable once [`Unsynced::sync`] has returned, and a
//! commit whose sync failed is cut from the log ([`Unsynced::discard`]) so
//! that no later open recovers it.
//!
//! Why: SQLite syncs a commit inside `COMMIT`, on the thread that runs it,
//! with the connection held. A worker's connection is also read on the JS
//! thread, and for synchronous SQL it is written there too, so its commits
//! are written with `synchronous=NORMAL` (no sync in `COMMIT`) and the WAL is
//! synced by a commit thread through a descriptor of its own, with the
//! connection free. On Linux a sync flushes the file, whichever descriptor
//! asks. SQLite takes no lock on the log file itself (its locks are on the
//! database file), so closing that descriptor releases none of its POSIX
//! locks. Checkpoints, which SQLite would run inside a `COMMIT` (syncing the WAL
//! and the database file there), are off (`wal_autocheckpoint=0`) and run by
//! the commit thread after the sync once the log holds [`CHECKPOINT_PAGES`].
//! What stays on the writing thread is the sync SQLite makes of a new log's
//! header after a checkpoint (once per [`CHECKPOINT_PAGES`] written): its
//! order before the frames is what keeps a restarted log from being misread.
//! That sync is also SQLite's first of a log file it has just created, which
//! is when it syncs the directory too, so the log's name is durable before
//! any commit in it is reported: this module needs no directory sync.
//! On ext4 without a journal, a commit that only rewrites blocks of the log
//! already synced is synced without the log's inode ([`crate::inplace`]).

use std::fs::{File, OpenOptions};
use std::os::raw::c_int;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use rusqlite::hooks::Wal as WalHandle;
use rusqlite::Connection;

use crate::error::{Error, Result};
use crate::inplace::{self, InPlace};
use crate::layout;
use crate::sqlite::Durability;

/// Pages in a worker's log from which its commit thread checkpoints it (about
/// 1.6 MB of log). A checkpoint costs about three syncs (the log, the database
/// file, the restarted log's header): at 100 pages that was 3% of a serial
/// writer's syncs and 2-4% of its calls/s; at 400 the shop, whose workers'
/// logs grow until the first rewind, was level. `sqlite::configure`'s
/// `wal_autocheckpoint`, for the crate's other connections, stays at 100.
pub const CHECKPOINT_PAGES: i32 = 400;
/// Bytes of a WAL header and of a frame's header (SQLite's file format).
const HEADER_BYTES: u64 = 32;
const FRAME_HEADER_BYTES: u64 = 24;

/// One worker connection's log.
pub struct Wal {
    path: PathBuf,
    durability: Durability,
    /// Frames in the log after the last commit, as SQLite's WAL hook reports
    /// it; -1 once [`Wal::written`] has taken it, so a commit that wrote no
    /// frame (and so called no hook) is never taken for the one before.
    frames: Arc<AtomicI32>,
    /// Opened at the first commit that needs a sync (the log exists by then).
    file: Option<Arc<File>>,
    /// How the log may be synced without its inode (see [`crate::inplace`]).
    in_place: Option<Arc<InPlace>>,
    frame_bytes: u64,
    /// How far an archive has read this log (see [`Unsynced::pages`]).
    shipped: Arc<Mutex<Shipped>>,
}

/// The log as an archive last read it: its header's salts (they change when
/// SQLite starts the log over) and the frames it held then.
#[derive(Default)]
struct Shipped {
    salt: [u8; 8],
    frames: u64,
    /// The log, open for reading from the first read on.
    reader: Option<File>,
}

/// The pages one commit wrote, as its log holds them: what an archive keeps.
pub struct Pages {
    pub page_size: u32,
    /// The database's size in pages after the commit.
    pub db_pages: u32,
    /// Its frames as the log holds them, each a 24-byte header (the page
    /// number first, big-endian) and the page; in log order, a later one wins.
    pub frames: Vec<u8>,
}

impl Pages {
    /// How many pages it holds.
    pub fn count(&self) -> usize {
        self.frames.len() / (FRAME_HEADER_BYTES as usize + self.page_size as usize)
    }
}

/// Bytes of a frame's header, before its page.
pub const FRAME_HEADER: usize = FRAME_HEADER_BYTES as usize;

/// A commit written to the log and not yet synced.
pub struct Unsynced {
    file: Option<Arc<File>>,
    in_place: Option<Arc<InPlace>>,
    /// The log, its frames after this commit, and their size; `None` for
    /// a commit that wrote none.
    log: Option<(PathBuf, u64, u64, Arc<Mutex<Shipped>>)>,
    /// Where this commit's last frame (the one that marks it committed) starts.
    commit_frame_at: u64,
    /// Whether the log has grown enough to checkpoint.
    pub checkpoint: bool,
    /// Tests: the sync fails as a device's would.
    #[cfg(test)]
    pub fail_sync: bool,
}

impl Wal {
    /// Sets up `conn` (a worker's, already in WAL mode) to commit without
    /// syncing and without checkpointing, and to report its log's length.
    pub fn attach(conn: &mut Connection, db: &Path, durability: Durability) -> Result<Self> {
        let ctx = |e| Error::sqlite("configure", db, e);
        conn.execute_batch("PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=0;")
            .map_err(ctx)?;
        let page: i64 = conn
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .map_err(ctx)?;
        let frames = Arc::new(AtomicI32::new(-1));
        let seen = frames.clone();
        conn.wal_hook(Some(move |_: &mut WalHandle, pages: c_int| {
            seen.store(pages, Ordering::Relaxed);
            Ok(())
        }))
        .map_err(ctx)?;
        let [path, _, _] = layout::sidecars(db);
        Ok(Wal {
            path,
            durability,
            frames,
            file: None,
            in_place: None,
            frame_bytes: FRAME_HEADER_BYTES + page.max(512) as u64,
            shipped: Arc::default(),
        })
    }

    /// Drops what the last commit reported: a commit that needs no sync of
    /// its own (its loss is repaired by doing it again).
    pub fn forget(&self) {
        self.frames.store(-1, Ordering::Relaxed);
    }

    /// The log's first `frames` frames as an archive reads them: what
    /// writes that ship with no commit of their own (a backfill) left, read
    /// before the log is emptied at close.
    pub fn pending(&self, frames: u64) -> Unsynced {
        Unsynced {
            file: None,
            in_place: None,
            log: Some((
                self.path.clone(),
                frames,
                self.frame_bytes,
                self.shipped.clone(),
            )),
            commit_frame_at: 0,
            checkpoint: false,
            #[cfg(test)]
            fail_sync: false,
        }
    }

    /// The commit just written, for a commit thread to sync.
    pub fn written(&mut self) -> Result<Unsynced> {
        let frames = self.frames.swap(-1, Ordering::Relaxed);
        if frames < 0 {
            return Ok(Unsynced::none());
        }
        let file = match (self.durability, &self.file) {
            (Durability::Relaxed, _) => None,
            (Durability::Full, Some(f)) => Some(f.clone()),
            (Durability::Full, None) => {
                // Write access: Windows flushes only a file opened for writing.
                let f = OpenOptions::new()
                    .write(true)
                    .open(&self.path)
                    .map_err(|e| Error::io(format!("open {}", self.path.display()), e))?;
                self.in_place = inplace::of(&f, &self.path).map(Arc::new);
                let f = Arc::new(f);
                self.file = Some(f.clone());
                Some(f)
            }
        };
        let commit_frame_at = HEADER_BYTES + (frames.max(1) as u64 - 1) * self.frame_bytes;
        if let (Some(p), Some(f)) = (&self.in_place, &file) {
            // The commit stands whatever happens to the zeros: without them
            // (a disk too full) the next commits grow the log, synced whole.
            let _ = p.extend(f, commit_frame_at + self.frame_bytes);
        }
        Ok(Unsynced {
            file,
            in_place: self.in_place.clone(),
            log: Some((
                self.path.clone(),
                frames.max(1) as u64,
                self.frame_bytes,
                self.shipped.clone(),
            )),
            commit_frame_at,
            checkpoint: frames >= CHECKPOINT_PAGES,
            #[cfg(test)]
            fail_sync: false,
        })
    }
}

impl Unsynced {
    /// Nothing to sync: a file created in whole, an empty batch.
    pub fn none() -> Self {
        Unsynced {
            file: None,
            in_place: None,
            log: None,
            commit_frame_at: 0,
            checkpoint: false,
            #[cfg(test)]
            fail_sync: false,
        }
    }

    /// Whether [`Unsynced::sync`] has work (and so counts a sync).
    pub fn syncs(&self) -> bool {
        self.file.is_some()
    }

    /// Makes the commit durable. Needs no lock: the descriptor is its own.
    /// `Ok(true)` when it was synced without its inode ([`crate::inplace`]).
    pub fn sync(&self, db: &Path) -> Result<bool> {
        #[cfg(test)]
        if self.fail_sync {
            return Err(Error::io("sync (test)", std::io::Error::other("injected")));
        }
        let Some(f) = &self.file else {
            return Ok(false);
        };
        let synced = match (&self.in_place, &self.log) {
            (Some(p), Some((_, _, frame_bytes, _))) => {
                p.sync(f, self.commit_frame_at + frame_bytes)
            }
            _ => f.sync_data().map(|()| false),
        };
        synced.map_err(|e| Error::io(format!("sync the log of {}", db.display()), e))
    }

    /// The pages the log holds that an archive has not read yet, this
    /// commit's last: read after the sync and before any checkpoint (the
    /// next commit may start the log over). A log started over since the last
    /// read (new salts) is read from its first frame. Pages written by a
    /// commit nobody read (a backfill's) come with this one.
    pub fn pages(&self) -> Result<Option<Pages>> {
        let Some((path, frames, frame_bytes, shipped)) = &self.log else {
            return Ok(None);
        };
        let io = |e| Error::io(format!("read the log {}", path.display()), e);
        let mut at = shipped.lock();
        if at.reader.is_none() {
            at.reader = Some(File::open(path).map_err(io)?);
        }
        let Some(log) = at.reader.as_ref() else {
            return Ok(None);
        };
        let mut header = [0u8; HEADER_BYTES as usize];
        crate::files::read_exact_at(log, &mut header, 0).map_err(io)?;
        let mut salt = [0u8; 8];
        salt.copy_from_slice(&header[16..24]);
        let from = if at.salt == salt && at.frames <= *frames {
            at.frames
        } else {
            0
        };
        if from >= *frames {
            return Ok(None);
        }
        let mut bytes = vec![0u8; ((frames - from) * frame_bytes) as usize];
        crate::files::read_exact_at(log, &mut bytes, HEADER_BYTES + from * frame_bytes)
            .map_err(io)?;
        let mut db_pages = 0;
        for frame in bytes.chunks_exact(*frame_bytes as usize) {
            if frame[8..16] != salt[..] {
                return Err(Error::Corrupt {
                    path: path.clone(),
                    detail: "a frame of the log does not belong to it".into(),
                });
            }
            let size = u32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
            if size != 0 {
                db_pages = size;
            }
        }
        at.salt = salt;
        at.frames = *frames;
        Ok(Some(Pages {
            page_size: (frame_bytes - FRAME_HEADER_BYTES) as u32,
            db_pages,
            frames: bytes,
        }))
    }

    /// Cuts the commit from the log after its sync failed: the log is
    /// truncated at the start of its last frame, so recovery, which replays
    /// only commits whose marking frame is whole, never replays it. Earlier
    /// commits were synced and stay. The caller has closed the connection
    /// without a checkpoint first.
    pub fn discard(&self, db: &Path) -> Result<()> {
        let Some(f) = &self.file else { return Ok(()) };
        if let Some(p) = &self.in_place {
            p.forget();
        }
        f.set_len(self.commit_frame_at)
            .and_then(|()| f.sync_all())
            .map_err(|e| Error::io(format!("cut a failed commit from {}", db.display()), e))
    }
}
