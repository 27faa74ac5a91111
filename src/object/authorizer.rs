//! What user SQL may do on a Durable Object's connection: workerd's
//! authorizer (`SqliteDatabase::isAuthorized` in `util/sqlite.c++`, with the
//! rules of `SqlStorageRegulator` in `api/sql.c++`) and the connection
//! settings of its `setupSecurity`, ported.
//!
//! The authorizer judges only while the `Guard` is armed, which the caller
//! does around preparing *and* stepping user SQL: a step can re-prepare after
//! a schema change, and table-valued pragmas, `PRAGMA optimize`, FTS5 and
//! R*Tree prepare SQL of their own while stepping. Every other statement is
//! the engine's and is trusted, as workerd's `TRUSTED` regulator is.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};
use std::sync::Arc;

use rusqlite::config::DbConfig;
use rusqlite::{ffi, Connection};

/// workerd's message for BEGIN/SAVEPOINT in user SQL (`SqlStorageRegulator::allowTransactions`).
pub const TRANSACTION_MESSAGE: &str = concat!(
    "To execute a transaction, please use the state.storage.transaction() or ",
    "state.storage.transactionSync() APIs instead of the SQL BEGIN TRANSACTION or SAVEPOINT ",
    "statements. The JavaScript API is safer because it will automatically roll back on ",
    "exceptions, and because it interacts correctly with Durable Objects' automatic atomic ",
    "write coalescing."
);

/// A prepare refused by the authorizer, as workerd words it (`dbErrorMessage`:
/// SQLite's message, then the code's name).
const NOT_AUTHORIZED: &str = "not authorized: SQLITE_AUTH";

/// Shared between the connection's authorizer callback and the code that runs user SQL.
pub struct Guard {
    /// How many `Armed` are alive: nested arming (prepare, then step) is allowed.
    depth: AtomicU32,
    transaction_refused: AtomicBool,
}

impl Guard {
    pub fn new() -> Arc<Guard> {
        Arc::new(Guard {
            depth: AtomicU32::new(0),
            transaction_refused: AtomicBool::new(false),
        })
    }

    /// User SQL is being prepared or stepped while the returned value lives;
    /// outside it, statements are the engine's own and are trusted (only
    /// `main`, and `temp` read-only, as for workerd's `TRUSTED`).
    #[must_use = "the guard is disarmed when the returned value is dropped"]
    pub fn arm(&self) -> Armed<'_> {
        if self.depth.fetch_add(1, Relaxed) == 0 {
            // A refusal recorded for an earlier statement is not this one's.
            self.transaction_refused.store(false, Relaxed);
        }
        Armed { guard: self }
    }

    /// True (once) if a transaction statement (BEGIN/COMMIT/END/ROLLBACK/
    /// SAVEPOINT/RELEASE) was refused since the guard was armed: the caller
    /// then reports `TRANSACTION_MESSAGE` instead of SQLite's "not authorized".
    pub fn take_transaction_refusal(&self) -> bool {
        self.transaction_refused.swap(false, Relaxed)
    }

    fn armed(&self) -> bool {
        self.depth.load(Relaxed) > 0
    }
}

/// The guard armed; disarms on drop.
pub struct Armed<'a> {
    guard: &'a Guard,
}

impl Drop for Armed<'_> {
    fn drop(&mut self) {
        self.guard.depth.fetch_sub(1, Relaxed);
    }
}

/// Where the guard is kept on the connection: SQLite frees it when the
/// connection closes or the entry is replaced.
const CLIENT_DATA: &CStr = c"durable_workers.object.authorizer";

/// Installs the authorizer on `conn`.
///
/// Through the C API rather than `Connection::authorizer`, which needs
/// `&mut Connection`; the guard is owned by the connection's client data.
pub fn install(conn: &Connection, guard: Arc<Guard>) -> rusqlite::Result<()> {
    // SAFETY: `conn.handle()` is this open connection, used on this thread
    // only (`Connection` is not `Sync`). The callback is removed before the
    // client data it reads is replaced (which frees the old guard), and set
    // again with the new guard, which SQLite keeps until the connection is
    // closed or the entry replaced: the callback never reads freed memory.
    unsafe {
        let db = conn.handle();
        check(ffi::sqlite3_set_authorizer(db, None, ptr::null_mut()))?;
        let data: *mut Arc<Guard> = conn.set_clientdata(CLIENT_DATA, Some(guard))?;
        check(ffi::sqlite3_set_authorizer(
            db,
            Some(authorize),
            data.cast(),
        ))
    }
}

fn check(rc: c_int) -> rusqlite::Result<()> {
    match rc {
        ffi::SQLITE_OK => Ok(()),
        _ => Err(rusqlite::Error::SqliteFailure(ffi::Error::new(rc), None)),
    }
}

unsafe extern "C" fn authorize(
    data: *mut c_void,
    code: c_int,
    arg1: *const c_char,
    arg2: *const c_char,
    db: *const c_char,
    // The trigger or view (or subquery, or CTE) the action comes from. Not
    // judged: workerd lets user triggers run, and refuses all under TRUSTED,
    // which would refuse the engine's subqueries here; user triggers cannot
    // be put on `_cf_` or `sqlite_` tables, so no engine statement fires one.
    _inner: *const c_char,
) -> c_int {
    // A panic must not unwind into SQLite; refusing is the safe answer.
    let allowed = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `data` is the `Arc<Guard>` `install` set with this callback,
        // alive while the callback is set; the strings are SQLite's
        // NUL-terminated arguments, valid for the duration of this call.
        unsafe {
            let guard = &*data.cast::<Arc<Guard>>();
            decide(guard, code, text(arg1), text(arg2), text(db))
        }
    }));
    match allowed {
        Ok(true) => ffi::SQLITE_OK,
        _ => ffi::SQLITE_DENY,
    }
}

/// # Safety
/// `p` is null or a NUL-terminated string that outlives `'a`.
unsafe fn text<'a>(p: *const c_char) -> Option<&'a [u8]> {
    match p.is_null() {
        true => None,
        // SAFETY: per this function's contract.
        false => Some(unsafe { CStr::from_ptr(p) }.to_bytes()),
    }
}

