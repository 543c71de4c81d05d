//! Where and how a shard line was counted: the build (version and commit), the SIMD tier,
//! the CPU model, the host, the process's CPU seconds and peak memory, the recount asked
//! for (fraction, method, seed) and the seconds it took, and when the line was made. Read from this process and machine (`/proc` and `getrusage`); what
//! the lines say together is `sum.rs`'s.

use crate::solver::{self, Progress, Recount};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

/// What a line says when it does not say something (a line of an older version).
pub const UNKNOWN: &str = "unknown";

/// The build a line was counted by.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Build {
    /// The crate's version.
    pub version: String,
    /// The commit the binary was built from (`-dirty` after it when its tracked files
    /// differed from that commit), or `unknown` (built without `.git` or `$QUEENS_COMMIT`).
    pub commit: String,
}

impl Build {
    /// This binary's build.
    pub fn this() -> Build {
        Build {
            version: env!("CARGO_PKG_VERSION").to_string(),
            commit: env!("QUEENS_COMMIT").to_string(),
        }
    }
}

impl std::fmt::Display for Build {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.version, self.commit)
    }
}

/// How and where a shard was counted; every field is absent on lines of older versions.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Provenance {
    /// The build that counted it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub build: Option<Build>,
    /// The SIMD tier it was counted in (`AVX-512`, `AVX2`, `portable`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tier: Option<String>,
    /// The CPU model (`model name` of `/proc/cpuinfo`), or `unknown`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cpu: Option<String>,
    /// The host's name, or `unknown`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub host: Option<String>,
    /// CPU seconds (user and system) of the whole process, its start and the tables
    /// included, up to the line.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cpu_seconds: Option<f64>,
    /// The process's peak resident memory, in bytes, up to the line.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub peak_bytes: Option<u64>,
    /// The threads it counted on (one engine each: the CPUs it saw, or `--threads`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub threads: Option<u32>,
    /// The share of the join's parts asked to be recounted (`--recount`), 0 without it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub recount: Option<f64>,
    /// How they were recounted (`tier`: the join in another SIMD tier; `search`: a plain
    /// search, another method), with `--recount`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub recount_method: Option<String>,
    /// The seed that chose them, with `--recount`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub recount_seed: Option<u64>,
    /// CPU seconds the recounts took on their threads (the second counts alone), with
    /// `--recount`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub recount_seconds: Option<f64>,
    /// When the line was made (the count and its recounts done), UTC, as
    /// `2026-12-07T03:04:05Z`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub finished: Option<String>,
}

impl Provenance {
    /// This process's, now: its build, tier, CPU and host, the CPU and memory it has used,
    /// the `threads` it counted on, and `recount` (what was asked for, if anything), with
    /// the seconds its recounts took by `progress`.
    pub fn here(
        threads: usize,
        recount: Option<Recount>,
        progress: Option<&Progress>,
    ) -> Provenance {
        let usage = Usage::of_this_process();
        let nanos = progress.map_or(0, |p| p.recount_nanos.load(Ordering::Relaxed));
        Provenance {
            build: Some(Build::this()),
            tier: Some(solver::tier_name().to_string()),
            cpu: Some(cpu_model()),
            host: Some(host_name()),
            cpu_seconds: usage.map(|u| u.cpu_seconds),
            peak_bytes: usage.map(|u| u.peak_bytes),
            threads: u32::try_from(threads).ok(),
            recount: Some(recount.map_or(0.0, |r| r.fraction)),
            recount_method: recount.map(|r| r.method.name().to_string()),
            recount_seed: recount.map(|r| r.seed),
            recount_seconds: recount.map(|_| nanos as f64 / 1e9),
            finished: Some(utc_now()),
        }
    }
}

/// Now, UTC, as `2026-12-07T03:04:05Z` (the epoch if the clock is before it).
pub fn utc_now() -> String {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    utc_text(since)
}

/// `seconds` since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (the proleptic Gregorian
/// calendar, from the days by Hinnant's `civil_from_days`).
fn utc_text(seconds: u64) -> String {
    let (days, rest) = ((seconds / 86_400) as i64, seconds % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    let (hour, minute, second) = (rest / 3_600, rest / 60 % 60, rest % 60);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z")
}

/// CPU time and peak memory of a process, from `getrusage` or `wait4`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Usage {
    /// User and system CPU seconds.
    pub cpu_seconds: f64,
    /// Peak resident memory in bytes.
    pub peak_bytes: u64,
}

impl Usage {
    /// What a `rusage` says (Linux counts `ru_maxrss` in KiB).
    pub fn from_rusage(usage: &libc::rusage) -> Usage {
        let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        Usage {
            cpu_seconds: seconds(usage.ru_utime) + seconds(usage.ru_stime),
            peak_bytes: (usage.ru_maxrss.max(0) as u64).saturating_mul(1024),
        }
    }

    /// This process's so far, if `getrusage` answers.
    pub fn of_this_process() -> Option<Usage> {
        // SAFETY: `rusage` is plain integers and `timeval`s, for which all zero bytes are a
        // value.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: getrusage writes one `rusage` into the one it is given, which lives here.
        let done = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
        (done == 0).then(|| Usage::from_rusage(&usage))
    }
}

/// The CPU's model name from `/proc/cpuinfo` (its first `model name`, else ARM's
/// `Hardware` or `Processor`), or `unknown`.
pub fn cpu_model() -> String {
    let text = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    model_in(&text).unwrap_or_else(|| UNKNOWN.to_string())
}

