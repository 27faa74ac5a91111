//! A segment: records of many workers in one file, named by the first and
//! last sequence numbers it holds (`<first>-<last>.seg`, 16 hex digits each).
//!
//! ```text
//! magic (8 bytes) | index length (u64 LE) | index | BLAKE3 of the index (32) | payloads
//! index entry: class, id (u32 LE length + bytes each), seq, prev (u64 LE),
//!              at (i64 LE), kind (u8), page size, pages after (u32 LE),
//!              payload offset, length (u64 LE), BLAKE3 of the payload (32)
//! payload: Image, Pages: (page number u32 BE, zeros at, zeros length u32 LE,
//!          the page without those zeros)* | Removed: nothing
//! ```
//!
//! The index has a hash of its own and every payload one, so damage is
//! found, and damage to a payload is pinned to its worker.

use std::fs;
use std::path::{Path, PathBuf};

use super::{Change, Record};
use crate::error::{Error, Result};
use crate::files;
use crate::wal::FRAME_HEADER;

const MAGIC: &[u8; 8] = b"DWSEG\x00\x00\x01";
pub const KIND_IMAGE: u8 = 1;
pub const KIND_PAGES: u8 = 2;
pub const KIND_REMOVED: u8 = 3;

/// One record as a segment's index lists it.
#[derive(Clone, Debug)]
pub struct Entry {
    pub class: String,
    pub id: String,
    pub seq: u64,
    pub prev: u64,
    pub at: i64,
    pub kind: u8,
    pub page_size: u32,
    pub db_pages: u32,
    pub offset: u64,
    pub len: u64,
    pub hash: [u8; 32],
}

/// About how many bytes a record adds to a segment.
pub fn size_of(r: &Record) -> usize {
    let payload = match &r.change {
        Change::Image(b) => b.len(),
        Change::Pages(p) => p.frames.len(),
        Change::Removed => 0,
    };
    payload + r.class.len() + r.id.len() + 100
}

/// Writes `records` as one segment in `dir`, synced before its name
/// appears; the bytes written.
pub fn write(dir: &Path, records: &[Record]) -> Result<u64> {
    let (first, last) = match (records.first(), records.last()) {
        (Some(f), Some(l)) => (f.seq, l.seq),
        _ => return Ok(0),
    };
    let mut index = Vec::new();
    let mut payloads = Vec::new();
    for r in records {
        let offset = payloads.len() as u64;
        let (kind, page_size, db_pages) = match &r.change {
            Change::Image(b) => {
                // A new worker's file is mostly free pages too: kept as its pages.
                let size = page_size_of(b);
                for (i, page) in b.chunks_exact(size).enumerate() {
                    put_page(&mut payloads, &(i as u32 + 1).to_be_bytes(), page);
                }
                (KIND_IMAGE, size as u32, (b.len() / size) as u32)
            }
            Change::Pages(p) => {
                let frame = FRAME_HEADER + p.page_size as usize;
                for f in p.frames.chunks_exact(frame) {
                    put_page(&mut payloads, &f[..4], &f[FRAME_HEADER..]);
                }
                (KIND_PAGES, p.page_size, p.db_pages)
            }
            Change::Removed => (KIND_REMOVED, 0, 0),
        };
        let len = payloads.len() as u64 - offset;
        let hash = blake3::hash(&payloads[offset as usize..]);
        put_str(&mut index, &r.class);
        put_str(&mut index, &r.id);
        index.extend_from_slice(&r.seq.to_le_bytes());
        index.extend_from_slice(&r.prev.to_le_bytes());
        index.extend_from_slice(&r.at.to_le_bytes());
        index.push(kind);
        index.extend_from_slice(&page_size.to_le_bytes());
        index.extend_from_slice(&db_pages.to_le_bytes());
        index.extend_from_slice(&offset.to_le_bytes());
        index.extend_from_slice(&len.to_le_bytes());
        index.extend_from_slice(hash.as_bytes());
    }
    let mut out = Vec::with_capacity(8 + 8 + index.len() + 32 + payloads.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(index.len() as u64).to_le_bytes());
    out.extend_from_slice(&index);
    out.extend_from_slice(blake3::hash(&index).as_bytes());
    out.extend_from_slice(&payloads);
    let name = format!("{first:016x}-{last:016x}.seg");
    let tmp = dir.join(format!("{name}.tmp"));
    let path = dir.join(&name);
    files::write_file(&tmp, &out, true)
        .map_err(|e| Error::io(format!("write {}", tmp.display()), e))?;
    fs::rename(&tmp, &path).map_err(|e| Error::io(format!("rename {}", path.display()), e))?;
    files::sync_dir(dir)?;
    Ok(out.len() as u64)
}

