//! Lexicographic enumeration in lockstep lanes: the subtrees below one prefix task, cut a
//! few rows deeper, searched sixteen at a time in SIMD registers, their boards buffered per
//! subtree and handed to the sink in lexicographic order.
//!
//! A scalar search branches on data at every queen it places and mispredicts most of those
//! branches: that, not the bit arithmetic, is what a board costs. Here every lane takes one
//! step of its own depth-first search per round without branching, as the count's lanes do
//! (`count/lanes.rs`), but over contiguous rows and with each completed board written out:
//! a lane reaching the last row reports its board, which goes to its subtree's buffer. The
//! subtrees are taken in order and at most [`WINDOW`] ahead of the first unfinished one, so
//! the buffers stay small; a finished subtree at the head goes to the sink at once.
//!
//! Why this is not the count's lane engine (`count/lanes.rs`), though both keep the same
//! structure-of-arrays state and share `lane.rs`: here the rows are contiguous (the count's
//! boards have fixed rows between free ones, each lane carrying its gaps), every completed
//! board is written out (the count only adds one per lane), and the diagonal masks keep less
//! room (the count's boards span more rows). Folding both into one step would put the gaps'
//! variable shifts and the board output into both hot loops.
//!
//! One piece of about 500 lines: the lanes, the walk that hands them their roots and the
//! window that puts their boards back in order only work together.
//!
//! Only plain questions take this path (no fixed queens, every solution, one shard): what
//! large downloads ask. The others, and each task's first subtree (the one a resume point
//! falls in, or else its first, so that its boards go out as they are found), are searched
//! by the scalar engine (`search.rs`), which decides which path a task takes.

use super::geometry::{MAX, Masks, full_mask};
use super::lane::LANES;
use super::simd::{PerTier, Tier};
use super::sink::Sink;
use std::collections::VecDeque;
use std::ops::ControlFlow;

/// Where column 0 sits in the diagonal masks. Backing up shifts a mask back, so it keeps
/// every bit that may matter again: a lane's free rows span at most `MAX_FREE - 1` rows,
/// so `d2` never drops below bit `OFFSET - 15 >= 0` and `d1` never passes bit
/// `32 + OFFSET + 15 <= 63` (bits of `d1` right of the board are cleared at the start).
const OFFSET: u32 = 16;

/// Most free rows of a lane: the columns of all but the last two are packed, 5 bits each,
/// in one word.
const MAX_FREE: usize = 14;

/// Rows below a task's prefix at which the lanes' subtrees start (when the board leaves
/// room): hundreds of subtrees per task, so that sixteen lanes stay busy.
const EXTRA_ROWS: usize = 3;

/// Subtrees started ahead of the first unfinished one; lanes wait beyond it, so the buffers
/// hold at most this many subtrees' boards.
const WINDOW: u64 = 4 * LANES as u64;

/// Rounds between checks for finished lanes.
const BURST: u32 = 16;

/// Bursts between polls of the sink: 4,096 lane steps, as often as the scalar search polls.
const POLL: u32 = 16;

/// Lane id of an idle lane.
const IDLE: u64 = u64::MAX;

/// The depth at which the lanes' subtrees start below a prefix of length `depth` on an
/// `n`×`n` board; `None` when the lanes cannot take it (too few rows left below it).
pub(super) fn subtree_depth(n: usize, depth: usize) -> Option<usize> {
    let at = (depth + EXTRA_ROWS)
        .max(n.saturating_sub(MAX_FREE))
        .min(n.saturating_sub(2));
    (n >= 4 && at > depth).then_some(at)
}

/// The lanes' state, one array element per lane.
#[repr(C, align(64))]
struct BoardLanes {
    /// Rows the lane has placed below its subtree's root.
    at: [u64; LANES],
    cols: [u64; LANES],
    d1: [u64; LANES],
    d2: [u64; LANES],
    /// Columns still to try in the lane's row.
    avail: [u64; LANES],
    /// The columns placed below the root, the latest in the low 5 bits.
    placed: [u64; LANES],
    /// After a round: the column tried (one bit) and, in the high half, the last row's.
    last: [u64; LANES],
    /// The subtree each lane searches ([`IDLE`] for none).
    id: [u64; LANES],
}

