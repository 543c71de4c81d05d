//! Shared by the integration tests: real servers on 127.0.0.1 port 0, either in this process
//! (`InProcess`) or as the built `queens` binary (`ServerProcess`), each ended when dropped.

#![allow(dead_code)] // each test crate uses part of this

pub mod delay;
pub mod h2raw;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use queens::config::Config;
use queens::pb::CountRequest;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// A server running inside the test's runtime; stops (with its grace) when dropped.
pub struct InProcess {
    /// Where it listens.
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
}

impl InProcess {
    /// Starts a server with the default settings.
    pub async fn start() -> InProcess {
        InProcess::with_config(Config::default()).await
    }

    /// Starts a server with these settings.
    pub async fn with_config(config: Config) -> InProcess {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            queens::server::run(listener, config, shutdown)
                .await
                .expect("server runs");
        });
        InProcess {
            addr,
            stop: Some(stop),
        }
    }

    /// Its URL for clients.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The server binary the tests start: this build's `queens`, or the one named by
/// `QUEENS_TEST_BIN` (to show a test failing against an earlier build).
pub fn queens_bin() -> std::ffi::OsString {
    std::env::var_os("QUEENS_TEST_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_queens").into())
}

/// The `queens` binary serving on a free port; killed (and reaped) when dropped.
pub struct ServerProcess {
    /// Where it listens.
    pub addr: SocketAddr,
    child: Child,
    /// Lines the server logged on stderr after the listening line.
    pub log: std::sync::mpsc::Receiver<String>,
}

impl ServerProcess {
    /// Starts `queens serve --addr 127.0.0.1:0` plus `args`, and waits for its listening line.
    pub fn start(args: &[&str]) -> ServerProcess {
        ServerProcess::start_with(Command::new(queens_bin()), args)
    }

    /// Like [`ServerProcess::start`], with these environment variables set for the server.
    pub fn start_with_env(env: &[(&str, &str)], args: &[&str]) -> ServerProcess {
        let mut command = Command::new(queens_bin());
        command.envs(env.iter().copied());
        ServerProcess::start_with(command, args)
    }

    /// Like [`ServerProcess::start`], on the CPUs `cpus` only (`taskset -c`, so the server
    /// sees that many cores).
    pub fn start_pinned(cpus: &str, args: &[&str]) -> ServerProcess {
        let mut taskset = Command::new("taskset");
        taskset.args(["-c", cpus]).arg(queens_bin());
        ServerProcess::start_with(taskset, args)
    }

    /// Like [`ServerProcess::start`], its address space limited to `bytes` (`ulimit -v`, set
    /// by a shell that then becomes the server).
    pub fn start_in_address_space(bytes: u64, args: &[&str]) -> ServerProcess {
        let mut shell = Command::new("bash");
        let script = format!("ulimit -v {} && exec \"$0\" \"$@\"", bytes / 1024);
        shell.args(["-c", &script]).arg(queens_bin());
        ServerProcess::start_with(shell, args)
    }