/// The CPU model `/proc/cpuinfo`'s text names, if any.
fn model_in(cpuinfo: &str) -> Option<String> {
    ["model name", "Hardware", "Processor"]
        .iter()
        .find_map(|key| {
            cpuinfo.lines().find_map(|line| {
                let (name, value) = line.split_once(':')?;
                let value = value.trim();
                (name.trim() == *key && !value.is_empty()).then(|| value.to_string())
            })
        })
}

/// The host's name (the kernel's, as `hostname` prints it), or `unknown`.
pub fn host_name() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let name = name.trim();
    if name.is_empty() {
        UNKNOWN.to_string()
    } else {
        name.to_string()
    }
}

/// What a set of lines says of where it was counted: how many lines each build, tier, CPU
/// model and host counted (`unknown` for lines that do not say), the CPU seconds of the
/// lines that give theirs, and the largest peak.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Origins {
    /// Lines per build.
    pub builds: BTreeMap<String, u64>,
    /// Lines per SIMD tier.
    pub tiers: BTreeMap<String, u64>,
    /// Lines per CPU model.
    pub cpus: BTreeMap<String, u64>,
    /// Lines per host.
    pub hosts: BTreeMap<String, u64>,
    /// CPU seconds of the lines that give theirs, and how many those are.
    pub cpu_seconds: (f64, u64),
    /// The largest peak memory of a line, in bytes.
    pub peak_bytes: Option<u64>,
    /// Per recount method (`tier`, `search`), the lines that recounted parts that way and
    /// the parts they recounted (lines that recounted none are left out).
    pub recounts: BTreeMap<String, (u64, u64)>,
}

impl Origins {
    /// Adds one line's provenance, and the parts it says it recounted.
    pub fn add(&mut self, p: &Provenance, recounted: Option<u64>) {
        let tally = |map: &mut BTreeMap<String, u64>, key: Option<&str>| {
            let key = key.unwrap_or(UNKNOWN);
            match map.get_mut(key) {
                Some(lines) => *lines += 1,
                None => {
                    map.insert(key.to_string(), 1);
                }
            }
        };
        tally(
            &mut self.builds,
            p.build.as_ref().map(Build::to_string).as_deref(),
        );
        tally(&mut self.tiers, p.tier.as_deref());
        tally(&mut self.cpus, p.cpu.as_deref());
        tally(&mut self.hosts, p.host.as_deref());
        if let Some(seconds) = p.cpu_seconds {
            self.cpu_seconds.0 += seconds;
            self.cpu_seconds.1 += 1;
        }
        self.peak_bytes = self.peak_bytes.max(p.peak_bytes);
        if let Some(parts) = recounted.filter(|&parts| parts > 0) {
            // Lines of before the methods recounted in another tier.
            let method = p.recount_method.as_deref().unwrap_or("tier");
            let entry = self.recounts.entry(method.to_string()).or_default();
            *entry = (entry.0 + 1, entry.1 + parts);
        }
    }
}

/// A tally as `A (3 shards); B (1 shard)`.
pub fn tally_text(map: &BTreeMap<String, u64>) -> String {
    let entries = map.iter().map(|(key, &lines)| {
        let noun = if lines == 1 { "shard" } else { "shards" };
        format!("{key} ({lines} {noun})")
    });
    entries.collect::<Vec<_>>().join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_is_read_from_cpuinfo() {
        let x86 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9R14\n\
                   processor\t: 1\nmodel name\t: AMD EPYC 9R14\n";
        assert_eq!(model_in(x86).as_deref(), Some("AMD EPYC 9R14"));
        let arm = "processor\t: 0\nBogoMIPS\t: 50.00\nHardware\t: BCM2835\n";
        assert_eq!(model_in(arm).as_deref(), Some("BCM2835"));
        assert_eq!(model_in("processor\t: 0\nmodel name\t:\n"), None);
        assert_eq!(model_in(""), None);
    }

    #[test]
    fn times_are_written_in_utc() {
        assert_eq!(utc_text(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_text(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_text(1_796_612_645), "2026-12-07T03:04:05Z");
        assert_eq!(utc_text(4_107_542_399), "2100-02-28T23:59:59Z");
    }

    #[test]
    fn this_process_has_used_some_cpu_and_memory() {
        let recount = Recount {
            fraction: 0.5,
            seed: 3,
            method: solver::RecountMethod::Search,
        };
        let here = Provenance::here(3, Some(recount), None);
        let build = here.build.expect("a build");
        assert_eq!(build.version, env!("CARGO_PKG_VERSION"));
        assert!(!build.commit.is_empty());
        assert_eq!((here.threads, here.recount), (Some(3), Some(0.5)));
        assert_eq!(here.recount_method.as_deref(), Some("search"));
        assert_eq!(
            (here.recount_seed, here.recount_seconds),
            (Some(3), Some(0.0))
        );
        assert!(
            here.finished
                .is_some_and(|t| t.ends_with('Z') && t.len() == 20)
        );
        assert!(here.cpu_seconds.is_some_and(|s| s > 0.0));
        // More than a MiB and less than a TiB.
        assert!(here.peak_bytes.is_some_and(|b| b > 1 << 20 && b < 1 << 40));
        assert!(!here.host.expect("a host").is_empty());
    }
}
