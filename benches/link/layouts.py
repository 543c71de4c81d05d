"""The packed-layout study: bytes a board of packed Enumerate messages under the codecs gRPC
negotiates (zstd at levels 1 and 3, gzip at 6: tonic's fixed levels are zstd 3 and gzip 6),
each message compressed on its own as gRPC does, for three layouts of the same boards:

- plain: the packed records as the server sends them (n bytes a board, row after row);
- by rows: within a message, all boards' row-0 bytes, then all row-1 bytes, ... (a
  transposition, as Parquet lays out columns);
- prefix: each board as the length of the prefix it shares with the board before it (0 for a
  message's first board) followed by its other bytes; `prefix+split` puts the message's
  lengths first and the rest after them.

With the compression CPU of each (one thread, this process) and the decode cost of each
layout back into the (boards, n) uint8 array in numpy. Input: packed boards of one n (up to
16), as `count-ref -e N` or `queens enumerate N --packed` write them; they are sorted into
the server's lexicographic order first (count-ref writes each board beside its mirror).

    python benches/link/layouts.py --n 16 boards16.bin [--message-bytes 65536]

Needs numpy and zstandard (PyPI). Not here: the Node decode timing (`layouts.mjs`).
"""

from __future__ import annotations

import argparse
import time
import zlib

import numpy as np
import zstandard


def lexicographic(boards: np.ndarray) -> np.ndarray:
    """The boards (n <= 16) in lexicographic order of their column vectors."""
    n = boards.shape[1]
    keys = np.zeros(len(boards), dtype=np.uint64)
    for row in range(n):
        keys = (keys << np.uint64(4)) | boards[:, row].astype(np.uint64)
    keys.sort()
    shifts = np.uint64(4) * np.arange(n - 1, -1, -1, dtype=np.uint64)
    return ((keys[:, None] >> shifts[None, :]) & np.uint64(15)).astype(np.uint8)


def messages(boards: np.ndarray, per_message: int) -> list[np.ndarray]:
    """The boards cut into messages of `per_message` boards, as the server batches them."""
    return [boards[i : i + per_message] for i in range(0, len(boards), per_message)]


def plain(message: np.ndarray) -> bytes:
    return message.tobytes()


def by_rows(message: np.ndarray) -> bytes:
    return np.ascontiguousarray(message.T).tobytes()


def shared_prefix(message: np.ndarray) -> np.ndarray:
    """Length of the prefix each board shares with the one before (0 for the first)."""
    n = message.shape[1]
    lengths = np.zeros(len(message), dtype=np.uint8)
    if len(message) > 1:
        differs = message[1:] != message[:-1]
        # The first differing column; boards are distinct, so one always differs.
        lengths[1:] = np.where(differs.any(axis=1), differs.argmax(axis=1), n)
    return lengths


def prefix(message: np.ndarray) -> bytes:
    """Each board as its shared prefix's length and then its other bytes."""
    lengths = shared_prefix(message)
    n = message.shape[1]
    keep = np.arange(n)[None, :] >= lengths[:, None]
    out = np.concatenate([lengths[:, None], message], axis=1)
    mask = np.concatenate([np.ones((len(message), 1), dtype=bool), keep], axis=1)
    return out[mask].tobytes()


def prefix_split(message: np.ndarray) -> bytes:
    """The message's prefix lengths, then every board's other bytes."""
    lengths = shared_prefix(message)
    n = message.shape[1]
    keep = np.arange(n)[None, :] >= lengths[:, None]
    return lengths.tobytes() + message[keep].tobytes()


def decode_by_rows(data: bytes, n: int) -> np.ndarray:
    return np.frombuffer(data, dtype=np.uint8).reshape(n, -1).T.copy()


def decode_prefix_split(data: bytes, n: int, count: int) -> np.ndarray:
    """The (count, n) boards of a `prefix+split` message, vectorised: each cell comes from the
    last board at or before its own that wrote that column."""
    raw = np.frombuffer(data, dtype=np.uint8)
    lengths = raw[:count]
    rest = raw[count:]
    written = np.arange(n)[None, :] >= lengths[:, None]  # (count, n): cells sent
    dense = np.zeros((count, n), dtype=np.uint8)
    dense[written] = rest
    # For each column, the index of the last row that wrote it (rows carry the rest down).
    rows = np.where(written, np.arange(count)[:, None], 0)
    np.maximum.accumulate(rows, axis=0, out=rows)
    return dense[rows, np.arange(n)[None, :]]


LAYOUTS = {
    "plain": plain,
    "by rows": by_rows,
    "prefix": prefix,
    "prefix+split": prefix_split,
}


def codecs() -> dict:
    zstd1 = zstandard.ZstdCompressor(level=1)
    zstd3 = zstandard.ZstdCompressor(level=3)
    return {
        "raw": lambda b: b,
        "zstd 1": zstd1.compress,
        "zstd 3": zstd3.compress,
        "gzip 6": lambda b: _gzip(b, 6),
        "gzip 1": lambda b: _gzip(b, 1),
    }


def _gzip(data: bytes, level: int) -> bytes:
    compressor = zlib.compressobj(level, zlib.DEFLATED, 31)
    return compressor.compress(data) + compressor.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", help="packed boards of one n")
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--message-bytes", type=int, default=65536)
    args = parser.parse_args()
    n = args.n
    boards = lexicographic(np.fromfile(args.file, dtype=np.uint8).reshape(-1, n))
    per_message = max(1, args.message_bytes // n)
    cut = messages(boards, per_message)
    print(f"n = {n}: {len(boards):,} boards, {len(cut):,} messages of {per_message} boards")
    print("| layout | codec | bytes a board | vs plain zstd 1 | encode CPU, ns a board |")
    print("| --- | --- | ---: | ---: | ---: |")
    encoded = {name: [layout(m) for m in cut] for name, layout in LAYOUTS.items()}
    reference = None
    for name, parts in encoded.items():
        for codec_name, codec in codecs().items():
            if codec_name == "raw" and name != "plain" and not name.startswith("prefix"):
                continue
            started = time.process_time()
            total = sum(len(codec(part)) for part in parts)
            cpu = time.process_time() - started
            per_board = total / len(boards)
            if name == "plain" and codec_name == "zstd 1":
                reference = per_board
            ratio = f"{per_board / reference:.3f}" if reference else ""
            print(
                f"| {name} | {codec_name} | {per_board:.3f} | {ratio} | "
                f"{cpu / len(boards) * 1e9:.1f} |"
            )
    # Decode back into the (boards, n) array, layouts' own work only (after the codec).
    print("\n| layout | numpy decode, ns a board | equal |")
    print("| --- | ---: | --- |")
    for name, decode in [
        ("plain", lambda d, c: np.frombuffer(d, dtype=np.uint8).reshape(-1, n)),
        ("by rows", lambda d, c: decode_by_rows(d, n)),
        ("prefix+split", lambda d, c: decode_prefix_split(d, n, c)),
    ]:
        parts = encoded[name]
        started = time.process_time()
        decoded = [decode(part, len(m)) for part, m in zip(parts, cut)]
        cpu = time.process_time() - started
        equal = all(np.array_equal(d, m) for d, m in zip(decoded, cut))
        print(f"| {name} | {cpu / len(boards) * 1e9:.1f} | {equal} |")


if __name__ == "__main__":
    main()
