//! The batch commands: `count --local` (one shard counted in this process, its index from
//! the flags or the orchestrator's environment; one JSON line with `--json`) and `sum`
//! (the total of such lines, from files or stdin, with their digest and where they were
//! counted).

use super::args::{CountArgs, SumArgs};
use super::error::Error;
use super::print::print_counts;
use crate::batch;
use crate::config::{ReadError, default_search_threads};
use crate::solver::Recount;
use std::io::BufRead;

/// `count --local`: one shard counted in process on every core (the shard from `--shard`,
/// else from the orchestrator's index when `--shards` is given); one JSON line with
/// `--json`.
pub fn count_local(args: &CountArgs) -> Result<(), Error> {
    let shard = batch::shard_of_task(args.client.shard, args.spread.shards)?;
    let counted = batch::count_local(
        args.n,
        &args.client.fixed,
        shard,
        default_search_threads(),
        args.recount.map(|fraction| Recount {
            fraction,
            seed: args.recount_seed,
            method: args.recount_method.method(),
        }),
    )?;
    if args.json {
        println!("{}", serde_json::to_string(&counted)?);
    } else {
        print_counts(counted.solutions, counted.fundamental, counted.turn_fixed);
    }
    Ok(())
}

/// `sum`: the total of shard lines from files, or stdin when none is given, read a line at a
/// time (a million lines hold only their counts).
pub fn sum(args: SumArgs) -> Result<(), Error> {
    let mut summer = batch::Summer::new(args.allow_mixed_builds);
    if args.files.is_empty() {
        add_lines(&mut summer, std::io::stdin().lock(), Error::Stdin)?;
    }
    for path in &args.files {
        let named = |source| ReadError {
            path: path.clone(),
            source,
        };
        let file = std::fs::File::open(path).map_err(named)?;
        add_lines(&mut summer, std::io::BufReader::new(file), |e| {
            named(e).into()
        })?;
    }
    let total = summer.total()?;
    println!("n: {}", total.n);
    println!("shards: {}", total.shards);
    print_counts(total.solutions, total.fundamental, None);
    print_origins(&total);
    Ok(())
}

/// Hosts named one by one; more are counted.
const SHOWN_HOSTS: usize = 8;

/// The digest of a sum's counts and where they were counted (`unknown` for lines that do
/// not say), on stdout after the total; a warning on stderr when builds were mixed.
fn print_origins(total: &batch::Total) {
    let o = &total.origins;
    println!("digest: sha256:{}", total.digest);
    println!("builds: {}", batch::tally_text(&o.builds));
    println!("tiers: {}", batch::tally_text(&o.tiers));
    println!("cpus: {}", batch::tally_text(&o.cpus));
    let mut hosts: Vec<String> = o.hosts.keys().take(SHOWN_HOSTS).cloned().collect();
    if o.hosts.len() > SHOWN_HOSTS {
        hosts.push(format!("and {} more", o.hosts.len() - SHOWN_HOSTS));
    }
    println!("hosts: {} ({})", o.hosts.len(), hosts.join(", "));
    let (seconds, lines) = o.cpu_seconds;
    if lines > 0 {
        println!("core-hours: {:.4} (of {lines} shards)", seconds / 3600.0);
    }
    for (method, (lines, parts)) in &o.recounts {
        println!("recounted by {method}: {parts} parts in {lines} shards");
    }
    if let Some(peak) = o.peak_bytes {
        println!(
            "peak memory of a shard: {:.1} MiB",
            peak as f64 / f64::from(1 << 20)
        );
    }
    if o.builds.len() > 1 {
        eprintln!(
            "warning: the shards were counted by {} builds",
            o.builds.len()
        );
    }
}

/// Adds every line of `input` to `summer` (bytes that are not UTF-8 replaced), a read error
/// made an [`Error`] by `failed`.
fn add_lines(
    summer: &mut batch::Summer,
    mut input: impl BufRead,
    failed: impl Fn(std::io::Error) -> Error,
) -> Result<(), Error> {
    let mut line = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line).map_err(&failed)? == 0 {
            return Ok(());
        }
        summer.add(&String::from_utf8_lossy(&line))?;
    }
}
