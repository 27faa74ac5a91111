//! A collection read: on the JS thread when the worker's file is free
//! (`queryNow`), else as a napi Task on the libuv pool (`query`).

use super::dto::*;
use super::*;

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

    /// A find's documents as the text of one JSON array, in its order, read
    /// now on this thread into `out`: `Ok(Some(Some(n)))` for `n` documents,
    /// `Some(None)` when one is not stored as JSON text or the text passes
    /// `cap` bytes (the caller reads the rows then), `None` when the file is
    /// not open and free (as [`Query::run`]).
    pub(super) fn run_json(
        &self,
        w: &Worker,
        json_tag: u32,
        cap: usize,
        out: &mut Vec<u8>,
    ) -> Result<Option<Option<u64>>> {
        let Read::Find(q) = &self.read else {
            return Ok(Some(None));
        };
        let c = w
            .schema()
            .get(self.ci)
            .map_err(|e| Error::sqlite("read", w.path(), e))?;
        out.clear();
        out.push(b'[');
        let mut json = true;
        let mut n = 0u64;
        let read = w.try_read(|conn, tables| {
            collections::find_each(conn, c, tables, q, |_, tag, doc| {
                json = tag == json_tag && out.len() + doc.len() < cap;
                if json {
                    if n > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(doc);
                    n += 1;
                }
                json
            })
        })?;
        if read.is_none() {
            return Ok(None);
        }
        out.push(b']');
        Ok(Some(json.then_some(n)))
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
