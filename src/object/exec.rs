//! User SQL on an object's connection: `sql.exec` as workerd runs it.

use std::os::raw::c_int;

use rusqlite::{ffi, Connection};

use super::authorizer;
use super::errors;
use super::file::{Bind, Exec, ExecError, ObjectFile};
use super::stmt::Stmt;

impl ObjectFile {
    /// Runs user SQL: every statement but the last to its first step, the
    /// last to its end, its rows packed. A statement that writes first opens
    /// the implicit transaction (`began` is set). A query that is one
    /// statement is kept prepared once it has run twice ([`StmtCache`]).
    pub fn exec(
        &mut self,
        sql: &str,
        binds: &[Bind],
        began: &mut bool,
    ) -> std::result::Result<Exec, ExecError> {
        if let Some(stmt) = self.stmts.take(sql) {
            let out = self.run_last(&stmt, binds, began);
            if out.is_ok() {
                self.stmts.keep(sql, stmt, true);
            }
            return out;
        }
        let db = unsafe_handle(&self.conn);
        let bytes = sql.as_bytes();
        let mut at = 0usize;
        loop {
            let first = at == 0;
            let stmt = {
                let _armed = self.guard.arm();
                Stmt::prepare(db, &bytes[at..])
            };
            let (stmt, used) = match stmt {
                Ok(v) => v,
                Err(code) => return Err(self.sql_error(db, code)),
            };
            // What the authorizer cannot see with stock SQLite (a rename
            // into a reserved name).
            let text = String::from_utf8_lossy(&bytes[at..at + used]);
            authorizer::check_statement(&text).map_err(ExecError::Sql)?;
            at += used;
            while at < bytes.len() && bytes[at].is_ascii_whitespace() {
                at += 1;
            }
            let Some(stmt) = stmt else {
                return Err(ExecError::Sql(
                    "SQL code did not contain a statement.".into(),
                ));
            };
            if at < bytes.len() {
                if stmt.parameter_count() > 0 {
                    return Err(ExecError::Sql(
                        "When executing multiple SQL statements in a single call, only the last statement can have parameters."
                            .into(),
                    ));
                }
                self.begin_if_writes(&stmt, began)?;
                let _armed = self.guard.arm();
                match stmt.step() {
                    ffi::SQLITE_ROW | ffi::SQLITE_DONE => continue,
                    code => return Err(self.sql_error(db, code)),
                }
            }
            let out = self.run_last(&stmt, binds, began);
            if out.is_ok() && first {
                self.stmts.keep(sql, stmt, false);
            }
            return out;
        }
    }

    /// A statement that writes needs the file, and opens the implicit
    /// transaction if none is open.
    fn begin_if_writes(&self, stmt: &Stmt, began: &mut bool) -> std::result::Result<(), ExecError> {
        if !stmt.readonly() {
            if self.wal.is_none() {
                return Err(ExecError::NeedsFile);
            }
            *began |= self.begin()?;
        }
        Ok(())
    }

    /// The last statement of an `exec`: bound, run to its end, its rows packed.
    fn run_last(
        &self,
        stmt: &Stmt,
        binds: &[Bind],
        began: &mut bool,
    ) -> std::result::Result<Exec, ExecError> {
        let db = unsafe_handle(&self.conn);
        self.begin_if_writes(stmt, began)?;
        if stmt.parameter_count() != binds.len() {
            return Err(ExecError::Sql(
                "Wrong number of parameter bindings for SQL query.".into(),
            ));
        }
        for (i, b) in binds.iter().enumerate() {
            let code = stmt.bind(i + 1, b);
            if code != ffi::SQLITE_OK {
                return Err(self.sql_error(db, code));
            }
        }
        let mut out = Exec::default();
        let _armed = self.guard.arm();
        // A kept statement's counts from a run that failed are not this run's.
        stmt.take_rows();
        loop {
            match stmt.step() {
                ffi::SQLITE_ROW => {
                    stmt.pack_row(&mut out.cells);
                    out.rows += 1;
                }
                ffi::SQLITE_DONE => break,
                code => return Err(self.sql_error(db, code)),
            }
        }
        // After the first step: a kept statement is prepared again there if
        // the schema changed (`SELECT *` of an altered table).
        out.columns = stmt.columns();
        // The last statement's alone, as workerd reports them.
        (out.rows_read, out.rows_written) = stmt.take_rows();
        Ok(out)
    }

    fn sql_error(&self, db: *mut ffi::sqlite3, code: c_int) -> ExecError {
        if self.guard.take_transaction_refusal() {
            return ExecError::Sql(authorizer::TRANSACTION_MESSAGE.into());
        }
        // SAFETY: db is this connection's, used on this thread.
        ExecError::Sql(unsafe { errors::message(db, code) })
    }
}

fn unsafe_handle(conn: &Connection) -> *mut ffi::sqlite3 {
    // SAFETY: the handle is used only while `conn` is borrowed, on its thread,
    // for calls rusqlite does not track (statements finalized before return).
    unsafe { conn.handle() }
}
