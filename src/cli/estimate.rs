//! `estimate`: a seeded sample of a split's parts, each counted by a process of this binary
//! (`queens count N --local --json --shard I/K`, its tables built in it, as a batch task
//! counts its part), timed with `wait4`; then what they say of the whole and the batch run
//! to ask for (the arithmetic is `crate::batch`'s), as text or one JSON object on stdout.
//! With `--cpus-per-task C` below the CPUs here, each part's process is held to C of them
//! (its affinity), as a task of C CPUs runs, and as many parts run at once as there are
//! C-CPU sets here. Progress on stderr: a bar on a terminal, else a line per part.

use super::args::EstimateArgs;
use super::error::Error;
use super::progress::{bar, finish};
use crate::batch::{self, Estimate, Plan, PlanAsk, Provenance, SampledPart, ShardCount, Usage};
use crate::config::default_search_threads;
use crate::solver::{Problem, Shard};
use serde::Serialize;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant;

/// What `estimate --json` prints.
#[derive(Serialize)]
struct Report<'a> {
    /// The estimate of the whole, with its sample.
    estimate: &'a Estimate,
    /// The batch run it suggests.
    plan: &'a Plan,
    /// How and where the first sampled part was counted (the build, tier, CPU and host of
    /// them all: one binary on one machine).
    provenance: &'a Provenance,
}

