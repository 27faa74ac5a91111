//! Snapshots of a durable directory, taken while it serves, and their restore.
//!
//! A snapshot is a directory laid out as a durable one: the catalog and every
//! worker file at the path it has there, each a whole database file as of one
//! of its commits. The manifest that lists them (with each file's size and
//! BLAKE3 hash) and marks the snapshot complete is written last, by
//! `js/tools/backup.js`.
//!
//! Each file is consistent on its own; the snapshot is not one instant across
//! workers. A worker with a handle is copied through it, holding its file for
//! the copy (its commits wait; its calls do not, until one needs a commit);
//! one without is copied from the disk with its path pinned (see
//! [`crate::handles`]). Copies are not synced one by one: one `syncfs` at the
//! end makes them all durable before the manifest is written (Linux; each file
//! and directory is synced elsewhere).
//!
//! A restore checks every file against the manifest and with SQLite's
//! `integrity_check`, and reads who it belongs to; a file that fails is left
//! out and named, and the rest are restored. The catalog is rebuilt from the
//! restored files, as `repair` would.

use std::fs;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

use rusqlite::OptionalExtension;

use crate::catalog::{Catalog, Op, Reply};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::files;
use crate::handles::Claim;
use crate::layout::{self, REGISTRY_FILE};
use crate::object::file::ObjectFile;
use crate::sqlite::{self, Durability};
use crate::store::WorkerFile;

/// How long a copy waits for a worker's written commit to be synced. A sync
/// takes tens to hundreds of microseconds; one that takes this long is a
/// device in trouble, which a snapshot should report rather than wait out.
pub(crate) const UNSYNCED_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// A copy that waited [`UNSYNCED_WAIT`] for `what` of the file at `path`.
pub(crate) fn waited_too_long(path: &Path, what: &str) -> Error {
    Error::Backup {
        detail: format!(
            "{} has had {what} for over {} s",
            path.display(),
            UNSYNCED_WAIT.as_secs()
        ),
    }
}

/// Files copied or checked at once.
const THREADS: usize = 4;

/// The copy threads' nice value (Linux).
#[cfg(target_os = "linux")]
const COPY_NICE: libc::c_int = 10;

/// Each copy is synced by itself where there is no `syncfs`.
const SYNC_EACH: bool = !cfg!(target_os = "linux");

/// What copying one worker's file through its handle found.
pub enum Image<T> {
    Copied(T),
    /// The worker has no file (it was only read, or it was deleted).
    NoFile,
    /// The handle closed before the copy; the file's current handle, if any, has it.
    Closed,
    /// A commit is written and not synced yet: copied after its sync.
    Unsynced,
}

/// One file of a snapshot: its path inside it (`/`-separated), size and hash.
pub struct Copied {
    pub file: String,
    pub size: u64,
    pub hash: blake3::Hash,
    /// In an archive's base: the sequence number the copy was marked at, and when.
    pub seq: u64,
    pub at: i64,
}

/// What a snapshot or a restore did: the files it wrote, and those it could
/// not, each with the reason.
#[derive(Default)]
pub struct Report {
    pub files: Vec<Copied>,
    pub failed: Failed,
}

/// Copies `engine`'s directory into `dest`, which must not exist or be empty.
pub fn snapshot(engine: &Engine, dest: &Path) -> Result<Report> {
    engine.check_open()?;
    ensure_empty(dest)?;
    let catalog = match engine.catalog_blocking(Op::Image)? {
        Reply::Image(bytes) => bytes,
        _ => {
            return Err(Error::internal(
                "the catalog answered a snapshot with no image",
            ))
        }
    };
    let mut report = Report::default();
    report.files.push(write_out(
        &dest.join(REGISTRY_FILE),
        REGISTRY_FILE,
        &catalog,
    )?);
    let copied = copy_workers(engine, dest, None)?;
    report.files.extend(copied.files);
    report.failed = copied.failed;
    sync_tree(dest)?;
    Ok(report)
}

