//! Declarations: field types, collections and their SQL names, the schema of
//! a class, and which tables a worker's file has.

use std::collections::HashSet;

use rusqlite::Connection;

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
    pub(crate) table: String,
    pub(crate) upsert: String,
    pub(crate) delete: String,
    /// A document by id: built once, as a point read's statement is looked
    /// up in the connection's cache by its text on every read.
    pub(crate) select_one: String,
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
        let select_one = format!("SELECT id, tag, doc FROM {table} WHERE id = ?1");
        Some(Collection {
            name: name.to_string(),
            fields,
            table,
            upsert,
            delete,
            select_one,
        })
    }

    pub(crate) fn column(&self, field: usize) -> String {
        column_ident(&self.fields[field].0)
    }

    pub(crate) fn index_ddl(&self, field: usize) -> String {
        format!(
            "CREATE INDEX IF NOT EXISTS \"{}.{}\" ON {}({}, id)",
            self.name,
            self.fields[field].0,
            self.table,
            self.column(field)
        )
    }
}

pub(crate) fn table_ident(name: &str) -> String {
    format!("\"c_{name}\"")
}

pub(crate) fn column_ident(field: &str) -> String {
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
pub struct Tables(pub(crate) HashSet<String>);

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
