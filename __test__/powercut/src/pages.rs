//! The unsynced data of one file: what readers see on top of the synced bytes
//! in the backing file, and the log of operations a sync (or a chaos cut)
//! replays onto it.
//!
//! Two representations of the same thing: dirty pages make reads cheap, the
//! log keeps each `write` as it was issued, which is what a chaos cut needs to
//! apply some writes and not others, or only some sectors of one.

use std::collections::HashMap;
use std::io;

pub const PAGE: u64 = 4096;

/// One unsynced change, in the order it was made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Write {
        off: u64,
        data: Vec<u8>,
    },
    /// `ftruncate`, or `fallocate` growing the file.
    SetSize(u64),
}

/// Reads synced bytes of the backing file at an offset, filling the buffer
/// (zeros past its end).
pub type Base<'a> = &'a mut dyn FnMut(u64, &mut [u8]) -> io::Result<()>;

#[derive(Debug)]
pub struct Pending {
    size: u64,
    /// Backing bytes at or past this offset are hidden (read as zeros): the
    /// smallest size the file has had since its last sync. Shrinking and then
    /// growing a file must not bring old bytes back.
    base_limit: u64,
    /// Full page images; bytes at or past `size` are always zero.
    pages: HashMap<u64, Box<[u8]>>,
    log: Vec<Op>,
}