/// Copies every worker file of `engine` into `dest`, at the same paths.
/// With `marks`, each copy is marked in the archive as it is made (a base:
/// [`crate::archive::base`]), and a host that closes meanwhile stops it
/// (a base, only once its process has finished another).
pub(crate) fn copy_workers(
    engine: &Engine,
    dest: &Path,
    marks: Option<&crate::archive::Archive>,
) -> Result<Report> {
    let names = worker_files(engine.dir());
    let copied = in_parallel(&names, |name: &String| {
        engine.check_open()?;
        if marks.is_some_and(|a| a.abandons_bases()) {
            return Err(Error::Closed);
        }
        // Joined part by part, as `layout::worker_path` does: the handles are
        // found by the path's text.
        let src = name
            .split('/')
            .fold(engine.dir().to_path_buf(), |p, part| p.join(part));
        let dst = dest.join(name);
        let mark = || marks.map_or(0, |a| a.mark(&src));
        copy_worker(engine, &src, mark, |bytes, seq| {
            let mut c = write_out(&dst, name, bytes)?;
            if marks.is_some() {
                c.seq = seq;
                c.at = crate::archive::now_ms();
            }
            Ok(c)
        })
    });
    let mut report = Report::default();
    for (name, out) in names.iter().zip(copied) {
        match out {
            Ok(Some(c)) => report.files.push(c),
            Ok(None) => {}
            Err(Error::Closed) => return Err(Error::Closed),
            Err(e) => report.failed.push((name.clone(), e.to_string())),
        }
    }
    Ok(report)
}

/// Copies the file at `src` through `copy`, with the archive's `mark` taken
/// while the file is held: through its handle if one is alive, or with the
/// path pinned. `None` when there is no file.
fn copy_worker<T>(
    engine: &Engine,
    src: &Path,
    mark: impl Fn() -> u64,
    copy: impl Fn(&[u8], u64) -> Result<T>,
) -> Result<Option<T>> {
    let started = std::time::Instant::now();
    loop {
        // A host closing stops a copy waiting for a worker.
        engine.check_open()?;
        match engine.handles.claim(src) {
            Claim::Object(object) => match object.with_image(&mark, &copy)? {
                Image::Copied(out) => return Ok(Some(out)),
                Image::NoFile => return Ok(None),
                // Closed, or broken by a failed sync: it leaves the map
                // once its file is as it stays (a failing device's cut may
                // take a while).
                _ if started.elapsed() > UNSYNCED_WAIT => {
                    return Err(waited_too_long(src, "a closing handle"))
                }
                _ => std::thread::sleep(std::time::Duration::from_micros(50)),
            },
            Claim::Handle(worker) => match worker.with_image(|bytes| copy(bytes, mark()))? {
                Image::Copied(out) => return Ok(Some(out)),
                Image::NoFile => return Ok(None),
                // Closing now; it leaves the map as soon as it has closed.
                Image::Closed => std::thread::yield_now(),
                Image::Unsynced if started.elapsed() > UNSYNCED_WAIT => {
                    return Err(waited_too_long(src, "a commit waiting for its sync"))
                }
                Image::Unsynced => std::thread::sleep(std::time::Duration::from_micros(50)),
            },
            Claim::Pinned(_pin) => {
                return match closed_image(src, engine.durability, |bytes| copy(bytes, mark()))? {
                    Image::Copied(out) => Ok(Some(out)),
                    _ => Ok(None),
                }
            }
        }
    }
}

/// Hands `copy` the bytes of a worker file no connection holds.
pub(crate) fn closed_image<T>(
    path: &Path,
    durability: Durability,
    copy: impl FnOnce(&[u8]) -> Result<T>,
) -> Result<Image<T>> {
    let [wal, ..] = layout::sidecars(path);
    // A log with frames (a crash before the checkpoint at close): read
    // through SQLite, which applies them. An empty one is the norm. Read, it
    // is checkpointed: a Durable Object's file that may never have been
    // synced is made durable first, as its load would.
    if fs::metadata(&wal).is_ok_and(|m| m.len() > 0) && path.exists() {
        crate::object::file::make_durable_if_replayed(path)?;
        return WorkerFile::with_image_of(path, durability, copy).map(Image::Copied);
    }
    match fs::read(path) {
        Ok(bytes) => copy(&bytes).map(Image::Copied),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Image::NoFile),
        Err(e) => Err(Error::io(format!("read {}", path.display()), e)),
    }
}

