//! A collection read: on the JS thread when the worker's file is free
//! (`queryNow`), else as a napi Task on the libuv pool (`query`).

use super::dto::*;
use super::*;
use crate::collections::DocRow;

/// One collection read, parsed from JS and ready to run on either thread.
pub struct Query {
    ci: usize,
    read: Read,
    overlay: DocChanges,
}

impl Query {
    /// A `find` with nothing uncommitted to apply, from its positional form
    /// (see `NativeWorker::find_now`).
    pub(super) fn find(
        env: &Env,
        schema: &Schema,
        collection: u32,
        shape: &[u32],
        values: &[u8],
    ) -> napi::Result<Self> {
        let (ci, c) = declared(env, schema, collection)?;
        let bad = || invalid(env, "a find's shape is malformed");
        let [order, desc, limit, n, rest @ ..] = shape else {
            return Err(bad());
        };
        let n = *n as usize;
        if n.checked_mul(3) != Some(rest.len()) {
            return Err(bad());
        }
        let (fields, rest) = rest.split_at(n);
        let (ops, counts) = rest.split_at(n);
        let opt = |v: u32| v.checked_sub(1);
        Ok(Query {
            ci,
            read: Read::Find(collections::Query {
                conds: to_conds(env, c, fields, ops, counts, values)?,
                order: to_order(env, c, opt(*order))?,
                desc: *desc != 0,
                limit: opt(*limit),
            }),
            overlay: DocChanges::default(),
        })
    }

    /// Parses `q` against the worker's declared collections.
    pub(super) fn parse(env: &Env, schema: &Schema, mut q: QueryJs) -> napi::Result<Self> {
        let (ci, c) = declared(env, schema, q.collection)?;
        let read = to_read(env, c, &mut q)?;
        let overlay = match q.overlay.take() {
            Some(o) => to_doc_changes(env, schema, o)?,
            None => DocChanges::default(),
        };
        Ok(Query { ci, read, overlay })
    }

    /// The read's body, over the worker's connection and collection tables.
    fn body(
        &self,
        schema: &Schema,
        conn: &rusqlite::Connection,
        tables: &collections::Tables,
    ) -> rusqlite::Result<(Vec<collections::DocRow>, i64)> {
        let c = schema.get(self.ci)?;
        collections::with_overlay(conn, schema, tables, &self.overlay, |t| match &self.read {
            Read::Find(q) => Ok((collections::find(conn, c, t, q)?, 0)),
            Read::Count(conds) => Ok((Vec::new(), collections::count(conn, c, t, conds)?)),
            Read::Get(id) => Ok((collections::get(conn, c, t, id)?.into_iter().collect(), 0)),
            Read::Scan(after, limit) => {
                Ok((collections::scan(conn, c, t, after.as_deref(), *limit)?, 0))
            }
        })
    }

    /// A find's documents, read now on this thread, in one pass: as the
    /// text of one JSON array into `out` when every one is stored as JSON
    /// text and the text stays under `cap` bytes ([`Found::Json`]), else as
    /// rows ([`Found::Rows`]); `None` when the file is not open and free (as
    /// [`Query::run`]). One pass: reading the find again for its rows would
    /// sort an ordered find's matches twice.
    pub(super) fn run_json(
        &self,
        w: &Worker,
        json_tag: u32,
        cap: usize,
        out: &mut Vec<u8>,
    ) -> Result<Option<Found>> {
        let Read::Find(q) = &self.read else {
            return Err(Error::internal("run_json runs a find"));
        };
        let c = w
            .schema()
            .get(self.ci)
            .map_err(|e| Error::sqlite("read", w.path(), e))?;
        out.clear();
        out.push(b'[');
        // The ids so far, and where each id ends in `ids` and its text starts
        // in `out`: the rows, should a later document turn the find into rows.
        // The thread's own, so that a find allocates nothing for them.
        let mut ids = SEEN.with_borrow_mut(std::mem::take);
        ids.bytes.clear();
        ids.at.clear();
        let mut rows: Option<Vec<DocRow>> = None;
        let read = w.try_read(|conn, tables| {
            collections::find_each(conn, c, tables, q, |id, tag, doc| {
                let row = || DocRow {
                    id: id.to_string(),
                    tag,
                    doc: doc.to_vec(),
                };
                if let Some(rows) = rows.as_mut() {
                    rows.push(row());
                } else if tag == json_tag && out.len() + doc.len() < cap {
                    if !ids.at.is_empty() {
                        out.push(b',');
                    }
                    ids.bytes.extend_from_slice(id.as_bytes());
                    ids.at.push((ids.bytes.len(), out.len()));
                    out.extend_from_slice(doc);
                } else {
                    let mut before = ids.rows(out, json_tag);
                    before.push(row());
                    rows = Some(before);
                }
                true
            })
        })?;
        let n = ids.at.len() as u64;
        if ids.bytes.capacity() + ids.at.capacity() * 16 <= KEEP_SEEN_BYTES {
            SEEN.with_borrow_mut(|s| *s = ids);
        }
        if read.is_none() {
            return Ok(None);
        }
        out.push(b']');
        Ok(Some(match rows {
            Some(rows) => Found::Rows(rows),
            None => Found::Json(n),
        }))
    }

