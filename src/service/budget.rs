//! The memory budget (`--max-memory`): the bytes every running search has reserved, and the
//! RAII [`Reservation`] that gives them back. A search reserves what it will need before it
//! starts (a count: its share of the join's tables and its engines' lists; a stream: its
//! buffers, as the solver and the stream layer figure them) and is refused at once when that
//! does not fit. The join's tables of one size are one set in the process, however many
//! counts share them, so they are reserved once, by the first count that needs them, and
//! held by every count using them and by the tables themselves (the solver keeps the
//! reservation alive as long as the tables live). Not here: what each search needs
//! (`crate::solver::count_memory`, `crate::stream::memory`), the search slots
//! (`admission.rs`).

use super::Error;
use crate::sync::lock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// What a search asks of the budget.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Need {
    /// Bytes of its own, whatever it runs on.
    pub own: u64,
    /// Bytes of each engine it runs (a count's working lists); 0 for none.
    pub per_engine: u64,
    /// Most engines it would run; it runs fewer (at least one) when only fewer fit.
    pub engines: usize,
    /// The join's tables of size `n` and their bytes, shared with every search of that size.
    pub tables: Option<(u32, u64)>,
}

impl Need {
    /// A search of `bytes`, engines aside.
    pub fn bytes(bytes: u64) -> Need {
        Need {
            own: bytes,
            ..Need::default()
        }
    }
}

/// The budget: its limit, what is reserved, and the tables' shared reservations.
#[derive(Clone, Debug)]
pub struct Budget(Arc<Inner>);

/// What the budget's handles share.
#[derive(Debug)]
struct Inner {
    limit: u64,
    state: Mutex<State>,
    /// Reservations given back so far (the server trims its heap after searches end).
    given_back: AtomicUsize,
}

/// Bytes reserved now, and the tables' reservations by size (alive while some search or
/// the tables hold them).
#[derive(Debug, Default)]
struct State {
    reserved: u64,
    tables: HashMap<u32, Weak<Reservation>>,
}

/// Bytes reserved from the budget; given back when dropped.
#[derive(Debug)]
pub struct Reservation {
    budget: Arc<Inner>,
    bytes: u64,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut state = lock(&self.budget.state);
        state.reserved -= self.bytes;
        gauge(state.reserved);
        self.budget.given_back.fetch_add(1, Ordering::Relaxed);
    }
}

/// What one search holds of the budget: its own bytes and its engines', and its share of
/// the tables.
#[derive(Debug)]
pub struct Reserved {
    _own: Reservation,
    /// The engines reserved for (at least one, at most the need's).
    pub engines: usize,
    /// The tables' reservation, shared by every search of their size and by the tables.
    pub tables: Option<Arc<Reservation>>,
}

/// Tells the gauge of reserved bytes.
fn gauge(reserved: u64) {
    metrics::gauge!("queens_memory_reserved_bytes").set(reserved as f64);
}

impl Budget {
    /// A budget of `limit` bytes, none reserved.
    pub fn new(limit: u64) -> Budget {
        metrics::gauge!("queens_memory_limit_bytes").set(limit as f64);
        gauge(0);
        Budget(Arc::new(Inner {
            limit,
            state: Mutex::default(),
            given_back: AtomicUsize::new(0),
        }))
    }

    /// The whole budget.
    pub fn limit(&self) -> u64 {
        self.0.limit
    }

    /// How many reservations have been given back so far.
    pub fn given_back(&self) -> usize {
        self.0.given_back.load(Ordering::Relaxed)
    }

    /// Bytes reserved now.
    pub fn reserved(&self) -> u64 {
        lock(&self.0.state).reserved
    }

