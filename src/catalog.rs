//! The catalog: `_registry.db`, what exists in a directory.
//!
//! Guarantee: an operation is answered only after the transaction carrying it
//! has committed. Mechanism: the catalog connection belongs to one thread, and
//! every statement reaches it through one queue; whatever is queued when the
//! thread comes free runs as one transaction, and each caller is answered after
//! that commit. Twelve workers created at once therefore cost one sync, not
//! twelve — on a disk where a commit is a sync, that is the difference between
//! the process being capped at the disk's sync rate and not.
//!
//! NOTE: it is tempting to give each caller its own connection or to let a
//! reader skip the queue. Don't: one connection used by two threads at once is
//! what this queue exists to prevent, and the catalog's lock is the directory's.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use rusqlite::{params, Connection};
use tokio::sync::oneshot;

use crate::error::{Error, Result};
use crate::layout::REGISTRY_FILE;
use crate::sqlite::{self, Durability};

const CATALOG_CACHE_KIB: i64 = 2048;

/// One catalog statement.
#[derive(Debug)]
pub enum Op {
    /// Record that a worker exists (idempotent).
    Register { class: String, id: String },
    /// Forget a worker; answers whether it was known.
    Remove { class: String, id: String },
    /// Ids of a class in sorted order, after `after`, starting with `prefix`.
    List {
        class: String,
        prefix: String,
        after: Option<String>,
        limit: u32,
    },
    /// Moves a worker's alarm index entry earlier only: to `at` if there is
    /// none or it is later. The first of an alarm change's three writes.
    AlarmEarlier { class: String, id: String, at: i64 },
    /// Sets a worker's alarm index entry to exactly its earliest alarm, or
    /// removes it (`None`). The last of the three writes, and the repair.
    AlarmExact {
        class: String,
        id: String,
        at: Option<i64>,
    },
    /// The earliest indexed alarm among `classes`.
    AlarmNext { classes: Vec<String> },
    /// Indexed alarms among `classes` due at `now`, earliest first.
    AlarmDue {
        classes: Vec<String>,
        now: i64,
        limit: u32,
    },
    /// What the directory holds: workers per class, and the earliest
    /// `alarms` indexed alarms of any class.
    Summary { alarms: u32 },
    /// Records workers found on disk, with their earliest alarm (or none),
    /// in one transaction that also clears an owed rebuild: the repair of a
    /// lost or damaged catalog.
    Rebuild {
        workers: Vec<(String, String, Option<i64>)>,
    },
    /// The catalog's bytes as of its last commit, for a snapshot. Answered
    /// between transactions, never inside one.
    Image,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Reply {
    Done,
    Removed(bool),
    Ids(Vec<String>),
    Next(Option<i64>),
    /// (class, id, at), earliest first.
    Due(Vec<(String, String, i64)>),
    /// Workers per class (sorted by class), indexed alarms in all, and the
    /// earliest of them as (class, id, at).
    Summary {
        classes: Vec<(String, i64)>,
        alarm_count: i64,
        alarms: Vec<(String, String, i64)>,
    },
    Image(Vec<u8>),
}

struct Job {
    op: Op,
    reply: oneshot::Sender<Result<Reply>>,
}

/// Handle to the catalog thread.
pub struct Catalog {
    queue: Mutex<Option<mpsc::Sender<Job>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    commits: Arc<AtomicU64>,
    needs_rebuild: bool,
}

impl Catalog {
    /// Opens (or creates) the catalog and takes the directory's lock; a second
    /// owner gets [`Error::Locked`] at once.
    pub fn open(dir: &Path, durability: Durability) -> Result<Self> {
        let path = dir.join(REGISTRY_FILE);
        let conn = sqlite::open(&path, true).map_err(|e| relabel_lock(e, dir))?;
        sqlite::configure(&conn, &path, durability, CATALOG_CACHE_KIB)
            .map_err(|e| relabel_lock(e, dir))?;
        // The first write transaction takes the exclusive lock, and exclusive
        // locking mode keeps it until the connection closes or the process dies.
        let needs_rebuild = create_schema(&conn, dir)
            .map_err(|e| relabel_lock(sqlite::classify_lock(e, &path), dir))?;

        let (tx, rx) = mpsc::channel::<Job>();
        let commits = Arc::new(AtomicU64::new(0));
        let counter = commits.clone();
        let thread = std::thread::Builder::new()
            .name("durable-catalog".into())
            .spawn(move || serve(conn, path, rx, counter))
            .map_err(|e| Error::io("start the catalog thread", e))?;
        Ok(Catalog {
            queue: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
            commits,
            needs_rebuild,
        })
    }

