//! Durable steps on the file system: directories made private and synced
//! into their parents, a directory's entries synced, a worker's file removed
//! with its sidecars, a new file written whole.

use std::fs;
use std::path::Path;

use crate::error::{Error, Result};
use crate::layout;

/// Removes a worker's file and its sidecars, then syncs their directory if
/// anything was removed, so a removal once returned stays done after a power
/// loss (an unlink is a change of the directory, lost unless it is synced);
/// true if the file existed.
pub fn remove_files(path: &Path) -> Result<bool> {
    let existed = remove_if_present(path)?;
    let removed = remove_sidecars(path)? || existed;
    if removed {
        if let Some(dir) = path.parent() {
            sync_dir(dir)?;
        }
    }
    Ok(existed)
}

/// Removes the files SQLite may keep beside `path` (not `path` itself, and
/// without syncing their directory); true if any was there.
pub fn remove_sidecars(path: &Path) -> Result<bool> {
    let mut removed = false;
    for side in layout::sidecars(path) {
        removed |= remove_if_present(&side)?;
    }
    Ok(removed)
}

fn remove_if_present(path: &Path) -> Result<bool> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io(format!("remove {}", path.display()), e)),
    }
}

/// Writes `bytes` as the whole of the file at `path` (created with
/// [`layout::FILE_MODE`], or truncated), synced when `sync` is set.
pub fn write_file(path: &Path, bytes: &[u8], sync: bool) -> std::io::Result<()> {
    write_file_then(path, bytes, sync, |_| Ok(()))
}

/// [`write_file`], then `after` with the file still open.
pub fn write_file_then(
    path: &Path,
    bytes: &[u8],
    sync: bool,
    after: impl FnOnce(&fs::File) -> std::io::Result<()>,
) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, layout::FILE_MODE);
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    if sync {
        file.sync_all()?;
    }
    after(&file)
}

/// `create_dir_all` with mode [`layout::DIR_MODE`], then an fsync of each
/// directory that gained an entry, so a new worker's path is as durable as its
/// first commit.
pub fn create_dirs_synced(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut missing = Vec::new();
    let mut cur = Some(dir);
    while let Some(d) = cur {
        if d.is_dir() {
            break;
        }
        missing.push(d);
        cur = d.parent();
    }
    create_private_dirs(dir).map_err(|e| Error::io(format!("create {}", dir.display()), e))?;
    for d in missing.iter().rev() {
        if let Some(parent) = d.parent() {
            sync_dir(parent)?;
        }
    }
    Ok(())
}

/// Makes the directory of a worker's or an object's file durable:
/// `<dir>/<class>/<xx>` ([`layout::worker_path`]). A class's first
/// directory is made alone, so that its first worker costs no more than
/// before; the next time one is missing, all 256 are made and their parent
/// synced once for them all: made one by one as workers came, each cost a
/// sync of its own, about one in five of a new class's first thousand
/// workers. A directory's own entries are synced with the file renamed into
/// it. A creation that finds its directory while the 256 are being made
/// waits until they are synced: otherwise its file could be acknowledged in
/// a directory whose name a power cut may still lose.
pub fn create_worker_dir(dir: &Path) -> Result<()> {
    static MAKING: parking_lot::RwLock<()> = parking_lot::RwLock::new(());
    {
        let _looking = MAKING.read();
        if dir.is_dir() {
            return Ok(());
        }
    }
    let _making = MAKING.write();
    if dir.is_dir() {
        return Ok(());
    }
    let class = match dir.parent() {
        Some(class) if class.is_dir() => class,
        Some(class) => {
            // The class's directory first, so that its first directory is
            // placed as the others will be.
            create_dirs_synced(class)?;
            spread(class);
            return create_dirs_synced(dir);
        }
        None => return create_dirs_synced(dir),
    };
    // A class an older build made is marked before its 256 are made.
    spread(class);
    for fan in 0..=u8::MAX {
        let d = class.join(format!("{fan:02x}"));
        match create_private_dir(&d) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(Error::io(format!("create {}", d.display()), e)),
        }
    }
    if !dir.is_dir() {
        // Not one of the 256 (a layout this code did not make): alone.
        create_dirs_synced(dir)?;
    }
    sync_dir(class)
}