    /// Runs the read on this thread now if the file is open and free
    /// (`Ok(None)` if not), else waiting for it: `wait`.
    pub(super) fn run(&self, w: &Worker, wait: bool) -> Result<Option<Vec<u8>>> {
        let schema = w.schema();
        let body = |conn: &rusqlite::Connection, tables: &collections::Tables| {
            self.body(schema, conn, tables)
        };
        let out = if wait {
            Some(w.read(body)?)
        } else {
            w.try_read(body)?
        };
        let Some((rows, count)) = out else {
            return Ok(None);
        };
        w.engine()
            .counters
            .docs_read
            .fetch_add(rows.len() as u64, std::sync::atomic::Ordering::Relaxed);
        pack(rows, count).map(Some)
    }
}

/// What [`Query::run_json`] found.
pub(super) enum Found {
    /// This many documents, their JSON text in the caller's buffer.
    Json(u64),
    Rows(Vec<DocRow>),
}

thread_local! {
    static SEEN: std::cell::RefCell<Seen> = std::cell::RefCell::new(Seen::default());
}
/// The most bytes [`SEEN`] keeps between finds.
const KEEP_SEEN_BYTES: usize = 64 << 10;

/// The documents `run_json` has put in its buffer as JSON text.
#[derive(Default)]
struct Seen {
    /// Their ids, one after another.
    bytes: Vec<u8>,
    /// Where each one's id ends in `bytes` and its text starts in the buffer.
    at: Vec<(usize, usize)>,
}

impl Seen {
    /// Them as rows: each document runs from its start to the comma before
    /// the next one's, the last to the end of `out`.
    fn rows(&self, out: &[u8], tag: u32) -> Vec<DocRow> {
        let starts = [0].into_iter().chain(self.at.iter().map(|(end, _)| *end));
        let ends = self
            .at
            .iter()
            .skip(1)
            .map(|(_, at)| at - 1)
            .chain([out.len()]);
        starts
            .zip(&self.at)
            .zip(ends)
            .map(|((start, (end, at)), doc_end)| DocRow {
                id: String::from_utf8_lossy(&self.bytes[start..*end]).into_owned(),
                tag,
                doc: out[*at..doc_end].to_vec(),
            })
            .collect()
    }
}

/// Collection `n` of the worker's declaration, with its index.
pub(super) fn declared<'s>(
    env: &Env,
    schema: &'s Schema,
    n: u32,
) -> napi::Result<(usize, &'s Collection)> {
    let ci = n as usize;
    schema
        .collections
        .get(ci)
        .map(|c| (ci, c))
        .ok_or_else(|| invalid(env, "the read names an undeclared collection"))
}

/// A collection read on the libuv pool: one hop from the JS thread and one
/// back. Through tokio (a task, then the blocking pool, then the task again)
/// it took two more, each a wake-up of a sleeping thread.
pub struct QueryTask {
    pub(super) worker: Arc<Worker>,
    pub(super) query: Query,
    /// The error `compute` met, turned into a coded JS error in `reject`
    /// (which has the `Env` that needs).
    pub(super) failed: Option<Error>,
}

impl Task for QueryTask {
    type Output = Vec<u8>;
    type JsValue = Buffer;

    fn compute(&mut self) -> napi::Result<Vec<u8>> {
        let out = self
            .query
            .run(&self.worker, true)
            .and_then(|p| p.ok_or_else(|| Error::internal("a waiting read did not run")));
        out.map_err(|e| {
            let plain = napi::Error::from_reason(e.to_string());
            self.failed = Some(e);
            plain
        })
    }

    fn resolve(&mut self, _env: Env, output: Vec<u8>) -> napi::Result<Buffer> {
        Ok(output.into())
    }

    fn reject(&mut self, env: Env, err: napi::Error) -> napi::Result<Buffer> {
        Err(match self.failed.take() {
            Some(e) => to_js(&env, &e),
            None => err,
        })
    }
}
