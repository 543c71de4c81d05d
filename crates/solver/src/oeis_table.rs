// The expected counts from OEIS, in one place for the solver's unit tests (`include!`d by
// `oeis.rs`, test builds only) and the integration tests and benches of the workspace
// (`include!`d by `tests/common/mod.rs` and `benches/neighbours.rs`).

/// OEIS A000170: solutions of the n-queens problem, n = 1..=17.
pub const A000170: [u64; 17] = [
    1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712, 365596, 2279184, 14772512,
    95815104,
];

/// OEIS A002562: symmetry classes of solutions, n = 1..=17.
pub const A002562: [u64; 17] = [
    1, 0, 0, 1, 2, 1, 6, 12, 46, 92, 341, 1787, 9233, 45752, 285053, 1846955, 11977939,
];
