//! The tiers on x86-64: what this CPU has of each tier's features ([`Cpu`]), and
//! [`Tier::run`]'s copies per tier with the `unsafe` of calling them. Gated once, by its
//! first line; `generic.rs` has the same functions on other targets.
//!
//! Not here: why holding a [`Tier`] makes calling a tier's code sound (`../simd.rs`), the
//! join's kernels (`count/join/kernels/`).

#![cfg(target_arch = "x86_64")]

use super::{Cpu, PerTier, Tier, TierKind};
use std::arch::is_x86_feature_detected as has;

impl Cpu {
    /// Whether this CPU has every feature the kernels of `kind` are compiled with.
    pub(super) fn has(kind: TierKind) -> bool {
        match kind {
            TierKind::Avx512 => {
                has!("avx512f") && has!("avx512cd") && has!("bmi2") && has!("popcnt")
            }
            TierKind::Avx2 => {
                has!("avx2") && has!("bmi1") && has!("bmi2") && has!("lzcnt") && has!("popcnt")
            }
            TierKind::Portable => true,
        }
    }

    /// Whether this CPU has the AVX-512 byte, VBMI, BITALG and GFNI instructions the join's
    /// split-bit sampling uses in the AVX-512 tier.
    pub(super) fn has_avx512_gfni() -> bool {
        has!("avx512f")
            && has!("avx512bw")
            && has!("avx512vbmi")
            && has!("avx512bitalg")
            && has!("gfni")
    }

    /// Whether this CPU's `pext` is fast: not an AMD or Hygon CPU before family 0x19
    /// (Zen 3), which run it in microcode.
    pub(super) fn has_fast_pext() -> bool {
        use std::arch::x86_64::__cpuid;
        // "AuthenticAMD" and "HygonGenuine" begin with these four bytes (EBX of leaf 0).
        const AMD: u32 = u32::from_le_bytes(*b"Auth");
        const HYGON: u32 = u32::from_le_bytes(*b"Hygo");
        let vendor = __cpuid(0).ebx;
        let signature = __cpuid(1).eax;
        let base = (signature >> 8) & 0xf;
        let family = if base == 0xf {
            base + ((signature >> 20) & 0xff)
        } else {
            base
        };
        !((vendor == AMD || vendor == HYGON) && family < 0x19)
    }
}

impl Tier {
    /// [`Tier::run`]: `code` in its copy compiled for this tier.
    pub(super) fn run_on_target<C: PerTier>(self, code: C) -> C::Output {
        match self.kind {
            // SAFETY: an AVX-512 `Tier` proves the CPU has its features (see `../simd.rs`).
            TierKind::Avx512 => unsafe { avx512(code) },
            // SAFETY: an AVX2 `Tier` proves the CPU has its features (see `../simd.rs`).
            TierKind::Avx2 => unsafe { avx2(code) },
            TierKind::Portable => code.run::<false>(),
        }
    }
}

/// `code` compiled for the AVX-512 tier, with the features of every lane engine's kernels
/// in it (a subset of what [`Cpu::has`] checks for it).
#[target_feature(enable = "avx512f,avx512cd")]
fn avx512<C: PerTier>(code: C) -> C::Output {
    code.run::<true>()
}

/// `code` compiled for the AVX2 tier, with the features of every lane engine's kernels in
/// it (a subset of what [`Cpu::has`] checks for it).
#[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
fn avx2<C: PerTier>(code: C) -> C::Output {
    code.run::<false>()
}
