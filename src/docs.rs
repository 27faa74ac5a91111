//! Collections: documents stored as bytes the database cannot read, beside one
//! real, indexed column per declared field that it can.
//!
//! Guarantee: a collection's rows change only inside a worker's write
//! transaction (with its key/value changes, as one commit), or inside a read's
//! savepoint that is always rolled back. Every name that reaches SQL text is a
//! declared name that passed [`valid_name`], and quoted; every value is bound.
//!
//! Schema, per declared collection `orders` with fields `status`, `total`:
//!
//! ```text
//! "c_orders"(id TEXT PRIMARY KEY, tag INTEGER, doc BLOB, "f_status", "f_total")
//! index "orders.status" ON "c_orders"("f_status", id)      one per field
//! fields(collection, field, type, active)                  what each column holds
//! ```
//!
//! Field columns have no declared type, so SQLite never converts what is bound
//! to them: a field's type is this crate's bookkeeping (the `fields` table), and
//! a changed type is a new backfill, not a column affinity fighting it. The
//! index includes `id` because `id` breaks ties in every ordered read.
//!
//! Nothing is dropped: a field or collection that leaves the declaration keeps
//! its column or table, marked inactive, and is backfilled again if declared
//! again (its column was not kept up to date meanwhile).

use std::collections::{HashMap, HashSet};

use rusqlite::types::Value;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension};

/// A declared field's type. Booleans are stored as 0/1 and dates as epoch
/// milliseconds, so both sort as numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldType {
    Text,
    Integer,
    Real,
    Boolean,
    Date,
}

impl FieldType {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "text" => FieldType::Text,
            "integer" => FieldType::Integer,
            "real" => FieldType::Real,
            "boolean" => FieldType::Boolean,
            "date" => FieldType::Date,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FieldType::Text => "text",
            FieldType::Integer => "integer",
            FieldType::Real => "real",
            FieldType::Boolean => "boolean",
            FieldType::Date => "date",
        }
    }
}

/// A collection or field name that may appear (quoted) in SQL text:
/// `[A-Za-z_][A-Za-z0-9_]{0,63}`.
pub fn valid_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

/// One declared collection, with the SQL its writes use, built once.
#[derive(Debug)]
pub struct Collection {
    pub name: String,
    pub fields: Vec<(String, FieldType)>,
    table: String,
    upsert: String,
    delete: String,
}

impl Collection {
    /// `None` when a name is not a [`valid_name`] or a field appears twice.
    pub fn new(name: &str, fields: Vec<(String, FieldType)>) -> Option<Self> {
        let mut seen = HashSet::new();
        if !valid_name(name) || !fields.iter().all(|(f, _)| valid_name(f) && seen.insert(f)) {
            return None;
        }
        let table = table_ident(name);
        let cols: Vec<String> = fields.iter().map(|(f, _)| column_ident(f)).collect();
        let mut names = vec!["id".to_string(), "tag".into(), "doc".into()];
        names.extend(cols.iter().cloned());
        let marks = (1..=names.len())
            .map(|i| format!("?{i}"))
            .collect::<Vec<_>>()
            .join(", ");
        let updates = names[1..]
            .iter()
            .map(|c| format!("{c} = excluded.{c}"))
            .collect::<Vec<_>>()
            .join(", ");
        let upsert = format!(
            "INSERT INTO {table}({}) VALUES ({marks}) ON CONFLICT(id) DO UPDATE SET {updates}",
            names.join(", ")
        );
        let delete = format!("DELETE FROM {table} WHERE id = ?1");
        Some(Collection {
            name: name.to_string(),
            fields,
            table,
            upsert,
            delete,
        })
    }

    fn column(&self, field: usize) -> String {
        column_ident(&self.fields[field].0)
    }

    fn index_ddl(&self, field: usize) -> String {
        format!(
            "CREATE INDEX IF NOT EXISTS \"{}.{}\" ON {}({}, id)",
            self.name,
            self.fields[field].0,
            self.table,
            self.column(field)
        )
    }
}

fn table_ident(name: &str) -> String {
    format!("\"c_{name}\"")
}

fn column_ident(field: &str) -> String {
    format!("\"f_{field}\"")
}

/// A class's declared collections, in declaration order (ops name them by index).
#[derive(Debug, Default)]
pub struct Schema {
    pub collections: Vec<Collection>,
}

impl Schema {
    pub fn get(&self, i: usize) -> rusqlite::Result<&Collection> {
        self.collections
            .get(i)
            .ok_or(rusqlite::Error::InvalidColumnIndex(i))
    }
}

