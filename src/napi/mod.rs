//! The napi surface: thin wrappers that move blocking work off the JS thread
//! and turn [`Error`] into a JS error whose `code` is the stable code.
//!
//! Nothing here decides anything; the modules it wraps do.
//!
//! [`dto`] the objects that cross (and their conversions), [`host`] an open
//! directory (`NativeHost`) and the commit threads' way back, [`worker`] one
//! worker's storage (`NativeWorker`), [`object`] one Durable Object's
//! (`NativeObject`), [`query`] a collection read (on the JS
//! thread, or the libuv pool when a commit holds the file), [`repair`] rebuilding a catalog, [`backup`] snapshots and restores.

pub mod backup;
pub mod dto;
pub mod host;
pub mod object;
pub mod query;
pub mod repair;
pub mod worker;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::future::Future;

use napi::bindgen_prelude::{
    AsyncTask, Buffer, BufferSlice, Either, Either3, JsObjectValue, JsValue, PromiseRaw,
    ToNapiValue, Unknown,
};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Task;
use napi::{Env, JsString, Status};
use napi_derive::napi;
use parking_lot::Mutex;

use crate::catalog::{Op, Reply};
use crate::collections::{
    self, CmpOp, Collection, Cond, DocChanges, DocOp, DocPut, FieldType, Schema,
};
use crate::committer::Committer;
use crate::engine::{Engine, Worker};
use crate::error::{Error, Result};
use crate::evict::{LiveSet, Reason};
use crate::sqlite::Durability;
use crate::store::{Alarm, Batch, Page, Row};

/// The JS error for `e`: an `Error` whose `code` is the stable code (napi-rs
/// would put its own status there, so the object is made here). `Error` is the
/// only source of the codes that cross napi.
pub(crate) fn to_js(env: &Env, e: &Error) -> napi::Error {
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
pub(crate) fn promise<'env, T, V, F>(
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
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        // The task panicked (or was cancelled): a bug, not the disk.
        Err(e) => Err(Error::internal(format!("storage task: {e}"))),
    }
}