/// One authorizer decision. Names are compared as bytes, as workerd does.
fn decide(
    guard: &Guard,
    code: c_int,
    arg1: Option<&[u8]>,
    arg2: Option<&[u8]>,
    db: Option<&[u8]>,
) -> bool {
    // For these two SQLite passes the schema first; move it to where every
    // other action has it (for ALTER TABLE, arg2 is then the 5th argument:
    // the column of DROP COLUMN, or the new name with workerd's patch 0004).
    let (arg1, arg2, db) = match code {
        ffi::SQLITE_ALTER_TABLE | ffi::SQLITE_DETACH => (arg2, db, arg1),
        _ => (arg1, arg2, db),
    };
    let armed = guard.armed();
    match db {
        // Only reading and updating, even for the engine: a temp table would
        // be a second file the storage does not track.
        Some(b"temp") => {
            return matches!(code, ffi::SQLITE_READ | ffi::SQLITE_UPDATE)
                && arg1.is_some_and(|table| !armed || allowed_name(table));
        }
        Some(b"main") | None => {}
        // An attached database.
        Some(_) => return false,
    }
    if !armed {
        return true;
    }
    let named = |name: Option<&[u8]>| name.is_some_and(allowed_name);
    match code {
        // Each table a SELECT reads is authorized separately (SQLITE_READ).
        ffi::SQLITE_SELECT => arg1.is_none() && arg2.is_none(),
        ffi::SQLITE_CREATE_TABLE
        | ffi::SQLITE_DELETE
        | ffi::SQLITE_DROP_TABLE
        | ffi::SQLITE_INSERT
        | ffi::SQLITE_CREATE_VIEW
        | ffi::SQLITE_DROP_VIEW
        | ffi::SQLITE_REINDEX => arg2.is_none() && named(arg1),
        // Any table, `_cf_` ones included: `PRAGMA optimize` analyzes them
        // all, and sqlite_stat1 holds statistics, not their data.
        ffi::SQLITE_ANALYZE => arg2.is_none(),
        ffi::SQLITE_ALTER_TABLE => named(arg1) && arg2.is_none_or(allowed_name),
        ffi::SQLITE_READ | ffi::SQLITE_UPDATE => named(arg1),
        ffi::SQLITE_CREATE_INDEX
        | ffi::SQLITE_DROP_INDEX
        | ffi::SQLITE_CREATE_TRIGGER
        | ffi::SQLITE_DROP_TRIGGER => named(arg1) && named(arg2),
        // The storage API owns transactions: BEGIN would break its
        // automatic write coalescing and rollback.
        ffi::SQLITE_TRANSACTION | ffi::SQLITE_SAVEPOINT => {
            guard.transaction_refused.store(true, Relaxed);
            false
        }
        ffi::SQLITE_PRAGMA => arg1.is_some_and(|pragma| pragma_allowed(pragma, arg2)),
        ffi::SQLITE_FUNCTION => arg2.is_some_and(|f| FUNCTIONS.iter().any(|a| a.as_bytes() == f)),
        ffi::SQLITE_CREATE_VTABLE | ffi::SQLITE_DROP_VTABLE => {
            arg2.is_some_and(|module| {
                MODULES
                    .iter()
                    .any(|m| module.eq_ignore_ascii_case(m.as_bytes()))
            }) && named(arg1)
        }
        ffi::SQLITE_RECURSIVE => true,
        // ATTACH, DETACH, temp objects, SQLITE_COPY and whatever SQLite adds.
        _ => false,
    }
}

/// `SqlStorageRegulator::isAllowedName`: the `_cf_` prefix, in any case, is
/// the engine's (`_cf_KV`, `_cf_METADATA`).
fn allowed_name(name: &[u8]) -> bool {
    !name
        .get(..4)
        .is_some_and(|prefix| prefix.eq_ignore_ascii_case(b"_cf_"))
}

/// Virtual table modules user SQL may create or drop (compared ignoring case).
const MODULES: [&str; 4] = ["fts5", "fts5vocab", "rtree", "rtree_i32"];

/// workerd's `ALLOWED_SQLITE_FUNCTIONS`. The `sqlite_*` functions that reveal
/// the build (`sqlite_version()` and the like) are left out; the
/// `sqlite_rename_*`/`sqlite_drop_column` ones are ALTER TABLE's internals.
#[rustfmt::skip]
const FUNCTIONS: &[&str] = &[
    // Core.
    "abs", "changes", "char", "coalesce", "concat", "concat_ws", "format", "glob", "hex", "ifnull",
    "iif", "instr", "last_insert_rowid", "length", "like", "likelihood", "likely",
    "load_extension", "lower", "ltrim", "max_scalar", "min_scalar", "nullif", "octet_length",
    "printf", "quote", "random", "randomblob", "replace", "round", "rtrim", "sign", "soundex",
    "substr", "substring", "total_changes", "trim", "typeof", "unhex", "unicode", "unlikely",
    "upper", "zeroblob",
    // Date and time.
    "date", "time", "datetime", "julianday", "unixepoch", "strftime", "timediff", "current_date",
    "current_time", "current_timestamp",
    // Aggregate.
    "avg", "count", "group_concat", "max", "min", "string_agg", "sum", "total",
    // Window.
    "row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead",
    "first_value", "last_value", "nth_value",
    // Math.
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "cos", "cosh", "degrees",
    "exp", "floor", "ln", "log", "log2", "mod", "pi", "pow", "radians", "sin", "sinh", "sqrt",
    "tan", "tanh", "trunc",
    // JSON.
    "json", "jsonb", "json_array", "jsonb_array", "json_array_length", "json_extract",
    "jsonb_extract", "->", "->>", "json_insert", "jsonb_insert", "json_object", "jsonb_object",
    "json_patch", "jsonb_patch", "json_remove", "jsonb_remove", "json_replace", "jsonb_replace",
    "json_set", "jsonb_set", "json_type", "json_valid", "json_quote", "json_group_array",
    "jsonb_group_array", "json_group_object", "jsonb_group_object", "json_each", "json_tree",
    // FTS5 and R*Tree.
    "match", "highlight", "bm25", "snippet", "rtreecheck",
    // ALTER TABLE's own.
    "sqlite_rename_column", "sqlite_rename_table", "sqlite_rename_test", "sqlite_drop_column",
    "sqlite_rename_quotefix",
];

