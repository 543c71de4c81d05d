//! Where enumerated boards go: the [`Sink`] every enumeration pushes into (the scalar search
//! in `search.rs`, the lanes in `lockstep.rs`). The searches themselves do not live here.

use std::ops::ControlFlow;

/// Receives the boards of an enumeration; either method can stop the search.
pub trait Sink {
    /// Takes one board (`columns[r]` is the column of row r's queen).
    fn push(&mut self, columns: &[u8]) -> ControlFlow<()>;

    /// Called every few thousand search nodes, whether or not boards were found, so a sink
    /// can flush what it holds or notice its consumer has gone. `at` is the node about to be
    /// searched, as the columns of its first rows: every board before its subtree has been
    /// pushed or passed over, and none in it or after it yet.
    fn poll(&mut self, at: &[u8]) -> ControlFlow<()> {
        let _ = at;
        ControlFlow::Continue(())
    }
}
