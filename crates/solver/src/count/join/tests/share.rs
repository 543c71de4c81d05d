//! A wide key shared by engines: its chunks taken from one cursor, the pieces of its last
//! chunk from another, and engines out of parts joining keys as a count's do, all adding up
//! to the key's pairs counted alone.

use super::*;

/// The wide path for `n` in chunks of `chunk` words, cutting in pieces any shared key's
/// last chunk of at least `offer_min` top halves.
fn wide(n: u32, chunk: usize, offer_min: usize) -> Wide {
    Wide {
        offer_min,
        ..Wide::new(n, chunk)
    }
}

/// A share of `key` alone, of a count of two engines.
fn lone(key: Key) -> Share {
    Share::new(key, Arc::new(Unstarted::new(1, 2)))
}

/// The task of counting `key` (whole) in `tier`, shared by `share` if given.
fn task<'a>(key: &'a Key, share: Option<&'a Share>, cancel: &'a AtomicBool) -> Task<'a> {
    Task {
        key,
        piece: Piece::Whole,
        tier: tier(),
        cancel,
        share,
    }
}

/// An engine that joins a shared key once its first engine has counted a chunk or a piece
/// (from inside that engine's tally, so the order is fixed) takes the chunks left and the
/// pieces left of the last one; the two engines' pairs add up to the key's alone, with many
/// chunks a key (chunks of 256 words) or one (cut in pieces), at n = 16 and 17.
#[test]
fn a_shared_keys_chunks_and_pieces_add_up_to_the_key() {
    let cancel = AtomicBool::new(false);
    for (n, chunk) in [(16, 256), (16, CHUNK), (17, 1 << 10), (17, CHUNK)] {
        let wide = wide(n, chunk, 64);
        let (mut alone, mut first, mut second) = (
            Work::new(usize::MAX),
            Work::new(usize::MAX),
            Work::new(usize::MAX),
        );
        let (mut joined, mut cut) = (0, 0);
        for key in keys::keys(n).iter().step_by(41) {
            let whole = wide.pairs(task(key, None, &cancel), &mut alone, &mut |_| ());
            let share = lone(*key);
            let mut helped = 0;
            let mut help = |_| {
                if helped != 0 {
                    return;
                }
                // The chunks left, then the pieces left (a helper's order).
                let shared = task(key, Some(&share), &cancel);
                let chunks = wide.pairs(shared, &mut second, &mut |_| ());
                helped += chunks.unwrap();
                if let Some(split) = share.pieces() {
                    let pieces = wide.pairs_of(shared, Some(split), &mut second, &mut |_| ());
                    helped += pieces.unwrap();
                    cut += 1;
                }
                joined += usize::from(helped > 0);
            };
            let own = wide.pairs(task(key, Some(&share), &cancel), &mut first, &mut help);
            assert_eq!(own.unwrap() + helped, whole.unwrap(), "n = {n}, {key:?}");
            assert_eq!(share.help(), Help::Nothing, "n = {n}, {key:?}");
        }
        assert!(joined > 0, "n = {n}, chunks of {chunk}: no key joined");
        if chunk == CHUNK {
            assert!(cut > 0, "n = {n}: no chunk cut in pieces");
        }
    }
}

/// Engines out of parts on threads of their own, joining the keys one engine counts in
/// turn, count every pair once whatever the interleaving; a key its engine has not begun
/// is waited for, and the helpers end when every key is over.
#[test]
fn helpers_on_threads_count_every_pair_once() {
    let cancel = AtomicBool::new(false);
    for (n, chunk) in [(16, 512), (17, CHUNK)] {
        let wide = wide(n, chunk, 64);
        let keys: Vec<Key> = keys::keys(n).iter().step_by(97).copied().collect();
        let mut alone = Work::new(usize::MAX);
        let mut expected = 0u64;
        for key in &keys {
            let pairs = wide.pairs(task(key, None, &cancel), &mut alone, &mut |_| ());
            expected += pairs.unwrap() * key.weight;
        }
        let unstarted = Arc::new(Unstarted::new(keys.len(), 3));
        let share = |key| Arc::new(Share::new(key, unstarted.clone()));
        let shares: Vec<Arc<Share>> = keys.iter().map(|&key| share(key)).collect();
        let (wide, cancel) = (&wide, &cancel);
        let got = std::thread::scope(|scope| {
            let helpers: Vec<_> = (0..2)
                .map(|_| {
                    let shares = &shares;
                    scope.spawn(move || {
                        let mut work = Work::new(usize::MAX);
                        let mut tallied = 0;
                        let helped =
                            wide.help(shares, tier(), cancel, &mut work, &mut |s| tallied += s);
                        (helped.unwrap(), tallied)
                    })
                })
                .collect();
            let mut work = Work::new(usize::MAX);
            let mut own = 0;
            for share in &shares {
                let pairs = wide.pairs(
                    task(&share.key, Some(share), cancel),
                    &mut work,
                    &mut |_| (),
                );
                own += pairs.unwrap() * share.key.weight;
            }
            helpers.into_iter().fold(own, |sum, helper| {
                let (helped, tallied) = helper.join().unwrap();
                assert_eq!(helped, tallied, "n = {n}: a helper's tally");
                sum + helped
            })
        });
        assert_eq!(got, expected, "n = {n}, chunks of {chunk}");
    }
}

/// A helper gives up when the count's flag is raised, even while it waits for a key no
/// engine has begun; a failed engine settles its key so that no helper waits for it.
#[test]
fn a_helper_stops_on_the_flag_and_a_failed_key_is_over() {
    let wide = wide(16, CHUNK, 64);
    let key = keys::keys(16)[7];
    let share = Arc::new(lone(key));
    assert_eq!(share.help(), Help::Wait);
    let raised = AtomicBool::new(true);
    let mut work = Work::new(usize::MAX);
    let shares = [share.clone()];
    let helped = wide.help(&shares, tier(), &raised, &mut work, &mut |_| ());
    assert!(matches!(helped, Err(CountError::Cancelled)));
    let counted = wide.pairs(task(&key, Some(&share), &raised), &mut work, &mut |_| ());
    assert!(matches!(counted, Err(CountError::Cancelled)));
    assert_eq!(share.help(), Help::Nothing);
    let calm = AtomicBool::new(false);
    let helped = wide.help(&shares, tier(), &calm, &mut work, &mut |_| ());
    assert_eq!(helped.unwrap(), 0);
}