/// What a pragma on the allow-list may be given (SQLite passes the value as text).
#[derive(Clone, Copy)]
enum PragmaArg {
    Anything,
    Nothing,
    /// A boolean, or nothing to read it.
    Boolean,
    /// An allowed table or index name, required.
    Name,
    OptionalName,
    OptionalInt32,
    OptionalCountOrName,
}

/// workerd's `ALLOWED_PRAGMAS`, with the three it special-cases. Names are
/// matched as given, so `PRAGMA FOREIGN_KEYS` is refused there too.
const PRAGMAS: &[(&str, PragmaArg)] = &[
    // Lists `_cf_` tables as well: their existence is no secret.
    ("table_list", PragmaArg::Anything),
    ("table_info", PragmaArg::Name),
    ("table_xinfo", PragmaArg::Name),
    ("data_version", PragmaArg::Nothing),
    // R*Tree reads it; setting it is refused.
    ("page_size", PragmaArg::Nothing),
    ("case_sensitive_like", PragmaArg::Boolean),
    ("foreign_keys", PragmaArg::Boolean),
    ("defer_foreign_keys", PragmaArg::Boolean),
    ("ignore_check_constraints", PragmaArg::Boolean),
    ("legacy_alter_table", PragmaArg::Boolean),
    ("recursive_triggers", PragmaArg::Boolean),
    ("reverse_unordered_selects", PragmaArg::Boolean),
    ("foreign_key_check", PragmaArg::OptionalName),
    ("foreign_key_list", PragmaArg::Name),
    ("index_info", PragmaArg::Name),
    ("index_list", PragmaArg::Name),
    ("index_xinfo", PragmaArg::Name),
    ("quick_check", PragmaArg::OptionalCountOrName),
    // A bit mask, or nothing for the default one.
    ("optimize", PragmaArg::OptionalInt32),
];

fn pragma_allowed(pragma: &[u8], arg: Option<&[u8]>) -> bool {
    let Some(&(_, kind)) = PRAGMAS.iter().find(|(name, _)| name.as_bytes() == pragma) else {
        return false;
    };
    let Some(arg) = arg else {
        return !matches!(kind, PragmaArg::Name);
    };
    match kind {
        PragmaArg::Anything => true,
        PragmaArg::Nothing => false,
        PragmaArg::Boolean => is_boolean(arg),
        PragmaArg::Name | PragmaArg::OptionalName => allowed_name(arg),
        PragmaArg::OptionalInt32 => c_integer(arg).is_some_and(|(negative, magnitude)| {
            let limit = if negative { 1 << 31 } else { (1 << 31) - 1 };
            magnitude <= limit
        }),
        PragmaArg::OptionalCountOrName => is_c_uint(arg) || allowed_name(arg),
    }
}

/// workerd's boolean test: one pair of matching quotes is removed, then the
/// value must *start* with one of these words, ignoring case (it compares
/// with `strncasecmp` and the word's length), so `truex` passes as it does there.
fn is_boolean(value: &[u8]) -> bool {
    let value = match value {
        [open @ (b'\'' | b'"'), inner @ .., close] if open == close => inner,
        _ => value,
    };
    ["true", "false", "yes", "no", "on", "off", "1", "0"]
        .iter()
        .any(|word| {
            value
                .get(..word.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(word.as_bytes()))
        })
}

/// `text` read as an integer the way kj's `tryParseAs` reads one with C's
/// `strtoll`/`strtoull`: base 16 when it starts with `0x` (after an optional
/// `-`), else base 10; leading white space and a sign are accepted; every
/// byte must be consumed. Gives the sign and the magnitude, or None when the
/// text is not one number or the magnitude overflows 64 bits.
fn c_integer(text: &[u8]) -> Option<(bool, u64)> {
    let radix = match text.strip_prefix(b"-").unwrap_or(text) {
        [b'0', b'x' | b'X', ..] => 16,
        _ => 10,
    };
    let mut rest = text;
    while let [b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r', tail @ ..] = rest {
        rest = tail;
    }
    let negative = rest.first() == Some(&b'-');
    if let [b'-' | b'+', tail @ ..] = rest {
        rest = tail;
    }
    if let [b'0', b'x' | b'X', digit, ..] = rest {
        if radix == 16 && digit.is_ascii_hexdigit() {
            rest = &rest[2..];
        }
    }
    if rest.is_empty() {
        return None;
    }
    rest.iter()
        .try_fold(0u64, |value, &c| {
            let digit = char::from(c).to_digit(radix)?;
            value
                .checked_mul(u64::from(radix))?
                .checked_add(u64::from(digit))
        })
        .map(|magnitude| (negative, magnitude))
}

/// kj's `tryParseAs<uint>`: `strtoull` (where `-n` wraps around), refusing
/// a leading `-` but not one after white space.
fn is_c_uint(text: &[u8]) -> bool {
    text.first() != Some(&b'-')
        && c_integer(text).is_some_and(|(negative, magnitude)| {
            let value = if negative {
                magnitude.wrapping_neg()
            } else {
                magnitude
            };
            value <= u64::from(u32::MAX)
        })
}

/// A check of one statement's SQL text that the authorizer cannot make with
/// stock SQLite: `ALTER TABLE ... RENAME TO <name>` where the new name starts
/// with `_cf_` (case-insensitive), which workerd refuses through its SQLite
/// patch 0004 (the new name as the authorizer's 5th argument). The text is
/// scanned whole, so it may hold several statements.
///
/// Err is the complete user-visible message, already in workerd's
/// `<message>: <code>` form.
pub fn check_statement(sql: &str) -> Result<(), String> {
    let tokens = tokens(sql.as_bytes());
    for start in 0..tokens.len() {
        if let Some(new_name) = tokens.get(start..).and_then(renamed_to) {
            if !allowed_name(new_name) {
                return Err(NOT_AUTHORIZED.to_owned());
            }
        }
    }
    Ok(())
}

