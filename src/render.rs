//! How a board is written as text, in one place: a rendered row (`..Q.`), the classic board
//! (one such row per line) and the compact column list (`1,3,0,2`, the form `--start-after`
//! takes back). The server's encoder, the CLI and the tests all write boards through these.

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

#[cfg(test)]
mod tests {
    use super::*;

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
