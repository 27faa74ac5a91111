//! Bases: snapshots inside the archive, from which restores start.
//!
//! A base is taken like `host.backup()`'s snapshot, and each worker's copy
//! is marked in the archive's sequence as it is made, under the worker's
//! file lock (or pin), so the copy holds exactly that worker's records
//! before its mark, and its next record names the mark as its `prev`. The
//! index, `base.idx`, is written last; a base without one (a host that
//! closed or died during it) is ignored and deleted by the next prune.
//!
//! ```text
//! magic (8) | first seq (u64 LE) | started, finished (i64 LE, epoch ms) | count (u64 LE)
//! entry: file (u32 LE length + bytes) | seq (u64 LE) | at (i64 LE) | BLAKE3 of the file (32)
//! | BLAKE3 of everything before (32)
//! ```

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Weak;
use std::time::{Duration, Instant};

use super::{now_ms, segment};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::files;

const MAGIC: &[u8; 8] = b"DWBASE\x00\x01";
pub const INDEX: &str = "base.idx";

/// One worker file of a base.
#[derive(Clone, Debug)]
pub struct BaseFile {
    pub file: String,
    pub seq: u64,
    pub at: i64,
    pub hash: [u8; 32],
}

/// A finished base.
#[derive(Clone, Debug)]
pub struct Base {
    pub dir: PathBuf,
    /// The sequence number taken when it began: every record before it is
    /// in it. (Its directory is named by one taken when it ended.)
    pub first_seq: u64,
    pub started: i64,
    pub finished: i64,
    pub files: Vec<BaseFile>,
}

/// Takes a base of `engine`'s directory into its archive.
pub fn take(engine: &Engine) -> Result<Base> {
    let archive = engine
        .archive
        .as_ref()
        .ok_or_else(|| Error::internal("a base taken without an archive"))?;
    let first_seq = archive.take_seq();
    let dir = archive
        .config()
        .to
        .join("base")
        .join(format!("{first_seq:016x}"));
    crate::backup::ensure_empty(&dir)?;
    let started = now_ms();
    let report = crate::backup::copy_workers(engine, &dir, Some(archive))?;
    if let Some((file, why)) = report.failed.first() {
        return Err(Error::Backup {
            detail: format!("a base could not copy {file}: {why}"),
        });
    }
    crate::backup::sync_tree(&dir)?;
    // Renamed to a number past every mark in it: what the destination's
    // names say is its last number must be, so that a process started after
    // a kill never numbers a record as one a base already holds.
    let named = archive
        .config()
        .to
        .join("base")
        .join(format!("{:016x}", archive.take_seq()));
    fs::rename(&dir, &named).map_err(|e| Error::io(format!("rename {}", dir.display()), e))?;
    files::sync_dir(&archive.config().to.join("base"))?;
    let dir = named;
    let files = report
        .files
        .into_iter()
        .map(|c| BaseFile {
            file: c.file,
            seq: c.seq,
            at: c.at,
            hash: *c.hash.as_bytes(),
        })
        .collect();
    let base = Base {
        dir: dir.clone(),
        first_seq,
        started,
        finished: now_ms(),
        files,
    };
    let tmp = dir.join(format!("{INDEX}.tmp"));
    files::write_file(&tmp, &encode(&base), true)
        .map_err(|e| Error::io(format!("write {}", tmp.display()), e))?;
    fs::rename(&tmp, dir.join(INDEX))
        .map_err(|e| Error::io(format!("rename {}", dir.display()), e))?;
    files::sync_dir(&dir)?;
    archive.counters.bases.fetch_add(1, Ordering::Relaxed);
    archive.base_finished();
    Ok(base)
}

fn encode(b: &Base) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&b.first_seq.to_le_bytes());
    out.extend_from_slice(&b.started.to_le_bytes());
    out.extend_from_slice(&b.finished.to_le_bytes());
    out.extend_from_slice(&(b.files.len() as u64).to_le_bytes());
    for f in &b.files {
        out.extend_from_slice(&(f.file.len() as u32).to_le_bytes());
        out.extend_from_slice(f.file.as_bytes());
        out.extend_from_slice(&f.seq.to_le_bytes());
        out.extend_from_slice(&f.at.to_le_bytes());
        out.extend_from_slice(&f.hash);
    }
    let hash = blake3::hash(&out);
    out.extend_from_slice(hash.as_bytes());
    out
}

