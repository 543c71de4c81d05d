//! The count's scheduler: a count's subproblems in one queue ([`Counting`]), taken by up
//! to `threads` engines on the shared pool ([`Engine`]), each one set of lockstep lanes (or
//! the scalar search) that gives its thread away after a slice and queues itself again,
//! lanes and all; the last engine to end hands on the result. Not here: which subproblems a
//! count has (`mod.rs`, `join/`), what they weigh (`subproblem.rs`), the lanes
//! (`lanes.rs`).

use super::lanes::{Feed, LaneSet, Outcome, Split, Start};
use super::options::{Classes, CountOptions, Progress};
use super::subproblem::{Partial, Subproblem};
use crate::counts::{CountError, Counts};
use crate::pool::{Pool, SLICE};
use crate::simd::{Tier, TierKind, tier};
use crate::sync::lock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Where a count's result goes.
pub(super) type Done = Box<dyn FnOnce(Result<Counts, CountError>) + Send>;

/// Starts the engines of a count of the subproblems `items` on `pool`.
pub(super) fn start<T: Subproblem>(
    n: u32,
    items: Vec<T>,
    classes: Classes,
    options: CountOptions,
    pool: &Pool,
    done: Done,
) {
    // Steps done before the engines start (the join's tables) stay counted.
    let before = options.progress.done.load(Ordering::Relaxed);
    let steps: u64 = items.iter().map(|item| item.steps(n)).sum();
    options
        .progress
        .total
        .store(before + steps, Ordering::Relaxed);
    let engines = options.threads.clamp(1, items.len().max(1));
    let counting = Arc::new(Counting {
        n,
        lanes: match tier() {
            simd if simd.kind() == TierKind::Portable => None,
            simd => options.lanes.then_some(simd),
        },
        items,
        classes,
        next: AtomicUsize::new(0),
        progress: options.progress,
        cancel: options.cancel,
        halt: AtomicBool::new(false),
        state: Mutex::new(CountingState {
            sum: Partial::default(),
            engines,
            error: None,
            done: Some(done),
        }),
    });
    for _ in 0..engines {
        let engine = Engine::new(counting.clone());
        let pool2 = pool.clone();
        pool.spawn(move || engine.slice(pool2));
    }
}

/// One count: its subproblems, the queue its engines take them from, and their sum.
struct Counting<T> {
    n: u32,
    /// The tier the lanes run in; `None`: every board alone (lanes off, or no SIMD tier).
    lanes: Option<Tier>,
    items: Vec<T>,
    /// How the result's symmetry classes are found, if at all.
    classes: Classes,
    /// The next subproblem to take.
    next: AtomicUsize,
    progress: Arc<Progress>,
    /// The caller's flag.
    cancel: Arc<AtomicBool>,
    /// Raised when an engine failed: the others stop too.
    halt: AtomicBool,
    state: Mutex<CountingState>,
}

/// What the engines report to, as they end.
struct CountingState {
    sum: Partial,
    /// Engines still running.
    engines: usize,
    /// The first failure.
    error: Option<CountError>,
    done: Option<Done>,
}

impl<T> Counting<T> {
    /// Whether the engines must stop: the caller cancelled, or an engine failed.
    fn stopped(&self) -> bool {
        self.cancel.load(Ordering::Relaxed) || self.halt.load(Ordering::Relaxed)
    }

    /// An engine ended with the counts of its subproblems, or failed; the last one hands on
    /// the result.
    fn engine_ended(&self, result: Result<Partial, CountError>) {
        let mut state = lock(&self.state);
        match result.and_then(|part| state.sum.add(part)) {
            Ok(sum) => state.sum = sum,
            Err(error) => {
                self.halt.store(true, Ordering::Relaxed);
                state.error.get_or_insert(error);
            }
        }
        state.engines -= 1;
        if state.engines > 0 {
            return;
        }
        let Some(done) = state.done.take() else {
            return;
        };
        let sum = state.sum;
        let result = match (state.error, self.classes) {
            (Some(error), _) => Err(error),
            (None, Classes::None) => Ok(Counts {
                solutions: sum.solutions,
                fundamental: None,
                turn_fixed: None,
            }),
            (None, Classes::Summed) => Ok(Counts {
                solutions: sum.solutions,
                fundamental: Some(sum.classes),
                turn_fixed: None,
            }),
            (None, Classes::FixedPoints) => match sum.solutions.checked_add(sum.classes) {
                Some(points) if points % 8 == 0 => Ok(Counts {
                    solutions: sum.solutions,
                    fundamental: Some(points / 8),
                    turn_fixed: None,
                }),
                // Fixed points that do not make whole classes are a bug.
                Some(_) => Err(CountError::Failed),
                None => Err(CountError::Overflow),
            },
            (None, Classes::PassedOn) => Ok(Counts {
                solutions: sum.solutions,
                fundamental: None,
                turn_fixed: Some(sum.classes),
            }),
        };
        drop(state);
        done(result);
    }
}

/// A subproblem being counted in the lanes.
#[derive(Debug, Default)]
struct Open {
    /// Completions of its boards so far.
    completions: u64,
    /// Its boards out in the lanes.
    out: usize,
    /// Solutions of those completions already shown in progress.
    found: u64,
}

/// One engine of a count: a set of lanes and the subproblems it is splitting into boards
/// for them, kept between the slices it runs on the pool.
struct Engine<T: Subproblem> {
    counting: Arc<Counting<T>>,
    /// The subproblem being split, and its boards not yet handed out.
    split: Option<(usize, Split)>,
    /// The subproblems being counted in the lanes.
    open: HashMap<usize, Open>,
    /// Counts of the subproblems this engine finished.
    sum: Partial,
    lanes: Option<LaneSet>,
    /// Set once the engine reported to its count; an engine dropped before (its slice
    /// panicked) reports a failure instead.
    reported: bool,
}