/// The collections whose tables exist in one file.
#[derive(Debug, Default, Clone)]
pub struct Tables(HashSet<String>);

impl Tables {
    /// Reads which collection tables exist.
    pub fn read(conn: &Connection) -> rusqlite::Result<Self> {
        let mut stmt = conn.prepare(
            "SELECT substr(name, 3) FROM sqlite_schema WHERE type = 'table' AND name LIKE 'c\\_%' ESCAPE '\\'",
        )?;
        let names = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<HashSet<_>>>()?;
        Ok(Tables(names))
    }

    pub fn has(&self, name: &str) -> bool {
        self.0.contains(name)
    }
}

/// A document written: its codec tag, its bytes, and one column value per
/// declared field, in declaration order.
#[derive(Debug, Clone, PartialEq)]
pub struct DocPut {
    pub tag: u32,
    pub doc: Vec<u8>,
    pub columns: Vec<Value>,
}

/// The final state of one document after a batch: written, or deleted (`None`).
#[derive(Debug, Clone, PartialEq)]
pub struct DocOp {
    pub coll: usize,
    pub id: String,
    pub put: Option<DocPut>,
}

/// Collection changes of one batch: every collection emptied first (`clear`,
/// from `deleteAll`), then one op per document.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct DocChanges {
    pub clear: bool,
    pub ops: Vec<DocOp>,
}

impl DocChanges {
    pub fn is_empty(&self) -> bool {
        !self.clear && self.ops.is_empty()
    }
}

/// Applies `changes` inside the caller's transaction, creating tables on
/// first use. `tables` is the caller's working copy: it must be kept only if
/// the transaction commits.
pub fn apply(
    conn: &Connection,
    schema: &Schema,
    tables: &mut Tables,
    changes: &DocChanges,
) -> rusqlite::Result<()> {
    if changes.clear {
        for name in &tables.0 {
            conn.execute(&format!("DELETE FROM {}", table_ident(name)), [])?;
        }
    }
    for op in &changes.ops {
        let c = schema.get(op.coll)?;
        ensure_table(conn, c, tables)?;
        match &op.put {
            Some(p) => {
                let mut stmt = conn.prepare_cached(&c.upsert)?;
                let head = [
                    Value::Text(op.id.clone()),
                    Value::Integer(i64::from(p.tag)),
                    Value::Blob(p.doc.clone()),
                ];
                if p.columns.len() != c.fields.len() {
                    return Err(rusqlite::Error::InvalidParameterCount(
                        p.columns.len(),
                        c.fields.len(),
                    ));
                }
                stmt.execute(params_from_iter(head.iter().chain(p.columns.iter())))?;
            }
            None => {
                conn.prepare_cached(&c.delete)?.execute([&op.id])?;
            }
        }
    }
    Ok(())
}

fn ensure_table(conn: &Connection, c: &Collection, tables: &mut Tables) -> rusqlite::Result<()> {
    if tables.has(&c.name) {
        return Ok(());
    }
    conn.execute_batch(FIELDS_DDL)?;
    let mut ddl = format!(
        "CREATE TABLE {}(id TEXT PRIMARY KEY NOT NULL, tag INTEGER NOT NULL, doc BLOB NOT NULL",
        c.table
    );
    for i in 0..c.fields.len() {
        ddl.push_str(", ");
        ddl.push_str(&c.column(i));
    }
    ddl.push(')');
    conn.execute(&ddl, [])?;
    for i in 0..c.fields.len() {
        conn.execute(&c.index_ddl(i), [])?;
        mark_active(conn, c, i)?;
    }
    tables.0.insert(c.name.clone());
    Ok(())
}

const FIELDS_DDL: &str = "CREATE TABLE IF NOT EXISTS fields(collection TEXT NOT NULL, field TEXT NOT NULL, type TEXT NOT NULL, active INTEGER NOT NULL, PRIMARY KEY(collection, field)) WITHOUT ROWID";

fn mark_active(conn: &Connection, c: &Collection, field: usize) -> rusqlite::Result<()> {
    let (name, ty) = &c.fields[field];
    conn.prepare_cached(
        "INSERT INTO fields(collection, field, type, active) VALUES (?1, ?2, ?3, 1)
         ON CONFLICT(collection, field) DO UPDATE SET type = excluded.type, active = 1",
    )?
    .execute(params![c.name, name, ty.as_str()])?;
    Ok(())
}

