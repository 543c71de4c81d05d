"""Boards on disk, as the download program writes them: text lines ("1,3,0,2", one board a
line) and NumPy array files (.npy, uint8, shape (boards, n)), both written from the (boards,
n) arrays the stream yields and both resumable: each can say which board it ends with and
how many it holds, after dropping what a crash cut short.

The stream, the retries and the command line are in queens_download.py."""

from __future__ import annotations

import os
import pathlib
from typing import BinaryIO

import numpy

# ---------------------------------------------------------------------------- text form


def _cells(end: bytes) -> numpy.ndarray:
    """For each column c < 32: the text of c (one or two digits) then `end`, padded with 0
    bytes to 4 and read as one uint32, so that a lookup gives a whole cell of text."""
    table = numpy.zeros((32, 4), dtype=numpy.uint8)
    for c in range(32):
        text = str(c).encode() + end
        table[c, : len(text)] = numpy.frombuffer(text, dtype=numpy.uint8)
    return table.view(numpy.uint32).reshape(32)


_COMMA = _cells(b",")
_NEWLINE = _cells(b"\n")


def text_lines(boards: numpy.ndarray) -> bytes:
    """The boards of a (boards, n) array as "c0,c1,...\\n" lines, built with array
    operations and no Python object per board: a table lookup gives each column's text as a
    4-byte cell, then one pass (bytes.translate) drops the padding. n = 16: about 4 M boards/s
    here, against about 0.5 M/s joining strings per board."""
    count, n = boards.shape
    if count == 0:
        return b""
    if n <= 10:  # one digit per column: fixed width, no padding
        cells = numpy.empty((count, n, 2), dtype=numpy.uint8)
        cells[:, :, 0] = boards + ord("0")
        cells[:, :, 1] = ord(",")
        cells[:, -1, 1] = ord("\n")
        return cells.tobytes()
    cells = _COMMA[boards]
    cells[:, -1] = _NEWLINE[boards[:, -1]]
    return cells.tobytes().translate(None, b"\0")


def read_resume_point(out: BinaryIO, n: int) -> tuple[list[int] | None, int]:
    """Inspects a text download opened "a+b": returns (its last complete board, how many
    boards it holds), after cutting off a partial last line that a crash may have left."""
    out.seek(0)
    boards, size = 0, 0
    while chunk := out.read(1 << 20):
        boards += chunk.count(b"\n")
        size += len(chunk)
    # Only lines ending in "\n" were written completely; drop whatever follows the last one.
    tail = b""
    position = size
    while position > 0:
        step = min(4096, position)
        out.seek(position - step)
        tail = out.read(step) + tail
        position -= step
        if tail.count(b"\n") >= 2 or (position == 0 and b"\n" in tail):
            break
    complete = tail[: tail.rfind(b"\n") + 1]
    if len(complete) < len(tail):
        out.truncate(size - (len(tail) - len(complete)))
    out.seek(0, os.SEEK_END)
    if not complete:
        return None, 0
    last = complete[:-1].rsplit(b"\n", 1)[-1]
    columns = [int(c) for c in last.split(b",")]
    if len(columns) != n:
        raise SystemExit(f"the file's boards have {len(columns)} columns, not n = {n}")
    return columns, boards


class TextWriter:
    """Writes boards as text lines to a binary file, flushed after every batch."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out

    def write(self, boards: numpy.ndarray) -> None:
        self.out.write(text_lines(boards))
        self.out.flush()


# ---------------------------------------------------------------------------- .npy form


class NpyWriter:
    """A growing NumPy array file (format 1.0) of uint8 boards, shape (rows, n), that can be
    resumed. The header is rewritten in place after every batch, so the file is a valid .npy
    of the boards written so far at every batch boundary; after a crash between a batch and
    its header the data after the header's count is ignored by numpy.load and kept by a
    resume, which counts the rows from the file's size."""

    HEADER = 128  # the size numpy.save gives a 2-D uint8 array's header

    def __init__(self, path: os.PathLike | str, n: int) -> None:
        self.n = n
        self.file = open(path, "r+b" if os.path.exists(path) else "w+b")  # noqa: SIM115
        try:
            self.offset, self.rows, self.last = self._resume_point()
        except BaseException:
            self.file.close()
            raise

    def _resume_point(self) -> tuple[int, int, list[int] | None]:
        f, n = self.file, self.n
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            self._write_header(self.HEADER, 0)
            f.seek(self.HEADER)
            return self.HEADER, 0, None
        f.seek(0)
        try:
            version = numpy.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = numpy.lib.format.read_array_header_1_0(f)
            else:
                shape, fortran, dtype = numpy.lib.format.read_array_header_2_0(f)
        except ValueError as error:
            raise SystemExit(
                f"{f.name} is not a NumPy array file to resume: {error}"
            ) from None
        offset = f.tell()
        if dtype != numpy.uint8 or fortran or len(shape) != 2 or shape[1] != n:
            raise SystemExit(
                f"{f.name} holds a {dtype} array of shape {shape}, not boards of n = {n} "
                "(uint8, shape (boards, n))"
            )
        rows = (size - offset) // n
        f.truncate(offset + rows * n)  # a board cut short by a crash
        self._write_header(offset, rows)
        last = None
        if rows:
            f.seek(offset + (rows - 1) * n)
            last = list(f.read(n))
        f.seek(0, os.SEEK_END)
        return offset, rows, last

    def _write_header(self, size: int, rows: int) -> None:
        """Writes a format 1.0 header of exactly `size` bytes for (rows, n) at offset 0."""
        text = (
            f"{{'descr': '|u1', 'fortran_order': False, 'shape': ({rows}, {self.n}), }}"
        )
        padding = size - 10 - len(text) - 1
        if padding < 0 or size - 10 > 0xFFFF:
            raise SystemExit(
                f"{self.file.name}: no room for the header of {rows} boards"
            )
        header = text + " " * padding + "\n"
        data = (
            b"\x93NUMPY\x01\x00" + (size - 10).to_bytes(2, "little") + header.encode()
        )
        os.pwrite(self.file.fileno(), data, 0)

    def write(self, boards: numpy.ndarray) -> None:
        self.write_packed(
            numpy.ascontiguousarray(boards, dtype=numpy.uint8).data, len(boards)
        )

    def write_packed(self, packed, rows: int) -> None:
        """Appends rows boards given as packed bytes (the wire form is the file's form)."""
        self.file.write(packed)
        self.file.flush()
        self.rows += rows
        self._write_header(self.offset, self.rows)

    def sync(self) -> None:
        os.fsync(self.file.fileno())

    def close(self) -> None:
        self.file.close()


def npy_rows(path: os.PathLike | str) -> int:
    """How many boards a finished .npy holds (from its header)."""
    with open(path, "rb") as f:
        version = numpy.lib.format.read_magic(f)
        read = (
            numpy.lib.format.read_array_header_1_0
            if version == (1, 0)
            else numpy.lib.format.read_array_header_2_0
        )
        return read(f)[0][0]


def count_lines(path: pathlib.Path) -> int:
    """How many boards a finished text file holds."""
    lines = 0
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            lines += chunk.count(b"\n")
    return lines
