//! The arithmetic of `queens estimate`: which parts of a K-part split a seeded sample takes,
//! what the timed sample says of the whole (core-hours and solutions, each with a 95 %
//! interval from the sample's spread, and the largest peak of memory), and the batch run it
//! suggests for a given part length and CPUs per task (K, Slurm arrays, memory and time to
//! ask for). Running the sampled parts, as processes, is the command's (`crate::cli`).
//!
//! The sample is drawn without replacement, so the whole's estimate is K times the sample's
//! mean, and its standard error K·√((1 − S/K)·s²/S), s² the sample variance (S − 1 in the
//! denominator) and (1 − S/K) the finite-population correction: with every part sampled the
//! interval is the exact figure alone. The 95 % interval is the estimate ± Student's t
//! quantile (0.975, S − 1 degrees of freedom) times that error.

use super::memory::{ask_bytes, count_need};
use serde::Serialize;

/// Why an estimate cannot be made from the flags given.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EstimateError {
    /// Fewer than two parts sampled of a split that has more: no spread to measure.
    #[error(
        "--samples: {samples} cannot measure a spread; sample at least 2 parts (or all \
         --parts)"
    )]
    TooFewSamples {
        /// The sample's size.
        samples: u32,
    },
    /// More parts sampled than the split has.
    #[error("--samples: {samples} is more than the {parts} parts of --parts")]
    TooManySamples {
        /// The sample's size.
        samples: u32,
        /// The number of parts.
        parts: u32,
    },
}

/// One sampled part, as its process ran.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct SampledPart {
    /// The part's index among the K.
    pub index: u32,
    /// CPU seconds of its process (user and system).
    pub cpu_seconds: f64,
    /// Wall seconds of its process.
    pub wall_seconds: f64,
    /// Its process's peak resident memory.
    pub peak_bytes: u64,
    /// The solutions in the part.
    pub solutions: u64,
}

/// An estimate with its 95 % interval.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct Interval {
    /// The estimate.
    pub estimate: f64,
    /// The interval's lower end (not below 0).
    pub low: f64,
    /// The interval's upper end.
    pub high: f64,
}

/// What a timed sample of parts says of the whole split.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Estimate {
    /// Board size.
    pub n: u32,
    /// Parts of the split (K).
    pub parts: u32,
    /// The seed that chose the sample.
    pub seed: u64,
    /// The sampled parts, in order of index.
    pub sample: Vec<SampledPart>,
    /// The quantile the intervals use: Student's t at 0.975 with `samples − 1` degrees of
    /// freedom (0 when every part is sampled: no interval needed).
    pub t: f64,
    /// CPU seconds of an average part.
    pub cpu_seconds_per_part: Interval,
    /// Core-hours (CPU hours) of the whole split.
    pub core_hours: Interval,
    /// Solutions of the whole board.
    pub solutions: Interval,
    /// The largest peak memory of a sampled part, in bytes.
    pub peak_bytes: u64,
    /// CPUs the sampled parts kept busy on average: their CPU seconds over their wall
    /// seconds.
    pub busy_cpus: f64,
}

/// What the suggested batch run is sized for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlanAsk {
    /// Wall hours an average part should take.
    pub part_hours: f64,
    /// CPUs each task is given.
    pub cpus_per_task: u32,
    /// Most tasks in one Slurm job array.
    pub array_limit: u32,
    /// CPUs the sampled parts ran on here.
    pub cpus_here: u32,
}