    /// Reserves `need`: its own bytes, as many of its engines as fit (at least one), and the
    /// tables' unless a running search (or the tables themselves) holds their reservation
    /// already, which is then shared. Refused with `MemoryLimit` when what it needs with one
    /// engine is more than the whole budget, `MemoryBusy` when it is more than is free now.
    pub fn reserve(&self, need: Need) -> Result<Reserved, Error> {
        let inner = &self.0;
        let mut state = lock(&inner.state);
        let shared = need
            .tables
            .and_then(|(n, _)| state.tables.get(&n).and_then(Weak::upgrade));
        let tables = match (need.tables, &shared) {
            (Some((_, bytes)), None) => bytes,
            _ => 0,
        };
        let least = need.own.saturating_add(tables);
        let free = inner.limit.saturating_sub(state.reserved);
        let wanted = need.engines.max(1) as u64;
        let engines = match need.per_engine {
            0 => wanted,
            each => (free.saturating_sub(least) / each).clamp(1, wanted),
        };
        let own = need
            .own
            .saturating_add(need.per_engine.saturating_mul(engines));
        let bytes = own.saturating_add(tables);
        if bytes > inner.limit {
            return Err(Error::MemoryLimit {
                need: bytes,
                limit: inner.limit,
            });
        }
        if bytes > free {
            return Err(Error::MemoryBusy {
                need: bytes,
                free,
                limit: inner.limit,
            });
        }
        state.reserved += bytes;
        gauge(state.reserved);
        let reservation = |bytes| Reservation {
            budget: inner.clone(),
            bytes,
        };
        let tables = match (need.tables, shared) {
            (_, Some(shared)) => Some(shared),
            (Some((n, _)), None) => {
                let fresh = Arc::new(reservation(tables));
                state.tables.insert(n, Arc::downgrade(&fresh));
                Some(fresh)
            }
            (None, None) => None,
        };
        // Sizes whose tables are gone leave no entry behind.
        state.tables.retain(|_, held| held.strong_count() > 0);
        drop(state);
        Ok(Reserved {
            _own: reservation(own),
            engines: engines as usize,
            tables,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn searches_reserve_what_fits_and_give_it_back() {
        let budget = Budget::new(100 * MIB);
        let small = Need::bytes(30 * MIB);
        let a = budget.reserve(small).unwrap();
        let b = budget.reserve(small).unwrap();
        assert_eq!(budget.reserved(), 60 * MIB);
        let big = Need::bytes(50 * MIB);
        assert!(matches!(
            budget.reserve(big),
            Err(Error::MemoryBusy { need, free, limit })
                if need == 50 * MIB && free == 40 * MIB && limit == 100 * MIB
        ));
        let huge = Need::bytes(101 * MIB);
        assert!(matches!(
            budget.reserve(huge),
            Err(Error::MemoryLimit { .. })
        ));
        drop(a);
        let _c = budget.reserve(big).unwrap();
        drop(b);
        assert_eq!(budget.reserved(), 50 * MIB);
    }

    /// Two searches of one size reserve its tables once; they are given back when the last
    /// holder (a search, or the tables themselves) lets go.
    #[test]
    fn the_tables_of_a_size_are_reserved_once_for_all_their_searches() {
        let budget = Budget::new(100 * MIB);
        let count = Need {
            tables: Some((24, 60 * MIB)),
            ..Need::bytes(10 * MIB)
        };
        let a = budget.reserve(count).unwrap();
        assert_eq!(budget.reserved(), 70 * MIB);
        let b = budget.reserve(count).unwrap();
        assert_eq!(budget.reserved(), 80 * MIB, "the tables are shared");
        let tables = a.tables.clone().unwrap();
        assert!(Arc::ptr_eq(&tables, b.tables.as_ref().unwrap()));
        drop((a, b));
        assert_eq!(budget.reserved(), 60 * MIB, "the tables still hold theirs");
        let c = budget.reserve(count).unwrap();
        assert_eq!(budget.reserved(), 70 * MIB);
        drop((tables, c));
        assert_eq!(budget.reserved(), 0);
        // Another size's tables are their own.
        let d = budget.reserve(count).unwrap();
        let other = Need {
            tables: Some((23, 40 * MIB)),
            ..Need::bytes(0)
        };
        assert!(matches!(
            budget.reserve(other),
            Err(Error::MemoryBusy { .. })
        ));
        drop(d);
    }

    /// A count runs as many engines as fit, down to one; with not even one it is refused,
    /// naming what one would need.
    #[test]
    fn a_count_runs_the_engines_that_fit() {
        let budget = Budget::new(100 * MIB);
        let count = Need {
            own: 4 * MIB,
            per_engine: 20 * MIB,
            engines: 4,
            tables: Some((22, 30 * MIB)),
        };
        let a = budget.reserve(count).unwrap();
        assert_eq!(a.engines, 3, "4 + 30 + 3 x 20 of 100");
        assert_eq!(budget.reserved(), 94 * MIB);
        assert!(matches!(
            budget.reserve(count),
            Err(Error::MemoryBusy { need, .. }) if need == 24 * MIB
        ));
        drop(a);
        let lone = Need {
            engines: 1,
            ..count
        };
        let b = budget.reserve(lone).unwrap();
        assert_eq!((b.engines, budget.reserved()), (1, 54 * MIB));
        let c = budget.reserve(count).unwrap();
        assert_eq!(c.engines, 2, "the tables shared: 4 + 2 x 20 of the 46 left");
    }
}
