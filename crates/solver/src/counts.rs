//! What a count answers: [`Counts`], why it may end without them ([`CountError`]), and how
//! the counts of a count's parts make the whole's ([`Counts::whole`], [`PartsError`]),
//! shared by the counting searches (`search.rs`, `count/`) and whoever adds parts up. No
//! search lives here.

/// What the counting path found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Solutions in the (part of the) search.
    pub solutions: u64,
    /// Symmetry classes among them; `None` when queens were fixed, and on a part whose
    /// classes are not its own (then `turn_fixed` is there).
    pub fundamental: Option<u64>,
    /// On a part whose classes are not its own (a shard of a whole plain board counted by
    /// joining halves): its solutions a half turn maps to themselves plus twice those a
    /// quarter turn does. Over all parts of one count, (Σ solutions + Σ turn_fixed) / 8 is
    /// the whole's classes.
    pub turn_fixed: Option<u64>,
}

impl Counts {
    /// The counts of a whole search from the counts of all its disjoint parts: solutions
    /// summed; classes summed when every part has them, found from the turn-fixed points
    /// when every part has those, absent when some part has neither (fixed queens). When
    /// some parts have turn-fixed points and others not, the parts were split in different
    /// ways (by different versions), so not even their solutions add up: `Mixed`.
    pub fn whole(parts: impl IntoIterator<Item = Counts>) -> Result<Counts, PartsError> {
        let add = |a: u64, b: u64| a.checked_add(b).ok_or(PartsError::Overflow);
        let mut total = Counts::default();
        let (mut classes, mut points) = (0, 0);
        // Parts with classes only, with turn-fixed points only, with neither.
        let (mut with_classes, mut with_points, mut neither) = (0usize, 0usize, 0usize);
        for part in parts {
            total.solutions = add(total.solutions, part.solutions)?;
            match (part.fundamental, part.turn_fixed) {
                (Some(f), None) => {
                    classes = add(classes, f)?;
                    with_classes += 1;
                }
                (None, Some(t)) => {
                    points = add(points, t)?;
                    with_points += 1;
                }
                (None, None) => neither += 1,
                (Some(_), Some(_)) => return Err(PartsError::Mixed),
            }
        }
        if with_points == 0 {
            total.fundamental = (neither == 0).then_some(classes);
            return Ok(total);
        }
        if with_classes > 0 || neither > 0 {
            return Err(PartsError::Mixed);
        }
        let incidences = add(total.solutions, points)?;
        if !incidences.is_multiple_of(8) {
            return Err(PartsError::NotWhole);
        }
        total.fundamental = Some(incidences / 8);
        Ok(total)
    }
}

/// Why the counts of parts do not make a whole's counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PartsError {
    /// A sum does not fit in a `u64`.
    #[error("the total does not fit in 64 bits")]
    Overflow,
    /// Some parts have turn-fixed points (`turn_fixed`) and others not (most often
    /// symmetry classes, `fundamental`), or a part has both.
    #[error(
        "the parts mix two ways of splitting a count: some have symmetry classes \
         (fundamental), others turn-fixed points (turn_fixed), as parts counted by different \
         versions do; their solutions do not add up to the whole's. Count every part with \
         one version"
    )]
    Mixed,
    /// The solutions and turn-fixed points do not make whole classes: not all the parts of
    /// one count.
    #[error(
        "the parts' solutions and turn-fixed points do not make whole symmetry classes: \
         they are not all the parts of one count"
    )]
    NotWhole,
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
    /// An allocation of this many bytes failed: the system had less memory than the count
    /// needed.
    #[error("the count could not allocate {bytes} bytes of memory")]
    OutOfMemory {
        /// The bytes asked for.
        bytes: u64,
    },
    /// A part recounted on another tier ([`Recount`](crate::Recount)) gave another count:
    /// one of the two runs is wrong (a bug, or a fault of the machine), so the count is not
    /// answered.
    #[error(
        "the part whose top half takes the columns {top:#b} counted {first} in the {tier} \
         tier but {again} in the {other} tier: the count is not trustworthy on this machine"
    )]
    Recounted {
        /// The part's key: the columns of its top half's queens, as a mask.
        top: u32,
        /// Its count in the count's tier.
        first: u64,
        /// That tier.
        tier: &'static str,
        /// Its count in the other tier.
        again: u64,
        /// The other tier.
        other: &'static str,
    },
    /// A part checked by a plain search ([`RecountMethod::Search`](crate::RecountMethod))
    /// found another count than the join: the join or the search is wrong (a bug, or a
    /// fault of the machine), so the count is not answered.
    #[error(
        "the part whose top half takes the columns {top:#b} (middle queen {middle:?}) counted \
         {joined} weighted pairs by the join in the {tier} tier but {searched} by a plain \
         search: the count is not trustworthy"
    )]
    Searched {
        /// The part's key: the columns of its top half's queens, as a mask.
        top: u32,
        /// The key's middle queen's column (odd boards).
        middle: Option<u32>,
        /// Its weighted pairs by the join.
        joined: u64,
        /// The join's tier.
        tier: &'static str,
        /// Its weighted solutions by the search.
        searched: u64,
    },
}
