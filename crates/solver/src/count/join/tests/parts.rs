//! A count's parts: the tables they share, a key cut in pieces, shards, the engines'
//! allowance, cancellation, progress, memory figures and recounts.

use super::*;

/// The parts of a count of `shard` of size `n` with these options, made on a pool of one.
fn parts_now(n: u32, shard: Shard, options: &CountOptions) -> Result<Vec<Part>, CountError> {
    let pool = Pool::new(1);
    let on = pool.clone();
    let options = options.clone();
    wait(|done| pool.spawn(move || parts(n, shard, &options, &on, done))).expect("parts")
}

/// A shard of n = 17 with a few keys, for the tests that look at a count's parts.
const SHARD_OF_17: Shard = Shard {
    index: 5,
    count: 64,
};

/// The tables a count's key parts share, if it has any.
fn tables_of(parts: &[Part]) -> Option<*const shared::Shared> {
    parts.iter().find_map(|part| match &part.0 {
        Kind::Key(tables, ..) => Some(Arc::as_ptr(tables)),
        Kind::Turns(..) | Kind::Search(..) | Kind::Help(..) => None,
    })
}

#[test]
fn a_raised_flag_stops_the_tables() {
    let raised = AtomicBool::new(true);
    assert!(matches!(
        Join::new(16, &raised, &|| {}),
        Err(CountError::Cancelled)
    ));
    assert!(Join::new(16, &AtomicBool::new(false), &|| {}).is_ok());
}

/// Counts of one size running at once share one set of tables, however many shards they
/// are; a shard that holds no key builds none and plans no building steps.
#[test]
fn counts_of_one_size_share_the_tables_and_an_empty_shard_builds_none() {
    let options = CountOptions::default();
    let whole = parts_now(17, Shard::WHOLE, &options).unwrap();
    let shard = parts_now(17, SHARD_OF_17, &options).unwrap();
    let (a, b) = (tables_of(&whole), tables_of(&shard));
    assert!(a.is_some() && a == b, "one set of tables for both");
    assert!(shared::alive(17));
    drop((whole, shard));
    assert!(!shared::alive(17), "freed with the last count");
    // Keys are numbered after the 17 turn-fixed parts: a shard past them all has none.
    let progress = Arc::new(Progress::default());
    let empty = CountOptions {
        progress: progress.clone(),
        ..CountOptions::default()
    };
    let none = parts_now(
        17,
        Shard {
            index: 999_999,
            count: 1_000_000,
        },
        &empty,
    )
    .unwrap();
    assert!(none.is_empty());
    assert!(tables_of(&none).is_none());
    assert_eq!(
        progress.total.load(Ordering::Relaxed),
        0,
        "no building steps"
    );
    assert!(!shared::alive(17), "no tables built");
}

/// A key's two pieces add up to its count on the tables' path and on the wide path, each
/// piece's lists in chunks of any size (the cut's bit does not depend on them: the pieces
/// are counted in different chunks here); and for keys with many pairs the cut shares them
/// out rather than leaving them to one side.
#[test]
fn a_keys_two_pieces_add_up_to_the_key_on_both_paths() {
    let (tier, cancel) = (tier(), AtomicBool::new(false));
    let joins = [
        (16, Join::new(16, &cancel, &|| {}).unwrap(), None),
        (17, Join::new(17, &cancel, &|| {}).unwrap(), None),
        (16, Join::wide(16, 100), Some(Join::wide(16, CHUNK))),
        (17, Join::wide(17, CHUNK), Some(Join::wide(17, 1 << 10))),
    ];
    for (n, join, other) in &joins {
        let other = other.as_ref().unwrap_or(join);
        let mut work = Work::new(usize::MAX);
        let mut shared = 0;
        for key in keys::keys(*n).iter().step_by(53) {
            let mut count = |join: &Join, piece| {
                let cancel = &cancel;
                let task = Task {
                    key,
                    piece,
                    tier,
                    cancel,
                };
                join.pairs_tallied(task, &mut work, &mut |_| ()).unwrap()
            };
            let whole = count(join, Piece::Whole);
            let (with, without) = (count(join, Piece::With), count(other, Piece::Without));
            assert_eq!(with + without, whole, "n = {n}, {key:?}");
            if whole > 1000 {
                assert!(
                    with > 0 && without > 0,
                    "n = {n}, {key:?}: {with} + {without}"
                );
                shared += 1;
            }
        }
        assert!(shared > 0, "n = {n}: no key with many pairs");
    }
}

