//! The file system's state, apart from FUSE: inodes, the namespace readers
//! see, and the durable state, which is the backing directory itself.
//!
//! * Durable state: the backing directory holds exactly what survived so far.
//!   A file's bytes there are its synced bytes; a directory's entries there
//!   are its synced entries.
//! * Every file the mount knows also has a hard link `.powercut/<ino>` in the
//!   backing directory (the "objects" directory, hidden from the mount). It
//!   names the file whatever its durable names are: a file created but not
//!   yet in any synced directory lives only there, and an unlinked-but-open
//!   file keeps its data. New directories live there too until their parent
//!   is synced. A cut removes the objects directory, which is exactly what a
//!   crash does to files no synced directory names.
//! * Unsynced data: a page overlay and a log per file (`pages::Pending`).
//! * Unsynced entries: each directory keeps its `current` entries and its
//!   `durable` ones (a mirror of the backing directory); syncing the
//!   directory makes the backing directory match `current`, one name at a
//!   time, each step leaving a well-formed tree.
//!
//! Each directory's entries are durable on their own (no journal ties two
//! directories together): a file renamed from `a/` to `b/` is durable under
//! its new name once `b/` is synced and gone from `a/` once `a/` is; with
//! only `a/` synced it is gone from both after a cut. A directory cannot be
//! in two places, so syncing the destination of a moved directory also takes
//! it out of its old parent; syncing only its old parent parks it in the
//! objects directory, where a cut loses it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::{OsStr, OsString};
use std::fs::{self, File, FileTimes, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::chaos::{self, Rng};
use crate::pages::{Op, Pending};

pub type Ino = u64;
pub const ROOT: Ino = 1;
/// The hidden directory in the backing root holding the objects.
pub const OBJECTS: &str = ".powercut";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A cut forgets everything unsynced.
    Drop,
    /// A cut applies a seeded random part of it.
    Chaos,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    /// A fifo, socket or device found in the backing directory.
    Other,
}

/// What `stat` shows.
#[derive(Clone, Debug)]
pub struct Attr {
    pub ino: Ino,
    pub kind: Kind,
    /// The file type bits of an `Other` (S_IFIFO…), for FUSE.
    pub fmt: u32,
    pub size: u64,
    pub perm: u16,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
    pub rdev: u32,
    pub atime: SystemTime,
    pub mtime: SystemTime,
    pub ctime: SystemTime,
}

#[derive(Clone, Debug)]
struct Meta {
    perm: u16,
    uid: u32,
    gid: u32,
    atime: SystemTime,
    mtime: SystemTime,
    ctime: SystemTime,
}

/// Where a directory is in the backing store.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Loc {
    Root,
    /// `.powercut/<ino>`: not named by any synced directory.
    Object,
    In(Ino, OsString),
    /// Removed from the backing store (a removed directory, synced).
    Gone,
}

#[derive(Debug)]
struct Dir {
    /// Entries are read from the backing directory on first use.
    loaded: bool,
    current: BTreeMap<OsString, Ino>,
    durable: BTreeMap<OsString, Ino>,
    /// The parent readers see; None once removed.
    parent: Option<Ino>,
    loc: Loc,
}

#[derive(Debug)]
struct Data {
    pending: Pending,
    /// Open on `.powercut/<ino>` while the kernel has the file open.
    fd: Option<File>,
    opens: u32,
}

#[derive(Debug)]
enum Body {
    File(Data),
    Dir(Dir),
    Symlink(PathBuf),
    Other { fmt: u32, rdev: u32 },
}

#[derive(Debug)]
struct Inode {
    meta: Meta,
    /// chmod/chown/utimes not yet synced by an fsync.
    meta_dirty: bool,
    /// Names readers see (files, symlinks, others).
    nlink: u32,
    body: Body,
}

#[derive(Debug, Default, Clone)]
pub struct Counters {
    pub fsyncs: u64,
    pub fdatasyncs: u64,
    pub dir_syncs: u64,
    pub writes: u64,
    pub written_bytes: u64,
}

/// What a cut did.
#[derive(Debug, Default, Clone)]
pub struct CutReport {
    pub applied_writes: usize,
    pub torn_writes: usize,
    pub dropped_writes: usize,
    pub applied_dir_ops: usize,
    pub dropped_dir_ops: usize,
}

/// `s` as a JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn err(code: i32) -> io::Error {
    io::Error::from_raw_os_error(code)
}

pub struct Model {
    root: PathBuf,
    objects: PathBuf,
    inodes: BTreeMap<Ino, Inode>,
    next_ino: Ino,
    /// Backing (dev, ino) → inode, so hard links found on disk stay one file.
    by_backing: HashMap<(u64, u64), Ino>,
    next_tmp: u64,
    mode: Mode,
    seed: u64,
    dead: bool,
    /// flock on the backing directory: one live mount per backing directory.
    lock: Option<File>,
    pub counters: Counters,
}