/// `estimate`: times the sampled parts (one after another, or a few at once on sets of
/// `--cpus-per-task` CPUs), then prints the estimate.
pub fn estimate(args: &EstimateArgs) -> Result<(), Error> {
    let shard = Shard {
        index: 0,
        count: args.parts,
    };
    Problem::new(args.n, &[], false, shard).map_err(batch::LocalCountError::from)?;
    let indices = batch::sample_parts(args.parts, args.samples, args.seed)?;
    let exe = std::env::current_exe().map_err(|e| Error::Part {
        index: indices[0],
        reason: format!("cannot find this program to run it: {e}"),
    })?;
    let slots = slots(args.cpus_per_task);
    let cpus_here = match &slots[0] {
        Some(cpus) => cpus.len() as u32,
        None => default_search_threads() as u32,
    };
    let shown = bar("{bar:30} {pos}/{len} parts, {elapsed} elapsed, ETA {eta}");
    if let Some(shown) = &shown {
        shown.set_length(indices.len() as u64);
    }
    let (next, failing) = (AtomicUsize::new(0), AtomicBool::new(false));
    let mut sample = Vec::with_capacity(indices.len());
    let mut provenance = Provenance::default();
    let mut failed = None;
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        for slot in &slots {
            let (tx, exe, indices) = (tx.clone(), &exe, &indices);
            let (next, failing) = (&next, &failing);
            scope.spawn(move || {
                while !failing.load(Ordering::Relaxed) {
                    let Some(&index) = indices.get(next.fetch_add(1, Ordering::Relaxed)) else {
                        break;
                    };
                    let part = run_part(exe, args.n, index, args.parts, slot.as_deref());
                    failing.fetch_or(part.is_err(), Ordering::Relaxed);
                    if tx.send(part).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for part in rx {
            let (part, line) = match part {
                Ok(done) => done,
                Err(error) => {
                    failed.get_or_insert(error);
                    continue;
                }
            };
            let said = part_text(&part, args.parts);
            match &shown {
                Some(shown) => {
                    shown.println(said);
                    shown.inc(1);
                }
                None => eprintln!("{said}"),
            }
            if provenance.build.is_none() {
                provenance = line.provenance;
            }
            sample.push(part);
        }
    });
    finish(shown);
    if let Some(error) = failed {
        return Err(error);
    }
    sample.sort_by_key(|part| part.index);
    let estimate = Estimate::new(args.n, args.parts, args.seed, sample);
    let plan = estimate.plan(PlanAsk {
        part_hours: args.part_hours,
        cpus_per_task: args.cpus_per_task.unwrap_or(cpus_here),
        array_limit: args.array_limit,
        cpus_here,
    });
    if args.json {
        let report = Report {
            estimate: &estimate,
            plan: &plan,
            provenance: &provenance,
        };
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print_text(
            &estimate,
            &plan,
            &provenance,
            (cpus_here, slots.len()),
            args.part_hours,
        );
    }
    Ok(())
}

/// Counts part `index` of `parts` of n in a process of `exe`, as a batch task would: its CPU
/// and peak from `wait4`, its wall from here, its solutions from its line.
#[allow(clippy::zombie_processes)] // reaped with wait4 (for its rusage), not through `Child`
fn run_part(
    exe: &Path,
    n: u32,
    index: u32,
    parts: u32,
    cpus: Option<&[usize]>,
) -> Result<(SampledPart, ShardCount), Error> {
    let failed = |reason: String| Error::Part { index, reason };
    let started = Instant::now();
    let mut command = Command::new(exe);
    command
        .args(["count", &n.to_string(), "--local", "--json", "--shard"])
        .arg(format!("{index}/{parts}"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if let Some(cpus) = cpus {
        let set = cpu_set(cpus);
        // SAFETY: between fork and exec the child only calls sched_setaffinity (a system
        // call, async-signal-safe) on itself, with a set made before the fork.
        unsafe {
            command.pre_exec(move || {
                match libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) {
                    0 => Ok(()),
                    _ => Err(std::io::Error::last_os_error()),
                }
            });
        }
    }
    let mut child = command
        .spawn()
        .map_err(|e| failed(format!("cannot start {}: {e}", exe.display())))?;
    let pid = child.id() as libc::pid_t;
    let mut output = String::new();
    let read = child
        .stdout
        .take()
        .map(|mut out| out.read_to_string(&mut output));
    let (status, usage) = reap(pid).map_err(|e| failed(format!("waiting for it: {e}")))?;
    let wall_seconds = started.elapsed().as_secs_f64();
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        return Err(failed(format!("its process failed (wait status {status})")));
    }
    if let Some(Err(e)) = read {
        return Err(failed(format!("reading its line: {e}")));
    }
    let line: ShardCount = serde_json::from_str(output.trim())
        .map_err(|e| failed(format!("not a shard line ({e}): {output:?}")))?;
    let part = SampledPart {
        index,
        cpu_seconds: usage.cpu_seconds,
        wall_seconds,
        peak_bytes: usage.peak_bytes,
        solutions: line.solutions,
    };
    Ok((part, line))
}

/// The CPU sets the sampled parts run on, one part at a time on each: with `cpus_per_task`
/// below the CPUs this process may use, as many disjoint sets of that many of them as
/// there are (the first ones, in order); else one set, `None`: every CPU here, as it is.
fn slots(cpus_per_task: Option<u32>) -> Vec<Option<Vec<usize>>> {
    let allowed = allowed_cpus();
    match cpus_per_task.map(|c| c as usize) {
        Some(c) if c < allowed.len() => allowed
            .chunks_exact(c)
            .map(|cpus| Some(cpus.to_vec()))
            .collect(),
        _ => vec![None],
    }
}

/// The CPUs this process may run on (its affinity), in order; none if it cannot be read.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: `cpu_set_t` is plain bits (all zero: the empty set), which
    // sched_getaffinity fills in for this process; CPU_ISSET reads a CPU below its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&cpu| libc::CPU_ISSET(cpu, &set))
            .collect()
    }
}

/// The affinity set of `cpus` (each below `CPU_SETSIZE`, as `allowed_cpus` gives them).
fn cpu_set(cpus: &[usize]) -> libc::cpu_set_t {
    // SAFETY: all zero is the empty set; CPU_SET writes the bit of a CPU below its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in cpus {
            libc::CPU_SET(cpu, &mut set);
        }
        set
    }
}