    /// Starts `command serve --addr 127.0.0.1:0` plus `args`, and waits for its listening line
    /// (`command` runs `queens_bin()` in the end, through a wrapper such as `taskset`).
    pub fn start_with(mut command: Command, args: &[&str]) -> ServerProcess {
        let mut child = command
            .args(["serve", "--addr", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start queens serve");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let first = lines
            .next()
            .expect("a listening line")
            .expect("readable stderr");
        let addr = first
            .split_whitespace()
            .find_map(|word| word.parse::<SocketAddr>().ok())
            .unwrap_or_else(|| panic!("no address in {first:?}"));
        let (tx, log) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        ServerProcess { addr, child, log }
    }

    /// Its URL for clients.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A client connected to it (panics if it cannot connect).
    pub async fn client(&self) -> queens::client::Client {
        queens::client::connect(&self.url()).await.expect("connect")
    }

    /// The next line of its JSON log (`--log-format json`) whose `message` is `message`;
    /// panics after 10 s or on a line that is not JSON.
    pub fn next_log(&self, message: &str) -> serde_json::Value {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let line = self
                .log
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no {message:?} line within 10 s"));
            let value: serde_json::Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            if value["message"] == message {
                return value;
            }
        }
    }

    /// The lines of its log (stderr) read so far and not yet taken, one per line: what a
    /// failing test shows of the server.
    pub fn log_so_far(&self) -> String {
        self.log.try_iter().map(|line| line + "\n").collect()
    }

    /// The process id (for signals and /proc).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM and waits up to `limit` for the exit status.
    pub fn terminate(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = std::time::Instant::now() + limit;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `queens serve --auth-tokens FILE` plus `args`, FILE holding the one token `token` (named
/// `name`; written under `<target>/tmp` and removed once the server has read it).
pub fn token_server(name: &str, token: &str, args: &[&str]) -> ServerProcess {
    let file = crate::tools::scratch_dir().join(format!("{name}-tokens-{}", std::process::id()));
    std::fs::write(&file, format!("{name} {token}\n")).expect("write the tokens file");
    let server = ServerProcess::start(&[&["--auth-tokens", file.to_str().unwrap()], args].concat());
    let _ = std::fs::remove_file(&file);
    server
}

/// Opens an Enumerate stream of the n×n board (`compact` or with rows).
pub async fn open_stream(
    client: &mut queens::client::Client,
    n: u32,
    compact: bool,
) -> tonic::Streaming<queens::pb::EnumerateResponse> {
    let request = queens::pb::EnumerateRequest {
        n,
        compact,
        ..Default::default()
    };
    client
        .enumerate(request)
        .await
        .expect("stream opens")
        .into_inner()
}

/// Reads `stream` to its error status; panics with `complete` if it ends without one.
pub async fn read_until_error(
    stream: &mut tonic::Streaming<queens::pb::EnumerateResponse>,
    complete: &str,
) -> tonic::Status {
    loop {
        match stream.message().await {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("{complete}"),
            Err(status) => return status,
        }
    }
}

/// A free loopback port (bound and let go: a server binds it next).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// The body of `GET path` from 127.0.0.1:`port` (HTTP/1.0, so never chunked), if the answer
/// is 200.
pub fn http_get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut tcp = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    tcp.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(tcp, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
    let mut response = String::new();
    tcp.read_to_string(&mut response).ok()?;
    if !response.lines().next().is_some_and(|l| l.contains(" 200 ")) {
        return None;
    }
    let (_, body) = response.split_once("\r\n\r\n")?;
    Some(body.to_string())
}

/// Starts `program` with `args`, stdin empty, stdout and stderr captured.
pub fn spawn_captured(program: &str, args: &[&str]) -> Child {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {program}: {e}"))
}

/// Runs the built `queens` binary with `args`; returns (exit code, stdout, stderr).
pub fn queens_cli(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_queens"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run queens");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

// OEIS A000170 and A002562, the expected counts; also included by the unit tests.
include!("../../crates/solver/src/oeis_table.rs");

/// Whether a column vector is an n-queens solution, by the naive oracle.
pub fn is_solution(columns: &[u32]) -> bool {
    columns.iter().all(|&c| c <= u32::from(u8::MAX))
        && queens::solver::naive::is_solution(&columns.iter().map(|&c| c as u8).collect::<Vec<_>>())
}

/// A Count request for the whole n×n board.
pub fn count_request(n: u32) -> CountRequest {
    CountRequest {
        n,
        ..Default::default()
    }
}

/// An Enumerate request for the whole n×n board, boards with rows.
pub fn enumerate_request(n: u32) -> queens::pb::EnumerateRequest {
    queens::pb::EnumerateRequest {
        n,
        ..Default::default()
    }
}

/// The solutions Count n answers on `client` (panics if the call fails).
pub async fn solutions(client: &mut queens::client::Client, n: u32) -> u64 {
    client
        .count(count_request(n))
        .await
        .unwrap_or_else(|status| panic!("Count n = {n}: {status:?}"))
        .into_inner()
        .solutions
}

/// The smallest board whose Count (and Enumerate) is a long search, one that takes a search
/// slot (`--max-searches`): up to n = 12 a search is small and takes none.
pub const LONG_N: u32 = 13;

/// Retries Count `n` (each answered within 5 s) until it is admitted; asserts the answer
/// (A000170), and panics with `why` and the last refusal if RESOURCE_EXHAUSTED lasts past
/// `until`. With `n` = [`LONG_N`] it waits for a search slot.
pub async fn count_by<T>(
    client: &mut queens::pb::queens_client::QueensClient<T>,
    n: u32,
    until: std::time::Instant,
    why: &str,
) where
    T: tonic::client::GrpcService<tonic::body::Body>,
    T::Error: Into<tonic::codegen::StdError>,
    T::ResponseBody: tonic::codegen::Body<Data = tonic::codegen::Bytes> + Send + 'static,
    <T::ResponseBody as tonic::codegen::Body>::Error: Into<tonic::codegen::StdError> + Send,
{
    loop {
        let attempt = tokio::time::timeout(Duration::from_secs(5), client.count(count_request(n)))
            .await
            .unwrap_or_else(|_| panic!("Count n = {n} answered within 5 s"));
        match attempt {
            Ok(response) => {
                assert_eq!(response.into_inner().solutions, A000170[n as usize - 1]);
                return;
            }
            Err(status)
                if status.code() == tonic::Code::ResourceExhausted
                    && std::time::Instant::now() < until =>
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(status) => panic!("{why}: {status:?}"),
        }
    }
}

/// The CPU time a process has used (user + system, all threads), in clock ticks.
pub fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("proc stat");
    // Fields after the command name (which may hold spaces): utime is field 14, stime 15.
    let rest = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// Resident memory of a process, in KiB (VmRSS of /proc/PID/status).
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .expect("VmRSS");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// How long after `since` the server closed `sock` (EOF or reset), reading and discarding
/// whatever it sends; `None` if it was still open at `limit`.
pub fn closed_within(
    mut sock: std::net::TcpStream,
    since: std::time::Instant,
    limit: Duration,
) -> Option<Duration> {
    use std::io::Read;
    sock.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut buf = [0u8; 4096];
    while since.elapsed() < limit {
        match sock.read(&mut buf) {
            Ok(0) => return Some(since.elapsed()),
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return Some(since.elapsed()),
        }
    }
    None
}

/// A `queens serve --tls-cert/--tls-key` with a fresh self-signed certificate for localhost,
/// written into a new folder `queens-{name}-{pid}` under `<target>/tmp`:
/// (that folder, the certificate's path, the server).
pub fn tls_server(name: &str) -> (std::path::PathBuf, std::path::PathBuf, ServerProcess) {
    tls_server_with(name, &[])
}

/// Like [`tls_server`], with `args` added to `serve`.
pub fn tls_server_with(
    name: &str,
    args: &[&str],
) -> (std::path::PathBuf, std::path::PathBuf, ServerProcess) {
    let dir = crate::tools::scratch_dir().join(format!("queens-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = self_signed(&dir);
    let tls = [
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ];
    let server = ServerProcess::start(&[&tls[..], args].concat());
    (dir, cert, server)
}

/// Writes a fresh self-signed certificate for localhost / 127.0.0.1 into `dir`; returns the
/// (cert, key) paths.
pub fn self_signed(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let certified = rcgen::generate_simple_self_signed(names).expect("certificate");
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();
    (cert, key)
}

/// Raises this process's soft limit of open files to its hard limit, for a test that holds
/// `needed` descriptors at once (an ordinary user's soft limit is often 1,024); panics with
/// the limit it needs when even the hard limit is lower. Tests of one binary run side by
/// side, so the limit is raised as far as it goes, not just to `needed`.
pub fn raise_open_file_limit(needed: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit through a valid pointer.
    let got = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    assert_eq!(got, 0, "getrlimit(RLIMIT_NOFILE) failed");
    assert!(
        limit.rlim_max >= needed,
        "this test holds {needed} open files at once, above this process's hard limit of {}: \
         raise it (ulimit -Hn {needed}, or the nofile limit in /etc/security/limits.conf)",
        limit.rlim_max
    );
    if limit.rlim_cur < limit.rlim_max {
        limit.rlim_cur = limit.rlim_max;
        // SAFETY: setrlimit reads one rlimit through a valid pointer.
        let set = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) };
        assert_eq!(set, 0, "setrlimit(RLIMIT_NOFILE) to the hard limit failed");
    }
}
