//! The objects that cross napi, and their conversions to the storage core's.
//!
//! Rows cross as parallel arrays (keys, tags, values), not as an object per
//! row: napi makes each JS object and sets or gets each of its properties
//! with a call of its own, on the JS thread, so a row as an object costs more
//! calls than its place in three arrays. A collection read's rows go further:
//! one packed buffer (see [`pack`]).

use super::*;

/// Options of `NativeHost.open`, already validated by the JS layer.
#[napi(object)]
pub struct HostOptions {
    pub durability: String,
    pub max_live: u32,
    pub evict_after_ms: f64,
    /// The continuous archive's directory, when there is one.
    pub archive_to: Option<String>,
    pub archive_retain_ms: Option<f64>,
    pub archive_base_every_ms: Option<f64>,
    /// Where the archive's numbering starts at least (what a bucket holds).
    pub archive_first_seq: Option<f64>,
}

/// Counters for `host.stats()`.
#[napi(object)]
pub struct NativeStats {
    pub commits: f64,
    pub syncs: f64,
    pub commits_inline: f64,
    pub syncs_in_place: f64,
    pub catalog_commits: f64,
    pub created: f64,
    pub bytes_written: f64,
    pub queries: f64,
    pub queries_deferred: f64,
    pub docs_read: f64,
}

/// A worker's stored key/value page, as three parallel arrays.
#[napi(object)]
pub struct Loaded {
    /// Whether the worker has a file (its first write must `create` it if not).
    pub exists: bool,
    pub keys: Vec<String>,
    pub tags: Vec<u32>,
    pub values: Vec<Buffer>,
    pub alarms: Alarms,
    /// Declared fields to fill from stored documents before the worker runs.
    pub backfill: Vec<BackfillNeed>,
}

/// One collection's fields to backfill, by declaration index.
#[napi(object)]
pub struct BackfillNeed {
    pub collection: u32,
    pub fields: Vec<u32>,
}

/// One declared collection, as `NativeHost.declare` takes it: field names and
/// types (`text | integer | real | boolean | date`) in parallel.
#[napi(object)]
pub struct CollectionSpec {
    pub name: String,
    pub fields: Vec<String>,
    pub types: Vec<String>,
}

/// Collection changes: `clear` empties every collection first; then per
/// document its collection index, id, codec tag (0: deleted), bytes (empty
/// when deleted), and, for writes only, its column values in order, encoded
/// as `collections::decode_values` reads them.
#[napi(object)]
pub struct DocChangesJs {
    pub clear: bool,
    pub colls: Vec<u32>,
    pub ids: Vec<String>,
    pub tags: Vec<u32>,
    pub docs: Vec<Buffer>,
    pub columns: Buffer,
}

/// A collection read. `kind`: `find` (conditions, order, limit), `count`
/// (conditions), `get` (`id`), `scan` (every document in id order after
/// `after`, at most `limit`). Conditions are parallel arrays: field index,
/// operator code (see `CmpOp::from_code`), and how many of `values` each takes.
#[napi(object)]
pub struct QueryJs {
    pub kind: String,
    pub collection: u32,
    pub id: Option<String>,
    pub after: Option<String>,
    pub fields: Option<Vec<u32>>,
    pub ops: Option<Vec<u32>>,
    pub counts: Option<Vec<u32>>,
    pub values: Option<Buffer>,
    pub order: Option<u32>,
    pub desc: Option<bool>,
    pub limit: Option<u32>,
    /// The worker's writes not yet committed, read as if they were.
    pub overlay: Option<DocChangesJs>,
}

