from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PackedLayout(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PACKED_LAYOUT_RECORDS: _ClassVar[PackedLayout]
    PACKED_LAYOUT_FRONT_CODED: _ClassVar[PackedLayout]
PACKED_LAYOUT_RECORDS: PackedLayout
PACKED_LAYOUT_FRONT_CODED: PackedLayout

class Square(_message.Message):
    __slots__ = ("row", "column")
    ROW_FIELD_NUMBER: _ClassVar[int]
    COLUMN_FIELD_NUMBER: _ClassVar[int]
    row: int
    column: int
    def __init__(self, row: _Optional[int] = ..., column: _Optional[int] = ...) -> None: ...

class Shard(_message.Message):
    __slots__ = ("index", "count")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    index: int
    count: int
    def __init__(self, index: _Optional[int] = ..., count: _Optional[int] = ...) -> None: ...

class EnumerateRequest(_message.Message):
    __slots__ = ("n", "fundamental", "fixed", "shard", "start_after", "limit", "batch_size", "compact", "packed", "layout")
    N_FIELD_NUMBER: _ClassVar[int]
    FUNDAMENTAL_FIELD_NUMBER: _ClassVar[int]
    FIXED_FIELD_NUMBER: _ClassVar[int]
    SHARD_FIELD_NUMBER: _ClassVar[int]
    START_AFTER_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    COMPACT_FIELD_NUMBER: _ClassVar[int]
    PACKED_FIELD_NUMBER: _ClassVar[int]
    LAYOUT_FIELD_NUMBER: _ClassVar[int]
    n: int
    fundamental: bool
    fixed: _containers.RepeatedCompositeFieldContainer[Square]
    shard: Shard
    start_after: _containers.RepeatedScalarFieldContainer[int]
    limit: int
    batch_size: int
    compact: bool
    packed: bool
    layout: PackedLayout
    def __init__(self, n: _Optional[int] = ..., fundamental: _Optional[bool] = ..., fixed: _Optional[_Iterable[_Union[Square, _Mapping]]] = ..., shard: _Optional[_Union[Shard, _Mapping]] = ..., start_after: _Optional[_Iterable[int]] = ..., limit: _Optional[int] = ..., batch_size: _Optional[int] = ..., compact: _Optional[bool] = ..., packed: _Optional[bool] = ..., layout: _Optional[_Union[PackedLayout, str]] = ...) -> None: ...

class Board(_message.Message):
    __slots__ = ("columns", "rows")
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    columns: _containers.RepeatedScalarFieldContainer[int]
    rows: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, columns: _Optional[_Iterable[int]] = ..., rows: _Optional[_Iterable[str]] = ...) -> None: ...

class EnumerateResponse(_message.Message):
    __slots__ = ("boards", "packed", "front_coded")
    BOARDS_FIELD_NUMBER: _ClassVar[int]
    PACKED_FIELD_NUMBER: _ClassVar[int]
    FRONT_CODED_FIELD_NUMBER: _ClassVar[int]
    boards: _containers.RepeatedCompositeFieldContainer[Board]
    packed: bytes
    front_coded: FrontCoded
    def __init__(self, boards: _Optional[_Iterable[_Union[Board, _Mapping]]] = ..., packed: _Optional[bytes] = ..., front_coded: _Optional[_Union[FrontCoded, _Mapping]] = ...) -> None: ...

class FrontCoded(_message.Message):
    __slots__ = ("boards", "data")
    BOARDS_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    boards: int
    data: bytes
    def __init__(self, boards: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class CountRequest(_message.Message):
    __slots__ = ("n", "fixed", "shard")
    N_FIELD_NUMBER: _ClassVar[int]
    FIXED_FIELD_NUMBER: _ClassVar[int]
    SHARD_FIELD_NUMBER: _ClassVar[int]
    n: int
    fixed: _containers.RepeatedCompositeFieldContainer[Square]
    shard: Shard
    def __init__(self, n: _Optional[int] = ..., fixed: _Optional[_Iterable[_Union[Square, _Mapping]]] = ..., shard: _Optional[_Union[Shard, _Mapping]] = ...) -> None: ...

class CountResponse(_message.Message):
    __slots__ = ("solutions", "fundamental", "turn_fixed")
    SOLUTIONS_FIELD_NUMBER: _ClassVar[int]
    FUNDAMENTAL_FIELD_NUMBER: _ClassVar[int]
    TURN_FIXED_FIELD_NUMBER: _ClassVar[int]
    solutions: int
    fundamental: int
    turn_fixed: int
    def __init__(self, solutions: _Optional[int] = ..., fundamental: _Optional[int] = ..., turn_fixed: _Optional[int] = ...) -> None: ...

class CountUpdate(_message.Message):
    __slots__ = ("solutions", "fundamental", "subproblems_done", "subproblems_total", "elapsed_seconds", "done", "turn_fixed")
    SOLUTIONS_FIELD_NUMBER: _ClassVar[int]
    FUNDAMENTAL_FIELD_NUMBER: _ClassVar[int]
    SUBPROBLEMS_DONE_FIELD_NUMBER: _ClassVar[int]
    SUBPROBLEMS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_SECONDS_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    TURN_FIXED_FIELD_NUMBER: _ClassVar[int]
    solutions: int
    fundamental: int
    subproblems_done: int
    subproblems_total: int
    elapsed_seconds: float
    done: bool
    turn_fixed: int
    def __init__(self, solutions: _Optional[int] = ..., fundamental: _Optional[int] = ..., subproblems_done: _Optional[int] = ..., subproblems_total: _Optional[int] = ..., elapsed_seconds: _Optional[float] = ..., done: _Optional[bool] = ..., turn_fixed: _Optional[int] = ...) -> None: ...
