//! The tiers on targets other than x86-64: the CPU has none but the portable one, and
//! [`Tier::run`] runs its code as it is. Gated once, by its first line; the same functions
//! as `x86_64.rs`.

#![cfg(not(target_arch = "x86_64"))]

use super::{Cpu, PerTier, Tier, TierKind};

impl Cpu {
    /// Whether this CPU has every feature the kernels of `kind` are compiled with: only
    /// the portable tier's (none).
    pub(super) fn has(kind: TierKind) -> bool {
        kind == TierKind::Portable
    }

    /// No AVX-512 sampling instructions here.
    pub(super) fn has_avx512_gfni() -> bool {
        false
    }

    /// No `pext` here.
    pub(super) fn has_fast_pext() -> bool {
        false
    }
}

impl Tier {
    /// [`Tier::run`]: `code` as it is (every tier here is the portable one).
    pub(super) fn run_on_target<C: PerTier>(self, code: C) -> C::Output {
        code.run::<false>()
    }
}