/// A read's rows packed in one buffer, little-endian: `u32` rows, `f64`
/// count (for a count), then per row `u32` tag, `u32` id length, `u32`
/// document length, the id's UTF-8 and the document's bytes. One buffer
/// crosses napi, copied once: an object of arrays cost a call per property
/// and element, and an external buffer a finalizer each, which made the napi
/// crossing of a point read (~6 µs) several times SQLite's own work.
pub(crate) fn pack(rows: Vec<collections::DocRow>, count: i64) -> Result<Vec<u8>> {
    let total: usize = rows
        .iter()
        .map(|r| 12 + r.id.len() + r.doc.len())
        .sum::<usize>()
        + 12;
    // Every length must fit its u32, and the whole a Buffer.
    if u32::try_from(total).is_err() || u32::try_from(rows.len()).is_err() {
        return Err(Error::Shared {
            context: "read documents".into(),
            detail: format!(
                "{total} bytes of documents; one read returns at most 4 GiB (use limit)"
            ),
        });
    }
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&(rows.len() as u32).to_le_bytes());
    out.extend_from_slice(&(count as f64).to_le_bytes());
    for r in rows {
        out.extend_from_slice(&r.tag.to_le_bytes());
        out.extend_from_slice(&(r.id.len() as u32).to_le_bytes());
        out.extend_from_slice(&(r.doc.len() as u32).to_le_bytes());
        out.extend_from_slice(r.id.as_bytes());
        out.extend_from_slice(&r.doc);
    }
    Ok(out)
}

/// Named alarms as parallel arrays: set (`names`, `ats` and `scheduled` in
/// epoch ms, `attempts`) and, in a write, removed (`deletes`).
#[napi(object)]
#[derive(Default)]
pub struct Alarms {
    pub names: Vec<String>,
    pub ats: Vec<f64>,
    pub attempts: Vec<u32>,
    pub scheduled: Vec<f64>,
    pub deletes: Vec<String>,
}

/// What a directory holds, from its catalog (see `NativeHost.summary`).
#[napi(object)]
pub struct Summary {
    /// Class names, sorted, and their worker counts, in parallel.
    pub classes: Vec<String>,
    pub workers: Vec<f64>,
    /// Indexed alarms in all.
    pub alarm_count: f64,
    /// The earliest indexed alarms, as parallel arrays.
    pub alarms: DueAlarms,
}

/// Alarms due, as parallel arrays, earliest first.
#[napi(object)]
pub struct DueAlarms {
    pub classes: Vec<String>,
    pub ids: Vec<String>,
    pub ats: Vec<f64>,
}

pub(crate) fn to_loaded((exists, page): (bool, Page)) -> Loaded {
    let rows = page.rows;
    let mut out = Loaded {
        exists,
        keys: Vec::with_capacity(rows.len()),
        tags: Vec::with_capacity(rows.len()),
        values: Vec::with_capacity(rows.len()),
        alarms: Alarms::default(),
        backfill: page
            .backfill
            .into_iter()
            .map(|b| BackfillNeed {
                collection: b.coll as u32,
                fields: b.fields.into_iter().map(|f| f as u32).collect(),
            })
            .collect(),
    };
    for Row { key, tag, value } in rows {
        out.keys.push(key);
        out.tags.push(tag);
        out.values.push(value.into());
    }
    for Alarm {
        name,
        at,
        attempt,
        scheduled,
    } in page.alarms
    {
        out.alarms.names.push(name);
        out.alarms.ats.push(at as f64);
        out.alarms.attempts.push(attempt);
        out.alarms.scheduled.push(scheduled as f64);
    }
    out
}

/// What a batch of changes holds besides its sets and deletes (which come
/// packed, see [`to_batch`]): alarm and collection changes, absent from most.
#[napi(object)]
pub struct ChangesExtra {
    pub alarms: Option<Alarms>,
    pub docs: Option<DocChangesJs>,
}

/// The JS side sent what it should have checked first: an internal failure.
pub(crate) fn invalid(env: &Env, message: &str) -> napi::Error {
    to_js(env, &Error::internal(message))
}