impl Model {
    /// Serves `root`; a stale objects directory (a previous process died
    /// without a cut) is removed first, as a crash would.
    pub fn open(root: &Path, mode: Mode, seed: u64) -> io::Result<Model> {
        let root = root.canonicalize()?;
        let lock = File::open(&root)?;
        // SAFETY: flock on a descriptor we own; no memory is involved.
        if unsafe {
            libc::flock(
                std::os::fd::AsRawFd::as_raw_fd(&lock),
                libc::LOCK_EX | libc::LOCK_NB,
            )
        } != 0
        {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("{}: another powercut serves it ({e})", root.display()),
            ));
        }
        let objects = root.join(OBJECTS);
        match fs::remove_dir_all(&objects) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        fs::DirBuilder::new().mode(0o700).create(&objects)?;
        let md = fs::metadata(&root)?;
        let mut model = Model {
            root,
            objects,
            inodes: BTreeMap::new(),
            next_ino: ROOT + 1,
            by_backing: HashMap::new(),
            next_tmp: 0,
            mode,
            seed,
            dead: false,
            lock: Some(lock),
            counters: Counters::default(),
        };
        model.inodes.insert(
            ROOT,
            Inode {
                meta: meta_of(&md),
                meta_dirty: false,
                nlink: 1,
                body: Body::Dir(Dir {
                    loaded: false,
                    current: BTreeMap::new(),
                    durable: BTreeMap::new(),
                    parent: Some(ROOT),
                    loc: Loc::Root,
                }),
            },
        );
        Ok(model)
    }

    pub fn is_dead(&self) -> bool {
        self.dead
    }

    fn alive(&self) -> io::Result<()> {
        if self.dead {
            Err(err(libc::EIO))
        } else {
            Ok(())
        }
    }

    // ---- lookups and paths ----

    fn node(&self, ino: Ino) -> io::Result<&Inode> {
        self.inodes.get(&ino).ok_or_else(|| err(libc::ENOENT))
    }

    fn node_mut(&mut self, ino: Ino) -> io::Result<&mut Inode> {
        self.inodes.get_mut(&ino).ok_or_else(|| err(libc::ENOENT))
    }

    fn dir(&self, ino: Ino) -> io::Result<&Dir> {
        match &self.node(ino)?.body {
            Body::Dir(d) => Ok(d),
            _ => Err(err(libc::ENOTDIR)),
        }
    }

    fn dir_mut(&mut self, ino: Ino) -> io::Result<&mut Dir> {
        match &mut self.node_mut(ino)?.body {
            Body::Dir(d) => Ok(d),
            _ => Err(err(libc::ENOTDIR)),
        }
    }

    fn data_mut(&mut self, ino: Ino) -> io::Result<&mut Data> {
        match &mut self.node_mut(ino)?.body {
            Body::File(d) => Ok(d),
            Body::Dir(_) => Err(err(libc::EISDIR)),
            _ => Err(err(libc::EINVAL)),
        }
    }

    fn is_dir(&self, ino: Ino) -> bool {
        matches!(self.inodes.get(&ino).map(|n| &n.body), Some(Body::Dir(_)))
    }

    fn object_path(&self, ino: Ino) -> PathBuf {
        self.objects.join(ino.to_string())
    }

    /// The directory's place in the backing store.
    fn dir_path(&self, ino: Ino) -> io::Result<PathBuf> {
        match &self.dir(ino)?.loc {
            Loc::Root => Ok(self.root.clone()),
            Loc::Object => Ok(self.object_path(ino)),
            Loc::In(parent, name) => Ok(self.dir_path(*parent)?.join(name)),
            Loc::Gone => Err(err(libc::ENOENT)),
        }
    }

    fn alloc(&mut self) -> Ino {
        let ino = self.next_ino;
        self.next_ino += 1;
        ino
    }

    /// Reads a directory's entries from the backing store, once. Until then
    /// they cannot have changed, so what is on disk is both views.
    fn load(&mut self, d: Ino) -> io::Result<()> {
        if self.dir(d)?.loaded {
            return Ok(());
        }
        let path = self.dir_path(d)?;
        let mut names: Vec<OsString> = Vec::new();
        for entry in fs::read_dir(&path)? {
            let name = entry?.file_name();
            if d == ROOT && name == OBJECTS {
                continue;
            }
            names.push(name);
        }
        // Sorted, so inode numbers (and chaos runs) do not depend on the
        // order the backing file system lists names in.
        names.sort();
        let mut entries = BTreeMap::new();
        for name in names {
            let full = path.join(&name);
            let md = fs::symlink_metadata(&full)?;
            let key = (md.dev(), md.ino());
            let ino = match self.by_backing.get(&key) {
                Some(&ino) if !md.is_dir() => ino,
                _ => {
                    let ino = self.alloc();
                    let ft = md.file_type();
                    let body = if ft.is_dir() {
                        Body::Dir(Dir {
                            loaded: false,
                            current: BTreeMap::new(),
                            durable: BTreeMap::new(),
                            parent: Some(d),
                            loc: Loc::In(d, name.clone()),
                        })
                    } else if ft.is_file() {
                        Body::File(Data {
                            pending: Pending::new(md.size()),
                            fd: None,
                            opens: 0,
                        })
                    } else if ft.is_symlink() {
                        Body::Symlink(fs::read_link(&full)?)
                    } else {
                        Body::Other {
                            fmt: md.mode() & libc::S_IFMT,
                            rdev: md.rdev() as u32,
                        }
                    };
                    if !ft.is_dir() {
                        fs::hard_link(&full, self.object_path(ino))?;
                        self.by_backing.insert(key, ino);
                    }
                    self.inodes.insert(
                        ino,
                        Inode {
                            meta: meta_of(&md),
                            meta_dirty: false,
                            nlink: md.nlink() as u32,
                            body,
                        },
                    );
                    ino
                }
            };
            entries.insert(name, ino);
        }
        let dir = self.dir_mut(d)?;
        dir.durable = entries.clone();
        dir.current = entries;
        dir.loaded = true;
        Ok(())
    }

    pub fn attr(&self, ino: Ino) -> io::Result<Attr> {
        let node = self.node(ino)?;
        let (kind, fmt, size, nlink, rdev) = match &node.body {
            Body::File(d) => (Kind::File, 0, d.pending.size(), node.nlink, 0),
            Body::Dir(d) => {
                let subdirs = d.current.values().filter(|&&c| self.is_dir(c)).count() as u32;
                let nlink = if d.parent.is_none() {
                    0
                } else if d.loaded {
                    2 + subdirs
                } else {
                    // Unknown until loaded: 1 tells find(1) not to guess.
                    1
                };
                (Kind::Dir, 0, 4096, nlink, 0)
            }
            Body::Symlink(t) => (Kind::Symlink, 0, t.as_os_str().len() as u64, node.nlink, 0),
            Body::Other { fmt, rdev } => (Kind::Other, *fmt, 0, node.nlink, *rdev),
        };
        let m = &node.meta;
        Ok(Attr {
            ino,
            kind,
            fmt,
            size,
            perm: m.perm,
            nlink,
            uid: m.uid,
            gid: m.gid,
            rdev,
            atime: m.atime,
            mtime: m.mtime,
            ctime: m.ctime,
        })
    }

    pub fn getattr(&self, ino: Ino) -> io::Result<Attr> {
        self.alive()?;
        self.attr(ino)
    }

    pub fn lookup(&mut self, parent: Ino, name: &OsStr) -> io::Result<Attr> {
        self.alive()?;
        self.load(parent)?;
        let ino = *self
            .dir(parent)?
            .current
            .get(name)
            .ok_or_else(|| err(libc::ENOENT))?;
        self.attr(ino)
    }

    pub fn readlink(&self, ino: Ino) -> io::Result<PathBuf> {
        self.alive()?;
        match &self.node(ino)?.body {
            Body::Symlink(t) => Ok(t.clone()),
            _ => Err(err(libc::EINVAL)),
        }
    }

    /// `.`, `..` and the current entries, with their kinds.
    pub fn list(&mut self, d: Ino) -> io::Result<Vec<(Ino, Kind, OsString)>> {
        self.alive()?;
        self.load(d)?;
        let dir = self.dir(d)?;
        let mut out = vec![
            (d, Kind::Dir, OsString::from(".")),
            (dir.parent.unwrap_or(d), Kind::Dir, OsString::from("..")),
        ];
        for (name, &ino) in &dir.current {
            out.push((ino, self.attr(ino)?.kind, name.clone()));
        }
        Ok(out)
    }

    // ---- namespace changes (unsynced) ----

    fn check_new_name(&mut self, parent: Ino, name: &OsStr) -> io::Result<()> {
        self.alive()?;
        self.load(parent)?;
        if name.len() > 255 {
            return Err(err(libc::ENAMETOOLONG));
        }
        if parent == ROOT && name == OBJECTS {
            return Err(err(libc::EPERM));
        }
        let dir = self.dir(parent)?;
        if dir.parent.is_none() {
            return Err(err(libc::ENOENT));
        }
        if dir.current.contains_key(name) {
            return Err(err(libc::EEXIST));
        }
        Ok(())
    }

    fn touch_dir(&mut self, d: Ino) {
        if let Some(node) = self.inodes.get_mut(&d) {
            let now = SystemTime::now();
            node.meta.mtime = now;
            node.meta.ctime = now;
        }
    }

    fn link_new(&mut self, parent: Ino, name: &OsStr, ino: Ino, inode: Inode) -> io::Result<Attr> {
        self.inodes.insert(ino, inode);
        self.dir_mut(parent)?.current.insert(name.to_owned(), ino);
        self.touch_dir(parent);
        self.attr(ino)
    }

    /// A new empty regular file, `perm` exactly (the kernel applied the umask).
    pub fn create(
        &mut self,
        parent: Ino,
        name: &OsStr,
        perm: u32,
        uid: u32,
        gid: u32,
    ) -> io::Result<Attr> {
        self.check_new_name(parent, name)?;
        let ino = self.alloc();
        let file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(perm & 0o7777)
            .open(self.object_path(ino))?;
        // The inode's owner and mode are born with it, as on a real disk: a
        // later sync of the directory shows them.
        std::os::unix::fs::fchown(&file, Some(uid), Some(gid))?;
        file.set_permissions(Permissions::from_mode(perm & 0o7777))?;
        let inode = Inode {
            meta: new_meta(perm, uid, gid),
            meta_dirty: false,
            nlink: 1,
            // Opened again by open_file: a create through mknod is never
            // released, and must not keep a descriptor.
            body: Body::File(Data {
                pending: Pending::new(0),
                fd: None,
                opens: 0,
            }),
        };
        self.link_new(parent, name, ino, inode)
    }

    pub fn mkdir(
        &mut self,
        parent: Ino,
        name: &OsStr,
        perm: u32,
        uid: u32,
        gid: u32,
    ) -> io::Result<Attr> {
        self.check_new_name(parent, name)?;
        let ino = self.alloc();
        let path = self.object_path(ino);
        fs::DirBuilder::new().mode(perm & 0o7777).create(&path)?;
        std::os::unix::fs::chown(&path, Some(uid), Some(gid))?;
        fs::set_permissions(&path, Permissions::from_mode(perm & 0o7777))?;
        let inode = Inode {
            meta: new_meta(perm, uid, gid),
            meta_dirty: false,
            nlink: 2,
            body: Body::Dir(Dir {
                loaded: true,
                current: BTreeMap::new(),
                durable: BTreeMap::new(),
                parent: Some(parent),
                loc: Loc::Object,
            }),
        };
        self.link_new(parent, name, ino, inode)
    }

    pub fn symlink(
        &mut self,
        parent: Ino,
        name: &OsStr,
        target: &Path,
        uid: u32,
        gid: u32,
    ) -> io::Result<Attr> {
        self.check_new_name(parent, name)?;
        let ino = self.alloc();
        let path = self.object_path(ino);
        std::os::unix::fs::symlink(target, &path)?;
        std::os::unix::fs::lchown(&path, Some(uid), Some(gid))?;
        let inode = Inode {
            meta: new_meta(0o777, uid, gid),
            meta_dirty: false,
            nlink: 1,
            body: Body::Symlink(target.to_path_buf()),
        };
        self.link_new(parent, name, ino, inode)
    }

    pub fn link(&mut self, ino: Ino, parent: Ino, name: &OsStr) -> io::Result<Attr> {
        if self.is_dir(ino) {
            return Err(err(libc::EPERM));
        }
        self.check_new_name(parent, name)?;
        let node = self.node_mut(ino)?;
        node.nlink += 1;
        node.meta.ctime = SystemTime::now();
        self.dir_mut(parent)?.current.insert(name.to_owned(), ino);
        self.touch_dir(parent);
        self.attr(ino)
    }

    pub fn unlink(&mut self, parent: Ino, name: &OsStr) -> io::Result<()> {
        self.alive()?;
        self.load(parent)?;
        let ino = *self
            .dir(parent)?
            .current
            .get(name)
            .ok_or_else(|| err(libc::ENOENT))?;
        if self.is_dir(ino) {
            return Err(err(libc::EISDIR));
        }
        self.dir_mut(parent)?.current.remove(name);
        self.drop_name(ino)?;
        self.touch_dir(parent);
        Ok(())
    }

    fn drop_name(&mut self, ino: Ino) -> io::Result<()> {
        let node = self.node_mut(ino)?;
        node.nlink = node.nlink.saturating_sub(1);
        node.meta.ctime = SystemTime::now();
        Ok(())
    }

    pub fn rmdir(&mut self, parent: Ino, name: &OsStr) -> io::Result<()> {
        self.alive()?;
        self.load(parent)?;
        let ino = *self
            .dir(parent)?
            .current
            .get(name)
            .ok_or_else(|| err(libc::ENOENT))?;
        if !self.is_dir(ino) {
            return Err(err(libc::ENOTDIR));
        }
        self.load(ino)?;
        if !self.dir(ino)?.current.is_empty() {
            return Err(err(libc::ENOTEMPTY));
        }
        self.dir_mut(parent)?.current.remove(name);
        self.dir_mut(ino)?.parent = None;
        self.touch_dir(parent);
        Ok(())
    }

    /// True when `ino` is `d` or one of its ancestors, as readers see them.
    fn is_current_ancestor(&self, ino: Ino, mut d: Ino) -> io::Result<bool> {
        loop {
            if d == ino {
                return Ok(true);
            }
            match self.dir(d)?.parent {
                Some(p) if p != d => d = p,
                _ => return Ok(false),
            }
        }
    }

    pub fn rename(
        &mut self,
        parent: Ino,
        name: &OsStr,
        new_parent: Ino,
        new_name: &OsStr,
        flags: u32,
    ) -> io::Result<()> {
        self.alive()?;
        self.load(parent)?;
        self.load(new_parent)?;
        if new_parent == ROOT && new_name == OBJECTS {
            return Err(err(libc::EPERM));
        }
        if new_name.len() > 255 {
            return Err(err(libc::ENAMETOOLONG));
        }
        if flags & !(libc::RENAME_NOREPLACE | libc::RENAME_EXCHANGE) != 0 {
            return Err(err(libc::EINVAL));
        }
        let src = *self
            .dir(parent)?
            .current
            .get(name)
            .ok_or_else(|| err(libc::ENOENT))?;
        let dst = self.dir(new_parent)?.current.get(new_name).copied();
        if self.is_dir(src) && self.is_current_ancestor(src, new_parent)? {
            return Err(err(libc::EINVAL));
        }
        if flags & libc::RENAME_EXCHANGE != 0 {
            let dst = dst.ok_or_else(|| err(libc::ENOENT))?;
            if self.is_dir(dst) && self.is_current_ancestor(dst, parent)? {
                return Err(err(libc::EINVAL));
            }
            self.dir_mut(parent)?.current.insert(name.to_owned(), dst);
            self.dir_mut(new_parent)?
                .current
                .insert(new_name.to_owned(), src);
            if self.is_dir(src) {
                self.dir_mut(src)?.parent = Some(new_parent);
            }
            if self.is_dir(dst) {
                self.dir_mut(dst)?.parent = Some(parent);
            }
        } else {
            if let Some(dst) = dst {
                if flags & libc::RENAME_NOREPLACE != 0 {
                    return Err(err(libc::EEXIST));
                }
                if dst == src {
                    return Ok(());
                }
                match (self.is_dir(src), self.is_dir(dst)) {
                    (true, false) => return Err(err(libc::ENOTDIR)),
                    (false, true) => return Err(err(libc::EISDIR)),
                    (true, true) => {
                        self.load(dst)?;
                        if !self.dir(dst)?.current.is_empty() {
                            return Err(err(libc::ENOTEMPTY));
                        }
                        self.dir_mut(dst)?.parent = None;
                    }
                    (false, false) => self.drop_name(dst)?,
                }
            }
            self.dir_mut(parent)?.current.remove(name);
            self.dir_mut(new_parent)?
                .current
                .insert(new_name.to_owned(), src);
            if self.is_dir(src) {
                self.dir_mut(src)?.parent = Some(new_parent);
            }
        }
        self.node_mut(src)?.meta.ctime = SystemTime::now();
        self.touch_dir(parent);
        self.touch_dir(new_parent);
        Ok(())
    }

    // ---- file data (unsynced) ----

    /// The kernel opened the file: keep a descriptor on its object.
    pub fn open_file(&mut self, ino: Ino) -> io::Result<()> {
        self.alive()?;
        self.fd(ino)?;
        self.data_mut(ino)?.opens += 1;
        Ok(())
    }

    pub fn release(&mut self, ino: Ino) {
        if let Ok(data) = self.data_mut(ino) {
            data.opens = data.opens.saturating_sub(1);
            if data.opens == 0 {
                data.fd = None;
            }
        }
    }

    /// The data of a file, with a descriptor on its object open.
    fn fd(&mut self, ino: Ino) -> io::Result<&mut Data> {
        let path = self.object_path(ino);
        let data = self.data_mut(ino)?;
        if data.fd.is_none() {
            data.fd = Some(fs::OpenOptions::new().read(true).write(true).open(path)?);
        }
        Ok(data)
    }

    pub fn read(&mut self, ino: Ino, off: u64, len: usize) -> io::Result<Vec<u8>> {
        self.alive()?;
        let data = self.fd(ino)?;
        let Data { pending, fd, .. } = data;
        let file = fd.as_ref().ok_or_else(|| err(libc::EBADF))?;
        pending.read(off, len, &mut |at, buf| read_full_at(file, at, buf))
    }

    pub fn write(&mut self, ino: Ino, off: u64, bytes: &[u8]) -> io::Result<()> {
        self.alive()?;
        let data = self.fd(ino)?;
        let Data { pending, fd, .. } = data;
        let file = fd.as_ref().ok_or_else(|| err(libc::EBADF))?;
        pending.write(off, bytes, &mut |at, buf| read_full_at(file, at, buf))?;
        let now = SystemTime::now();
        let node = self.node_mut(ino)?;
        node.meta.mtime = now;
        node.meta.ctime = now;
        self.counters.writes += 1;
        self.counters.written_bytes += bytes.len() as u64;
        Ok(())
    }

    fn set_size(&mut self, ino: Ino, size: u64) -> io::Result<()> {
        self.data_mut(ino)?.pending.set_size(size);
        let now = SystemTime::now();
        let node = self.node_mut(ino)?;
        node.meta.mtime = now;
        node.meta.ctime = now;
        Ok(())
    }

    /// Modes 0 (grow), KEEP_SIZE (nothing to do: space is not modelled),
    /// PUNCH_HOLE and ZERO_RANGE (written as zeros).
    pub fn fallocate(&mut self, ino: Ino, off: u64, len: u64, mode: i32) -> io::Result<()> {
        self.alive()?;
        let size = self.data_mut(ino)?.pending.size();
        let end = off.checked_add(len).ok_or_else(|| err(libc::EFBIG))?;
        let keep = mode & libc::FALLOC_FL_KEEP_SIZE != 0;
        match mode & !libc::FALLOC_FL_KEEP_SIZE {
            0 => {
                if !keep && end > size {
                    self.set_size(ino, end)?;
                }
                Ok(())
            }
            m if m == libc::FALLOC_FL_PUNCH_HOLE || m == libc::FALLOC_FL_ZERO_RANGE => {
                if m == libc::FALLOC_FL_PUNCH_HOLE && !keep {
                    return Err(err(libc::EINVAL));
                }
                let stop = if keep { end.min(size) } else { end };
                if stop > off {
                    let zeros = vec![0u8; (stop - off) as usize];
                    self.write(ino, off, &zeros)?;
                }
                Ok(())
            }
            _ => Err(err(libc::EOPNOTSUPP)),
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub fn setattr(
        &mut self,
        ino: Ino,
        perm: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<SystemTime>,
        mtime: Option<SystemTime>,
    ) -> io::Result<Attr> {
        self.alive()?;
        if let Some(size) = size {
            self.set_size(ino, size)?;
        }
        let node = self.node_mut(ino)?;
        let now = SystemTime::now();
        if let Some(p) = perm {
            node.meta.perm = (p & 0o7777) as u16;
        }
        if let Some(u) = uid {
            node.meta.uid = u;
        }
        if let Some(g) = gid {
            node.meta.gid = g;
        }
        if let Some(t) = atime {
            node.meta.atime = t;
        }
        if let Some(t) = mtime {
            node.meta.mtime = t;
        }
        if perm.is_some() || uid.is_some() || gid.is_some() || atime.is_some() || mtime.is_some() {
            node.meta_dirty = true;
        }
        node.meta.ctime = now;
        self.attr(ino)
    }

    // ---- syncs: moving current state into the backing store ----

    /// fsync/fdatasync of a file, fsync of a directory.
    pub fn sync(&mut self, ino: Ino, datasync: bool) -> io::Result<()> {
        self.alive()?;
        if self.is_dir(ino) {
            self.counters.dir_syncs += 1;
            self.sync_dir(ino, datasync)
        } else {
            if datasync {
                self.counters.fdatasyncs += 1;
            } else {
                self.counters.fsyncs += 1;
            }
            self.sync_file(ino, datasync)
        }
    }

    fn sync_file(&mut self, ino: Ino, datasync: bool) -> io::Result<()> {
        if let Body::File(_) = self.node(ino)?.body {
            let data = self.fd(ino)?;
            if data.pending.is_dirty() {
                let file = data.fd.as_ref().ok_or_else(|| err(libc::EBADF))?;
                apply_ops(file, data.pending.log())?;
                data.pending.mark_synced();
            }
        }
        let synced = if datasync {
            Ok(())
        } else {
            self.sync_meta(ino)
        };
        // A file synced while the kernel has it closed (sync_all) keeps no
        // descriptor.
        if let Ok(data) = self.data_mut(ino) {
            if data.opens == 0 {
                data.fd = None;
            }
        }
        synced
    }

    /// Owner, mode and times, as an fsync (not an fdatasync) promises.
    fn sync_meta(&mut self, ino: Ino) -> io::Result<()> {
        let node = self.node(ino)?;
        let meta = node.meta.clone();
        let dirty = node.meta_dirty;
        match &node.body {
            Body::File(_) => {
                let data = self.fd(ino)?;
                let file = data.fd.as_ref().ok_or_else(|| err(libc::EBADF))?;
                if dirty {
                    std::os::unix::fs::fchown(file, Some(meta.uid), Some(meta.gid))?;
                    file.set_permissions(Permissions::from_mode(u32::from(meta.perm)))?;
                }
                // Writing the synced bytes touched the object's mtime: put
                // back the one readers saw.
                file.set_times(
                    FileTimes::new()
                        .set_accessed(meta.atime)
                        .set_modified(meta.mtime),
                )?;
            }
            Body::Dir(d) if dirty && d.loc != Loc::Gone => {
                let path = self.dir_path(ino)?;
                std::os::unix::fs::chown(&path, Some(meta.uid), Some(meta.gid))?;
                fs::set_permissions(&path, Permissions::from_mode(u32::from(meta.perm)))?;
                File::open(&path)?.set_times(
                    FileTimes::new()
                        .set_accessed(meta.atime)
                        .set_modified(meta.mtime),
                )?;
            }
            Body::Other { .. } if dirty => {
                let path = self.object_path(ino);
                std::os::unix::fs::chown(&path, Some(meta.uid), Some(meta.gid))?;
                fs::set_permissions(&path, Permissions::from_mode(u32::from(meta.perm)))?;
            }
            Body::Symlink(_) if dirty => {
                std::os::unix::fs::lchown(self.object_path(ino), Some(meta.uid), Some(meta.gid))?;
            }
            _ => {}
        }
        self.node_mut(ino)?.meta_dirty = false;
        Ok(())
    }

    fn sync_dir(&mut self, d: Ino, datasync: bool) -> io::Result<()> {
        self.load(d)?;
        for name in self.changed_names(d)? {
            self.apply_entry(d, &name)?;
        }
        if !datasync {
            self.sync_meta(d)?;
        }
        Ok(())
    }

    /// Names whose current entry differs from the durable one.
    fn changed_names(&self, d: Ino) -> io::Result<Vec<OsString>> {
        let dir = self.dir(d)?;
        let names: BTreeSet<&OsString> = dir.current.keys().chain(dir.durable.keys()).collect();
        Ok(names
            .into_iter()
            .filter(|n| dir.current.get(*n) != dir.durable.get(*n))
            .cloned()
            .collect())
    }

    /// Makes one name of one backing directory match what readers see.
    fn apply_entry(&mut self, d: Ino, name: &OsStr) -> io::Result<()> {
        let (cur, old) = {
            let dir = self.dir(d)?;
            (
                dir.current.get(name).copied(),
                dir.durable.get(name).copied(),
            )
        };
        if cur == old {
            return Ok(());
        }
        if let Some(old) = old {
            let path = self.dir_path(d)?.join(name);
            if self.is_dir(old) {
                self.unlink_durable_dir(old, &path)?;
            } else if !matches!(cur, Some(new) if !self.is_dir(new)) {
                // A file replaced by a file is replaced in one rename below.
                fs::remove_file(&path)?;
            }
            self.dir_mut(d)?.durable.remove(name);
        }
        if let Some(new) = cur {
            if self.is_dir(new) {
                self.move_dir(new, d, name)?;
            } else {
                let tmp = self.objects.join(format!("tmp-{}", self.next_tmp));
                self.next_tmp += 1;
                fs::hard_link(self.object_path(new), &tmp)?;
                fs::rename(&tmp, self.dir_path(d)?.join(name))?;
            }
            self.dir_mut(d)?.durable.insert(name.to_owned(), new);
        }
        Ok(())
    }

    /// Takes directory `x` out of the backing directory at `path`: parked in
    /// the objects directory if readers still see it somewhere, deleted
    /// otherwise.
    fn unlink_durable_dir(&mut self, x: Ino, path: &Path) -> io::Result<()> {
        if self.dir(x)?.parent.is_some() {
            fs::rename(path, self.object_path(x))?;
            self.dir_mut(x)?.loc = Loc::Object;
            Ok(())
        } else {
            self.purge_dir(x)
        }
    }

    /// Deletes a removed directory from the backing store, first parking the
    /// live directories still stored inside it (moved away, not yet synced).
    fn purge_dir(&mut self, x: Ino) -> io::Result<()> {
        let path = self.dir_path(x)?;
        let subdirs: Vec<(OsString, Ino)> = self
            .dir(x)?
            .durable
            .iter()
            .filter(|&(_, &c)| self.is_dir(c))
            .map(|(n, &c)| (n.clone(), c))
            .collect();
        for (name, c) in subdirs {
            if self.dir(c)?.parent.is_some() {
                fs::rename(path.join(&name), self.object_path(c))?;
                self.dir_mut(c)?.loc = Loc::Object;
                self.dir_mut(x)?.durable.remove(&name);
            } else {
                self.purge_dir(c)?;
            }
        }
        fs::remove_dir_all(&path)?;
        let dir = self.dir_mut(x)?;
        dir.durable.clear();
        dir.loc = Loc::Gone;
        Ok(())
    }

    /// Puts directory `x` at `d/name` in the backing store.
    fn move_dir(&mut self, x: Ino, d: Ino, name: &OsStr) -> io::Result<()> {
        if self.durable_ancestor(x, d)? {
            self.break_stale_edge(x, d)?;
        }
        let from = self.dir_path(x)?;
        let to = self.dir_path(d)?.join(name);
        fs::rename(&from, &to)?;
        if let Loc::In(p, n) = self.dir(x)?.loc.clone() {
            if !(p == d && n == name) {
                self.dir_mut(p)?.durable.remove(&n);
            }
        }
        self.dir_mut(x)?.loc = Loc::In(d, name.to_owned());
        Ok(())
    }

    /// True when `x` is `d` or holds it, in the backing store.
    fn durable_ancestor(&self, x: Ino, mut d: Ino) -> io::Result<bool> {
        loop {
            if d == x {
                return Ok(true);
            }
            match &self.dir(d)?.loc {
                Loc::In(p, _) => d = *p,
                _ => return Ok(false),
            }
        }
    }

    /// `d` is stored inside `x`, but readers see `d` outside it (they are
    /// about to see `x` inside `d`), so some stored edge between them is
    /// stale: park the directory below it, a change its own parent's sync
    /// would make anyway.
    fn break_stale_edge(&mut self, x: Ino, d: Ino) -> io::Result<()> {
        let mut child = d;
        while child != x {
            let Loc::In(p, n) = self.dir(child)?.loc.clone() else {
                break;
            };
            let pd = self.dir(p)?;
            if pd.loaded && pd.current.get(&n) != Some(&child) {
                let path = self.dir_path(child)?;
                fs::rename(path, self.object_path(child))?;
                self.dir_mut(p)?.durable.remove(&n);
                self.dir_mut(child)?.loc = Loc::Object;
                return Ok(());
            }
            child = p;
        }
        Err(io::Error::other(
            "no stale edge between a directory and its new parent",
        ))
    }

    /// Everything readers see reaches the backing store (a clean unmount).
    pub fn sync_all(&mut self) -> io::Result<()> {
        self.alive()?;
        let inos: Vec<Ino> = self.inodes.keys().copied().collect();
        for &ino in &inos {
            let dirty = match &self.node(ino)?.body {
                Body::File(d) => d.pending.is_dirty(),
                _ => false,
            };
            if dirty || self.node(ino)?.meta_dirty {
                self.sync_file(ino, false)?;
            }
        }
        // Each step fixes one name and undoes none, so one pass over every
        // directory that was read settles them all; the second pass only
        // finds the rare name a directory move fixed out of order.
        for _ in 0..2 {
            for &ino in &inos {
                if self.is_dir(ino) && self.dir(ino)?.loaded && self.dir(ino)?.loc != Loc::Gone {
                    for name in self.changed_names(ino)? {
                        self.apply_entry(ino, &name)?;
                    }
                }
            }
        }
        Ok(())
    }

    // ---- power loss ----

    /// Loses power: applies nothing (drop) or a seeded random part of what
    /// is unsynced (chaos), then forgets the rest and refuses every later
    /// operation. The backing directory is left as a rebooted disk would be.
    pub fn cut(&mut self) -> io::Result<CutReport> {
        if self.dead {
            return Err(io::Error::other("already cut"));
        }
        let mut report = CutReport::default();
        if self.mode == Mode::Chaos {
            self.chaos(&mut report)?;
        } else {
            for node in self.inodes.values() {
                if let Body::File(d) = &node.body {
                    report.dropped_writes += d.pending.log().len();
                }
            }
            for &ino in self.inodes.keys() {
                if self.is_dir(ino) && self.dir(ino)?.loaded {
                    report.dropped_dir_ops += self.changed_names(ino)?.len();
                }
            }
        }
        self.finish();
        Ok(report)
    }

    fn chaos(&mut self, report: &mut CutReport) -> io::Result<()> {
        let mut rng = Rng::new(self.seed);
        let inos: Vec<Ino> = self.inodes.keys().copied().collect();
        for &ino in &inos {
            let log: Vec<Op> = match &self.node(ino)?.body {
                Body::File(d) if d.pending.is_dirty() => d.pending.log().to_vec(),
                _ => continue,
            };
            let plan = chaos::plan(&mut rng, &log);
            report.applied_writes += plan.applied;
            report.torn_writes += plan.torn;
            report.dropped_writes += plan.dropped;
            let data = self.fd(ino)?;
            let file = data.fd.as_ref().ok_or_else(|| err(libc::EBADF))?;
            apply_ops(file, &plan.ops)?;
        }
        for &ino in &inos {
            if self.node(ino)?.meta_dirty && self.node(ino)?.nlink > 0 && rng.chance(1, 2) {
                self.sync_meta(ino)?;
            }
        }
        let mut changes: Vec<(Ino, OsString)> = Vec::new();
        for &ino in &inos {
            if self.is_dir(ino) && self.dir(ino)?.loaded && self.dir(ino)?.loc != Loc::Gone {
                for name in self.changed_names(ino)? {
                    changes.push((ino, name));
                }
            }
        }
        let (mut kept, dropped) = rng.subset(changes);
        rng.shuffle(&mut kept);
        report.dropped_dir_ops = dropped;
        for (d, name) in kept {
            // An earlier step (a directory move) may have settled it, or
            // removed the directory from the backing store.
            if self.dir(d)?.loc != Loc::Gone {
                self.apply_entry(d, &name)?;
                report.applied_dir_ops += 1;
            }
        }
        Ok(())
    }

    /// Dead from now on: descriptors closed, objects removed (a crash's
    /// orphans), the backing directory free for the next mount.
    fn finish(&mut self) {
        self.dead = true;
        for node in self.inodes.values_mut() {
            if let Body::File(d) = &mut node.body {
                d.fd = None;
            }
        }
        if let Err(e) = fs::remove_dir_all(&self.objects) {
            if e.kind() != io::ErrorKind::NotFound {
                eprintln!("powercut: removing {}: {e}", self.objects.display());
            }
        }
        self.lock = None;
    }

    /// A clean unmount: everything reaches the backing store, then the
    /// model refuses further operations.
    pub fn shutdown(&mut self) -> io::Result<()> {
        if self.dead {
            return Ok(());
        }
        let synced = self.sync_all();
        self.finish();
        synced
    }

    // ---- reporting ----

    pub fn statfs(&self) -> io::Result<libc::statvfs> {
        self.alive()?;
        let path = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(
            self.root.as_os_str(),
        ))
        .map_err(|_| err(libc::EINVAL))?;
        // SAFETY: statvfs writes into the zeroed struct we pass it.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(st)
    }

    /// Counters and what a cut would lose now, as one JSON object.
    /// Every name readers see, as a path from the mount's root, by inode
    /// (the first name found for a file with several).
    fn current_paths(&self) -> HashMap<Ino, String> {
        let mut paths = HashMap::from([(ROOT, String::new())]);
        let mut todo = vec![ROOT];
        while let Some(d) = todo.pop() {
            let Ok(dir) = self.dir(d) else { continue };
            let base = paths.get(&d).cloned().unwrap_or_default();
            for (name, &ino) in &dir.current {
                let path = format!("{base}/{}", name.to_string_lossy());
                if paths.contains_key(&ino) {
                    continue;
                }
                if self.is_dir(ino) {
                    todo.push(ino);
                }
                paths.insert(ino, path);
            }
        }
        paths
    }

    /// What a cut would lose now, by name: each file with unsynced writes
    /// (by a current name, or "(unlinked)"), and each directory entry that
    /// differs from the synced one ("create", "remove" or "replace").
    pub fn dirty_json(&self) -> String {
        let paths = self.current_paths();
        let name_of = |ino: Ino| {
            paths
                .get(&ino)
                .map(|p| {
                    if p.is_empty() {
                        "/".to_string()
                    } else {
                        p.clone()
                    }
                })
                .unwrap_or_else(|| "(unlinked)".to_string())
        };
        let mut files = Vec::new();
        let mut entries = Vec::new();
        for (&ino, node) in &self.inodes {
            match &node.body {
                Body::File(d) if d.pending.is_dirty() => files.push(format!(
                    "{{\"path\":{},\"writes\":{},\"bytes\":{}}}",
                    json_string(&name_of(ino)),
                    d.pending.log().len(),
                    d.pending.pending_bytes()
                )),
                Body::Dir(d) if d.loaded => {
                    for name in self.changed_names(ino).unwrap_or_default() {
                        let op = match (d.current.get(&name), d.durable.get(&name)) {
                            (Some(_), None) => "create",
                            (None, Some(_)) => "remove",
                            _ => "replace",
                        };
                        let path = format!(
                            "{}/{}",
                            name_of(ino).trim_end_matches('/'),
                            name.to_string_lossy()
                        );
                        entries.push(format!(
                            "{{\"path\":{},\"op\":\"{op}\"}}",
                            json_string(&path)
                        ));
                    }
                }
                _ => {}
            }
        }
        format!(
            "{{\"ok\":true,\"files\":[{}],\"entries\":[{}]}}",
            files.join(","),
            entries.join(",")
        )
    }

    pub fn stats_json(&self) -> String {
        let mut pending_bytes = 0;
        let mut pending_writes = 0;
        let mut dirty_files = 0;
        let mut dir_ops = 0;
        for (&ino, node) in &self.inodes {
            match &node.body {
                Body::File(d) if d.pending.is_dirty() => {
                    dirty_files += 1;
                    pending_bytes += d.pending.pending_bytes();
                    pending_writes += d.pending.log().len();
                }
                Body::Dir(d) if d.loaded => {
                    dir_ops += self.changed_names(ino).map(|v| v.len()).unwrap_or(0);
                }
                _ => {}
            }
        }
        let c = &self.counters;
        format!(
            "{{\"ok\":true,\"mode\":\"{}\",\"dead\":{},\"fsyncs\":{},\"fdatasyncs\":{},\"dirSyncs\":{},\"writes\":{},\"writtenBytes\":{},\"dirtyFiles\":{},\"pendingWrites\":{},\"pendingBytes\":{},\"pendingDirOps\":{},\"inodes\":{}}}",
            if self.mode == Mode::Chaos {
                "chaos"
            } else {
                "drop"
            },
            self.dead,
            c.fsyncs,
            c.fdatasyncs,
            c.dir_syncs,
            c.writes,
            c.written_bytes,
            dirty_files,
            pending_writes,
            pending_bytes,
            dir_ops,
            self.inodes.len()
        )
    }
}

