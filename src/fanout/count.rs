//! A fanned-out count: one Count call per shard, and the total summed with checked
//! arithmetic (the classes from the shards' turn-fixed points where they have those).

use super::error::Error;
use super::job::FanoutJob;
use super::queue::{EndpointStats, OnShard, ShardTask, run_shards};
use crate::client::Client;
use crate::pb::CountRequest;
use crate::solver::Counts;
use std::sync::Arc;

/// The result of a fanned-out count.
#[derive(Clone, Debug)]
pub struct CountTotal {
    /// Total solutions.
    pub solutions: u64,
    /// Total symmetry classes (absent with fixed queens).
    pub fundamental: Option<u64>,
    /// How each endpoint fared.
    pub endpoints: Vec<EndpointStats>,
}

/// Counting one shard.
#[derive(Clone)]
struct CountShard {
    job: Arc<FanoutJob>,
}

impl ShardTask for CountShard {
    type Output = Counts;

    async fn run(&self, mut client: Client, index: u32) -> Result<(Counts, u64), tonic::Status> {
        let request = CountRequest {
            n: self.job.n,
            fixed: self.job.fixed.clone(),
            shard: Some(self.job.shard(index)),
        };
        let r = client.count(request).await?.into_inner();
        Ok((Counts::from(&r), r.solutions))
    }
}

/// Counts `job` over the servers at `urls`, shard by shard, summing with checked arithmetic
/// into the whole's exact counts, or failing when the shards' counts do not make them.
pub async fn count(
    job: &FanoutJob,
    urls: &[String],
    progress: Option<OnShard>,
) -> Result<CountTotal, Error> {
    let task = CountShard {
        job: Arc::new(job.clone()),
    };
    let (results, endpoints) = run_shards(job, urls, &[], task, progress).await?;
    let total = Counts::whole(results.into_iter().flatten())?;
    Ok(CountTotal {
        solutions: total.solutions,
        fundamental: total.fundamental,
        endpoints,
    })
}