/// Checks collection changes against the worker's schema and decodes them.
pub(crate) fn to_doc_changes(
    env: &Env,
    schema: &Schema,
    js: DocChangesJs,
) -> napi::Result<DocChanges> {
    let DocChangesJs {
        clear,
        colls,
        ids,
        tags,
        docs: bytes,
        columns,
    } = js;
    let n = ids.len();
    if colls.len() != n || tags.len() != n || bytes.len() != n {
        return Err(invalid(env, "document changes differ in length"));
    }
    let mut values = collections::decode_values(&columns)
        .map_err(|e| invalid(env, &e))?
        .into_iter();
    let mut ops = Vec::with_capacity(n);
    for (((coll, id), tag), doc) in colls.into_iter().zip(ids).zip(tags).zip(bytes.iter()) {
        let c = schema
            .collections
            .get(coll as usize)
            .ok_or_else(|| invalid(env, "a document names an undeclared collection"))?;
        let put = if tag == 0 {
            None
        } else {
            let columns: Vec<_> = values.by_ref().take(c.fields.len()).collect();
            if columns.len() != c.fields.len() {
                return Err(invalid(
                    env,
                    "a document has fewer column values than fields",
                ));
            }
            Some(DocPut {
                tag,
                doc: doc.to_vec(),
                columns,
            })
        };
        ops.push(DocOp {
            coll: coll as usize,
            id,
            put,
        });
    }
    if values.next().is_some() {
        return Err(invalid(env, "more column values than declared fields"));
    }
    Ok(DocChanges { clear, ops })
}

/// A batch from the JS layer: its key/value sets and deletes packed in one
/// buffer (`js/native/changes.js`, which says why), the rest in `extra`.
pub(crate) fn to_batch(
    env: &Env,
    schema: &Schema,
    packed: &[u8],
    extra: Option<ChangesExtra>,
) -> napi::Result<Batch> {
    let (sets, deletes) = unpack_sets(packed).map_err(|e| invalid(env, e))?;
    let (alarms, docs) = match extra {
        Some(ChangesExtra { alarms, docs }) => (alarms.unwrap_or_default(), docs),
        None => (Alarms::default(), None),
    };
    if alarms.names.len() != alarms.ats.len()
        || alarms.names.len() != alarms.attempts.len()
        || alarms.names.len() != alarms.scheduled.len()
    {
        return Err(invalid(
            env,
            "alarm names, times and attempts differ in length",
        ));
    }
    let alarm_sets = alarms
        .names
        .into_iter()
        .zip(alarms.ats)
        .zip(alarms.attempts)
        .zip(alarms.scheduled)
        .map(|(((name, at), attempt), scheduled)| Alarm {
            name,
            at: at as i64,
            attempt,
            scheduled: scheduled as i64,
        })
        .collect();
    let docs = match docs {
        Some(d) => to_doc_changes(env, schema, d)?,
        None => DocChanges::default(),
    };
    Ok(Batch {
        sets,
        deletes,
        alarms: alarm_sets,
        alarm_deletes: alarms.deletes,
        docs,
    })
}

/// Sets and deletes as `js/native/changes.js` packs them, little-endian: the
/// number of sets and of deletes (u32 each); each set as its key's length
/// (u32) and UTF-8, its tag (u32), its value's length (u32) and bytes; each
/// delete as its key's length and UTF-8.
fn unpack_sets(bytes: &[u8]) -> std::result::Result<(Vec<Row>, Vec<String>), &'static str> {
    const SHORT: &str = "packed changes end early";
    let mut at = 0usize;
    let u32_at = |at: &mut usize| -> std::result::Result<u32, &'static str> {
        let b = bytes.get(*at..*at + 4).ok_or(SHORT)?;
        *at += 4;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let bytes_at = |at: &mut usize, len: u32| -> std::result::Result<&[u8], &'static str> {
        let end = at.checked_add(len as usize).ok_or(SHORT)?;
        let b = bytes.get(*at..end).ok_or(SHORT)?;
        *at = end;
        Ok(b)
    };
    let key_at = |at: &mut usize, len: u32| {
        bytes_at(at, len)
            .and_then(|b| String::from_utf8(b.to_vec()).map_err(|_| "a packed key is not UTF-8"))
    };
    let n_sets = u32_at(&mut at)?;
    let n_deletes = u32_at(&mut at)?;
    // Each set takes at least 12 bytes and each delete 4: a count the buffer
    // cannot hold is refused before anything is allocated for it.
    if u64::from(n_sets) * 12 + u64::from(n_deletes) * 4 > bytes.len() as u64 {
        return Err(SHORT);
    }
    let mut sets = Vec::with_capacity(n_sets as usize);
    for _ in 0..n_sets {
        let len = u32_at(&mut at)?;
        let key = key_at(&mut at, len)?;
        let tag = u32_at(&mut at)?;
        let len = u32_at(&mut at)?;
        let value = bytes_at(&mut at, len)?.to_vec();
        sets.push(Row { key, tag, value });
    }
    let mut deletes = Vec::with_capacity(n_deletes as usize);
    for _ in 0..n_deletes {
        let len = u32_at(&mut at)?;
        deletes.push(key_at(&mut at, len)?);
    }
    if at != bytes.len() {
        return Err("packed changes run past their counts");
    }
    Ok((sets, deletes))
}