/// The new name of `ALTER TABLE [schema.]table RENAME TO name`, if `tokens`
/// starts with one. (`RENAME [COLUMN] a TO b` renames a column: no match.)
fn renamed_to<'t>(tokens: &'t [Token<'_>]) -> Option<&'t [u8]> {
    let [alter, table, rest @ ..] = tokens else {
        return None;
    };
    if !alter.is_keyword("ALTER") || !table.is_keyword("TABLE") {
        return None;
    }
    let rest = match rest {
        [schema, Token::Other(b'.'), name, rest @ ..]
            if schema.name().is_some() && name.name().is_some() =>
        {
            rest
        }
        [name, rest @ ..] if name.name().is_some() => rest,
        _ => return None,
    };
    match rest {
        [rename, to, new_name, ..] if rename.is_keyword("RENAME") && to.is_keyword("TO") => {
            new_name.name()
        }
        _ => None,
    }
}

/// SQLite's tokens as far as a name is concerned.
enum Token<'a> {
    /// A bare word: a keyword or an identifier.
    Word(&'a [u8]),
    /// A quoted identifier or string, unquoted (SQLite accepts a string
    /// where a name is expected).
    Quoted(Vec<u8>),
    Other(u8),
}

impl Token<'_> {
    fn is_keyword(&self, keyword: &str) -> bool {
        matches!(self, Token::Word(w) if w.eq_ignore_ascii_case(keyword.as_bytes()))
    }

    fn name(&self) -> Option<&[u8]> {
        match self {
            Token::Word(w) => Some(w),
            Token::Quoted(q) => Some(q),
            Token::Other(_) => None,
        }
    }
}

/// Splits `sql` as SQLite's tokenizer does, dropping white space and comments.
fn tokens(sql: &[u8]) -> Vec<Token<'_>> {
    let is_word = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80;
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(&c) = sql.get(i) {
        let next = sql.get(i + 1).copied();
        match c {
            b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r' => i += 1,
            b'-' if next == Some(b'-') => {
                i = find(sql, i, b"\n").map_or(sql.len(), |end| end + 1);
            }
            b'/' if next == Some(b'*') => {
                i = find(sql, i + 2, b"*/").map_or(sql.len(), |end| end + 2);
            }
            b'\'' | b'"' | b'`' | b'[' => {
                // A doubled closing quote stands for itself; brackets have no escape.
                let close = if c == b'[' { b']' } else { c };
                let mut name = Vec::new();
                i += 1;
                while let Some(&d) = sql.get(i) {
                    i += 1;
                    if d != close {
                        name.push(d);
                    } else if close != b']' && sql.get(i) == Some(&close) {
                        name.push(d);
                        i += 1;
                    } else {
                        break;
                    }
                }
                out.push(Token::Quoted(name));
            }
            c if is_word(c) => {
                let start = i;
                while sql.get(i).is_some_and(|&d| is_word(d)) {
                    i += 1;
                }
                out.push(Token::Word(&sql[start..i]));
            }
            _ => {
                out.push(Token::Other(c));
                i += 1;
            }
        }
    }
    out
}

fn find(haystack: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    haystack
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|at| from + at)
}

/// workerd's limits (`setupSecurity`, after sqlite.org/security.html).
const LIMITS: [(c_int, c_int); 12] = [
    // 4 MiB in workerd's source at 6552d999; the pinned release (1.20261117.1)
    // takes zeroblob(8 MiB + 34) and refuses one byte more, for values, keys
    // and bindings alike (__test__/helpers/do-probe-cases.js, the ceiling).
    (ffi::SQLITE_LIMIT_LENGTH, 8 * 1024 * 1024 + 34),
    (ffi::SQLITE_LIMIT_SQL_LENGTH, 100_000),
    (ffi::SQLITE_LIMIT_COLUMN, 100),
    (ffi::SQLITE_LIMIT_EXPR_DEPTH, 100),
    (ffi::SQLITE_LIMIT_COMPOUND_SELECT, 5),
    (ffi::SQLITE_LIMIT_VDBE_OP, 25_000),
    // SQLite's default, for json_object() and the like.
    (ffi::SQLITE_LIMIT_FUNCTION_ARG, 127),
    (ffi::SQLITE_LIMIT_ATTACHED, 0),
    (ffi::SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 50),
    (ffi::SQLITE_LIMIT_VARIABLE_NUMBER, 100),
    (ffi::SQLITE_LIMIT_TRIGGER_DEPTH, 10),
    (ffi::SQLITE_LIMIT_WORKER_THREADS, 0),
];

/// Modules this crate's SQLite has and workerd's does not (no FTS3, no
/// dbstat there). Creating them is refused by the authorizer; dropping them
/// also makes the eponymous `dbstat` (internal page counts) "no such table",
/// as it is in workerd, without refusing a user's own table of that name.
const FOREIGN_MODULES: [&str; 5] = ["dbstat", "fts3", "fts4", "fts3tokenize", "fts4aux"];

/// The connection settings workerd applies to an object's database:
/// `SQLITE_DBCONFIG_DEFENSIVE`, double-quoted string literals allowed (its
/// SQLite keeps the default; this crate's is built with `SQLITE_DQS=0`), its
/// limits, and none of the modules its build lacks.
pub fn secure(conn: &Connection) -> rusqlite::Result<()> {
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DQS_DML, true)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DQS_DDL, true)?;
    for (limit, value) in LIMITS {
        // SAFETY: `sqlite3_limit` only reads and sets one of this open
        // connection's limits; it cannot fail (it returns the old value).
        unsafe { ffi::sqlite3_limit(conn.handle(), limit, value) };
    }
    drop_foreign_modules(conn)
}

