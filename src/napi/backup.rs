//! Snapshots of an open directory and their restore (see [`crate::backup`]).

use super::dto::invalid;
use super::host::NativeHost;
use super::*;

/// The files a snapshot or restore wrote, in parallel arrays, and those it
/// could not, with the reason.
#[napi(object)]
pub struct BackupReport {
    pub files: Vec<String>,
    pub sizes: Vec<f64>,
    pub hashes: Vec<String>,
    /// Restore only: the class and id each restored file holds.
    pub classes: Vec<String>,
    pub ids: Vec<String>,
    pub failed_files: Vec<String>,
    pub failed_reasons: Vec<String>,
}

fn failures(report: &mut BackupReport, failed: Vec<(String, String)>) {
    for (file, why) in failed {
        report.failed_files.push(file);
        report.failed_reasons.push(why);
    }
}

/// A restore's report: the workers restored, and the files that were not.
fn restored(
    (workers, failed): (Vec<crate::backup::Restored>, crate::backup::Failed),
) -> BackupReport {
    let mut out = empty();
    for r in workers {
        out.files.push(r.file);
        out.classes.push(r.class);
        out.ids.push(r.id);
    }
    failures(&mut out, failed);
    out
}

fn empty() -> BackupReport {
    BackupReport {
        files: Vec::new(),
        sizes: Vec::new(),
        hashes: Vec::new(),
        classes: Vec::new(),
        ids: Vec::new(),
        failed_files: Vec::new(),
        failed_reasons: Vec::new(),
    }
}

/// What the continuous archive has done, and its last failure.
#[napi(object)]
pub struct ArchiveStats {
    pub records: f64,
    pub segments: f64,
    pub bytes: f64,
    pub bases: f64,
    /// The last failure to write to the destination, until a write succeeds.
    pub failure: Option<String>,
}

#[napi]
impl NativeHost {
    /// The archive's counters; null without one.
    #[napi]
    pub fn archive_stats(&self) -> Option<ArchiveStats> {
        let a = self.engine.archive.as_ref()?;
        let n =
            |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed) as f64;
        Some(ArchiveStats {
            records: n(&a.counters.records),
            segments: n(&a.counters.segments),
            bytes: n(&a.counters.bytes),
            bases: n(&a.counters.bases),
            failure: a.failure.lock().clone(),
        })
    }

    /// Copies every worker file and the catalog into `dest` (new or empty)
    /// while the host serves; see `crate::backup`.
    #[napi]
    pub fn snapshot<'env>(
        &self,
        env: &'env Env,
        dest: String,
    ) -> napi::Result<PromiseRaw<'env, BackupReport>> {
        let engine = self.engine.clone();
        let fut = blocking(move || crate::backup::snapshot(&engine, std::path::Path::new(&dest)));
        promise(env, fut, |r| {
            let mut out = empty();
            for c in r.files {
                out.files.push(c.file);
                out.sizes.push(c.size as f64);
                out.hashes.push(c.hash.to_hex().to_string());
            }
            failures(&mut out, r.failed);
            out
        })
    }
}

/// Restores the snapshot files listed (with their hashes) from `from` into
/// `to` (new or empty), then builds its catalog.
#[napi]
pub fn restore_snapshot<'env>(
    env: &'env Env,
    from: String,
    to: String,
    files: Vec<String>,
    hashes: Vec<String>,
    durability: String,
) -> napi::Result<PromiseRaw<'env, BackupReport>> {
    let durability = Durability::parse(&durability)
        .ok_or_else(|| invalid(env, &format!("unknown durability {durability:?}")))?;
    if files.len() != hashes.len() {
        return Err(invalid(
            env,
            "restoreSnapshot: files and hashes differ in length",
        ));
    }
    let list: Vec<(String, String)> = files.into_iter().zip(hashes).collect();
    let fut = blocking(move || {
        crate::backup::restore(
            std::path::Path::new(&from),
            std::path::Path::new(&to),
            &list,
            durability,
        )
    });
    promise(env, fut, restored)
}

/// Where a worker's file lives inside a durable directory, `/`-separated.
#[napi]
pub fn worker_file(class_name: String, id: String) -> String {
    crate::archive::restore::rel_path(&class_name, &id)
}

/// Restores the archive at `from` into `to` (new or empty) as it was at `at`
/// (epoch ms; the latest it holds when null); `only` lists worker files.
#[napi]
pub fn restore_archive<'env>(
    env: &'env Env,
    from: String,
    to: String,
    at: Option<f64>,
    only: Option<Vec<String>>,
    durability: String,
) -> napi::Result<PromiseRaw<'env, BackupReport>> {
    let durability = Durability::parse(&durability)
        .ok_or_else(|| invalid(env, &format!("unknown durability {durability:?}")))?;
    let fut = blocking(move || {
        crate::archive::restore::restore(
            std::path::Path::new(&from),
            std::path::Path::new(&to),
            at.map(|t| t as i64),
            only.as_deref(),
            durability,
        )
    });
    promise(env, fut, restored)
}