/// A read, checked against the collection it names.
pub(crate) enum Read {
    Find(collections::Query),
    Count(Vec<Cond>),
    Get(String),
    Scan(Option<String>, Option<u32>),
}

/// Conditions from their parallel arrays (field index, operator code, how
/// many values each takes) and their encoded values.
pub(crate) fn to_conds(
    env: &Env,
    c: &Collection,
    fields: &[u32],
    ops: &[u32],
    counts: &[u32],
    values: &[u8],
) -> napi::Result<Vec<Cond>> {
    if ops.len() != fields.len() || counts.len() != fields.len() {
        return Err(invalid(env, "query conditions differ in length"));
    }
    let mut values = if values.is_empty() {
        Vec::new()
    } else {
        collections::decode_values(values).map_err(|e| invalid(env, &e))?
    }
    .into_iter();
    let mut out = Vec::with_capacity(fields.len());
    for ((&field, &op), &n) in fields.iter().zip(ops).zip(counts) {
        let op = CmpOp::from_code(op).ok_or_else(|| invalid(env, "unknown query operator"))?;
        if field as usize >= c.fields.len() {
            return Err(invalid(env, "a condition names an undeclared field"));
        }
        let vals: Vec<_> = values.by_ref().take(n as usize).collect();
        if vals.len() != n as usize || (op != CmpOp::In && n != 1) {
            return Err(invalid(env, "a condition has the wrong number of values"));
        }
        out.push(Cond {
            field: field as usize,
            op,
            values: vals,
        });
    }
    Ok(out)
}

/// A `find`'s order, checked against the collection's fields.
pub(crate) fn to_order(
    env: &Env,
    c: &Collection,
    order: Option<u32>,
) -> napi::Result<Option<usize>> {
    match order {
        Some(f) if f as usize >= c.fields.len() => {
            Err(invalid(env, "the order names an undeclared field"))
        }
        o => Ok(o.map(|f| f as usize)),
    }
}

pub(crate) fn to_read(env: &Env, c: &Collection, q: &mut QueryJs) -> napi::Result<Read> {
    let conds = || -> napi::Result<Vec<Cond>> {
        to_conds(
            env,
            c,
            q.fields.as_deref().unwrap_or_default(),
            q.ops.as_deref().unwrap_or_default(),
            q.counts.as_deref().unwrap_or_default(),
            q.values.as_deref().unwrap_or_default(),
        )
    };
    Ok(match q.kind.as_str() {
        "find" => {
            let order = to_order(env, c, q.order)?;
            Read::Find(collections::Query {
                conds: conds()?,
                order,
                desc: q.desc.unwrap_or(false),
                limit: q.limit,
            })
        }
        "count" => Read::Count(conds()?),
        "get" => Read::Get(
            q.id.take()
                .ok_or_else(|| invalid(env, "a get needs an id"))?,
        ),
        "scan" => Read::Scan(q.after.take(), q.limit),
        other => return Err(invalid(env, &format!("unknown query kind {other:?}"))),
    })
}
