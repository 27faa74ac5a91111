//! `NativeWorker`: one worker's storage handle.

use super::dto::*;
use super::host::Io;
use super::query::{Found, Query, QueryTask};
use super::*;
use crate::committer;

/// The codec's tag of a document stored as JSON text (`TAG_JSON` in
/// js/state/codec.js): `get_now` hands it to JS as a string.
const JSON_TAG: u32 = 2;

/// The most JSON text a find returns as one string: past it, the rows go
/// back packed (a string has a length limit, and the buffer is kept).
const MAX_JSON_BYTES: usize = 64 << 20;
/// The most the read buffer keeps between reads.
const KEEP_BYTES: usize = 4 << 20;

thread_local! {
    /// A point read's document, between the file's lock and its JS value.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// One worker's storage handle.
#[napi]
pub struct NativeWorker {
    pub(super) inner: Arc<Worker>,
    pub(super) io: Arc<Io>,
}

impl NativeWorker {
    /// Runs `query` now on this thread (see `query_now`); its rows copied
    /// into one buffer.
    fn now<'env>(&self, env: &'env Env, query: &Query) -> napi::Result<Option<BufferSlice<'env>>> {
        match query.run(&self.inner, false) {
            Ok(Some(rows)) => BufferSlice::copy_from(env, rows).map(Some),
            Ok(None) => Ok(None),
            Err(e) => Err(to_js(env, &e)),
        }
    }

    /// Runs `op` on a commit thread (see [`submit`]).
    fn submit(
        &self,
        env: &Env,
        id: u32,
        op: impl FnOnce() -> Result<()> + Send + 'static,
    ) -> napi::Result<()> {
        submit(&self.io, env, id, self.inner.needs_file(), op)
    }
}

/// Runs `op` on a commit thread (on a creation thread when it makes a file,
/// `create`) and reports its outcome through the host's `on_done` as `(id,
/// code, message, queued, ran)`.
pub(super) fn submit(
    io: &Arc<Io>,
    env: &Env,
    id: u32,
    create: bool,
    op: impl FnOnce() -> Result<()> + Send + 'static,
) -> napi::Result<()> {
    let io_job = io.clone();
    let submitted = Instant::now();
    let job = move || {
        let started = Instant::now();
        // A panic must not unwind out of the commit thread.
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(op)).unwrap_or_else(|_| {
                Err(Error::internal(
                    "the storage core panicked; the operation did not happen",
                ))
            });
        let (code, message) = match outcome {
            Ok(()) => (String::new(), String::new()),
            Err(e) => (e.code().to_string(), e.to_string()),
        };
        let micros = |d: Duration| u32::try_from(d.as_micros()).unwrap_or(u32::MAX);
        let queued = micros(started.saturating_duration_since(submitted));
        let ran = micros(started.elapsed());
        committer::finishing();
        if let Some(done) = io_job.done.lock().as_ref() {
            done.call(
                (id, code, message, queued, ran),
                ThreadsafeFunctionCallMode::NonBlocking,
            );
        }
    };
    let submitted = if create {
        io.submit_create(Box::new(job))
    } else {
        io.committer.submit(Box::new(job))
    };
    if submitted {
        Ok(())
    } else {
        Err(to_js(env, &Error::Closed))
    }
}

#[napi]
impl NativeWorker {
    /// Opens the worker's file if it has one; its whole key/value page.
    #[napi]
    pub fn load<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, Loaded>> {
        let w = self.inner.clone();
        promise(
            env,
            blocking(move || {
                let rows = w.load()?;
                Ok((!w.needs_file(), rows))
            }),
            to_loaded,
        )
    }