    /// Whether the worker files hold workers this catalog has not recorded:
    /// it was made new (or found never written) beside them, and no
    /// [`Op::Rebuild`] has committed since. Answered at open.
    pub fn needs_rebuild(&self) -> bool {
        self.needs_rebuild
    }

    /// Queues `op` and waits for the commit that carries it.
    pub async fn call(&self, op: Op) -> Result<Reply> {
        self.send(op)?.await.map_err(|_| Error::Closed)?
    }

    /// `call`, for a thread outside any async runtime (opening, repairing).
    pub fn call_blocking(&self, op: Op) -> Result<Reply> {
        self.send(op)?.blocking_recv().map_err(|_| Error::Closed)?
    }

    fn send(&self, op: Op) -> Result<oneshot::Receiver<Result<Reply>>> {
        let (reply, answer) = oneshot::channel();
        let queue = self.queue.lock();
        let sender = queue.as_ref().ok_or(Error::Closed)?;
        sender.send(Job { op, reply }).map_err(|_| Error::Closed)?;
        Ok(answer)
    }

    /// Catalog transactions committed so far.
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// Lets the queue drain, then closes the connection (releasing the lock).
    /// Blocks until the thread has ended.
    pub fn close(&self) {
        drop(self.queue.lock().take());
        if let Some(t) = self.thread.lock().take() {
            // A panic on the catalog thread has already answered its callers
            // with Closed (their reply senders were dropped).
            let _ = t.join();
        }
    }
}

impl Drop for Catalog {
    fn drop(&mut self) {
        self.close();
    }
}

/// Creates the tables if missing and answers whether a rebuild is owed.
///
/// A catalog made while worker files exist must be rebuilt from them before
/// anything trusts it, and the rebuild is a second commit: a crash between
/// the two would leave a catalog that exists, lists nothing, and is trusted
/// by every later open (their workers unlisted, their alarms never fired).
/// So the owed rebuild is recorded in the very transaction that makes the
/// tables, and only the rebuild's own transaction clears it. A catalog file
/// with no tables (a crash before its first commit) counts as made now.
fn create_schema(conn: &Connection, dir: &Path) -> rusqlite::Result<bool> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let made = (|| {
        let fresh: bool = conn.query_row(
            "SELECT count(*) = 0 FROM sqlite_schema WHERE type = 'table' AND name = 'workers'",
            [],
            |r| r.get(0),
        )?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS workers(
               class TEXT NOT NULL,
               id TEXT NOT NULL,
               created_at INTEGER NOT NULL,
               PRIMARY KEY (class, id)
             ) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS alarm_index(
               class TEXT NOT NULL,
               id TEXT NOT NULL,
               at INTEGER NOT NULL,
               PRIMARY KEY (class, id)
             ) WITHOUT ROWID;
             CREATE INDEX IF NOT EXISTS alarm_index_by_time ON alarm_index(class, at);
             CREATE TABLE IF NOT EXISTS catalog_state(k TEXT PRIMARY KEY, v) WITHOUT ROWID;",
        )?;
        if fresh && crate::repair::has_workers(dir) {
            conn.execute(
                "INSERT OR REPLACE INTO catalog_state(k, v) VALUES ('rebuild', 1)",
                [],
            )?;
        }
        conn.query_row(
            "SELECT count(*) > 0 FROM catalog_state WHERE k = 'rebuild'",
            [],
            |r| r.get(0),
        )
    })();
    match made {
        Ok(owed) => {
            conn.execute_batch("COMMIT")?;
            Ok(owed)
        }
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

fn relabel_lock(e: Error, dir: &Path) -> Error {
    match e {
        Error::Locked { .. } => Error::Locked {
            dir: dir.to_path_buf(),
        },
        other => other,
    }
}

fn serve(mut conn: Connection, path: PathBuf, rx: mpsc::Receiver<Job>, commits: Arc<AtomicU64>) {
    while let Ok(first) = rx.recv() {
        let mut jobs = vec![first];
        while let Ok(more) = rx.try_recv() {
            jobs.push(more);
        }
        let (images, jobs): (Vec<Job>, Vec<Job>) =
            jobs.into_iter().partition(|j| matches!(j.op, Op::Image));
        if !jobs.is_empty() {
            run_batch(&conn, &path, jobs, &commits);
        }
        for job in images {
            let image = conn
                .serialize(rusqlite::MAIN_DB)
                .map(|bytes| Reply::Image(bytes.to_vec()))
                .map_err(|e| Error::sqlite("snapshot", &path, e));
            let _ = job.reply.send(image);
        }
    }
    // Empties the kept WAL (see `sqlite::persist_wal`) so its frames can never
    // be replayed over a registry file that later replaces this one; a
    // failure here loses nothing committed (the frames stay, and are recovered).
    let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
    let _ = conn.close();
}

/// Runs every queued job in one transaction and answers each after the commit.
fn run_batch(conn: &Connection, path: &Path, jobs: Vec<Job>, commits: &AtomicU64) {
    if let Err(e) = conn.execute_batch("BEGIN IMMEDIATE") {
        fail_all(jobs, "begin a catalog transaction", &e);
        return;
    }
    let results: Vec<rusqlite::Result<Reply>> = jobs.iter().map(|j| apply(conn, &j.op)).collect();
    match conn.execute_batch("COMMIT") {
        Ok(()) => {
            commits.fetch_add(1, Ordering::Relaxed);
            for (job, result) in jobs.into_iter().zip(results) {
                let _ = job
                    .reply
                    .send(result.map_err(|e| Error::sqlite("catalog", path, e)));
            }
        }
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            fail_all(jobs, "commit the catalog", &e);
        }
    }
}

