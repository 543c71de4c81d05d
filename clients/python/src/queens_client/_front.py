"""The front-coded layout of packed boards (FrontCoded in proto/queens.proto) read back into
the (boards, n) uint8 array the records would have given, vectorised with numpy: for each
column, a running count of the boards that send it picks each board's value (its own, or
the last one sent before it). Not here: asking for the layout (_client.py)."""

from __future__ import annotations

import numpy as np

#: Largest n whose units are 4 bits (two a byte); larger boards use a byte a unit.
NIBBLE_MAX_N = 16


def decode(n: int, boards: int, data: bytes) -> np.ndarray:
    """The `boards` boards of size n (1 to 32) that front-coded `data` holds, as a writable
    (boards, n) uint8 array; ValueError when the data is not what its lengths say."""
    if not 1 <= n <= 32:
        raise ValueError(f"front-coded boards of n = {n}")
    raw = np.frombuffer(data, dtype=np.uint8)
    if n <= NIBBLE_MAX_N:
        units = np.empty(2 * raw.size, dtype=np.uint8)
        np.right_shift(raw, 4, out=units[0::2])
        np.bitwise_and(raw, 15, out=units[1::2])
    else:
        units = raw
    out = np.empty((boards, n), dtype=np.uint8)
    if boards == 0:
        if raw.size:
            raise ValueError(f"front-coded data of {raw.size} bytes holds no boards")
        return out
    if boards > units.size:
        raise ValueError(f"front-coded data of {raw.size} bytes cannot hold {boards} boards")
    prefix = units[:boards]
    if prefix[0] != 0 or int(prefix.max()) > n - 1:
        raise ValueError(f"front-coded data of n = {n} has a prefix length out of range")
    # Column c is sent by the boards whose shared prefix is at most c.
    sending = np.cumsum(np.bincount(prefix, minlength=n))[: n - 1]
    total = boards + int(sending.sum())
    want = (total + 1) // 2 if n <= NIBBLE_MAX_N else total
    if raw.size != want:
        raise ValueError(
            f"front-coded data holds {raw.size} bytes where its {boards} boards need {want}"
        )
    if total > boards and int(units[boards:total].max()) >= n:
        raise ValueError(f"front-coded data of n = {n} has a column of n or more")
    free = 0
    for column in range(n):
        free ^= column
    last = np.full(boards, free, dtype=np.uint8)
    sends = np.empty(boards, dtype=bool)
    taken = np.empty(boards, dtype=np.int32)
    at = boards
    for c in range(n - 1):
        count = int(sending[c])
        if count == boards:
            column = units[at : at + count]
        else:
            # Board i's value is the taken[i]-th sent so far: its own, or the last before it.
            np.less_equal(prefix, c, out=sends)
            np.cumsum(sends, dtype=np.int32, out=taken)
            column = units[at - 1 : at + count].take(taken)
        at += count
        out[:, c] = column
        last ^= column
    if int(last.max()) >= n:
        raise ValueError(f"front-coded data of n = {n} is not of permutations")
    out[:, n - 1] = last
    return out