    /// Records the worker in the catalog, before its first write creates its
    /// file: a crash in between leaves a listed worker with no file (it reads
    /// as empty), never a file nobody lists. Waits in the catalog's queue
    /// without holding a thread, which is what lets many new workers share
    /// one catalog commit.
    #[napi]
    pub fn register<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let w = self.inner.clone();
        promise(
            env,
            async move { w.engine().catalog(w.register_op()).await.map(|_| ()) },
            |()| (),
        )
    }

    /// Commits sets and deletes (packed in `sets`, see `js/native/changes.js`)
    /// and `extra`'s alarm and collection changes as one transaction on a commit thread,
    /// creating the worker's file if it has none (after `register`). The
    /// host's `on_done(id, …)` is called once it has committed and synced,
    /// or failed. The thread holds the worker's file only while it writes the
    /// transaction, not during the sync: reads run on the JS thread meanwhile.
    #[napi]
    pub fn write(
        &self,
        env: &Env,
        id: u32,
        sets: BufferSlice,
        extra: Option<ChangesExtra>,
    ) -> napi::Result<()> {
        let batch = to_batch(env, self.inner.schema(), &sets, extra)?;
        let worker = self.inner.clone();
        self.submit(env, id, move || worker.write(&batch))
    }

    /// `write` on the JS thread, synced there too, when the worker's file is
    /// open and free and the device syncs fast (`Engine::syncs_fast`): the
    /// microseconds it took, and nothing is reported through `on_done`.
    /// Otherwise the same as `write` (on a commit thread, reported under
    /// `id`), and -1. A checkpoint the commit makes due runs here too, as it
    /// would on a commit thread (every `wal::CHECKPOINT_PAGES` frames): run
    /// there, it held the file and sent the next write to a thread as well.
    /// For a commit alone on an idle event loop (see `js/runtime/commits.js`):
    /// a commit thread's report would wake the JS thread from its sleep,
    /// which costs as much as the write itself.
    #[napi]
    pub fn write_inline(
        &self,
        env: &Env,
        id: u32,
        sets: BufferSlice,
        extra: Option<ChangesExtra>,
    ) -> napi::Result<f64> {
        let batch = to_batch(env, self.inner.schema(), &sets, extra)?;
        let started = Instant::now();
        let now = match self.inner.engine().syncs_fast() {
            true => self.inner.write_now(&batch),
            false => Ok(None),
        };
        let unsynced = match now {
            Ok(Some(unsynced)) => unsynced,
            Ok(None) => {
                let worker = self.inner.clone();
                return self
                    .submit(env, id, move || worker.write(&batch))
                    .map(|()| -1.0);
            }
            Err(e) => return Err(to_js(env, &e)),
        };
        let checkpoint = self.inner.sync(&unsynced).map_err(|e| to_js(env, &e))?;
        let counters = &self.inner.engine().counters;
        counters
            .commits_inline
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if checkpoint {
            self.inner.checkpoint();
        }
        Ok(started.elapsed().as_secs_f64() * 1e6)
    }

    /// Closes the handle now when the worker holds no connection (a file
    /// made by its first write is left closed): true, and the handle is
    /// finished. False when its file is open: `close` then.
    #[napi]
    pub fn close_now(&self) -> bool {
        self.inner.close_now()
    }

    /// Checkpoints and closes the file on a commit thread; `on_done(id, …)`
    /// follows. The handle is finished.
    #[napi]
    pub fn close(&self, env: &Env, id: u32) -> napi::Result<()> {
        let worker = self.inner.clone();
        self.submit(env, id, move || worker.close())
    }

    /// Closes and removes the file and the catalog entry; true if either existed.
    #[napi]
    pub fn destroy<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, bool>> {
        let w = self.inner.clone();
        let fut = async move {
            let w2 = w.clone();
            let had_file = blocking(move || w2.remove_file()).await?;
            let had_row = matches!(
                w.engine().catalog(w.remove_op()).await?,
                Reply::Removed(true)
            );
            Ok(had_file || had_row)
        };
        promise(env, fut, |existed| existed)
    }

    /// Reads a collection, with the worker's uncommitted writes (`overlay`)
    /// applied for the read only, on the JS thread: the rows packed (see
    /// `dto::pack`), or `null` when a commit holds the worker's file (or it
    /// is not open yet) and the caller reads through `query`. A point read
    /// takes SQLite a microsecond or two; the hop to the pool and back cost
    /// ~50 µs.
    #[napi(ts_return_type = "Buffer | null")]
    pub fn query_now<'env>(
        &self,
        env: &'env Env,
        q: QueryJs,
    ) -> napi::Result<Option<BufferSlice<'env>>> {
        let query = Query::parse(env, self.inner.schema(), q)?;
        self.now(env, &query)
    }

    /// One document by id, read now on this thread (as `queryNow`): its
    /// JSON text as a string, the packed row (see `dto::pack`) when it is
    /// stored in another format, `false` when there is none, or `null` when
    /// a commit holds the worker's file (or it is not open) and the caller
    /// reads through `query`. The collection read a worker makes most: a
    /// string spares it a Buffer (its allocation, its prototype, its free on
    /// V8's sweeper thread) and the decoding of its bytes in JS.
    #[napi(ts_return_type = "string | Buffer | false | null")]
    pub fn get_now<'env>(
        &self,
        env: &'env Env,
        collection: u32,
        id: String,
    ) -> napi::Result<Option<Either3<JsString<'env>, BufferSlice<'env>, bool>>> {
        let (_, c) = super::query::declared(env, self.inner.schema(), collection)?;
        // Copied out under the file's lock, made a JS value after it: nothing
        // that allocates on V8's heap runs while the lock is held, and no
        // error becomes a JS error (which may run JS) while SCRATCH is lent.
        let read = SCRATCH.with_borrow_mut(|doc| {
            doc.clear();
            self.inner.try_read(|conn, tables| {
                collections::get_with(conn, c, tables, &id, |tag, bytes| {
                    doc.extend_from_slice(bytes);
                    tag
                })
            })
        });
        let tag = match read.map_err(|e| to_js(env, &e))? {
            Some(Some(tag)) => tag,
            Some(None) => return Ok(Some(Either3::C(false))),
            None => return Ok(None),
        };
        self.inner
            .engine()
            .counters
            .docs_read
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let text = SCRATCH.with_borrow(|doc| match std::str::from_utf8(doc) {
            Ok(text) if tag == JSON_TAG => Some(env.create_string(text)),
            _ => None,
        });
        if let Some(text) = text {
            return text.map(|s| Some(Either3::A(s)));
        }
        let doc = SCRATCH.with_borrow_mut(std::mem::take);
        let packed =
            pack(vec![collections::DocRow { id, tag, doc }], 0).map_err(|e| to_js(env, &e))?;
        BufferSlice::copy_from(env, packed).map(|b| Some(Either3::B(b)))
    }

    /// `queryNow` of a `find` with nothing uncommitted to apply, passed by
    /// position: `shape` is `[order + 1, desc, limit + 1, n, fields…, ops…,
    /// counts…]` (0 for no order or limit; the conditions as `queryNow`'s
    /// parallel arrays), `values` their encoded values. Reading an object's
    /// dozen properties one napi call at a time, and referencing its buffer,
    /// cost a find a tenth of its time. When every document found is stored
    /// as JSON text, they come back as one JSON array's text, which one
    /// `JSON.parse` turns into the find's result: a Buffer per read and a
    /// string and parse per document cost a find of 10 half its time.
    #[napi(ts_return_type = "string | Buffer | null")]
    pub fn find_now<'env>(
        &self,
        env: &'env Env,
        collection: u32,
        shape: &[u32],
        values: &[u8],
    ) -> napi::Result<Option<Either<JsString<'env>, BufferSlice<'env>>>> {
        let query = Query::find(env, self.inner.schema(), collection, shape, values)?;
        // `None`: the file is not free. Errors become JS errors once SCRATCH
        // is let go.
        let read = SCRATCH
            .with_borrow_mut(|out| query.run_json(&self.inner, JSON_TAG, MAX_JSON_BYTES, out));
        let found = match read.map_err(|e| to_js(env, &e))? {
            None => return Ok(None),
            Some(found) => found,
        };
        let n = match &found {
            Found::Json(n) => *n,
            Found::Rows(rows) => rows.len() as u64,
        };
        let out = match found {
            Found::Json(_) => SCRATCH.with_borrow(|out| {
                std::str::from_utf8(out)
                    .ok()
                    .map(|text| env.create_string(text).map(Either::A))
            }),
            Found::Rows(rows) => Some(
                pack(rows, 0)
                    .map_err(|e| to_js(env, &e))
                    .and_then(|packed| BufferSlice::copy_from(env, packed).map(Either::B)),
            ),
        };
        // A large find's buffer is not kept for the thread's life.
        SCRATCH.with_borrow_mut(|out| {
            if out.capacity() > KEEP_BYTES {
                *out = Vec::new();
            }
        });
        // Text tagged JSON that is not UTF-8 (a damaged file) is read again,
        // as rows.
        let Some(out) = out else {
            return Ok(self.now(env, &query)?.map(Either::B));
        };
        let out = out?;
        self.inner
            .engine()
            .counters
            .docs_read
            .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        Ok(Some(out))
    }

    /// The same read on the libuv pool, in turn with the worker's commits
    /// (its connection's lock).
    #[napi(ts_return_type = "Promise<Buffer>")]
    pub fn query(&self, env: &Env, q: QueryJs) -> napi::Result<AsyncTask<QueryTask>> {
        Ok(AsyncTask::new(QueryTask {
            query: Query::parse(env, self.inner.schema(), q)?,
            worker: self.inner.clone(),
            failed: None,
        }))
    }

    /// Fills declared `fields` of collection `collection` for the documents
    /// `ids` with `columns` (row by row), adding missing columns and indexes,
    /// in one transaction.
    #[napi]
    pub fn backfill<'env>(
        &self,
        env: &'env Env,
        collection: u32,
        fields: Vec<u32>,
        ids: Vec<String>,
        columns: Buffer,
    ) -> napi::Result<PromiseRaw<'env, ()>> {
        let values = collections::decode_values(&columns).map_err(|e| invalid(env, &e))?;
        let w = self.inner.clone();
        let fields: Vec<usize> = fields.into_iter().map(|f| f as usize).collect();
        let fut = blocking(move || w.backfill(collection as usize, &fields, &ids, &values));
        promise(env, fut, |()| ())
    }

    /// Whether the worker has a file on disk: a stat on the JS thread, so a
    /// worker that was never written opens without a trip to the pool.
    #[napi]
    pub fn exists(&self) -> bool {
        self.inner.path().exists()
    }
}