impl BoardLanes {
    /// Gives lane `i` the subtree `id` whose root row has the attack masks `m`.
    fn load(&mut self, i: usize, m: Masks, id: u64, full: u64) {
        self.at[i] = 0;
        self.cols[i] = u64::from(m.cols);
        // Diagonal squares right of the board never come back onto it going down.
        self.d1[i] = (u64::from(m.d1) & full) << OFFSET;
        self.d2[i] = u64::from(m.d2) << OFFSET;
        self.avail[i] = !u64::from(m.taken()) & full;
        self.placed[i] = 0;
        self.id[i] = id;
    }

    /// Leaves lane `i` idle: done at its root, it stays put.
    fn idle(&mut self, i: usize) {
        self.avail[i] = 0;
        self.at[i] = 0;
        self.id[i] = IDLE;
    }

    /// The lanes holding a subtree they have searched whole (bit i for lane i).
    #[inline(always)]
    fn finished(&self) -> u32 {
        let mut done = 0u32;
        for i in 0..LANES {
            let over = (self.avail[i] | self.at[i]) == 0 && self.id[i] != IDLE;
            done |= u32::from(over) << i;
        }
        done
    }

    /// One round: every lane places its next queen or backs up a row; a lane back at its
    /// root with nothing left stays put. A child is entered only when its row and the row
    /// after it keep a free square, and the row above the last is not entered: its free
    /// square, if any, completes a board. Returns the lanes that completed one (bit i for
    /// lane i), whose columns of the last two rows are then in `last`. `LZCNT`: a lane's
    /// column is found by counting leading zeros rather than by a population count.
    #[inline(always)]
    fn step<const LZCNT: bool>(&mut self, full: u64, stop: u64) -> u32 {
        let mut hits = 0u32;
        for i in 0..LANES {
            let (at, avail, placed) = (self.at[i], self.avail[i], self.placed[i]);
            let (cols, d1, d2) = (self.cols[i], self.d1[i], self.d2[i]);
            // Forward: the lowest column left, into the next row.
            let bit = avail & avail.wrapping_neg();
            let fc = cols | bit;
            let f1 = (d1 | bit << OFFSET) << 1;
            let f2 = (d2 | bit << OFFSET) >> 1;
            let child = !(fc | (f1 | f2) >> OFFSET) & full;
            let grand = !(fc | (f1 << 1 | f2 >> 1) >> OFFSET) & full;
            let forward = avail != 0;
            let descend = forward & (child != 0) & (grand != 0) & (at != stop);
            let hit = forward & (child != 0) & (at == stop);
            // Backward: undo the latest placement, keep the columns after it.
            let back = 1u64 << (placed & 31);
            let bc = cols ^ back;
            let b1 = (d1 >> 1) ^ back << OFFSET;
            let b2 = (d2 << 1) ^ back << OFFSET;
            let bavail = !(bc | (b1 | b2) >> OFFSET) & full & (back << 1).wrapping_neg();
            let go_back = !forward & (at != 0);
            self.last[i] = bit | child << 32;
            hits |= u32::from(hit) << i;
            // Written out here, not called from a shared helper: through a function the
            // compiler no longer turned these picks into selects across the lanes (Count in
            // AVX2 lanes measured 2.5x slower that way).
            let pick = |ahead: u64, behind: u64, here: u64| {
                if descend {
                    ahead
                } else if go_back {
                    behind
                } else {
                    here
                }
            };
            // AVX-512CD counts leading zeros per lane; AVX2 has no such instruction, and
            // a population count (a table lookup per nibble there) is cheaper than its
            // emulation: n = 16 in one thread, 2.1-2.6 M boards/s against 1.5-2.1.
            let column = if LZCNT {
                63u64.wrapping_sub(u64::from(bit.leading_zeros()))
            } else {
                u64::from(bit.wrapping_sub(1).count_ones())
            };
            self.at[i] = pick(at + 1, at.wrapping_sub(1), at);
            self.cols[i] = pick(fc, bc, cols);
            self.d1[i] = pick(f1, b1, d1);
            self.d2[i] = pick(f2, b2, d2);
            self.avail[i] = pick(child, bavail, avail ^ bit);
            self.placed[i] = pick(placed << 5 | column, placed >> 5, placed);
        }
        hits
    }
}

