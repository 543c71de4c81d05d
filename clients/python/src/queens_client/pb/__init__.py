"""The gRPC stubs of queens.v1, generated from proto/queens.proto by gen_stubs.py:
`queens_pb2` (the messages) and `queens_pb2_grpc` (`QueensStub`)."""
