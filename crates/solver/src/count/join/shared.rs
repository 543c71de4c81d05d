//! One set of the join's tables per board size in the process ([`with_tables`]): shared by
//! every count of that size running at once (whole counts and shards alike), built by the
//! first that needs them while later ones wait, and freed when the last count holding them
//! ends. How the tables are built is `tables.rs`'s (past n = 25 the join has none, `path.rs`);
//! what a count does with them, `mod.rs`'s.

use super::super::options::Hold;
use super::path::Join;
use crate::counts::CountError;
use crate::sync::lock;
use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, Weak};

/// A built join (its tables), and what it keeps alive.
pub(super) struct Shared {
    /// The join.
    pub(super) join: Join,
    /// Kept while the tables live.
    _hold: Option<Hold>,
}

/// Where a count that waits for the tables goes on: with them, or with why there are none.
type Then = Box<dyn FnOnce(Result<Arc<Shared>, CountError>) + Send>;

/// The tables of one size, as far as they have come.
enum Entry {
    /// Being built by one count; the others that want them wait here.
    Building(Vec<Then>),
    /// Built, and alive while some count holds them.
    Built(Weak<Shared>),
}

/// Every size's entry.
static SHARED: Mutex<Option<HashMap<u32, Entry>>> = Mutex::new(None);

/// Hands `then` the tables of size `n`: at once when some count holds them, after the build
/// when some count builds them, else built here (ticking `tick` and polling `cancel` as
/// [`Join::new`] does), `hold` kept alive with them. A count that waited for a build that
/// ended without tables (its builder was cancelled, or an allocation failed) is handed that
/// error, and decides itself whether to build them again.
pub(super) fn with_tables(
    n: u32,
    cancel: &AtomicBool,
    tick: &dyn Fn(),
    hold: Option<Hold>,
    then: impl FnOnce(Result<Arc<Shared>, CountError>) + Send + 'static,
) {
    {
        let mut shared = lock(&SHARED);
        let entries = shared.get_or_insert_with(HashMap::new);
        match entries.get_mut(&n) {
            Some(Entry::Built(tables)) => {
                if let Some(tables) = tables.upgrade() {
                    drop(shared);
                    return then(Ok(tables));
                }
            }
            Some(Entry::Building(waiting)) => {
                waiting.push(Box::new(then));
                return;
            }
            None => {}
        }
        entries.insert(n, Entry::Building(Vec::new()));
    }
    let built = Join::new(n, cancel, tick).map(|join| Arc::new(Shared { join, _hold: hold }));
    let waiting = {
        let mut shared = lock(&SHARED);
        let entries = shared.get_or_insert_with(HashMap::new);
        let entry = match &built {
            Ok(tables) => entries.insert(n, Entry::Built(Arc::downgrade(tables))),
            Err(_) => entries.remove(&n),
        };
        match entry {
            Some(Entry::Building(waiting)) => waiting,
            _ => Vec::new(),
        }
    };
    for waiter in waiting {
        waiter(built.clone());
    }
    then(built);
}

/// Whether the tables of size `n` are built and held by some count now.
#[cfg(test)]
pub(super) fn alive(n: u32) -> bool {
    let shared = lock(&SHARED);
    matches!(
        shared.as_ref().and_then(|entries| entries.get(&n)),
        Some(Entry::Built(tables)) if tables.strong_count() > 0
    )
}
