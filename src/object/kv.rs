//! The key-value table and the alarm of an object's file, as workerd keeps
//! them: `_cf_KV(key TEXT PRIMARY KEY, value BLOB) WITHOUT ROWID` and
//! `_cf_METADATA(key INTEGER PRIMARY KEY, value BLOB)` (1: the alarm in
//! nanoseconds; 3: the name of the object's id, for `alarm()` after a
//! restart), each made at its first write.

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{params, OptionalExtension};

use super::errors;
use super::file::{ExecError, ObjectFile};
use crate::error::{Error, Result};

/// The key-value table, made at its first write as workerd makes it.
const KV_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS _cf_KV (key TEXT PRIMARY KEY, value BLOB) WITHOUT ROWID";

/// The alarm as this connection last read or wrote it, as workerd caches it:
/// setting the value it already holds writes nothing, and a reset
/// (`delete_all`) forgets it, so that the next set writes even a clear (and
/// makes the metadata table: visible in `databaseSize`). Only a write is
/// undone by a rollback (to its savepoint, or of the transaction): a read
/// stays known.
#[derive(Default)]
pub(super) struct AlarmCache {
    /// `None`: not known since the load or the last reset.
    pub(super) known: Option<Option<f64>>,
    /// Savepoints open in the transaction.
    pub(super) depth: u32,
    /// Each write's savepoint depth and what `known` was before it.
    pub(super) undo: Vec<(u32, Option<Option<f64>>)>,
}

impl AlarmCache {
    /// Undoes the writes made at `depth` or deeper.
    pub(super) fn roll_back_to(&mut self, depth: u32) {
        while let Some(&(d, before)) = self.undo.last() {
            if d < depth {
                break;
            }
            self.known = before;
            self.undo.pop();
        }
    }
}

impl ObjectFile {
    pub(super) fn has_table(&self, name: &str) -> Result<bool> {
        self.conn
            .prepare_cached("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1")
            .and_then(|mut s| s.exists([name]))
            .map_err(|e| Error::sqlite("read schema", &self.path, e))
    }

