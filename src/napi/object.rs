//! `NativeObject`: one Durable Object's storage, used synchronously on the JS
//! thread; its commits written there and synced either there (a commit alone
//! on an idle loop) or on a commit thread, reported by number.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::time::Instant;

use napi::bindgen_prelude::FromNapiValue;
use napi::ValueType;

use super::dto::invalid;
use super::host::Io;
use super::worker::submit;
use super::*;
use crate::object::file::{Bind, ExecError, ObjectFile, Savepoint, Written};
use crate::object::Object;

/// One object's storage handle.
#[napi]
pub struct NativeObject {
    pub(super) inner: Arc<Object>,
    pub(super) io: Arc<Io>,
    /// Commits written and not yet handed to `settle`, oldest first.
    pub(super) held: RefCell<VecDeque<Written>>,
}

/// What a write did: `began` opened the implicit transaction (the caller
/// ends it at the end of the turn); `created` made the object's file (the
/// caller registers the object in the catalog).
#[napi(object)]
pub struct Wrote {
    pub began: bool,
    pub created: bool,
    /// The user's error (a value too big), as workerd words it.
    pub error: Option<String>,
}

/// The outcome of `exec`: `error` is the user's SQL error (workerd's
/// message), or the last statement's columns and rows (cells packed: a tag
/// byte, then 0 null; 1 an f64; 2 text, 3 blob, each a u32 length and bytes).
#[napi(object)]
pub struct ExecOut {
    pub error: Option<String>,
    pub columns: Vec<String>,
    pub cells: Buffer,
    pub rows: u32,
    pub rows_read: f64,
    pub rows_written: f64,
    pub began: bool,
    pub created: bool,
}

/// Pairs from `kvList`: `count` keys and values, each a u32 length and bytes.
#[napi(object)]
pub struct Listed {
    pub count: u32,
    pub data: Buffer,
}

/// A failed `commit`: the user's error, and the transaction is rolled back.
#[napi(object)]
pub struct Committed {
    pub submitted: bool,
    pub error: Option<String>,
}

impl NativeObject {
    fn with<T>(
        &self,
        env: &Env,
        body: impl FnOnce(&mut ObjectFile) -> Result<T>,
    ) -> napi::Result<T> {
        self.inner
            .with(body)
            .and_then(|r| r)
            .map_err(|e| to_js(env, &e))
    }

    /// The file made if there is none yet: true if it was.
    fn ensure_file(&self, env: &Env) -> napi::Result<bool> {
        self.inner.ensure_file().map_err(|e| to_js(env, &e))
    }
}

fn bind(env: &Env, v: Unknown<'_>) -> napi::Result<Bind> {
    Ok(match v.get_type()? {
        ValueType::Null | ValueType::Undefined => Bind::Null,
        ValueType::Number => Bind::Real(f64::from_unknown(v)?),
        ValueType::String => Bind::Text(String::from_unknown(v)?.into_bytes()),
        ValueType::Object => Bind::Blob(Buffer::from_unknown(v)?.to_vec()),
        other => return Err(invalid(env, &format!("a binding of type {other:?}"))),
    })
}

#[napi]
impl NativeObject {
    /// Opens the file if there is one: true if there is.
    #[napi]
    pub fn load<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, bool>> {
        let o = self.inner.clone();
        promise(env, blocking(move || o.load()), |exists| exists)
    }