fn meta_of(md: &fs::Metadata) -> Meta {
    let time = |s: i64, ns: i64| {
        if s >= 0 {
            UNIX_EPOCH + Duration::new(s as u64, ns as u32)
        } else {
            UNIX_EPOCH
        }
    };
    Meta {
        perm: (md.mode() & 0o7777) as u16,
        uid: md.uid(),
        gid: md.gid(),
        atime: time(md.atime(), md.atime_nsec()),
        mtime: time(md.mtime(), md.mtime_nsec()),
        ctime: time(md.ctime(), md.ctime_nsec()),
    }
}

fn new_meta(perm: u32, uid: u32, gid: u32) -> Meta {
    let now = SystemTime::now();
    Meta {
        perm: (perm & 0o7777) as u16,
        uid,
        gid,
        atime: now,
        mtime: now,
        ctime: now,
    }
}

/// Fills `buf` from `file` at `off`, zeros past its end.
fn read_full_at(file: &File, off: u64, buf: &mut [u8]) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], off + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf[done..].fill(0);
    Ok(())
}

/// Replays unsynced operations onto a file's object.
fn apply_ops(file: &File, ops: &[Op]) -> io::Result<()> {
    for op in ops {
        match op {
            Op::Write { off, data } => file.write_all_at(data, *off)?,
            Op::SetSize(size) => file.set_len(*size)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A backing directory for one test, removed when it ends.
    struct Backing(PathBuf);

    impl Backing {
        fn new() -> Self {
            static N: AtomicU64 = AtomicU64::new(0);
            let dir = std::env::temp_dir().join(format!(
                "powercut-unit-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            fs::create_dir_all(&dir).expect("temp dir");
            Backing(dir)
        }

        fn path(&self, rel: &str) -> PathBuf {
            self.0.join(rel)
        }

        /// The backing tree, objects excluded: name → contents (dirs: "/").
        fn tree(&self) -> BTreeMap<String, Vec<u8>> {
            fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
                for e in fs::read_dir(dir).expect("read_dir") {
                    let e = e.expect("entry");
                    let p = e.path();
                    let rel = p
                        .strip_prefix(base)
                        .expect("prefix")
                        .to_string_lossy()
                        .into_owned();
                    if rel == OBJECTS {
                        continue;
                    }
                    if e.file_type().expect("type").is_dir() {
                        out.insert(format!("{rel}/"), Vec::new());
                        walk(base, &p, out);
                    } else {
                        out.insert(rel, fs::read(&p).expect("read"));
                    }
                }
            }
            let mut out = BTreeMap::new();
            walk(&self.0, &self.0, &mut out);
            out
        }
    }

    impl Drop for Backing {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn open(b: &Backing) -> Model {
        Model::open(&b.0, Mode::Drop, 0).expect("open")
    }

    fn name(s: &str) -> &OsStr {
        OsStr::new(s)
    }

    fn tree(entries: &[(&str, &str)]) -> BTreeMap<String, Vec<u8>> {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
            .collect()
    }

    fn file(m: &mut Model, parent: Ino, n: &str, content: &[u8]) -> Ino {
        let ino = m.create(parent, name(n), 0o600, 0, 0).expect("create").ino;
        m.open_file(ino).expect("open");
        m.write(ino, 0, content).expect("write");
        ino
    }

    #[test]
    fn dirty_names_each_unsynced_file_and_entry_until_synced() {
        let b = Backing::new();
        let mut m = open(&b);
        let d = m.mkdir(ROOT, name("d"), 0o700, 0, 0).expect("mkdir").ino;
        let f = file(&mut m, d, "f\"q", b"abc");
        let dirty = m.dirty_json();
        assert!(
            dirty.contains(r#"{"path":"/d/f\"q","writes":1,"bytes":3}"#),
            "{dirty}"
        );
        assert!(dirty.contains(r#"{"path":"/d","op":"create"}"#), "{dirty}");
        assert!(
            dirty.contains(r#"{"path":"/d/f\"q","op":"create"}"#),
            "{dirty}"
        );
        m.sync(f, true).expect("fdatasync");
        m.sync(d, false).expect("fsync d");
        m.sync(ROOT, false).expect("fsync root");
        assert_eq!(m.dirty_json(), r#"{"ok":true,"files":[],"entries":[]}"#);
        m.unlink(d, name("f\"q")).expect("unlink");
        assert_eq!(
            m.dirty_json(),
            r#"{"ok":true,"files":[],"entries":[{"path":"/d/f\"q","op":"remove"}]}"#
        );
    }

    #[test]
    fn unsynced_data_is_seen_by_readers_and_lost_at_a_cut() {
        let b = Backing::new();
        fs::write(b.path("f"), b"v1").expect("seed");
        let mut m = open(&b);
        let ino = m.lookup(ROOT, name("f")).expect("lookup").ino;
        m.open_file(ino).expect("open");
        m.write(ino, 0, b"v2-longer").expect("write");
        assert_eq!(m.read(ino, 0, 100).expect("read"), b"v2-longer");
        assert_eq!(fs::read(b.path("f")).expect("backing"), b"v1");
        m.cut().expect("cut");
        assert_eq!(
            m.read(ino, 0, 100).map_err(|e| e.raw_os_error()),
            Err(Some(libc::EIO))
        );
        assert_eq!(b.tree(), tree(&[("f", "v1")]));
        assert!(!b.path(OBJECTS).exists());
    }

    #[test]
    fn fdatasync_persists_data_and_size_including_a_truncate() {
        let b = Backing::new();
        fs::write(b.path("f"), b"0123456789").expect("seed");
        let mut m = open(&b);
        let ino = m.lookup(ROOT, name("f")).expect("lookup").ino;
        m.open_file(ino).expect("open");
        m.setattr(ino, None, None, None, Some(4), None, None)
            .expect("truncate");
        m.write(ino, 8, b"xy").expect("write past the end");
        assert_eq!(m.read(ino, 0, 100).expect("read"), b"0123\0\0\0\0xy");
        m.sync(ino, true).expect("fdatasync");
        m.setattr(ino, None, None, None, Some(2), None, None)
            .expect("unsynced truncate");
        m.cut().expect("cut");
        assert_eq!(fs::read(b.path("f")).expect("backing"), b"0123\0\0\0\0xy");
    }

    #[test]
    fn a_new_file_needs_its_directory_synced() {
        let b = Backing::new();
        let mut m = open(&b);
        let f = file(&mut m, ROOT, "lost", b"data");
        m.sync(f, false).expect("fsync");
        m.cut().expect("cut");
        assert_eq!(b.tree(), tree(&[]));

        let mut m = open(&b);
        let f = file(&mut m, ROOT, "kept", b"data");
        m.sync(f, false).expect("fsync");
        m.sync(ROOT, false).expect("dir sync");
        m.cut().expect("cut");
        assert_eq!(b.tree(), tree(&[("kept", "data")]));
        let mode = fs::metadata(b.path("kept")).expect("stat").mode() & 0o7777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn a_directory_sync_without_the_file_sync_keeps_an_empty_file() {
        let b = Backing::new();
        let mut m = open(&b);
        file(&mut m, ROOT, "f", b"data");
        m.sync(ROOT, false).expect("dir sync");
        m.cut().expect("cut");
        assert_eq!(b.tree(), tree(&[("f", "")]));
    }

    #[test]
    fn create_rename_unlink_before_a_sync_leaves_nothing() {
        let b = Backing::new();
        fs::write(b.path("keep"), b"old").expect("seed");
        let mut m = open(&b);
        let f = file(&mut m, ROOT, "a", b"x");
        m.sync(f, false).expect("fsync");
        m.rename(ROOT, name("a"), ROOT, name("b"), 0)
            .expect("rename");
        m.rename(ROOT, name("b"), ROOT, name("keep"), 0)
            .expect("rename over");
        assert_eq!(m.read(f, 0, 10).expect("read"), b"x");
        m.unlink(ROOT, name("keep")).expect("unlink");
        assert!(m.lookup(ROOT, name("keep")).is_err());
        // Unsynced, all of it is undone: the old file is back.
        m.cut().expect("cut");
        assert_eq!(b.tree(), tree(&[("keep", "old")]));

        // Synced, the directory ends as readers saw it.
        let mut m = open(&b);
        let f = file(&mut m, ROOT, "a", b"x");
        m.rename(ROOT, name("a"), ROOT, name("b"), 0)
            .expect("rename");
        m.rename(ROOT, name("b"), ROOT, name("keep"), 0)
            .expect("rename over");
        m.sync(f, true).expect("fdatasync");
        m.unlink(ROOT, name("keep")).expect("unlink");
        m.sync(ROOT, false).expect("dir sync");
        m.cut().expect("cut");
        assert_eq!(b.tree(), tree(&[]));
    }

    #[test]
    fn a_rename_over_a_file_is_durable_only_with_the_directory() {
        let b = Backing::new();
        fs::write(b.path("db"), b"old").expect("seed");
        let mut m = open(&b);
        let f = file(&mut m, ROOT, "db.tmp", b"new");
        m.sync(f, false).expect("fsync");
        m.rename(ROOT, name("db.tmp"), ROOT, name("db"), 0)
            .expect("rename");
        m.sync(ROOT, false).expect("dir sync");
        m.cut().expect("cut");
        assert_eq!(b.tree(), tree(&[("db", "new")]));
    }

    #[test]
    fn an_open_unlinked_file_keeps_its_data_and_stays_gone_once_synced() {
        let b = Backing::new();
        fs::write(b.path("f"), b"abc").expect("seed");
        let mut m = open(&b);
        let ino = m.lookup(ROOT, name("f")).expect("lookup").ino;
        m.open_file(ino).expect("open");
        m.unlink(ROOT, name("f")).expect("unlink");
        m.sync(ROOT, false).expect("dir sync");
        assert_eq!(b.tree(), tree(&[]));
        m.write(ino, 3, b"def").expect("write");
        m.sync(ino, false).expect("fsync");
        assert_eq!(m.read(ino, 0, 10).expect("read"), b"abcdef");
        assert_eq!(m.attr(ino).expect("attr").nlink, 0);
    }

    #[test]
    fn directories_each_sync_their_own_entries() {
        let b = Backing::new();
        fs::create_dir(b.path("a")).expect("a");
        fs::write(b.path("a/f"), b"data").expect("f");
        let mut m = open(&b);
        let a = m.lookup(ROOT, name("a")).expect("a").ino;
        let sub = m.mkdir(ROOT, name("b"), 0o700, 0, 0).expect("mkdir").ino;
        m.rename(a, name("f"), sub, name("g"), 0).expect("rename");
        // The new directory's entry is synced, the directory itself is not.
        m.sync(ROOT, false).expect("root");
        m.sync(a, false).expect("a");
        m.cut().expect("cut");
        assert_eq!(b.tree(), tree(&[("a/", ""), ("b/", "")]));
        assert_eq!(fs::metadata(b.path("b")).expect("b").mode() & 0o777, 0o700);

        let mut m = open(&b);
        let a = m.lookup(ROOT, name("a")).expect("a").ino;
        let sub = m.lookup(ROOT, name("b")).expect("b").ino;
        let f = file(&mut m, a, "f", b"again");
        m.sync(f, false).expect("fsync");
        m.sync(a, false).expect("a");
        m.rename(a, name("f"), sub, name("g"), 0).expect("rename");
        m.sync(sub, false).expect("only the destination");
        m.cut().expect("cut");
        // Both names survive: the source directory was not synced.
        assert_eq!(
            b.tree(),
            tree(&[("a/", ""), ("a/f", "again"), ("b/", ""), ("b/g", "again")])
        );
    }

    #[test]
    fn moved_and_removed_directories_keep_the_backing_tree_whole() {
        let b = Backing::new();
        for d in ["x", "x/y", "x/y/z"] {
            fs::create_dir(b.path(d)).expect("mkdir");
        }
        fs::write(b.path("x/y/z/f"), b"deep").expect("f");
        let mut m = open(&b);
        let x = m.lookup(ROOT, name("x")).expect("x").ino;
        let y = m.lookup(x, name("y")).expect("y").ino;
        let z = m.lookup(y, name("z")).expect("z").ino;
        m.lookup(z, name("f")).expect("f");
        // Turn x/y/z inside out: z to the top, then x into z.
        m.rename(y, name("z"), ROOT, name("z"), 0).expect("z up");
        m.rename(ROOT, name("x"), z, name("x"), 0)
            .expect("x into z");
        // Syncing z first must move x into z while z is still stored inside x.
        m.sync(z, false).expect("z");
        m.sync(ROOT, false).expect("root");
        m.sync(y, false).expect("y");
        m.cut().expect("cut");
        assert_eq!(
            b.tree(),
            tree(&[("z/", ""), ("z/f", "deep"), ("z/x/", ""), ("z/x/y/", "")])
        );

        let mut m = open(&b);
        let z = m.lookup(ROOT, name("z")).expect("z").ino;
        let x = m.lookup(z, name("x")).expect("x").ino;
        let y = m.lookup(x, name("y")).expect("y").ino;
        m.rename(x, name("y"), ROOT, name("zz"), 0).expect("y up");
        m.unlink(z, name("f")).expect("unlink");
        m.rmdir(z, name("x")).expect("rmdir x");
        m.rmdir(ROOT, name("z")).expect("rmdir z");
        // Names sync in order: removing z (and x inside it) comes before
        // zz's new entry, so y, still stored in x, is parked, not deleted.
        m.sync(ROOT, false).expect("root");
        m.sync(y, false).expect("y");
        m.cut().expect("cut");
        assert_eq!(b.tree(), tree(&[("zz/", "")]));
    }

    #[test]
    fn fallocate_grows_zeroes_and_punches_as_unsynced_changes() {
        let b = Backing::new();
        fs::write(b.path("f"), [9u8; 100]).expect("seed");
        let mut m = open(&b);
        let ino = m.lookup(ROOT, name("f")).expect("lookup").ino;
        m.open_file(ino).expect("open");
        m.fallocate(ino, 0, 200, libc::FALLOC_FL_KEEP_SIZE)
            .expect("keep size");
        assert_eq!(m.attr(ino).expect("attr").size, 100);
        m.fallocate(ino, 150, 50, 0).expect("grow");
        assert_eq!(m.attr(ino).expect("attr").size, 200);
        m.fallocate(
            ino,
            10,
            20,
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
        )
        .expect("punch");
        let view = m.read(ino, 0, 300).expect("read");
        assert_eq!(&view[..10], &[9u8; 10]);
        assert!(view[10..30].iter().all(|&c| c == 0));
        assert_eq!(&view[30..100], &[9u8; 70]);
        assert!(view[100..].iter().all(|&c| c == 0));
        assert_eq!(
            m.fallocate(ino, 0, 1, libc::FALLOC_FL_COLLAPSE_RANGE)
                .map_err(|e| e.raw_os_error()),
            Err(Some(libc::EOPNOTSUPP))
        );
        m.cut().expect("cut");
        assert_eq!(fs::read(b.path("f")).expect("backing"), [9u8; 100]);
    }

    #[test]
    fn hard_links_and_symlinks_are_entries_like_any_other() {
        let b = Backing::new();
        let mut m = open(&b);
        let f = file(&mut m, ROOT, "f", b"data");
        m.sync(f, false).expect("fsync");
        m.link(f, ROOT, name("g")).expect("link");
        m.symlink(ROOT, name("s"), Path::new("f"), 0, 0)
            .expect("symlink");
        assert_eq!(m.attr(f).expect("attr").nlink, 2);
        m.sync(ROOT, false).expect("dir sync");
        m.cut().expect("cut");
        assert_eq!(
            b.tree(),
            tree(&[("f", "data"), ("g", "data"), ("s", "data")])
        );
        assert_eq!(
            fs::read_link(b.path("s")).expect("readlink"),
            Path::new("f")
        );
        let mut reopened = open(&b);
        let f = reopened.lookup(ROOT, name("f")).expect("f").ino;
        let g = reopened.lookup(ROOT, name("g")).expect("g").ino;
        assert_eq!(f, g, "two names of one file are one inode");
    }

    #[test]
    fn chaos_is_reproducible_and_keeps_synced_bytes() {
        fn run(seed: u64) -> BTreeMap<String, Vec<u8>> {
            let b = Backing::new();
            let mut m = Model::open(&b.0, Mode::Chaos, seed).expect("open");
            for i in 0..12 {
                let f = file(&mut m, ROOT, &format!("f{i:02}"), &[b'a'; 700]);
                m.sync(f, true).expect("fdatasync");
            }
            m.sync(ROOT, false).expect("dir sync");
            for i in 0..12 {
                let f = m.lookup(ROOT, name(&format!("f{i:02}"))).expect("f").ino;
                m.write(f, 700, &[b'b'; 4000]).expect("append");
                let g = file(&mut m, ROOT, &format!("g{i:02}"), b"new");
                m.sync(g, false).expect("fsync");
            }
            m.cut().expect("cut");
            b.tree()
        }
        let a = run(3);
        assert_eq!(a, run(3));
        assert_ne!(a, run(4));
        for (name, content) in &a {
            if name.starts_with('f') {
                assert_eq!(&content[..700], &[b'a'; 700][..], "{name}");
                assert!(
                    content[700..].iter().all(|&c| c == b'b' || c == 0),
                    "{name}"
                );
            }
        }
    }
}
