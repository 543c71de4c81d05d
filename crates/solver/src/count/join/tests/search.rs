//! Parts of the largest boards against a plain search: heads and whole keys of n = 25 on
//! the tables' path, the wide path's bands and parts of n = 26 to 28.

use super::*;

/// The solutions of size `n` whose row `r` has its queen on a column of the mask `rows[r]`,
/// found by a plain backtracking search, each weighted as the sieve weighs it: 2 if its
/// balance (+1 per queen strictly between the long diagonals above or below the centre, -1
/// left or right of it) is positive, 1 if it is zero, 0 if negative.
fn weighted_search(n: u32, rows: &[u32]) -> u64 {
    fn square(n: u32, row: u32, column: u32) -> i32 {
        let (main, anti) = (
            row as i32 - column as i32,
            (row + column) as i32 - (n as i32 - 1),
        );
        match (main.signum(), anti.signum()) {
            (0, _) | (_, 0) => 0,
            (a, b) if a == b => 1,
            _ => -1,
        }
    }
    fn from(n: u32, rows: &[u32], row: u32, taken: [u32; 3], balance: i32) -> u64 {
        if row == n {
            return match balance.signum() {
                1 => 2,
                0 => 1,
                _ => 0,
            };
        }
        let [columns, ld, rd] = taken;
        let full = (1u32 << n) - 1;
        let mut free = rows[row as usize] & full & !(columns | ld | rd);
        let mut total = 0;
        while free != 0 {
            let bit = free & free.wrapping_neg();
            free ^= bit;
            let next = [columns | bit, ((ld | bit) << 1) & full, (rd | bit) >> 1];
            let here = square(n, row, bit.trailing_zeros());
            total += from(n, rows, row + 1, next, balance + here);
        }
        total
    }
    assert_eq!(rows.len(), n as usize);
    from(n, rows, 0, [0; 3], 0)
}

/// The orders of `columns` (each a head's rows' columns), in lexicographic order of places.
fn orders(columns: &[u32]) -> Vec<Vec<u32>> {
    if columns.is_empty() {
        return vec![Vec::new()];
    }
    let mut all = Vec::new();
    for (at, &column) in columns.iter().enumerate() {
        let mut rest = columns.to_vec();
        rest.remove(at);
        for mut order in orders(&rest) {
            order.insert(0, column);
            all.push(order);
        }
    }
    all
}

/// The weighted pairs of the whole of `key` (of size `n`), as the join counts them in each
/// of `tiers`, checked against [`weighted_search`] with the rows' columns restricted to the
/// key's halves and its middle queen.
fn check_whole_key(join: &Join, key: &Key, tiers: &[Tier]) {
    let (n, m) = (join.sizes().n, join.sizes().m as usize);
    let mut rows = vec![key.top; m];
    rows.extend(key.middle.map(|q| 1 << q));
    rows.extend(vec![key.bottom; m]);
    let searched = weighted_search(n, &rows);
    for &tier in tiers {
        let mut work = Work::new(usize::MAX);
        let got = join.pairs(key, tier, &AtomicBool::new(false), &mut work);
        assert_eq!(got.unwrap(), searched, "{key:?}, {}", tier.name());
    }
}

/// The keys of n = 25 that [`heads_of_keys_of_25_match_a_search`] checks: their places in
/// the list of keys (middle queen on column 0, 3 and 12, the centre).
const KEYS_OF_25: [usize; 3] = [1_234, 5_000_000, 16_500_000];

/// The key of n = 25 at `place` in the list of keys.
fn key_of_25(place: usize) -> Key {
    let shard = Shard {
        index: place as u32,
        count: 1 << 25,
    };
    keys::shard_keys(25, 0, shard)[0]
}

