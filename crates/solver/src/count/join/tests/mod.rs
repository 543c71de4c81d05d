//! The join's unit tests, by subject: every tier this CPU has runs each.
//!
//! - `counts.rs`: whole counts and shards against OEIS (A000170, A002562), on both paths.
//! - `parts.rs`: a count's parts: shared tables, pieces, shards, memory, cancellation,
//!   progress, recounts.
//! - `sieve.rs`: the keys, the sieve's sampling and its weighted pair tests against the
//!   definition, and its sides shared with a parked engine.
//! - `search.rs`: parts of n = 25 to 28 against a plain search.
//! - `check.rs`: the second opinion (a key's plain search) against OEIS and the join, and
//!   in a count.

mod check;
mod counts;
mod parts;
mod search;
mod sieve;

use super::super::subproblem::Subproblem;
use super::super::{CountOptions, Progress, Recount, RecountMethod};
use super::bands::KeyBands;
use super::fixed::turn_fixed_from;
use super::kernels::{leaf, weighted_narrowed};
use super::keys::{self, Key, subsets};
use super::memory::Allowance;
use super::path::Join;
use super::sample::{LONG_BLOCK, LONG_SAMPLE, SAMPLE, density};
use super::share::{Branch, Exchange, OFFER_PAIRS};
use super::sieve::{Piece, Sieve};
use super::tables::build_steps;
use super::wide::{CHUNK, engine_bytes};
use super::word::{BALANCE_SHIFT, BAND_BIAS, Layout};
use super::work::{Task, Work};
use super::{Kind, MAX, Part, RECOUNT_FAULT, SEARCH_FAULT, chosen, keys_held, parts, shared};
use crate::Shard;
use crate::counts::CountError;
use crate::oeis::{A000170, A002562};
use crate::pool::{Pool, wait};
use crate::simd::{Tier, TierKind, tier, tiers_to_test};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
