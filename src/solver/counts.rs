//! What a count answers: [`Counts`], and why it may end without them ([`CountError`]),
//! shared by the counting searches (`search.rs`, `count/`). No search lives here.

/// What the counting path found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    /// Solutions in the (part of the) search.
    pub solutions: u64,
    /// Symmetry classes among them; `None` when queens were fixed.
    pub fundamental: Option<u64>,
}

impl Counts {
    /// The counts of two disjoint parts together (`fundamental` only when both have it), or
    /// `Overflow` when a sum does not fit in a `u64`.
    pub fn checked_add(self, other: Counts) -> Result<Counts, CountError> {
        let fundamental = match (self.fundamental, other.fundamental) {
            (Some(a), Some(b)) => Some(a.checked_add(b).ok_or(CountError::Overflow)?),
            _ => None,
        };
        Ok(Counts {
            solutions: self
                .solutions
                .checked_add(other.solutions)
                .ok_or(CountError::Overflow)?,
            fundamental,
        })
    }
}

/// Why a count ended without a result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CountError {
    /// The cancel flag was raised.
    #[error("the count was cancelled")]
    Cancelled,
    /// The total does not fit in a `u64`.
    #[error("the number of solutions does not fit in 64 bits")]
    Overflow,
    /// A search thread panicked (a bug).
    #[error("a search thread failed")]
    Failed,
}
