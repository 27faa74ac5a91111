//! The commit threads: where worker writes run, off the JS thread.
//!
//! Guarantee: a submitted job runs exactly once, on one of a fixed set of
//! threads owned by this module, and jobs run in parallel across threads (the
//! JS layer keeps one commit in flight per worker, so one worker's commits never
//! overlap).
//!
//! Why not the libuv pool: a serial write is a round trip, JS → thread → JS,
//! and on a small VM each wake-up of a sleeping thread costs tens of
//! microseconds, as does the commit itself on a thread that has just woken on
//! an idle core. So a commit thread that has just finished polls for the next
//! job for a short while before it sleeps, unless another thread is polling
//! already: a caller that writes again as soon as its previous write resolves
//! finds a thread awake and warm. The poll is bounded (`spin`), so an idle
//! process burns nothing.
//!
//! And the JS thread wakes at most one sleeping thread at a time: while a
//! thread it woke has not yet taken a job, further jobs queue without a
//! wake-up, and that thread, on taking one, wakes the next if more are
//! queued. A JS turn that ends several calls (7 commits a turn in the shop, on
//! average) then pays for one wake-up, not one per commit; the rest are paid
//! on the commit threads, in parallel with JS.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::error::{Error, Result};

pub type Job = Box<dyn FnOnce() + Send + 'static>;

/// Commit threads of a host: commits of different workers run in parallel
/// up to this, and more would only contend for the disk's sync queue.
pub const THREADS: usize = 4;
/// Threads for workers' first writes, each of which builds a file and syncs
/// it and its directory: mostly two waits on the device, which more threads
/// overlap. 48 rather than 16: 64 new workers on a 20 ms device in ~160 ms
/// instead of ~290 (`runtime/new-workers`); no more tried.
pub const CREATE_THREADS: usize = 48;
/// How long a commit thread polls for the next job after one, before it
/// sleeps: long enough to catch a caller that writes again at once, short
/// enough not to hold a core (see the module's note).
pub const SPIN: Duration = Duration::from_micros(100);

struct Shared {
    queue: Mutex<VecDeque<Job>>,
    wake: Condvar,
    /// Jobs queued and not yet taken: what a polling thread watches.
    queued: AtomicUsize,
    /// Threads polling right now: at most one. While one is, a new job needs
    /// no wake-up: waking a sleeping thread as well would only set a second
    /// one spinning against the JS thread for the same job. And a second
    /// poller would only burn a core for a job the first takes: the jobs of a
    /// burst behind it are handed on by wake-ups from the commit threads.
    polling: AtomicUsize,
    /// Threads woken that have not yet come back from their wait. While one
    /// has not, a new job needs no wake-up either: it wakes the next itself.
    waking: AtomicUsize,
    stop: AtomicBool,
    spin: Duration,
}

/// A fixed set of commit threads fed by one queue.
pub struct Committer {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Committer {
    /// Starts `threads` commit threads, named `<name>-<i>`, that each poll
    /// for `spin` after a job.
    pub fn start(name: &str, threads: usize, spin: Duration) -> Result<Self> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(VecDeque::new()),
            wake: Condvar::new(),
            queued: AtomicUsize::new(0),
            polling: AtomicUsize::new(0),
            waking: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            spin,
        });
        let committer = Committer {
            shared: shared.clone(),
            threads: Mutex::new(Vec::with_capacity(threads)),
        };
        for i in 0..threads.max(1) {
            let s = shared.clone();
            // One that cannot start (a pid limit) returns the error, and the
            // drop stops and joins those already started.
            let h = std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || serve(&s))
                .map_err(|e| Error::io("start a commit thread", e))?;
            committer.threads.lock().push(h);
        }
        Ok(committer)
    }

    /// Queues a job; false once the committer has stopped.
    pub fn submit(&self, job: Job) -> bool {
        if self.shared.stop.load(Ordering::Acquire) {
            return false;
        }
        self.shared.queue.lock().push_back(job);
        self.shared.queued.fetch_add(1, Ordering::SeqCst);
        // A polling thread will take it. One that stops polling right now
        // looks at the queue under its lock before it sleeps, and the job is
        // already there.
        wake_one(&self.shared);
        true
    }

    /// Runs what is queued, then ends the threads. Blocks until they have ended.
    pub fn stop(&self) {
        {
            // Under the queue's lock: a thread between its last look at `stop`
            // and its wait holds this lock, so the notify below cannot fall in
            // that gap and be lost (it was, about once in 1,000 closes, and the
            // join below then waited for ever).
            let _queue = self.shared.queue.lock();
            self.shared.stop.store(true, Ordering::Release);
        }
        self.shared.wake.notify_all();
        for h in self.threads.lock().drain(..) {
            // A job that panicked has already answered its caller (the napi
            // layer catches panics in jobs); nothing is left to report here.
            let _ = h.join();
        }
    }
}

