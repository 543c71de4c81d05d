//! The keys and the sieve: every orbit covered once, shards of the keys, the sampled bits
//! and the weighted pair tests of every tier against the definition.

use super::*;

#[test]
fn join_keys_cover_every_column_split_once() {
    // Weighted, the keys stand for every (middle, top columns) pair exactly once, and come
    // in increasing order of (middle, top): the order shards are cut from.
    for n in 4..=20u32 {
        let m = n / 2;
        let keys = keys::keys(n);
        let order: Vec<_> = keys.iter().map(|k| (k.middle, k.top)).collect();
        assert!(order.is_sorted_by(|a, b| a < b), "n = {n}");
        let total: u64 = keys.iter().map(|k| k.weight).sum();
        let choose = |a: u64, b: u64| (0..b).fold(1u64, |c, i| c * (a - i) / (i + 1));
        let expected = if n.is_multiple_of(2) {
            choose(u64::from(n), u64::from(m))
        } else {
            u64::from(n) * choose(u64::from(n) - 1, u64::from(m))
        };
        assert_eq!(total, expected, "n = {n}");
    }
}

/// A shard's keys are those of the whole list whose place, after the list's offset, the
/// shard holds: picked by place (middle queens left of the centre) or by walking (the rest).
#[test]
fn a_shards_keys_are_its_places_in_the_whole_list() {
    for n in 4..=21u32 {
        let keys = keys::keys(n);
        for (offset, index, count) in [
            (0, 0, 1),
            (n as usize, 3, 7),
            (5, 0, 256),
            (n as usize, 255, 256),
            (1, 2, 2),
            (0, 9, 0),
        ] {
            let shard = Shard { index, count };
            let expected: Vec<_> = keys
                .iter()
                .enumerate()
                .filter(|&(at, _)| shard.holds(offset + at))
                .map(|(_, &key)| key)
                .collect();
            assert_eq!(
                keys::shard_keys(n, offset, shard),
                expected,
                "n = {n}, {offset}, {shard:?}"
            );
        }
    }
}

#[test]
fn the_sampled_bit_counts_match_on_every_tier() {
    let tiers = tiers_to_test("the_sampled_bit_counts_match_on_every_tier");
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for len in [1usize, 7, 31, 32, 33, 100, 1000, 4095, 4096, 5000, 100_000] {
        let words: Vec<u64> = (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state
            })
            .collect();
        let size = if len >= LONG_BLOCK {
            LONG_SAMPLE
        } else {
            SAMPLE
        };
        let step = (len / size).max(1);
        let mut expected = [0u8; 64];
        for &word in words.iter().step_by(step).take(size) {
            for (bit, count) in expected.iter_mut().enumerate().take(BALANCE_SHIFT as usize) {
                *count += u8::from(word >> bit & 1 == 1);
            }
        }
        for &tier in &tiers {
            assert_eq!(
                density(&words, (1 << BALANCE_SHIFT) - 1, tier),
                expected,
                "{len} words, {tier:?}"
            );
        }
    }
}

/// `len` random words from the xorshift `state`: sparse bits of `field` (each about one in
/// eight), so that some pairs are disjoint, and a balance of -5 to 5 in the field at `shift`.
fn sparse_words(state: &mut u64, field: u64, shift: u32, len: usize) -> Vec<u64> {
    let mut next = || {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    };
    (0..len)
        .map(|_| {
            let bits = next();
            let balance = 2 * BAND_BIAS as u64 - 5 + next() % 11;
            (bits & (bits >> 3) & (bits >> 6) & field) | (balance << shift)
        })
        .collect()
}

