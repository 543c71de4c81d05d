//! Small synchronisation helpers shared by every layer. Nothing here knows about the solver,
//! the service or the wire.

use std::sync::{Mutex, MutexGuard};

/// The mutex's value, whether or not a holder panicked.
///
/// Every mutex in this crate guards plain counters, queues or maps whose values stay valid
/// at every point a holder could panic, so a poisoned lock is taken as it is instead of
/// spreading the panic to every later caller.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