/// The lone engine of a count is allowed twice an engine's bytes on the wide path and
/// lists its keys' halves in chunks twice as long: fewer chunk pairs (each handed to the
/// tally), the same pairs.
#[test]
fn a_lone_engine_counts_in_longer_chunks() {
    assert_eq!(engine_bytes(1), 2 * engine_bytes(2));
    assert_eq!(engine_bytes(2), engine_bytes(8));
    let (tier, cancel) = (tier(), AtomicBool::new(false));
    let join = Join::wide(17, 1 << 10);
    let mut longer = 0;
    for key in keys::keys(17).iter().step_by(97) {
        let count = |engines| {
            let (mut work, mut chunk_pairs) = (Work::new(engine_bytes(engines)), 0);
            let mut tally = |_| chunk_pairs += 1;
            let pairs = join.whole_tallied(key, tier, &cancel, &mut work, &mut tally);
            (pairs.unwrap(), chunk_pairs)
        };
        let ((lone, lone_chunks), (shared, shared_chunks)) = (count(1), count(2));
        assert_eq!(lone, shared, "{key:?}");
        assert!(lone_chunks <= shared_chunks, "{key:?}");
        longer += usize::from(lone_chunks < shared_chunks);
    }
    assert!(
        longer > 0,
        "no key listed in fewer chunks by the lone engine"
    );
}

/// The pieces of the key parts a count of size `n` on `threads` engines makes of `shard`,
/// in their order.
fn key_pieces(n: u32, shard: Shard, threads: usize) -> Vec<Piece> {
    let options = CountOptions {
        threads,
        ..CountOptions::default()
    };
    let parts = parts_now(n, shard, &options).unwrap();
    parts
        .iter()
        .filter_map(|part| match &part.0 {
            Kind::Key(_, _, piece, ..) => Some(*piece),
            Kind::Turns(..) | Kind::Search(..) | Kind::Help(..) => None,
        })
        .collect()
}

/// A shard with fewer keys than engines cuts each in two pieces, one part each, so that an
/// engine that would have no key has work; on one engine, or with a key per engine, it
/// does not; and the count is the same either way.
#[test]
fn a_shard_of_fewer_keys_than_engines_cuts_them_in_two() {
    let n = 16;
    let one = Shard {
        index: n + 100,
        count: 1 << 20,
    };
    let three = Shard {
        index: n + 100,
        count: (keys::key_count(n) as u32 + n) / 3 + 1,
    };
    assert_eq!(keys_held(n, one), 1);
    assert_eq!(keys_held(n, three), 3);
    let pieces = |shard, threads| key_pieces(n, shard, threads);
    assert_eq!(pieces(one, 1), [Piece::Whole]);
    assert_eq!(pieces(one, 2), [Piece::Without, Piece::With]);
    let sides = [[Piece::Without; 3], [Piece::With; 3]].concat();
    assert_eq!(pieces(three, 4), sides);
    assert_eq!(pieces(three, 3), [Piece::Whole; 3]);
    assert_eq!(pieces(three, 1), [Piece::Whole; 3]);
    let count = |shard: Shard, threads: usize| {
        let pool = Pool::new(threads);
        let options = CountOptions {
            threads,
            ..CountOptions::default()
        };
        let problem = crate::Problem::new(n, &[], false, shard).unwrap();
        wait(|done| crate::count(&problem, options, &pool, done))
            .unwrap()
            .unwrap()
    };
    for shard in [one, three] {
        let alone = count(shard, 1);
        assert!(alone.solutions > 0);
        assert_eq!(count(shard, 2), alone, "{shard:?}");
        assert_eq!(count(shard, 4), alone, "{shard:?}");
    }
}

/// From `CUT_EVERY_KEY_FROM` on, a count of two engines cuts every key of its shard in two,
/// though the keys outnumber the engines; a count of one engine keeps them whole.
#[test]
fn n_28_on_two_engines_cuts_every_key_in_two() {
    let n = 28;
    let shard = Shard {
        index: 3_236_100,
        count: 1 << 22,
    };
    let keys = keys_held(n, shard);
    assert!(keys >= 2, "{keys} keys");
    let pieces = |threads| key_pieces(n, shard, threads);
    let sides = [vec![Piece::Without; keys], vec![Piece::With; keys]].concat();
    assert_eq!(pieces(2), sides);
    assert_eq!(pieces(1), vec![Piece::Whole; keys]);
}

