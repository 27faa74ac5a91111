//! An object's storage across reopens: what a settled commit leaves, what a
//! failed sync leaves, and a file a power cut left empty.

use std::sync::Arc;

use super::file::ObjectFile;
use super::Object;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::sqlite::Durability;

fn object(engine: &Arc<Engine>) -> Object {
    Object::new(engine.clone(), "do.Probe".into(), "ab".repeat(32))
}

fn put(o: &Object, key: &str, value: &[u8]) -> Result<super::file::Written> {
    o.ensure_file()?;
    o.with(|f: &mut ObjectFile| {
        let mut began = false;
        f.kv_put(&[key.as_bytes()], &[value], &mut began)
            .map_err(|_| Error::internal("put"))
    })??;
    match o.commit()? {
        Ok(Some(w)) => Ok(w),
        _ => Err(Error::internal("commit")),
    }
}

fn get(o: &Object, key: &str) -> Result<Option<Vec<u8>>> {
    o.with(|f| f.kv_get(&[key.as_bytes()]))?
        .map(|mut v| v.remove(0))
}

#[test]
fn a_settled_commit_is_found_after_reopen_and_a_failed_sync_leaves_nothing_behind() -> Result<()> {
    let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    let engine = Arc::new(Engine::open(tmp.path(), Durability::Full)?);
    let o = object(&engine);
    assert!(!o.load()?, "a new object has no file");
    let first = put(&o, "k", b"one")?;
    assert!(
        first.fresh,
        "the first commit syncs the new file and its directory"
    );
    o.settle(&first)?;
    let mut second = put(&o, "k", b"two")?;
    second.unsynced.fail_sync = true;
    assert!(o.settle(&second).is_err());
    // The failed sync closed the object; a new handle reads the file again.
    let again = object(&engine);
    assert!(again.load()?);
    assert_eq!(get(&again, "k")?, Some(b"one".to_vec()));
    again.close()?;
    Ok(())
}

#[test]
fn once_a_sync_fails_no_later_commit_of_the_object_is_reported_durable() -> Result<()> {
    for failing_first in [true, false] {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let engine = Arc::new(Engine::open(tmp.path(), Durability::Full)?);
        let o = object(&engine);
        o.load()?;
        o.settle(&put(&o, "k", b"zero")?)?;
        // Two turns committed, both waiting for their syncs.
        let mut a = put(&o, "k", b"a")?;
        let mut b = put(&o, "k", b"b")?;
        let (failing, other) = match failing_first {
            true => (&mut a, &mut b),
            false => (&mut b, &mut a),
        };
        failing.unsynced.fail_sync = true;
        assert!(o.settle(failing).is_err());
        assert!(
            o.settle(other).is_err(),
            "a sync after a failed one fails too"
        );
        let again = object(&engine);
        again.load()?;
        assert_eq!(get(&again, "k")?, Some(b"zero".to_vec()));
        again.close()?;
    }
    Ok(())
}

#[test]
fn a_file_a_power_cut_left_as_zeros_before_its_first_sync_is_no_file() -> Result<()> {
    let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    let engine = Arc::new(Engine::open(tmp.path(), Durability::Full)?);
    let o = object(&engine);
    let path = o.path().to_path_buf();
    let dir = path.parent().ok_or(Error::Closed)?;
    std::fs::create_dir_all(dir).map_err(|e| Error::io("mkdir", e))?;
    std::fs::write(&path, vec![0u8; 4096]).map_err(|e| Error::io("write", e))?;
    assert!(!o.load()?);
    assert!(!path.exists());
    Ok(())
}

/// The values a copy of an object's file holds.
fn values_in(image: &[u8]) -> Result<Vec<Vec<u8>>> {
    let mut conn =
        rusqlite::Connection::open_in_memory().map_err(|e| Error::internal(e.to_string()))?;
    let mut bytes = image.to_vec();
    // A WAL-mode image read as a rollback-journal one: in memory, no log.
    bytes[18..20].copy_from_slice(&[1, 1]);
    conn.deserialize_read_exact(rusqlite::MAIN_DB, &bytes[..], bytes.len(), true)
        .map_err(|e| Error::internal(e.to_string()))?;
    let mut stmt = conn
        .prepare("SELECT value FROM _cf_KV ORDER BY key")
        .map_err(|e| Error::internal(e.to_string()))?;
    let rows = stmt
        .query_map([], |r| r.get::<_, Vec<u8>>(0))
        .and_then(|rows| rows.collect())
        .map_err(|e| Error::internal(e.to_string()));
    rows
}

