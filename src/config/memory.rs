//! The memory budget's rule ([`default_max_memory`]): what this process may use — its
//! memory cgroup's limit (v2 `memory.max` or v1 `memory.limit_in_bytes`, the lowest on the
//! way up from its own cgroup) when there is one, else the machine's memory — less a reserve
//! for everything that is not a search ([`memory_reserve`]); and [`Bytes`], a size from the
//! command line. Reading the limit is all this does: what a search reserves is the service's
//! business.

use std::path::Path;

/// One MiB.
const MIB: u64 = 1 << 20;

/// The least memory kept out of the budget: the server without searches (about 20 MiB of
/// RSS), its connections and requests in flight at their caps (measured: 300 connections
/// holding 100 streams each peaked at 56-66 MiB of RSS in all, `tests/hardening.rs`), and
/// the allocator's slack: 96 MiB covers them with room to spare.
pub const MIN_MEMORY_RESERVE: u64 = 96 * MIB;

/// What the budget leaves out of a limit of `limit` bytes: an eighth of it, at least
/// [`MIN_MEMORY_RESERVE`] (an eighth covers the allocator's slack, which grows with what the
/// searches allocate and free), and never all of it.
pub fn memory_reserve(limit: u64) -> u64 {
    (limit / 8).max(MIN_MEMORY_RESERVE).min(limit / 2)
}

/// The memory this process may use, and where the figure comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryLimit {
    /// Bytes.
    pub bytes: u64,
    /// Where it was read.
    pub source: LimitSource,
}

/// Where a [`MemoryLimit`] was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitSource {
    /// The memory cgroup's limit (a container's, a Kubernetes pod's, a Slurm job's).
    Cgroup,
    /// The machine's physical memory: no cgroup limits the process.
    Machine,
}

/// The memory this process may use: its cgroup's limit when that is below the machine's
/// memory, else the machine's memory.
pub fn memory_limit() -> MemoryLimit {
    let machine = machine_memory();
    let cgroup = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|text| cgroup_limit(&text, Path::new("/sys/fs/cgroup")));
    match cgroup {
        Some(bytes) if bytes < machine => MemoryLimit {
            bytes,
            source: LimitSource::Cgroup,
        },
        _ => MemoryLimit {
            bytes: machine,
            source: LimitSource::Machine,
        },
    }
}

/// The budget of searches' memory by default: [`memory_limit`] less [`memory_reserve`].
pub fn default_max_memory() -> u64 {
    let limit = memory_limit().bytes;
    limit - memory_reserve(limit)
}

/// The machine's physical memory (`sysconf`), or 1 GiB if it cannot be read.
fn machine_memory() -> u64 {
    // SAFETY: sysconf takes a plain integer and returns one; no memory is shared.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    match (u64::try_from(pages), u64::try_from(size)) {
        (Ok(pages), Ok(size)) if pages > 0 && size > 0 => pages.saturating_mul(size),
        _ => 1 << 30,
    }
}

/// The lowest memory limit on the way from the process's cgroup up to the root, given the
/// text of `/proc/self/cgroup` and where the cgroup file systems are mounted (`root`): under
/// cgroup v2 (`0::/path`) the files `memory.max` of `root/path` and its parents; under v1
/// (`N:...memory...:/path`) the files `memory.limit_in_bytes` of `root/memory/path` and its
/// parents. Inside a container's own cgroup namespace the path may not exist under the
/// mount, whose top is then the container's cgroup: its file counts too. `None` when no
/// file holds a limit ("max", or v1's figure for none, near 2^63).
pub fn cgroup_limit(proc_cgroup: &str, root: &Path) -> Option<u64> {
    let mut lowest: Option<u64> = None;
    for line in proc_cgroup.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let (base, file) = if controllers.is_empty() {
            (root.to_path_buf(), "memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            (root.join("memory"), "memory.limit_in_bytes")
        } else {
            continue;
        };
        let mut dir = Some(Path::new(path.trim()));
        while let Some(at) = dir {
            let relative = at.strip_prefix("/").unwrap_or(at);
            if let Some(bytes) = read_limit(&base.join(relative).join(file)) {
                lowest = Some(lowest.map_or(bytes, |l| l.min(bytes)));
            }
            dir = at.parent();
        }
    }
    lowest
}

