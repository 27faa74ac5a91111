//! `repair`: rebuilding a directory's catalog from its worker files.

use super::dto::invalid;
use super::*;

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