/// Writes one file of a snapshot or restore and says what it holds.
pub(crate) fn write_out(dst: &Path, name: &str, bytes: &[u8]) -> Result<Copied> {
    if let Some(parent) = dst.parent() {
        files::create_private_dirs(parent)
            .map_err(|e| Error::io(format!("create {}", parent.display()), e))?;
    }
    files::write_file_then(dst, bytes, SYNC_EACH, start_writeback)
        .map_err(|e| Error::io(format!("write {}", dst.display()), e))?;
    Ok(Copied {
        file: name.to_string(),
        size: bytes.len() as u64,
        hash: blake3::hash(bytes),
        seq: 0,
        at: 0,
    })
}

/// Starts writing a copy to the device now (Linux), so that the `syncfs` at
/// the end finds little left: a copy flushed in one burst at the end makes
/// every commit's sync wait behind it.
#[cfg(target_os = "linux")]
fn start_writeback(f: &fs::File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid descriptor, open for the call's whole length.
    let _ = unsafe { libc::sync_file_range(f.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn start_writeback(_f: &fs::File) -> std::io::Result<()> {
    Ok(())
}

/// The worker files under `dir`, as `class/xx/hash.db`, sorted.
fn worker_files(dir: &Path) -> Vec<String> {
    let entries = |d: &Path| -> Vec<(String, PathBuf, bool)> {
        fs::read_dir(d)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let is_dir = e.file_type().ok()?.is_dir();
                Some((e.file_name().into_string().ok()?, e.path(), is_dir))
            })
            .collect()
    };
    let mut out = Vec::new();
    for (class, class_dir, is_dir) in entries(dir) {
        if !is_dir {
            continue;
        }
        for (shard, shard_dir, is_dir) in entries(&class_dir) {
            if !is_dir {
                continue;
            }
            for (name, _, is_dir) in entries(&shard_dir) {
                if !is_dir && worker_file_name(&shard, &name) {
                    out.push(format!("{class}/{shard}/{name}"));
                }
            }
        }
    }
    out.sort();
    out
}

/// `xx` and `<64 hex digits>.db`, the first two digits `xx` ([`layout::worker_path`]).
fn worker_file_name(shard: &str, name: &str) -> bool {
    let hex = |s: &str| s.bytes().all(|b| b.is_ascii_hexdigit());
    name.len() == 67
        && name.ends_with(".db")
        && hex(&name[..64])
        && shard.len() == 2
        && name.starts_with(shard)
}

/// Whether `rel` is a path this module writes: the catalog, or a worker file
/// under its class; never one that leaves the directory.
pub(crate) fn valid_name(rel: &str) -> bool {
    if rel == REGISTRY_FILE {
        return true;
    }
    let parts: Vec<&str> = rel.split('/').collect();
    let [class, shard, name] = parts[..] else {
        return false;
    };
    let plain = Path::new(class)
        .components()
        .all(|c| matches!(c, Component::Normal(_)));
    plain && !class.is_empty() && !class.contains('\\') && worker_file_name(shard, name)
}

/// Runs `f` over `items` on up to [`THREADS`] threads; results in order.
pub(crate) fn in_parallel<I: Sync, T: Send>(items: &[I], f: impl Fn(&I) -> T + Sync) -> Vec<T> {
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<T>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..THREADS.min(items.len()) {
            s.spawn(|| {
                yield_cpu();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let r = f(item);
                    out.lock()[i] = Some(r);
                }
            });
        }
    });
    out.into_inner().into_iter().flatten().collect()
}

/// Lowers the calling thread's CPU priority: a copy runs beside the host's
/// own threads (its JS thread, the commit threads) and should yield to them.
#[cfg(target_os = "linux")]
fn yield_cpu() {
    // SAFETY: plain system calls on the calling thread; a failure only
    // leaves its priority as it was.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, COPY_NICE);
    }
}

#[cfg(not(target_os = "linux"))]
fn yield_cpu() {}

