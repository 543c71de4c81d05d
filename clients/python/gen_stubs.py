#!/usr/bin/env python3
"""Regenerates the package's message stubs (src/queens_client/pb/) from proto/queens.proto.

Run at development time, after a change of the proto, with grpcio-tools installed (its pin is
in tests/requirements.txt), and commit the result: users install the stubs, they never
generate them. tests/test_stubs.py checks that the committed stubs are what this writes.

    python gen_stubs.py            # rewrite src/queens_client/pb/
    python gen_stubs.py OUT_DIR    # write them elsewhere (the test does)
"""

from __future__ import annotations

import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
PROTO = HERE.parent.parent / "proto" / "queens.proto"
PACKAGE_STUBS = HERE / "src" / "queens_client" / "pb"
# The files protoc writes for queens.proto, all of them committed (the calls are not
# generated: queens_client.Stub makes them from a table).
STUBS = ("queens_pb2.py", "queens_pb2.pyi")


def generate(out_dir: pathlib.Path = PACKAGE_STUBS) -> None:
    """Writes STUBS for PROTO into out_dir with the protoc inside grpcio-tools; raises if
    protoc fails."""
    from grpc_tools import protoc

    out_dir.mkdir(parents=True, exist_ok=True)
    status = protoc.main(
        [
            "grpc_tools.protoc",
            f"--proto_path={PROTO.parent}",
            f"--python_out={out_dir}",
            f"--pyi_out={out_dir}",
            str(PROTO),
        ]
    )
    if status != 0:
        raise RuntimeError(f"protoc failed on {PROTO} (exit {status})")


if __name__ == "__main__":
    generate(pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else PACKAGE_STUBS)
