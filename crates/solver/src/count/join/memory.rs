//! The join's memory: the arrays of its tables and of the levels they are built from, which
//! Linux can back with transparent huge pages from end to end ([`Words`]), and the cap on
//! what an engine's working lists may grow to ([`Allowance`]), so that an engine stays within
//! what its count reserved and a failed allocation ends the key with `OutOfMemory` instead
//! of ending the process. What the arrays and lists hold is `tables.rs`'s, `work.rs`'s and
//! `sieve.rs`'s.

use crate::counts::CountError;
use std::alloc::Layout;
use std::cell::Cell;
use std::mem::MaybeUninit;
use std::ptr::NonNull;

/// A huge page on x86-64 and on most aarch64 Linux kernels.
const HUGE: usize = 2 << 20;

thread_local! {
    /// Bytes of [`Words`] allocated on this thread and not yet freed (frees on other threads
    /// count against theirs), and the most there were since [`peak_from_here`] last asked.
    static METER: Cell<(isize, isize)> = const { Cell::new((0, 0)) };
}

/// Adds `bytes` (or takes them away) on this thread's meter.
fn meter(bytes: isize) {
    METER.with(|meter| {
        let (live, peak) = meter.get();
        meter.set((live + bytes, peak.max(live + bytes)));
    });
}

/// Starts measuring the peak of this thread's [`Words`] from now; the closure it returns
/// says the most bytes they held above the start since (the tables' build, which allocates
/// and frees its arrays on one thread, measures its own peak so).
pub(super) fn peak_from_here() -> impl Fn() -> usize {
    let start = METER.with(|meter| {
        let (live, _) = meter.get();
        meter.set((live, live));
        live
    });
    move || METER.with(|meter| (meter.get().1 - start).max(0) as usize)
}

/// An array of words (or other plain values) written once, front to back, then read. From a
/// quarter of a huge page on, its memory starts on a huge page's boundary and spans whole
/// huge pages, and Linux is asked to back it with them (transparent huge pages in `madvise`
/// mode): inside an ordinary allocation of a few MiB (n = 19's tails are about 4 MiB) a huge
/// page fits once at most, and faulting the rest in 4 KiB pages, then unmapping them, was
/// about a quarter of an empty shard's CPU; below a MiB, zeroing a whole huge page still
/// costs less than faulting a few hundred small ones. Smaller arrays are ordinary
/// allocations; elsewhere, or when the system says no, the pages are ordinary ones. Room
/// never written is never backed.
pub(super) struct Words<T: Copy = u64> {
    /// The start of the allocation (dangling while nothing is allocated).
    start: NonNull<T>,
    /// Words written so far, from the start.
    len: usize,
    /// Words the allocation holds.
    room: usize,
    /// The allocation's layout; size 0 while nothing is allocated.
    layout: Layout,
}

// SAFETY: `Words` owns its memory alone, as a `Box<[T]>` does, and hands it out only
// through `&self` (shared reads) and `&mut self` (exclusive writes); `T: Copy + Send` values
// hold no references of their own to share.
unsafe impl<T: Copy + Send> Send for Words<T> {}
// SAFETY: as for `Send`: shared access only reads.
unsafe impl<T: Copy + Sync> Sync for Words<T> {}

impl<T: Copy> std::fmt::Debug for Words<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Words({} of {})", self.len, self.room)
    }
}

impl<T: Copy> Default for Words<T> {
    /// No words, no allocation.
    fn default() -> Words<T> {
        Words {
            start: NonNull::dangling(),
            len: 0,
            room: 0,
            layout: Layout::new::<()>(),
        }
    }
}

impl<T: Copy> Words<T> {
    /// No words yet, with room for `room` of them; `OutOfMemory` if the system has not got
    /// it.
    pub(super) fn with_room(room: usize) -> Result<Words<T>, CountError> {
        let mut words = Words::default();
        let bytes = room
            .checked_mul(size_of::<T>())
            .ok_or(CountError::Overflow)?;
        if bytes == 0 {
            return Ok(words);
        }
        let huge = bytes >= HUGE / 4;
        let (size, align) = if huge {
            (bytes.next_multiple_of(HUGE), HUGE)
        } else {
            (bytes, align_of::<T>())
        };
        let layout = Layout::from_size_align(size, align).map_err(|_| CountError::Overflow)?;
        // SAFETY: the layout's size is not zero.
        let raw = unsafe { std::alloc::alloc(layout) };
        let Some(start) = NonNull::new(raw.cast::<T>()) else {
            return Err(CountError::OutOfMemory { bytes: size as u64 });
        };
        (words.start, words.room, words.layout) = (start, size / size_of::<T>(), layout);
        meter(size as isize);
        #[cfg(target_os = "linux")]
        if huge {
            // SAFETY: the range is the allocation itself, which starts on a huge page's
            // boundary; MADV_HUGEPAGE only tells the kernel how to back it and changes no
            // contents. Its result is ignored: without huge pages the table works the same.
            let _ = unsafe { libc::madvise(raw.cast(), size, libc::MADV_HUGEPAGE) };
        }
        Ok(words)
    }