/// Answers every job of a batch that could not commit with the same failure.
fn fail_all(jobs: Vec<Job>, context: &str, e: &rusqlite::Error) {
    for job in jobs {
        let _ = job.reply.send(Err(Error::Shared {
            context: context.into(),
            detail: e.to_string(),
        }));
    }
}

fn apply(conn: &Connection, op: &Op) -> rusqlite::Result<Reply> {
    match op {
        Op::Register { class, id } => {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis() as i64)
                .unwrap_or(0);
            conn.prepare_cached(
                "INSERT OR IGNORE INTO workers(class, id, created_at) VALUES (?1, ?2, ?3)",
            )?
            .execute(params![class, id, now])?;
            Ok(Reply::Done)
        }
        Op::Remove { class, id } => {
            let n = conn
                .prepare_cached("DELETE FROM workers WHERE class = ?1 AND id = ?2")?
                .execute(params![class, id])?;
            conn.prepare_cached("DELETE FROM alarm_index WHERE class = ?1 AND id = ?2")?
                .execute(params![class, id])?;
            Ok(Reply::Removed(n > 0))
        }
        Op::AlarmEarlier { class, id, at } => {
            conn.prepare_cached(
                "INSERT INTO alarm_index(class, id, at) VALUES (?1, ?2, ?3)
                 ON CONFLICT(class, id) DO UPDATE SET at = min(at, excluded.at)",
            )?
            .execute(params![class, id, at])?;
            Ok(Reply::Done)
        }
        Op::AlarmExact { class, id, at } => {
            match at {
                Some(at) => conn
                    .prepare_cached(
                        "INSERT INTO alarm_index(class, id, at) VALUES (?1, ?2, ?3)
                         ON CONFLICT(class, id) DO UPDATE SET at = excluded.at",
                    )?
                    .execute(params![class, id, at])?,
                None => conn
                    .prepare_cached("DELETE FROM alarm_index WHERE class = ?1 AND id = ?2")?
                    .execute(params![class, id])?,
            };
            Ok(Reply::Done)
        }
        Op::AlarmNext { classes } => {
            // One indexed probe per class: the query itself leaves out every
            // class this scheduler was not given.
            let mut stmt =
                conn.prepare_cached("SELECT min(at) FROM alarm_index WHERE class = ?1")?;
            let mut next: Option<i64> = None;
            for class in classes {
                let at: Option<i64> = stmt.query_row(params![class], |r| r.get(0))?;
                next = match (next, at) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
            Ok(Reply::Next(next))
        }
        Op::AlarmDue {
            classes,
            now,
            limit,
        } => {
            let mut stmt = conn.prepare_cached(
                "SELECT class, id, at FROM alarm_index WHERE class = ?1 AND at <= ?2 ORDER BY at LIMIT ?3",
            )?;
            let mut due = Vec::new();
            for class in classes {
                let rows = stmt.query_map(params![class, now, limit], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })?;
                for row in rows {
                    due.push(row?);
                }
            }
            due.sort_by_key(|(_, _, at): &(String, String, i64)| *at);
            due.truncate(*limit as usize);
            Ok(Reply::Due(due))
        }
        Op::Rebuild { workers } => {
            for (class, id, at) in workers {
                apply(
                    conn,
                    &Op::Register {
                        class: class.clone(),
                        id: id.clone(),
                    },
                )?;
                apply(
                    conn,
                    &Op::AlarmExact {
                        class: class.clone(),
                        id: id.clone(),
                        at: *at,
                    },
                )?;
            }
            conn.prepare_cached("DELETE FROM catalog_state WHERE k = 'rebuild'")?
                .execute([])?;
            Ok(Reply::Done)
        }
        Op::Summary { alarms } => {
            let classes = conn
                .prepare("SELECT class, count(*) FROM workers GROUP BY class ORDER BY class")?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let alarm_count =
                conn.query_row("SELECT count(*) FROM alarm_index", [], |r| r.get(0))?;
            let alarms = conn
                .prepare("SELECT class, id, at FROM alarm_index ORDER BY at LIMIT ?1")?
                .query_map([alarms], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(Reply::Summary {
                classes,
                alarm_count,
                alarms,
            })
        }
        Op::List {
            class,
            prefix,
            after,
            limit,
        } => {
            let mut stmt = conn.prepare_cached(
                "SELECT id FROM workers
                 WHERE class = ?1 AND id >= ?2 AND (?3 IS NULL OR id > ?3)
                   AND substr(id, 1, length(?2)) = ?2
                 ORDER BY id LIMIT ?4",
            )?;
            let ids = stmt
                .query_map(params![class, prefix, after, limit], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()?;
            Ok(Reply::Ids(ids))
        }
        // Answered by `serve` outside any transaction.
        Op::Image => Err(rusqlite::Error::InvalidQuery),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt() -> tokio::runtime::Runtime {
        match tokio::runtime::Builder::new_current_thread().build() {
            Ok(rt) => rt,
            Err(e) => panic!("runtime: {e}"),
        }
    }

    #[test]
    fn operations_queued_together_commit_together() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let cat = Arc::new(Catalog::open(tmp.path(), Durability::Full)?);
        let before = cat.commits();
        rt().block_on(async {
            let mut calls = Vec::new();
            for i in 0..50 {
                let cat = cat.clone();
                calls.push(async move {
                    cat.call(Op::Register {
                        class: "C".into(),
                        id: format!("w{i:02}"),
                    })
                    .await
                });
            }
            for r in futures_join(calls).await {
                r?;
            }
            let listed = cat
                .call(Op::List {
                    class: "C".into(),
                    prefix: "w1".into(),
                    after: Some("w12".into()),
                    limit: 3,
                })
                .await?;
            assert_eq!(
                listed,
                Reply::Ids(vec!["w13".into(), "w14".into(), "w15".into()])
            );
            Ok::<(), Error>(())
        })?;
        // Sequentially awaited these would be 51 commits.
        assert!(cat.commits() - before < 51);
        Ok(())
    }

    #[test]
    fn a_second_owner_is_refused_with_locked() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let first = Catalog::open(tmp.path(), Durability::Full)?;
        match Catalog::open(tmp.path(), Durability::Full) {
            Err(Error::Locked { dir }) => assert_eq!(dir, tmp.path()),
            Err(e) => panic!("expected Locked, got {e}"),
            Ok(_) => panic!("expected Locked, got a second owner"),
        }
        first.close();
        Catalog::open(tmp.path(), Durability::Full).map(|_| ())
    }

    #[test]
    fn the_alarm_index_moves_earlier_only_until_set_exactly_and_answers_by_class() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let cat = Catalog::open(tmp.path(), Durability::Full)?;
        let call = |op| rt().block_on(cat.call(op));
        let w = |class: &str, id: &str, at| Op::AlarmEarlier {
            class: class.into(),
            id: id.into(),
            at,
        };
        call(w("A", "a", 500))?;
        call(w("A", "a", 900))?; // later: ignored
        call(w("A", "b", 700))?;
        call(w("B", "x", 100))?;
        let next = |classes: &[&str]| {
            call(Op::AlarmNext {
                classes: classes.iter().map(|c| c.to_string()).collect(),
            })
        };
        assert_eq!(next(&["A"])?, Reply::Next(Some(500)));
        assert_eq!(next(&["B", "A"])?, Reply::Next(Some(100)));
        assert_eq!(next(&["C"])?, Reply::Next(None));
        call(Op::AlarmExact {
            class: "A".into(),
            id: "a".into(),
            at: Some(900),
        })?;
        let due = call(Op::AlarmDue {
            classes: vec!["A".into()],
            now: 800,
            limit: 10,
        })?;
        assert_eq!(due, Reply::Due(vec![("A".into(), "b".into(), 700)]));
        call(Op::AlarmExact {
            class: "A".into(),
            id: "b".into(),
            at: None,
        })?;
        assert_eq!(next(&["A"])?, Reply::Next(Some(900)));
        Ok(())
    }

    /// Joins futures by spawning them on the current-thread runtime.
    async fn futures_join<F, T>(fs: Vec<F>) -> Vec<T>
    where
        F: std::future::Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        let handles: Vec<_> = fs.into_iter().map(tokio::spawn).collect();
        let mut out = Vec::new();
        for h in handles {
            match h.await {
                Ok(v) => out.push(v),
                Err(e) => panic!("join: {e}"),
            }
        }
        out
    }
}
