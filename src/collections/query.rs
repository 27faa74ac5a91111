//! Reading documents: conditions and orders as bound SQL, one statement per
//! read, a worker's uncommitted writes overlaid in a savepoint always rolled back.

use super::*;
use rusqlite::types::Value;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension};

/// A comparison in a query's `where`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    /// Null-aware: `= null` finds missing fields.
    Eq,
    /// Null-aware: `!= v` includes documents without the field.
    Ne,
    Lt,
    Lte,
    Gt,
    Gte,
    In,
}

impl CmpOp {
    pub fn from_code(n: u32) -> Option<Self> {
        Some(match n {
            0 => CmpOp::Eq,
            1 => CmpOp::Ne,
            2 => CmpOp::Lt,
            3 => CmpOp::Lte,
            4 => CmpOp::Gt,
            5 => CmpOp::Gte,
            6 => CmpOp::In,
            _ => return None,
        })
    }
}

/// One condition: a declared field, a comparison, its values (one, or the list of `In`).
#[derive(Debug, Clone, PartialEq)]
pub struct Cond {
    pub field: usize,
    pub op: CmpOp,
    pub values: Vec<Value>,
}

/// A read: conditions (all must hold), an order (a field, or `id` when
/// `None`; ties broken by `id` in the same direction), and a bound.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Query {
    pub conds: Vec<Cond>,
    pub order: Option<usize>,
    pub desc: bool,
    pub limit: Option<u32>,
}

/// A stored document as it crosses back to JS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocRow {
    pub id: String,
    pub tag: u32,
    pub doc: Vec<u8>,
}

pub(crate) fn where_sql(c: &Collection, conds: &[Cond]) -> rusqlite::Result<(String, Vec<Value>)> {
    let mut parts = Vec::with_capacity(conds.len());
    let mut binds = Vec::new();
    for cond in conds {
        if cond.field >= c.fields.len() {
            return Err(rusqlite::Error::InvalidColumnIndex(cond.field));
        }
        let col = c.column(cond.field);
        let one = || {
            cond.values
                .first()
                .cloned()
                .ok_or(rusqlite::Error::InvalidParameterCount(0, 1))
        };
        let sql = match cond.op {
            CmpOp::In => {
                if cond.values.is_empty() {
                    "0".to_string()
                } else {
                    binds.extend(cond.values.iter().cloned());
                    let marks = vec!["?"; cond.values.len()].join(", ");
                    format!("{col} IN ({marks})")
                }
            }
            op => {
                let v = one()?;
                let null = v == Value::Null;
                let sql = match (op, null) {
                    (CmpOp::Eq, true) => format!("{col} IS NULL"),
                    (CmpOp::Ne, true) => format!("{col} IS NOT NULL"),
                    (_, true) => "0".to_string(),
                    (CmpOp::Eq, false) => format!("{col} = ?"),
                    (CmpOp::Ne, false) => format!("{col} IS NOT ?"),
                    (CmpOp::Lt, false) => format!("{col} < ?"),
                    (CmpOp::Lte, false) => format!("{col} <= ?"),
                    (CmpOp::Gt, false) => format!("{col} > ?"),
                    (CmpOp::Gte, false) => format!("{col} >= ?"),
                    (CmpOp::In, false) => unreachable!("handled above"),
                };
                if !null {
                    binds.push(v);
                }
                sql
            }
        };
        parts.push(sql);
    }
    let sql = if parts.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", parts.join(" AND "))
    };
    Ok((sql, binds))
}

pub(crate) fn read_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<DocRow> {
    Ok(DocRow {
        id: r.get(0)?,
        tag: r.get(1)?,
        doc: r.get(2)?,
    })
}

/// The documents matching `q`, in its order, at most its limit.
pub fn find(
    conn: &Connection,
    c: &Collection,
    tables: &Tables,
    q: &Query,
) -> rusqlite::Result<Vec<DocRow>> {
    let mut rows = Vec::new();
    find_each(conn, c, tables, q, |id, tag, doc| {
        rows.push(DocRow {
            id: id.to_string(),
            tag,
            doc: doc.to_vec(),
        });
        true
    })?;
    Ok(rows)
}

/// `find`, each row's id, tag and bytes lent to `each` in turn while it is
/// read, until `each` returns false: no row is built unless the caller
/// builds one.
pub fn find_each(
    conn: &Connection,
    c: &Collection,
    tables: &Tables,
    q: &Query,
    mut each: impl FnMut(&str, u32, &[u8]) -> bool,
) -> rusqlite::Result<()> {
    if !tables.has(&c.name) {
        return Ok(());
    }
    let (filter, mut binds) = where_sql(c, &q.conds)?;
    let dir = if q.desc { "DESC" } else { "ASC" };
    let order = match q.order {
        Some(f) if f < c.fields.len() => format!("{} {dir}, id {dir}", c.column(f)),
        Some(f) => return Err(rusqlite::Error::InvalidColumnIndex(f)),
        None => format!("id {dir}"),
    };
    let mut sql = format!(
        "SELECT id, tag, doc FROM {}{filter} ORDER BY {order}",
        c.table
    );
    if let Some(n) = q.limit {
        sql.push_str(" LIMIT ?");
        binds.push(Value::Integer(i64::from(n)));
    }
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query(params_from_iter(binds.iter()))?;
    while let Some(row) = rows.next()? {
        let id = row.get_ref(0)?.as_str()?;
        let tag: u32 = row.get(1)?;
        if !each(id, tag, row.get_ref(2)?.as_bytes()?) {
            break;
        }
    }
    Ok(())
}

