//! How a board is written as text, in one place: a rendered row (`..Q.`), the classic board
//! (one such row per line) and the compact column list (`1,3,0,2`, the form `--start-after`
//! takes back), for one board or for packed records. The server's encoder, the CLI and the
//! tests all write boards through these.

/// Appends the row of an `n`-column board whose queen is in `column`: `Q` there, `.`
/// elsewhere.
pub fn row(n: usize, column: usize, out: &mut Vec<u8>) {
    out.extend((0..n).map(|c| if c == column { b'Q' } else { b'.' }));
}

/// Appends the classic form of the board `columns`: one rendered row per line, each ended by
/// a newline.
pub fn classic(columns: &[u32], out: &mut Vec<u8>) {
    for &column in columns {
        row(columns.len(), column as usize, out);
        out.push(b'\n');
    }
}

/// Appends the compact form of the board `columns`: its columns separated by commas, no
/// newline.
pub fn compact(columns: &[u32], out: &mut Vec<u8>) {
    for (i, &column) in columns.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let mut digits = [0u8; 10];
        let (mut value, mut at) = (column, digits.len());
        loop {
            at -= 1;
            digits[at] = b'0' + (value % 10) as u8;
            value /= 10;
            if value == 0 {
                break;
            }
        }
        out.extend_from_slice(&digits[at..]);
    }
}

/// Appends the compact form of every `n`-byte record in `records` (byte r = the column of
/// row r, each below 100), one board per line: the CLI's text from packed responses, with
/// no allocation per board.
pub fn compact_records(n: usize, records: &[u8], out: &mut Vec<u8>) {
    if n == 0 {
        return;
    }
    // Every column with its comma, then the line: at most 3 bytes a column.
    let mut line = [0u8; 3 * crate::solver::MAX_N as usize];
    out.reserve(records.len() / n * 3 * n);
    for record in records.chunks_exact(n) {
        let mut at = 0;
        for &column in record {
            if column >= 10 {
                line[at] = b'0' + column / 10;
                at += 1;
            }
            line[at] = b'0' + column % 10;
            line[at + 1] = b',';
            at += 2;
        }
        line[at - 1] = b'\n';
        out.extend_from_slice(&line[..at]);
    }
}

/// The rendered rows of an `n`-column board, one per column, each with its newline: the
/// table [`classic_records`] copies from.
pub fn row_table(n: usize) -> Vec<u8> {
    let mut table = Vec::with_capacity(n * (n + 1));
    for column in 0..n {
        row(n, column, &mut table);
        table.push(b'\n');
    }
    table
}

/// Appends the classic form of every `n`-byte record in `records`, boards separated by a
/// blank line (`first`: no blank line before the first), using `table` from [`row_table`].
pub fn classic_records(n: usize, table: &[u8], records: &[u8], first: bool, out: &mut Vec<u8>) {
    for (i, record) in records.chunks_exact(n.max(1)).enumerate() {
        if i > 0 || !first {
            out.push(b'\n');
        }
        for &column in record {
            let at = usize::from(column) * (n + 1);
            out.extend_from_slice(&table[at..at + n + 1]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_render_as_their_boards_do() {
        for n in [1usize, 4, 9, 10, 11, 16, 32] {
            let boards: Vec<Vec<u32>> = vec![
                (0..n as u32).collect(),
                (0..n as u32).rev().collect(),
                (0..n).map(|i| ((i * 7 + 3) % n) as u32).collect(),
            ];
            let records: Vec<u8> = boards.iter().flatten().map(|&c| c as u8).collect();
            let (mut expected, mut got) = (Vec::new(), Vec::new());
            for b in &boards {
                compact(b, &mut expected);
                expected.push(b'\n');
            }
            compact_records(n, &records, &mut got);
            assert_eq!(
                String::from_utf8(got).unwrap(),
                String::from_utf8(expected).unwrap()
            );
            let (mut expected, mut got) = (Vec::new(), Vec::new());
            for (i, b) in boards.iter().enumerate() {
                if i > 0 {
                    expected.push(b'\n');
                }
                classic(b, &mut expected);
            }
            classic_records(n, &row_table(n), &records, true, &mut got);
            assert_eq!(got, expected);
        }
    }

    #[test]
    fn the_classic_and_compact_forms() {
        let mut out = Vec::new();
        classic(&[1, 3, 0, 2], &mut out);
        assert_eq!(out, b".Q..\n...Q\nQ...\n..Q.\n");
        out.clear();
        compact(&[1, 3, 0, 2], &mut out);
        assert_eq!(out, b"1,3,0,2");
        out.clear();
        compact(&[31, 10, 9, 0, 4_000_000_000], &mut out);
        assert_eq!(out, b"31,10,9,0,4000000000");
    }
}
