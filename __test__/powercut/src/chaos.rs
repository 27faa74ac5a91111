//! Chaos mode's choices, apart from any I/O: which unsynced writes reach the
//! disk at a cut, in which order, and which sectors of a torn one. A seeded
//! generator of our own keeps a seed meaning the same thing in every build (a
//! crate's generator may change its stream between versions).

use crate::pages::Op;

/// The unit a disk writes atomically: a torn write keeps some of these.
pub const SECTOR: u64 = 512;

/// splitmix64: small, fast, and good enough to pick subsets.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// True `num` times in `den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }

    /// Keeps each item with probability 1/2, in the original order.
    pub fn subset<T>(&mut self, items: Vec<T>) -> (Vec<T>, usize) {
        let total = items.len();
        let kept: Vec<T> = items.into_iter().filter(|_| self.chance(1, 2)).collect();
        let dropped = total - kept.len();
        (kept, dropped)
    }
}

/// What a cut does with one file's unsynced operations.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Applied in this order; a torn write appears as the sectors it kept.
    pub ops: Vec<Op>,
    pub applied: usize,
    pub torn: usize,
    pub dropped: usize,
}

/// Picks a random subset of `log`, shuffles it, and tears about a third of
/// the writes that span more than one sector: a torn write keeps a random
/// non-empty, strict subset of its sectors (boundaries at file offsets that
/// are multiples of 512, as a disk would split it).
pub fn plan(rng: &mut Rng, log: &[Op]) -> Plan {
    let (mut kept, dropped) = rng.subset(log.to_vec());
    rng.shuffle(&mut kept);
    let mut plan = Plan {
        dropped,
        ..Plan::default()
    };
    for op in kept {
        match op {
            Op::Write { off, data } if spans_sectors(off, data.len()) && rng.chance(1, 3) => {
                let pieces = sectors(off, &data);
                let mut keep: Vec<bool> = pieces.iter().map(|_| rng.chance(1, 2)).collect();
                let n = keep.iter().filter(|&&k| k).count();
                if n == 0 || n == keep.len() {
                    let i = rng.below(keep.len() as u64) as usize;
                    keep[i] = !keep[i];
                }
                for (piece, k) in pieces.into_iter().zip(keep) {
                    if k {
                        plan.ops.push(piece);
                    }
                }
                plan.torn += 1;
                plan.applied += 1;
            }
            op => {
                plan.ops.push(op);
                plan.applied += 1;
            }
        }
    }
    plan
}

fn spans_sectors(off: u64, len: usize) -> bool {
    len > 0 && off / SECTOR != (off + len as u64 - 1) / SECTOR
}

/// A write cut at sector boundaries of the file.
fn sectors(off: u64, data: &[u8]) -> Vec<Op> {
    let mut out = Vec::new();
    let end = off + data.len() as u64;
    let mut pos = off;
    while pos < end {
        let next = ((pos / SECTOR) + 1) * SECTOR;
        let stop = next.min(end);
        out.push(Op::Write {
            off: pos,
            data: data[(pos - off) as usize..(stop - off) as usize].to_vec(),
        });
        pos = stop;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log() -> Vec<Op> {
        (0..40u64)
            .map(|i| Op::Write {
                off: i * 3000 + 100,
                data: vec![i as u8 + 1; 3000],
            })
            .chain([Op::SetSize(50_000)])
            .collect()
    }

    #[test]
    fn the_same_seed_makes_the_same_plan() {
        let a = plan(&mut Rng::new(7), &log());
        let b = plan(&mut Rng::new(7), &log());
        assert_eq!(a, b);
        let c = plan(&mut Rng::new(8), &log());
        assert_ne!(a, c);
    }

    #[test]
    fn some_writes_are_kept_some_dropped_and_some_torn_at_sector_boundaries() {
        let p = plan(&mut Rng::new(42), &log());
        assert!(p.applied > 0 && p.dropped > 0, "{p:?}");
        assert_eq!(p.applied + p.dropped, log().len());
        assert!(p.torn > 0, "no torn write with this seed");
        for op in &p.ops {
            if let Op::Write { off, data } = op {
                // A piece of a torn write never crosses a sector boundary; a
                // whole write is one of the originals.
                let whole = log().contains(op);
                let in_one_sector = off / SECTOR == (off + data.len() as u64 - 1) / SECTOR;
                assert!(whole || in_one_sector, "{off} +{}", data.len());
            }
        }
    }

    #[test]
    fn sectors_split_at_absolute_offsets() {
        let pieces = sectors(500, &[1u8; 1100]);
        let bounds: Vec<(u64, usize)> = pieces
            .iter()
            .map(|op| match op {
                Op::Write { off, data } => (*off, data.len()),
                Op::SetSize(_) => (0, 0),
            })
            .collect();
        assert_eq!(bounds, vec![(500, 12), (512, 512), (1024, 512), (1536, 64)]);
    }
}