/// Declared fields of an existing table whose column must be (re)filled from
/// the stored documents before the worker runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backfill {
    pub coll: usize,
    pub fields: Vec<usize>,
}

/// A column named by collection and field.
pub type ColumnName = (String, String);

/// What a file's `fields` table says about one column.
struct Stored {
    ty: String,
    active: bool,
}

/// Compares the file with the declaration on a worker's first wake: columns
/// no longer declared are marked inactive (`deactivate`, to run in a write
/// transaction), and declared fields that are new, inactive or of another
/// type are returned for backfill.
pub fn reconcile(
    conn: &Connection,
    schema: &Schema,
    tables: &Tables,
) -> rusqlite::Result<(Vec<Backfill>, Vec<ColumnName>)> {
    let mut stored: HashMap<(String, String), Stored> = HashMap::new();
    let has_fields: bool = conn.query_row(
        "SELECT count(*) > 0 FROM sqlite_schema WHERE type = 'table' AND name = 'fields'",
        [],
        |r| r.get(0),
    )?;
    if has_fields {
        let mut stmt = conn.prepare("SELECT collection, field, type, active FROM fields")?;
        let rows = stmt.query_map([], |r| {
            Ok((
                (r.get::<_, String>(0)?, r.get::<_, String>(1)?),
                Stored {
                    ty: r.get(2)?,
                    active: r.get::<_, i64>(3)? != 0,
                },
            ))
        })?;
        for row in rows {
            let (k, v) = row?;
            stored.insert(k, v);
        }
    }
    let declared: HashSet<(&str, &str)> = schema
        .collections
        .iter()
        .flat_map(|c| c.fields.iter().map(|(f, _)| (c.name.as_str(), f.as_str())))
        .collect();
    let mut deactivate: Vec<ColumnName> = stored
        .iter()
        .filter(|((c, f), s)| s.active && !declared.contains(&(c.as_str(), f.as_str())))
        .map(|(k, _)| k.clone())
        .collect();
    deactivate.sort();
    let mut backfill = Vec::new();
    for (ci, c) in schema.collections.iter().enumerate() {
        if !tables.has(&c.name) {
            continue;
        }
        let fields: Vec<usize> = c
            .fields
            .iter()
            .enumerate()
            .filter(|(_, (f, ty))| {
                !matches!(stored.get(&(c.name.clone(), f.clone())),
                    Some(s) if s.active && s.ty == ty.as_str())
            })
            .map(|(i, _)| i)
            .collect();
        if !fields.is_empty() {
            backfill.push(Backfill { coll: ci, fields });
        }
    }
    Ok((backfill, deactivate))
}

/// Marks columns that left the declaration inactive (their data stays).
pub fn deactivate(conn: &Connection, which: &[ColumnName]) -> rusqlite::Result<()> {
    let mut stmt =
        conn.prepare_cached("UPDATE fields SET active = 0 WHERE collection = ?1 AND field = ?2")?;
    for (c, f) in which {
        stmt.execute(params![c, f])?;
    }
    Ok(())
}

/// Fills `fields` of collection `c` for the documents `ids` with `columns`
/// (`ids.len() × fields.len()` values, row by row), adding the columns and
/// indexes that are missing. Inside the caller's transaction.
pub fn backfill(
    conn: &Connection,
    c: &Collection,
    fields: &[usize],
    ids: &[String],
    columns: &[Value],
) -> rusqlite::Result<()> {
    if fields.iter().any(|&f| f >= c.fields.len()) || columns.len() != ids.len() * fields.len() {
        return Err(rusqlite::Error::InvalidParameterCount(
            columns.len(),
            ids.len() * fields.len(),
        ));
    }
    let existing: HashSet<String> = {
        let mut stmt = conn.prepare(&format!("PRAGMA table_info({})", c.table))?;
        let names = stmt
            .query_map([], |r| r.get::<_, String>(1))?
            .collect::<rusqlite::Result<HashSet<_>>>()?;
        names
    };
    for &f in fields {
        if !existing.contains(&format!("f_{}", c.fields[f].0)) {
            conn.execute(
                &format!("ALTER TABLE {} ADD COLUMN {}", c.table, c.column(f)),
                [],
            )?;
        }
    }
    if !fields.is_empty() && !ids.is_empty() {
        let sets = fields
            .iter()
            .enumerate()
            .map(|(i, &f)| format!("{} = ?{}", c.column(f), i + 1))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "UPDATE {} SET {sets} WHERE id = ?{}",
            c.table,
            fields.len() + 1
        );
        let mut stmt = conn.prepare(&sql)?;
        for (row, id) in ids.iter().enumerate() {
            let vals = &columns[row * fields.len()..(row + 1) * fields.len()];
            let id = Value::Text(id.clone());
            stmt.execute(params_from_iter(vals.iter().chain(std::iter::once(&id))))?;
        }
    }
    conn.execute_batch(FIELDS_DDL)?;
    for &f in fields {
        conn.execute(&c.index_ddl(f), [])?;
        mark_active(conn, c, f)?;
    }
    Ok(())
}

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