impl Pending {
    pub fn new(synced_size: u64) -> Self {
        Pending {
            size: synced_size,
            base_limit: synced_size,
            pages: HashMap::new(),
            log: Vec::new(),
        }
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn is_dirty(&self) -> bool {
        !self.log.is_empty()
    }

    pub fn log(&self) -> &[Op] {
        &self.log
    }

    /// Bytes written since the last sync (overwrites counted each time).
    pub fn pending_bytes(&self) -> u64 {
        self.log
            .iter()
            .map(|op| match op {
                Op::Write { data, .. } => data.len() as u64,
                Op::SetSize(_) => 0,
            })
            .sum()
    }

    /// The log has reached the backing file: it now holds what readers see.
    pub fn mark_synced(&mut self) {
        self.pages.clear();
        self.log.clear();
        self.base_limit = self.size;
    }

    fn load_page(&self, index: u64, base: Base<'_>) -> io::Result<Box<[u8]>> {
        let mut page = vec![0u8; PAGE as usize].into_boxed_slice();
        let start = index * PAGE;
        if start < self.base_limit {
            let visible = (self.base_limit - start).min(PAGE) as usize;
            base(start, &mut page[..visible])?;
        }
        Ok(page)
    }

    pub fn read(&self, off: u64, len: usize, base: Base<'_>) -> io::Result<Vec<u8>> {
        if off >= self.size {
            return Ok(Vec::new());
        }
        let end = self.size.min(off.saturating_add(len as u64));
        let mut out = vec![0u8; (end - off) as usize];
        let mut pos = off;
        while pos < end {
            let index = pos / PAGE;
            let in_page = (pos % PAGE) as usize;
            let n = ((PAGE - pos % PAGE).min(end - pos)) as usize;
            let dst = &mut out[(pos - off) as usize..(pos - off) as usize + n];
            if let Some(page) = self.pages.get(&index) {
                dst.copy_from_slice(&page[in_page..in_page + n]);
            } else if pos < self.base_limit {
                let visible = ((self.base_limit - pos) as usize).min(n);
                base(pos, &mut dst[..visible])?;
            }
            pos += n as u64;
        }
        Ok(out)
    }

    pub fn write(&mut self, off: u64, data: &[u8], base: Base<'_>) -> io::Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let end = off
            .checked_add(data.len() as u64)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EFBIG))?;
        let mut pos = off;
        while pos < end {
            let index = pos / PAGE;
            let in_page = (pos % PAGE) as usize;
            let n = ((PAGE - pos % PAGE).min(end - pos)) as usize;
            if !self.pages.contains_key(&index) {
                // A page written whole needs none of the old bytes.
                let page = if n == PAGE as usize {
                    vec![0u8; PAGE as usize].into_boxed_slice()
                } else {
                    self.load_page(index, base)?
                };
                self.pages.insert(index, page);
            }
            if let Some(page) = self.pages.get_mut(&index) {
                let src = (pos - off) as usize;
                page[in_page..in_page + n].copy_from_slice(&data[src..src + n]);
            }
            pos += n as u64;
        }
        self.size = self.size.max(end);
        self.log.push(Op::Write {
            off,
            data: data.to_vec(),
        });
        Ok(())
    }

    pub fn set_size(&mut self, size: u64) {
        if size < self.size {
            self.pages.retain(|&index, _| index * PAGE < size);
            if size % PAGE != 0 {
                if let Some(page) = self.pages.get_mut(&(size / PAGE)) {
                    page[(size % PAGE) as usize..].fill(0);
                }
            }
            self.base_limit = self.base_limit.min(size);
        }
        self.size = size;
        self.log.push(Op::SetSize(size));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A backing file held in memory, and the overlay over it.
    struct Fixture {
        backing: Vec<u8>,
        pending: Pending,
    }

    impl Fixture {
        fn new(backing: &[u8]) -> Self {
            Fixture {
                backing: backing.to_vec(),
                pending: Pending::new(backing.len() as u64),
            }
        }

        fn base(backing: &[u8]) -> impl FnMut(u64, &mut [u8]) -> io::Result<()> + '_ {
            move |off, buf| {
                buf.fill(0);
                let off = off as usize;
                if off < backing.len() {
                    let n = buf.len().min(backing.len() - off);
                    buf[..n].copy_from_slice(&backing[off..off + n]);
                }
                Ok(())
            }
        }

        fn write(&mut self, off: u64, data: &[u8]) {
            let mut base = Self::base(&self.backing);
            self.pending.write(off, data, &mut base).expect("write");
        }

        fn view(&self) -> Vec<u8> {
            let mut base = Self::base(&self.backing);
            self.pending
                .read(0, usize::MAX / 2, &mut base)
                .expect("read")
        }

        /// What the backing file holds once the log is replayed onto it.
        fn replay(&self) -> Vec<u8> {
            let mut file = self.backing.clone();
            for op in self.pending.log() {
                match op {
                    Op::Write { off, data } => {
                        let end = *off as usize + data.len();
                        if file.len() < end {
                            file.resize(end, 0);
                        }
                        file[*off as usize..end].copy_from_slice(data);
                    }
                    Op::SetSize(size) => file.resize(*size as usize, 0),
                }
            }
            file
        }
    }

    #[test]
    fn reads_see_writes_over_the_synced_bytes() {
        let mut f = Fixture::new(b"hello world");
        f.write(6, b"there");
        assert_eq!(f.view(), b"hello there");
        f.write(11, b"!");
        assert_eq!(f.view(), b"hello there!");
        assert_eq!(f.view(), f.replay());
        assert_eq!(f.pending.pending_bytes(), 6);
    }

    #[test]
    fn a_sparse_write_far_past_the_end_reads_zeros_in_between() {
        let mut f = Fixture::new(b"abc");
        f.write(3 * PAGE + 10, b"xyz");
        let view = f.view();
        assert_eq!(view.len() as u64, 3 * PAGE + 13);
        assert_eq!(&view[..3], b"abc");
        assert!(view[3..(3 * PAGE + 10) as usize].iter().all(|&b| b == 0));
        assert_eq!(f.view(), f.replay());
    }

    #[test]
    fn shrinking_then_growing_does_not_bring_old_bytes_back() {
        let old: Vec<u8> = (0..3 * PAGE).map(|i| (i % 251 + 1) as u8).collect();
        let mut f = Fixture::new(&old);
        f.pending.set_size(100);
        f.pending.set_size(2 * PAGE);
        let view = f.view();
        assert_eq!(&view[..100], &old[..100]);
        assert!(view[100..].iter().all(|&b| b == 0));
        // A write into a page whose tail was cut must not revive it either.
        f.write(PAGE + 5, b"z");
        let view = f.view();
        assert!(view[100..(PAGE + 5) as usize].iter().all(|&b| b == 0));
        assert_eq!(view[(PAGE + 5) as usize], b'z');
        assert_eq!(f.view(), f.replay());
    }

    #[test]
    fn truncating_inside_a_dirty_page_zeroes_its_tail() {
        let mut f = Fixture::new(b"");
        f.write(0, &[7u8; 100]);
        f.pending.set_size(10);
        f.pending.set_size(100);
        let view = f.view();
        assert_eq!(&view[..10], &[7u8; 10]);
        assert!(view[10..].iter().all(|&b| b == 0));
        assert_eq!(f.view(), f.replay());
    }

    #[test]
    fn whole_page_writes_and_partial_ones_across_pages() {
        let old: Vec<u8> = (0..2 * PAGE).map(|i| (i % 7) as u8).collect();
        let mut f = Fixture::new(&old);
        f.write(0, &[1u8; PAGE as usize]);
        f.write(PAGE - 2, &[9u8; 4]);
        assert_eq!(f.view(), f.replay());
        assert_eq!(f.view()[(PAGE + 2) as usize], old[(PAGE + 2) as usize]);
    }

    #[test]
    fn marking_synced_clears_the_log() {
        let mut f = Fixture::new(b"v1");
        f.write(0, b"v3");
        assert!(f.pending.is_dirty());
        f.backing = f.replay();
        f.pending.mark_synced();
        assert!(!f.pending.is_dirty());
        assert_eq!(f.view(), b"v3");
    }
}
