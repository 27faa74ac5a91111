//! A statement prepared by hand, for user SQL.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int};

use rusqlite::ffi;

use super::file::Bind;

extern "C" {
    // Added to this build's SQLite (vendor/libsqlite3-sys/row_counts.rs):
    // the rows a statement read and wrote, counted where workerd counts them.
    fn sqlite3_dw_stmt_rows(
        stmt: *mut ffi::sqlite3_stmt,
        read: *mut u64,
        written: *mut u64,
        reset: c_int,
    );
}

/// A statement prepared by hand: rusqlite's `prepare` refuses SQL with more
/// than one statement, and prepares the rest before the first has run.
pub(super) struct Stmt(*mut ffi::sqlite3_stmt);

impl Drop for Stmt {
    fn drop(&mut self) {
        // SAFETY: a statement this struct owns, finalized once.
        unsafe { ffi::sqlite3_finalize(self.0) };
    }
}

impl Stmt {
    /// The rows read and written since the last call (workerd's
    /// `rowsRead`, `rowsWritten`); the counts start again from zero.
    pub(super) fn take_rows(&self) -> (u64, u64) {
        let (mut read, mut written) = (0u64, 0u64);
        // SAFETY: a live statement this struct owns; the two outputs are locals.
        unsafe { sqlite3_dw_stmt_rows(self.0, &mut read, &mut written, 1) };
        (read, written)
    }

    /// The first statement of `sql` and the bytes it used; `None` for only
    /// whitespace and comments.
    pub(super) fn prepare(
        db: *mut ffi::sqlite3,
        sql: &[u8],
    ) -> std::result::Result<(Option<Stmt>, usize), c_int> {
        let mut stmt = std::ptr::null_mut();
        let mut tail: *const c_char = std::ptr::null();
        let Ok(len) = c_int::try_from(sql.len()) else {
            return Err(ffi::SQLITE_TOOBIG);
        };
        // SAFETY: sql is valid for len bytes and outlives the call; tail
        // points into it (or is null) afterwards.
        let rc = unsafe {
            ffi::sqlite3_prepare_v3(db, sql.as_ptr().cast(), len, 0, &mut stmt, &mut tail)
        };
        if rc != ffi::SQLITE_OK {
            return Err(rc);
        }
        let used = if tail.is_null() {
            sql.len()
        } else {
            (tail as usize).saturating_sub(sql.as_ptr() as usize)
        };
        Ok(((!stmt.is_null()).then_some(Stmt(stmt)), used))
    }

    pub(super) fn readonly(&self) -> bool {
        // SAFETY: a live statement.
        unsafe { ffi::sqlite3_stmt_readonly(self.0) != 0 }
    }

    pub(super) fn parameter_count(&self) -> usize {
        // SAFETY: a live statement.
        unsafe { ffi::sqlite3_bind_parameter_count(self.0) }.max(0) as usize
    }

    pub(super) fn step(&self) -> c_int {
        // SAFETY: a live statement.
        unsafe { ffi::sqlite3_step(self.0) }
    }

    pub(super) fn bind(&self, i: usize, b: &Bind) -> c_int {
        let i = i as c_int;
        // SAFETY: a live statement; SQLITE_TRANSIENT makes SQLite copy the
        // text or blob before the call returns.
        unsafe {
            match b {
                Bind::Null => ffi::sqlite3_bind_null(self.0, i),
                Bind::Real(x) => ffi::sqlite3_bind_double(self.0, i, *x),
                Bind::Text(s) => ffi::sqlite3_bind_text64(
                    self.0,
                    i,
                    s.as_ptr().cast(),
                    s.len() as u64,
                    ffi::SQLITE_TRANSIENT(),
                    ffi::SQLITE_UTF8 as u8,
                ),
                Bind::Blob(v) => ffi::sqlite3_bind_blob64(
                    self.0,
                    i,
                    v.as_ptr().cast(),
                    v.len() as u64,
                    ffi::SQLITE_TRANSIENT(),
                ),
            }
        }
    }

    pub(super) fn columns(&self) -> Vec<String> {
        // SAFETY: a live statement; names are copied before the next call.
        unsafe {
            let n = ffi::sqlite3_column_count(self.0);
            (0..n)
                .map(|i| {
                    let p = ffi::sqlite3_column_name(self.0, i);
                    if p.is_null() {
                        String::new()
                    } else {
                        CStr::from_ptr(p).to_string_lossy().into_owned()
                    }
                })
                .collect()
        }
    }