/// One log frame as a segment keeps it: its page number, the longest run of
/// zeros in its page (where and how long, to 8 bytes), and the page without
/// that run. A worker's pages are mostly free space, which SQLite keeps
/// zeroed, so most of a commit's bytes are not written twice.
fn put_page(out: &mut Vec<u8>, number: &[u8], page: &[u8]) {
    let (at, len) = longest_zeros(page);
    out.extend_from_slice(number); // big-endian, as the log has it
    out.extend_from_slice(&(at as u32).to_le_bytes());
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.extend_from_slice(&page[..at]);
    out.extend_from_slice(&page[at + len..]);
}

/// SQLite's largest page number: anything past it is damage, and would ask
/// for an absurd allocation.
pub const MAX_PAGES: usize = 0xffff_fffe;

/// A page size SQLite uses: a power of two from 512 to 65536.
pub fn valid_page_size(size: usize) -> bool {
    size.is_power_of_two() && (512..=65536).contains(&size)
}

/// A database file's page size, from its header (a whole file of bytes
/// that is not one is kept as a single page).
fn page_size_of(file: &[u8]) -> usize {
    let size = match file.get(16..18) {
        Some([1, 0]) => 65536,
        Some(&[hi, lo]) => usize::from(u16::from_be_bytes([hi, lo])),
        _ => 0,
    };
    if size >= 512 && file.len().is_multiple_of(size) && !file.is_empty() {
        size
    } else {
        file.len().max(1)
    }
}

/// The longest run of zero bytes in `page` made of whole 8-byte words.
fn longest_zeros(page: &[u8]) -> (usize, usize) {
    let (mut best, mut run_at, mut run) = ((0, 0), 0, 0);
    for (i, word) in page.chunks_exact(8).enumerate() {
        if word.iter().all(|&b| b == 0) {
            if run == 0 {
                run_at = i * 8;
            }
            run += 8;
            if run > best.1 {
                best = (run_at, run);
            }
        } else {
            run = 0;
        }
    }
    best
}

/// Puts a kept page back into `image`: the inverse of [`put_page`]. The
/// page's bytes, `Err` when the payload is not whole.
pub fn apply_pages(
    image: &mut Vec<u8>,
    page_size: usize,
    mut payload: &[u8],
) -> std::result::Result<(), String> {
    if !valid_page_size(page_size) {
        return Err(format!("a page size of {page_size} is not SQLite's"));
    }
    while !payload.is_empty() {
        let word = |b: &[u8], i: usize| b.get(i..i + 4).and_then(|s| <[u8; 4]>::try_from(s).ok());
        let (Some(no), Some(at), Some(len)) =
            (word(payload, 0), word(payload, 4), word(payload, 8))
        else {
            return Err("a page is cut short".into());
        };
        let no = u32::from_be_bytes(no) as usize;
        let (at, len) = (
            u32::from_le_bytes(at) as usize,
            u32::from_le_bytes(len) as usize,
        );
        let kept = page_size
            .checked_sub(len)
            .filter(|_| at + len <= page_size)
            .ok_or("a page's zeros do not fit it")?;
        let body = payload.get(12..12 + kept).ok_or("a page is cut short")?;
        if no == 0 || no > MAX_PAGES {
            return Err(format!("a record names page {no}"));
        }
        let end = no * page_size;
        if image.len() < end {
            image
                .try_reserve(end - image.len())
                .map_err(|_| format!("page {no} is past what can be held"))?;
            image.resize(end, 0);
        }
        let page = &mut image[end - page_size..end];
        page[..at].copy_from_slice(&body[..at]);
        page[at..at + len].fill(0);
        page[at + len..].copy_from_slice(&body[at..]);
        payload = &payload[12 + kept..];
    }
    Ok(())
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// A segment read back: its index, and its payloads (checked one by one
/// with [`Segment::payload`]).
pub struct Segment {
    pub path: PathBuf,
    pub entries: Vec<Entry>,
    payloads: Vec<u8>,
}

impl Segment {
    /// The payload of `e`, or why it cannot be trusted.
    pub fn payload(&self, e: &Entry) -> std::result::Result<&[u8], String> {
        let bytes = usize::try_from(e.offset)
            .ok()
            .zip(usize::try_from(e.offset + e.len).ok())
            .and_then(|(a, b)| self.payloads.get(a..b))
            .ok_or_else(|| format!("{} is cut short", self.path.display()))?;
        if blake3::hash(bytes).as_bytes() != &e.hash {
            return Err(format!(
                "record {} in {} does not match its hash: the segment is damaged",
                e.seq,
                self.path.display()
            ));
        }
        Ok(bytes)
    }
}

/// Reads a segment; an error when its index cannot be trusted.
pub fn read(path: &Path) -> Result<Segment> {
    let bytes = fs::read(path).map_err(|e| Error::io(format!("read {}", path.display()), e))?;
    let bad = |why: &str| Error::Backup {
        detail: format!("{} is damaged: {why}", path.display()),
    };
    if bytes.get(..8) != Some(&MAGIC[..]) {
        return Err(bad("it is not an archive segment"));
    }
    let len = bytes
        .get(8..16)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(u64::from_le_bytes)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| bad("its index is cut short"))?;
    let index = bytes
        .get(16..16 + len)
        .ok_or_else(|| bad("its index is cut short"))?;
    let hash = bytes
        .get(16 + len..16 + len + 32)
        .ok_or_else(|| bad("its index is cut short"))?;
    if blake3::hash(index).as_bytes()[..] != hash[..] {
        return Err(bad("its index does not match its hash"));
    }
    let mut r = Reader {
        bytes: index,
        at: 0,
    };
    let mut entries = Vec::new();
    while r.at < index.len() {
        let e = (|| {
            Some(Entry {
                class: r.string()?,
                id: r.string()?,
                seq: u64::from_le_bytes(r.array()?),
                prev: u64::from_le_bytes(r.array()?),
                at: i64::from_le_bytes(r.array()?),
                kind: r.array::<1>()?[0],
                page_size: u32::from_le_bytes(r.array()?),
                db_pages: u32::from_le_bytes(r.array()?),
                offset: u64::from_le_bytes(r.array()?),
                len: u64::from_le_bytes(r.array()?),
                hash: r.array()?,
            })
        })()
        .ok_or_else(|| bad("its index cannot be read"))?;
        entries.push(e);
    }
    Ok(Segment {
        path: path.to_path_buf(),
        entries,
        payloads: bytes[16 + len + 32..].to_vec(),
    })
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        let out = <[u8; N]>::try_from(self.bytes.get(self.at..self.at + N)?).ok()?;
        self.at += N;
        Some(out)
    }

    fn string(&mut self) -> Option<String> {
        let n = u32::from_le_bytes(self.array()?) as usize;
        let s = String::from_utf8(self.bytes.get(self.at..self.at + n)?.to_vec()).ok()?;
        self.at += n;
        Some(s)
    }
}