/// One subtree in the window: its root's columns and the boards found below it so far.
struct Subtree {
    root: [u8; MAX],
    boards: Vec<u8>,
    done: bool,
}

/// The roots of the subtrees at one depth below a prefix, in lexicographic order, with the
/// attack masks of their next row.
struct Roots {
    /// First row below the prefix.
    from: usize,
    /// Depth of the roots.
    depth: usize,
    full: u32,
    /// Nodes a call of [`Roots::next`] may walk.
    budget: u32,
    /// The row whose columns `left` holds next.
    row: usize,
    columns: [u8; MAX],
    /// Per row, the columns not yet tried below the current node above it.
    left: [u32; MAX],
    masks: [Masks; MAX],
}

/// What [`Roots::next`] found.
enum Found {
    /// A root: its columns and the masks of the row below it.
    Root([u8; MAX], Masks),
    /// The node budget ran out first; [`Roots::at`] names where the walk goes on.
    Pending,
    /// No root is left.
    Done,
}

/// Nodes [`Roots::next`] walks before it gives its caller a chance to poll.
const ROOTS_BUDGET: u32 = 4096;

impl Roots {
    /// The roots at `depth` below the peaceful `prefix` with masks `m` (`depth` greater than
    /// its length), only those after the root `after[..depth]` when given (`after` starts
    /// with the prefix).
    fn new(n: usize, prefix: &[u8], m: Masks, depth: usize, after: Option<&[u8]>) -> Roots {
        let from = prefix.len();
        let full = full_mask(n as u32);
        let mut roots = Roots {
            from,
            depth,
            full,
            budget: ROOTS_BUDGET,
            row: from,
            columns: [0; MAX],
            left: [0; MAX],
            masks: [Masks::EMPTY; MAX],
        };
        roots.columns[..from].copy_from_slice(prefix);
        roots.masks[from] = m;
        roots.left[from] = full & !m.taken();
        let Some(after) = after else {
            return roots;
        };
        // Walk down `after`'s path, leaving each row the columns after its column, as far as
        // the path is peaceful; the walk goes on from the deepest row reached.
        for (row, &column) in after.iter().enumerate().take(depth).skip(from) {
            let free = full & !roots.masks[row].taken();
            let column = u32::from(column);
            roots.left[row] = free & !(((2u64 << column) - 1) as u32);
            roots.row = row;
            let bit = 1u32 << column;
            if free & bit == 0 || row + 1 == depth {
                break;
            }
            roots.columns[row] = column as u8;
            roots.masks[row + 1] = roots.masks[row].child(bit, 1);
        }
        roots
    }

    /// The next root, unless the walk takes more than its budget of nodes to reach it.
    fn next(&mut self) -> Found {
        for _ in 0..self.budget {
            let avail = self.left[self.row];
            if avail == 0 {
                if self.row == self.from {
                    return Found::Done;
                }
                self.row -= 1;
                continue;
            }
            let bit = avail & avail.wrapping_neg();
            self.left[self.row] = avail ^ bit;
            self.columns[self.row] = bit.trailing_zeros() as u8;
            let child = self.masks[self.row].child(bit, 1);
            if self.row + 1 == self.depth {
                return Found::Root(self.columns, child);
            }
            self.row += 1;
            self.masks[self.row] = child;
            self.left[self.row] = self.full & !child.taken();
        }
        Found::Pending
    }