    /// The values of `keys` (their bytes as workerd makes them: see
    /// `js/do/keys.js`), in their order, `None` where absent.
    pub fn kv_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        if !self.has_table("_cf_KV")? {
            return Ok(vec![None; keys.len()]);
        }
        let mut stmt = self
            .conn
            .prepare_cached("SELECT value FROM _cf_KV WHERE key = ?1")
            .map_err(|e| Error::sqlite("kv get", &self.path, e))?;
        keys.iter()
            .map(|k| {
                stmt.query_row([text(k)], |r| r.get::<_, Vec<u8>>(0))
                    .optional()
                    .map_err(|e| Error::sqlite("kv get", &self.path, e))
            })
            .collect()
    }

    /// Stores `values` under `keys`, in the open transaction (opened here if
    /// none is). A value or key past SQLite's length limit is the user's
    /// error, worded as workerd words it.
    pub fn kv_put(
        &self,
        keys: &[&[u8]],
        values: &[&[u8]],
        began: &mut bool,
    ) -> std::result::Result<(), ExecError> {
        if keys.is_empty() {
            return Ok(());
        }
        *began |= self.begin()?;
        let ctx = |e: rusqlite::Error| {
            user_error(&e).unwrap_or_else(|| Error::sqlite("kv put", &self.path, e).into())
        };
        self.conn.execute_batch(KV_TABLE).map_err(ctx)?;
        let mut stmt = self
            .conn
            .prepare_cached(
                "INSERT INTO _cf_KV VALUES(?1, ?2) ON CONFLICT DO UPDATE SET value = excluded.value",
            )
            .map_err(ctx)?;
        for (k, v) in keys.iter().zip(values) {
            stmt.execute(params![text(k), v]).map_err(ctx)?;
        }
        Ok(())
    }

    /// Deletes `keys`; how many were there. Like a put, it makes the
    /// key-value table if there is none (workerd's does: `databaseSize`
    /// shows it).
    pub fn kv_delete(&self, keys: &[&[u8]], began: &mut bool) -> Result<u32> {
        if keys.is_empty() {
            return Ok(0);
        }
        *began |= self.begin()?;
        let ctx = |e| Error::sqlite("kv delete", &self.path, e);
        self.conn.execute_batch(KV_TABLE).map_err(ctx)?;
        let mut stmt = self
            .conn
            .prepare_cached("DELETE FROM _cf_KV WHERE key = ?1")
            .map_err(ctx)?;
        let mut n = 0u32;
        for k in keys {
            n += stmt.execute([text(k)]).map_err(ctx)? as u32;
        }
        Ok(n)
    }

    /// Pairs with `start <= key < end` (UTF-8 bytes), ascending or not, at
    /// most `limit`: keys and values as length-prefixed bytes.
    pub fn kv_list(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        reverse: bool,
        limit: Option<u32>,
    ) -> Result<(u32, Vec<u8>)> {
        let mut out = Vec::new();
        if !self.has_table("_cf_KV")? {
            return Ok((0, out));
        }
        // One statement per shape, so that the end bounds the index scan
        // (`?2 IS NULL OR key < ?2` would not).
        let sql = format!(
            "SELECT key, value FROM _cf_KV WHERE key >= ?1{} ORDER BY key{} LIMIT ?3",
            if end.is_some() { " AND key < ?2" } else { "" },
            if reverse { " DESC" } else { "" }
        );
        let ctx = |e| Error::sqlite("kv list", &self.path, e);
        let mut stmt = self.conn.prepare_cached(&sql).map_err(ctx)?;
        let mut rows = stmt
            .query(params![
                text(start),
                end.map(text),
                limit.map_or(-1, i64::from)
            ])
            .map_err(ctx)?;
        let mut n = 0u32;
        while let Some(r) = rows.next().map_err(ctx)? {
            let key = r
                .get_ref(0)
                .map_err(ctx)?
                .as_bytes()
                .map_err(|e| ctx(e.into()))?;
            let value = r
                .get_ref(1)
                .map_err(ctx)?
                .as_bytes()
                .map_err(|e| ctx(e.into()))?;
            for part in [key, value] {
                out.extend_from_slice(&(part.len() as u32).to_le_bytes());
                out.extend_from_slice(part);
            }
            n += 1;
        }
        Ok((n, out))
    }

    /// The alarm, in ms since the epoch (stored as nanoseconds, as workerd does).
    pub fn get_alarm(&self) -> Result<Option<f64>> {
        let at = self.read_alarm()?;
        self.alarm.borrow_mut().known = Some(at);
        Ok(at)
    }

    fn read_alarm(&self) -> Result<Option<f64>> {
        if !self.has_table("_cf_METADATA")? {
            return Ok(None);
        }
        self.conn
            .query_row("SELECT value FROM _cf_METADATA WHERE key = 1", [], |r| {
                r.get::<_, Option<i64>>(0)
            })
            .optional()
            .map(|v| v.flatten().map(|ns| (ns / 1_000_000) as f64))
            .map_err(|e| Error::sqlite("get alarm", &self.path, e))
    }

    /// The name the object's id was made from, as the last `set_alarm` that
    /// set an alarm recorded it (key 3): `ctx.id.name` inside `alarm()`
    /// after a restart, as workerd keeps `actor_name` with the alarm.
    pub fn alarm_name(&self) -> Result<Option<String>> {
        if !self.has_table("_cf_METADATA")? {
            return Ok(None);
        }
        self.conn
            .query_row("SELECT value FROM _cf_METADATA WHERE key = 3", [], |r| {
                r.get::<_, Option<String>>(0)
            })
            .optional()
            .map(Option::flatten)
            .map_err(|e| Error::sqlite("get alarm name", &self.path, e))
    }

    /// Sets or clears the alarm, in the open transaction (opened here if none is).
    /// The object's id (key 4) and the id's name (key 3) are kept beside a
    /// set alarm, in the same write: a catalog rebuilt from the files
    /// (`repair.rs`) indexes the alarm by that id, and the alarm's event gets
    /// the name. Neither is visible to user SQL.
    pub fn set_alarm(
        &self,
        at_ms: Option<f64>,
        id: &str,
        name: Option<&str>,
        began: &mut bool,
    ) -> Result<()> {
        let at_ms = at_ms.map(f64::trunc);
        if self.alarm.borrow().known == Some(at_ms) {
            return Ok(());
        }
        *began |= self.begin()?;
        let ctx = |e| Error::sqlite("set alarm", &self.path, e);
        self.conn
            .execute_batch(
                "CREATE TABLE IF NOT EXISTS _cf_METADATA (key INTEGER PRIMARY KEY, value BLOB)",
            )
            .map_err(ctx)?;
        // Whole milliseconds, as workerd keeps them.
        let ns = at_ms.map(|ms| (ms as i64).saturating_mul(1_000_000));
        self.conn
            .prepare_cached(
                "INSERT INTO _cf_METADATA VALUES(1, ?1) ON CONFLICT DO UPDATE SET value = excluded.value",
            )
            .and_then(|mut s| s.execute([ns]))
            .map_err(ctx)?;
        if at_ms.is_some() {
            self.conn
                .prepare_cached(
                    "INSERT INTO _cf_METADATA VALUES(4, ?1) ON CONFLICT DO UPDATE SET value = excluded.value",
                )
                .and_then(|mut s| s.execute([id]))
                .map_err(ctx)?;
        }
        if let (Some(_), Some(name)) = (at_ms, name) {
            self.conn
                .prepare_cached(
                    "INSERT INTO _cf_METADATA VALUES(3, ?1) ON CONFLICT DO UPDATE SET value = excluded.value",
                )
                .and_then(|mut s| s.execute([name]))
                .map_err(ctx)?;
        }
        let mut alarm = self.alarm.borrow_mut();
        let entry = (alarm.depth, alarm.known);
        alarm.undo.push(entry);
        alarm.known = Some(at_ms);
        Ok(())
    }
}

/// A SQLite error the user's data caused (a key or value too big), as
/// workerd words it; `None` for the engine's own.
fn user_error(e: &rusqlite::Error) -> Option<ExecError> {
    match e {
        rusqlite::Error::SqliteFailure(f, m) if f.code == rusqlite::ErrorCode::TooBig => {
            let text = m.clone().unwrap_or_else(|| "string or blob too big".into());
            Some(ExecError::Sql(format!(
                "{text}: {}",
                errors::primary(f.extended_code)
            )))
        }
        _ => None,
    }
}

/// A key bound as TEXT from its bytes: keys compare byte by byte, and they
/// need not be valid UTF-8 (a lone surrogate as workerd writes it, a range's
/// end past a prefix).
fn text(b: &[u8]) -> ToSqlOutput<'_> {
    ToSqlOutput::Borrowed(ValueRef::Text(b))
}
