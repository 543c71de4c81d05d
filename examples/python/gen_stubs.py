#!/usr/bin/env python3
"""Generates the Python gRPC stubs from proto/queens.proto.

Writes queens_pb2.py, queens_pb2.pyi and queens_pb2_grpc.py into OUT_DIR (default: this
folder), with the protoc that ships inside grpcio-tools, so no system protoc is needed.
"""

import pathlib
import sys

from grpc_tools import protoc

HERE = pathlib.Path(__file__).resolve().parent
PROTO = HERE.parent.parent / "proto" / "queens.proto"


def generate(out_dir: pathlib.Path = HERE) -> None:
    """Writes the stubs of PROTO into out_dir; raises if protoc fails."""
    out_dir.mkdir(parents=True, exist_ok=True)
    status = protoc.main(
        [
            "grpc_tools.protoc",
            f"--proto_path={PROTO.parent}",
            f"--python_out={out_dir}",
            f"--pyi_out={out_dir}",
            f"--grpc_python_out={out_dir}",
            str(PROTO),
        ]
    )
    if status != 0:
        raise RuntimeError(f"protoc failed on {PROTO} (exit {status})")


if __name__ == "__main__":
    generate(pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
