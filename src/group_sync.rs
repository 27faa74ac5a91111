//! One `syncfs(2)` shared by the new workers made at the same time.
//!
//! A new worker's file is written aside and renamed in, and both the file and
//! its name must be on the device before its first write is reported, the
//! file first. Synced one by one, that is two device flushes per worker (the
//! file, then its directory), and the directories' 256-way fan-out keeps a
//! batch's workers apart, so a directory's sync is rarely shared. `syncfs`
//! writes back every dirty page, inode and directory block of the file system
//! and flushes the device: the workers that reach a step while one runs wait
//! for the next, which covers them all (a group commit across files). Each
//! creation takes two steps, its data and then its name.
//!
//! Only where `syncfs` is known to reach the device and costs about one log
//! flush: ext4 and xfs. A FUSE or network mount may return from `syncfs`
//! having synced nothing of its server's; on btrfs and f2fs it commits a
//! whole transaction or checkpoint, where their `fsync` has a cheaper log of
//! its own. Those keep per-file syncs. A `syncfs` carries every other
//! process's dirty data on the same file system with it: one that fails
//! sends creations back to per-file syncs for good, and two in a row slower
//! than [`SLOW`] for [`BACKOFF`]. (One alone is often the first, which
//! writes back whatever was dirty before.)

use std::fs::File;
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// A `syncfs` slower than this means other writers share the file system:
/// per-file syncs then cost a creation less than waiting for theirs.
pub const SLOW: Duration = Duration::from_millis(50);
/// How long creations use per-file syncs after a slow `syncfs`.
pub const BACKOFF: Duration = Duration::from_secs(10);

type SyncFn = dyn Fn(&File) -> io::Result<()> + Send + Sync;

pub struct GroupSync {
    dir: File,
    sync: Box<SyncFn>,
    state: Mutex<State>,
    done: Condvar,
}

#[derive(Default)]
struct State {
    /// Generations: the last `syncfs` started, and the last finished.
    started: u64,
    finished: u64,
    running: bool,
    /// The last generation that failed (0: none).
    failed: u64,
    /// Set after a failure: every later caller syncs its own file.
    off: bool,
    /// Whether the last `syncfs` was slower than [`SLOW`].
    slow: bool,
    slow_until: Option<Instant>,
}

impl GroupSync {
    /// A group sync for the file system holding `dir`, or `None` where
    /// `syncfs` is not known to reach the device.
    pub fn open(dir: &Path) -> Option<Self> {
        let dir = File::open(dir).ok()?;
        if !reaches_device(&dir) {
            return None;
        }
        Some(Self::with(dir, Box::new(syncfs)))
    }

    fn with(dir: File, sync: Box<SyncFn>) -> Self {
        GroupSync {
            dir,
            sync,
            state: Mutex::new(State::default()),
            done: Condvar::new(),
        }
    }

    /// How many `syncfs` calls have been made.
    pub fn count(&self) -> u64 {
        self.state.lock().started
    }

    /// Makes everything written to the file system before the call durable,
    /// sharing the device's flush with every concurrent caller. An error
    /// (also when group syncs are off) means the caller must sync its own
    /// files: nothing is known to be durable.
    pub fn sync(&self) -> io::Result<()> {
        let mut s = self.state.lock();
        if s.off || s.slow_until.is_some_and(|t| Instant::now() < t) {
            return Err(io::Error::other("group syncs are off"));
        }
        // The first syncfs to start after this call covers its writes.
        let target = s.started + 1;
        loop {
            if s.finished >= target {
                // Also an error when a later one failed: a spurious fallback,
                // never a missed one.
                return if s.failed >= target {
                    Err(io::Error::other("a syncfs failed"))
                } else {
                    Ok(())
                };
            }
            if s.running {
                self.done.wait(&mut s);
                continue;
            }
            s.running = true;
            s.started += 1;
            let generation = s.started;
            drop(s);
            let began = Instant::now();
            let result = (self.sync)(&self.dir);
            let took = began.elapsed();
            s = self.state.lock();
            s.running = false;
            s.finished = generation;
            if result.is_err() {
                s.failed = generation;
                s.off = true;
            }
            if took > SLOW && s.slow {
                s.slow_until = Some(Instant::now() + BACKOFF);
            }
            s.slow = took > SLOW;
            self.done.notify_all();
        }
    }
}