    /// The room after the words written, to write the next ones into before
    /// [`Words::set_len`] takes them in.
    pub(super) fn spare(&mut self) -> &mut [MaybeUninit<T>] {
        // SAFETY: the slots from `len` to `room` lie inside the allocation (or `room` is 0
        // and the pointer dangling but aligned), and `&mut self` makes the access exclusive;
        // as `MaybeUninit` they need not be written yet.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.start.as_ptr().add(self.len).cast(),
                self.room - self.len,
            )
        }
    }

    /// Takes in the words written into [`Words::spare`] up to `len` in all.
    ///
    /// # Safety
    /// The slots up to `len` are written, and `len` is within the room.
    pub(super) unsafe fn set_len(&mut self, len: usize) {
        debug_assert!(len <= self.room);
        self.len = len;
    }
}

impl<T: Copy> std::ops::Deref for Words<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // SAFETY: the first `len` words are written, inside the allocation (or `len` is 0
        // and the pointer dangling but aligned).
        unsafe { std::slice::from_raw_parts(self.start.as_ptr(), self.len) }
    }
}

impl<T: Copy> Drop for Words<T> {
    fn drop(&mut self) {
        if self.layout.size() > 0 {
            // SAFETY: the memory was allocated with this layout by `with_room` and is freed
            // once, here.
            unsafe { std::alloc::dealloc(self.start.as_ptr().cast(), self.layout) };
            meter(-(self.layout.size() as isize));
        }
    }
}

/// Bytes an engine's lists may still grow by.
#[derive(Debug)]
pub(super) struct Allowance {
    left: usize,
}

impl Allowance {
    /// Room for `bytes` in all (`usize::MAX`: no cap but the system's).
    pub(super) fn new(bytes: usize) -> Allowance {
        Allowance { left: bytes }
    }

    /// Makes room in `list` for `more` words after its length, within the allowance;
    /// `OutOfMemory` when the allowance or the system has not got them (the list is then as
    /// it was).
    pub(super) fn reserve<T>(&mut self, list: &mut Vec<T>, more: usize) -> Result<(), CountError> {
        if list.capacity() - list.len() >= more {
            return Ok(());
        }
        let before = list.capacity();
        let wanted = list.len().saturating_add(more);
        let bytes = wanted.saturating_sub(before).saturating_mul(size_of::<T>());
        let refused = CountError::OutOfMemory {
            bytes: bytes as u64,
        };
        if bytes > self.left {
            return Err(refused);
        }
        list.try_reserve_exact(more).map_err(|_| refused)?;
        let taken = (list.capacity() - before) * size_of::<T>();
        self.left = self.left.saturating_sub(taken);
        Ok(())
    }
}

impl Allowance {
    /// Frees `list`, its room given back to the allowance.
    pub(super) fn release<T>(&mut self, list: &mut Vec<T>) {
        self.left = self.left.saturating_add(list.capacity() * size_of::<T>());
        *list = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_allowance_refuses_what_it_has_not_got_and_keeps_the_list() {
        let mut allowance = Allowance::new(100 * 8);
        let mut list = vec![1u64, 2, 3];
        list.shrink_to_fit();
        allowance.reserve(&mut list, 50).unwrap();
        assert!(list.capacity() >= 53);
        let left = allowance.left;
        assert!(left <= 50 * 8);
        assert_eq!(
            allowance.reserve(&mut list, 200),
            Err(CountError::OutOfMemory {
                bytes: ((203 - list.capacity()) * 8) as u64
            })
        );
        assert_eq!(list, vec![1, 2, 3]);
        // Room already there costs nothing.
        allowance.reserve(&mut list, 40).unwrap();
        assert_eq!(allowance.left, left);
    }

    #[test]
    fn words_keep_what_was_written_and_large_ones_start_on_a_huge_page() {
        for room in [
            0,
            1,
            7,
            HUGE / 16 - 1,
            HUGE / 16,
            HUGE / 8 + 3,
            3 * HUGE / 8,
        ] {
            let mut words = Words::<u64>::with_room(room).unwrap();
            assert!(words.spare().len() >= room, "{room}");
            let half = room / 2;
            for (at, slot) in words.spare()[..half].iter_mut().enumerate() {
                slot.write(at as u64 ^ 0x5555);
            }
            // SAFETY: the first `half` slots were written just now.
            unsafe { words.set_len(half) };
            for (at, slot) in words.spare()[..room - half].iter_mut().enumerate() {
                slot.write((half + at) as u64 ^ 0x5555);
            }
            // SAFETY: the next `room - half` slots were written just now.
            unsafe { words.set_len(room) };
            assert_eq!(words.len(), room);
            assert!(
                words
                    .iter()
                    .enumerate()
                    .all(|(at, &w)| w == at as u64 ^ 0x5555)
            );
            if room * 8 >= HUGE / 4 {
                assert_eq!(words.as_ptr() as usize % HUGE, 0, "{room}");
            }
        }
    }
}
