//! The OEIS counts the solver's unit tests check against (test builds only), from the one
//! table the integration tests share: A000170 (solutions) and A002562 (symmetry classes),
//! n = 1..=17, index `n - 1`. No solver code outside tests reads them.

include!("oeis_table.rs");
