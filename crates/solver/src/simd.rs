//! The solver's one SIMD tier: which instruction set this CPU runs the lockstep lanes
//! (`lockstep.rs`, `count/lanes.rs`) and the join's kernels (`count/join/`) in, detected in
//! one place ([`tier`]), and the one argument for why calling their target-feature code is
//! sound. Nothing here searches: the engines own their kernels.
//!
//! # A tier is a capability
//! A [`Tier`] is a token with private fields: outside this file there is no way to make
//! one but [`Tier::detect`] (and [`Tier::best`], [`tier`], [`forced_tier`], which call it),
//! which checks this CPU for every feature the tier's kernels are compiled with, and
//! [`Tier::PORTABLE`], which needs none. So holding a `Tier` whose [`Tier::kind`] is
//! [`TierKind::Avx512`] (or `Avx2`) proves that this CPU has that tier's features, and a
//! safe function that takes a `Tier` cannot be made to run a kernel the CPU lacks, whatever
//! its caller writes. [`TierKind`] only names tiers: matching on it is free, and it proves
//! nothing. The AVX-512 token also carries whether the CPU has the byte, VBMI, BITALG and
//! GFNI instructions the join's split-bit sampling uses ([`Tier::gfni`]): no other tier
//! samples with them, so `QUEENS_SIMD=portable` runs portable code everywhere and
//! `QUEENS_SIMD=avx2` no AVX-512 instruction.
//!
//! # Unsafe style for target-feature code
//! Every kernel compiled for a tier is a safe `fn` with `#[target_feature(enable = ...)]`
//! (never an `unsafe fn`), its feature list a subset of what [`Tier::detect`] checks for
//! its tier: `avx512f,avx512cd,bmi2,popcnt` for `Avx512` (plus
//! `avx512bw,avx512vbmi,avx512bitalg,gfni` where [`Tier::gfni`] says so), and
//! `avx2,bmi1,bmi2,lzcnt,popcnt` for `Avx2`. Such a function calls another whose features
//! are a subset of its own without `unsafe`. Calling one from code without those features
//! takes an `unsafe` block, and that is sound exactly when this CPU has the features
//! (running an instruction the CPU lacks is undefined behaviour): the block sits in the arm
//! of a match on the kind of a [`Tier`] the caller holds (so detection confirmed the
//! features, see above), and the features do not change while the process runs. Each such
//! block carries `// SAFETY:` naming the token it relies on; every other `unsafe` block
//! (unaligned loads and stores, `set_len`) argues its own bounds where it stands. Two places
//! hold such blocks: [`Tier::run`]'s copies per tier (`simd/x86_64.rs`), which compile the
//! lane engines' loops once per tier ([`PerTier`]), and the join's one kernel dispatch
//! (`count/join/kernels/x86_64/mod.rs`).
//!
//! # The per-target files
//! - `simd/x86_64.rs`: on x86-64, what this CPU has of each tier's features, and
//!   [`Tier::run`]'s copies per tier.
//! - `simd/generic.rs`: the same functions on other targets (nothing but the portable tier).
//!
//! Each is gated once, by its first line, as are the join's kernels and the lanes' AVX-512
//! rounds: no other file of the crate names a target.

use std::fmt;

/// Names an instruction set the solver's SIMD kernels can run in, best last; a name only
/// (a [`Tier`] is the proof that this CPU has it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TierKind {
    /// The portable loops, whatever the CPU (off x86-64, or a CPU with neither set).
    Portable,
    /// AVX2, BMI1, BMI2, LZCNT, POPCNT: the portable loops compiled for them, and the join's
    /// AVX2 kernels.
    Avx2,
    /// AVX-512F and AVX-512CD (and POPCNT and BMI2, which every such CPU has): lanes written
    /// out in 512-bit registers.
    Avx512,
}

impl TierKind {
    /// Every kind, worst first.
    pub const ALL: [TierKind; 3] = [TierKind::Portable, TierKind::Avx2, TierKind::Avx512];

    /// The instruction set's usual name ("AVX-512", "AVX2" or "portable").
    pub fn name(self) -> &'static str {
        match self {
            TierKind::Avx512 => "AVX-512",
            TierKind::Avx2 => "AVX2",
            TierKind::Portable => "portable",
        }
    }

    /// The value of [`TIER_VARIABLE`] that forces it (`avx512`, `avx2` or `portable`).
    pub fn flag(self) -> &'static str {
        match self {
            TierKind::Avx512 => "avx512",
            TierKind::Avx2 => "avx2",
            TierKind::Portable => "portable",
        }
    }
}

