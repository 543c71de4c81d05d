//! Requests to validated questions: the checks of a server's limits on top of the solver's
//! own. Shared by the service and the fuzz target, so both read a request the same way. Every
//! refusal is a [`QueryError`] whose message names the field at fault. The field-by-field
//! conversions between wire and solver types are `crate::wire`'s.

use crate::config;
use crate::pb;
use crate::solver::{MAX_N, Problem, QueryError};
use crate::stream::{BoardEncoder, Enumeration, Form};
use crate::wire::{shard, squares};

/// A server's limits on requests, on top of the solver's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Query {
    /// Largest board size accepted (`--max-n`).
    pub max_n: u32,
    /// Largest response message: batches shrink to stay under it.
    pub max_message_bytes: usize,
    /// Bytes a message aims for when the request leaves `batch_size` at 0.
    pub default_batch_bytes: usize,
}

impl Default for Query {
    fn default() -> Query {
        Query {
            max_n: MAX_N,
            max_message_bytes: config::MAX_MESSAGE_BYTES,
            default_batch_bytes: config::DEFAULT_BATCH_BYTES,
        }
    }
}

impl Query {
    /// The validated question of a Count request.
    pub fn count(&self, req: &pb::CountRequest) -> Result<Problem, QueryError> {
        Problem::with_max_n(
            req.n,
            &squares(&req.fixed),
            false,
            shard(req.shard.as_ref()),
            self.max_n,
        )
    }

    /// The validated stream of an Enumerate request.
    pub fn enumerate(&self, req: &pb::EnumerateRequest) -> Result<Enumeration, QueryError> {
        let problem = Problem::with_max_n(
            req.n,
            &squares(&req.fixed),
            req.fundamental,
            shard(req.shard.as_ref()),
            self.max_n,
        )?;
        let start_after = problem.check_start_after(&req.start_after)?;
        let form = Form::of(req.compact, req.packed, req.layout);
        let encoder = BoardEncoder::new(req.n, form);
        let per_board = encoder.entry_len();
        let room = self
            .max_message_bytes
            .saturating_sub(encoder.message_overhead());
        let most = (room / per_board).max(1);
        // Front-coded messages aim at the same bytes on the wire: about a quarter of the
        // records' (at n = 16), so four times the boards, which also spreads a decoder's
        // cost per message (numpy's per column) over more boards.
        let aim = match form {
            Form::FrontCoded => 4 * self.default_batch_bytes,
            _ => self.default_batch_bytes,
        };
        let batch = match req.batch_size {
            0 => aim / per_board,
            asked => asked as usize,
        };
        Ok(Enumeration {
            problem,
            start_after,
            limit: (req.limit > 0).then_some(req.limit),
            batch: batch.clamp(1, most),
            form,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A packed request's batch at the largest size asked for, and its message's bytes.
    fn packed_batch(n: u32, batch_size: u32) -> (usize, usize) {
        let request = pb::EnumerateRequest {
            n,
            batch_size,
            packed: true,
            ..Default::default()
        };
        let job = Query::default().enumerate(&request).expect("valid");
        let encoder = BoardEncoder::new(n, Form::Packed);
        let message = encoder.batch(vec![0; job.batch * n as usize]);
        (job.batch, prost::Message::encoded_len(&message))
    }

    #[test]
    fn packed_batches_stay_under_the_4_mib_cap() {
        const CAP: usize = 4 * 1024 * 1024;
        // n = 32: 131,071 records of 32 bytes plus the field's key and length.
        assert_eq!(packed_batch(32, u32::MAX), (131_071, 131_071 * 32 + 5));
        for n in 1..=MAX_N {
            let (batch, bytes) = packed_batch(n, u32::MAX);
            assert!(bytes <= CAP, "n = {n}: {bytes} bytes");
            // One more record would not fit, with room for the largest key and length.
            assert!(
                (batch + 1) * n as usize + 6 > CAP,
                "n = {n}: {batch} records"
            );
            assert_eq!(packed_batch(n, 3).0, 3);
        }
        // The default aims at the default message size.
        assert_eq!(packed_batch(16, 0).0, config::DEFAULT_BATCH_BYTES / 16);
    }
}
