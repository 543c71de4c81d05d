//! The loops every tier's kernels run inside, written once and inlined into each tier's
//! copy (`#[inline(always)]`, so that a kernel compiled for a tier compiles its frame for it
//! too): the loop over a key's heads ([`each_head`]), a partition's frame and its scalar pass
//! ([`partition_frame`], [`pass_scalar`]), the runs of one balance a leaf is weighed by
//! ([`runs`]), and the narrowing of two small blocks to 32-bit words for their pair tests
//! ([`narrowed`]). No instruction set is named here; the kernels are `portable.rs`'s,
//! `x86_64/avx2.rs`'s and `x86_64/avx512.rs`'s.

use super::super::word::{Layout, Tail};
use std::mem::MaybeUninit;

/// The slots a kernel writes its kept words into, ahead of their count.
pub(crate) type Free = [MaybeUninit<u64>];

/// What a head brings to the loop over a set's tails: the bits a fitting tail's word lacks
/// (the head's traces and the middle queen's), and the head's share of the half's word.
pub(crate) type Head = [u64; 2];

/// The lists a partition fills: those with the bit, if wanted, and those without it.
pub(crate) type Lists<'a> = (Option<&'a mut Vec<u64>>, &'a mut Vec<u64>);

/// Most words two blocks may have in all to be narrowed to 32 bits for their pair tests
/// (their narrow words are kept on the stack: 32 KiB).
pub(crate) const NARROWED: usize = 8192;

/// The loop over the heads of a key's set (`heads`: each head's test word and share side by
/// side), but those whose share has bits of `spare` (the middle queen's, which no half may
/// have): each head's halves written by `one` (which writes at most `tails`' length of slots
/// and a register, and returns how many it kept) after those kept before.
#[inline(always)]
pub(crate) fn each_head(
    free: &mut Free,
    heads: &[u64],
    tails: &[u64],
    [spare, spare_tail]: [u64; 2],
    tail: Tail,
    one: impl Fn(&mut Free, Head, &[u64], Tail) -> usize,
) -> usize {
    let mut added = 0;
    for head in heads.chunks_exact(2) {
        let (test, share) = (head[0], head[1]);
        if share & spare == 0 {
            // At most one head's worth of slots was kept per head before, so the rest of
            // `free` has room for this one's and a register more.
            added += one(&mut free[added..], [test | spare_tail, share], tails, tail);
        }
    }
    added
}

/// A partition's frame around one tier's pass, inlined into it: `pass` gets where the
/// words with the bit go (if wanted) and where those without it go, writes them there in
/// order, and returns how many of each; the lists are then cut to those lengths.
///
/// # Safety
/// `pass` must have written the first slots it counts of each list, within their room.
#[inline(always)]
pub(crate) unsafe fn partition_frame(
    (mut with, without): Lists,
    pass: impl FnOnce(Option<*mut u64>, *mut u64) -> (usize, usize),
) {
    // Each list has room for its words and a register more: whole registers are stored.
    let (na, nb) = pass(
        with.as_deref_mut().map(|with| with.as_mut_ptr()),
        without.as_mut_ptr(),
    );
    // SAFETY: the first `na` and `nb` slots were written by `pass` (the caller's promise).
    unsafe {
        without.set_len(nb);
        if let Some(with) = with {
            with.set_len(na);
        }
    }
}

/// A partition's pass one word at a time: the words of `words` with `bit` from `a` (if
/// given), those without from `b`, in order; how many of each.
///
/// # Safety
/// `a` and `b` have room for the words of their kind.
#[inline(always)]
pub(crate) unsafe fn pass_scalar<T: Copy + Into<u64>>(
    words: &[T],
    bit: T,
    a: Option<*mut T>,
    b: *mut T,
) -> (usize, usize) {
    let (mut na, mut nb) = (0, 0);
    for &word in words {
        // SAFETY: `na` and `nb` stay below the words of their kind, within the room.
        unsafe {
            if word.into() & bit.into() == 0 {
                b.add(nb).write(word);
                nb += 1;
            } else if let Some(a) = a {
                a.add(na).write(word);
                na += 1;
            }
        }
    }
    (na, nb)
}

