//! The sum of shard lines (`queens sum`): every shard of one sharding there exactly once,
//! the lines agreeing on the board and the number of shards, the total in checked
//! arithmetic, the classes from the lines' turn-fixed points where they have those; which
//! builds, tiers, CPUs and hosts counted them (one build only, unless mixing is allowed);
//! and a digest of the counts summed.
//!
//! The digest is the SHA-256 of one text line per shard, in the order of the shard
//! indices, `N INDEX/COUNT SOLUTIONS FUNDAMENTAL TURN_FIXED` and a newline (a count a line
//! lacks written `-`): the counted fields only, so the same counts give the same digest
//! whatever order the lines came in and whatever their provenance or timings say.

use super::count::ShardCount;
use super::provenance::{Origins, tally_text};
use crate::solver::{Counts, PartsError};
use std::fmt::Write as _;

/// Why shard lines do not add up to a total.
#[derive(Debug, thiserror::Error)]
pub enum SumError {
    /// A line is not a shard count.
    #[error("line {line}: not a shard count: {source}")]
    Line {
        /// Its number, from 1.
        line: usize,
        /// Why.
        source: serde_json::Error,
    },
    /// A line counts another board or another number of shards than the lines before it.
    #[error(
        "line {line}: n {n} with {count} shards, but earlier lines have n {first_n} with \
         {first_count} shards"
    )]
    Mismatch {
        /// Its number, from 1.
        line: usize,
        /// Its board size.
        n: u32,
        /// Its number of shards.
        count: u32,
        /// The earlier lines' board size.
        first_n: u32,
        /// The earlier lines' number of shards.
        first_count: u32,
    },
    /// A line names a shard beyond its number of shards.
    #[error("line {line}: shard {index} of {count} does not exist")]
    NoSuchShard {
        /// Its number, from 1.
        line: usize,
        /// The shard's index.
        index: u32,
        /// The number of shards.
        count: u32,
    },
    /// No line was given.
    #[error("no shard counts given")]
    Empty,
    /// Shards are missing or repeated: each list named as ranges of indices.
    #[error("n {n} with {shards} shards: {gaps}")]
    Incomplete {
        /// Board size.
        n: u32,
        /// Number of shards.
        shards: u32,
        /// Which shards are missing or repeated.
        gaps: Gaps,
    },
    /// The lines come from more than one build, and mixing was not allowed.
    #[error(
        "n {n} with {shards} shards: the lines come from {} builds: {}; sum them anyway \
         with --allow-mixed-builds",
        .builds.len(),
        tally_text(builds)
    )]
    MixedBuilds {
        /// Board size.
        n: u32,
        /// Number of shards.
        shards: u32,
        /// Lines per build (`unknown` for lines that do not say).
        builds: std::collections::BTreeMap<String, u64>,
    },
    /// The lines' counts do not add up to a total (too large, or parts split in different
    /// ways: some with `fundamental`, others with `turn_fixed`).
    #[error("n {n} with {shards} shards: {source}")]
    Parts {
        /// Board size.
        n: u32,
        /// Number of shards.
        shards: u32,
        /// Why.
        source: PartsError,
    },
}

/// The total of a complete set of shard lines.
#[derive(Clone, Debug, PartialEq)]
pub struct Total {
    /// Board size.
    pub n: u32,
    /// Number of shards summed.
    pub shards: u32,
    /// Total solutions.
    pub solutions: u64,
    /// Total symmetry classes, when every shard had them or every shard had turn-fixed
    /// points (then found from those).
    pub fundamental: Option<u64>,
    /// The SHA-256 of the counts summed, in hex (see the module's doc).
    pub digest: String,
    /// Which builds, tiers, CPUs and hosts counted the shards.
    pub origins: Origins,
}