impl fmt::Display for TierKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A SIMD tier this CPU has: the capability to run its kernels, made only by detection
/// (see the module's docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tier {
    /// Which instruction set; this CPU has every feature its kernels are compiled with.
    kind: TierKind,
    /// `Avx512` only: whether this CPU also has the AVX-512 byte, VBMI, BITALG and GFNI
    /// instructions (the join's split-bit sampling).
    gfni: bool,
    /// Whether BMI2's `pext` takes a cycle or so here, as on every CPU with AVX-512, rather
    /// than the tens to hundreds of AMD's (and Hygon's) before Zen 3: the join's pair tests
    /// narrow their words with it.
    fast_pext: bool,
}

impl Tier {
    /// The portable loops, which every CPU runs.
    pub const PORTABLE: Tier = Tier {
        kind: TierKind::Portable,
        gfni: false,
        fast_pext: false,
    };

    /// The tier `kind` names if this CPU has every feature its kernels are compiled with.
    pub fn detect(kind: TierKind) -> Option<Tier> {
        Cpu::has(kind).then(|| Tier {
            kind,
            gfni: kind == TierKind::Avx512 && Cpu::has_avx512_gfni(),
            fast_pext: kind == TierKind::Avx512 || (kind == TierKind::Avx2 && Cpu::has_fast_pext()),
        })
    }

    /// The best tier this CPU has.
    pub fn best() -> Tier {
        Tier::detect(TierKind::Avx512)
            .or_else(|| Tier::detect(TierKind::Avx2))
            .unwrap_or(Tier::PORTABLE)
    }

    /// Which instruction set it is.
    pub fn kind(self) -> TierKind {
        self.kind
    }

    /// The instruction set's usual name.
    pub fn name(self) -> &'static str {
        self.kind.name()
    }

    /// Whether the join samples split bits with the AVX-512 byte, VBMI, BITALG and GFNI
    /// instructions: only in the AVX-512 tier, on a CPU that has them.
    pub(crate) fn gfni(self) -> bool {
        self.gfni
    }

    /// Whether the tier has BMI2's `pext` and it is fast on this CPU (every AVX-512 CPU;
    /// AVX2 ones but AMD's and Hygon's before Zen 3, family 0x19).
    pub(crate) fn fast_pext(self) -> bool {
        self.fast_pext
    }
}

/// Code written once and compiled once per tier ([`Tier::run`]): the lockstep lanes' loops
/// (`lockstep.rs`, `count/lanes.rs`), plain Rust that the compiler vectorises for each
/// tier's features.
pub(crate) trait PerTier {
    /// What the code returns.
    type Output;

    /// Runs the code; `AVX512` says whether this is the AVX-512 tier's copy (where the code
    /// may call its own AVX-512 kernels). Implementations are `#[inline(always)]`, so that
    /// the body is compiled into each tier's copy rather than called from it.
    fn run<const AVX512: bool>(self) -> Self::Output;
}

impl Tier {
    /// Runs `code` compiled for this tier: for AVX-512 and AVX2 in a copy compiled with
    /// the tier's features (its `run::<true>` for AVX-512), else as it is.
    pub(crate) fn run<C: PerTier>(self, code: C) -> C::Output {
        self.run_on_target(code)
    }
}

/// What this CPU has, asked by the per-target file: `x86_64.rs` or `generic.rs` write
/// its functions (`has`, `has_avx512_gfni`, `has_fast_pext`) and [`Tier::run`]'s copies
/// per tier (`Tier::run_on_target`), each gated once by its first line (one type with the
/// same methods in each per-target file, as hashbrown's `Group`).
struct Cpu;

mod generic;
mod x86_64;

/// The environment variable that forces a tier: `avx512`, `avx2` or `portable` (a tier
/// this CPU lacks is refused, see [`forced_tier`]); unset or empty, the best one is taken.
pub const TIER_VARIABLE: &str = "QUEENS_SIMD";

/// The tier the solver runs in: the one [`TIER_VARIABLE`] forces, else the best this CPU
/// has. The one place that decides it, read once per process (a value [`forced_tier`]
/// refuses counts as unset here; the binary refuses it at start). On `Portable` the engines
/// search alone rather than in portable lanes: those are slower than the scalar search
/// (n = 15, measured by forcing them on an AVX-512 machine: 0.87 of the baseline's CPU time,
/// against 0.32 for the scalar search, 0.21 in AVX2 and 0.15 in AVX-512 registers).
pub(crate) fn tier() -> Tier {
    static TIER: std::sync::OnceLock<Tier> = std::sync::OnceLock::new();
    *TIER.get_or_init(|| {
        let forced = std::env::var(TIER_VARIABLE).ok();
        forced_tier(forced.as_deref())
            .ok()
            .flatten()
            .unwrap_or_else(Tier::best)
    })
}

