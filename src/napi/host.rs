//! `NativeHost`: one open durable directory, and the commit threads' way back to JS.

use super::dto::*;
use super::object::NativeObject;
use super::worker::NativeWorker;
use super::*;
use crate::committer;

/// Called on the JS thread when a commit ends: `(id, code, message, queued,
/// ran)`, with an empty code for success; `queued` is how long the job waited
/// for a commit thread and `ran` how long it took there (writing and syncing),
/// both in microseconds. Weak: it never keeps the event loop open by itself;
/// the JS layer holds the loop open while it waits for commits.
pub(crate) type DoneArgs = (u32, String, String, u32, u32);
type DoneFn = ThreadsafeFunction<DoneArgs, Unknown<'static>, DoneArgs, Status, false, true>;

/// What every worker of a host shares to commit: the threads and the way back.
pub(crate) struct Io {
    pub(crate) committer: Committer,
    /// Where a worker's first write runs, the one that creates its file
    /// (`Worker::write`): started with the first.
    creator: std::sync::OnceLock<Option<Committer>>,
    pub(crate) done: Mutex<Option<DoneFn>>,
}

impl Io {
    /// Runs `job` on the creation threads; false once the host is closing.
    pub(crate) fn submit_create(&self, job: committer::Job) -> bool {
        let creator = self.creator.get_or_init(|| {
            Committer::start("dw-create", committer::CREATE_THREADS, Duration::ZERO).ok()
        });
        match creator {
            Some(c) => c.submit(job),
            None => self.committer.submit(job),
        }
    }

    /// Runs what is queued on every thread, then ends them. A creation
    /// submitted afterwards starts no threads: it goes to the stopped commit
    /// threads, which refuse it.
    fn stop(&self) {
        self.committer.stop();
        if self.creator.set(None).is_err() {
            if let Some(Some(c)) = self.creator.get() {
                c.stop();
            }
        }
    }
}

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
    pub(super) engine: Arc<Engine>,
    live: Mutex<LiveSet>,
    io: Arc<Io>,
}

#[napi]
impl NativeHost {
    /// Takes ownership of `dir` (creating it), or fails with ERR_DURABLE_LOCKED.
    /// `on_done([id, code, message, queuedMicros, ranMicros])` is called on
    /// the JS thread as each `NativeWorker.write` ends.
    #[napi(factory, catch_unwind)]
    pub fn open(
        env: &Env,
        dir: String,
        options: HostOptions,
        on_done: DoneFn,
    ) -> napi::Result<NativeHost> {
        let durability = Durability::parse(&options.durability)
            .ok_or_else(|| invalid(env, &format!("unknown durability {:?}", options.durability)))?;
        let archive = options.archive_to.as_ref().map(|to| {
            let ms = |v: Option<f64>, default: f64| {
                Duration::from_secs_f64(v.unwrap_or(default).max(0.0) / 1000.0)
            };
            crate::archive::Config {
                to: PathBuf::from(to),
                retain: ms(options.archive_retain_ms, 7.0 * 86_400_000.0),
                base_every: ms(options.archive_base_every_ms, 86_400_000.0),
                first_seq: options.archive_first_seq.map(|n| n.max(1.0) as u64),
            }
        });
        let engine = Arc::new(
            Engine::open_archived(&PathBuf::from(dir), durability, archive)
                .map_err(|e| to_js(env, &e))?,
        );
        engine.start_bases().map_err(|e| to_js(env, &e))?;
        let evict_after = Duration::from_secs_f64(options.evict_after_ms.max(0.0) / 1000.0);
        let committer = Committer::start("dw-commit", committer::THREADS, committer::SPIN)
            .map_err(|e| to_js(env, &e))?;
        Ok(NativeHost {
            engine,
            live: Mutex::new(LiveSet::new(options.max_live as usize, evict_after)),
            io: Arc::new(Io {
                committer,
                creator: std::sync::OnceLock::new(),
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
        let inner = Arc::new(Worker::new(self.engine.clone(), class_name, id));
        self.engine.handles.insert(&inner);
        NativeWorker {
            inner,
            io: self.io.clone(),
        }
    }

    /// A handle on one Durable Object's storage. Does no I/O.
    #[napi]
    pub fn object(&self, class_name: String, id: String) -> NativeObject {
        let inner = Arc::new(crate::object::Object::new(
            self.engine.clone(),
            class_name,
            id,
        ));
        self.engine.handles.insert_object(&inner);
        NativeObject {
            inner,
            io: self.io.clone(),
            held: Default::default(),
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
            commits_inline: n(&c.commits_inline),
            syncs_in_place: n(&c.syncs_in_place),
            catalog_commits: self.engine.catalog_commits() as f64,
            created: n(&c.created),
            bytes_written: n(&c.bytes_written),
            queries: n(&c.queries),
            queries_deferred: n(&c.queries_deferred),
            docs_read: n(&c.docs_read),
        }
    }

    /// Releases the directory. The JS layer closes every worker first.
    #[napi]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let engine = self.engine.clone();
        let io = self.io.clone();
        let fut = blocking(move || {
            io.stop();
            drop(io.done.lock().take());
            engine.close();
            Ok(())
        });
        promise(env, fut, |()| ())
    }
}