/// Takes a copy of `o` on another thread: its values, once it has them.
fn copy_of(o: &Arc<Object>) -> std::thread::JoinHandle<Result<Vec<Vec<u8>>>> {
    let o = o.clone();
    std::thread::spawn(
        move || match o.with_image(|| 0, |bytes, _| values_in(bytes))? {
            crate::backup::Image::Copied(values) => Ok(values),
            _ => Err(Error::internal("no copy")),
        },
    )
}

#[test]
fn a_copy_waits_for_written_commits_to_sync_and_never_holds_an_open_transaction() -> Result<()> {
    let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    let engine = Arc::new(Engine::open(tmp.path(), Durability::Full)?);
    let o = Arc::new(object(&engine));
    o.load()?;
    o.settle(&put(&o, "a", b"one")?)?;

    // Written, not synced: the copy waits for the sync, then holds it.
    let written = put(&o, "b", b"two")?;
    let copy = copy_of(&o);
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(
        !copy.is_finished(),
        "a copy must not take a commit whose sync is pending"
    );
    o.settle(&written)?;
    let values = copy.join().map_err(|_| Error::internal("join"))??;
    assert_eq!(values, vec![b"one".to_vec(), b"two".to_vec()]);

    // A transaction open: the copy waits for it to end, and it rolled back.
    o.with(|f: &mut ObjectFile| {
        let mut began = false;
        f.kv_put(&[b"c".as_slice()], &[b"three".as_slice()], &mut began)
            .map_err(|_| Error::internal("put"))
    })??;
    let copy = copy_of(&o);
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(
        !copy.is_finished(),
        "a copy must not be read inside a transaction"
    );
    o.with(|f| f.rollback())??;
    let values = copy.join().map_err(|_| Error::internal("join"))??;
    assert_eq!(values, vec![b"one".to_vec(), b"two".to_vec()]);
    o.close()?;
    Ok(())
}

#[test]
fn a_new_file_before_its_first_sync_is_not_copied() -> Result<()> {
    let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    let engine = Arc::new(Engine::open(tmp.path(), Durability::Full)?);
    let o = Arc::new(object(&engine));
    o.load()?;
    o.ensure_file()?;
    let got = o.with_image(|| 0, |_, _| Ok(()))?;
    assert!(matches!(got, crate::backup::Image::NoFile));
    Ok(())
}

#[test]
fn a_copy_waiting_for_a_sync_lets_the_connection_go_for_a_sync_made_on_its_thread() -> Result<()> {
    let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    let engine = Arc::new(Engine::open(tmp.path(), Durability::Full)?);
    let o = Arc::new(object(&engine));
    o.load()?;
    // As on an idle loop: the JS thread syncs its own commit later, and
    // uses the connection first.
    let written = put(&o, "a", b"one")?;
    let copy = copy_of(&o);
    std::thread::sleep(std::time::Duration::from_millis(50));
    let started = std::time::Instant::now();
    o.with(|f| f.in_transaction())?;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(1),
        "the connection was held {:?} for a sync only this thread makes",
        started.elapsed()
    );
    o.settle(&written)?;
    let values = copy.join().map_err(|_| Error::internal("join"))??;
    assert_eq!(values, vec![b"one".to_vec()]);
    Ok(())
}

#[test]
fn a_file_whose_first_write_never_committed_is_synced_by_the_next_instance_first() -> Result<()> {
    let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    let engine = Arc::new(Engine::open(tmp.path(), Durability::Full)?);
    let o = object(&engine);
    o.load()?;
    // The first write made the file, then rolled back: nothing committed.
    o.ensure_file()?;
    o.with(|f| f.rollback())??;
    o.close()?;
    let again = Arc::new(object(&engine));
    assert!(again.load()?, "the file is there");
    let got = again.with_image(|| 0, |_, _| Ok(()))?;
    assert!(
        matches!(got, crate::backup::Image::NoFile),
        "a copy takes nothing from a file no commit was synced to"
    );
    let first = put(&again, "k", b"one")?;
    assert!(
        first.fresh,
        "the next instance's first commit syncs the file and its directory too"
    );
    again.settle(&first)?;
    assert_eq!(get(&again, "k")?, Some(b"one".to_vec()));
    again.close()?;
    Ok(())
}

