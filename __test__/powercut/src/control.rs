//! The control socket: one command a line, one JSON object a line back.
//!
//! ```text
//! cut       lose power (drop or chaos), then refuse every operation (EIO)
//! stats     counters and what a cut would lose now
//! dirty     what a cut would lose now, by file and directory entry
//! sync      everything reaches the backing directory, like sync(1)
//! unmount   a clean unmount: sync (unless cut), detach the mount, exit
//!           once the kernel lets go of it
//! ```

use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::fs::{Shared, lock};
use crate::model::CutReport;
use crate::mount;

pub struct Daemon {
    pub model: Shared,
    pub mountpoint: PathBuf,
    /// Unique to this process (`powercut-<pid>`), to find our own mount in
    /// /proc/self/mountinfo.
    pub fsname: String,
    detached: AtomicBool,
    /// Held while a command that ends the process is under way, so the
    /// process does not exit before its answer is written.
    gate: Mutex<()>,
}

impl Daemon {
    pub fn new(model: Shared, mountpoint: PathBuf, fsname: String) -> Self {
        Daemon {
            model,
            mountpoint,
            fsname,
            detached: AtomicBool::new(false),
            gate: Mutex::new(()),
        }
    }

    pub fn gate(&self) -> MutexGuard<'_, ()> {
        self.gate.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A clean unmount: unsynced state is written (unless the power was
    /// cut), then the mount is detached (lazily: open files on it keep
    /// getting EIO until they are closed).
    pub fn unmount(&self) -> io::Result<()> {
        let synced = lock(&self.model).shutdown();
        let detached = self.detach();
        synced.and(detached)
    }

    /// Detaches our mount, once, and only if it is still the one on top of
    /// the mount point: after a cut the next mount sits there.
    pub fn detach(&self) -> io::Result<()> {
        if self.detached.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        mount::detach(&self.mountpoint, &self.fsname)
    }
}

fn cut_json(r: &CutReport) -> String {
    format!(
        "{{\"ok\":true,\"appliedWrites\":{},\"tornWrites\":{},\"droppedWrites\":{},\"appliedDirOps\":{},\"droppedDirOps\":{}}}",
        r.applied_writes, r.torn_writes, r.dropped_writes, r.applied_dir_ops, r.dropped_dir_ops
    )
}

fn error_json(e: impl std::fmt::Display) -> String {
    let text = e.to_string().replace('\\', "\\\\").replace('"', "\\\"");
    format!("{{\"ok\":false,\"error\":\"{text}\"}}")
}

fn answer(daemon: &Daemon, command: &str) -> String {
    match command {
        "cut" => match lock(&daemon.model).cut() {
            Ok(report) => cut_json(&report),
            Err(e) => error_json(e),
        },
        "stats" => lock(&daemon.model).stats_json(),
        "dirty" => lock(&daemon.model).dirty_json(),
        "sync" => match lock(&daemon.model).sync_all() {
            Ok(()) => "{\"ok\":true}".to_string(),
            Err(e) => error_json(e),
        },
        "unmount" => match daemon.unmount() {
            Ok(()) => "{\"ok\":true}".to_string(),
            Err(e) => error_json(e),
        },
        other => error_json(format!(
            "unknown command {other:?} (cut, stats, dirty, sync, unmount)"
        )),
    }
}

fn handle(daemon: &Daemon, stream: UnixStream) -> io::Result<()> {
    let mut out = stream.try_clone()?;
    for line in BufReader::new(stream).lines() {
        let line = line?;
        let command = line.trim();
        if command.is_empty() {
            continue;
        }
        // The gate keeps the process alive until the answer is out: after
        // `unmount` the FUSE loop may end at once.
        let _gate = daemon.gate();
        let reply = answer(daemon, command);
        out.write_all(reply.as_bytes())?;
        out.write_all(b"\n")?;
        out.flush()?;
    }
    Ok(())
}

/// Serves one client at a time, for the life of the process.
pub fn serve(listener: UnixListener, daemon: Arc<Daemon>) {
    for stream in listener.incoming() {
        match stream {
            Ok(stream) => {
                if let Err(e) = handle(&daemon, stream) {
                    eprintln!("powercut: control connection: {e}");
                }
            }
            Err(e) => eprintln!("powercut: control socket: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_valid_json_strings() {
        assert_eq!(
            error_json("a \"b\" \\"),
            "{\"ok\":false,\"error\":\"a \\\"b\\\" \\\\\"}"
        );
    }
}
