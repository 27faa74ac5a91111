//! Writing documents: a commit's collection changes applied in the worker's
//! write transaction, tables and field bookkeeping made on first use.

use super::*;
use rusqlite::types::Value;
use rusqlite::{params, params_from_iter, Connection};

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

pub(crate) fn ensure_table(
    conn: &Connection,
    c: &Collection,
    tables: &mut Tables,
) -> rusqlite::Result<()> {
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

pub(crate) const FIELDS_DDL: &str = "CREATE TABLE IF NOT EXISTS fields(collection TEXT NOT NULL, field TEXT NOT NULL, type TEXT NOT NULL, active INTEGER NOT NULL, PRIMARY KEY(collection, field)) WITHOUT ROWID";

pub(crate) fn mark_active(conn: &Connection, c: &Collection, field: usize) -> rusqlite::Result<()> {
    let (name, ty) = &c.fields[field];
    conn.prepare_cached(
        "INSERT INTO fields(collection, field, type, active) VALUES (?1, ?2, ?3, 1)
         ON CONFLICT(collection, field) DO UPDATE SET type = excluded.type, active = 1",
    )?
    .execute(params![c.name, name, ty.as_str()])?;
    Ok(())
}