/// Waits for child `pid` to end: its wait status and what it used.
fn reap(pid: libc::pid_t) -> std::io::Result<(i32, Usage)> {
    let mut status = 0;
    // SAFETY: `rusage` is plain integers and `timeval`s, for which all zero bytes are a value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: wait4 reaps our own child, whose handle is never waited on, and writes
        // into the status and usage it is given, which live here.
        let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if reaped == pid {
            return Ok((status, Usage::from_rusage(&usage)));
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// Bytes as GiB or MiB, with one decimal.
fn bytes_text(bytes: u64) -> String {
    let mib = bytes as f64 / f64::from(1 << 20);
    if mib >= 1024.0 {
        format!("{:.1} GiB", mib / 1024.0)
    } else {
        format!("{mib:.1} MiB")
    }
}

/// One timed part, as the progress shows it.
fn part_text(part: &SampledPart, parts: u32) -> String {
    format!(
        "part {} of {parts}: {:.2} CPU-s, {:.2} s wall, {} peak, {} solutions",
        part.index,
        part.cpu_seconds,
        part.wall_seconds,
        bytes_text(part.peak_bytes),
        part.solutions
    )
}

/// A figure with its interval, or alone when the interval is the figure.
fn with_interval(i: batch::Interval, figure: impl Fn(f64) -> String) -> String {
    if i.low == i.high {
        figure(i.estimate)
    } else {
        let (e, l, h) = (figure(i.estimate), figure(i.low), figure(i.high));
        format!("{e} (95 % interval {l} to {h})")
    }
}

/// Minutes as `H:MM:00`, as sbatch's `--time` takes them.
fn time_text(minutes: u64) -> String {
    format!("{}:{:02}:00", minutes / 60, minutes % 60)
}

/// The estimate as text.
fn print_text(
    e: &Estimate,
    plan: &Plan,
    p: &Provenance,
    (cpus_here, at_once): (u32, usize),
    part_hours: f64,
) {
    let unknown = || batch::UNKNOWN.to_string();
    let build = p.build.as_ref().map_or_else(unknown, ToString::to_string);
    println!(
        "n = {} in {} parts: {} sampled (seed {}), each a process on {cpus_here} CPUs here{}",
        e.n,
        e.parts,
        e.sample.len(),
        e.seed,
        match at_once {
            1 => String::new(),
            parts => format!(", {parts} at a time"),
        }
    );
    println!(
        "build {build}, tier {}, cpu {}, host {}",
        p.tier.clone().unwrap_or_else(unknown),
        p.cpu.clone().unwrap_or_else(unknown),
        p.host.clone().unwrap_or_else(unknown)
    );
    let hours = |h: f64| format!("{h:.4}");
    let solutions = |s: f64| {
        if s < 1e12 {
            format!("{s:.0}")
        } else {
            format!("{s:.4e}")
        }
    };
    let seconds = |s: f64| format!("{s:.2}");
    let per_part = with_interval(e.cpu_seconds_per_part, seconds);
    println!("CPU seconds per part: {per_part}");
    println!("core-hours: {}", with_interval(e.core_hours, hours));
    println!("solutions: {}", with_interval(e.solutions, solutions));
    println!(
        "peak memory per part: {} (the sample's largest)",
        bytes_text(e.peak_bytes)
    );
    println!("CPUs busy: {:.2} of {cpus_here}", e.busy_cpus);
    if e.t > 0.0 {
        println!(
            "intervals: Student's t = {} ({} degrees of freedom), finite-population corrected",
            e.t,
            e.sample.len() - 1
        );
    } else {
        println!("intervals: none, every part was counted");
    }
    println!(
        "for parts of {part_hours} h on {} CPUs per task:",
        plan.cpus_per_task
    );
    println!("  parts: {}", plan.parts);
    println!(
        "  slurm arrays: {} of at most {} tasks",
        plan.arrays, plan.array_limit
    );
    println!(
        "  average part: {:.2} h of wall, {:.0} % of its CPUs busy; core-hours allocated: {:.4}",
        plan.average_part_hours,
        plan.busy_share * 100.0,
        plan.allocated_core_hours
    );
    let time = time_text(plan.time_minutes);
    println!("  per task: --mem={}M --time={time}", plan.memory_mib);
    println!(
        "  deploy/slurm/submit.sh {} {} DIR -c {} --mem={}M --time={time}",
        e.n, plan.parts, plan.cpus_per_task, plan.memory_mib
    );
}
