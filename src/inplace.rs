//! A log rewritten in place, synced without writing its inode.
//!
//! Why: ext4 without a journal writes a file's inode-table block, and waits
//! for it, in every `fsync` and `fdatasync` (`ext4_fsync_nojournal`), even
//! when nothing but the file's timestamps changed; and each write of a log
//! moves its modification time. So a commit's sync took three round trips to
//! the device (the data, the inode's block, the cache flush) where two make
//! it durable. With a journal, `fdatasync` already leaves out an inode whose
//! timestamps alone changed, and other file systems do as they do: this
//! module changes nothing there.
//!
//! Guarantee: [`InPlace::sync`] returns only once the log's bytes up to the
//! commit's end are on the device. When those bytes lie inside the part of
//! the log a whole `fdatasync` has made durable since this connection opened
//! it (its size, and blocks written and allocated: no hole, no unwritten
//! extent), they need nothing of the inode: the commit is written out with
//! `sync_file_range` (its pages written and waited for) and the device's
//! cache flushed by `fdatasync` of a directory on the same file system (a
//! clean inode: ext4 only sends the flush). Anything else, a log that grew
//! above it first, takes a whole `fdatasync` of the log, which then extends
//! that part. SQLite does not cut a worker's log while its connection is
//! open (it empties it at close; this crate sets no `journal_size_limit`),
//! and a log found shorter than that part is synced whole all the same.
//!
//! A log grows until its first checkpoint (about 1.6 MB), and each commit
//! that grows it would take the inode. So the writer keeps zeros written
//! ahead of the log's end ([`InPlace::extend`]), as much as the log holds
//! up to [`AHEAD`]: a whole sync makes them durable with the commit, and the
//! commits after it rewrite them in place. SQLite reads a log's frames up to
//! the first that is not valid, which zeros never are; the log is emptied
//! at close as before.

use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One log's state: the directory to flush through, and how much of the log
/// a whole sync has made durable.
pub struct InPlace {
    flush: Arc<File>,
    durable: AtomicU64,
    /// How far the zeros written ahead of the log reach.
    ahead: AtomicU64,
}

/// The most zeros written ahead of a growing log at a time.
pub const AHEAD: u64 = 64 << 10;
/// Zeros for [`InPlace::extend`]: it writes at most `AHEAD` and the page
/// its end is rounded to.
static ZEROS: [u8; AHEAD as usize + 4096] = [0; AHEAD as usize + 4096];

impl InPlace {
    /// Makes `log`'s bytes up to `end` durable. `Ok(true)` when that took no
    /// write of the inode.
    pub fn sync(&self, log: &File, end: u64) -> io::Result<bool> {
        let len = imp::len(log)?;
        let durable = self.durable.load(Ordering::Acquire);
        if end <= durable && len >= durable {
            imp::write_out(log, end)?;
            self.flush.sync_data()?;
            return Ok(true);
        }
        log.sync_data()?;
        let whole = imp::first_hole(log)?.min(len);
        self.durable.store(whole, Ordering::Release);
        Ok(false)
    }

    /// Writes zeros ahead of the log when its commit ending at `end` grew
    /// it past those written before (a commit that is synced whole anyway).
    /// Only with the log's connection held: nothing else writes it meanwhile.
    pub fn extend(&self, log: &File, end: u64) -> io::Result<()> {
        if end <= self.ahead.load(Ordering::Acquire) {
            return Ok(());
        }
        let step = end.clamp(4096, AHEAD);
        let len = imp::len(log)?;
        let to = (end + step).next_multiple_of(4096);
        if to > len {
            let n = (to - len).min(ZEROS.len() as u64) as usize;
            imp::write_at(log, &ZEROS[..n], len)?;
        }
        self.ahead.store(to, Ordering::Release);
        Ok(())
    }

    /// The log was cut: nothing of it counts as durable any more.
    pub fn forget(&self) {
        self.durable.store(0, Ordering::Release);
        self.ahead.store(0, Ordering::Release);
    }
}

/// How `log` (the open log file at `path`) is synced: `Some` on ext4 without
/// a journal, where a directory of the file system can be opened to flush
/// through.
pub fn of(log: &File, path: &std::path::Path) -> Option<InPlace> {
    imp::flush_dir(log, path).map(|flush| InPlace {
        flush,
        durable: AtomicU64::new(0),
        ahead: AtomicU64::new(0),
    })
}