/// Marks a class's directory with ext2/3/4's `T` attribute (`chattr +T`),
/// so that the directories made in it are placed as top-level ones are,
/// spread over the file system's block groups, not beside it. A new file's
/// inode is sought in its directory's group, from the group's start, and on
/// ext4 without a journal every inode there freed in the last minute or so
/// is passed over one by one: beside a directory where many files were just
/// deleted (a test suite's, another program's), each new worker paid for
/// all of them. Where the file system has no such attribute, or refuses it,
/// nothing changes.
#[cfg(target_os = "linux")]
fn spread(class: &Path) {
    use std::os::fd::AsRawFd;
    const FS_TOPDIR_FL: libc::c_int = 0x0002_0000;
    let Ok(dir) = fs::File::open(class) else {
        return;
    };
    let mut flags: libc::c_int = 0;
    // SAFETY: the descriptor is open for both calls; GETFLAGS writes and
    // SETFLAGS reads one int through the pointer, which outlives them.
    unsafe {
        if libc::ioctl(dir.as_raw_fd(), libc::FS_IOC_GETFLAGS, &mut flags) == 0
            && flags & FS_TOPDIR_FL == 0
        {
            flags |= FS_TOPDIR_FL;
            libc::ioctl(dir.as_raw_fd(), libc::FS_IOC_SETFLAGS, &flags);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn spread(_class: &Path) {}

/// `mkdir` with mode [`layout::DIR_MODE`].
#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new().mode(layout::DIR_MODE).create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    fs::create_dir(dir)
}

/// `create_dir_all`, each directory it makes created with mode
/// [`layout::DIR_MODE`] (the umask can only take more away); the ones that
/// exist are left as they are.
#[cfg(unix)]
pub(crate) fn create_private_dirs(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(layout::DIR_MODE)
        .create(dir)
}

/// Windows has no modes: a new directory inherits its parent's ACL.
#[cfg(not(unix))]
pub(crate) fn create_private_dirs(dir: &Path) -> std::io::Result<()> {
    fs::create_dir_all(dir)
}

/// Makes a directory's entries (a file created or renamed in it) durable.
#[cfg(unix)]
pub fn sync_dir(dir: &Path) -> Result<()> {
    let f = fs::File::open(dir).map_err(|e| Error::io(format!("open {}", dir.display()), e))?;
    let _alone = entry_syncs(dir);
    f.sync_all()
        .map_err(|e| Error::io(format!("sync {}", dir.display()), e))
}

/// Stripes of [`entry_syncs`]: directories whose paths hash alike share one.
const ENTRY_STRIPES: usize = 256;
static ENTRY_SYNCS: [parking_lot::Mutex<()>; ENTRY_STRIPES] =
    [const { parking_lot::Mutex::new(()) }; ENTRY_STRIPES];

/// Holds off this process's other syncs of `dir`'s entries until dropped:
/// they are made one at a time per directory.
///
/// Why: where `fsync` writes a directory's blocks from a list the kernel
/// keeps per directory (ext4 without a journal, ext2), an `fsync` that runs
/// while another one has taken those blocks off the list to write them finds
/// the list empty and returns before they are written, and its flush may
/// reach the device first. A power cut then loses an entry whose sync had
/// returned: `files/powercut-ext4` found an acknowledged new worker's file
/// unattached (its inode written, its name not) about once in ten rounds.
/// The first `fsync` of a new file syncs its directory's blocks the same
/// way, so it takes the lock too ([`sync_new_file`], and SQLite's first sync
/// of a new log, `log_files`). A directory is known by its device and inode,
/// so any path to it takes the same stripe.
pub fn entry_syncs(dir: &Path) -> parking_lot::MutexGuard<'static, ()> {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    #[cfg(unix)]
    match fs::metadata(dir) {
        Ok(m) => {
            use std::os::unix::fs::MetadataExt;
            (m.dev(), m.ino()).hash(&mut h)
        }
        // A directory that cannot be read has no entries to sync.
        Err(_) => dir.hash(&mut h),
    }
    #[cfg(not(unix))]
    dir.hash(&mut h);
    ENTRY_SYNCS[(h.finish() % ENTRY_STRIPES as u64) as usize].lock()
}

/// The first sync of a file just created in `dir`: its data, its inode and
/// (on ext4 without a journal) its directory's blocks, under
/// [`entry_syncs`].
pub fn sync_new_file(file: &fs::File, dir: &Path) -> std::io::Result<()> {
    let _alone = entry_syncs(dir);
    file.sync_all()
}

/// Makes files just created in `dir` durable with their names: each one's
/// first sync ([`sync_new_file`]), then the directory's.
pub fn sync_new_files_in(dir: &Path, files: &[&Path]) -> Result<()> {
    for file in files {
        fs::File::open(file)
            .and_then(|f| sync_new_file(&f, dir))
            .map_err(|e| Error::io(format!("sync {}", file.display()), e))?;
    }
    sync_dir(dir)
}

/// Windows opens no directory as a file to flush; NTFS journals its metadata,
/// so a created or renamed entry is durable with the file's own flush.
#[cfg(not(unix))]
pub fn sync_dir(_dir: &Path) -> Result<()> {
    Ok(())
}

/// Reads exactly `buf.len()` bytes of `file` from `offset`.
#[cfg(unix)]
pub fn read_exact_at(file: &fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

/// Reads exactly `buf.len()` bytes of `file` from `offset`.
#[cfg(windows)]
pub fn read_exact_at(file: &fs::File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether taking [`entry_syncs`] for `second`, on another thread, waits
    /// while it is held for `first`, then goes ahead once it is released.
    fn waits_for(first: &Path, second: std::path::PathBuf) -> bool {
        let held = entry_syncs(first);
        let (tx, rx) = std::sync::mpsc::channel();
        let other = std::thread::spawn(move || {
            let _alone = entry_syncs(&second);
            let _ = tx.send(());
        });
        let wait = std::time::Duration::from_millis(100);
        let waited = rx.recv_timeout(wait).is_err();
        drop(held);
        let ran = rx.recv_timeout(wait * 50).is_ok();
        other.join().is_ok() && waited && ran
    }

    /// A second sync of a directory's entries waits for the first to end.
    #[test]
    fn syncs_of_one_directory_s_entries_are_made_one_at_a_time() {
        let dir = Path::new("/data/Cart/3f");
        assert!(waits_for(dir, dir.to_path_buf()));
    }

    /// SQLite names a log's directory its own way (absolute, links
    /// resolved): any path to one directory takes the same lock.
    #[cfg(unix)]
    #[test]
    fn every_path_to_a_directory_takes_its_one_lock() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let dir = tmp.path().join("3f");
        fs::create_dir(&dir).map_err(|e| Error::io("mkdir", e))?;
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).map_err(|e| Error::io("symlink", e))?;
        assert!(
            waits_for(&dir, link.join(".")),
            "another path to it did not wait"
        );
        Ok(())
    }

    #[test]
    fn a_class_gets_its_first_directory_alone_and_the_rest_at_its_second() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let class = tmp.path().join("data/Cart");
        let count = || -> Result<usize> {
            Ok(fs::read_dir(&class)
                .map_err(|e| Error::io("read_dir", e))?
                .count())
        };
        let dir = class.join("3a");
        create_worker_dir(&dir)?;
        assert_eq!(count()?, 1);
        create_worker_dir(&class.join("c4"))?;
        assert_eq!(count()?, 256);
        assert!(dir.is_dir());
        // Again, and with one of them gone: made again, the rest left alone.
        fs::remove_dir(class.join("7f")).map_err(|e| Error::io("rmdir", e))?;
        create_worker_dir(&dir)?;
        create_worker_dir(&class.join("7f"))?;
        assert!(class.join("7f").is_dir());
        // A directory outside the fan-out is still made.
        create_worker_dir(&class.join("odd"))?;
        assert!(class.join("odd").is_dir());
        Ok(())
    }
}