#[test]
fn commits_synced_out_of_order_reach_the_archive_in_order_after_the_new_file() -> Result<()> {
    let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    let (to, engine) = crate::archive::test_engine(tmp.path())?;
    let o = object(&engine);
    o.load()?;
    // Three commits of a new file, written before any is synced; their syncs
    // end last first, as on commit threads.
    let w = [
        put(&o, "k", b"one")?,
        put(&o, "k", b"two")?,
        put(&o, "j", b"three")?,
    ];
    for written in w.iter().rev() {
        o.settle(written)?;
    }
    o.close()?;
    engine.close();
    let out = tmp.path().join("restored");
    let (restored, failed) =
        crate::archive::restore::restore(&to, &out, None, None, Durability::Full)?;
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(restored.len(), 1);
    let back = Engine::open(&out, Durability::Full)?;
    let again = object(&Arc::new(back));
    assert!(again.load()?);
    assert_eq!(get(&again, "k")?, Some(b"two".to_vec()));
    assert_eq!(get(&again, "j")?, Some(b"three".to_vec()));
    again.close()?;
    Ok(())
}

fn archived(dir: &std::path::Path, to: &std::path::Path) -> Result<Arc<Engine>> {
    let config = crate::archive::Config {
        to: to.to_path_buf(),
        retain: std::time::Duration::from_secs(3600),
        base_every: std::time::Duration::from_secs(3600),
        first_seq: None,
    };
    Ok(Arc::new(Engine::open_archived(
        dir,
        Durability::Full,
        Some(config),
    )?))
}

#[test]
fn a_host_closed_before_it_finished_a_base_takes_one_as_it_closes() -> Result<()> {
    let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    let (dir, to) = (tmp.path().join("d"), tmp.path().join("archive"));
    let bases = || crate::archive::base::list(&to).len();
    let write = |engine: &Arc<Engine>, value: &[u8]| -> Result<()> {
        let o = object(engine);
        o.load()?;
        let w = put(&o, "k", value)?;
        o.settle(&w)?;
        o.close()
    };
    let restored = |n: usize| -> Result<Option<Vec<u8>>> {
        let out = tmp.path().join(format!("restored-{n}"));
        let (restored, failed) =
            crate::archive::restore::restore(&to, &out, None, None, Durability::Full)?;
        assert!(failed.is_empty(), "{failed:?}");
        assert_eq!(restored.len(), 1);
        let again = object(&Arc::new(Engine::open(&out, Durability::Full)?));
        again.load()?;
        let v = get(&again, "k");
        again.close()?;
        v
    };
    // Closed at once after its base thread starts: that thread's first base
    // is underway or not begun, and close must not cut it short.
    let engine = archived(&dir, &to)?;
    write(&engine, b"one")?;
    engine.start_bases()?;
    engine.close();
    assert_eq!(bases(), 1, "the archive can be restored");
    assert_eq!(restored(1)?, Some(b"one".to_vec()));
    // No base thread: the next process's records follow none of its bases.
    let engine = archived(&dir, &to)?;
    write(&engine, b"two")?;
    engine.close();
    assert_eq!(bases(), 2, "a base of the second process");
    assert_eq!(restored(2)?, Some(b"two".to_vec()));
    // A process that finished a base takes no other as it closes.
    let engine = archived(&dir, &to)?;
    crate::archive::base::take(&engine)?;
    write(&engine, b"three")?;
    engine.close();
    assert_eq!(bases(), 3);
    assert_eq!(restored(3)?, Some(b"three".to_vec()));
    Ok(())
}