    /// Records the object in the catalog (after its first write made its file).
    #[napi]
    pub fn register<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let o = self.inner.clone();
        promise(
            env,
            async move { o.engine().catalog(o.register_op()).await.map(|_| ()) },
            |()| (),
        )
    }

    /// Runs user SQL now (`bindings`: null, numbers, strings, Buffers; the
    /// Buffers at the positions `text` lists are text, as bytes: a string
    /// with a lone surrogate, which napi would turn into U+FFFD).
    #[napi]
    pub fn exec(
        &self,
        env: &Env,
        sql: String,
        bindings: Vec<Unknown>,
        text: Option<Vec<u32>>,
    ) -> napi::Result<ExecOut> {
        let mut binds = bindings
            .into_iter()
            .map(|v| bind(env, v))
            .collect::<napi::Result<Vec<_>>>()?;
        for i in text.unwrap_or_default() {
            if let Some(b) = binds.get_mut(i as usize) {
                if let Bind::Blob(bytes) = b {
                    *b = Bind::Text(std::mem::take(bytes));
                }
            }
        }
        let mut began = false;
        let mut created = false;
        let mut out = self.with(env, |f| Ok(f.exec(&sql, &binds, &mut began)))?;
        if matches!(out, Err(ExecError::NeedsFile)) {
            created = self.ensure_file(env)?;
            out = self.with(env, |f| Ok(f.exec(&sql, &binds, &mut began)))?;
        }
        let (error, exec) = match out {
            Ok(exec) => (None, exec),
            Err(ExecError::Sql(m)) => (Some(m), Default::default()),
            Err(ExecError::Engine(e)) => return Err(to_js(env, &e)),
            Err(ExecError::NeedsFile) => {
                return Err(to_js(
                    env,
                    &Error::internal("an object's file was not made"),
                ))
            }
        };
        Ok(ExecOut {
            error,
            columns: exec.columns,
            cells: exec.cells.into(),
            rows: exec.rows,
            rows_read: exec.rows_read as f64,
            rows_written: exec.rows_written as f64,
            began,
            created,
        })
    }

    /// Ends the implicit transaction: written to the log now and held for
    /// `settle` (`submitted`). Nothing to commit: not submitted. A failed
    /// `COMMIT` rolls back and gives the user's error.
    #[napi]
    pub fn commit(&self, env: &Env) -> napi::Result<Committed> {
        let out = self.inner.commit().map_err(|e| to_js(env, &e))?;
        let written = match out {
            Ok(Some(w)) => w,
            Ok(None) => {
                return Ok(Committed {
                    submitted: false,
                    error: None,
                })
            }
            Err(ExecError::Sql(m)) => {
                return Ok(Committed {
                    submitted: false,
                    error: Some(m),
                })
            }
            Err(ExecError::Engine(e)) => return Err(to_js(env, &e)),
            Err(ExecError::NeedsFile) => return Err(to_js(env, &Error::internal("commit"))),
        };
        self.held.borrow_mut().push_back(written);
        Ok(Committed {
            submitted: true,
            error: None,
        })
    }

    /// Makes the oldest held commit durable. With `inline`, on this thread
    /// when the device syncs fast (`Engine::syncs_fast`) and the commit made
    /// no file: the microseconds it took, nothing reported through `on_done`
    /// (a failed sync throws). Otherwise on a commit thread, reported under
    /// `id`, and -1. For a commit alone on an idle loop: a commit thread's
    /// report would wake the JS thread from its sleep, which costs as much as
    /// the sync (`js/runtime/commits.js`).
    #[napi]
    pub fn settle(&self, env: &Env, id: u32, inline: bool) -> napi::Result<f64> {
        let Some(written) = self.held.borrow_mut().pop_front() else {
            return Err(to_js(env, &Error::internal("settle with no commit held")));
        };
        if inline && !written.fresh && self.inner.engine().syncs_fast() {
            let started = Instant::now();
            self.inner.settle(&written).map_err(|e| to_js(env, &e))?;
            self.inner
                .engine()
                .counters
                .commits_inline
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return Ok(started.elapsed().as_secs_f64() * 1e6);
        }
        let (o, written) = (self.inner.clone(), Arc::new(written));
        let job = written.clone();
        submit(&self.io, env, id, false, move || o.settle(&job))
            .inspect_err(|_| self.inner.dropped(&written))?;
        Ok(-1.0)
    }

    /// Closes the connection until the next use when nothing is open on it
    /// (no transaction, no commit held): true if it did (`Object::park`).
    #[napi]
    pub fn park(&self) -> bool {
        self.held.borrow().is_empty() && self.inner.park()
    }

    /// Whether the connection is parked (`load` opens it again off this thread).
    #[napi]
    pub fn parked(&self) -> bool {
        self.inner.parked()
    }

    /// Drops the open transaction's writes.
    #[napi]
    pub fn rollback(&self, env: &Env) -> napi::Result<()> {
        self.with(env, |f| f.rollback())
    }

    /// Opens (0), releases (1) or rolls back to and releases (2) the
    /// savepoint of an explicit transaction at `depth`.
    #[napi]
    pub fn savepoint(&self, env: &Env, op: u32, depth: u32) -> napi::Result<Wrote> {
        let op = match op {
            0 => Savepoint::Open,
            1 => Savepoint::Release,
            2 => Savepoint::Rollback,
            _ => return Err(invalid(env, "a savepoint operation")),
        };
        let created = matches!(op, Savepoint::Open) && self.ensure_file(env)?;
        let mut began = false;
        self.with(env, |f| {
            if matches!(op, Savepoint::Open) {
                began = f.begin()?;
            }
            f.savepoint(op, depth)
        })?;
        Ok(Wrote {
            began,
            created,
            error: None,
        })
    }

    /// Whether a transaction is open.
    #[napi]
    pub fn in_transaction(&self, env: &Env) -> napi::Result<bool> {
        self.with(env, |f| Ok(f.in_transaction()))
    }

    /// The values of `keys` (their bytes), null where absent.
    #[napi(ts_return_type = "Array<Buffer | null>")]
    pub fn kv_get(&self, env: &Env, keys: Vec<Buffer>) -> napi::Result<Vec<Option<Buffer>>> {
        let keys: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
        let values = self.with(env, |f| f.kv_get(&keys))?;
        Ok(values.into_iter().map(|v| v.map(Buffer::from)).collect())
    }

    /// Stores `values` under `keys`, in the open transaction.
    #[napi]
    pub fn kv_put(&self, env: &Env, keys: Vec<Buffer>, values: Vec<Buffer>) -> napi::Result<Wrote> {
        if keys.len() != values.len() {
            return Err(invalid(env, "as many values as keys"));
        }
        let created = self.ensure_file(env)?;
        let mut began = false;
        let keys: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
        let values: Vec<&[u8]> = values.iter().map(|v| &v[..]).collect();
        let error = match self.with(env, |f| Ok(f.kv_put(&keys, &values, &mut began)))? {
            Ok(()) => None,
            Err(ExecError::Sql(m)) => Some(m),
            Err(ExecError::Engine(e)) => return Err(to_js(env, &e)),
            Err(ExecError::NeedsFile) => return Err(to_js(env, &Error::internal("kv put"))),
        };
        Ok(Wrote {
            began,
            created,
            error,
        })
    }

    /// Deletes `keys`: `[count, began]`.
    #[napi(ts_return_type = "[number, boolean]")]
    pub fn kv_delete(&self, env: &Env, keys: Vec<Buffer>) -> napi::Result<(u32, bool)> {
        let keys: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
        let mut began = false;
        let n = self.with(env, |f| f.kv_delete(&keys, &mut began))?;
        Ok((n, began))
    }

    /// Pairs with `start <= key < end` (UTF-8), in order or reversed, at most `limit`.
    #[napi]
    pub fn kv_list(
        &self,
        env: &Env,
        start: Buffer,
        end: Option<Buffer>,
        reverse: bool,
        limit: Option<u32>,
    ) -> napi::Result<Listed> {
        let (count, data) =
            self.with(env, |f| f.kv_list(&start, end.as_deref(), reverse, limit))?;
        Ok(Listed {
            count,
            data: data.into(),
        })
    }

    /// The alarm in ms since the epoch, or null.
    #[napi]
    pub fn get_alarm(&self, env: &Env) -> napi::Result<Option<f64>> {
        self.with(env, |f| f.get_alarm())
    }

    /// The id's name recorded with the alarm (see `setAlarm`), or null.
    #[napi]
    pub fn alarm_name(&self, env: &Env) -> napi::Result<Option<String>> {
        self.with(env, |f| f.alarm_name())
    }

    /// Sets (ms since the epoch) or clears (null) the alarm, in the open
    /// transaction; the object's id and `name`, the id's name if it has one,
    /// are kept with a set alarm where user SQL cannot read them
    /// (`_cf_METADATA`, keys 4 and 3).
    #[napi]
    pub fn set_alarm(
        &self,
        env: &Env,
        at: Option<f64>,
        name: Option<String>,
    ) -> napi::Result<Wrote> {
        let created = self.ensure_file(env)?;
        let mut began = false;
        let id = self.inner.id();
        self.with(env, |f| f.set_alarm(at, id, name.as_deref(), &mut began))?;
        Ok(Wrote {
            began,
            created,
            error: None,
        })
    }

    /// Drops everything the object stores, alarm included.
    #[napi]
    pub fn delete_all(&self, env: &Env) -> napi::Result<Wrote> {
        let mut began = false;
        self.with(env, |f| match f.is_empty_standin() {
            true => {
                f.forget_alarm();
                Ok(())
            }
            false => f.delete_all(&mut began),
        })?;
        Ok(Wrote {
            began,
            created: false,
            error: None,
        })
    }

    /// Bytes the database uses.
    #[napi]
    pub fn database_size(&self, env: &Env) -> napi::Result<f64> {
        self.with(env, |f| f.database_size())
    }

    /// Checkpoints and closes on a commit thread; `on_done(id, …)` follows.
    #[napi]
    pub fn close(&self, env: &Env, id: u32) -> napi::Result<()> {
        let o = self.inner.clone();
        submit(&self.io, env, id, false, move || o.close())
    }
}