/// Why a value of [`TIER_VARIABLE`] forces no tier.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TierError {
    /// The value names no tier.
    #[error("{var}={value}: expected avx512, avx2 or portable", var = TIER_VARIABLE)]
    Unknown {
        /// The value, trimmed.
        value: String,
    },
    /// The value names a tier this CPU lacks.
    #[error(
        "{var}={value}: this CPU lacks the {kind} instructions (best here: {best})",
        var = TIER_VARIABLE
    )]
    Lacking {
        /// The value, trimmed.
        value: String,
        /// The tier it names.
        kind: TierKind,
        /// The best tier this CPU has.
        best: TierKind,
    },
}

/// The tier a value of [`TIER_VARIABLE`] forces: `None` for no value (or an empty one), an
/// error for an unknown name or a tier this CPU lacks.
pub fn forced_tier(value: Option<&str>) -> Result<Option<Tier>, TierError> {
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let kind = match value.to_ascii_lowercase().as_str() {
        "avx512" | "avx-512" => TierKind::Avx512,
        "avx2" => TierKind::Avx2,
        "portable" => TierKind::Portable,
        _ => {
            return Err(TierError::Unknown {
                value: value.to_string(),
            });
        }
    };
    let tier = Tier::detect(kind).ok_or_else(|| TierError::Lacking {
        value: value.to_string(),
        kind,
        best: Tier::best().kind,
    })?;
    Ok(Some(tier))
}

/// The name of the tier the solver runs in ("AVX-512", "AVX2" or "portable").
pub fn tier_name() -> &'static str {
    tier().name()
}

/// The SIMD registers Count's lanes run in on this CPU ("AVX-512" or "AVX2"); `None` when
/// it has neither and every board is searched alone.
pub fn simd_registers() -> Option<&'static str> {
    let simd = tier();
    (simd.kind != TierKind::Portable).then(|| simd.name())
}

/// The tiers a test that covers every tier runs in, worst first: each this CPU has, up to
/// the one the solver runs in (so `QUEENS_SIMD=avx2` leaves AVX-512 out). Says on stderr
/// (shown with `--nocapture` or `--show-output`) which tiers `test` runs and which it skips,
/// and why.
#[cfg(test)]
pub(crate) fn tiers_to_test(test: &str) -> Vec<Tier> {
    let top = tier().kind;
    let (mut run, mut skipped) = (Vec::new(), Vec::new());
    for kind in TierKind::ALL {
        match Tier::detect(kind) {
            Some(tier) if kind <= top => run.push(tier),
            Some(_) => skipped.push(format!("{kind} ({TIER_VARIABLE} forces {top})")),
            None => skipped.push(format!("{kind} (this CPU lacks it)")),
        }
    }
    let names: Vec<&str> = run.iter().map(|tier| tier.name()).collect();
    let skipped = if skipped.is_empty() {
        "none".to_string()
    } else {
        skipped.join(", ")
    };
    eprintln!(
        "{test}: tiers run: {}; skipped: {skipped}",
        names.join(", ")
    );
    run
}

#[cfg(test)]
mod tests {
    use super::{TIER_VARIABLE, Tier, TierError, TierKind, forced_tier, tier};

    /// A run with [`TIER_VARIABLE`] set runs in the tier it names (CI runs the solver's
    /// tests once per tier this CPU has, and a value that fell back silently would test
    /// the best tier twice).
    #[test]
    fn the_forced_tier_is_the_one_the_solver_runs_in() {
        let forced = std::env::var(TIER_VARIABLE).ok();
        let expected = forced_tier(forced.as_deref()).unwrap_or_else(|error| panic!("{error}"));
        eprintln!(
            "{TIER_VARIABLE}={forced:?}: the solver runs in {}",
            tier().name()
        );
        assert_eq!(tier(), expected.unwrap_or_else(Tier::best));
    }

    #[test]
    fn only_detection_makes_a_tier_and_only_avx512_samples_with_gfni() {
        for kind in TierKind::ALL {
            match Tier::detect(kind) {
                Some(tier) => {
                    assert_eq!(tier.kind(), kind);
                    assert!(!tier.gfni() || kind == TierKind::Avx512, "{kind}");
                    assert_eq!(forced_tier(Some(kind.flag())), Ok(Some(tier)));
                }
                None => assert!(matches!(
                    forced_tier(Some(kind.flag())),
                    Err(TierError::Lacking { kind: k, .. }) if k == kind
                )),
            }
        }
        assert_eq!(Tier::detect(TierKind::Portable), Some(Tier::PORTABLE));
        assert_eq!(forced_tier(Some(" ")), Ok(None));
        let error = forced_tier(Some("sse")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "QUEENS_SIMD=sse: expected avx512, avx2 or portable"
        );
    }
}