/// A cgroup limit file's figure, if it holds one: "max" and v1's "no limit" (at least
/// 2^62) hold none.
fn read_limit(file: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    let bytes: u64 = text.trim().parse().ok()?;
    (bytes < 1 << 62).then_some(bytes)
}

/// A number of bytes from the command line: digits, optionally followed by a unit — `K`,
/// `M`, `G`, `T` (powers of 1,000) or `Ki`, `Mi`, `Gi`, `Ti` (powers of 1,024), the units
/// Kubernetes writes memory in; a trailing `B` is allowed (`512MiB`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bytes(pub u64);

/// Why a text is not a number of [`Bytes`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "expected a number of bytes, such as 1073741824, 1024Mi or 1G (units K, M, G, T, Ki, Mi, Gi, Ti)"
)]
pub struct BytesError;

impl std::str::FromStr for Bytes {
    type Err = BytesError;

    fn from_str(text: &str) -> Result<Bytes, BytesError> {
        let text = text.trim();
        let text = text.strip_suffix('B').unwrap_or(text);
        let digits = text
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(digits);
        let number: u64 = number.parse().map_err(|_| BytesError)?;
        let scale: u64 = match unit {
            "" => 1,
            "K" | "k" => 1_000,
            "M" => 1_000_000,
            "G" => 1_000_000_000,
            "T" => 1_000_000_000_000,
            "Ki" => 1 << 10,
            "Mi" => 1 << 20,
            "Gi" => 1 << 30,
            "Ti" => 1 << 40,
            _ => return Err(BytesError),
        };
        number.checked_mul(scale).map(Bytes).ok_or(BytesError)
    }
}

impl std::fmt::Display for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_kubernetes_units() {
        let parse = |t: &str| t.parse::<Bytes>().map(|b| b.0);
        assert_eq!(parse("1073741824"), Ok(1 << 30));
        assert_eq!(parse("1536Mi"), Ok(1536 << 20));
        assert_eq!(parse("2Gi"), Ok(2 << 30));
        assert_eq!(parse("512MiB"), Ok(512 << 20));
        assert_eq!(parse("3G"), Ok(3_000_000_000));
        assert_eq!(parse("64k"), Ok(64_000));
        for bad in [
            "",
            "Mi",
            "-1",
            "1.5Gi",
            "12 Mi",
            "1Qi",
            "99999999999999999999Ti",
        ] {
            assert_eq!(parse(bad), Err(BytesError), "{bad:?}");
        }
    }

    #[test]
    fn the_reserve_is_an_eighth_at_least_96_mib_and_never_all() {
        assert_eq!(memory_reserve(256 * MIB), 96 * MIB);
        assert_eq!(memory_reserve(8 << 30), 1 << 30);
        assert_eq!(memory_reserve(100 * MIB), 50 * MIB);
    }

    /// A cgroup tree in a temporary folder: v2 limits on the way up, v1 under its own
    /// mount, "max" and v1's "no limit" ignored, the container's own top when the path is
    /// not under the mount.
    #[test]
    fn cgroup_limits_are_the_lowest_on_the_way_up_in_v1_and_v2() {
        let root = std::env::temp_dir().join(format!("queens-cgroup-{}", std::process::id()));
        let write = |path: &str, text: &str| {
            let file = root.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        };
        write("kubepods/pod1/memory.max", "max\n");
        write("kubepods/memory.max", "268435456\n");
        write("memory.max", "max\n");
        assert_eq!(cgroup_limit("0::/kubepods/pod1\n", &root), Some(256 * MIB));
        assert_eq!(cgroup_limit("0::/elsewhere\n", &root), None);
        write("memory/job_7/memory.limit_in_bytes", "1073741824\n");
        write("memory/memory.limit_in_bytes", "9223372036854771712\n");
        let v1 = "12:cpu,cpuacct:/job_7\n11:memory:/job_7\n";
        assert_eq!(cgroup_limit(v1, &root), Some(1 << 30));
        write("memory/memory.limit_in_bytes", "536870912\n");
        assert_eq!(
            cgroup_limit("11:memory:/docker/abc\n", &root),
            Some(512 * MIB)
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