/// A batch run sized from an estimate.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Plan {
    /// Parts (K): enough for parts of the asked length, rounded up to a power of two below
    /// 1,024 and to a multiple of 1,024 above.
    pub parts: u32,
    /// CPUs per task.
    pub cpus_per_task: u32,
    /// The share of a task's CPUs a part keeps busy: all of one CPU (a part on one CPU
    /// counts on one engine, which never waits for another), else as in the sample (at most
    /// 1; taken as it is for other CPU counts than the sample ran on, unmeasured).
    pub busy_share: f64,
    /// Wall hours of an average part.
    pub average_part_hours: f64,
    /// Core-hours allocated (CPUs per task × wall): the whole's CPU over the busy share.
    pub allocated_core_hours: f64,
    /// Slurm job arrays of at most the array limit.
    pub arrays: u32,
    /// The array limit.
    pub array_limit: u32,
    /// Memory to ask for per task, in MiB (`--mem=…M`).
    pub memory_mib: u64,
    /// Wall time to ask for per task, in minutes (`--time`).
    pub time_minutes: u64,
}

/// The indices of `samples` distinct parts of `parts`, chosen by `seed` (the same parts for
/// the same three numbers, on every machine), in increasing order.
pub fn sample_parts(parts: u32, samples: u32, seed: u64) -> Result<Vec<u32>, EstimateError> {
    if samples > parts {
        return Err(EstimateError::TooManySamples { samples, parts });
    }
    if samples < 2 && samples < parts {
        return Err(EstimateError::TooFewSamples { samples });
    }
    // Robert Floyd's sampling: `samples` draws, each distinct, uniform over the subsets.
    let mut random = SplitMix64(seed);
    let mut chosen = std::collections::BTreeSet::new();
    for top in parts - samples..parts {
        let pick = random.below(u64::from(top) + 1) as u32;
        if !chosen.insert(pick) {
            chosen.insert(top);
        }
    }
    Ok(chosen.into_iter().collect())
}

/// SplitMix64 (Steele, Lea and Flood): a small generator whose stream a seed fixes (also
/// the soak's choices in `queens-load`).
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    #[allow(clippy::should_implement_trait)] // not an iterator: it never ends
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `bound` (by the high half of a 128-bit product: a bias of at most
    /// `bound` / 2^64, nothing at a split's sizes).
    fn below(&mut self, bound: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(bound)) >> 64) as u64
    }
}

/// Student's t quantile at 0.975 for `df` degrees of freedom: tabulated to 30, then the
/// Cornish-Fisher expansion around the normal's 1.959964 (within 0.001 from 30 on).
pub fn t_975(df: u32) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => TABLE[df as usize - 1],
        _ => {
            let (z, v) = (1.959_964_f64, f64::from(df));
            z + (z.powi(3) + z) / (4.0 * v)
                + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * v * v)
        }
    }
}

/// The whole's total of a quantity from its values on a sample of `samples` of `parts`
/// parts, with the interval of quantile `t` (see the module's doc).
fn total(values: impl Iterator<Item = f64> + Clone, parts: u32, t: f64) -> Interval {
    let (k, s) = (f64::from(parts), values.clone().count() as f64);
    let mean = values.clone().sum::<f64>() / s;
    let estimate = mean * k;
    let unsampled = 1.0 - s / k;
    if unsampled <= 0.0 || s < 2.0 {
        return Interval {
            estimate,
            low: estimate,
            high: estimate,
        };
    }
    let variance = values.map(|v| (v - mean).powi(2)).sum::<f64>() / (s - 1.0);
    let half = t * k * (unsampled * variance / s).sqrt();
    Interval {
        estimate,
        low: (estimate - half).max(0.0),
        high: estimate + half,
    }
}

impl Interval {
    /// The interval with every figure divided by `by`.
    fn scaled(self, by: f64) -> Interval {
        Interval {
            estimate: self.estimate / by,
            low: self.low / by,
            high: self.high / by,
        }
    }
}