#[cfg(target_os = "linux")]
mod imp {
    use std::collections::HashMap;
    use std::fs::File;
    use std::io;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::MetadataExt;
    use std::path::Path;
    use std::sync::{Arc, Weak};

    use parking_lot::Mutex;

    const EXT4_SUPER_MAGIC: i64 = 0xEF53;

    /// Per file system (device number): the directory flushed through while
    /// a log uses it (weak: closed with the last, so no unmount finds it
    /// busy), or `None` where syncs stay whole.
    static DEVICES: Mutex<Option<HashMap<u64, Option<Weak<File>>>>> = Mutex::new(None);

    pub fn len(f: &File) -> io::Result<u64> {
        seek(f, 0, libc::SEEK_END)
    }

    /// Where the first hole at or after the start is (the size if none):
    /// ext4 reports unwritten extents as holes too.
    pub fn first_hole(f: &File) -> io::Result<u64> {
        seek(f, 0, libc::SEEK_HOLE)
    }

    // Through lseek rather than fstat: a stat marks the timestamps as seen,
    // and the next write then moves them at a finer grain.
    fn seek(f: &File, at: i64, whence: libc::c_int) -> io::Result<u64> {
        // SAFETY: a plain call on a descriptor `f` owns; this descriptor's
        // offset is used by nothing else (it is only synced through).
        let r = unsafe { libc::lseek(f.as_raw_fd(), at, whence) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(r as u64)
    }

    pub fn write_at(f: &File, bytes: &[u8], at: u64) -> io::Result<()> {
        std::os::unix::fs::FileExt::write_all_at(f, bytes, at)
    }

    pub fn write_out(f: &File, end: u64) -> io::Result<()> {
        let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE
            | libc::SYNC_FILE_RANGE_WRITE
            | libc::SYNC_FILE_RANGE_WAIT_AFTER;
        // SAFETY: a plain call on a descriptor `f` owns.
        let r = unsafe { libc::sync_file_range(f.as_raw_fd(), 0, end as libc::off64_t, flags) };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    pub fn flush_dir(log: &File, path: &Path) -> Option<Arc<File>> {
        let dev = log.metadata().ok()?.dev();
        let mut devices = DEVICES.lock();
        let known = devices.get_or_insert_with(HashMap::new);
        match known.get(&dev) {
            Some(None) => return None,
            Some(Some(weak)) => {
                if let Some(dir) = weak.upgrade() {
                    return Some(dir);
                }
            }
            None => {}
        }
        if !unjournaled_ext4(log, dev) {
            known.insert(dev, None);
            return None;
        }
        let dir = Arc::new(top_dir(path, dev)?);
        known.insert(dev, Some(Arc::downgrade(&dir)));
        Some(dir)
    }

    /// Whether `f` lies on ext4 mounted without a journal: ext4 lists a
    /// journal's `data=` mode among a mount's options whenever it has one.
    fn unjournaled_ext4(f: &File, dev: u64) -> bool {
        // SAFETY: `st` is plain data the call fills.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        // SAFETY: a descriptor `f` owns, and a buffer of the right type.
        if unsafe { libc::fstatfs(f.as_raw_fd(), &mut st) } != 0
            || st.f_type as i64 != EXT4_SUPER_MAGIC
        {
            return false;
        }
        let link = format!("/sys/dev/block/{}:{}", libc::major(dev), libc::minor(dev));
        let Some(name) = std::fs::read_link(link)
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_owned()))
        else {
            return false;
        };
        let options = Path::new("/proc/fs/ext4").join(name).join("options");
        match std::fs::read_to_string(options) {
            Ok(text) => !text.lines().any(|l| l.starts_with("data=")),
            Err(_) => false,
        }
    }