    /// Appends the current row's cells: a tag byte, then 0 null; 1 an f64
    /// (integers too: a JS number); 2 text and 3 blob, each a u32 length and
    /// the bytes.
    pub(super) fn pack_row(&self, out: &mut Vec<u8>) {
        // SAFETY: a live statement on a row; each pointer is read at once,
        // with its length, before the next column call.
        unsafe {
            let n = ffi::sqlite3_column_count(self.0);
            for i in 0..n {
                match ffi::sqlite3_column_type(self.0, i) {
                    ffi::SQLITE_INTEGER | ffi::SQLITE_FLOAT => {
                        out.push(1);
                        let x = if ffi::sqlite3_column_type(self.0, i) == ffi::SQLITE_INTEGER {
                            ffi::sqlite3_column_int64(self.0, i) as f64
                        } else {
                            ffi::sqlite3_column_double(self.0, i)
                        };
                        out.extend_from_slice(&x.to_le_bytes());
                    }
                    ffi::SQLITE_TEXT => {
                        let p = ffi::sqlite3_column_text(self.0, i);
                        let len = ffi::sqlite3_column_bytes(self.0, i).max(0) as usize;
                        out.push(2);
                        out.extend_from_slice(&(len as u32).to_le_bytes());
                        if !p.is_null() {
                            out.extend_from_slice(std::slice::from_raw_parts(p, len));
                        }
                    }
                    ffi::SQLITE_BLOB => {
                        let p = ffi::sqlite3_column_blob(self.0, i).cast::<u8>();
                        let len = ffi::sqlite3_column_bytes(self.0, i).max(0) as usize;
                        out.push(3);
                        out.extend_from_slice(&(len as u32).to_le_bytes());
                        if !p.is_null() {
                            out.extend_from_slice(std::slice::from_raw_parts(p, len));
                        }
                    }
                    _ => out.push(0),
                }
            }
        }
    }
}

impl Stmt {
    /// Ready to run again: the last run's state and bindings dropped.
    pub(super) fn rewind(&self) {
        // SAFETY: a live statement. reset's code repeats the last step's
        // error, already reported.
        unsafe {
            ffi::sqlite3_reset(self.0);
            ffi::sqlite3_clear_bindings(self.0);
        }
    }
}

// SAFETY: a statement moves with the connection that made it (both live in
// one `ObjectFile`, which one thread at a time uses under the object's lock);
// SQLite's connections and statements may change threads between calls.
unsafe impl Send for Stmt {}

/// Queries whose whole text is one statement, kept prepared after their
/// second run: a hot object stops parsing and planning the SQL it runs on
/// every request (about half of a small statement's time), while an object
/// that runs a query once keeps no statement for it (a prepared statement
/// holds kilobytes; a query seen once, eight bytes of its hash).
#[derive(Default)]
pub(super) struct StmtCache {
    /// Most recently used last.
    kept: Vec<(Box<str>, Stmt)>,
    /// Hashes of queries run once, not kept yet.
    seen: Vec<u64>,
}

/// Statements kept per object.
const KEPT: usize = 16;
/// Queries remembered as seen once; the oldest half is forgotten when full.
const SEEN: usize = 64;

impl StmtCache {
    /// The kept statement for `sql`, taken out (give it back with `keep`).
    pub(super) fn take(&mut self, sql: &str) -> Option<Stmt> {
        let i = self.kept.iter().rposition(|(q, _)| &**q == sql)?;
        Some(self.kept.remove(i).1)
    }

    /// After a run that succeeded: keeps `stmt` if `sql` ran before (or was
    /// kept), else remembers that it ran once.
    pub(super) fn keep(&mut self, sql: &str, stmt: Stmt, was_kept: bool) {
        let h = hash(sql);
        if !was_kept {
            match self.seen.iter().position(|&s| s == h) {
                Some(i) => {
                    self.seen.swap_remove(i);
                }
                None => {
                    if self.seen.len() >= SEEN {
                        self.seen.drain(..SEEN / 2);
                    }
                    self.seen.push(h);
                    return;
                }
            }
        }
        stmt.rewind();
        if self.kept.len() >= KEPT {
            self.kept.remove(0);
        }
        self.kept.push((sql.into(), stmt));
    }

    /// Finalizes every kept statement (before the connection closes).
    pub(super) fn clear(&mut self) {
        self.kept.clear();
        self.seen.clear();
    }
}

fn hash(sql: &str) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h =
        std::hash::BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
            .build_hasher();
    h.write(sql.as_bytes());
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::Stmt;
    use rusqlite::{ffi, Connection};

    /// Runs `sql` (one statement) to its end; the rows it read and wrote.
    fn run(db: *mut ffi::sqlite3, sql: &str) -> (u64, u64) {
        let Ok((Some(stmt), _)) = Stmt::prepare(db, sql.as_bytes()) else {
            panic!("{sql} did not prepare");
        };
        while stmt.step() == ffi::SQLITE_ROW {}
        stmt.take_rows()
    }

    #[test]
    fn rows_are_counted_where_workerd_counts_them_and_update_limit_parses() -> rusqlite::Result<()>
    {
        let conn = Connection::open_in_memory()?;
        // SAFETY: the handle is used on this thread while `conn` lives.
        let db = unsafe { conn.handle() };
        conn.execute_batch("CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT UNIQUE NOT NULL)")?;
        // Three rows and their three UNIQUE entries.
        assert_eq!(
            run(db, "INSERT INTO t VALUES (1, 'x'), (2, 'y'), (3, 'z')").1,
            6
        );
        assert_eq!(run(db, "SELECT * FROM t"), (3, 0));
        assert_eq!(run(db, "SELECT * FROM t WHERE a = 2"), (1, 0));
        // Needs the parser vendor/libsqlite3-sys swaps in, and the flag in .cargo/config.toml.
        assert_eq!(
            run(db, "UPDATE t SET b = b || '!' ORDER BY a DESC LIMIT 1").1,
            2
        );
        assert_eq!(run(db, "DELETE FROM t ORDER BY a LIMIT 2").1, 2);
        let left: String = conn.query_row("SELECT group_concat(b) FROM t", [], |r| r.get(0))?;
        assert_eq!(left, "z!");
        Ok(())
    }
}