/// How many keys a shard holds agrees with the keys it is given, and the count of keys
/// with the whole list.
#[test]
fn a_shard_holds_as_many_keys_as_it_is_given() {
    for n in [16u32, 17] {
        let count = keys::keys(n).len();
        assert_eq!(keys::key_count(n), count, "n = {n}");
        for parts in [
            1,
            2,
            7,
            count as u32,
            count as u32 + n,
            count as u32 + n + 3,
            1 << 20,
        ] {
            for index in [0, 1, n - 1, n, n + 1, parts.saturating_sub(1), parts / 2] {
                if index >= parts {
                    continue;
                }
                let shard = Shard {
                    index,
                    count: parts,
                };
                let given = keys::shard_keys(n, n as usize, shard).len();
                assert_eq!(keys_held(n, shard), given, "n = {n}, {index}/{parts}");
            }
        }
    }
}

/// A key whose two lists and the room to sort them do not fit its engine's allowance ends
/// with `OutOfMemory`, having allocated no more than it; one whose lists fit but whose sieve
/// has next to no room left counts the same as with all the room it wants.
#[test]
fn lists_past_the_allowance_are_out_of_memory_and_a_tight_sieve_counts_the_same() {
    let join = Join::new(16, &AtomicBool::new(false), &|| {}).unwrap();
    let mut room = Work::new(usize::MAX);
    let (key, pairs) = keys::keys(16)
        .into_iter()
        .map(|key| {
            let pairs = join.pairs(&key, tier(), &AtomicBool::new(false), &mut room);
            (key, pairs.unwrap())
        })
        .find(|&(_, pairs)| pairs > 1000)
        .expect("a key with pairs");
    let lists = 8 * (room.tops.len() + room.bottoms.len());
    for allowance in [0, 64, lists / 2] {
        let mut work = Work::new(allowance);
        let got = join.pairs(&key, tier(), &AtomicBool::new(false), &mut work);
        assert!(
            matches!(got, Err(CountError::OutOfMemory { .. })),
            "{allowance}: {got:?}"
        );
        assert!(work.bytes() <= allowance, "{allowance}: {}", work.bytes());
    }
    let lists = 8 * (room.tops.capacity() + room.bottoms.capacity() + room.scratch.capacity());
    for tight in [lists + 64, lists + 4096] {
        let mut work = Work::new(tight);
        let got = join.pairs(&key, tier(), &AtomicBool::new(false), &mut work);
        assert_eq!(got, Ok(pairs), "{tight}");
        assert!(work.bytes() <= tight);
    }
}

#[test]
fn a_key_stops_when_cancelled() {
    let join = Join::new(14, &AtomicBool::new(false), &|| {}).unwrap();
    let key = keys::keys(14)[0];
    let cancel = AtomicBool::new(true);
    for tier in tiers_to_test("a_key_stops_when_cancelled") {
        assert_eq!(
            join.pairs(&key, tier, &cancel, &mut Work::new(usize::MAX)),
            Err(CountError::Cancelled),
            "{}",
            tier.name()
        );
    }
}

#[test]
fn building_the_tables_moves_progress_and_plans_every_part() {
    for shard in [Shard::WHOLE, Shard { index: 3, count: 7 }] {
        let progress = Arc::new(Progress::default());
        let options = CountOptions {
            progress: progress.clone(),
            ..CountOptions::default()
        };
        let made = parts_now(16, shard, &options).unwrap();
        let steps = build_steps(16);
        assert_eq!(progress.done.load(Ordering::Relaxed), steps, "{shard:?}");
        let total = progress.total.load(Ordering::Relaxed);
        let planned: u64 = made.iter().map(|part| part.steps(16)).sum();
        assert_eq!(total, steps + planned, "{shard:?}");
        assert!(
            planned > made.len() as u64,
            "turn-fixed parts tick: {shard:?}"
        );
    }
}

/// Cancelling at any step of the tables' build (the passes over the placements and the
/// arrays' fill alike) ends it there, as `Cancelled`, with no step after it.
#[test]
fn cancelling_the_build_at_any_step_stops_it_there() {
    for at in 1..build_steps(16) {
        let cancel = AtomicBool::new(false);
        let ticks = std::sync::atomic::AtomicU64::new(0);
        let tick = || {
            if ticks.fetch_add(1, Ordering::Relaxed) + 1 == at {
                cancel.store(true, Ordering::Relaxed);
            }
        };
        let built = Join::new(16, &cancel, &tick);
        assert!(matches!(built, Err(CountError::Cancelled)), "step {at}");
        assert_eq!(ticks.load(Ordering::Relaxed), at, "steps after step {at}");
    }
}