    /// The highest directory above `path` on the same file system that can
    /// be opened: the one least likely to share an inode-table block with a
    /// worker's files, whose dirty block the flush would write too.
    fn top_dir(path: &Path, dev: u64) -> Option<File> {
        let start = path.parent()?.canonicalize().ok()?;
        let same: Vec<&Path> = start
            .ancestors()
            .take_while(|d| d.metadata().map(|m| m.dev() == dev).unwrap_or(false))
            .collect();
        same.iter().rev().find_map(|d| File::open(d).ok())
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::fs::File;
    use std::io;
    use std::path::Path;
    use std::sync::Arc;

    pub fn len(_: &File) -> io::Result<u64> {
        Ok(0)
    }
    pub fn first_hole(_: &File) -> io::Result<u64> {
        Ok(0)
    }
    pub fn write_at(_: &File, _: &[u8], _: u64) -> io::Result<()> {
        Ok(())
    }
    pub fn write_out(f: &File, _: u64) -> io::Result<()> {
        f.sync_data()
    }
    pub fn flush_dir(_: &File, _: &Path) -> Option<Arc<File>> {
        None
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    fn write(f: &File, at: u64, len: usize) -> io::Result<()> {
        f.write_all_at(&vec![7u8; len], at)
    }

    /// An empty log in `dir`, flushed through `dir` whatever its file system.
    fn log_in(dir: &std::path::Path) -> io::Result<(File, InPlace)> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(dir.join("log"))?;
        let p = InPlace {
            flush: Arc::new(File::open(dir)?),
            durable: AtomicU64::new(0),
            ahead: AtomicU64::new(0),
        };
        Ok((log, p))
    }

    /// The rule, whatever file system the temporary directory is on: only
    /// bytes inside what a whole sync made durable are synced in place.
    #[test]
    fn only_a_rewrite_inside_what_a_whole_sync_made_durable_is_synced_in_place() -> io::Result<()> {
        let tmp = tempfile::tempdir()?;
        let (log, p) = log_in(tmp.path())?;
        write(&log, 0, 8192)?;
        assert!(!p.sync(&log, 8192)?, "a new log is synced whole");
        write(&log, 0, 4096)?;
        assert!(p.sync(&log, 4096)?, "a rewrite of its first block");
        write(&log, 4096, 4096)?;
        assert!(p.sync(&log, 8192)?, "a rewrite up to its end");
        write(&log, 8192, 100)?;
        assert!(!p.sync(&log, 8292)?, "it grew: whole");
        assert!(p.sync(&log, 8292)?, "and then inside");

        log.set_len(4096)?;
        write(&log, 4096, 4096)?;
        assert!(!p.sync(&log, 8192)?, "cut and grown again: whole");

        // A hole (what an extension by truncation leaves) bounds it.
        log.set_len(1 << 20)?;
        write(&log, 512 << 10, 4096)?;
        assert!(
            !p.sync(&log, (512 << 10) + 4096)?,
            "past the durable part: whole"
        );
        assert!(
            !p.sync(&log, (512 << 10) + 4096)?,
            "above a hole: whole again, the hole bounds what is durable"
        );
        assert!(p.sync(&log, 4096)?, "below the hole, in place");

        p.forget();
        assert!(!p.sync(&log, 4096)?, "forgotten (a commit cut): whole");
        Ok(())
    }

    /// Zeros written ahead of a growing log make its next commits rewrites.
    #[test]
    fn zeros_ahead_of_a_growing_log_make_its_next_commits_rewrites() -> io::Result<()> {
        let tmp = tempfile::tempdir()?;
        let (log, p) = log_in(tmp.path())?;
        let frame = 4120;
        let mut whole = 0;
        let mut end = 32;
        for _ in 0..400 {
            write(&log, end, frame as usize)?;
            end += frame;
            p.extend(&log, end)?;
            whole += u32::from(!p.sync(&log, end)?);
            assert!(imp::len(&log)? >= end);
        }
        let len = imp::len(&log)?;
        assert!(
            len >= end && len <= end + AHEAD + 4096,
            "{len} bytes for {end}"
        );
        // Doubling to 64 KiB, then one every 64 KiB (16 frames or so).
        assert!(whole <= 32, "{whole} of 400 synced whole");
        let mut bytes = vec![1u8; (len - end) as usize];
        log.read_exact_at(&mut bytes, end)?;
        assert!(bytes.iter().all(|b| *b == 0), "zeros past the log's end");
        // A commit already inside the zeros writes none.
        p.extend(&log, end - frame)?;
        assert_eq!(imp::len(&log)?, len);
        Ok(())
    }

    /// Elsewhere than ext4 logs are synced whole. (Ext4 with and without a
    /// journal: the power-cut tests on ext4 images check each.)
    #[test]
    fn a_log_on_tmpfs_is_synced_whole() -> io::Result<()> {
        let shm = std::path::Path::new("/dev/shm");
        if !shm.is_dir() {
            eprintln!("skipped: no /dev/shm");
            return Ok(());
        }
        let f = tempfile::tempfile_in(shm)?;
        assert!(of(&f, &shm.join("log")).is_none());
        Ok(())
    }
}
