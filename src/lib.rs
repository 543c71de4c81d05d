//! `queens`: N-Queens as a gRPC service.
pub mod solver;