/// The figures behind the memory model, measured (run by hand:
/// `cargo test -p queens-solver --lib -- --ignored --nocapture memory_figures`): per n, the tables' build's
/// peak bytes, the bound on a key's lists, and the lists and sieve of sampled keys.
#[test]
#[ignore]
fn memory_figures() {
    let var = |name: &str, or: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(or)
    };
    let (from, to, sample) = (
        var("QUEENS_FROM", 16),
        var("QUEENS_TO", MAX as usize),
        var("QUEENS_SAMPLE", 24),
    );
    for n in from as u32..=to as u32 {
        let join = Join::new(n, &AtomicBool::new(false), &|| {}).unwrap();
        let bound = join.as_tables().list_bound();
        let keys = keys::keys(n);
        let mut work = Work::new(usize::MAX);
        let (mut lists, mut most) = (0, 0);
        let step = (keys.len() / sample).max(1);
        for key in keys.iter().step_by(step) {
            join.pairs(key, tier(), &AtomicBool::new(false), &mut work)
                .unwrap();
            lists = lists.max(work.tops.len().max(work.bottoms.len()));
            most = most.max(work.bytes());
        }
        println!(
            "n = {n}: tables' peak {} bytes; list bound {bound} words; sampled {} keys: longest list {lists} words, work {most} bytes",
            join.as_tables().peak_bytes,
            keys.len().div_ceil(step)
        );
    }
}

/// A count told to recount keys counts each chosen key again in the other tier: every key
/// with fraction 1, about half with 0.5 (the same ones for the same seed), none with 0, the
/// answer unchanged; and a recount that disagrees ends the count with `Recounted`, naming
/// the key and both tiers, instead of an answer.
#[test]
fn recounted_keys_agree_and_a_disagreeing_recount_ends_the_count() {
    let (n, shard) = (16, Shard { index: 1, count: 3 });
    let count = |recount: Option<Recount>| {
        let pool = Pool::new(2);
        let options = CountOptions {
            threads: 2,
            recount,
            ..CountOptions::default()
        };
        let progress = options.progress.clone();
        let problem = crate::Problem::new(n, &[], false, shard).unwrap();
        let got = wait(|done| crate::count(&problem, options, &pool, done)).unwrap();
        (got, progress.recounted.load(Ordering::Relaxed))
    };
    let keys = keys_held(n, shard) as u64;
    let (plain, none) = count(None);
    let plain = plain.unwrap();
    assert_eq!(none, 0);
    let all = Recount {
        fraction: 1.0,
        seed: 7,
        method: RecountMethod::Tier,
    };
    assert_eq!(count(Some(all)), (Ok(plain), keys));
    let half = Recount {
        fraction: 0.5,
        seed: 7,
        method: RecountMethod::Tier,
    };
    let (got, some) = count(Some(half));
    assert_eq!(got, Ok(plain));
    assert!(keys / 4 < some && some < 3 * keys / 4, "{some} of {keys}");
    assert_eq!(count(Some(half)).1, some, "the same seed, the same keys");
    let zero = Recount {
        fraction: 0.0,
        seed: 7,
        method: RecountMethod::Tier,
    };
    assert_eq!(count(Some(zero)), (Ok(plain), 0));

    RECOUNT_FAULT.store(1, Ordering::Relaxed);
    let (got, _) = count(Some(all));
    RECOUNT_FAULT.store(0, Ordering::Relaxed);
    let Err(CountError::Recounted {
        top,
        first,
        tier: first_tier,
        again,
        other,
    }) = got
    else {
        panic!("{got:?}");
    };
    assert_eq!(again, first + 1);
    if Tier::best().kind() != crate::TierKind::Portable {
        assert_ne!(first_tier, other, "another tier");
    }
    assert_eq!(top.count_ones(), n / 2, "a key's top half: {top:#b}");
    eprintln!("recounts: {some} of {keys} keys at 0.5; in {first_tier} then {other}");
}

/// A count of two or more engines ends with one part per engine that counts the sides of
/// splits the others offer (`share.rs`), after every key; a count of one engine has none.
#[test]
fn each_engine_of_a_shared_count_ends_on_a_part_that_helps() {
    for threads in [1, 2, 3] {
        let options = CountOptions {
            threads,
            ..CountOptions::default()
        };
        let parts = parts_now(17, SHARD_OF_17, &options).unwrap();
        let helps = |part: &&Part| matches!(part.0, Kind::Help(..));
        let last = parts.iter().rev().take_while(helps).count();
        let all = parts.iter().filter(helps).count();
        let wanted = if threads > 1 { threads } else { 0 };
        assert_eq!((last, all), (wanted, wanted), "{threads} engines");
        assert!(parts.len() > wanted);
    }
}