#[test]
fn the_blocks_count_disjoint_pairs_like_the_definition() {
    // Random words with random balances, every tier, the weighted sieve against the
    // definition: words of 40 bits, and words of 30 bits spread up to bit 39, which the
    // AVX-512 and AVX2 tiers narrow to 32 bits for their pair tests (a narrowing that kept only the
    // low 32 bits would miss bits 32 to 39).
    let tiers = tiers_to_test("the_blocks_count_disjoint_pairs_like_the_definition");
    let spread: u64 = (0..40)
        .filter(|bit| bit % 8 != 3 && bit % 8 != 6)
        .map(|bit| 1 << bit)
        .sum();
    assert_eq!(spread.count_ones(), 30);
    for (field, narrowed) in [(0xff_ffff_ffffu64, false), (spread, true)] {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        // Long enough that every tier splits them before its pair tests.
        let mut xs = sparse_words(&mut state, field, BALANCE_SHIFT, 1517);
        let mut ys = sparse_words(&mut state, field, BALANCE_SHIFT + 8, 1389);
        let disjoint = xs
            .iter()
            .map(|&x| ys.iter().filter(|&&y| x & y == 0).count() as u64)
            .sum::<u64>();
        assert!(disjoint > 0);
        for &tier in &tiers {
            assert_eq!(leaf(&xs, &ys, tier), disjoint, "{}", tier.name());
        }
        xs.sort_unstable_by_key(|&x| x >> BALANCE_SHIFT);
        ys.sort_unstable_by_key(|&y| y >> (BALANCE_SHIFT + 8));
        for middle in [-1, 0, 1] {
            let weight = |x: u64, y: u64| {
                let sum = ((x >> BALANCE_SHIFT) & 0xff) as i32 + (y >> (BALANCE_SHIFT + 8)) as i32
                    - 4 * BAND_BIAS
                    + middle;
                u64::from(sum >= 0) + u64::from(sum > 0)
            };
            let expected = xs
                .iter()
                .map(|&x| {
                    ys.iter()
                        .filter(|&&y| x & y == 0)
                        .map(|&y| weight(x, y))
                        .sum::<u64>()
                })
                .sum::<u64>();
            assert!(expected > 0);
            for &tier in &tiers {
                // The blocks' pair tests on narrowed words, where the tier narrows them.
                let narrow = weighted_narrowed(Layout::NARROW, middle, &xs, &ys, tier);
                if tier.kind() == TierKind::Avx512 || tier.fast_pext() {
                    assert_eq!(narrow, narrowed.then_some(expected), "{}", tier.name());
                } else {
                    assert_eq!(narrow, None, "{}", tier.name());
                }
                // With all the room it wants, with too little for some splits, and with
                // none (every block counted in halves down to pair tests): the same count.
                // Where the tier narrows, the spread words' splits work on narrow words
                // from the top (`narrow.rs`), given the room.
                for room in [usize::MAX, 8 * (xs.len() + ys.len()), 0] {
                    let mut allowance = Allowance::new(room);
                    let mut sieve = Sieve::new(middle, tier);
                    assert_eq!(
                        sieve.count(&xs, &ys, 0, &AtomicBool::new(false), &mut allowance),
                        expected,
                        "{}, {middle}, room {room}",
                        tier.name()
                    );
                    if narrowed && tier.fast_pext() && room == usize::MAX {
                        assert!(sieve.narrowed_bytes() > 0, "{}", tier.name());
                    }
                }
            }
        }
    }
}

