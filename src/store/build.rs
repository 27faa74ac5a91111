//! A new worker's file, built in memory: the empty worker file ([`template`])
//! with the worker's owner and first batch written into it.
//!
//! Each thread that builds keeps one in-memory database to build in. Opening
//! one per worker, then parsing the template's schema and preparing the same
//! statements again, was about a fifth of the process's CPU when creating
//! workers (perf over the bench's create step). Between builds the template's
//! bytes are written back into its file, which SQLite notices as it would
//! another process's write (the header's change counter moves), dropping its
//! cached pages but not its parsed schema or statements.

use std::cell::RefCell;
use std::sync::OnceLock;

use rusqlite::{ffi, params, Connection, MAIN_DB};

use super::{apply, Batch, SCHEMA_VERSION};
use crate::collections::{Schema, Tables};
use crate::sqlite;

/// The largest image whose database is kept for the next build.
const KEEP_BYTES: usize = 64 << 10;

thread_local! {
    static BUILDER: RefCell<Option<Connection>> = const { RefCell::new(None) };
    /// How many in-memory databases this thread has opened to build in.
    #[cfg(test)]
    static OPENED: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// The bytes of a worker file holding `batch` and its owner, marked for WAL
/// ([`sqlite::wal_image`]).
pub(super) fn build(
    class: &str,
    id: &str,
    schema: &Schema,
    batch: &Batch,
) -> rusqlite::Result<Vec<u8>> {
    BUILDER.with(|cell| {
        let mut slot = cell.borrow_mut();
        let mut conn = match slot.take() {
            Some(conn) => reset(conn)?,
            None => fresh()?,
        };
        let image = write(&mut conn, class, id, schema, batch)?;
        // Kept only after a build that went through (a failed one may have
        // left a transaction open), and a small one: its memory stays with
        // the thread.
        if image.len() <= KEEP_BYTES {
            *slot = Some(conn);
        }
        Ok(image)
    })
}

fn write(
    conn: &mut Connection,
    class: &str,
    id: &str,
    schema: &Schema,
    batch: &Batch,
) -> rusqlite::Result<Vec<u8>> {
    conn.execute_batch("BEGIN")?;
    conn.prepare_cached("INSERT INTO meta(k, v) VALUES ('id', ?1), ('class', ?2), ('format', ?3)")?
        .execute(params![id, class, SCHEMA_VERSION])?;
    apply(conn, schema, &mut Tables::default(), batch)?;
    conn.execute_batch("COMMIT")?;
    sqlite::wal_image(conn)
}

/// A new in-memory database holding the template.
fn fresh() -> rusqlite::Result<Connection> {
    #[cfg(test)]
    OPENED.with(|n| n.set(n.get() + 1));
    let empty = template()?;
    let mut conn = Connection::open_in_memory()?;
    conn.deserialize_read_exact(MAIN_DB, empty, empty.len(), false)?;
    conn.execute_batch("PRAGMA journal_mode=OFF")?;
    Ok(conn)
}

/// `conn`'s database made the template again, or a fresh one if that fails.
fn reset(conn: Connection) -> rusqlite::Result<Connection> {
    if overwrite(&conn, template()?).is_ok() && is_empty(&conn)? {
        Ok(conn)
    } else {
        fresh()
    }
}

/// Whether the database holds no owner: what the template holds. A check
/// that the overwrite was seen, so that no build starts from another's pages.
fn is_empty(conn: &Connection) -> rusqlite::Result<bool> {
    let rows: i64 = conn
        .prepare_cached("SELECT count(*) FROM meta")?
        .query_row([], |r| r.get(0))?;
    Ok(rows == 0)
}

/// Writes `bytes` as the whole of `conn`'s main database file, through its
/// file's own methods (an in-memory file: SQLite's `memdb`).
fn overwrite(conn: &Connection, bytes: &[u8]) -> Result<(), i32> {
    if !conn.is_autocommit() {
        return Err(ffi::SQLITE_MISUSE);
    }
    let file = sqlite::main_file(conn).ok_or(ffi::SQLITE_ERROR)?;
    let len = i64::try_from(bytes.len()).map_err(|_| ffi::SQLITE_TOOBIG)?;
    let n = i32::try_from(bytes.len()).map_err(|_| ffi::SQLITE_TOOBIG)?;
    // SAFETY: the file stays open as long as the connection, which is not in
    // a transaction, so nothing else uses it during the two calls; the
    // methods are the file's own, and `bytes` outlives them.
    unsafe {
        if (*file).pMethods.is_null() {
            return Err(ffi::SQLITE_ERROR);
        }
        let methods = &*(*file).pMethods;
        let (Some(truncate), Some(write)) = (methods.xTruncate, methods.xWrite) else {
            return Err(ffi::SQLITE_ERROR);
        };
        match truncate(file, len) {
            ffi::SQLITE_OK => {}
            rc => return Err(rc),
        }
        match write(file, bytes.as_ptr().cast(), n, 0) {
            ffi::SQLITE_OK => Ok(()),
            rc => Err(rc),
        }
    }
}

/// An empty worker file: the tables made once per process, since creating
/// them (parsing, planning, writing the schema) was most of SQLite's share of
/// a new worker.
fn template() -> rusqlite::Result<&'static [u8]> {
    static EMPTY: OnceLock<Vec<u8>> = OnceLock::new();
    if let Some(bytes) = EMPTY.get() {
        return Ok(bytes);
    }
    let mut conn = Connection::open_in_memory()?;
    conn.execute_batch(
        "CREATE TABLE meta(k TEXT PRIMARY KEY, v) WITHOUT ROWID;
         CREATE TABLE kv(key TEXT PRIMARY KEY, tag INTEGER NOT NULL, value BLOB NOT NULL) WITHOUT ROWID;
         CREATE TABLE alarms(name TEXT PRIMARY KEY, at INTEGER NOT NULL, attempt INTEGER NOT NULL, scheduled INTEGER NOT NULL) WITHOUT ROWID;",
    )?;
    conn.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    let bytes = conn.serialize(MAIN_DB)?.to_vec();
    Ok(EMPTY.get_or_init(|| bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collections::{Collection, DocChanges, DocOp, DocPut, FieldType};
    use crate::store::{Alarm, Row};
    use rusqlite::types::Value;

    /// The image as a database opened for this one build makes it.
    fn alone(class: &str, id: &str, schema: &Schema, batch: &Batch) -> rusqlite::Result<Vec<u8>> {
        write(&mut fresh()?, class, id, schema, batch)
    }

    fn kv(key: &str, value: &[u8]) -> Batch {
        Batch {
            sets: vec![Row {
                key: key.into(),
                tag: 1,
                value: value.to_vec(),
            }],
            ..Batch::default()
        }
    }

    fn doc(id: &str, columns: Vec<Value>) -> Batch {
        Batch {
            docs: DocChanges {
                clear: false,
                ops: vec![DocOp {
                    coll: 0,
                    id: id.into(),
                    put: Some(DocPut {
                        tag: 1,
                        doc: vec![7; 40],
                        columns,
                    }),
                }],
            },
            ..kv("k", b"v")
        }
    }

    #[test]
    fn each_build_is_byte_for_byte_what_a_database_of_its_own_makes() -> rusqlite::Result<()> {
        let none = Schema::default();
        let orders = Schema {
            collections: vec![
                Collection::new("orders", vec![("total".into(), FieldType::Real)])
                    .ok_or(rusqlite::Error::InvalidQuery)?,
            ],
        };
        let alarm = Batch {
            alarms: vec![Alarm {
                name: String::new(),
                at: 5,
                attempt: 0,
                scheduled: 4,
            }],
            ..kv("a", b"1")
        };
        let big = kv("big", &[3; 20_000]);
        let huge = kv("huge", &[4; KEEP_BYTES]);
        let builds: Vec<(&str, &Schema, Batch)> = vec![
            ("one", &none, kv("n", b"1")),
            ("two", &none, big),
            // A collection's table changes the schema, which the next build
            // must not keep.
            ("three", &orders, doc("o1", vec![Value::Real(2.5)])),
            ("four", &none, kv("n", b"2")),
            ("five", &none, alarm),
            ("six", &orders, doc("o2", vec![Value::Real(1.0)])),
        ];
        let opened = || OPENED.with(|n| n.get());
        let mut fresh_opens = 0;
        for (id, schema, batch) in &builds {
            let before = opened();
            let reused = build("C", id, schema, batch)?;
            fresh_opens += opened() - before;
            let expected = alone("C", id, schema, batch)?;
            assert_eq!(reused.len(), expected.len(), "{id}");
            assert!(reused == expected, "{id}: the images differ");
        }
        assert_eq!(fresh_opens, 1, "one database served every build");
        // A build too large to keep its database is not kept.
        let reused = build("C", "huge", &none, &huge)?;
        assert!(reused == alone("C", "huge", &none, &huge)?);
        let before = opened();
        build("C", "after", &none, &kv("n", b"4"))?;
        assert_eq!(opened() - before, 1, "a new database after the large build");
        // A build that fails (a document with a column too few, after its
        // table was made) leaves its transaction open: the next build starts
        // from a new database and is whole.
        assert!(build("C", "bad", &orders, &doc("o3", vec![])).is_err());
        let before = opened();
        let after = build("C", "seven", &none, &kv("n", b"3"))?;
        assert_eq!(opened() - before, 1);
        assert!(after == alone("C", "seven", &none, &kv("n", b"3"))?);
        Ok(())
    }
}