impl Drop for Committer {
    fn drop(&mut self) {
        self.stop();
    }
}

thread_local! {
    /// The committer this thread serves (set on commit threads only).
    static SERVING: RefCell<Option<Arc<Shared>>> = const { RefCell::new(None) };
    /// Whether this thread counts itself as polling ahead of time ([`finishing`]).
    static PRIMED: Cell<bool> = const { Cell::new(false) };
}

/// Called by a job on a commit thread just before it reports its outcome,
/// when all it has left to do is return: from then on the thread counts as
/// polling, so a job submitted in answer to the report is left for it rather
/// than waking another thread. Without this, the JS thread, woken by the
/// report, often ran on the reporting thread's core and submitted the next
/// commit before that thread had got back to its poll: every serial commit
/// then woke a cold thread (1,898 changes of thread in 3,100 serial commits,
/// `perf record -e syscalls:sys_enter_fdatasync`; 238 with this). A no-op
/// elsewhere.
pub fn finishing() {
    SERVING.with(|s| {
        if let Some(s) = s.borrow().as_ref() {
            if !PRIMED.get() && claim_poll(s) {
                PRIMED.set(true);
            }
        }
    });
}

/// Makes this thread the one that polls, unless another already is.
fn claim_poll(s: &Shared) -> bool {
    s.polling
        .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
}

/// Stops counting this thread as polling ahead of time.
fn unprime(s: &Shared) {
    if PRIMED.replace(false) {
        s.polling.fetch_sub(1, Ordering::SeqCst);
    }
}

fn serve(s: &Arc<Shared>) {
    SERVING.with(|cell| *cell.borrow_mut() = Some(s.clone()));
    loop {
        let (job, more) = {
            let mut q = s.queue.lock();
            loop {
                if let Some(job) = q.pop_front() {
                    s.queued.fetch_sub(1, Ordering::AcqRel);
                    unprime(s);
                    break (Some(job), !q.is_empty());
                }
                if s.stop.load(Ordering::Acquire) {
                    unprime(s);
                    break (None, false);
                }
                drop(q);
                poll(s);
                q = s.queue.lock();
                if q.is_empty() && !s.stop.load(Ordering::Acquire) {
                    s.wake.wait(&mut q);
                    // Back from the wait: no longer a thread being woken. (A
                    // stop's notify_all was not counted; the count saturates.)
                    let _ = s
                        .waking
                        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
                }
            }
        };
        match job {
            Some(job) => {
                // More queued behind this one: hand them to another thread now,
                // rather than after this job.
                if more {
                    wake_one(s);
                }
                job()
            }
            None => return,
        }
    }
}

/// Wakes a sleeping thread for queued work, unless a thread is polling or
/// one already woken has not yet come back (either will take the work).
fn wake_one(s: &Shared) {
    if s.polling.load(Ordering::SeqCst) != 0 {
        return;
    }
    if s.waking
        .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        return;
    }
    if !s.wake.notify_one() {
        // Nobody was asleep (all busy): each looks at the queue before it
        // sleeps. Saturating, like the decrement in serve(): a stop's
        // notify_all may have brought it to 0 meanwhile.
        let _ = s
            .waking
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    }
}

