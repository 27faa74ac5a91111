#![deny(clippy::all)]
//! The storage core of durable-workers.
//!
//! What a JS caller can rely on: when a write this crate was handed resolves,
//! its batch is committed (and synced, under full durability); a directory has
//! one owner, and the operating system's lock on its catalog is that ownership;
//! a worker's file holds its id and is refused under any other.
//!
//! How: every worker is its own SQLite file (WAL, exclusive locking), written
//! one batch per transaction on the commit threads ([`committer`]; reads,
//! opens and closes run on tokio's blocking pool); the catalog of what
//! exists is one connection on one thread, fed by a queue whose waiting
//! statements commit together; the live set decides which open workers to close
//! when work arrives, with no timer of its own.
//!
//! What it costs: one sync per worker commit (shared by every call a commit
//! carries), one sync per catalog batch, and per open worker a file handle and
//! a small page cache.
//!
//! Layout: [`layout`] paths, [`store`] a worker file, [`cache`] its page cache, [`collections`] its collections,
//! [`catalog`] the registry, [`evict`] the live set, [`engine`] a directory,
//! [`committer`] the commit threads, [`wal`] a worker's log synced after its
//! commit, [`sqlite`] connection settings, `shm` a worker's WAL index (Linux),
//! `log_files` its log's first sync (Linux), [`files`] directories made and synced, [`repair`] rebuilding a catalog from worker files, [`error`] the one error
//! type and its codes, [`napi`] the napi surface.

pub mod archive;
pub mod backup;
pub mod cache;
pub mod catalog;
pub mod collections;
pub mod committer;
pub mod counters;
pub mod engine;
pub mod error;
pub mod evict;
pub mod files;
pub mod handles;
pub mod inplace;
pub mod layout;
#[cfg(target_os = "linux")]
pub mod log_files;
pub mod napi;
pub mod object;
pub mod repair;
#[cfg(target_os = "linux")]
pub mod shm;
pub mod sqlite;
pub mod store;
pub mod wal;
