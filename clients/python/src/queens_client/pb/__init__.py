"""The message stubs of queens.v1, generated from proto/queens.proto by gen_stubs.py:
`queens_pb2` (the messages; the calls are queens_client.Stub)."""
