//! Rebuilding the catalog from the worker files.
//!
//! The catalog is an index of the worker files (what exists, and each one's
//! earliest alarm), and every worker file holds its own class, id and alarms.
//! So a catalog that was deleted can be rebuilt from the files alone, and one
//! that is damaged can be set aside and rebuilt. [`crate::engine::Engine::open`]
//! does the first by itself; the second is `durable-workers repair <dir>`,
//! because setting a file aside is a decision for a person.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::catalog::{Catalog, Op};
use crate::error::{Error, Result};
use crate::layout::{self, REGISTRY_FILE};
use crate::object::file::ObjectFile;
use crate::sqlite::Durability;
use crate::store::{Identity, WorkerFile};

/// The catalog class of a Durable Object class is `do.<ClassName>` (`js/do/`).
pub(crate) const OBJECT_CLASS_PREFIX: &str = "do.";

/// What a rebuild found.
#[derive(Debug, Default)]
pub struct Report {
    /// Worker files recorded in the catalog.
    pub workers: u64,
    /// Of those, the ones with an alarm (indexed again).
    pub alarms: u64,
    /// Files that could not be read as the worker their path says, and why.
    pub skipped: Vec<(PathBuf, String)>,
    /// Where a damaged catalog was moved, if it was.
    pub moved_aside: Option<PathBuf>,
}

/// Whether `dir` holds any class directory (so a missing catalog means a lost one).
pub fn has_workers(dir: &Path) -> bool {
    class_dirs(dir).next().is_some()
}

fn class_dirs(dir: &Path) -> impl Iterator<Item = (String, PathBuf)> {
    fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| Some((e.file_name().into_string().ok()?, e.path())))
}

/// Every worker file under `dir`, read for its identity. A file whose identity
/// does not match its path (copied from elsewhere) is skipped, not adopted.
pub fn scan(dir: &Path, durability: Durability) -> (Vec<Identity>, Vec<(PathBuf, String)>) {
    let mut found = Vec::new();
    let mut skipped = Vec::new();
    for (class, class_dir) in class_dirs(dir) {
        for shard in fs::read_dir(&class_dir).into_iter().flatten().flatten() {
            for entry in fs::read_dir(shard.path()).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.extension().and_then(|x| x.to_str()) != Some("db") {
                    continue;
                }
                if class.starts_with(OBJECT_CLASS_PREFIX) {
                    // A Durable Object's file (`src/object/`): indexed when it has an alarm.
                    match ObjectFile::indexed_alarm(&path, durability) {
                        Ok(Some((id, at))) if layout::worker_path(dir, &class, &id) == path => {
                            found.push(Identity {
                                class: class.clone(),
                                id,
                                earliest: Some(at),
                            })
                        }
                        Ok(Some((id, _))) => skipped.push((
                            path,
                            format!("it holds {class}:{id}, whose file lives elsewhere"),
                        )),
                        Ok(None) => {}
                        Err(e) => skipped.push((path, e.to_string())),
                    }
                    continue;
                }
                match WorkerFile::identity(&path, durability) {
                    Ok(who)
                        if who.class == class
                            && layout::worker_path(dir, &who.class, &who.id) == path =>
                    {
                        found.push(who)
                    }
                    Ok(who) => skipped.push((
                        path,
                        format!(
                            "it holds {}:{}, whose file lives elsewhere",
                            who.class, who.id
                        ),
                    )),
                    Err(e) => skipped.push((path, e.to_string())),
                }
            }
        }
    }
    (found, skipped)
}

/// Records every worker found under `dir` in `catalog`.
pub fn rebuild(dir: &Path, durability: Durability, catalog: &Catalog) -> Result<Report> {
    let (found, skipped) = scan(dir, durability);
    let report = Report {
        workers: found.len() as u64,
        alarms: found.iter().filter(|w| w.earliest.is_some()).count() as u64,
        skipped,
        moved_aside: None,
    };
    let workers = found
        .into_iter()
        .map(|w| (w.class, w.id, w.earliest))
        .collect();
    catalog.call_blocking(Op::Rebuild { workers })?;
    Ok(report)
}