#[test]
fn a_base_underway_at_close_is_given_up_once_the_process_has_one() -> Result<()> {
    let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    // A base taken: this process has one.
    let (to, engine) = crate::archive::test_engine(tmp.path())?;
    let o = object(&engine);
    o.load()?;
    let w = put(&o, "k", b"one")?;
    o.settle(&w)?;
    o.close()?;
    let archive = engine.archive.as_ref().ok_or(Error::Closed)?;
    archive.stop_bases(&engine);
    assert_eq!(
        crate::archive::base::list(&to).len(),
        1,
        "none taken at close"
    );
    // What the base thread would be doing as the host closes.
    assert!(matches!(
        crate::archive::base::take(&engine),
        Err(Error::Closed)
    ));
    assert_eq!(crate::archive::base::list(&to).len(), 1, "none finished");
    engine.close();
    Ok(())
}

/// A directory copied file by file: what the page cache holds at a crash.
fn copy_dir(from: &std::path::Path, to: &std::path::Path) -> Result<()> {
    let io = |e| Error::io("copy", e);
    std::fs::create_dir_all(to).map_err(io)?;
    for entry in std::fs::read_dir(from).map_err(io)? {
        let entry = entry.map_err(io)?;
        let dst = to.join(entry.file_name());
        if entry.file_type().map_err(io)?.is_dir() {
            copy_dir(&entry.path(), &dst)?;
        } else {
            std::fs::copy(entry.path(), &dst).map_err(io)?;
        }
    }
    Ok(())
}

#[test]
fn a_file_whose_first_commit_was_written_and_never_synced_is_made_durable_as_it_is_loaded(
) -> Result<()> {
    let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let engine = Arc::new(Engine::open(&a, Durability::Full)?);
    let o = object(&engine);
    o.load()?;
    // Written to the log; the process dies before the sync that covers the
    // file, its directory and the commit.
    assert!(put(&o, "k", b"one")?.fresh);
    copy_dir(&a, &b)?;
    // What every opener runs first (a load, a copy, a repair).
    let path = crate::layout::worker_path(&b, "do.Probe", &"ab".repeat(32));
    assert_eq!(super::file::make_durable_if_replayed(&path)?, 3);
    let engine = Arc::new(Engine::open(&b, Durability::Full)?);
    let again = object(&engine);
    let before = engine
        .counters
        .syncs
        .load(std::sync::atomic::Ordering::Relaxed);
    assert!(again.load()?);
    let synced = engine
        .counters
        .syncs
        .load(std::sync::atomic::Ordering::Relaxed)
        - before;
    assert_eq!(
        synced, 3,
        "the log, the file and its directory, before the load returns"
    );
    // What it read (the log's commit) is what the next commits build on.
    assert_eq!(get(&again, "k")?, Some(b"one".to_vec()));
    again.close()?;
    // Closed, the file is checkpointed past a creation's size: loaded again,
    // it is not synced again.
    let third = object(&engine);
    let before = engine
        .counters
        .syncs
        .load(std::sync::atomic::Ordering::Relaxed);
    assert!(third.load()?);
    assert_eq!(
        engine
            .counters
            .syncs
            .load(std::sync::atomic::Ordering::Relaxed),
        before
    );
    assert_eq!(super::file::make_durable_if_replayed(&path)?, 0);
    assert_eq!(get(&third, "k")?, Some(b"one".to_vec()));
    third.close()?;
    Ok(())
}

#[test]
fn a_creation_writes_creation_bytes() -> Result<()> {
    let image = super::file::empty_image(&"ab".repeat(32)).map_err(|_| Error::internal("image"))?;
    assert_eq!(image.len() as u64, super::file::CREATION_BYTES);
    Ok(())
}

#[test]
fn a_commit_whose_hand_off_failed_is_not_in_the_file_after_close() -> Result<()> {
    let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
    let engine = Arc::new(Engine::open(tmp.path(), Durability::Full)?);
    let o = object(&engine);
    o.load()?;
    let first = put(&o, "kept", b"1")?;
    o.settle(&first)?;
    let lost = put(&o, "lost", b"2")?;
    // No commit thread took it: reported failed to the app.
    o.dropped(&lost);
    let _ = o.close();
    let again = object(&engine);
    assert!(again.load()?);
    assert_eq!(get(&again, "kept")?, Some(b"1".to_vec()));
    assert_eq!(get(&again, "lost")?, None);
    again.close()?;
    Ok(())
}
