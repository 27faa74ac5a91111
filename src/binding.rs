//! The napi surface: thin wrappers that move blocking work off the JS thread
//! and turn [`Error`] into a JS error whose `code` is the stable code.
//!
//! Nothing here decides anything; the modules it wraps do.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::future::Future;

use napi::bindgen_prelude::{
    AsyncTask, Buffer, JsObjectValue, JsValue, PromiseRaw, ToNapiValue, Unknown,
};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Task;
use napi::{Env, Status};
use napi_derive::napi;
use parking_lot::Mutex;

use crate::catalog::{Op, Reply};
use crate::committer::Committer;
use crate::docs::{self, CmpOp, Collection, Cond, DocChanges, DocOp, DocPut, FieldType, Schema};
use crate::engine::{Engine, Worker};
use crate::error::{Error, Result};
use crate::evict::{LiveSet, Reason};
use crate::sqlite::Durability;
use crate::store::{Alarm, Batch, Page, Row};

/// Builds the JS error for `e`: an `Error` whose `code` is the stable code.
/// napi-rs would put its own status in `code`, so the object is made here.
/// A JS error carrying the error's stable code: `Error` is the only source of
/// the codes that cross napi.
fn to_js(env: &Env, e: &Error) -> napi::Error {
    let message = e.to_string();
    let build = || -> napi::Result<napi::Error> {
        let mut obj =
            env.create_error(napi::Error::new(Status::GenericFailure, message.clone()))?;
        obj.set_named_property("code", e.code())?;
        Ok(napi::Error::from(obj.to_unknown()))
    };
    build().unwrap_or_else(|err| err)
}

/// A promise settled on the JS thread: `fut` runs on tokio, its error becomes
/// a coded JS error, its value goes through `done`.
fn promise<'env, T, V, F>(
    env: &'env Env,
    fut: F,
    done: impl FnOnce(T) -> V + 'static,
) -> napi::Result<PromiseRaw<'env, V>>
where
    T: Send + 'static,
    V: ToNapiValue,
    F: Future<Output = Result<T>> + Send + 'static,
{
    env.spawn_future_with_callback(async move { Ok(fut.await) }, move |env, out| match out {
        Ok(v) => Ok(done(v)),
        Err(e) => Err(to_js(env, &e)),
    })
}

/// Runs blocking storage work on tokio's blocking pool, so that the fsyncs
/// of different workers proceed in parallel and never on the JS thread.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        // The task panicked (or was cancelled): a bug, not the disk.
        Err(e) => Err(Error::internal(format!("storage task: {e}"))),
    }
}

/// Options of `NativeHost.open`, already validated by the JS layer.
#[napi(object)]
pub struct HostOptions {
    pub durability: String,
    pub max_live: u32,
    pub evict_after_ms: f64,
}