impl Estimate {
    /// What the timed `sample` of n's split into `parts` (chosen by `seed`) says of the
    /// whole; the sample must hold at least one part.
    pub fn new(n: u32, parts: u32, seed: u64, mut sample: Vec<SampledPart>) -> Estimate {
        sample.sort_by_key(|p| p.index);
        let df = sample.len().saturating_sub(1) as u32;
        let everything = sample.len() as u64 >= u64::from(parts);
        let t = if everything { 0.0 } else { t_975(df) };
        let cpu = sample.iter().map(|p| p.cpu_seconds);
        let core_seconds = total(cpu.clone(), parts, t);
        let mut solutions = total(sample.iter().map(|p| p.solutions as f64), parts, t);
        if everything {
            // Exact, not a float's product of a mean.
            let exact: u128 = sample.iter().map(|p| u128::from(p.solutions)).sum();
            solutions.estimate = exact as f64;
            (solutions.low, solutions.high) = (solutions.estimate, solutions.estimate);
        }
        let wall: f64 = sample.iter().map(|p| p.wall_seconds).sum();
        Estimate {
            n,
            parts,
            seed,
            t,
            cpu_seconds_per_part: core_seconds.scaled(f64::from(parts)),
            core_hours: core_seconds.scaled(3600.0),
            solutions,
            peak_bytes: sample.iter().map(|p| p.peak_bytes).max().unwrap_or(0),
            busy_cpus: cpu.sum::<f64>() / wall.max(1e-9),
            sample,
        }
    }

    /// The batch run this estimate suggests for `ask` (see [`Plan`] for the rules).
    pub fn plan(&self, ask: PlanAsk) -> Plan {
        let cpus = f64::from(ask.cpus_per_task);
        let busy_share = match ask.cpus_per_task {
            1 => 1.0,
            _ => (self.busy_cpus / f64::from(ask.cpus_here.max(1))).clamp(0.01, 1.0),
        };
        let whole_seconds = self.core_hours.estimate * 3600.0;
        let per_part = ask.part_hours * 3600.0 * cpus * busy_share;
        let parts = round_split((whole_seconds / per_part).ceil());
        let average_seconds = whole_seconds / f64::from(parts) / (cpus * busy_share);
        let mean_cpu = self.cpu_seconds_per_part.estimate.max(1e-9);
        let largest = self
            .sample
            .iter()
            .map(|p| p.cpu_seconds)
            .fold(0.0, f64::max);
        // Twice the largest sampled part's share of the average, at least twice the average.
        let time_seconds = 2.0 * average_seconds * (largest / mean_cpu).max(1.0);
        Plan {
            parts,
            cpus_per_task: ask.cpus_per_task,
            busy_share,
            average_part_hours: average_seconds / 3600.0,
            allocated_core_hours: self.core_hours.estimate / busy_share,
            arrays: parts.div_ceil(ask.array_limit.max(1)),
            array_limit: ask.array_limit,
            memory_mib: self.memory_mib(parts, ask),
            time_minutes: ((time_seconds / 60.0).ceil() as u64).div_ceil(15).max(1) * 15,
        }
    }

    /// Memory to ask for per task of the split into `parts`, in MiB: the larger of the
    /// sample's largest peak (plus what the solver's memory model adds for each CPU beyond
    /// those it ran on here, less what it takes away for each CPU short of them) and the
    /// model's own figure for a task, plus a quarter, rounded up to 128 MiB
    /// (`memory::ask_bytes`, as `queens memory` prints it).
    fn memory_mib(&self, parts: u32, ask: PlanAsk) -> u64 {
        let model = |threads: u32| {
            count_need(self.n, parts, &[threads]).map_or(0, |need| need.by_cpus[0].reserved)
        };
        let (there, here) = (model(ask.cpus_per_task), model(ask.cpus_here));
        let measured = self.peak_bytes.saturating_add(there).saturating_sub(here);
        ask_bytes(measured.max(there)) >> 20
    }
}