/// The weighted pairs of tops `xs` and bottoms `ys` laid out as `layout` says, the middle
/// queen's balance `middle`, per run of tops of one balance: `leaf(run, bottoms, evens)`
/// counts the disjoint pairs of the run and the bottoms that make the sum zero or positive,
/// the first `evens` of them (zero) once and the rest twice.
#[inline(always)]
pub(crate) fn runs(
    layout: Layout,
    middle: i32,
    xs: &[u64],
    ys: &[u64],
    mut leaf: impl FnMut(&[u64], &[u64], usize) -> u64,
) -> u64 {
    let (top, bottom) = (|x| layout.top(x), |y| layout.bottom(y));
    let mut total = 0;
    let mut rest = xs;
    while let Some(&first) = rest.first() {
        let field = top(first);
        let run = rest.partition_point(|&x| top(x) == field);
        // Sum of balances: field + bottom(y) - 2 * bias + middle.
        let zero = 2 * layout.bias - middle - field;
        let even = ys.partition_point(|&y| bottom(y) < zero);
        let positive = ys.partition_point(|&y| bottom(y) <= zero);
        total += leaf(&rest[..run], &ys[even..], positive - even);
        rest = &rest[run..];
    }
    total
}

/// [`runs`] on words narrowed to 32 bits if no more than 32 bits of the blocks can meet
/// (those both blocks have somewhere: below the sieve's first splits most of a word's bits
/// are decided on one side) and they fit [`NARROWED`], else `None`. Each word keeps those
/// bits (`narrow`, a `pext` by the bits that meet), so a pair meets in the narrow words
/// exactly where it meets in the whole ones, and `leaf` counts a run's disjoint pairs in
/// twice the words per register (`leaf(run, bottoms, evens)`, weighed as [`runs`] says).
#[inline(always)]
pub(crate) fn narrowed(
    layout: Layout,
    middle: i32,
    xs: &[u64],
    ys: &[u64],
    narrow: impl Fn(u64, u64) -> u32,
    leaf: impl Fn(&[u32], &[u32], usize) -> u64,
) -> Option<u64> {
    let meet = xs.iter().fold(0, |or, &x| or | x) & ys.iter().fold(0, |or, &y| or | y);
    if meet.count_ones() > 32 || xs.len() + ys.len() > NARROWED {
        return None;
    }
    // Not zeroed: only the slots written below are read.
    let mut words = [const { MaybeUninit::<u32>::uninit() }; NARROWED];
    let (narrow_x, narrow_y) = words.split_at_mut(xs.len());
    for (slot, &word) in narrow_x.iter_mut().zip(xs) {
        slot.write(narrow(word, meet));
    }
    for (slot, &word) in narrow_y.iter_mut().zip(ys) {
        slot.write(narrow(word, meet));
    }
    // SAFETY: the first `xs.len() + ys.len()` slots (at most `NARROWED`, checked above)
    // were written just now.
    let words: &[u32] = unsafe { &*(&raw const words[..xs.len() + ys.len()] as *const [u32]) };
    let (narrow_xs, narrow_ys) = words.split_at(xs.len());
    let base = (xs.as_ptr() as usize, ys.as_ptr() as usize);
    Some(runs(
        layout,
        middle,
        xs,
        ys,
        |run: &[u64], bottoms: &[u64], evens| {
            // The same words of the narrow blocks as `run` and `bottoms` are of the whole.
            let at = (run.as_ptr() as usize - base.0) / size_of::<u64>();
            let from = (bottoms.as_ptr() as usize - base.1) / size_of::<u64>();
            leaf(
                &narrow_xs[at..at + run.len()],
                &narrow_ys[from..from + bottoms.len()],
                evens,
            )
        },
    ))
}