    /// The node the walk enters next, as the columns of its rows: every root before its
    /// subtree has been handed out, none in it or after it. `None` once the walk is done.
    fn at(&mut self) -> Option<&[u8]> {
        while self.left[self.row] == 0 {
            if self.row == self.from {
                return None;
            }
            self.row -= 1;
        }
        let next = self.left[self.row].trailing_zeros() as u8;
        self.columns[self.row] = next;
        Some(&self.columns[..=self.row])
    }
}

/// The first root at `depth` below the peaceful `prefix` with masks `m`; `None` when there
/// is none.
pub(super) fn first_root(n: usize, prefix: &[u8], m: Masks, depth: usize) -> Option<Vec<u8>> {
    let mut roots = Roots::new(n, prefix, m, depth, None);
    loop {
        match roots.next() {
            Found::Root(root, _) => return Some(root[..depth].to_vec()),
            Found::Pending => continue,
            Found::Done => return None,
        }
    }
}

/// Pushes into `sink`, in lexicographic order, every board below the roots at `depth` under
/// `prefix` (whose masks are `m`; only roots after `after[..depth]` when given), at least two
/// rows above the last, searched in lanes run in tier `simd`. Returns `Break` when the sink
/// stopped the search.
pub(super) fn enumerate_roots<S: Sink>(
    n: usize,
    prefix: &[u8],
    m: Masks,
    depth: usize,
    after: Option<&[u8]>,
    simd: Tier,
    sink: &mut S,
) -> ControlFlow<()> {
    let roots = Roots::new(n, prefix, m, depth, after);
    enumerate_in_lanes(n, roots, simd, sink)
}

/// [`enumerate_roots`] from the empty prefix, the walk for roots given at most `budget` nodes
/// between polls (the tests make it poll at almost every node).
#[cfg(test)]
pub(super) fn enumerate_roots_budget<S: Sink>(
    n: usize,
    depth: usize,
    simd: Tier,
    budget: u32,
    sink: &mut S,
) -> ControlFlow<()> {
    let mut roots = Roots::new(n, &[], Masks::EMPTY, depth, None);
    roots.budget = budget;
    enumerate_in_lanes(n, roots, simd, sink)
}

/// Runs the lanes over `roots` (of an `n`×`n` board) into `sink`, in tier `simd`.
fn enumerate_in_lanes<S: Sink>(
    n: usize,
    roots: Roots,
    simd: Tier,
    sink: &mut S,
) -> ControlFlow<()> {
    let depth = roots.depth;
    debug_assert!(depth > roots.from && depth + 2 <= n && n - depth <= MAX_FREE);
    let mut run = Run {
        n,
        depth,
        roots,
        // Idle lanes start as Count's do (`count/lanes.rs`, which says why the two structs
        // stay apart).
        lanes: Box::new(BoardLanes {
            at: [0; LANES],
            cols: [0; LANES],
            d1: [0; LANES],
            d2: [0; LANES],
            avail: [0; LANES],
            placed: [0; LANES],
            last: [0; LANES],
            id: [IDLE; LANES],
        }),
        window: VecDeque::new(),
        head: 0,
        next: 0,
        busy: 0,
        exhausted: false,
        spare: Vec::new(),
    };
    simd.run(Loop {
        run: &mut run,
        sink,
    })
}

/// [`Run::lanes_loop`], compiled once per tier by [`Tier::run`] (`LZCNT` in the AVX-512
/// tier's copy).
struct Loop<'a, S> {
    run: &'a mut Run,
    sink: &'a mut S,
}

impl<S: Sink> PerTier for Loop<'_, S> {
    type Output = ControlFlow<()>;

    #[inline(always)]
    fn run<const AVX512: bool>(self) -> ControlFlow<()> {
        self.run.lanes_loop::<AVX512, S>(self.sink)
    }
}

/// One enumeration in lanes: the roots still to take, the lanes, the window of subtrees.
struct Run {
    n: usize,
    depth: usize,
    roots: Roots,
    lanes: Box<BoardLanes>,
    /// Subtrees `head..next`, started and not yet handed to the sink.
    window: VecDeque<Subtree>,
    head: u64,
    next: u64,
    /// Lanes holding a subtree.
    busy: usize,
    /// Every root has been taken.
    exhausted: bool,
    /// Emptied buffers of subtrees handed over, for the next ones.
    spare: Vec<Vec<u8>>,
}