/// A number of parts the split scheme takes, at least `wanted`: the next power of two up to
/// 1,024, else the next multiple of 1,024 (the largest such below 2^32 at most).
fn round_split(wanted: f64) -> u32 {
    const STEP: u64 = 1024;
    let top = u64::from(u32::MAX) / STEP * STEP;
    let wanted = if wanted.is_finite() {
        wanted.clamp(1.0, top as f64) as u64
    } else {
        top
    };
    let rounded = if wanted <= STEP {
        wanted.next_power_of_two()
    } else {
        wanted.div_ceil(STEP) * STEP
    };
    rounded.min(top) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(index: u32, cpu_seconds: f64, solutions: u64) -> SampledPart {
        SampledPart {
            index,
            cpu_seconds,
            wall_seconds: cpu_seconds / 2.0,
            peak_bytes: 100 << 20,
            solutions,
        }
    }

    #[test]
    fn samples_are_distinct_sorted_seeded_and_bounded() {
        let a = sample_parts(65_536, 10, 7).unwrap();
        assert_eq!(a.len(), 10);
        assert!(a.windows(2).all(|w| w[0] < w[1]), "{a:?}");
        assert!(a.iter().all(|&i| i < 65_536));
        assert_eq!(sample_parts(65_536, 10, 7).unwrap(), a);
        assert_ne!(sample_parts(65_536, 10, 8).unwrap(), a);
        assert_eq!(sample_parts(5, 5, 3).unwrap(), [0, 1, 2, 3, 4]);
        assert_eq!(sample_parts(1, 1, 3).unwrap(), [0]);
        assert_eq!(
            sample_parts(4, 5, 0),
            Err(EstimateError::TooManySamples {
                samples: 5,
                parts: 4
            })
        );
        let err = sample_parts(10, 1, 0).unwrap_err();
        assert!(err.to_string().starts_with("--samples: 1 "), "{err}");
        // Every part of a small split is drawn about equally often.
        let mut seen = [0u32; 8];
        for seed in 0..4000 {
            for i in sample_parts(8, 2, seed).unwrap() {
                seen[i as usize] += 1;
            }
        }
        assert!(seen.iter().all(|&s| (800..1200).contains(&s)), "{seen:?}");
    }

    #[test]
    fn the_t_quantile_meets_the_normal() {
        assert_eq!(t_975(3), 3.182);
        assert!((t_975(40) - 2.021).abs() < 0.001, "{}", t_975(40));
        assert!((t_975(120) - 1.980).abs() < 0.001, "{}", t_975(120));
        assert!((t_975(100_000) - 1.96).abs() < 0.001);
        assert!(t_975(31) < t_975(30));
    }

    #[test]
    fn every_part_sampled_gives_the_exact_total_and_no_interval() {
        let sample = vec![part(1, 4.0, 10), part(0, 2.0, 7), part(2, 6.0, 3)];
        let e = Estimate::new(12, 3, 0, sample);
        assert_eq!(e.sample[0].index, 0);
        assert_eq!(e.t, 0.0);
        assert_eq!(
            (e.solutions.estimate, e.solutions.low, e.solutions.high),
            (20.0, 20.0, 20.0)
        );
        assert_eq!(e.core_hours.estimate, 12.0 / 3600.0);
        assert_eq!(e.core_hours.low, e.core_hours.high);
        assert_eq!(e.cpu_seconds_per_part.estimate, 4.0);
        assert_eq!(e.busy_cpus, 2.0);
    }

    #[test]
    fn a_sample_gives_mean_times_k_and_a_t_interval() {
        // Four of 100 parts: CPU 1, 2, 3, 6 (mean 3, variance 14/3), solutions 5 each.
        let sample = vec![
            part(3, 1.0, 5),
            part(9, 2.0, 5),
            part(50, 3.0, 5),
            part(77, 6.0, 5),
        ];
        let e = Estimate::new(12, 100, 1, sample);
        assert_eq!(e.t, 3.182);
        let half = 3.182 * 100.0 * (0.96 * (14.0 / 3.0) / 4.0_f64).sqrt();
        assert!((e.core_hours.estimate * 3600.0 - 300.0).abs() < 1e-9);
        assert!((e.core_hours.high * 3600.0 - (300.0 + half)).abs() < 1e-6);
        assert_eq!(e.core_hours.low, 0.0_f64.max((300.0 - half) / 3600.0));
        // No spread in the solutions: no interval.
        assert_eq!(
            (e.solutions.low, e.solutions.estimate, e.solutions.high),
            (500.0, 500.0, 500.0)
        );
        assert_eq!(e.peak_bytes, 100 << 20);
    }

    #[test]
    fn a_task_of_fewer_cpus_than_the_sample_asks_for_less_memory() {
        // n = 25's parts took about 1.2 GiB on 2 CPUs: the tables, and each engine's lists.
        let plans = |n: u32, parts: u32, peak_mib: u64| {
            let sample = (0..4)
                .map(|i| SampledPart {
                    peak_bytes: peak_mib << 20,
                    ..part(i * 1000, 900.0, 1)
                })
                .collect();
            let e = Estimate::new(n, parts, 0, sample);
            let ask = |cpus_per_task| PlanAsk {
                part_hours: 1.0,
                cpus_per_task,
                array_limit: 1000,
                cpus_here: 2,
            };
            (e.plan(ask(1)).memory_mib, e.plan(ask(2)).memory_mib)
        };
        let need = |n, parts| count_need(n, parts, &[1]).unwrap();
        // One engine's lists fewer, and no less than the model's own figure for one CPU, a
        // quarter added.
        let (one, two) = plans(25, 1 << 16, 1229);
        let engine = need(25, 1 << 16).per_engine >> 20;
        let model = need(25, 1 << 16).by_cpus[0].reserved;
        assert!(two >= 1536, "{two}");
        assert!(
            one <= two - engine && one << 20 >= model + model / 4,
            "{one} {two} {engine}"
        );
        // Past n = 25 a count's lone engine is allowed what two would take: the same ask.
        let (one, two) = plans(28, 1 << 22, 3584);
        assert_eq!(one, two);
    }

    #[test]
    fn a_plan_sizes_parts_arrays_memory_and_time() {
        // 1,000 parts of 36 CPU-s each, every CPU busy: 10 core-hours.
        let sample = (0..4).map(|i| part(i * 7, 36.0, 1)).collect();
        let e = Estimate::new(12, 1000, 0, sample);
        let ask = PlanAsk {
            part_hours: 0.001,
            cpus_per_task: 2,
            array_limit: 1000,
            cpus_here: 2,
        };
        let plan = e.plan(ask);
        // 36,000 CPU-s in parts of 7.2 CPU-s: 5,000, rounded up to 5,120.
        assert_eq!(plan.parts, 5120);
        assert_eq!(plan.arrays, 6);
        assert_eq!(plan.busy_share, 1.0);
        assert!((plan.allocated_core_hours - 10.0).abs() < 1e-9);
        assert!(plan.memory_mib >= 128 && plan.memory_mib.is_multiple_of(128));
        assert_eq!(plan.time_minutes, 15);
        // Half the CPUs busy: twice the parts, twice the allocation.
        let mut half = e.clone();
        half.busy_cpus = 1.0;
        let plan = half.plan(ask);
        assert_eq!(plan.parts, 10240);
        assert!((plan.allocated_core_hours - 20.0).abs() < 1e-9);
        // On tasks of one CPU the one engine keeps it busy: the CPU's core-hours allocated,
        // parts of half the CPU of a 2-CPU task's (as many as half the busy share gave).
        let one = half.plan(PlanAsk {
            cpus_per_task: 1,
            ..ask
        });
        assert_eq!(one.busy_share, 1.0);
        assert_eq!(one.parts, 10240);
        assert!((one.allocated_core_hours - 10.0).abs() < 1e-9);
        assert_eq!(round_split(3.0), 4);
        assert_eq!(round_split(1025.0), 2048);
        assert_eq!(round_split(0.0), 1);
        assert_eq!(round_split(f64::INFINITY), u32::MAX / 1024 * 1024);
    }
}
