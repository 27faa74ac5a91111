//! SQLite's result codes by name, as a Durable Object's SQL errors spell them
//! (`near "x": syntax error at offset 0: SQLITE_ERROR`).

use rusqlite::ffi;

macro_rules! names {
    ($code:expr; $($name:ident),* $(,)?) => {
        match $code {
            $(ffi::$name => Some(stringify!($name)),)*
            _ => None,
        }
    };
}

/// The name of a primary result code.
pub fn primary(code: i32) -> String {
    let name = names!(code & 0xff;
        SQLITE_OK, SQLITE_ERROR, SQLITE_INTERNAL, SQLITE_PERM, SQLITE_ABORT, SQLITE_BUSY,
        SQLITE_LOCKED, SQLITE_NOMEM, SQLITE_READONLY, SQLITE_INTERRUPT, SQLITE_IOERR,
        SQLITE_CORRUPT, SQLITE_NOTFOUND, SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_PROTOCOL,
        SQLITE_EMPTY, SQLITE_SCHEMA, SQLITE_TOOBIG, SQLITE_CONSTRAINT, SQLITE_MISMATCH,
        SQLITE_MISUSE, SQLITE_NOLFS, SQLITE_AUTH, SQLITE_FORMAT, SQLITE_RANGE, SQLITE_NOTADB,
        SQLITE_NOTICE, SQLITE_WARNING, SQLITE_ROW, SQLITE_DONE,
    );
    match name {
        Some(n) => n.to_string(),
        None => format!("SQLITE_UNKNOWN_ERROR_CODE({code})"),
    }
}

/// The name of an extended result code, where SQLite defines one.
pub fn extended(code: i32) -> Option<&'static str> {
    names!(code;
        SQLITE_ABORT_ROLLBACK, SQLITE_BUSY_RECOVERY, SQLITE_BUSY_SNAPSHOT, SQLITE_BUSY_TIMEOUT,
        SQLITE_CANTOPEN_CONVPATH, SQLITE_CANTOPEN_DIRTYWAL, SQLITE_CANTOPEN_FULLPATH,
        SQLITE_CANTOPEN_ISDIR, SQLITE_CANTOPEN_NOTEMPDIR, SQLITE_CANTOPEN_SYMLINK,
        SQLITE_CONSTRAINT_CHECK, SQLITE_CONSTRAINT_COMMITHOOK, SQLITE_CONSTRAINT_DATATYPE,
        SQLITE_CONSTRAINT_FOREIGNKEY, SQLITE_CONSTRAINT_FUNCTION, SQLITE_CONSTRAINT_NOTNULL,
        SQLITE_CONSTRAINT_PINNED, SQLITE_CONSTRAINT_PRIMARYKEY, SQLITE_CONSTRAINT_ROWID,
        SQLITE_CONSTRAINT_TRIGGER, SQLITE_CONSTRAINT_UNIQUE, SQLITE_CONSTRAINT_VTAB,
        SQLITE_CORRUPT_INDEX, SQLITE_CORRUPT_SEQUENCE, SQLITE_CORRUPT_VTAB,
        SQLITE_ERROR_MISSING_COLLSEQ, SQLITE_ERROR_RETRY, SQLITE_ERROR_SNAPSHOT,
        SQLITE_IOERR_ACCESS, SQLITE_IOERR_AUTH, SQLITE_IOERR_BEGIN_ATOMIC, SQLITE_IOERR_BLOCKED,
        SQLITE_IOERR_CHECKRESERVEDLOCK, SQLITE_IOERR_CLOSE, SQLITE_IOERR_COMMIT_ATOMIC,
        SQLITE_IOERR_CONVPATH, SQLITE_IOERR_CORRUPTFS, SQLITE_IOERR_DATA, SQLITE_IOERR_DELETE,
        SQLITE_IOERR_DELETE_NOENT, SQLITE_IOERR_DIR_CLOSE, SQLITE_IOERR_DIR_FSYNC,
        SQLITE_IOERR_FSTAT, SQLITE_IOERR_FSYNC, SQLITE_IOERR_GETTEMPPATH, SQLITE_IOERR_LOCK,
        SQLITE_IOERR_MMAP, SQLITE_IOERR_NOMEM, SQLITE_IOERR_RDLOCK, SQLITE_IOERR_READ,
        SQLITE_IOERR_ROLLBACK_ATOMIC, SQLITE_IOERR_SEEK, SQLITE_IOERR_SHMLOCK,
        SQLITE_IOERR_SHMMAP, SQLITE_IOERR_SHMOPEN, SQLITE_IOERR_SHMSIZE,
        SQLITE_IOERR_SHORT_READ, SQLITE_IOERR_TRUNCATE, SQLITE_IOERR_UNLOCK,
        SQLITE_IOERR_VNODE, SQLITE_IOERR_WRITE, SQLITE_LOCKED_SHAREDCACHE, SQLITE_LOCKED_VTAB,
        SQLITE_NOTICE_RECOVER_ROLLBACK, SQLITE_NOTICE_RECOVER_WAL, SQLITE_OK_LOAD_PERMANENTLY,
        SQLITE_READONLY_CANTINIT, SQLITE_READONLY_CANTLOCK, SQLITE_READONLY_DBMOVED,
        SQLITE_READONLY_DIRECTORY, SQLITE_READONLY_RECOVERY, SQLITE_READONLY_ROLLBACK,
        SQLITE_WARNING_AUTOINDEX,
    )
}

/// The message for the last error on `db`, given the code a call returned.
///
/// # Safety
/// `db` must be an open connection used by this thread only.
pub unsafe fn message(db: *mut ffi::sqlite3, code: i32) -> String {
    // SAFETY: the caller's contract; errmsg is a NUL-terminated string owned
    // by the connection and copied here before any other call.
    let text = unsafe { std::ffi::CStr::from_ptr(ffi::sqlite3_errmsg(db)) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: as above.
    let (offset, ext) = unsafe {
        (
            ffi::sqlite3_error_offset(db),
            ffi::sqlite3_extended_errcode(db),
        )
    };
    let mut out = text;
    if offset >= 0 {
        out.push_str(&format!(" at offset {offset}"));
    }
    out.push_str(": ");
    out.push_str(&primary(code));
    // Connections report extended codes (rusqlite turns them on), so the
    // primary one is the low byte.
    if ext != code & 0xff {
        if let Some(name) = extended(ext) {
            out.push_str(&format!(" (extended: {name})"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_named_as_workerd_names_them() {
        assert_eq!(primary(ffi::SQLITE_CONSTRAINT), "SQLITE_CONSTRAINT");
        assert_eq!(primary(ffi::SQLITE_CONSTRAINT_UNIQUE), "SQLITE_CONSTRAINT");
        assert_eq!(primary(999), "SQLITE_UNKNOWN_ERROR_CODE(999)");
        assert_eq!(
            extended(ffi::SQLITE_CONSTRAINT_UNIQUE),
            Some("SQLITE_CONSTRAINT_UNIQUE")
        );
        assert_eq!(extended(ffi::SQLITE_ERROR), None);
    }
}
