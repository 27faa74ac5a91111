//! A collection read, as a napi Task on the libuv pool.

use super::dto::*;
use super::*;

/// A collection read on the libuv pool: one hop from the JS thread and one
/// back. Through tokio (a task, then the blocking pool, then the task again)
/// it took two more, each a wake-up of a sleeping thread.
pub struct QueryTask {
    pub(super) worker: Arc<Worker>,
    pub(super) ci: usize,
    pub(super) read: Read,
    pub(super) overlay: DocChanges,
    /// The error `compute` met, turned into a coded JS error in `reject`
    /// (which has the `Env` that needs).
    pub(super) failed: Option<Error>,
}

impl QueryTask {
    fn run(&self) -> Result<Packed> {
        let w = &self.worker;
        let schema = w.schema();
        let out = w.read(|conn, tables| {
            let c = schema.get(self.ci)?;
            collections::with_overlay(conn, schema, tables, &self.overlay, |t| match &self.read {
                Read::Find(q) => Ok((collections::find(conn, c, t, q)?, 0)),
                Read::Count(conds) => Ok((Vec::new(), collections::count(conn, c, t, conds)?)),
                Read::Get(id) => Ok((collections::get(conn, c, t, id)?.into_iter().collect(), 0)),
                Read::Scan(after, limit) => {
                    Ok((collections::scan(conn, c, t, after.as_deref(), *limit)?, 0))
                }
            })
        })?;
        w.engine()
            .counters
            .docs_read
            .fetch_add(out.0.len() as u64, std::sync::atomic::Ordering::Relaxed);
        pack(out.0, out.1)
    }
}

impl Task for QueryTask {
    type Output = Packed;
    type JsValue = QueryResult;

    fn compute(&mut self) -> napi::Result<Packed> {
        self.run().map_err(|e| {
            let plain = napi::Error::from_reason(e.to_string());
            self.failed = Some(e);
            plain
        })
    }

    fn resolve(&mut self, _env: Env, output: Packed) -> napi::Result<QueryResult> {
        Ok(to_query_result(output))
    }

    fn reject(&mut self, env: Env, err: napi::Error) -> napi::Result<QueryResult> {
        Err(match self.failed.take() {
            Some(e) => to_js(&env, &e),
            None => err,
        })
    }
}