/// The segments in `to/log`, by first sequence number, with their last.
pub fn list(to: &Path) -> Vec<(u64, u64, PathBuf)> {
    let mut out: Vec<(u64, u64, PathBuf)> = fs::read_dir(to.join("log"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let (first, last) = name.strip_suffix(".seg")?.split_once('-')?;
            Some((
                u64::from_str_radix(first, 16).ok()?,
                u64::from_str_radix(last, 16).ok()?,
                e.path(),
            ))
        })
        .collect();
    out.sort();
    out
}

/// The sequence number after every one the destination holds.
pub fn next_seq(to: &Path) -> Result<u64> {
    let mut next = 1;
    for (_, last, _) in list(to) {
        next = next.max(last + 1);
    }
    // Every base, finished or not, is named by a number of its own.
    for e in fs::read_dir(to.join("base"))
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Some(seq) = e
            .file_name()
            .to_str()
            .and_then(|n| u64::from_str_radix(n, 16).ok())
        {
            next = next.max(seq + 1);
        }
    }
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_kept_without_its_zeros_comes_back_whole() {
        let size = 4096;
        let mut pages = Vec::new();
        let mut sparse = vec![0u8; size];
        sparse[..100].fill(7);
        sparse[4000..].fill(9);
        let full: Vec<u8> = (0..size).map(|i| (i % 251) as u8 + 1).collect();
        for (no, page) in [(3u32, sparse), (1, vec![0u8; size]), (2, full)] {
            let mut frame = no.to_be_bytes().to_vec();
            frame.resize(FRAME_HEADER, 0);
            frame.extend_from_slice(&page);
            pages.push((no, page, frame));
        }
        let mut payload = Vec::new();
        for (_, _, frame) in &pages {
            put_page(&mut payload, &frame[..4], &frame[FRAME_HEADER..]);
        }
        assert!(
            payload.len() < size + 200 + 200 + 3 * 12 + 104,
            "zeros are not kept"
        );
        let mut image = Vec::new();
        assert_eq!(apply_pages(&mut image, size, &payload), Ok(()));
        for (no, page, _) in &pages {
            let at = (*no as usize - 1) * size;
            assert_eq!(&image[at..at + size], &page[..], "page {no}");
        }
        assert!(apply_pages(&mut image, size, &payload[..payload.len() - 1]).is_err());
    }
}