/// Waits up to `spin` for a job to be queued, without sleeping; at once if
/// another thread is polling.
fn poll(s: &Shared) {
    if !PRIMED.replace(false) && !claim_poll(s) {
        return;
    }
    let until = Instant::now() + s.spin;
    while s.queued.load(Ordering::SeqCst) == 0 && !s.stop.load(Ordering::Acquire) {
        if Instant::now() >= until {
            break;
        }
        std::hint::spin_loop();
    }
    s.polling.fetch_sub(1, Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn every_job_runs_once_and_stop_finishes_the_queue() -> Result<()> {
        let c = Committer::start("test", 3, Duration::from_micros(50))?;
        let (tx, rx) = mpsc::channel();
        for i in 0..1000 {
            let tx = tx.clone();
            assert!(c.submit(Box::new(move || {
                let _ = tx.send(i);
            })));
        }
        c.stop();
        drop(tx);
        let mut got: Vec<i32> = rx.iter().collect();
        got.sort_unstable();
        assert_eq!(got, (0..1000).collect::<Vec<_>>());
        assert!(!c.submit(Box::new(|| {})));
        Ok(())
    }

    #[test]
    fn a_sleeping_thread_wakes_for_a_job() -> Result<()> {
        let c = Committer::start("test", 1, Duration::ZERO)?;
        std::thread::sleep(Duration::from_millis(20));
        let (tx, rx) = mpsc::channel();
        c.submit(Box::new(move || {
            let _ = tx.send(7);
        }));
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).ok(), Some(7));
        Ok(())
    }

    #[test]
    fn a_job_submitted_in_answer_to_a_report_goes_to_the_reporting_thread() -> Result<()> {
        // Job A reports (finishing), and "the JS thread" submits B at once,
        // while A's thread has not yet returned (the sleep stands for a
        // thread preempted by the JS thread it woke). B must wait for A's
        // thread rather than wake the other one, asleep since the start.
        let c = Arc::new(Committer::start("test", 2, Duration::ZERO)?);
        for _round in 0..20 {
            std::thread::sleep(Duration::from_millis(5)); // both asleep
            let (tx, rx) = mpsc::channel();
            let (c2, tx2) = (c.clone(), tx.clone());
            assert!(c.submit(Box::new(move || {
                let _ = tx2.send(std::thread::current().id());
                finishing();
                let tx3 = tx2.clone();
                c2.submit(Box::new(move || {
                    let _ = tx3.send(std::thread::current().id());
                }));
                std::thread::sleep(Duration::from_millis(5));
            })));
            let a = rx.recv_timeout(Duration::from_secs(5)).ok();
            let b = rx.recv_timeout(Duration::from_secs(5)).ok();
            assert!(a.is_some() && a == b, "B ran on {b:?}, A on {a:?}");
        }
        c.stop();
        Ok(())
    }

    #[test]
    fn jobs_queued_behind_one_wake_up_still_run_in_parallel() -> Result<()> {
        // Four jobs that each wait until all four have started: they finish
        // only if the one wake-up the burst gets is passed on to every thread.
        let c = Committer::start("test", 4, Duration::ZERO)?;
        for _round in 0..50 {
            std::thread::sleep(Duration::from_millis(2)); // every thread asleep
            four_jobs_that_wait_for_each_other(&c);
        }
        Ok(())
    }

    /// Submits four jobs that each wait until all four have started, and
    /// waits for them: they end only if they run on four threads at once.
    fn four_jobs_that_wait_for_each_other(c: &Committer) {
        let barrier = Arc::new(std::sync::Barrier::new(4));
        let (tx, rx) = mpsc::channel();
        for _ in 0..4 {
            let (b, tx) = (barrier.clone(), tx.clone());
            assert!(c.submit(Box::new(move || {
                b.wait();
                let _ = tx.send(());
            })));
        }
        for _ in 0..4 {
            assert!(rx.recv_timeout(Duration::from_secs(5)).is_ok());
        }
    }

    #[test]
    fn one_thread_polls_and_a_burst_behind_it_still_runs_in_parallel() -> Result<()> {
        // A spin long enough that every thread finishing a job would still be
        // polling when the next burst comes: only one may, and the burst's
        // four jobs, which wait for each other, must still reach all four.
        let c = Committer::start("test", 4, Duration::from_secs(1))?;
        for _round in 0..20 {
            four_jobs_that_wait_for_each_other(&c);
            std::thread::sleep(Duration::from_millis(10));
            let polling = c.shared.polling.load(Ordering::SeqCst);
            assert!(polling <= 1, "{polling} threads polling");
        }
        c.stop();
        Ok(())
    }
}