/// How many documents match `conds`.
pub fn count(
    conn: &Connection,
    c: &Collection,
    tables: &Tables,
    conds: &[Cond],
) -> rusqlite::Result<i64> {
    if !tables.has(&c.name) {
        return Ok(0);
    }
    let (filter, binds) = where_sql(c, conds)?;
    let sql = format!("SELECT count(*) FROM {}{filter}", c.table);
    conn.prepare_cached(&sql)?
        .query_row(params_from_iter(binds.iter()), |r| r.get(0))
}

/// One document by id.
pub fn get(
    conn: &Connection,
    c: &Collection,
    tables: &Tables,
    id: &str,
) -> rusqlite::Result<Option<DocRow>> {
    if !tables.has(&c.name) {
        return Ok(None);
    }
    conn.prepare_cached(&c.select_one)?
        .query_row([id], read_row)
        .optional()
}

/// One document by id, its tag and bytes lent to `take` while the row is
/// read: the caller copies them once, into what it returns, and no row is
/// built. `None` when there is no such document.
pub fn get_with<T>(
    conn: &Connection,
    c: &Collection,
    tables: &Tables,
    id: &str,
    take: impl FnOnce(u32, &[u8]) -> T,
) -> rusqlite::Result<Option<T>> {
    if !tables.has(&c.name) {
        return Ok(None);
    }
    let mut stmt = conn.prepare_cached(&c.select_one)?;
    let mut rows = stmt.query([id])?;
    match rows.next()? {
        Some(row) => {
            let tag: u32 = row.get(1)?;
            let doc = row.get_ref(2)?.as_bytes()?;
            Ok(Some(take(tag, doc)))
        }
        None => Ok(None),
    }
}

/// Documents in id order after `after`, at most `limit`: every document,
/// undecoded, for a scan or a backfill.
pub fn scan(
    conn: &Connection,
    c: &Collection,
    tables: &Tables,
    after: Option<&str>,
    limit: Option<u32>,
) -> rusqlite::Result<Vec<DocRow>> {
    if !tables.has(&c.name) {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT id, tag, doc FROM {} WHERE ?1 IS NULL OR id > ?1 ORDER BY id LIMIT ?2",
        c.table
    );
    let limit = limit.map_or(-1, i64::from);
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params![after, limit], read_row)?;
    rows.collect()
}

/// Runs `read` over the committed rows with `overlay` applied on top: the
/// writes a worker has made and not yet committed, so it reads its own
/// writes. The overlay lives in a savepoint that is always rolled back.
///
/// An overlay may repeat writes that have since committed (the caller cannot
/// know whether its in-flight commit has landed); each op sets a document's
/// final state, so applying one twice changes nothing.
pub fn with_overlay<T>(
    conn: &Connection,
    schema: &Schema,
    tables: &Tables,
    overlay: &DocChanges,
    read: impl FnOnce(&Tables) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    if overlay.is_empty() {
        return read(tables);
    }
    conn.execute_batch("SAVEPOINT overlay")?;
    let mut view = tables.clone();
    let out = apply(conn, schema, &mut view, overlay).and_then(|()| read(&view));
    // Ends the savepoint either way; if the rollback itself fails the
    // connection is unusable and the next statement says so.
    let undo = conn.execute_batch("ROLLBACK TO overlay; RELEASE overlay");
    let out = out?;
    undo?;
    Ok(out)
}

/// Column values as JS sends them: per value a tag byte, then
/// 0 null | 1 i64 LE | 2 f64 LE | 3 u32 LE length + UTF-8.
pub fn decode_values(mut buf: &[u8]) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    fn take<'a>(buf: &mut &'a [u8], n: usize) -> Result<&'a [u8], String> {
        if buf.len() < n {
            return Err("column values end early".into());
        }
        let (head, rest) = buf.split_at(n);
        *buf = rest;
        Ok(head)
    }
    fn eight(b: &[u8]) -> [u8; 8] {
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        a
    }
    while let Some((&tag, rest)) = buf.split_first() {
        buf = rest;
        out.push(match tag {
            0 => Value::Null,
            1 => Value::Integer(i64::from_le_bytes(eight(take(&mut buf, 8)?))),
            2 => Value::Real(f64::from_le_bytes(eight(take(&mut buf, 8)?))),
            3 => {
                let mut n = [0u8; 4];
                n.copy_from_slice(take(&mut buf, 4)?);
                let bytes = take(&mut buf, u32::from_le_bytes(n) as usize)?;
                let s = std::str::from_utf8(bytes).map_err(|e| e.to_string())?;
                Value::Text(s.to_string())
            }
            t => return Err(format!("unknown column value tag {t}")),
        });
    }
    Ok(out)
}
