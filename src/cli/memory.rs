//! `memory`: the solver's memory model as a table, by board size and CPUs (the arithmetic is
//! `crate::batch`'s): what a server reserves for a count, the memory limit of a server that
//! admits it, and the `--mem` of a batch task. Nothing is counted or measured here.

use super::args::MemoryArgs;
use super::error::Error;
use crate::batch::{CountNeed, count_need};

/// The sizes printed without any named: those the join counts, whose memory grows with n.
const JOIN_SIZES: std::ops::RangeInclusive<u32> = 16..=28;

/// Prints the memory model for `args`: a table in MiB, or one JSON object per size.
pub fn memory(args: &MemoryArgs) -> Result<(), Error> {
    let sizes: Vec<u32> = if args.n.is_empty() {
        JOIN_SIZES.collect()
    } else {
        args.n.clone()
    };
    let needs = (sizes.iter())
        .map(|&n| count_need(n, args.parts, &args.cpus))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| clap::Error::raw(clap::error::ErrorKind::ValueValidation, format!("{e}\n")))?;
    if args.json {
        for need in &needs {
            println!("{}", serde_json::to_string(need)?);
        }
        return Ok(());
    }
    print!("{}", table(&needs, args.parts));
    Ok(())
}

/// Bytes as whole MiB, rounded up.
fn mib(bytes: u64) -> u64 {
    bytes.div_ceil(1 << 20)
}

/// The table `memory` prints: a line saying what it is, a header, a row per size.
fn table(needs: &[CountNeed], parts: u32) -> String {
    let split = if parts == 1 {
        "a whole count".to_string()
    } else {
        format!("a part of {parts} holding the most keys")
    };
    let mut out = format!(
        "MiB; {split}\ntables: the join's, one set per n; engine: a lone engine's lists (past \
         n = 25 half that each beside others); own: the count's other lists\non C CPUs, \
         reserved: by a server; limit: the least server memory limit that admits it; --mem: a \
         batch task's\n"
    );
    out.push_str(" n  tables  engine    own");
    for cpus in needs.first().map(|n| &n.by_cpus[..]).unwrap_or_default() {
        let reserved = format!("reserved, {}", cpus.cpus);
        out.push_str(&format!(
            "  | {reserved:>13}  {:>6}  {:>6}",
            "limit", "--mem"
        ));
    }
    out.push('\n');
    for need in needs {
        out.push_str(&format!(
            "{:>2}  {:>6}  {:>6}  {:>5}",
            need.n,
            mib(need.tables),
            mib(need.per_engine),
            mib(need.own)
        ));
        for cpus in &need.by_cpus {
            out.push_str(&format!(
                "  | {:>13}  {:>6}  {:>6}",
                mib(cpus.reserved),
                mib(cpus.server_limit),
                mib(cpus.task)
            ));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_a_row_per_size_and_columns_per_cpus() {
        let needs: Vec<CountNeed> = [12, 24]
            .iter()
            .map(|&n| count_need(n, 1, &[1, 2]).expect("valid"))
            .collect();
        let text = table(&needs, 1);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 6, "{text}");
        assert!(
            lines[3].contains("reserved, 1") && lines[3].contains("reserved, 2"),
            "{text}"
        );
        // n = 12 counts off the join: 8 MiB of its own lists on any CPUs.
        assert!(
            lines[4].starts_with("12       0       0      8  |"),
            "{text}"
        );
        assert_eq!(lines[5].split('|').count(), 3, "{text}");
    }
}
