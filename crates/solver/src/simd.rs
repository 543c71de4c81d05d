//! The solver's one SIMD tier: which instruction set this CPU runs the lockstep lanes
//! (`lockstep.rs`, `count/lanes.rs`) and the join's kernels (`count/join/`) in, detected in
//! one place ([`tier`]), and the one argument for why calling their target-feature code is
//! sound. Nothing here searches: the engines own their kernels.
//!
//! # Unsafe style for target-feature code
//! Every kernel compiled for a tier is a safe `fn` with `#[target_feature(enable = ...)]`
//! (never an `unsafe fn`), its feature list a subset of what [`Tier::available`] checks for
//! its tier: `avx512f,avx512cd,popcnt` for `Tier::Avx512`, `avx2,bmi1,bmi2,lzcnt,popcnt` for
//! `Tier::Avx2` (the join's split-bit sampling adds the byte and GFNI features that
//! [`has_avx512_gfni`] checks). Such a function calls another whose features are a subset of
//! its own without `unsafe`. Calling one from code without those features takes an `unsafe`
//! block, and that is sound exactly when this CPU has the features (running an instruction
//! the CPU lacks is undefined behaviour): the caller holds a [`Tier`] that
//! [`Tier::available`] confirmed on this CPU (directly, or because [`tier`] returned it,
//! which returns only available tiers), and the features do not change while the process
//! runs. Each such block carries `// SAFETY:` naming the check it relies on; every other
//! `unsafe` block (unaligned loads and stores, `set_len`) argues its own bounds where it
//! stands.

/// The instruction set the solver's SIMD kernels run in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    /// AVX-512F and AVX-512CD (and POPCNT, which every such CPU has): lanes written out in
    /// 512-bit registers.
    Avx512,
    /// AVX2, BMI1, BMI2, LZCNT, POPCNT: the portable loops compiled for them.
    Avx2,
    /// The portable loops, whatever the CPU (off x86-64, or a CPU with neither set).
    Portable,
}

impl Tier {
    /// The instruction set's usual name.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Avx512 => "AVX-512",
            Tier::Avx2 => "AVX2",
            Tier::Portable => "portable",
        }
    }

    /// Whether this CPU has every feature the tier's kernels are compiled for.
    pub fn available(self) -> bool {
        match self {
            Tier::Avx512 => has_avx512(),
            Tier::Avx2 => has_avx2(),
            Tier::Portable => true,
        }
    }
}

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
            .unwrap_or_else(best)
    })
}

/// The tier a value of [`TIER_VARIABLE`] forces: `None` for no value (or an empty one), an
/// error naming the variable for an unknown name or a tier this CPU lacks.
pub fn forced_tier(value: Option<&str>) -> Result<Option<Tier>, String> {
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let tier = match value.to_ascii_lowercase().as_str() {
        "avx512" | "avx-512" => Tier::Avx512,
        "avx2" => Tier::Avx2,
        "portable" => Tier::Portable,
        _ => {
            return Err(format!(
                "{TIER_VARIABLE}={value}: expected avx512, avx2 or portable"
            ));
        }
    };
    if !tier.available() {
        return Err(format!(
            "{TIER_VARIABLE}={value}: this CPU lacks the {} instructions (best here: {})",
            tier.name(),
            best().name()
        ));
    }
    Ok(Some(tier))
}

/// The best tier this CPU has.
fn best() -> Tier {
    if has_avx512() {
        Tier::Avx512
    } else if has_avx2() {
        Tier::Avx2
    } else {
        Tier::Portable
    }
}

/// The name of the tier the solver runs in ("AVX-512", "AVX2" or "portable").
pub fn tier_name() -> &'static str {
    tier().name()
}

/// The SIMD registers Count's lanes run in on this CPU ("AVX-512" or "AVX2"); `None` when
/// it has neither and every board is searched alone.
pub fn simd_registers() -> Option<&'static str> {
    match tier() {
        Tier::Portable => None,
        simd => Some(simd.name()),
    }
}

/// Whether this CPU has every one of the named x86 features (never, on other architectures).
macro_rules! has_x86_features {
    ($($feature:tt),+) => {{
        #[cfg(target_arch = "x86_64")]
        {
            true $(&& std::arch::is_x86_feature_detected!($feature))+
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }};
}

/// Whether this CPU has the AVX-512 byte, VBMI, BITALG and GFNI instructions the join's
/// split-bit sampling uses (on top of any tier).
pub(crate) fn has_avx512_gfni() -> bool {
    has_x86_features!("avx512f", "avx512bw", "avx512vbmi", "avx512bitalg", "gfni")
}

/// Whether this CPU has every feature the AVX-512 tier's kernels are compiled with.
fn has_avx512() -> bool {
    has_x86_features!("avx512f", "avx512cd", "popcnt")
}

/// Whether this CPU has every feature the AVX2 tier's kernels are compiled with.
fn has_avx2() -> bool {
    has_x86_features!("avx2", "bmi1", "bmi2", "lzcnt", "popcnt")
}
