//! Where things live in a durable directory.
//!
//! ```text
//! <dir>/_registry.db                 the catalog (and the directory's lock)
//! <dir>/<class>/<xx>/<hash>.db       one worker: hash = blake3(id), xx = its first two hex digits
//! ```
//!
//! The file name is a hash of the id and never the id: an id may hold slashes,
//! be hundreds of characters long, or differ from another only in case, and none
//! of that may reach the file system. The id is stored inside the file and
//! checked on open, so two ids can never share a file silently.
//!
//! Modes (Unix): every directory the engine creates, the durable directory
//! itself and any parent it makes included, is created [`DIR_MODE`]; every
//! file, the worker files and catalog with their `-wal` and `-journal`, and a
//! worker file being built (`.new`), is created [`FILE_MODE`]. Created so, not
//! changed after: no other user can open one in between. SQLite creates its
//! own files, so the mode of a database comes from its compile-time
//! `SQLITE_DEFAULT_FILE_PERMISSIONS` (`.cargo/config.toml`), and SQLite gives
//! a `-wal` or `-journal` the mode of its database. A directory that existed
//! before is left as it is.

use std::path::{Path, PathBuf};

pub const REGISTRY_FILE: &str = "_registry.db";

/// The mode every directory the engine creates is created with (Unix).
pub const DIR_MODE: u32 = 0o700;

/// The mode every file in a durable directory is created with (Unix): the one
/// SQLite is built with (`SQLITE_DEFAULT_FILE_PERMISSIONS`).
pub const FILE_MODE: u32 = 0o600;

/// The path of a worker's database file.
pub fn worker_path(dir: &Path, class: &str, id: &str) -> PathBuf {
    let hex = blake3::hash(id.as_bytes()).to_hex();
    let hex = hex.as_str();
    dir.join(class).join(&hex[..2]).join(format!("{hex}.db"))
}

/// The files SQLite may keep beside a database.
pub fn sidecars(path: &Path) -> [PathBuf; 3] {
    let with = |suffix: &str| {
        let mut s = path.as_os_str().to_owned();
        s.push(suffix);
        PathBuf::from(s)
    };
    [with("-wal"), with("-shm"), with("-journal")]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_differ_only_in_case_or_hold_slashes_get_distinct_plain_names() {
        let dir = Path::new("/d");
        let a = worker_path(dir, "Cart", "cart");
        let b = worker_path(dir, "Cart", "Cart");
        let c = worker_path(dir, "Cart", "../../etc/passwd");
        assert_ne!(a, b);
        assert!(c.starts_with("/d/Cart"));
        assert_eq!(c.components().count(), 5); // / d Cart xx hash.db
        let name = c.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        assert_eq!(name.len(), 64 + 3);
        assert!(name[..64].chars().all(|ch| ch.is_ascii_hexdigit()));
    }
}
