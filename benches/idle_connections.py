"""Idle HTTP/2 connections' memory: open N connections to a queens server on 127.0.0.1,
each sending the client preface and an empty SETTINGS frame (and the ACK of the server's),
wait 3 s, and print the server's RSS before and after (from /proc/PID/status).

    target/release/queens serve --addr 127.0.0.1:50778 &
    python3 benches/idle_connections.py "$(pgrep -f 'serve --addr 127.0.0.1:50778')" 50778 1000
"""
import socket, sys, time
pid, port, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
def rss():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1])
preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
ack = b"\x00\x00\x00\x04\x01\x00\x00\x00\x00"
before = rss()
conns = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(preface + ack)
    conns.append(s)
time.sleep(3)
for s in conns:
    s.setblocking(False)
    try: s.recv(65536)
    except BlockingIOError: pass
after = rss()
print(f"{n} idle connections: RSS {before} KiB -> {after} KiB, {(after-before)/n:.1f} KiB each")
for s in conns: s.close()
