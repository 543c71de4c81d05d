//! The eight symmetries of the square board (rotations and reflections) applied to a
//! solution, and the test for being a symmetry class's representative: the member whose
//! column vector is lexicographically least. No search lives here.

/// Largest board handled; matches the core's `MAX_N`.
const MAX: usize = 32;

/// If `columns` is the lexicographically least member of its symmetry class, the size of the
/// class (8, 4, 2, or 1 for n = 1); otherwise `None`.
///
/// The seven non-identity images are compared lazily, entry by entry, so most
/// non-representatives are rejected after a few entries.
pub fn class_size(columns: &[u8]) -> Option<u64> {
    let n = columns.len();
    debug_assert!(n <= MAX);
    let last = (n - 1) as u8;
    let mut inverse = [0u8; MAX];
    for (r, &c) in columns.iter().enumerate() {
        inverse[c as usize] = r as u8;
    }
    let inv = &inverse[..n];
    // Image r-th entries of the seven non-identity symmetries, as functions of r.
    let images: [&dyn Fn(usize) -> u8; 7] = [
        &|r| last - columns[r],         // mirror left-right
        &|r| columns[n - 1 - r],        // flip top-bottom
        &|r| last - columns[n - 1 - r], // rotate 180
        &|r| inv[r],                    // transpose (main diagonal)
        &|r| last - inv[r],             // rotate 90
        &|r| inv[n - 1 - r],            // rotate 270
        &|r| last - inv[n - 1 - r],     // anti-diagonal reflection
    ];
    let mut stabilizer = 1u64;
    for image in images {
        match compare(columns, image) {
            std::cmp::Ordering::Greater => return None,
            std::cmp::Ordering::Equal => stabilizer += 1,
            std::cmp::Ordering::Less => {}
        }
    }
    Some(8 / stabilizer)
}

/// Lexicographic comparison of `columns` with an image given entry by entry.
fn compare(columns: &[u8], image: &dyn Fn(usize) -> u8) -> std::cmp::Ordering {
    for (r, &c) in columns.iter().enumerate() {
        match c.cmp(&image(r)) {
            std::cmp::Ordering::Equal => continue,
            other => return other,
        }
    }
    std::cmp::Ordering::Equal
}

/// Per-row column masks that every representative obeys, given its row-0 column `c0`.
///
/// A representative's first entry is the least first entry of its eight images, and those
/// are `c0`, `n-1-c0`, the last row's column and its mirror, and the rows of the queens in
/// columns 0 and n-1 and their mirrors. So the last row's queen and the rows holding the
/// queens of the two edge columns all lie in `c0 ..= n-1-c0`. Returns the mask for row `r`.
pub(crate) fn corner_mask(n: u32, c0: u32, r: u32, full: u32) -> u32 {
    let last = n - 1;
    if r == 0 {
        return 1 << c0;
    }
    let mut mask = full;
    if r < c0 || r > last - c0 {
        mask &= !(1 | (1 << last));
    }
    if r == last {
        let inside = full >> c0 << c0; // columns >= c0
        let inside = inside & (full >> c0); // columns <= last - c0
        mask &= inside;
    }
    mask
}
