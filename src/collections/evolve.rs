//! A declaration that changed: fields to backfill, columns no longer declared
//! marked inactive, and the backfill itself.

use super::*;
use std::collections::{HashMap, HashSet};

use rusqlite::types::Value;
use rusqlite::{params, params_from_iter, Connection};

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
pub(crate) struct Stored {
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