/// Shards missing or repeated among a sharding's lines, as ranges of indices (a
/// sharding of a billion parts with one line has one missing range, not a billion indices).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Gaps {
    /// Shards without a line.
    pub missing: Indices,
    /// Shards with more than one line, all with the same counts.
    pub repeated: Indices,
    /// Shards with lines whose counts differ.
    pub conflicting: Indices,
}

impl Gaps {
    /// Whether every shard came exactly once.
    fn is_empty(&self) -> bool {
        [&self.missing, &self.repeated, &self.conflicting]
            .iter()
            .all(|list| list.is_empty())
    }
}

impl std::fmt::Display for Gaps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let lists = [
            ("missing", &self.missing),
            ("repeated with the same counts", &self.repeated),
            ("repeated with different counts", &self.conflicting),
        ];
        let mut first = true;
        for (what, list) in lists.into_iter().filter(|(_, l)| !l.is_empty()) {
            if !first {
                f.write_str("; ")?;
            }
            first = false;
            let noun = if list.len() == 1 { "shard" } else { "shards" };
            write!(f, "{} {noun} {what}: {list}", list.len())?;
        }
        Ok(())
    }
}

/// Ranges of a list of indices shown before the rest is only counted.
const SHOWN_RANGES: usize = 20;

/// Shard indices in increasing order, kept as inclusive ranges; shown as `3, 5-9, 12`
/// (the first `SHOWN_RANGES` ranges, then how many more).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Indices {
    /// The ranges, first and last index, in increasing order, none touching another.
    pub ranges: Vec<(u32, u32)>,
}

impl Indices {
    /// Adds the indices `from..to`, all above those already held.
    fn extend(&mut self, from: u32, to: u32) {
        if from < to {
            self.push_range(from, to - 1);
        }
    }

    /// Adds `index`, above those already held.
    fn push(&mut self, index: u32) {
        self.push_range(index, index);
    }

    /// Adds `from..=to`, above the indices already held.
    fn push_range(&mut self, from: u32, to: u32) {
        match self.ranges.last_mut() {
            Some((_, last)) if from == *last + 1 => *last = to,
            _ => self.ranges.push((from, to)),
        }
    }

    /// How many indices it holds.
    pub fn len(&self) -> u64 {
        let sizes = self.ranges.iter().map(|&(a, b)| u64::from(b - a) + 1);
        sizes.sum()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
}

impl std::fmt::Display for Indices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, &(from, to)) in self.ranges.iter().take(SHOWN_RANGES).enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            if from == to {
                write!(f, "{from}")?;
            } else {
                write!(f, "{from}-{to}")?;
            }
        }
        if self.ranges.len() > SHOWN_RANGES {
            write!(f, " and {} more ranges", self.ranges.len() - SHOWN_RANGES)?;
        }
        Ok(())
    }
}

/// Shard lines added up one at a time, in any order (a million lines take tens of MiB:
/// each shard's counts and index, nothing of the line kept); [`Summer::total`] checks that
/// every shard came exactly once.
#[derive(Debug, Default)]
pub struct Summer {
    /// The first line's board size and number of shards.
    first: Option<(u32, u32)>,
    /// Each line's shard and counts, in the order read.
    shards: Vec<(u32, Counts)>,
    /// Lines read, blank ones included.
    lines: usize,
    /// Where the lines were counted.
    origins: Origins,
    /// Whether lines of different builds may be summed.
    allow_mixed_builds: bool,
}

impl Summer {
    /// A summer that refuses lines of different builds (as [`Summer::default`]) or, with
    /// `allow_mixed_builds`, sums them and reports them.
    pub fn new(allow_mixed_builds: bool) -> Summer {
        Summer {
            allow_mixed_builds,
            ..Summer::default()
        }
    }

