//! A Durable Object's database file, run the way Cloudflare runs one: its
//! connection used synchronously on the JS thread, user SQL checked by an
//! authorizer, commits written there and synced on a commit thread.
//!
//! [`file`] the file and its connection, `kv` its key-value table and alarm,
//! `stmt` user SQL's statements, [`authorizer`] what user SQL may do,
//! [`errors`] SQLite's codes by name, [`Object`] one object's storage.

pub mod authorizer;
pub mod errors;
mod exec;
pub mod file;
mod kv;
mod stmt;
mod storage;

pub use storage::Object;

#[cfg(test)]
mod tests;