impl<T: Subproblem> Engine<T> {
    fn new(counting: Arc<Counting<T>>) -> Engine<T> {
        Engine {
            counting,
            split: None,
            open: HashMap::new(),
            sum: Partial::default(),
            lanes: None,
            reported: false,
        }
    }

    /// Runs one slice: until the work is done, or the slice is over and other pool jobs wait
    /// (then the engine queues itself again), or the count stops.
    fn slice(mut self, pool: Pool) {
        let counting = self.counting.clone();
        let until = Instant::now() + SLICE;
        let pause = || counting.stopped() || (Instant::now() >= until && pool.waiting() > 0);
        let outcome = match counting.lanes {
            _ if counting.stopped() => Ok(Outcome::Paused),
            Some(simd) => self.run_lanes(simd, &pause),
            None => self.run_alone(&pause),
        };
        let result = match outcome {
            Ok(Outcome::Paused) if !counting.stopped() => {
                let pool2 = pool.clone();
                pool.spawn(move || self.slice(pool2));
                return;
            }
            Ok(Outcome::Paused) if counting.cancel.load(Ordering::Relaxed) => {
                Err(CountError::Cancelled)
            }
            Ok(_) => Ok(self.sum),
            Err(error) => Err(error),
        };
        self.reported = true;
        counting.engine_ended(result);
    }

    /// The slice in the lanes, in tier `simd`.
    fn run_lanes(&mut self, simd: Tier, pause: &impl Fn() -> bool) -> Result<Outcome, CountError> {
        let mut lanes = self
            .lanes
            .take()
            .unwrap_or_else(|| LaneSet::new(self.counting.n));
        let outcome = lanes.run(simd, self, pause);
        self.lanes = Some(lanes);
        outcome
    }

    /// The slice with every subproblem searched alone, one at a time.
    fn run_alone(&mut self, pause: &impl Fn() -> bool) -> Result<Outcome, CountError> {
        while !pause() {
            let index = self.counting.next.fetch_add(1, Ordering::Relaxed);
            if index >= self.counting.items.len() {
                return Ok(Outcome::Done);
            }
            self.alone(index)?;
        }
        Ok(Outcome::Paused)
    }

    /// Counts subproblem `index` by the scalar search, its solutions showing in progress as
    /// they are found.
    fn alone(&mut self, index: usize) -> Result<(), CountError> {
        let counting = self.counting.clone();
        let item = &counting.items[index];
        let (per, mut found) = (item.per_completion(), 0u64);
        let mut tally = |completions: u64| {
            let solutions = completions.saturating_mul(per);
            counting.progress.found(solutions);
            found = found.saturating_add(solutions);
        };
        let part = item.alone(counting.n, &counting.cancel, &mut tally)?;
        self.finish(part, found)
    }

    /// Adds a finished subproblem's counts, of whose solutions `found` already show in
    /// progress.
    fn finish(&mut self, part: Partial, found: u64) -> Result<(), CountError> {
        let progress = &self.counting.progress;
        self.sum = self
            .sum
            .add(progress.add(part, self.counting.classes, found))?;
        Ok(())
    }

    /// Finishes subproblem `index`, all of whose boards are in.
    fn close(&mut self, index: usize) -> Result<(), CountError> {
        let open = self.open.remove(&index).unwrap_or_default();
        let part = self.counting.items[index].weigh(open.completions)?;
        self.finish(part, open.found)
    }
}

impl<T: Subproblem> Drop for Engine<T> {
    fn drop(&mut self) {
        if !self.reported {
            self.counting.engine_ended(Err(CountError::Failed));
        }
    }
}

impl<T: Subproblem> Feed for Engine<T> {
    fn next(&mut self) -> Result<Option<(usize, Start)>, CountError> {
        loop {
            if let Some((index, split)) = &mut self.split {
                let index = *index;
                if let Some(start) = split.next() {
                    if let Some(entry) = self.open.get_mut(&index) {
                        entry.out += 1;
                    }
                    return Ok(Some((index, start)));
                }
                self.split = None;
                if self.open.get(&index).is_none_or(|entry| entry.out == 0) {
                    self.close(index)?;
                }
                continue;
            }
            let index = self.counting.next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = self.counting.items.get(index) else {
                return Ok(None);
            };
            match item
                .laned()
                .then(|| Split::new(self.counting.n, item.queens()))
                .flatten()
            {
                Some(split) => {
                    self.open.insert(index, Open::default());
                    self.split = Some((index, split));
                }
                None => self.alone(index)?,
            }
        }
    }

    fn done(&mut self, tag: usize, completions: u64) -> Result<(), CountError> {
        let Some(entry) = self.open.get_mut(&tag) else {
            return Ok(());
        };
        entry.completions = entry
            .completions
            .checked_add(completions)
            .ok_or(CountError::Overflow)?;
        entry.out -= 1;
        // A board's completions show in progress at once: a subproblem past the join can
        // take minutes in boards of milliseconds.
        let solutions = completions.saturating_mul(self.counting.items[tag].per_completion());
        self.counting.progress.found(solutions);
        entry.found = entry.found.saturating_add(solutions);
        let splitting = self.split.as_ref().is_some_and(|(index, _)| *index == tag);
        if entry.out == 0 && !splitting {
            self.close(tag)?;
        }
        Ok(())
    }
}