    /// Adds the next line (blank lines are skipped); fails on a line that is not a shard
    /// count, or that counts another board or sharding than the lines before it.
    pub fn add(&mut self, line: &str) -> Result<(), SumError> {
        self.lines += 1;
        let number = self.lines;
        if line.trim().is_empty() {
            return Ok(());
        }
        let c: ShardCount = serde_json::from_str(line).map_err(|source| SumError::Line {
            line: number,
            source,
        })?;
        let key = (c.n, c.shard.count);
        match self.first {
            None => self.first = Some(key),
            Some(f) if f != key => {
                return Err(SumError::Mismatch {
                    line: number,
                    n: c.n,
                    count: c.shard.count,
                    first_n: f.0,
                    first_count: f.1,
                });
            }
            Some(_) => {}
        }
        if c.shard.index >= c.shard.count.max(1) {
            return Err(SumError::NoSuchShard {
                line: number,
                index: c.shard.index,
                count: c.shard.count,
            });
        }
        let counts = Counts {
            solutions: c.solutions,
            fundamental: c.fundamental,
            turn_fixed: c.turn_fixed,
        };
        self.shards.push((c.shard.index, counts));
        self.origins.add(&c.provenance, c.recounted);
        Ok(())
    }

    /// The total, when every shard of the sharding came exactly once; else which shards
    /// are missing or repeated (and whether their repeats agree), by index.
    pub fn total(mut self) -> Result<Total, SumError> {
        let (n, shards) = self.first.ok_or(SumError::Empty)?;
        // Stable: a shard's lines stay in the order read.
        self.shards.sort_by_key(|&(index, _)| index);
        let mut gaps = Gaps::default();
        let mut expected = 0;
        for group in self.shards.chunk_by(|a, b| a.0 == b.0) {
            let (index, counts) = group[0];
            gaps.missing.extend(expected, index);
            expected = index + 1;
            if group.len() > 1 {
                if group.iter().all(|&(_, c)| c == counts) {
                    gaps.repeated.push(index);
                } else {
                    gaps.conflicting.push(index);
                }
            }
        }
        gaps.missing.extend(expected, shards.max(1));
        if !gaps.is_empty() {
            return Err(SumError::Incomplete { n, shards, gaps });
        }
        let parts = self.shards.iter().map(|&(_, counts)| counts);
        let total = Counts::whole(parts).map_err(|source| SumError::Parts { n, shards, source })?;
        if self.origins.builds.len() > 1 && !self.allow_mixed_builds {
            let builds = self.origins.builds;
            return Err(SumError::MixedBuilds { n, shards, builds });
        }
        Ok(Total {
            n,
            shards,
            solutions: total.solutions,
            fundamental: total.fundamental,
            digest: digest(n, shards, &self.shards),
            origins: self.origins,
        })
    }
}

/// The SHA-256, in hex, of the canonical text of `parts` (each shard once, in order of
/// index) of n with `shards` shards: see the module's doc.
fn digest(n: u32, shards: u32, parts: &[(u32, Counts)]) -> String {
    let mut hash = ring::digest::Context::new(&ring::digest::SHA256);
    let mut line = String::new();
    let or_dash = |count: Option<u64>| count.map_or("-".to_string(), |c| c.to_string());
    for (index, counts) in parts {
        line.clear();
        let (fundamental, turn_fixed) = (or_dash(counts.fundamental), or_dash(counts.turn_fixed));
        let solutions = counts.solutions;
        // Writing into a String cannot fail.
        let _ = writeln!(
            line,
            "{n} {index}/{shards} {solutions} {fundamental} {turn_fixed}"
        );
        hash.update(line.as_bytes());
    }
    let sum = hash.finish();
    sum.as_ref().iter().fold(String::new(), |mut hex, byte| {
        let _ = write!(hex, "{byte:02x}");
        hex
    })
}

/// Sums shard lines (blank lines skipped), in any order. Fails, naming them, when shards
/// are missing or repeated, when lines disagree on n or on the number of shards, or when
/// they come from different builds (see [`Summer::new`] to allow that).
pub fn sum<I: IntoIterator<Item = String>>(lines: I) -> Result<Total, SumError> {
    let mut summer = Summer::default();
    for line in lines {
        summer.add(&line)?;
    }
    summer.total()
}
