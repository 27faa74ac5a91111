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
    o.with(|f: &mut ObjectFile| -> Result<super::file::Written> {
        let mut began = false;
        f.kv_put(&[key.as_bytes()], &[value], &mut began)
            .map_err(|_| Error::internal("put"))?;
        match f.commit() {
            Ok(Some(w)) => Ok(w),
            _ => Err(Error::internal("commit")),
        }
    })?
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
        first.fresh.is_some(),
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
