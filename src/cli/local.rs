//! The batch commands: `count --local` (one shard counted in this process, its index from
//! the flags or the orchestrator's environment; one JSON line with `--json`) and `sum`
//! (the total of such lines, from files or stdin).

use super::args::{CountArgs, SumArgs};
use super::error::Error;
use super::print::print_counts;
use crate::batch;
use crate::config::{default_search_threads, read};
use std::io::BufRead;

/// `count --local`: one shard counted in process on every core (the shard from `--shard`,
/// else from the orchestrator's index when `--shards` is given); one JSON line with
/// `--json`.
pub fn count_local(args: &CountArgs) -> Result<(), Error> {
    let shard = batch::shard_of_task(args.client.shard, args.spread.shards)?;
    let counted = batch::count_local(args.n, &args.client.fixed, shard, default_search_threads())?;
    if args.json {
        println!("{}", serde_json::to_string(&counted)?);
    } else {
        print_counts(counted.solutions, counted.fundamental, counted.turn_fixed);
    }
    Ok(())
}

/// `sum`: the total of shard lines from files, or stdin when none is given.
pub fn sum(args: SumArgs) -> Result<(), Error> {
    let mut lines = Vec::new();
    if args.files.is_empty() {
        for line in std::io::stdin().lock().lines() {
            lines.push(line.map_err(Error::Stdin)?);
        }
    }
    for path in &args.files {
        let text = read(path)?;
        lines.extend(String::from_utf8_lossy(&text).lines().map(str::to_string));
    }
    let total = batch::sum(lines)?;
    println!("n: {}", total.n);
    println!("shards: {}", total.shards);
    print_counts(total.solutions, total.fundamental, None);
    Ok(())
}