fn drop_foreign_modules(conn: &Connection) -> rusqlite::Result<()> {
    let foreign = |name: &String| FOREIGN_MODULES.contains(&name.as_str());
    let names = conn
        .prepare("PRAGMA module_list")?
        .query_map([], |row| row.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    if !names.iter().any(foreign) {
        return Ok(());
    }
    let keep: Vec<CString> = names
        .into_iter()
        .filter(|name| !foreign(name))
        .filter_map(|name| CString::new(name).ok())
        .collect();
    let mut list: Vec<*const c_char> = keep.iter().map(|name| name.as_ptr()).collect();
    list.push(ptr::null());
    // SAFETY: `list` is a NULL-terminated array of NUL-terminated names that
    // outlive the call, which only reads them, on this open connection.
    check(unsafe { ffi::sqlite3_drop_modules(conn.handle(), list.as_mut_ptr()) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::types::ValueRef;
    use rusqlite::ErrorCode;

    type Result<T = ()> = rusqlite::Result<T>;

    /// An object's connection: secured, the authorizer installed.
    struct Db {
        conn: Connection,
        guard: Arc<Guard>,
    }

    fn open() -> Result<Db> {
        let conn = Connection::open_in_memory()?;
        secure(&conn)?;
        let guard = Guard::new();
        install(&conn, guard.clone())?;
        Ok(Db { conn, guard })
    }

    /// One statement a line, blank lines skipped.
    fn lines(sqls: &str) -> impl Iterator<Item = &str> {
        sqls.lines().map(str::trim).filter(|l| !l.is_empty())
    }

    impl Db {
        /// User SQL as the object's cursor runs it: the text checked, then
        /// prepared and stepped to the end with the guard armed. Rows come
        /// back as their values joined with `|`.
        fn user(&self, sql: &str) -> Result<Vec<String>> {
            if let Err(message) = check_statement(sql) {
                let code = ffi::Error::new(ffi::SQLITE_AUTH);
                return Err(rusqlite::Error::SqliteFailure(code, Some(message)));
            }
            let _armed = self.guard.arm();
            let mut stmt = self.conn.prepare(sql)?;
            let columns = stmt.column_count();
            let mut rows = stmt.query([])?;
            let mut out = Vec::new();
            while let Some(row) = rows.next()? {
                let mut cells = Vec::new();
                for i in 0..columns {
                    cells.push(match row.get_ref(i)? {
                        ValueRef::Null => "NULL".to_owned(),
                        ValueRef::Integer(n) => n.to_string(),
                        ValueRef::Real(f) => f.to_string(),
                        ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                        ValueRef::Blob(b) => format!("blob({})", b.len()),
                    });
                }
                out.push(cells.join("|"));
            }
            Ok(out)
        }

        /// Each line of `sqls` runs as user SQL and succeeds.
        fn allowed(&self, sqls: &str) {
            for sql in lines(sqls) {
                if let Err(e) = self.user(sql) {
                    panic!("{sql}: expected to run, got {e}");
                }
            }
        }

        /// Each line of `sqls` run as user SQL fails with a message containing
        /// `message`, and SQLITE_AUTH (a refused function is SQLITE_ERROR).
        fn refused(&self, message: &str, sqls: &str) {
            for sql in lines(sqls) {
                match self.user(sql) {
                    Err(e) if e.to_string().contains(message) => {
                        let auth = ErrorCode::AuthorizationForStatementDenied;
                        let function = message.contains("to use function");
                        assert!(
                            function || e.sqlite_error_code() == Some(auth),
                            "{sql}: {e:?}"
                        );
                    }
                    other => panic!("{sql}: expected a refusal with {message:?}, got {other:?}"),
                }
            }
        }

        /// An error whose message contains `message`, for any reason.
        fn fails(&self, message: &str, sql: &str) {
            match self.user(sql) {
                Err(e) => assert!(e.to_string().contains(message), "{sql}: {e}"),
                Ok(rows) => panic!("{sql}: expected {message:?}, got {rows:?}"),
            }
        }

        /// The engine's `_cf_KV`, as workerd creates it, with one row.
        fn engine_kv(&self) -> Result {
            self.conn.execute_batch(
                "CREATE TABLE IF NOT EXISTS _cf_KV (key TEXT PRIMARY KEY, value BLOB) WITHOUT ROWID;
                 INSERT INTO _cf_KV VALUES ('blah', 123);",
            )
        }

        fn kv_rows(&self) -> Result<i64> {
            self.conn
                .query_row("SELECT count(*) FROM _cf_KV", [], |r| r.get(0))
        }
    }

    #[test]
    fn user_sql_cannot_touch_cf_names_in_any_case() -> Result {
        let db = open()?;
        db.engine_kv()?;
        db.allowed("CREATE TABLE t (a, b)\n CREATE TABLE _cf (a)\n CREATE TABLE x_cf_y (a)");
        db.refused("access to _cf_KV.key is prohibited", "SELECT * FROM _cf_KV");
        db.refused(
            "not authorized",
            r#"
            CREATE TABLE _cf_invalid (name TEXT)
            CREATE TABLE _CF_test (name TEXT)
            CREATE TABLE _Cf_test (name TEXT)
            CREATE TABLE "_cF_test" (name TEXT)
            INSERT INTO _cf_KV VALUES ('k', 1)
            UPDATE _cf_KV SET value = 1
            DELETE FROM _cf_kv
            DROP TABLE _cf_KV
            CREATE INDEX i ON _cf_KV (value)
            CREATE INDEX _cf_i ON t (a)
            CREATE TRIGGER tr AFTER INSERT ON _cf_KV BEGIN SELECT 1; END
            CREATE TRIGGER _cf_tr AFTER INSERT ON t BEGIN SELECT 1; END
            CREATE VIEW _cf_v AS SELECT 1
            CREATE VIRTUAL TABLE _cf_fts_test USING fts5(content)
            CREATE VIRTUAL TABLE _CF_fts_test USING fts5(content)
            "#,
        );
        assert_eq!(db.kv_rows()?, 1);
        Ok(())
    }

    #[test]
    fn views_and_triggers_cannot_reach_cf_tables() -> Result {
        let db = open()?;
        db.engine_kv()?;
        db.allowed(
            "CREATE TABLE t (a)
             CREATE VIEW v AS SELECT * FROM _cf_KV
             CREATE TRIGGER tr AFTER INSERT ON t BEGIN DELETE FROM _cf_KV; END",
        );
        db.refused("prohibited", "SELECT * FROM v");
        db.refused("not authorized", "INSERT INTO t VALUES (1)");
        assert_eq!(db.kv_rows()?, 1);
        Ok(())
    }

    #[test]
    fn engine_statements_are_trusted_while_the_guard_is_not_armed() -> Result {
        let db = open()?;
        {
            let _armed = db.guard.arm();
            assert!(db.conn.execute_batch("CREATE TABLE _cf_KV (k)").is_err());
        }
        db.engine_kv()?;
        db.conn.execute_batch(
            "BEGIN; SAVEPOINT s; UPDATE _cf_KV SET value = 2; RELEASE s; COMMIT;
             PRAGMA user_version = 7; CREATE TABLE _cf_METADATA (k, v);",
        )?;
        let v: i64 = db
            .conn
            .query_row("SELECT value FROM _cf_KV", [], |r| r.get(0))?;
        assert_eq!(v, 2);
        assert!(!db.guard.take_transaction_refusal());
        Ok(())
    }

    #[test]
    fn arming_nests_and_disarms_on_drop() -> Result {
        let db = open()?;
        db.engine_kv()?;
        let outer = db.guard.arm();
        drop(db.guard.arm());
        assert!(db.conn.prepare("SELECT * FROM _cf_KV").is_err());
        drop(outer);
        db.conn.prepare("SELECT * FROM _cf_KV").map(drop)
    }

    #[test]
    fn transactions_are_refused_and_reported_once() -> Result {
        let db = open()?;
        let statements = "BEGIN\n BEGIN TRANSACTION\n BEGIN IMMEDIATE\n COMMIT\n END\n ROLLBACK
                          SAVEPOINT foo\n RELEASE foo\n ROLLBACK TO foo";
        for sql in lines(statements) {
            db.refused("not authorized", sql);
            assert!(db.guard.take_transaction_refusal(), "{sql}");
            assert!(
                !db.guard.take_transaction_refusal(),
                "{sql}: reported twice"
            );
        }
        db.refused("not authorized", "CREATE TABLE _cf_x (a)");
        assert!(!db.guard.take_transaction_refusal());
        // A refusal left untaken is not the next statement's.
        db.refused("not authorized", "BEGIN");
        db.allowed("SELECT 1");
        assert!(!db.guard.take_transaction_refusal());
        assert!(TRANSACTION_MESSAGE.contains(
            "please use the state.storage.transaction() or state.storage.transactionSync() APIs"
        ));
        Ok(())
    }

    #[test]
    fn only_main_is_usable_and_temp_is_read_only() -> Result {
        let db = open()?;
        db.allowed("SELECT * FROM temp.sqlite_master");
        db.refused(
            "not authorized",
            "CREATE TEMP TABLE tempy AS SELECT * FROM sqlite_master
             CREATE TEMPORARY TABLE x (a)
             CREATE TABLE temp.x (a)
             CREATE TEMP VIEW v AS SELECT 1
             PRAGMA temp.foreign_keys
             PRAGMA temp.table_info(sqlite_temp_master)
             ATTACH ':memory:' AS other
             DETACH main",
        );
        // The temp rule holds for the engine too, as for workerd's TRUSTED;
        // the engine's ATTACH is stopped by SQLITE_LIMIT_ATTACHED = 0.
        assert!(db.conn.execute_batch("CREATE TEMP TABLE x (a)").is_err());
        match db.conn.execute_batch("ATTACH ':memory:' AS other") {
            Err(e) => assert!(e.to_string().contains("too many attached databases"), "{e}"),
            Ok(()) => panic!("ATTACH ran"),
        }
        Ok(())
    }

    #[test]
    fn pragmas_follow_the_allow_list() -> Result {
        let db = open()?;
        db.engine_kv()?;
        db.allowed(
            "CREATE TABLE myTable (foo TEXT, bar INTEGER)\n CREATE INDEX ix ON myTable (bar)",
        );
        assert_eq!(db.user("pragma data_version;")?.len(), 1);
        let info = db.user("PRAGMA table_info(myTable)")?;
        assert_eq!(info, ["0|foo|TEXT|0|NULL|0", "1|bar|INTEGER|0|NULL|0"]);
        assert_eq!(db.user("PRAGMA table_xinfo(myTable)")?.len(), 2);
        let checks = "pragma quick_check;\n pragma quick_check(1);\n pragma quick_check(100);
                      pragma quick_check(myTable);";
        for sql in lines(checks) {
            assert_eq!(db.user(sql)?, ["ok"], "{sql}");
        }
        let tables = db.user("PRAGMA table_list")?;
        assert!(tables.iter().any(|t| t.contains("_cf_KV")), "{tables:?}");
        db.allowed(
            "PRAGMA page_size
             PRAGMA foreign_keys
             PRAGMA foreign_keys = OFF
             PRAGMA main.foreign_keys = ON
             PRAGMA case_sensitive_like = TRUE
             PRAGMA ignore_check_constraints=ON
             PRAGMA legacy_alter_table = 0
             PRAGMA recursive_triggers = yes
             PRAGMA reverse_unordered_selects = off
             PRAGMA foreign_key_check
             PRAGMA foreign_key_check(myTable)
             PRAGMA foreign_key_list(myTable)
             PRAGMA index_list(myTable)
             PRAGMA index_info(ix)
             PRAGMA index_xinfo(ix)
             PRAGMA quick_check(-1)
             PRAGMA optimize(-1)
             PRAGMA optimize(0x7fffffff)
             PRAGMA optimize=0x10002
             PRAGMA optimize
             ANALYZE",
        );
        db.refused(
            "not authorized",
            "PRAGMA hard_heap_limit = 1024
             PRAGMA data_version = 5
             PRAGMA max_page_count = 65536
             PRAGMA page_size = 8192
             PRAGMA table_info(_cf_KV)
             PRAGMA table_xinfo(_CF_kv)
             PRAGMA table_info
             PRAGMA quick_check(_cf_KV)
             PRAGMA foreign_key_check(_cf_KV)
             PRAGMA foreign_key_list(_cf_KV)
             PRAGMA foreign_key_list
             PRAGMA index_list(_cf_KV)
             PRAGMA optimize(0x80000000)
             PRAGMA optimize(abc)
             PRAGMA foreign_keys = 2
             PRAGMA FOREIGN_KEYS
             PRAGMA user_version
             PRAGMA application_id = 1
             PRAGMA journal_mode
             PRAGMA writable_schema = ON
             PRAGMA schema_version
             PRAGMA integrity_check
             PRAGMA function_list
             PRAGMA module_list",
        );
        Ok(())
    }

    #[test]
    fn boolean_pragma_values_are_read_as_workerd_reads_them() -> Result {
        let db = open()?;
        let valid = [
            ("true", 1),
            ("false", 0),
            ("on", 1),
            ("off", 0),
            ("yes", 1),
            ("no", 0),
            ("1", 1),
            ("0", 0),
            ("tRuE", 1),
            ("NO", 0),
            ("'true'", 1),
            ("\"yes\"", 1),
            ("\"0\"", 0),
            ("  true    ", 1),
        ];
        for (value, expected) in valid {
            db.allowed(&format!("PRAGMA defer_foreign_keys = {value};"));
            let now = db.user("PRAGMA defer_foreign_keys;")?;
            assert_eq!(now, [expected.to_string()], "{value}");
        }
        db.refused(
            "not authorized",
            "PRAGMA defer_foreign_keys = abcd;
             PRAGMA defer_foreign_keys = \"foo\";
             PRAGMA defer_foreign_keys = '''';",
        );
        db.fails("unrecognized token", "PRAGMA defer_foreign_keys = 'yes;");
        // As in workerd: quotes inside the value, and a matching prefix.
        assert!(is_boolean(b"'yes'") && is_boolean(b"\"off\"") && is_boolean(b"truex"));
        assert!(!is_boolean(b"'") && !is_boolean(b"''") && !is_boolean(b"'tru'"));
        Ok(())
    }

    #[test]
    fn pragma_numbers_are_read_as_kj_reads_them() {
        assert_eq!(c_integer(b"100"), Some((false, 100)));
        assert_eq!(c_integer(b"-1"), Some((true, 1)));
        assert_eq!(c_integer(b" +7"), Some((false, 7)));
        assert_eq!(c_integer(b"0x7fffffff"), Some((false, 0x7fff_ffff)));
        assert_eq!(c_integer(b"-0X10"), Some((true, 16)));
        for bad in [
            &b""[..],
            b" ",
            b"-",
            b"0x",
            b"0xg",
            b"+0x10",
            b" 0x10",
            b"1.5",
            b"12a",
        ] {
            assert_eq!(c_integer(bad), None, "{}", String::from_utf8_lossy(bad));
        }
        assert_eq!(c_integer(b"18446744073709551616"), None);
        assert!(pragma_allowed(b"optimize", Some(b"-2147483648")));
        assert!(!pragma_allowed(b"optimize", Some(b"2147483648")));
        assert!(is_c_uint(b"4294967295") && is_c_uint(b" -0"));
        assert!(!is_c_uint(b"4294967296") && !is_c_uint(b"-1") && !is_c_uint(b" -1"));
    }

    #[test]
    fn table_valued_pragmas_are_checked_while_stepping() -> Result {
        let db = open()?;
        db.engine_kv()?;
        db.allowed("CREATE TABLE myTable (foo TEXT, bar INTEGER)");
        let info = db.user("SELECT name FROM pragma_table_info('myTable')")?;
        assert_eq!(info, ["foo", "bar"]);
        let names = db.user(
            "SELECT name FROM pragma_table_list WHERE name NOT LIKE 'sqlite_%' ORDER BY name",
        )?;
        assert_eq!(names, ["_cf_KV", "myTable"]);
        // The pragma is prepared inside the step, where the guard must be armed.
        db.refused(
            "not authorized",
            "SELECT * FROM pragma_table_info('_cf_KV')",
        );
        Ok(())
    }

    #[test]
    fn functions_follow_the_allow_list() -> Result {
        let db = open()?;
        assert_eq!(db.user("SELECT abs(-123)")?, ["123"]);
        let json = db.user(r#"SELECT '{"a":2,"c":[4,5,{"f":7}]}' -> '$.c'"#)?;
        assert_eq!(json, [r#"[4,5,{"f":7}]"#]);
        db.allowed(
            "SELECT current_date, current_time, current_timestamp
             SELECT printf('%d', 1), json_object('a', 1), group_concat(1), unixepoch()
             SELECT row_number() OVER (), count(*) FROM (SELECT 1)
             SELECT * FROM json_each('[1,2]')",
        );
        let refused = "not authorized to use function: sqlite_version";
        db.refused(refused, "SELECT sqlite_version()");
        db.refused(
            "not authorized to use function",
            "SELECT sqlite_source_id()
             SELECT sqlite_compileoption_used('DEBUG')
             SELECT sqlite_compileoption_get(0)
             SELECT unistr('a')
             SELECT fts3_tokenizer('simple')",
        );
        Ok(())
    }

    #[test]
    fn virtual_tables_are_only_fts5_and_rtree() -> Result {
        let db = open()?;
        db.refused(
            "not authorized",
            "CREATE VIRTUAL TABLE test_fts USING fts5abcd(id)
             CREATE VIRTUAL TABLE f3 USING fts3(content)
             CREATE VIRTUAL TABLE f4 USING fts4(content)
             CREATE VIRTUAL TABLE s USING dbstat",
        );
        db.allowed(
            "CREATE TABLE documents (id INTEGER PRIMARY KEY, title TEXT, content TEXT)
             CREATE VIRTUAL TABLE documents_fts USING FtS5(id, title, content, tokenize = porter)
             CREATE VIRTUAL TABLE documents_fts_v_col USING fTs5VoCaB(documents_fts, col)
             CREATE VIRTUAL TABLE documents_fts_v_row USING FtS5vOcAb(documents_fts, row)
             CREATE TRIGGER fts_insert AFTER INSERT ON documents BEGIN INSERT INTO documents_fts(id, title, content) VALUES (new.id, new.title, new.content); END
             INSERT INTO documents (title, content) VALUES ('Document 1', 'contents of 1 (of 2)')
             INSERT INTO documents (title, content) VALUES ('Document 2', 'content of 2 (of 2)')
             CREATE VIRTUAL TABLE demo_index USING rtree(id, minX, maxX, minY, maxY)
             CREATE VIRTUAL TABLE demo_i32 USING rtree_i32(id, minX, maxX)
             INSERT INTO demo_index VALUES (1, -1.0, 1.0, -1.0, 1.0), (2, 10.0, 12.0, 10.0, 12.0)",
        );
        let hits = db.user(
            "SELECT highlight(documents_fts, 2, '<b>', '</b>'), bm25(documents_fts) < 0
             FROM documents_fts WHERE documents_fts MATCH '2' ORDER BY rank",
        )?;
        assert_eq!(hits.len(), 2);
        assert_eq!(db.user("SELECT id FROM demo_index WHERE minX >= 0")?, ["2"]);
        db.allowed("SELECT rtreecheck('demo_index')\n DROP TABLE documents_fts");
        Ok(())
    }

    #[test]
    fn dbstat_and_fts3_are_not_in_the_connection() -> Result {
        let db = open()?;
        db.fails("no such table", "SELECT * FROM dbstat");
        db.fails("no such table", "SELECT * FROM main.dbstat");
        let modules: Vec<String> = db
            .conn
            .prepare("PRAGMA module_list")?
            .query_map([], |r| r.get(0))?
            .collect::<Result<_>>()?;
        for kept in MODULES {
            assert!(
                modules.iter().any(|m| m == kept),
                "{kept} missing: {modules:?}"
            );
        }
        for gone in FOREIGN_MODULES {
            assert!(
                !modules.iter().any(|m| m == gone),
                "{gone} kept: {modules:?}"
            );
        }
        // A user's own table of that name is theirs.
        db.allowed("CREATE TABLE dbstat (a)\n SELECT * FROM dbstat");
        Ok(())
    }

    #[test]
    fn analyze_and_recursive_ctes_are_allowed() -> Result {
        let db = open()?;
        db.engine_kv()?;
        db.allowed(
            "CREATE TABLE t (a)
             CREATE INDEX ta ON t (a)
             ANALYZE
             ANALYZE t
             ANALYZE _cf_KV
             SELECT * FROM sqlite_stat1",
        );
        let counted = db.user(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5)
             SELECT count(*) FROM c",
        )?;
        assert_eq!(counted, ["5"]);
        Ok(())
    }

    #[test]
    fn alter_table_may_not_rename_into_or_out_of_cf_names() -> Result {
        let db = open()?;
        db.engine_kv()?;
        db.allowed(
            "CREATE TABLE user_data (key TEXT PRIMARY KEY, value BLOB, extra)
             INSERT INTO user_data VALUES ('k', x'deadbeef', 1)
             ALTER TABLE user_data RENAME TO other_data
             ALTER TABLE other_data ADD COLUMN more TEXT CHECK (more IN ('A', 'B'))
             ALTER TABLE other_data RENAME COLUMN extra TO _cf_column
             ALTER TABLE other_data RENAME _cf_column TO extra
             ALTER TABLE other_data DROP COLUMN extra
             ALTER TABLE other_data ADD COLUMN _cf_c",
        );
        // Column names are not global; dropping one is checked all the same.
        db.refused(
            "not authorized",
            r#"
            ALTER TABLE other_data RENAME TO _cf_KV2
            ALTER TABLE main.other_data RENAME TO "_CF_x"
            ALTER TABLE _cf_KV RENAME TO kv
            ALTER TABLE _cf_KV ADD COLUMN c
            ALTER TABLE other_data DROP COLUMN _cf_c
            "#,
        );
        // Stock SQLite gives the authorizer no new name: only
        // check_statement stops this one.
        let armed = db.guard.arm();
        db.conn
            .prepare("ALTER TABLE other_data RENAME TO _cf_x")
            .map(drop)?;
        drop(armed);
        assert_eq!(db.user("SELECT length(value) FROM other_data")?, ["4"]);
        Ok(())
    }

    #[test]
    fn check_statement_finds_renames_to_cf_names() {
        let refused = r#"
            ALTER TABLE t RENAME TO _cf_KV
            alter table t rename to _CF_x
            ALTER TABLE main.t RENAME TO "_cf_x"
            ALTER TABLE "main" . [t] RENAME TO `_cf_x`
            ALTER TABLE 't' RENAME TO '_cf_x'
            ALTER /* c */ TABLE t /* c */ RENAME	TO [_cf_x]
            ALTER TABLE rename RENAME TO _cf_x
            SELECT 1; ALTER TABLE t RENAME TO _cf_x;
        "#;
        for sql in lines(refused).chain(["ALTER TABLE t -- c\n RENAME TO _cf_x"]) {
            assert_eq!(
                check_statement(sql),
                Err(NOT_AUTHORIZED.to_owned()),
                "{sql}"
            );
        }
        let passed = r#"
            ALTER TABLE t RENAME TO cf_x
            ALTER TABLE t RENAME TO "_c""f_x"
            ALTER TABLE t RENAME COLUMN a TO _cf_x
            ALTER TABLE t RENAME a TO _cf_x
            ALTER TABLE "t" RENAME "to" TO _cf_x
            SELECT 'ALTER TABLE t RENAME TO _cf_x'
            -- ALTER TABLE t RENAME TO _cf_x
            /* ALTER TABLE t RENAME TO _cf_x
            ALTER TABLE t RENAME TO
        "#;
        for sql in lines(passed).chain([""]) {
            assert_eq!(check_statement(sql), Ok(()), "{sql}");
        }
    }

    #[test]
    fn secure_sets_defensive_dqs_and_workerd_limits() -> Result {
        let db = open()?;
        assert!(db.conn.db_config(DbConfig::SQLITE_DBCONFIG_DEFENSIVE)?);
        assert!(db.conn.db_config(DbConfig::SQLITE_DBCONFIG_DQS_DML)?);
        assert!(db.conn.db_config(DbConfig::SQLITE_DBCONFIG_DQS_DDL)?);
        for (limit, value) in LIMITS {
            // SAFETY: a read (-1 sets nothing) of an open connection's limit.
            let now = unsafe { ffi::sqlite3_limit(db.conn.handle(), limit, -1) };
            assert_eq!(now, value, "limit {limit}");
        }
        assert_eq!(db.user(r#"SELECT "not a column""#)?, ["not a column"]);
        let five =
            "SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5";
        assert_eq!(db.user(five)?.len(), 5);
        db.fails(
            "too many terms in compound SELECT",
            &format!("{five} UNION ALL SELECT 6"),
        );
        match db
            .conn
            .execute_batch("PRAGMA writable_schema = ON; DELETE FROM sqlite_master")
        {
            Err(e) => assert!(e.to_string().contains("may not be modified"), "{e}"),
            Ok(()) => panic!("DEFENSIVE let sqlite_master be written"),
        }
        Ok(())
    }
}