/// A part of n = 25, the largest board the join's tables take, against a plain search: for
/// keys of three middle queens (left of the centre and on it), the weighted pairs of the
/// top halves of one head placement and every bottom half of the key, as the join counts
/// them (the tails' table, the half words' kernels, the bottoms' mirroring, the sort and
/// the sieve's weights, on every tier), against the same solutions found by backtracking
/// with the rows' columns restricted to the head's, the key's and the middle queen's; and
/// the whole of the first key (its middle queen on column 0 leaves it a few hundred
/// solutions). A whole key nearer the centre has up to hundreds of millions, too many for a
/// test's search: those are `whole_keys_of_25_match_a_search`'s, run by hand.
#[test]
fn heads_of_keys_of_25_match_a_search() {
    let n = 25u32;
    let join = Join::new(n, &AtomicBool::new(false), &|| {}).unwrap();
    let tiers = tiers_to_test("heads_of_keys_of_25_match_a_search");
    check_whole_key(&join, &key_of_25(KEYS_OF_25[0]), &tiers);
    for place in KEYS_OF_25 {
        let key = key_of_25(place);
        let middle = key.middle.expect("odd boards have a middle queen");
        // Heads on the key's top columns, sets in colex order, each in every order of
        // its rows, until two of them have solutions.
        let places: Vec<u32> = (0..32).filter(|c| key.top >> c & 1 != 0).collect();
        let mut checked = 0;
        'sets: for picks in subsets(12, 6) {
            let columns: Vec<u32> = (0..12)
                .filter(|p| picks >> p & 1 != 0)
                .map(|p| places[p as usize])
                .collect();
            for order in orders(&columns) {
                let Some((head, first)) = join.as_tables().head_of(&order) else {
                    continue;
                };
                let table = join.as_tables().heads.get(first);
                assert!(
                    table.chunks_exact(2).any(|entry| entry == head),
                    "{order:?}"
                );
                let mut rows: Vec<u32> = order.iter().map(|&c| 1 << c).collect();
                rows.extend([key.top & !first; 6]);
                rows.push(1 << middle);
                rows.extend([key.bottom; 12]);
                let searched = weighted_search(n, &rows);
                if searched == 0 {
                    continue;
                }
                for &tier in &tiers {
                    let mut work = Work::new(usize::MAX);
                    let got = join
                        .as_tables()
                        .pairs_of_head(&key, head, first, tier, &mut work);
                    let name = tier.name();
                    assert_eq!(got.unwrap(), searched, "{key:?}, head {order:?}, {name}");
                }
                checked += 1;
                if checked == 2 {
                    break 'sets;
                }
            }
        }
        assert_eq!(checked, 2, "{key:?}: two heads with solutions");
    }
}

/// The whole keys of [`KEYS_OF_25`] against a plain search, on every tier (run by hand:
/// `cargo test -p queens-solver --lib -- --ignored whole_keys_of_25`; the searches take
/// minutes).
#[test]
#[ignore]
fn whole_keys_of_25_match_a_search() {
    let join = Join::new(25, &AtomicBool::new(false), &|| {}).unwrap();
    let tiers = tiers_to_test("whole_keys_of_25_match_a_search");
    for place in KEYS_OF_25 {
        check_whole_key(&join, &key_of_25(place), &tiers);
    }
}

/// On the wide path, a key whose bands do not fit what its engine's allowance has left (the
/// sieve and the sort kept room from an earlier key) takes that room back and counts right,
/// within the allowance: each key is counted alone first with all the room it wants, then
/// the key with the largest bands after each key with smaller lists, in an allowance of what
/// the former took alone.
#[test]
fn a_wide_keys_bands_take_back_the_room_the_sieve_kept() {
    let (n, tier, cancel) = (17, tier(), AtomicBool::new(false));
    let join = Join::wide(n, CHUNK);
    let band_bytes = |work: &Work| work.bands.iter().map(KeyBands::bytes).sum::<usize>();
    let list_bytes = |work: &Work| 8 * (work.tops.capacity() + work.bottoms.capacity());
    // Per key: its pairs, its bands' bytes, its lists' bytes and all of its bytes.
    let alone: Vec<(Key, u64, usize, usize, usize)> = keys::keys(n)
        .into_iter()
        .step_by(5)
        .map(|key| {
            let mut work = Work::new(usize::MAX);
            let pairs = join.pairs(&key, tier, &cancel, &mut work).unwrap();
            let bytes = (band_bytes(&work), list_bytes(&work), work.bytes());
            (key, pairs, bytes.0, bytes.1, bytes.2)
        })
        .collect();
    let &(second, pairs, bands, lists, limit) = alone.iter().max_by_key(|a| a.2).unwrap();
    let mut retried = 0;
    for &(first, first_pairs, _, first_lists, _) in &alone {
        if first_lists > lists {
            continue;
        }
        let mut work = Work::new(limit);
        assert_eq!(
            join.pairs(&first, tier, &cancel, &mut work),
            Ok(first_pairs)
        );
        // Whether the second key's bands find room without what the first key's sieve and
        // sort kept.
        if work.bytes() + bands.saturating_sub(band_bytes(&work)) <= limit {
            continue;
        }
        let got = join.pairs(&second, tier, &cancel, &mut work);
        assert_eq!(got, Ok(pairs), "{second:?} after {first:?}");
        assert!(work.bytes() <= limit, "{} > {limit}", work.bytes());
        retried += 1;
    }
    assert!(retried > 0, "no key left too little room for the bands");
    eprintln!("{retried} of {} keys left too little room", alone.len());
}

