//! The one error type of the storage core.
//!
//! Every variant maps to a stable code (`ERR_DURABLE_*`) that crosses napi as the
//! JS error's `code`; the message says what failed and where, never as JSON.

use std::fmt;
use std::path::PathBuf;

/// What went wrong in the storage core.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Another process (or another host in this one) owns the directory.
    Locked { dir: PathBuf },
    /// A file is not a worker database, or belongs to another id.
    Corrupt { path: PathBuf, detail: String },
    /// The host was closed before this operation reached the disk.
    Closed,
    /// The operating system refused a file operation (full disk, permissions, …).
    Io {
        context: String,
        source: std::io::Error,
    },
    /// SQLite refused a statement for a reason that is not one of the above.
    Sqlite {
        context: String,
        source: rusqlite::Error,
    },
    /// A failure shared by several callers (one catalog commit answers many),
    /// kept as its message.
    Shared { context: String, detail: String },
    /// A file written by a newer version of the package, in a format this
    /// build does not read.
    Format {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    /// A name the caller chose (a collection or field declaration) that the
    /// storage cannot use.
    Name { detail: String },
    /// The JS side broke the contract of a call (arrays of different lengths,
    /// a value it should have checked first): a bug in the package, not the
    /// disk's doing nor the user's.
    Internal { detail: String },
    /// A snapshot or restore that cannot be made as asked (a target that is
    /// not empty, a host it cannot copy, a damaged file).
    Backup { detail: String },
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The stable code a JS caller switches on.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Locked { .. } => "ERR_DURABLE_LOCKED",
            Error::Corrupt { .. } => "ERR_DURABLE_CORRUPT",
            Error::Closed => "ERR_DURABLE_CLOSED",
            Error::Io { .. } | Error::Sqlite { .. } | Error::Shared { .. } => "ERR_DURABLE_IO",
            Error::Name { .. } => "ERR_DURABLE_NAME",
            Error::Format { .. } => "ERR_DURABLE_STATE_FORMAT",
            Error::Internal { .. } => "ERR_DURABLE_INTERNAL",
            Error::Backup { .. } => "ERR_DURABLE_BACKUP",
        }
    }

    pub(crate) fn internal(detail: impl Into<String>) -> Self {
        Error::Internal {
            detail: detail.into(),
        }
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// Classifies a SQLite failure: a file that is not a database is corrupt,
    /// anything else is reported with the context it happened in.
    pub(crate) fn sqlite(
        context: impl Into<String>,
        path: &std::path::Path,
        e: rusqlite::Error,
    ) -> Self {
        use rusqlite::ErrorCode;
        match e.sqlite_error_code() {
            Some(ErrorCode::NotADatabase) | Some(ErrorCode::DatabaseCorrupt) => Error::Corrupt {
                path: path.to_path_buf(),
                detail: e.to_string(),
            },
            _ => Error::Sqlite {
                context: context.into(),
                source: e,
            },
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Locked { dir } => write!(
                f,
                "the directory {} is owned by another process (or another open host); one process owns a durable directory until it exits",
                dir.display()
            ),
            Error::Corrupt { path, detail } => {
                write!(f, "{} is not a valid worker database: {detail}", path.display())
            }
            Error::Closed => write!(f, "the host is closed"),
            Error::Io { context, source } => write!(f, "{context}: {source}"),
            Error::Sqlite { context, source } => write!(f, "{context}: {source}"),
            Error::Shared { context, detail } => write!(f, "{context}: {detail}"),
            Error::Name { detail } => write!(f, "{detail}"),
            Error::Format {
                path,
                found,
                supported,
            } => write!(
                f,
                "{} is in storage format {found}, written by a newer version of durable-workers; this one reads format {supported} and older: upgrade the package to open it",
                path.display()
            ),
            Error::Internal { detail } => write!(f, "internal error: {detail}"),
            Error::Backup { detail } => write!(f, "{detail}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Sqlite { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_has_its_code_and_only_the_disk_is_io() {
        let io = Error::io("write", std::io::Error::other("disk full"));
        assert_eq!(io.code(), "ERR_DURABLE_IO");
        assert_eq!(
            Error::internal("arrays differ").code(),
            "ERR_DURABLE_INTERNAL"
        );
        assert_eq!(
            Error::internal("arrays differ").to_string(),
            "internal error: arrays differ"
        );
        let name = Error::Name {
            detail: "bad".into(),
        };
        assert_eq!(name.code(), "ERR_DURABLE_NAME");
        assert_eq!(Error::Closed.code(), "ERR_DURABLE_CLOSED");
    }
}