/// Refuses a target that holds anything; makes it if it does not exist.
pub(crate) fn ensure_empty(dir: &Path) -> Result<()> {
    match fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(Error::Backup {
                    detail: format!(
                        "{} is not empty; a snapshot or restore goes into a new or empty directory",
                        dir.display()
                    ),
                });
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            return Err(Error::Backup {
                detail: format!("{} is a file, not a directory", dir.display()),
            })
        }
        Err(e) => return Err(Error::io(format!("read {}", dir.display()), e)),
    }
    files::create_dirs_synced(dir)
}

/// Makes every file written under `dir` durable.
#[cfg(target_os = "linux")]
pub(crate) fn sync_tree(dir: &Path) -> Result<()> {
    use std::os::fd::AsRawFd;
    let f = fs::File::open(dir).map_err(|e| Error::io(format!("open {}", dir.display()), e))?;
    // SAFETY: a valid descriptor, open for the call's whole length.
    if unsafe { libc::syncfs(f.as_raw_fd()) } != 0 {
        return Err(Error::io(
            format!("sync the file system of {}", dir.display()),
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

/// Each file was synced as it was written; the directories remain.
#[cfg(not(target_os = "linux"))]
pub(crate) fn sync_tree(dir: &Path) -> Result<()> {
    for entry in fs::read_dir(dir)
        .map_err(|e| Error::io(format!("read {}", dir.display()), e))?
        .flatten()
    {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            sync_tree(&entry.path())?;
        }
    }
    files::sync_dir(dir)
}

/// Files that could not be copied or restored, each with the reason.
pub type Failed = Vec<(String, String)>;

/// A restored worker: its file and who it holds (a Durable Object's id only
/// when it has an alarm, which keeps the id beside it).
pub struct Restored {
    pub file: String,
    pub class: String,
    pub id: String,
    /// Its catalog entry: `Some` for a worker, and for an object with an alarm.
    indexed: Option<Option<i64>>,
}

/// Restores the listed files (`(path, hash)`, as a manifest names them) of
/// the snapshot at `from` into `to`, which must not exist or be empty, then
/// builds its catalog from them. The catalog file itself is never restored.
pub fn restore(
    from: &Path,
    to: &Path,
    files: &[(String, String)],
    durability: Durability,
) -> Result<(Vec<Restored>, Failed)> {
    ensure_empty(to)?;
    let wanted: Vec<&(String, String)> = files.iter().filter(|(f, _)| f != REGISTRY_FILE).collect();
    let results = in_parallel(&wanted, |(name, hash)| {
        restore_one(from, to, name, hash, durability)
    });
    let mut restored = Vec::new();
    let mut failed = Vec::new();
    for ((name, _), r) in wanted.into_iter().zip(results) {
        match r {
            Ok(who) => restored.push(who),
            Err(e) => failed.push((name.clone(), e.to_string())),
        }
    }
    finish_restore(to, &restored, durability)?;
    Ok((restored, failed))
}

/// Makes the restored files durable and builds the catalog from them.
pub(crate) fn finish_restore(
    to: &Path,
    restored: &[Restored],
    durability: Durability,
) -> Result<()> {
    sync_tree(to)?;
    // Made beside the files, the catalog owes a rebuild, which this is: one
    // transaction from what the checks read, not a second scan of the files.
    let catalog = Catalog::open(to, durability)?;
    let workers = restored
        .iter()
        .filter_map(|r| Some((r.class.clone(), r.id.clone(), r.indexed?)))
        .collect();
    catalog.call_blocking(Op::Rebuild { workers })?;
    catalog.close();
    Ok(())
}

fn restore_one(
    from: &Path,
    to: &Path,
    name: &str,
    hash: &str,
    durability: Durability,
) -> Result<Restored> {
    let damaged = |detail: String| Error::Backup { detail };
    if !valid_name(name) {
        return Err(damaged(format!("{name:?} is not a worker file's path")));
    }
    let src = from.join(name);
    let bytes = fs::read(&src).map_err(|e| Error::io(format!("read {}", src.display()), e))?;
    if blake3::hash(&bytes).to_hex().as_str() != hash {
        return Err(damaged(format!(
            "{} does not match the manifest's hash: the snapshot is damaged",
            src.display()
        )));
    }
    let dst = to.join(name);
    write_out(&dst, name, &bytes)?;
    let checked = check(to, &dst, name, durability);
    if checked.is_err() {
        let _ = files::remove_files(&dst);
    }
    checked
}

/// Checks a restored file whole, and reads whose it is, on one connection.
pub(crate) fn check(
    root: &Path,
    path: &Path,
    name: &str,
    durability: Durability,
) -> Result<Restored> {
    let class = name.split('/').next().unwrap_or_default().to_string();
    let conn = sqlite::open(path, false)?;
    let ctx = |e| Error::sqlite("check", path, e);
    conn.query_row("PRAGMA locking_mode=EXCLUSIVE", [], |_| Ok(()))
        .map_err(ctx)?;
    let verdict: String = conn
        .query_row("PRAGMA integrity_check(1)", [], |r| r.get(0))
        .map_err(ctx)?;
    if verdict != "ok" {
        return Err(Error::Corrupt {
            path: path.to_path_buf(),
            detail: format!("integrity_check: {verdict}"),
        });
    }
    if class.starts_with(crate::repair::OBJECT_CLASS_PREFIX) {
        drop(conn);
        let found = ObjectFile::indexed_alarm(path, durability)?;
        return Ok(Restored {
            file: name.to_string(),
            class,
            id: found.as_ref().map(|(id, _)| id.clone()).unwrap_or_default(),
            indexed: found.map(|(_, at)| Some(at)),
        });
    }
    let meta = |k: &str| -> rusqlite::Result<Option<String>> {
        conn.query_row("SELECT v FROM meta WHERE k = ?1", [k], |r| r.get(0))
            .optional()
    };
    let (who, id, earliest) = (|| {
        let at: Option<i64> = conn.query_row("SELECT min(at) FROM alarms", [], |r| r.get(0))?;
        Ok::<_, rusqlite::Error>((meta("class")?, meta("id")?, at))
    })()
    .map_err(|e| Error::Corrupt {
        path: path.to_path_buf(),
        detail: format!("it is not a worker file: {e}"),
    })?;
    let (Some(who), Some(id)) = (who, id) else {
        return Err(Error::Corrupt {
            path: path.to_path_buf(),
            detail: "it has no stored class and id".into(),
        });
    };
    if who != class || layout::worker_path(root, &who, &id) != path {
        return Err(Error::Corrupt {
            path: path.to_path_buf(),
            detail: format!("it holds {who}:{id}, whose file lives elsewhere"),
        });
    }
    Ok(Restored {
        file: name.to_string(),
        class,
        id,
        indexed: Some(earliest),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::tests::set;
    use crate::engine::Worker;

    /// Whether the worker's image holds `key`, read from a copy of it.
    fn image_has(w: &Worker, key: &str, at: &Path) -> Result<Option<bool>> {
        let copied = w.with_image(|bytes| {
            files::write_file(at, bytes, false).map_err(|e| Error::io("write", e))
        })?;
        if !matches!(copied, Image::Copied(())) {
            return Ok(None);
        }
        let conn = sqlite::open(at, false)?;
        conn.execute_batch("PRAGMA locking_mode=EXCLUSIVE")
            .map_err(|e| Error::sqlite("test", at, e))?;
        let n: i64 = conn
            .query_row("SELECT count(*) FROM kv WHERE key = ?1", [key], |r| {
                r.get(0)
            })
            .map_err(|e| Error::sqlite("test", at, e))?;
        Ok(Some(n == 1))
    }

    #[test]
    fn a_commit_is_copied_only_once_synced_and_a_copy_sees_the_log() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let e = Arc::new(Engine::open(&tmp.path().join("d"), Durability::Full)?);
        let w = Arc::new(Worker::new(e.clone(), "Cart".into(), "s".into()));
        e.handles.insert(&w);
        w.write(&set("a", b"1"))?;
        w.write(&set("b", b"1"))?; // opens the file: later commits go to its log
        let pending = w.write_now(&set("c", b"1"))?.ok_or(Error::Closed)?;
        let copy = tmp.path().join("copy.db");
        assert_eq!(image_has(&w, "c", &copy)?, None, "not while unsynced");
        w.settle(pending)?;
        assert_eq!(
            image_has(&w, "c", &copy)?,
            Some(true),
            "its log's frames are copied"
        );
        Ok(())
    }
}
