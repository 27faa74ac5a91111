//! Restoring an archive as it was at a moment.
//!
//! For each worker, the restore starts from the latest point that holds
//! nothing after the moment: a base copy none of whose records came after
//! it, or the record that created the worker. It then applies the worker's
//! records made by the moment, in order, each naming the one before it, so a
//! missing or damaged record stops that worker, by name, and no other. The
//! result is checked like a snapshot's file (`integrity_check`, its owner)
//! and the catalog is built from the restored files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::base::{self, Base};
use super::segment::{self, Entry, Segment, KIND_IMAGE, KIND_PAGES, KIND_REMOVED};
use crate::backup::{self, Failed, Restored};
use crate::error::{Error, Result};
use crate::layout;
use crate::sqlite::Durability;

/// One record of a worker and the segment that holds it.
struct Located<'a> {
    entry: &'a Entry,
    segment: &'a Segment,
}

/// Restores the archive at `from` into `to` (new or empty) as it was at
/// `at` (epoch ms; the latest it holds when `None`). `only`: the worker
/// files (`class/xx/hash.db`) to restore, all when `None`.
pub fn restore(
    from: &Path,
    to: &Path,
    at: Option<i64>,
    only: Option<&[String]>,
    durability: Durability,
) -> Result<(Vec<Restored>, Failed)> {
    let bases = base::list(from);
    let Some(first) = bases.first() else {
        return Err(Error::Backup {
            detail: format!("{} holds no finished base: it is not an archive, or one whose first base never finished", from.display()),
        });
    };
    let at = at.unwrap_or(i64::MAX);
    if at < first.started {
        return Err(Error::Backup {
            detail: format!(
                "the archive in {} begins at {} ms (its first base); it cannot restore {at}",
                from.display(),
                first.started
            ),
        });
    }
    backup::ensure_empty(to)?;
    let mut segments = Vec::new();
    let mut damaged = Vec::new();
    for (first_seq, last_seq, path) in segment::list(from) {
        match segment::read(&path) {
            Ok(s) => segments.push(s),
            Err(e) => damaged.push((first_seq, last_seq, e.to_string())),
        }
    }
    let mut records: BTreeMap<String, Vec<Located>> = BTreeMap::new();
    for s in &segments {
        for e in &s.entries {
            let rel = rel_path(&e.class, &e.id);
            records.entry(rel).or_default().push(Located {
                entry: e,
                segment: s,
            });
        }
    }
    for list in records.values_mut() {
        list.sort_by_key(|l| l.entry.seq);
    }
    let mut names: BTreeSet<String> = records.keys().cloned().collect();
    for b in &bases {
        names.extend(b.files.iter().map(|f| f.file.clone()));
    }
    let mut unknown = Vec::new();
    if let Some(only) = only {
        unknown = only
            .iter()
            .filter(|n| !names.contains(*n))
            .cloned()
            .collect();
        names.retain(|n| only.contains(n));
    }
    let names: Vec<String> = names.into_iter().collect();
    let empty = Vec::new();
    let results = backup::in_parallel(&names, |name| {
        // Names come from the archive's own files: one that would leave the
        // target (a class of `..`) is refused, never written.
        if !backup::valid_name(name) {
            return Err(Error::Backup {
                detail: format!("{name:?} is not a worker file's path"),
            });
        }
        let list = records.get(name).unwrap_or(&empty);
        let image = rebuild(name, list, &bases, &damaged, at)?;
        let Some(image) = image else { return Ok(None) };
        let dst = to.join(name);
        backup::write_out(&dst, name, &image)?;
        let checked = backup::check(to, &dst, name, durability);
        if checked.is_err() {
            let _ = crate::files::remove_files(&dst);
        }
        checked.map(Some)
    });
    let mut restored = Vec::new();
    let mut failed = Vec::new();
    for (name, r) in names.iter().zip(results) {
        match r {
            Ok(Some(who)) => restored.push(who),
            Ok(None) => {}
            Err(e) => failed.push((name.clone(), e.to_string())),
        }
    }
    for name in unknown {
        failed.push((name, "the archive holds no such worker".into()));
    }
    backup::finish_restore(to, &restored, durability)?;
    Ok((restored, failed))
}

/// A worker file's path inside a directory, `/`-separated.
pub fn rel_path(class: &str, id: &str) -> String {
    layout::worker_path(Path::new(""), class, id)
        .to_string_lossy()
        .replace('\\', "/")
}