fn where_sql(c: &Collection, conds: &[Cond]) -> rusqlite::Result<(String, Vec<Value>)> {
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

fn read_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<DocRow> {
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
    if !tables.has(&c.name) {
        return Ok(Vec::new());
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
    let rows = stmt.query_map(params_from_iter(binds.iter()), read_row)?;
    rows.collect()
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
    let sql = format!("SELECT id, tag, doc FROM {} WHERE id = ?1", c.table);
    conn.prepare_cached(&sql)?
        .query_row([id], read_row)
        .optional()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A declaration the tests know to be valid.
    fn declared(name: &str, fields: Vec<(String, FieldType)>) -> rusqlite::Result<Collection> {
        Collection::new(name, fields).ok_or(rusqlite::Error::InvalidQuery)
    }

    fn orders() -> rusqlite::Result<Schema> {
        Ok(Schema {
            collections: vec![declared(
                "orders",
                vec![
                    ("status".into(), FieldType::Text),
                    ("total".into(), FieldType::Real),
                ],
            )?],
        })
    }

    fn put(id: &str, status: Option<&str>, total: f64) -> DocOp {
        DocOp {
            coll: 0,
            id: id.into(),
            put: Some(DocPut {
                tag: 1,
                doc: id.as_bytes().to_vec(),
                columns: vec![
                    status.map_or(Value::Null, |s| Value::Text(s.into())),
                    Value::Real(total),
                ],
            }),
        }
    }

    fn text(s: &str) -> Value {
        Value::Text(s.into())
    }

    fn ids(rows: &[DocRow]) -> Vec<&str> {
        rows.iter().map(|r| r.id.as_str()).collect()
    }

    fn write(
        conn: &Connection,
        schema: &Schema,
        tables: &mut Tables,
        ops: Vec<DocOp>,
    ) -> rusqlite::Result<()> {
        conn.execute_batch("BEGIN")?;
        apply(conn, schema, tables, &DocChanges { clear: false, ops })?;
        conn.execute_batch("COMMIT")
    }

    #[test]
    fn names_that_could_escape_their_quotes_are_refused() {
        assert!(valid_name("orders_2"));
        for bad in ["", "a\"b", "a b", "1a", "a;drop", "é", &"x".repeat(65)] {
            assert!(!valid_name(bad), "{bad:?}");
        }
        assert!(Collection::new("x", vec![("a".into(), FieldType::Text); 2]).is_none());
    }

    #[test]
    fn finds_by_declared_fields_with_null_aware_equality_and_id_ties() -> rusqlite::Result<()> {
        let conn = Connection::open_in_memory()?;
        let schema = orders()?;
        let mut tables = Tables::default();
        write(
            &conn,
            &schema,
            &mut tables,
            vec![
                put("b", Some("open"), 5.0),
                put("a", Some("open"), 5.0),
                put("c", None, 1.0),
                put("d", Some("shipped"), 9.5),
            ],
        )?;
        let c = &schema.collections[0];
        let q = |conds: Vec<Cond>, order, desc, limit| Query {
            conds,
            order,
            desc,
            limit,
        };
        let eq = |v: Value| Cond {
            field: 0,
            op: CmpOp::Eq,
            values: vec![v],
        };
        let open = find(
            &conn,
            c,
            &tables,
            &q(vec![eq(text("open"))], None, false, None),
        )?;
        assert_eq!(ids(&open), ["a", "b"]);
        let missing = find(
            &conn,
            c,
            &tables,
            &q(vec![eq(Value::Null)], None, false, None),
        )?;
        assert_eq!(ids(&missing), ["c"]);
        let ne = Cond {
            field: 0,
            op: CmpOp::Ne,
            values: vec![text("open")],
        };
        let not_open = find(&conn, c, &tables, &q(vec![ne], None, false, None))?;
        assert_eq!(ids(&not_open), ["c", "d"], "!= includes the missing field");
        let by_total = find(&conn, c, &tables, &q(vec![], Some(1), true, Some(3)))?;
        assert_eq!(
            ids(&by_total),
            ["d", "b", "a"],
            "ties by id, same direction"
        );
        let inn = Cond {
            field: 1,
            op: CmpOp::In,
            values: vec![Value::Real(1.0), Value::Real(9.5)],
        };
        assert_eq!(count(&conn, c, &tables, &[inn])?, 2);
        Ok(())
    }

    #[test]
    fn an_overlay_is_read_and_then_gone() -> rusqlite::Result<()> {
        let conn = Connection::open_in_memory()?;
        let schema = orders()?;
        let mut tables = Tables::default();
        write(
            &conn,
            &schema,
            &mut tables,
            vec![put("a", Some("open"), 1.0)],
        )?;
        let c = &schema.collections[0];
        let overlay = DocChanges {
            clear: false,
            ops: vec![
                put("b", Some("open"), 2.0),
                DocOp {
                    coll: 0,
                    id: "a".into(),
                    put: None,
                },
            ],
        };
        let seen = with_overlay(&conn, &schema, &tables, &overlay, |t| {
            find(&conn, c, t, &Query::default())
        })?;
        assert_eq!(ids(&seen), ["b"]);
        let after = find(&conn, c, &tables, &Query::default())?;
        assert_eq!(ids(&after), ["a"]);
        // An overlay on a file without the table creates it only for the read.
        let empty = Connection::open_in_memory()?;
        let none = Tables::default();
        let seen = with_overlay(&empty, &schema, &none, &overlay, |t| {
            count(&empty, c, t, &[])
        })?;
        assert_eq!(seen, 1);
        assert!(!Tables::read(&empty)?.has("orders"));
        Ok(())
    }

    #[test]
    fn a_field_declared_later_is_reported_for_backfill_and_a_dropped_one_kept(
    ) -> rusqlite::Result<()> {
        let conn = Connection::open_in_memory()?;
        let v1 = orders()?;
        let mut tables = Tables::default();
        write(&conn, &v1, &mut tables, vec![put("a", Some("open"), 1.0)])?;
        let v2 = Schema {
            collections: vec![declared(
                "orders",
                vec![
                    ("total".into(), FieldType::Real),
                    ("region".into(), FieldType::Text),
                ],
            )?],
        };
        let (todo, gone) = reconcile(&conn, &v2, &tables)?;
        assert_eq!(
            todo,
            vec![Backfill {
                coll: 0,
                fields: vec![1]
            }]
        );
        assert_eq!(gone, vec![("orders".to_string(), "status".to_string())]);
        conn.execute_batch("BEGIN")?;
        deactivate(&conn, &gone)?;
        backfill(
            &conn,
            &v2.collections[0],
            &[1],
            &["a".to_string()],
            &[text("eu")],
        )?;
        conn.execute_batch("COMMIT")?;
        let (todo, gone) = reconcile(&conn, &v2, &tables)?;
        assert!(todo.is_empty() && gone.is_empty());
        let kept: String =
            conn.query_row("SELECT \"f_status\" FROM \"c_orders\"", [], |r| r.get(0))?;
        assert_eq!(kept, "open");
        let region = Cond {
            field: 1,
            op: CmpOp::Eq,
            values: vec![text("eu")],
        };
        assert_eq!(count(&conn, &v2.collections[0], &tables, &[region])?, 1);
        // Declared again, the dropped field is filled again.
        let (todo, _) = reconcile(&conn, &v1, &tables)?;
        assert_eq!(
            todo,
            vec![Backfill {
                coll: 0,
                fields: vec![0]
            }]
        );
        Ok(())
    }

    #[test]
    fn column_values_round_trip_their_encoding() {
        let mut buf = vec![0u8, 1];
        buf.extend(7i64.to_le_bytes());
        buf.push(2);
        buf.extend(2.5f64.to_le_bytes());
        buf.push(3);
        buf.extend(3u32.to_le_bytes());
        buf.extend(b"abc");
        assert_eq!(
            decode_values(&buf),
            Ok(vec![
                Value::Null,
                Value::Integer(7),
                Value::Real(2.5),
                Value::Text("abc".into())
            ])
        );
        assert!(decode_values(&[3, 9, 0, 0, 0, b'a']).is_err());
        assert!(decode_values(&[9]).is_err());
    }
}
