"""Client of the queens N-Queens service (gRPC, package queens.v1).

    from queens_client import Client

    with Client("127.0.0.1:50051", token=None) as queens:
        queens.count(8)                       # CountResult(solutions=92, fundamental=12, ...)
        for update in queens.count_progress(16):
            print(update.subproblems_done, update.subproblems_total)
        for boards in queens.enumerate(10):   # numpy uint8 arrays of shape (boards, 10)
            ...
        table = queens.read_table(12)         # pyarrow Table over Arrow Flight ([arrow] extra)

Every failed call raises QueensError (its `code` a grpc.StatusCode). The generated message
stubs are `queens_client.pb.queens_pb2`; `Client.stub` (a Stub) holds the raw calls, for
what this API does not wrap.
"""

from ._client import Client, CountResult, Progress, Stub, boards_of
from ._errors import QueensError
from ._types import Boards, Shard, Square

__all__ = [
    "Boards",
    "Client",
    "CountResult",
    "Progress",
    "QueensError",
    "Shard",
    "Square",
    "Stub",
    "boards_of",
]