/// The worker's file as of `at`, or `None` when it did not exist then.
fn rebuild(
    name: &str,
    records: &[Located],
    bases: &[Base],
    damaged: &[(u64, u64, String)],
    at: i64,
) -> Result<Option<Vec<u8>>> {
    let fail = |detail: String| Error::Backup {
        detail: format!("{name}: {detail}"),
    };
    // The latest start that holds nothing made after `at`. A base's copy
    // holds every record made before the base began and this process's up to
    // its mark; a creation's image holds itself.
    let mut start: Option<Start> = None;
    for b in bases.iter().rev() {
        let Some(f) = b.files.iter().find(|f| f.file == name) else {
            continue;
        };
        let held = |e: &Entry| e.seq < b.first_seq || e.seq <= f.seq;
        if records.iter().any(|r| held(r.entry) && r.entry.at > at) {
            continue;
        }
        let bytes = std::fs::read(b.dir.join(name))
            .map_err(|e| fail(format!("read its base copy: {e}")))?;
        if blake3::hash(&bytes).as_bytes() != &f.hash {
            return Err(fail(format!(
                "its copy in the base {} does not match its hash: the base is damaged",
                b.dir.display()
            )));
        }
        start = Some(Start {
            order: b.first_seq.max(f.seq),
            pos: f.seq,
            skip_before: b.first_seq,
            image: bytes,
        });
        break;
    }
    if let Some(r) = records
        .iter()
        .rev()
        .find(|r| r.entry.kind == KIND_IMAGE && r.entry.at <= at)
    {
        let e = r.entry;
        if start.as_ref().is_none_or(|s| e.seq > s.order) {
            let bytes = image_of(e, r.segment.payload(e).map_err(fail)?).map_err(fail)?;
            start = Some(Start {
                order: e.seq,
                pos: e.seq,
                skip_before: e.seq,
                image: bytes,
            });
        }
    }
    let Some(Start {
        mut pos,
        skip_before,
        mut image,
        ..
    }) = start
    else {
        // Made after the moment: it did not exist then. Otherwise it did, and
        // every copy of it holds something made after the moment.
        let created_later = records
            .first()
            .is_some_and(|r| r.entry.kind == KIND_IMAGE && r.entry.at > at);
        if created_later {
            return Ok(None);
        }
        return Err(fail(
            "no copy of it holds it as it was then: it was written between that moment and its copy in the earliest base that could serve"
                .into(),
        ));
    };
    if let Some((_, last, why)) = damaged
        .iter()
        .find(|(_, last, _)| *last > pos && *last >= skip_before)
    {
        return Err(fail(format!(
            "a segment that may hold its records (up to {last}) cannot be read: {why}"
        )));
    }
    let mut exists = true;
    for r in records {
        let e = r.entry;
        if e.seq <= pos || e.seq < skip_before {
            continue;
        }
        if e.at > at {
            break;
        }
        if e.prev != pos {
            return Err(fail(format!(
                "its record {} follows {}, not {pos}: a record between them is missing from the archive",
                e.seq, e.prev
            )));
        }
        let payload = r.segment.payload(e).map_err(fail)?;
        match e.kind {
            KIND_IMAGE => {
                image = image_of(e, payload).map_err(fail)?;
                exists = true;
            }
            KIND_PAGES => apply(&mut image, e, payload).map_err(fail)?,
            KIND_REMOVED => exists = false,
            k => {
                return Err(fail(format!(
                    "its record {} is of an unknown kind {k}",
                    e.seq
                )))
            }
        }
        pos = e.seq;
    }
    Ok(exists.then_some(image))
}

/// Where a worker's restore starts.
struct Start {
    /// Which of two starts is later.
    order: u64,
    /// The chain position: the next record names it as `prev`.
    pos: u64,
    /// Records before this are in the start already.
    skip_before: u64,
    image: Vec<u8>,
}

/// A new worker's file from its record.
fn image_of(e: &Entry, payload: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let mut image = Vec::new();
    segment::apply_pages(&mut image, e.page_size as usize, payload)
        .map_err(|why| format!("its record {}: {why}", e.seq))?;
    resize(&mut image, e)?;
    Ok(image)
}

/// Sets the file's size to the pages its record says it has.
fn resize(image: &mut Vec<u8>, e: &Entry) -> std::result::Result<(), String> {
    let pages = e.db_pages as usize;
    if pages > segment::MAX_PAGES {
        return Err(format!("its record {} gives it {pages} pages", e.seq));
    }
    let len = pages * e.page_size as usize;
    image
        .try_reserve(len.saturating_sub(image.len()))
        .map_err(|_| format!("its record {} gives it {len} bytes", e.seq))?;
    image.resize(len, 0);
    Ok(())
}

/// Writes a commit's pages into a database file's bytes.
fn apply(image: &mut Vec<u8>, e: &Entry, payload: &[u8]) -> std::result::Result<(), String> {
    let size = e.page_size as usize;
    if size < 512 {
        return Err(format!("its record {} has no page size", e.seq));
    }
    segment::apply_pages(image, size, payload)
        .map_err(|why| format!("its record {}: {why}", e.seq))?;
    if e.db_pages > 0 {
        resize(image, e)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::{test_engine, Change, Record};

    #[test]
    fn a_record_whose_class_climbs_out_of_the_target_is_refused_not_written() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let (to, engine) = test_engine(tmp.path())?;
        engine.close();
        let hostile = Record {
            class: "../../escape".into(),
            id: "x".into(),
            seq: 100,
            prev: 0,
            at: 1,
            change: Change::Image(vec![1, 2, 3]),
        };
        segment::write(&to.join("log"), &[hostile])?;
        let out = tmp.path().join("restored").join("deep");
        let (restored, failed) = restore(&to, &out, None, None, Durability::Full)?;
        assert!(restored.is_empty());
        assert_eq!(failed.len(), 1);
        assert!(
            failed[0].1.contains("is not a worker file's path"),
            "{failed:?}"
        );
        assert!(!tmp.path().join("escape").exists());
        Ok(())
    }
}
