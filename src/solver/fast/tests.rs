//! The fast counter against OEIS, the plain search and the naive oracle.
