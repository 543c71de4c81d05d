//! The conversions between the generated wire messages (`crate::pb`) and the solver's types of
//! the same fields, used by the service and the client side alike. No validation lives here:
//! a converted question is checked by the solver's `Problem` and the service's `Query`.
//! Also the front-coded layout of packed boards ([`front`]), written by the server's stream
//! and read by the clients.

pub mod front;

use crate::pb;
use crate::solver::{Counts, Shard, Square};

/// The conversions both ways between a wire message and the solver's type of the same
/// fields (each field copied as it is).
macro_rules! same_fields {
    ($wire:path, $solver:ident { $($field:ident),+ }) => {
        impl From<&$wire> for $solver {
            fn from(w: &$wire) -> $solver {
                $solver { $($field: w.$field),+ }
            }
        }

        impl From<$solver> for $wire {
            fn from(s: $solver) -> $wire {
                $wire { $($field: s.$field),+ }
            }
        }
    };
}

same_fields!(pb::Square, Square { row, column });
same_fields!(pb::Shard, Shard { index, count });
same_fields!(
    pb::CountResponse,
    Counts {
        solutions,
        fundamental,
        turn_fixed
    }
);

/// The fixed queens of a request, as the solver takes them.
pub fn squares(fixed: &[pb::Square]) -> Vec<Square> {
    fixed.iter().map(Square::from).collect()
}

/// The shard of a request, as the solver takes it (absent: the whole search).
pub fn shard(shard: Option<&pb::Shard>) -> Shard {
    shard.map_or(Shard::WHOLE, Shard::from)
}