/// The key of size `n` at `place` in the list of keys.
fn key_at(n: u32, place: usize) -> Key {
    let shard = Shard {
        index: place as u32,
        count: 1 << 30,
    };
    keys::shard_keys(n, 0, shard)[0]
}

/// Up to `limit` solutions of size `n` whose row `r` has its queen on a column of the mask
/// `rows[r]`, each as its rows' columns, found by a plain backtracking search.
fn solutions_within(n: u32, rows: &[u32], limit: usize) -> Vec<Vec<u32>> {
    fn from(
        n: u32,
        rows: &[u32],
        placed: &mut Vec<u32>,
        taken: [u32; 3],
        out: &mut Vec<Vec<u32>>,
        limit: usize,
    ) {
        if out.len() == limit {
            return;
        }
        let row = placed.len();
        if row == n as usize {
            out.push(placed.clone());
            return;
        }
        let [columns, ld, rd] = taken;
        let full = (1u32 << n) - 1;
        let mut free = rows[row] & full & !(columns | ld | rd);
        while free != 0 {
            let bit = free & free.wrapping_neg();
            free ^= bit;
            placed.push(bit.trailing_zeros());
            from(
                n,
                rows,
                placed,
                [columns | bit, ((ld | bit) << 1) & full, (rd | bit) >> 1],
                out,
                limit,
            );
            placed.pop();
        }
    }
    let mut out = Vec::new();
    from(n, rows, &mut Vec::new(), [0; 3], &mut out, limit);
    out
}

/// Parts of n = 26, 27 and 28 on the wide path against a plain search: for two keys of each
/// size (a third and two thirds along their list), the weighted pairs of the top halves
/// whose first six rows are one placement and the bottom halves whose last six rows are one
/// placement, as the wide path counts them (its bands, words, mirror, sort and sieve, on
/// every tier), against the solutions found by backtracking with those rows fixed and the
/// others' columns restricted to the key's halves (and its middle queen); the placements
/// taken from the key's first solutions, two parts with weighted solutions per key. And a
/// whole key of n = 27 (its middle queen on column 0) in chunks of 65,536 words.
#[test]
fn parts_of_26_to_28_match_a_search() {
    let tiers = tiers_to_test("parts_of_26_to_28_match_a_search");
    let whole = Join::wide(27, 1 << 16);
    check_whole_key(&whole, &key_at(27, 1_234), &tiers);
    for n in [26u32, 27, 28] {
        let join = Join::wide(n, CHUNK);
        let m = (n / 2) as usize;
        let keys = keys::key_count(n);
        for place in [keys / 3, 2 * keys / 3] {
            let key = key_at(n, place);
            let mut rows = vec![key.top; m];
            rows.extend(key.middle.map(|q| 1 << q));
            rows.extend(vec![key.bottom; m]);
            let mut checked: Vec<(Vec<u32>, Vec<u32>)> = Vec::new();
            for solution in solutions_within(n, &rows, 2_000) {
                let top = solution[..6].to_vec();
                let bottom: Vec<u32> = solution.iter().rev().take(6).copied().collect();
                if checked.iter().any(|(t, b)| *t == top && *b == bottom) {
                    continue;
                }
                let taken = |rows: &[u32]| rows.iter().fold(0, |s, c| s | 1 << c);
                let mut fixed: Vec<u32> = top.iter().map(|&c| 1 << c).collect();
                fixed.extend(vec![key.top & !taken(&top); m - 6]);
                fixed.extend(key.middle.map(|q| 1 << q));
                fixed.extend(vec![key.bottom & !taken(&bottom); m - 6]);
                fixed.extend(bottom.iter().rev().map(|&c| 1 << c));
                let searched = weighted_search(n, &fixed);
                if searched == 0 {
                    continue;
                }
                for &tier in &tiers {
                    let got = join
                        .as_wide()
                        .wide_pairs_from(&key, &top, &bottom, tier)
                        .unwrap();
                    assert_eq!(got, searched, "{key:?} {top:?} {bottom:?} {}", tier.name());
                }
                checked.push((top, bottom));
                if checked.len() == 2 {
                    break;
                }
            }
            assert_eq!(
                checked.len(),
                2,
                "n = {n}, {key:?}: two parts with solutions"
            );
        }
    }
}