impl Run {
    /// The lanes' loop, inlined into one copy per instruction set (`LZCNT` as in
    /// [`BoardLanes::step`]).
    #[inline(always)]
    fn lanes_loop<const LZCNT: bool, S: Sink>(&mut self, sink: &mut S) -> ControlFlow<()> {
        let full = u64::from(full_mask(self.n as u32));
        let stop = (self.n - self.depth - 2) as u64;
        let mut bursts = 0u32;
        loop {
            let pending = self.load(full);
            if self.busy == 0 && !pending {
                return ControlFlow::Continue(());
            }
            if self.busy > 0 {
                for _ in 0..BURST {
                    let hits = self.lanes.step::<LZCNT>(full, stop);
                    if hits != 0 {
                        self.record(hits);
                    }
                }
                let mut finished = self.lanes.finished();
                while finished != 0 {
                    let i = finished.trailing_zeros() as usize;
                    finished &= finished - 1;
                    let slot = (self.lanes.id[i] - self.head) as usize;
                    self.window[slot].done = true;
                    self.lanes.idle(i);
                    self.busy -= 1;
                }
                self.hand_over(sink)?;
            }
            bursts += 1;
            if pending || bursts.is_multiple_of(POLL) {
                // The first subtree not handed over; with none started, where the walk for
                // roots goes on.
                match self.window.front() {
                    Some(head) => sink.poll(&head.root[..self.depth])?,
                    None => {
                        if let Some(at) = self.roots.at() {
                            sink.poll(at)?;
                        }
                    }
                }
            }
        }
    }

    /// Gives idle lanes the next subtrees, as far as the window reaches; `true` when the walk
    /// for roots ran out of its node budget before it could fill them.
    fn load(&mut self, full: u64) -> bool {
        for i in 0..LANES {
            if self.exhausted || self.next >= self.head + WINDOW {
                return false;
            }
            if self.lanes.id[i] != IDLE {
                continue;
            }
            match self.roots.next() {
                Found::Root(root, m) => {
                    self.window.push_back(Subtree {
                        root,
                        boards: self.spare.pop().unwrap_or_default(),
                        done: false,
                    });
                    self.lanes.load(i, m, self.next, full);
                    self.next += 1;
                    self.busy += 1;
                }
                Found::Pending => return true,
                Found::Done => self.exhausted = true,
            }
        }
        false
    }

    /// Writes the boards the lanes in `hits` completed to their subtrees' buffers.
    #[inline(never)]
    fn record(&mut self, mut hits: u32) {
        let (n, depth) = (self.n, self.depth);
        while hits != 0 {
            let i = hits.trailing_zeros() as usize;
            hits &= hits - 1;
            let subtree = &mut self.window[(self.lanes.id[i] - self.head) as usize];
            let placed = self.lanes.placed[i];
            let last = self.lanes.last[i];
            // The root's rows, then the lane's, the latest placed in the low 5 bits.
            let mut board = subtree.root;
            let mut rows = placed;
            for cell in board[depth..n - 2].iter_mut().rev() {
                *cell = (rows & 31) as u8;
                rows >>= 5;
            }
            board[n - 2] = (last as u32).trailing_zeros() as u8;
            board[n - 1] = ((last >> 32) as u32).trailing_zeros() as u8;
            subtree.boards.extend_from_slice(&board[..n]);
        }
    }

    /// Hands the finished subtrees at the head of the window to the sink, in order.
    fn hand_over<S: Sink>(&mut self, sink: &mut S) -> ControlFlow<()> {
        while self.window.front().is_some_and(|s| s.done) {
            let Some(subtree) = self.window.pop_front() else {
                break;
            };
            self.head += 1;
            for board in subtree.boards.chunks_exact(self.n) {
                sink.push(board)?;
            }
            let mut boards = subtree.boards;
            boards.clear();
            self.spare.push(boards);
        }
        ControlFlow::Continue(())
    }
}
