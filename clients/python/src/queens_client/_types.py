"""The package's plain types: boards as numpy arrays, a queen's square, a shard. They stand
below both the gRPC client (_client.py) and the Flight reader (_flight.py), which import
them and not each other's."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

#: Boards as a (boards, n) array: row b is board b's column vector (item r the column of
#: row r's queen).
Boards = npt.NDArray[np.uint8]
#: A queen: (row, column), both from 0.
Square = tuple[int, int]
#: Part `index` of `count` disjoint parts of one search: (index, count).
Shard = tuple[int, int]