/// A sieve that offers the sides of its splits to a parked engine (`share.rs`) counts, with
/// that engine, what it counts alone, in every tier: random sorted lists long enough that
/// the first splits' sides pass [`OFFER_PAIRS`]; the engine took some, weighed them by the
/// key's weight, and handed each to its tally.
#[test]
fn a_sieve_and_a_parked_engine_count_what_the_sieve_counts_alone() {
    let tiers = tiers_to_test("a_sieve_and_a_parked_engine_count_what_the_sieve_counts_alone");
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut xs = sparse_words(&mut state, 0xff_ffff_ffff, BALANCE_SHIFT, 60_000);
    let mut ys = sparse_words(&mut state, 0xff_ffff_ffff, BALANCE_SHIFT + 8, 50_000);
    xs.sort_unstable_by_key(|&x| x >> BALANCE_SHIFT);
    ys.sort_unstable_by_key(|&y| y >> (BALANCE_SHIFT + 8));
    assert!(xs.len() * ys.len() / 4 > OFFER_PAIRS);
    let cancel = AtomicBool::new(false);
    for tier in tiers {
        let room = || Allowance::new(usize::MAX);
        let alone = Sieve::new(1, tier).count(&xs, &ys, 0, &cancel, &mut room());
        assert!(alone > 0);
        let exchange = Arc::new(Exchange::default());
        let running = exchange.started();
        let parked = {
            let exchange = exchange.clone();
            std::thread::spawn(move || {
                let mut tallied = 0;
                let mut work = Work::new(usize::MAX);
                let cancel = AtomicBool::new(false);
                let helped = work.help(&exchange, &cancel, &mut |side| tallied += side);
                helped.map(|helped| (helped, tallied))
            })
        };
        while exchange.idle() == 0 {
            std::thread::yield_now();
        }
        let mut sieve = Sieve::new(1, tier);
        sieve.share(Some((exchange.clone(), 3)));
        let kept = sieve.count(&xs, &ys, 0, &cancel, &mut room());
        drop(running);
        let (helped, tallied) = parked.join().unwrap().unwrap();
        assert!(exchange.given() > 0, "{}", tier.name());
        assert_eq!(helped, tallied, "{}", tier.name());
        assert!(helped > 0 && helped % 3 == 0, "{}", tier.name());
        assert_eq!(kept + helped / 3, alone, "{}", tier.name());
        assert_eq!(exchange.idle(), 0, "{}", tier.name());
    }
}

/// A parked engine leaves at once when nothing counts a key, and, while a part still
/// counts one, when its count is cancelled (`Cancelled`), its lists given back either way.
#[test]
fn a_parked_engine_leaves_when_nothing_counts_or_when_cancelled() {
    let exchange = Arc::new(Exchange::default());
    let mut work = Work::new(1 << 20);
    work.tops.push(7);
    let calm = AtomicBool::new(false);
    assert_eq!(work.help(&exchange, &calm, &mut |_| ()), Ok(0));
    assert_eq!((work.tops.as_slice(), exchange.idle()), (&[7u64][..], 0));
    let running = exchange.started();
    let cancel = Arc::new(AtomicBool::new(false));
    let parked = {
        let (exchange, cancel) = (exchange.clone(), cancel.clone());
        std::thread::spawn(move || {
            let helped = work.help(&exchange, &cancel, &mut |_| ());
            (helped, work)
        })
    };
    while exchange.idle() == 0 {
        std::thread::yield_now();
    }
    cancel.store(true, Ordering::Relaxed);
    let (helped, work) = parked.join().unwrap();
    assert_eq!(helped, Err(CountError::Cancelled));
    assert_eq!((work.tops.as_slice(), exchange.idle()), (&[7u64][..], 0));
    drop(running);
}

/// A side offered to a parked engine without room for it stays with the sieve that offered
/// it, and that engine leaves (while a key is still counted) rather than be offered the
/// next side it could not take either.
#[test]
fn a_parked_engine_without_room_for_a_side_leaves() {
    let exchange = Arc::new(Exchange::default());
    let running = exchange.started();
    let parked = {
        let exchange = exchange.clone();
        std::thread::spawn(move || {
            let mut work = Work::new(0);
            work.help(&exchange, &AtomicBool::new(false), &mut |_| ())
        })
    };
    while exchange.idle() == 0 {
        std::thread::yield_now();
    }
    let side = vec![0u64; 1 << 15];
    assert!(side.len() * side.len() >= OFFER_PAIRS);
    let branch = Branch {
        middle: 0,
        layout: Layout::NARROW,
        tier: tier(),
        weight: 1,
    };
    assert!(!exchange.offer(&side, &side, branch));
    assert_eq!(parked.join().unwrap(), Ok(0));
    assert_eq!((exchange.idle(), exchange.given()), (0, 0));
    drop(running);
}
