//! A worker file's bytes for a snapshot or an archive, and the log frames
//! no commit has shipped yet (see `crate::backup`, `crate::archive`).

use std::path::Path;

use rusqlite::MAIN_DB;

use super::WorkerFile;
use crate::cache::{self, PageCache};
use crate::collections::Tables;
use crate::error::{Error, Result};
use crate::sqlite::{self, Durability};
use crate::wal::Wal;

impl WorkerFile {
    /// Hands `f` the file's bytes as of its last commit, its log's frames
    /// included: a whole database file in WAL mode, what a snapshot keeps.
    pub fn with_image<T>(&mut self, f: impl FnOnce(&[u8]) -> Result<T>) -> Result<T> {
        self.cache.reading(&self.conn, &self.path)?;
        let image = self
            .conn
            .serialize(MAIN_DB)
            .map_err(|e| Error::sqlite("snapshot", &self.path, e))?;
        f(&image)
    }

    /// The log's frames no commit has shipped to an archive yet (a
    /// backfill's, an open's): read before [`WorkerFile::close`] empties it.
    pub fn unshipped(&self) -> Result<Option<crate::wal::Pages>> {
        let frames: i64 = self
            .conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get(1))
            .map_err(|e| Error::sqlite("checkpoint", &self.path, e))?;
        if frames <= 0 {
            return Ok(None);
        }
        self.wal.pending(frames as u64).pages()
    }

    /// [`WorkerFile::with_image`] for a file no connection holds whose log
    /// has frames: opened, read, and closed (which checkpoints it, as the
    /// worker's next open would).
    pub fn with_image_of<T>(
        path: &Path,
        durability: Durability,
        f: impl FnOnce(&[u8]) -> Result<T>,
    ) -> Result<T> {
        let mut conn = sqlite::open_worker(path)?;
        sqlite::configure(&conn, path, durability, cache::WORKER_KIB)?;
        let wal = Wal::attach(&mut conn, path, durability)?;
        let mut file = WorkerFile {
            conn,
            path: path.to_path_buf(),
            tables: Tables::default(),
            cache: PageCache::default(),
            wal,
        };
        let out = file.with_image(f);
        file.close()?;
        out
    }
}