/// Counters for `host.stats()`.
#[napi(object)]
pub struct NativeStats {
    pub commits: f64,
    pub syncs: f64,
    pub catalog_commits: f64,
    pub created: f64,
    pub bytes_written: f64,
    pub queries: f64,
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
/// as `docs::decode_values` reads them.
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

/// Documents read, as parallel arrays; `count` for a count. The documents'
/// bytes are one buffer, document `i` ending at `ends[i]` (starting where the
/// one before ends): one allocation for a read of 100,000 documents instead
/// of 100,000, each with a finalizer for the garbage collector to run.
#[napi(object)]
pub struct QueryResult {
    pub ids: Vec<String>,
    pub tags: Vec<u32>,
    pub bytes: Buffer,
    pub ends: Vec<u32>,
    pub count: f64,
}

/// A read's rows packed as [`QueryResult`] carries them, built off the JS thread.
pub struct Packed {
    ids: Vec<String>,
    tags: Vec<u32>,
    bytes: Vec<u8>,
    ends: Vec<u32>,
    count: i64,
}

fn pack(rows: Vec<docs::DocRow>, count: i64) -> Result<Packed> {
    let total: usize = rows.iter().map(|r| r.doc.len()).sum();
    if u32::try_from(total).is_err() {
        return Err(Error::Shared {
            context: "read documents".into(),
            detail: format!(
                "{total} bytes of documents; one read returns at most 4 GiB (use limit)"
            ),
        });
    }
    let mut out = Packed {
        ids: Vec::with_capacity(rows.len()),
        tags: Vec::with_capacity(rows.len()),
        bytes: Vec::with_capacity(total),
        ends: Vec::with_capacity(rows.len()),
        count,
    };
    for r in rows {
        out.ids.push(r.id);
        out.tags.push(r.tag);
        out.bytes.extend_from_slice(&r.doc);
        // Fits: the total was checked above.
        out.ends.push(out.bytes.len() as u32);
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

fn to_loaded((exists, page): (bool, Page)) -> Loaded {
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

/// One batch of changes from the JS layer: key/value sets (`keys`, `tags`,
/// `values` in parallel) and deletes, and alarm changes.
#[napi(object)]
pub struct Changes {
    pub keys: Vec<String>,
    pub tags: Vec<u32>,
    pub values: Vec<Buffer>,
    pub deletes: Vec<String>,
    pub alarms: Option<Alarms>,
    pub docs: Option<DocChangesJs>,
}

/// The JS side sent what it should have checked first: an internal failure.
fn invalid(env: &Env, message: &str) -> napi::Error {
    to_js(env, &Error::internal(message))
}

/// Checks collection changes against the worker's schema and decodes them.
fn to_doc_changes(env: &Env, schema: &Schema, js: DocChangesJs) -> napi::Result<DocChanges> {
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
    let mut values = docs::decode_values(&columns)
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

fn to_batch(env: &Env, schema: &Schema, changes: Changes) -> napi::Result<Batch> {
    let Changes {
        keys,
        tags,
        values,
        deletes,
        alarms,
        docs,
    } = changes;
    let alarms = alarms.unwrap_or_default();
    if keys.len() != tags.len()
        || keys.len() != values.len()
        || alarms.names.len() != alarms.ats.len()
        || alarms.names.len() != alarms.attempts.len()
        || alarms.names.len() != alarms.scheduled.len()
    {
        return Err(invalid(
            env,
            "keys, tags and values (or alarm names, times and attempts) differ in length",
        ));
    }
    let sets = keys
        .into_iter()
        .zip(tags)
        .zip(values.iter())
        .map(|((key, tag), value)| Row {
            key,
            tag,
            value: value.to_vec(),
        })
        .collect();
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

/// A read, checked against the collection it names.
enum Read {
    Find(docs::Query),
    Count(Vec<Cond>),
    Get(String),
    Scan(Option<String>, Option<u32>),
}

fn to_read(env: &Env, c: &Collection, q: &mut QueryJs) -> napi::Result<Read> {
    let conds = || -> napi::Result<Vec<Cond>> {
        let fields = q.fields.clone().unwrap_or_default();
        let ops = q.ops.clone().unwrap_or_default();
        let counts = q.counts.clone().unwrap_or_default();
        if ops.len() != fields.len() || counts.len() != fields.len() {
            return Err(invalid(env, "query conditions differ in length"));
        }
        let mut values = match &q.values {
            Some(b) => docs::decode_values(b).map_err(|e| invalid(env, &e))?,
            None => Vec::new(),
        }
        .into_iter();
        let mut out = Vec::with_capacity(fields.len());
        for ((field, op), n) in fields.into_iter().zip(ops).zip(counts) {
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
    };
    Ok(match q.kind.as_str() {
        "find" => {
            if q.order.is_some_and(|f| f as usize >= c.fields.len()) {
                return Err(invalid(env, "the order names an undeclared field"));
            }
            Read::Find(docs::Query {
                conds: conds()?,
                order: q.order.map(|f| f as usize),
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

fn to_query_result(p: Packed) -> QueryResult {
    QueryResult {
        ids: p.ids,
        tags: p.tags,
        bytes: p.bytes.into(),
        ends: p.ends,
        count: p.count as f64,
    }
}

/// A collection read on the libuv pool: one hop from the JS thread and one
/// back. Through tokio (a task, then the blocking pool, then the task again)
/// it took two more, each a wake-up of a sleeping thread.
pub struct QueryTask {
    worker: Arc<Worker>,
    ci: usize,
    read: Read,
    overlay: DocChanges,
    /// The error `compute` met, turned into a coded JS error in `reject`
    /// (which has the `Env` that needs).
    failed: Option<Error>,
}

impl QueryTask {
    fn run(&self) -> Result<Packed> {
        let w = &self.worker;
        let schema = w.schema();
        let out = w.read(|conn, tables| {
            let c = schema.get(self.ci)?;
            docs::with_overlay(conn, schema, tables, &self.overlay, |t| match &self.read {
                Read::Find(q) => Ok((docs::find(conn, c, t, q)?, 0)),
                Read::Count(conds) => Ok((Vec::new(), docs::count(conn, c, t, conds)?)),
                Read::Get(id) => Ok((docs::get(conn, c, t, id)?.into_iter().collect(), 0)),
                Read::Scan(after, limit) => {
                    Ok((docs::scan(conn, c, t, after.as_deref(), *limit)?, 0))
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

/// Called on the JS thread when a commit ends: `(id, code, message)`, with an
/// empty code for success. Weak: it never keeps the event loop open by itself;
/// the JS layer holds the loop open while it waits for commits.
type DoneFn = ThreadsafeFunction<
    (u32, String, String),
    Unknown<'static>,
    (u32, String, String),
    Status,
    false,
    true,
>;

/// What every worker of a host shares to commit: the threads and the way back.
struct Io {
    committer: Committer,
    done: Mutex<Option<DoneFn>>,
}

/// How many commit threads, and how long each polls for more work after a commit.
const COMMIT_THREADS: usize = 4;
const COMMIT_SPIN: Duration = Duration::from_micros(100);

impl NativeHost {
    fn catalog_done<'env>(&self, env: &'env Env, op: Op) -> napi::Result<PromiseRaw<'env, ()>> {
        let engine = self.engine.clone();
        promise(
            env,
            async move { engine.catalog(op).await.map(|_| ()) },
            |()| (),
        )
    }
}

/// An open durable directory.
#[napi]
pub struct NativeHost {
    engine: Arc<Engine>,
    live: Mutex<LiveSet>,
    io: Arc<Io>,
}

#[napi]
impl NativeHost {
    /// Takes ownership of `dir` (creating it), or fails with ERR_DURABLE_LOCKED.
    /// `on_done(id, code, message)` is called on the JS thread as each
    /// `NativeWorker.write` ends.
    #[napi(factory, catch_unwind)]
    pub fn open(
        env: &Env,
        dir: String,
        options: HostOptions,
        on_done: DoneFn,
    ) -> napi::Result<NativeHost> {
        let durability = Durability::parse(&options.durability)
            .ok_or_else(|| invalid(env, &format!("unknown durability {:?}", options.durability)))?;
        let engine = Engine::open(&PathBuf::from(dir), durability).map_err(|e| to_js(env, &e))?;
        let evict_after = Duration::from_secs_f64(options.evict_after_ms.max(0.0) / 1000.0);
        let committer =
            Committer::start(COMMIT_THREADS, COMMIT_SPIN).map_err(|e| to_js(env, &e))?;
        Ok(NativeHost {
            engine: Arc::new(engine),
            live: Mutex::new(LiveSet::new(options.max_live as usize, evict_after)),
            io: Arc::new(Io {
                committer,
                done: Mutex::new(Some(on_done)),
            }),
        })
    }

    /// Records the collections a class declares (validated by the JS layer;
    /// checked again here, since the names reach SQL text). Workers handed
    /// out afterwards use them.
    #[napi]
    pub fn declare(
        &self,
        env: &Env,
        class_name: String,
        collections: Vec<CollectionSpec>,
    ) -> napi::Result<()> {
        let mut schema = Schema::default();
        for spec in collections {
            let bad = || {
                to_js(
                    env,
                    &Error::Name {
                        detail: format!(
                            "{class_name}: collection {:?} is not a usable declaration (names match [A-Za-z_][A-Za-z0-9_]{{0,63}}, types are text, integer, real, boolean or date)",
                            spec.name
                        ),
                    },
                )
            };
            if spec.fields.len() != spec.types.len() {
                return Err(bad());
            }
            let fields = spec
                .fields
                .iter()
                .zip(&spec.types)
                .map(|(f, t)| FieldType::parse(t).map(|t| (f.clone(), t)))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(bad)?;
            schema
                .collections
                .push(Collection::new(&spec.name, fields).ok_or_else(bad)?);
        }
        self.engine.declare(&class_name, schema);
        Ok(())
    }

    /// A handle on one worker's storage. Does no I/O.
    #[napi]
    pub fn worker(&self, class_name: String, id: String) -> NativeWorker {
        NativeWorker {
            inner: Arc::new(Worker::new(self.engine.clone(), class_name, id)),
            io: self.io.clone(),
        }
    }

    /// Work arrived for the worker in `slot`. Returns null, or the workers to
    /// close now as flat pairs `[slot, reason, …]` (reason 0 idle, 1 evicted).
    #[napi]
    pub fn begin(&self, slot: u32) -> Option<Vec<u32>> {
        let victims = self.live.lock().begin(slot, Instant::now());
        if victims.is_empty() {
            return None;
        }
        Some(
            victims
                .into_iter()
                .flat_map(|(s, r)| [s, u32::from(r == Reason::Evicted)])
                .collect(),
        )
    }

    /// Work for the worker in `slot` is done.
    #[napi]
    pub fn end(&self, slot: u32) {
        self.live.lock().end(slot, Instant::now());
    }

    /// The worker in `slot` closed for a reason of the caller's own.
    #[napi]
    pub fn forget(&self, slot: u32) {
        self.live.lock().remove(slot);
    }

    /// One page of a class's ids from the catalog.
    #[napi]
    pub fn ids<'env>(
        &self,
        env: &'env Env,
        class_name: String,
        prefix: String,
        after: Option<String>,
        limit: u32,
    ) -> napi::Result<PromiseRaw<'env, Vec<String>>> {
        let engine = self.engine.clone();
        let op = Op::List {
            class: class_name,
            prefix,
            after,
            limit,
        };
        promise(
            env,
            async move { engine.catalog(op).await },
            |reply| match reply {
                Reply::Ids(ids) => ids,
                _ => Vec::new(),
            },
        )
    }

    /// The first write of an alarm change: the index entry moves earlier only.
    #[napi]
    pub fn alarm_earlier<'env>(
        &self,
        env: &'env Env,
        class_name: String,
        id: String,
        at: f64,
    ) -> napi::Result<PromiseRaw<'env, ()>> {
        self.catalog_done(
            env,
            Op::AlarmEarlier {
                class: class_name,
                id,
                at: at as i64,
            },
        )
    }

    /// The last write of an alarm change, and the repair: the index entry is
    /// set to the worker's earliest alarm, or removed (`null`).
    #[napi]
    pub fn alarm_exact<'env>(
        &self,
        env: &'env Env,
        class_name: String,
        id: String,
        at: Option<f64>,
    ) -> napi::Result<PromiseRaw<'env, ()>> {
        self.catalog_done(
            env,
            Op::AlarmExact {
                class: class_name,
                id,
                at: at.map(|a| a as i64),
            },
        )
    }

    /// The earliest indexed alarm among `classes`, or null.
    #[napi]
    pub fn alarm_next<'env>(
        &self,
        env: &'env Env,
        classes: Vec<String>,
    ) -> napi::Result<PromiseRaw<'env, Option<f64>>> {
        let engine = self.engine.clone();
        promise(
            env,
            async move { engine.catalog(Op::AlarmNext { classes }).await },
            |reply| match reply {
                Reply::Next(at) => at.map(|a| a as f64),
                _ => None,
            },
        )
    }

    /// Indexed alarms among `classes` due at `now`, earliest first, at most `limit`.
    #[napi]
    pub fn alarm_due<'env>(
        &self,
        env: &'env Env,
        classes: Vec<String>,
        now: f64,
        limit: u32,
    ) -> napi::Result<PromiseRaw<'env, DueAlarms>> {
        let engine = self.engine.clone();
        let op = Op::AlarmDue {
            classes,
            now: now as i64,
            limit,
        };
        promise(env, async move { engine.catalog(op).await }, |reply| {
            let mut out = DueAlarms {
                classes: Vec::new(),
                ids: Vec::new(),
                ats: Vec::new(),
            };
            if let Reply::Due(rows) = reply {
                for (class, id, at) in rows {
                    out.classes.push(class);
                    out.ids.push(id);
                    out.ats.push(at as f64);
                }
            }
            out
        })
    }

    /// Workers per class and the earliest `alarms` indexed alarms, from the catalog.
    #[napi]
    pub fn summary<'env>(
        &self,
        env: &'env Env,
        alarms: u32,
    ) -> napi::Result<PromiseRaw<'env, Summary>> {
        let engine = self.engine.clone();
        promise(
            env,
            async move { engine.catalog(Op::Summary { alarms }).await },
            |reply| {
                let mut out = Summary {
                    classes: Vec::new(),
                    workers: Vec::new(),
                    alarm_count: 0.0,
                    alarms: DueAlarms {
                        classes: Vec::new(),
                        ids: Vec::new(),
                        ats: Vec::new(),
                    },
                };
                if let Reply::Summary {
                    classes,
                    alarm_count,
                    alarms,
                } = reply
                {
                    for (c, n) in classes {
                        out.classes.push(c);
                        out.workers.push(n as f64);
                    }
                    out.alarm_count = alarm_count as f64;
                    for (c, id, at) in alarms {
                        out.alarms.classes.push(c);
                        out.alarms.ids.push(id);
                        out.alarms.ats.push(at as f64);
                    }
                }
                out
            },
        )
    }

    #[napi]
    pub fn stats(&self) -> NativeStats {
        let c = &self.engine.counters;
        let n =
            |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed) as f64;
        NativeStats {
            commits: n(&c.commits),
            syncs: n(&c.syncs),
            catalog_commits: self.engine.catalog_commits() as f64,
            created: n(&c.created),
            bytes_written: n(&c.bytes_written),
            queries: n(&c.queries),
            docs_read: n(&c.docs_read),
        }
    }

    /// Releases the directory. The JS layer closes every worker first.
    #[napi]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let engine = self.engine.clone();
        let io = self.io.clone();
        let fut = blocking(move || {
            io.committer.stop();
            drop(io.done.lock().take());
            engine.close();
            Ok(())
        });
        promise(env, fut, |()| ())
    }
}

/// One worker's storage handle.
#[napi]
pub struct NativeWorker {
    inner: Arc<Worker>,
    io: Arc<Io>,
}

impl NativeWorker {
    /// Runs `op` on a commit thread and reports its outcome through the
    /// host's `on_done` as `(id, code, message)`.
    fn submit(
        &self,
        env: &Env,
        id: u32,
        op: impl FnOnce() -> Result<()> + Send + 'static,
    ) -> napi::Result<()> {
        let io = self.io.clone();
        let job = move || {
            // A panic must not unwind out of the commit thread.
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(op))
                .unwrap_or_else(|_| {
                    Err(Error::internal(
                        "the storage core panicked; the operation did not happen",
                    ))
                });
            let (code, message) = match outcome {
                Ok(()) => (String::new(), String::new()),
                Err(e) => (e.code().to_string(), e.to_string()),
            };
            if let Some(done) = io.done.lock().as_ref() {
                done.call((id, code, message), ThreadsafeFunctionCallMode::NonBlocking);
            }
        };
        if self.io.committer.submit(Box::new(job)) {
            Ok(())
        } else {
            Err(to_js(env, &Error::Closed))
        }
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

    /// Commits sets and deletes as one transaction on a commit thread,
    /// creating the worker's file if it has none (after `register`). The
    /// host's `on_done(id, …)` is called once it has committed, or failed.
    #[napi]
    pub fn write(&self, env: &Env, id: u32, changes: Changes) -> napi::Result<()> {
        let batch = to_batch(env, self.inner.schema(), changes)?;
        let worker = self.inner.clone();
        self.submit(env, id, move || worker.write(&batch))
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
    /// applied for the read only. Runs on the libuv pool, in turn with the
    /// worker's commits (its connection's lock).
    #[napi(ts_return_type = "Promise<QueryResult>")]
    pub fn query(&self, env: &Env, mut q: QueryJs) -> napi::Result<AsyncTask<QueryTask>> {
        let w = self.inner.clone();
        let schema = w.schema();
        let ci = q.collection as usize;
        let c = schema
            .collections
            .get(ci)
            .ok_or_else(|| invalid(env, "the query names an undeclared collection"))?;
        let read = to_read(env, c, &mut q)?;
        let overlay = match q.overlay.take() {
            Some(o) => to_doc_changes(env, schema, o)?,
            None => DocChanges::default(),
        };
        Ok(AsyncTask::new(QueryTask {
            worker: w,
            ci,
            read,
            overlay,
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
        let values = docs::decode_values(&columns).map_err(|e| invalid(env, &e))?;
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

/// What `repair` did.
#[napi(object)]
pub struct RepairReport {
    pub workers: f64,
    pub alarms: f64,
    /// Files not adopted, and why, in parallel.
    pub skipped_files: Vec<String>,
    pub skipped_reasons: Vec<String>,
    pub moved_aside: Option<String>,
}

/// Rebuilds a directory's catalog from its worker files, moving a damaged
/// catalog aside first. Takes the directory like `open` (ERR_DURABLE_LOCKED
/// while another process owns it) and releases it at the end.
#[napi]
pub fn repair<'env>(
    env: &'env Env,
    dir: String,
    durability: String,
) -> napi::Result<PromiseRaw<'env, RepairReport>> {
    let durability = Durability::parse(&durability)
        .ok_or_else(|| invalid(env, &format!("unknown durability {durability:?}")))?;
    let fut = blocking(move || crate::repair::repair(std::path::Path::new(&dir), durability));
    promise(env, fut, |r| RepairReport {
        workers: r.workers as f64,
        alarms: r.alarms as f64,
        skipped_files: r
            .skipped
            .iter()
            .map(|(p, _)| p.display().to_string())
            .collect(),
        skipped_reasons: r.skipped.into_iter().map(|(_, why)| why).collect(),
        moved_aside: r.moved_aside.map(|p| p.display().to_string()),
    })
}