fn decode(dir: &Path, bytes: &[u8]) -> Option<Base> {
    let (body, hash) = bytes.split_at(bytes.len().checked_sub(32)?);
    if blake3::hash(body).as_bytes()[..] != hash[..] || body.get(..8)? != MAGIC {
        return None;
    }
    let mut at = 8;
    let mut take = |n: usize| -> Option<&[u8]> {
        let s = body.get(at..at + n)?;
        at += n;
        Some(s)
    };
    let u64_ = |s: &[u8]| <[u8; 8]>::try_from(s).ok().map(u64::from_le_bytes);
    let first_seq = u64_(take(8)?)?;
    let started = u64_(take(8)?)? as i64;
    let finished = u64_(take(8)?)? as i64;
    let count = u64_(take(8)?)?;
    let mut files = Vec::new();
    for _ in 0..count {
        let n = u32::from_le_bytes(<[u8; 4]>::try_from(take(4)?).ok()?) as usize;
        let file = String::from_utf8(take(n)?.to_vec()).ok()?;
        let seq = u64_(take(8)?)?;
        let at = u64_(take(8)?)? as i64;
        let hash = <[u8; 32]>::try_from(take(32)?).ok()?;
        files.push(BaseFile {
            file,
            seq,
            at,
            hash,
        });
    }
    Some(Base {
        dir: dir.to_path_buf(),
        first_seq,
        started,
        finished,
        files,
    })
}

/// The finished bases of the archive at `to`, oldest first. A base whose
/// index is damaged is left out (its files cannot be trusted).
pub fn list(to: &Path) -> Vec<Base> {
    let mut out: Vec<Base> = fs::read_dir(to.join("base"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let bytes = fs::read(e.path().join(INDEX)).ok()?;
            decode(&e.path(), &bytes)
        })
        .collect();
    out.sort_by_key(|b| b.first_seq);
    out
}

/// Deletes what no restore within `retain` needs: bases older than the
/// newest one finished before the retained window, unfinished bases, and
/// segments wholly before that base began.
pub fn prune(to: &Path, retain: Duration) -> Result<()> {
    let horizon = now_ms() - retain.as_millis() as i64;
    let bases = list(to);
    let Some(keep) = bases.iter().rev().find(|b| b.finished <= horizon) else {
        return Ok(());
    };
    let finished: Vec<PathBuf> = bases.iter().map(|b| b.dir.clone()).collect();
    for e in fs::read_dir(to.join("base"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let p = e.path();
        let older = bases
            .iter()
            .any(|b| b.dir == p && b.first_seq < keep.first_seq);
        let unfinished = !finished.contains(&p)
            && e.file_name()
                .to_str()
                .and_then(|n| u64::from_str_radix(n, 16).ok())
                .is_some_and(|seq| seq < keep.first_seq);
        if older || unfinished {
            fs::remove_dir_all(&p).map_err(|e| Error::io(format!("remove {}", p.display()), e))?;
        }
    }
    for (_, last, path) in segment::list(to) {
        if last < keep.first_seq {
            fs::remove_file(&path)
                .map_err(|e| Error::io(format!("remove {}", path.display()), e))?;
        }
    }
    Ok(())
}

/// Takes a base now and then every `base_every`, pruning after each, until
/// the host closes ([`super::Archive::stop_bases`]). Holds the engine only
/// while it works.
pub fn schedule(engine: Weak<Engine>) -> Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("durable-archive-base".into())
        .spawn(move || {
            let mut next = Instant::now();
            loop {
                let Some(e) = engine.upgrade() else { return };
                if e.check_open().is_err() || e.archive.as_ref().is_some_and(|a| a.stopping()) {
                    return;
                }
                if Instant::now() >= next {
                    let Some(archive) = e.archive.as_ref() else {
                        return;
                    };
                    let out =
                        take(&e).and_then(|_| prune(&archive.config().to, archive.config().retain));
                    if let Err(err) = out {
                        // A base given up at close is no failure.
                        if e.check_open().is_ok() && !archive.stopping() {
                            *archive.failure.lock() = Some(format!("base: {err}"));
                        }
                    }
                    next = Instant::now() + archive.config().base_every;
                }
                drop(e);
                std::thread::sleep(Duration::from_millis(100));
            }
        })
        .map_err(|e| Error::io("start the archive's base thread", e))
}
