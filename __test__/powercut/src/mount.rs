//! Mounting and detaching, done here rather than by fuser: fuser unmounts
//! the mount point when its session ends, and after a cut the session of a
//! detached mount ends while the next mount already sits on the same path,
//! which fuser would then unmount. Here a mount is only ever detached by the
//! process that made it, and only while it is still the one on top.

use std::ffi::CString;
use std::fs::{self, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

fn cstring(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// Mounts a FUSE file system named `fsname` at `mountpoint` with mount(2)
/// (root needs no fusermount); returns the /dev/fuse descriptor to serve.
pub fn mount(mountpoint: &Path, fsname: &str) -> io::Result<OwnedFd> {
    let dev = OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")?;
    let root_mode = fs::metadata(mountpoint)?.mode();
    // allow_other: the processes under test may run as any user;
    // default_permissions: the kernel checks modes against our attributes.
    // SAFETY: getuid/getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let data = format!(
        "fd={},rootmode={root_mode:o},user_id={uid},group_id={gid},allow_other,default_permissions",
        dev.as_raw_fd()
    );
    let source = cstring(fsname.as_bytes())?;
    let target = cstring(mountpoint.as_os_str().as_bytes())?;
    let fstype = cstring(b"fuse.powercut")?;
    let data = cstring(data.as_bytes())?;
    let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOATIME;
    // SAFETY: NUL-terminated strings that outlive the call.
    let r = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            flags,
            data.as_ptr().cast(),
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(OwnedFd::from(dev))
}

/// Detaches (MNT_DETACH) the mount at `mountpoint` if the one on top there
/// is `fsname`; open files on it keep it alive, answered by its daemon.
pub fn detach(mountpoint: &Path, fsname: &str) -> io::Result<()> {
    if !on_top(mountpoint, fsname)? {
        return Ok(());
    }
    let target = cstring(mountpoint.as_os_str().as_bytes())?;
    // SAFETY: a NUL-terminated path that outlives the call.
    if unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// True when the last (topmost) mount at `mountpoint` in
/// /proc/self/mountinfo has `fsname` as its source.
fn on_top(mountpoint: &Path, fsname: &str) -> io::Result<bool> {
    let info = fs::read_to_string("/proc/self/mountinfo")?;
    let point = escape(&mountpoint.to_string_lossy());
    let mut top = None;
    for line in info.lines() {
        // id parent major:minor root mount-point options [optional…] - type source super-options
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(dash) = fields.iter().position(|&f| f == "-") else {
            continue;
        };
        if fields.get(4) == Some(&point.as_str()) {
            top = fields.get(dash + 2).copied();
        }
    }
    Ok(top == Some(fsname))
}

/// mountinfo's escaping of a path (space, tab, newline, backslash).
fn escape(path: &str) -> String {
    let mut out = String::new();
    for c in path.chars() {
        match c {
            ' ' => out.push_str("\\040"),
            '\t' => out.push_str("\\011"),
            '\n' => out.push_str("\\012"),
            '\\' => out.push_str("\\134"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_escapes_spaces_and_backslashes() {
        assert_eq!(escape("/tmp/a b\\c"), "/tmp/a\\040b\\134c");
    }

    #[test]
    fn the_root_file_system_is_on_top_of_slash_and_we_are_not() {
        assert!(!on_top(Path::new("/"), "powercut-no-such-mount").expect("mountinfo"));
    }
}