/// `syncfs`, then an `fsync` of the directory for one more device flush: on
/// ext4 without a journal, `syncfs` flushes the device before it writes the
/// metadata buffers (inode tables, directory blocks) and not after, so a
/// power cut right after it can lose a name or a size it reported durable.
/// (An ext4 image on the power-cut mount of `__test__/powercut`: after every
/// `syncfs` a write was still unflushed, and a cut then damaged files in one
/// trial of five; after `syncfs` and an `fsync`, none in five.) There, an
/// `fsync` of any file ends with a flush; with a journal it costs one at most.
#[cfg(target_os = "linux")]
fn syncfs(dir: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: the descriptor is open for as long as `dir` lives.
    if unsafe { libc::syncfs(dir.as_raw_fd()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    dir.sync_all()
}

#[cfg(target_os = "linux")]
fn reaches_device(dir: &File) -> bool {
    use std::os::fd::AsRawFd;
    const EXT4: i64 = 0xEF53;
    const XFS: i64 = 0x5846_5342;
    // SAFETY: an all-zero statfs is a valid value to be overwritten.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor and a pointer to a statfs we own.
    if unsafe { libc::fstatfs(dir.as_raw_fd(), &mut st) } != 0 {
        return false;
    }
    #[allow(clippy::unnecessary_cast)]
    let kind = st.f_type as i64;
    matches!(kind, EXT4 | XFS) && reports_errors()
}

/// Whether `syncfs` reports a failed writeback: Linux 5.8 and later.
#[cfg(target_os = "linux")]
fn reports_errors() -> bool {
    // SAFETY: an all-zero utsname is a valid value to be overwritten.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: a pointer to a utsname we own.
    if unsafe { libc::uname(&mut u) } != 0 {
        return false;
    }
    let release: String = u
        .release
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8 as char)
        .collect();
    let mut parts = release
        .split(['.', '-'])
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (5, 8)
}

#[cfg(not(target_os = "linux"))]
fn syncfs(_dir: &File) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

#[cfg(not(target_os = "linux"))]
fn reaches_device(_dir: &File) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Barrier};

    fn counting(delay: Duration, calls: Arc<AtomicUsize>) -> GroupSync {
        let dir = File::open(std::env::temp_dir()).expect("temp dir");
        GroupSync::with(
            dir,
            Box::new(move |_| {
                calls.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(delay);
                Ok(())
            }),
        )
    }

    #[test]
    fn concurrent_callers_share_syncs() {
        let calls = Arc::new(AtomicUsize::new(0));
        let group = Arc::new(counting(Duration::from_millis(20), calls.clone()));
        let start = Arc::new(Barrier::new(16));
        let threads: Vec<_> = (0..16)
            .map(|_| {
                let (group, start) = (group.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    group.sync()
                })
            })
            .collect();
        for t in threads {
            assert!(t.join().expect("thread").is_ok());
        }
        // One to start, one more for everyone who arrived while it ran.
        let n = calls.load(Ordering::SeqCst);
        assert!((1..=2).contains(&n), "{n} syncs for 16 callers");
    }

    #[test]
    fn a_caller_during_a_sync_waits_for_the_next() {
        let calls = Arc::new(AtomicUsize::new(0));
        let group = Arc::new(counting(Duration::from_millis(50), calls.clone()));
        let first = {
            let group = group.clone();
            std::thread::spawn(move || group.sync())
        };
        while calls.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        // The first syncfs started before this call's writes: not enough.
        assert!(group.sync().is_ok());
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        assert!(first.join().expect("thread").is_ok());
    }

    #[test]
    fn a_failure_turns_group_syncs_off() {
        let dir = File::open(std::env::temp_dir()).expect("temp dir");
        let group = GroupSync::with(dir, Box::new(|_| Err(io::Error::other("EIO"))));
        assert!(group.sync().is_err());
        assert!(group.sync().is_err());
        assert!(group.state.lock().off);
    }

    #[test]
    fn two_slow_syncs_back_off() {
        let calls = Arc::new(AtomicUsize::new(0));
        let group = counting(SLOW + Duration::from_millis(5), calls.clone());
        assert!(group.sync().is_ok());
        assert!(group.sync().is_ok(), "one slow sync alone is not a trend");
        assert!(group.sync().is_err(), "within the backoff: per-file syncs");
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn tmpfs_is_not_trusted() {
        if let Ok(dir) = File::open("/dev/shm") {
            assert!(!reaches_device(&dir));
        }
    }
}