/// `durable-workers repair <dir>`: takes the directory (a damaged catalog is
/// moved aside first, with its sidecars) and rebuilds the catalog from the
/// worker files.
pub fn repair(dir: &Path, durability: Durability) -> Result<Report> {
    let mut moved_aside = None;
    let catalog = match Catalog::open(dir, durability) {
        Ok(c) => c,
        Err(Error::Corrupt { .. }) => {
            let stamp = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis())
                .unwrap_or(0);
            let from = dir.join(REGISTRY_FILE);
            let to = dir.join(format!("{REGISTRY_FILE}.damaged-{stamp}"));
            fs::rename(&from, &to)
                .map_err(|e| Error::io(format!("move {} aside", from.display()), e))?;
            for side in layout::sidecars(&from) {
                if side.exists() {
                    let mut name = to.as_os_str().to_owned();
                    name.push(
                        side.to_string_lossy()
                            .trim_start_matches(&*from.to_string_lossy()),
                    );
                    fs::rename(&side, PathBuf::from(name))
                        .map_err(|e| Error::io(format!("move {} aside", side.display()), e))?;
                }
            }
            moved_aside = Some(to);
            Catalog::open(dir, durability)?
        }
        Err(e) => return Err(e),
    };
    let mut report = rebuild(dir, durability, &catalog)?;
    catalog.close();
    report.moved_aside = moved_aside;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Reply;
    use crate::store::{Alarm, Batch};

    #[test]
    fn a_lost_catalog_is_rebuilt_from_the_files_and_a_stray_file_is_skipped() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let dir = tmp.path();
        let schema = crate::collections::Schema::default();
        for (id, alarm) in [("a", Some(500)), ("b", None)] {
            let batch = Batch {
                alarms: alarm
                    .map(|at| Alarm {
                        name: String::new(),
                        at,
                        attempt: 0,
                        scheduled: at,
                    })
                    .into_iter()
                    .collect(),
                ..Batch::default()
            };
            WorkerFile::create(
                &layout::worker_path(dir, "C", id),
                "C",
                id,
                Durability::Full,
                &schema,
                &batch,
            )?;
        }
        // b's file copied to where c's would be: it is b's, not c's.
        let c = layout::worker_path(dir, "C", "c");
        crate::files::create_dirs_synced(c.parent().ok_or(Error::Closed)?)?;
        fs::copy(layout::worker_path(dir, "C", "b"), &c).map_err(|e| Error::io("copy", e))?;
        let report = repair(dir, Durability::Full)?;
        assert_eq!(
            (report.workers, report.alarms, report.skipped.len()),
            (2, 1, 1)
        );
        assert_eq!(report.skipped[0].0, c);
        let catalog = Catalog::open(dir, Durability::Full)?;
        let ids = catalog.call_blocking(Op::List {
            class: "C".into(),
            prefix: String::new(),
            after: None,
            limit: 10,
        })?;
        assert_eq!(ids, Reply::Ids(vec!["a".into(), "b".into()]));
        let next = catalog.call_blocking(Op::AlarmNext {
            classes: vec!["C".into()],
        })?;
        assert_eq!(next, Reply::Next(Some(500)));
        Ok(())
    }

    /// One worker file, C:a, with an alarm at 500.
    fn one_worker(dir: &Path) -> Result<()> {
        let batch = Batch {
            alarms: vec![Alarm {
                name: String::new(),
                at: 500,
                attempt: 0,
                scheduled: 500,
            }],
            ..Batch::default()
        };
        let schema = crate::collections::Schema::default();
        let path = layout::worker_path(dir, "C", "a");
        WorkerFile::create(&path, "C", "a", Durability::Full, &schema, &batch)?;
        Ok(())
    }

    #[test]
    fn a_catalog_made_beside_worker_files_owes_a_rebuild_until_one_commits() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let dir = tmp.path();
        one_worker(dir)?;
        // Made, then closed before its rebuild (a crash between the two).
        let made = Catalog::open(dir, Durability::Full)?;
        assert!(made.needs_rebuild());
        made.close();
        let again = Catalog::open(dir, Durability::Full)?;
        assert!(again.needs_rebuild(), "the owed rebuild outlives the crash");
        rebuild(dir, Durability::Full, &again)?;
        again.close();
        let after = Catalog::open(dir, Durability::Full)?;
        assert!(!after.needs_rebuild());
        let next = after.call_blocking(Op::AlarmNext {
            classes: vec!["C".into()],
        })?;
        assert_eq!(next, Reply::Next(Some(500)));
        Ok(())
    }

    #[test]
    fn an_empty_catalog_file_beside_worker_files_owes_a_rebuild() -> Result<()> {
        // What a power cut leaves when the file's name was kept and its first
        // commit was not.
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let dir = tmp.path();
        one_worker(dir)?;
        fs::write(dir.join(REGISTRY_FILE), b"").map_err(|e| Error::io("write", e))?;
        assert!(Catalog::open(dir, Durability::Full)?.needs_rebuild());
        // Without worker files there is nothing to owe.
        let empty = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        assert!(!Catalog::open(empty.path(), Durability::Full)?.needs_rebuild());
        Ok(())
    }

    #[test]
    fn a_damaged_catalog_is_moved_aside() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let dir = tmp.path();
        fs::write(dir.join(REGISTRY_FILE), vec![9u8; 4096]).map_err(|e| Error::io("write", e))?;
        assert!(matches!(
            Catalog::open(dir, Durability::Full),
            Err(Error::Corrupt { .. })
        ));
        let report = repair(dir, Durability::Full)?;
        let aside = report.moved_aside.ok_or(Error::Closed)?;
        assert_eq!(
            fs::read(&aside).map_err(|e| Error::io("read", e))?,
            vec![9u8; 4096]
        );
        Catalog::open(dir, Durability::Full)?.close();
        Ok(())
    }
}
