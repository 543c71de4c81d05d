//! The Kubernetes manifests under `deploy/` (every YAML file there whose documents carry
//! `apiVersion` and `kind`; Slurm scripts, the Grafana dashboard and other files are left
//! alone), read with PyYAML from the virtual environment of `kubernetes-validate` (PyPI,
//! installed by the test; the validation itself is a system test, `system/kubernetes.rs`),
//! checked for the points a cluster operator looks for: every pod runs as non-root UID 10001
//! with a read-only root filesystem, no privilege escalation, no capabilities and the
//! RuntimeDefault seccomp profile, and has CPU and memory requests and limits; the Deployment has gRPC readiness and liveness probes on its `grpc`
//! port (readiness asking for the proto's own service name), a termination grace longer than
//! its preStop sleep plus the `--shutdown-grace` its args pass, a `metrics` port that
//! `--metrics-addr` serves and the Prometheus annotations name, a PodDisruptionBudget and a
//! Service selecting its pods; the count Job is Indexed with as many completions as shards.
//! And the args themselves run: the Deployment's start this build's server, whose health
//! answers SERVING to both probes and which serves `/metrics` and exits 0 on SIGTERM within
//! the grace; the Job's, with n = 12, run once per completion index, add up to 14,200.

use crate::common;
use crate::tools;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use common::ServerProcess;
use serde_json::Value;

/// The validator, pinned.
const VALIDATOR: &str = "kubernetes-validate==1.37.0";

/// The UID the image runs as (deploy/Dockerfile's `USER`).
const IMAGE_UID: u64 = 10001;

/// Longest a validator or PyYAML run may take.
pub(crate) const TOOL_LIMIT: Duration = Duration::from_secs(120);

/// Every YAML file under `deploy/`, relative to the repository, sorted.
fn yaml_files() -> Vec<PathBuf> {
    /// Adds the YAML files under `dir` (recursively) to `out`.
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("read a deploy folder") {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml")
            ) {
                out.push(path.strip_prefix(tools::repo()).unwrap().to_path_buf());
            }
        }
    }
    let mut files = Vec::new();
    walk(&tools::repo().join("deploy"), &mut files);
    files.sort();
    files
}

/// The validator's `bin` folder (installed if need be).
pub(crate) fn validator_bin() -> PathBuf {
    let exe = tools::pypi_tool(VALIDATOR, "kubernetes-validate");
    exe.parent().expect("a bin folder").to_path_buf()
}

/// The Kubernetes manifests under `deploy/`: each file's objects, parsed by PyYAML (which the
/// validator depends on) and handed over as JSON. Files of other YAML are left out.
pub(crate) fn manifests() -> &'static BTreeMap<PathBuf, Vec<Value>> {
    static MANIFESTS: OnceLock<BTreeMap<PathBuf, Vec<Value>>> = OnceLock::new();
    MANIFESTS.get_or_init(|| {
        let files = yaml_files();
        let run = tools::run_bounded(
            Command::new(validator_bin().join("python"))
                .args([
                    "-c",
                    "import json, sys, yaml\n\
                     json.dump({f: [d for d in yaml.safe_load_all(open(f)) if d is not None]\n\
                     for f in sys.argv[1:]}, sys.stdout)",
                ])
                .args(&files)
                .current_dir(tools::repo()),
            TOOL_LIMIT,
        );
        assert!(run.success(), "PyYAML failed:\n{}", run.output());
        let parsed: BTreeMap<PathBuf, Vec<Value>> =
            serde_json::from_str(&run.stdout).expect("PyYAML's JSON");
        let is_object = |d: &Value| d.get("apiVersion").is_some() && d.get("kind").is_some();
        let mut kept = BTreeMap::new();
        for (file, documents) in parsed {
            let objects = documents.iter().filter(|d| is_object(d)).count();
            if objects == 0 {
                eprintln!("not a Kubernetes manifest, left alone: {}", file.display());
                continue;
            }
            assert_eq!(
                objects,
                documents.len(),
                "{}: every document of a Kubernetes manifest needs apiVersion and kind",
                file.display()
            );
            kept.insert(file, documents);
        }
        for expected in ["deploy/deployment.yaml", "deploy/count-job.yaml"] {
            assert!(
                kept.contains_key(Path::new(expected)),
                "{expected} is missing or not a manifest; found {:?}",
                kept.keys().collect::<Vec<_>>()
            );
        }
        kept
    })
}

/// Every object of the manifests of this `kind`.
fn objects(kind: &str) -> Vec<&'static Value> {
    manifests()
        .values()
        .flatten()
        .filter(|d| d["kind"] == kind)
        .collect()
}

/// The one object of this `kind` (panics unless there is exactly one).
fn only(kind: &str) -> &'static Value {
    let found = objects(kind);
    assert_eq!(found.len(), 1, "expected one {kind}, found {}", found.len());
    found[0]
}

/// A container's args as strings.
fn args(container: &Value) -> Vec<String> {
    container["args"]
        .as_array()
        .unwrap_or_else(|| panic!("container {} has no args", container["name"]))
        .iter()
        .map(|a| {
            a.as_str()
                .unwrap_or_else(|| panic!("args must be strings: {a}"))
                .to_string()
        })
        .collect()
}

/// The value given to `--name` in `args` (as `--name value` or `--name=value`).
pub(crate) fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter().enumerate().find_map(|(i, a)| {
        if a == name {
            args.get(i + 1).map(String::as_str)
        } else {
            a.strip_prefix(name).and_then(|rest| rest.strip_prefix('='))
        }
    })
}

/// `args` without `--name` and its value.
fn without(args: &[String], name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut skip = false;
    for a in args {
        if skip {
            skip = false;
        } else if a == name {
            skip = true;
        } else if !a.starts_with(&format!("{name}=")) {
            out.push(a.clone());
        }
    }
    out
}

/// The one container of a pod template's spec.
fn only_container(pod: &Value) -> &Value {
    let containers = pod["containers"].as_array().expect("containers");
    assert_eq!(containers.len(), 1, "one container per pod");
    &containers[0]
}

/// The port number of the container port called `name`.
fn container_port(container: &Value, name: &str) -> u64 {
    container["ports"]
        .as_array()
        .and_then(|ports| ports.iter().find(|p| p["name"] == name))
        .and_then(|p| p["containerPort"].as_u64())
        .unwrap_or_else(|| panic!("container {} has no port named {name}", container["name"]))
}

/// A CPU quantity in millicores ("2", "500m", "1.5").
fn millicores(quantity: &Value) -> u64 {
    let text = match quantity {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match text.strip_suffix('m') {
        Some(milli) => milli.parse().expect("millicores"),
        None => (text.parse::<f64>().expect("cores") * 1000.0).round() as u64,
    }
}

/// A memory quantity in bytes ("64Mi", "1Gi", "500M", "1048576").
pub(crate) fn bytes(quantity: &Value) -> u64 {
    let text = match quantity {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    const UNITS: [(&str, u64); 8] = [
        ("Ki", 1 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("Ti", 1 << 40),
        ("k", 1_000),
        ("M", 1_000_000),
        ("G", 1_000_000_000),
        ("T", 1_000_000_000_000),
    ];
    for (suffix, factor) in UNITS {
        if let Some(number) = text.strip_suffix(suffix) {
            return number.parse::<u64>().expect("a whole number") * factor;
        }
    }
    text.parse().expect("bytes")
}

/// The proto's service as health reports it: `<package>.<service>`.
fn proto_service_name() -> String {
    let proto =
        std::fs::read_to_string(tools::repo().join("proto/queens.proto")).expect("the proto");
    let word_after = |keyword: &str| {
        proto
            .lines()
            .find_map(|l| l.trim().strip_prefix(keyword))
            .map(|rest| rest.trim().trim_end_matches(['{', ';']).trim().to_string())
            .unwrap_or_else(|| panic!("no `{keyword}` line in the proto"))
    };
    format!("{}.{}", word_after("package "), word_after("service "))
}

/// Every pod template (Deployment, Job) runs its containers as UID 10001, non-root, with a
/// read-only root filesystem, no privilege escalation, no capabilities and the RuntimeDefault
/// seccomp profile (a container's own setting, else the pod's), with CPU and memory requests
/// no larger than the limits, and an image pull policy set.
#[test]
fn pods_are_restricted_and_sized() {
    let templates: Vec<(&str, &Value)> = objects("Deployment")
        .into_iter()
        .chain(objects("Job"))
        .map(|o| {
            (
                o["metadata"]["name"].as_str().expect("a name"),
                &o["spec"]["template"]["spec"],
            )
        })
        .collect();
    assert!(templates.len() >= 2, "a Deployment and a Job");
    for (name, pod) in templates {
        for container in pod["containers"].as_array().expect("containers") {
            let what = format!("{name}/{}", container["name"]);
            let setting = |field: &str| {
                let own = &container["securityContext"][field];
                if own.is_null() {
                    pod["securityContext"][field].clone()
                } else {
                    own.clone()
                }
            };
            assert_eq!(setting("runAsNonRoot"), true, "{what}: runAsNonRoot");
            assert_eq!(setting("runAsUser"), IMAGE_UID, "{what}: runAsUser");
            assert_eq!(
                setting("seccompProfile")["type"],
                "RuntimeDefault",
                "{what}: seccompProfile"
            );
            let own = &container["securityContext"];
            assert_eq!(
                own["readOnlyRootFilesystem"], true,
                "{what}: read-only root"
            );
            assert_eq!(
                own["allowPrivilegeEscalation"], false,
                "{what}: allowPrivilegeEscalation"
            );
            assert_eq!(
                own["capabilities"]["drop"],
                serde_json::json!(["ALL"]),
                "{what}: capabilities"
            );
            assert!(
                container["imagePullPolicy"].is_string(),
                "{what}: imagePullPolicy"
            );
            let resources = &container["resources"];
            for kind in ["requests", "limits"] {
                for resource in ["cpu", "memory"] {
                    assert!(
                        !resources[kind][resource].is_null(),
                        "{what}: resources.{kind}.{resource}"
                    );
                }
            }
            assert!(
                millicores(&resources["requests"]["cpu"])
                    <= millicores(&resources["limits"]["cpu"]),
                "{what}: CPU request over the limit"
            );
            assert!(
                bytes(&resources["requests"]["memory"]) <= bytes(&resources["limits"]["memory"]),
                "{what}: memory request over the limit"
            );
        }
    }
}

/// The Deployment: gRPC probes on the `grpc` port (readiness for the proto's service, as the
/// server reports it), termination grace above preStop sleep + `--shutdown-grace` (passed
/// explicitly), `--search-threads` equal to the CPU limit, a `metrics` port matching
/// `--metrics-addr` and the Prometheus annotations; a PodDisruptionBudget and a Service that
/// select its pods.
#[test]
fn deployment_has_probes_grace_metrics_budget_and_service() {
    let deployment = only("Deployment");
    let template = &deployment["spec"]["template"];
    let pod = &template["spec"];
    let container = only_container(pod);
    let args = args(container);
    let grpc = container_port(container, "grpc");

    let readiness = &container["readinessProbe"]["grpc"];
    assert_eq!(readiness["port"], grpc, "readiness probes the grpc port");
    assert_eq!(
        readiness["service"].as_str(),
        Some(proto_service_name().as_str()),
        "readiness asks for the service"
    );
    assert_eq!(
        container["livenessProbe"]["grpc"]["port"], grpc,
        "liveness probes the grpc port"
    );

    let grace: u64 = flag(&args, "--shutdown-grace")
        .expect("--shutdown-grace passed explicitly")
        .parse()
        .expect("whole seconds");
    let pre_stop = container["lifecycle"]["preStop"]["sleep"]["seconds"]
        .as_u64()
        .unwrap_or(0);
    let termination = pod["terminationGracePeriodSeconds"]
        .as_u64()
        .expect("terminationGracePeriodSeconds");
    assert!(
        termination > pre_stop + grace,
        "terminationGracePeriodSeconds {termination} must exceed preStop {pre_stop} + \
         --shutdown-grace {grace}"
    );

    let threads: u64 = flag(&args, "--search-threads")
        .expect("--search-threads")
        .parse()
        .expect("a number");
    assert_eq!(
        threads * 1000,
        millicores(&container["resources"]["limits"]["cpu"]),
        "one search thread per core of the CPU limit"
    );
    assert!(flag(&args, "--max-searches").is_some(), "--max-searches");

    let metrics_addr = flag(&args, "--metrics-addr").expect("--metrics-addr");
    let metrics = container_port(container, "metrics");
    assert_eq!(metrics_addr, format!("0.0.0.0:{metrics}"));
    let annotations = &template["metadata"]["annotations"];
    assert_eq!(annotations["prometheus.io/scrape"], "true");
    assert_eq!(annotations["prometheus.io/port"], metrics.to_string());
    assert_eq!(annotations["prometheus.io/path"], "/metrics");

    let labels = template["metadata"]["labels"]
        .as_object()
        .expect("pod labels");
    let selects_pods = |selector: &Value| {
        let wanted = selector.as_object().expect("a label selector");
        !wanted.is_empty() && wanted.iter().all(|(k, v)| labels.get(k) == Some(v))
    };
    let budget = only("PodDisruptionBudget");
    assert!(selects_pods(&budget["spec"]["selector"]["matchLabels"]));
    let spec = &budget["spec"];
    assert!(
        spec["maxUnavailable"].is_number() || spec["minAvailable"].is_number(),
        "the budget bounds disruptions"
    );
    let service = only("Service");
    assert!(selects_pods(&service["spec"]["selector"]));
    assert!(
        service["spec"]["ports"]
            .as_array()
            .expect("ports")
            .iter()
            .any(|p| p["targetPort"] == "grpc" || p["targetPort"] == grpc),
        "the Service reaches the grpc port"
    );
}

/// The Deployment's one container.
pub(crate) fn deployment_container() -> &'static Value {
    only_container(&only("Deployment")["spec"]["template"]["spec"])
}

/// The Deployment's args after `serve`, its addresses moved to loopback: `--addr` left out
/// (the test's server takes a free port) and `--metrics-addr` on 127.0.0.1:`metrics_port`.
pub(crate) fn local_serve_args(metrics_port: u16) -> Vec<String> {
    let args = args(deployment_container());
    assert_eq!(args.first().map(String::as_str), Some("serve"));
    let mut local = without(&without(&args[1..], "--addr"), "--metrics-addr");
    local.extend(["--metrics-addr".into(), format!("127.0.0.1:{metrics_port}")]);
    local
}

/// The Deployment's args (addresses moved to loopback) start this build's server: health
/// answers SERVING for the readiness probe's service and for the liveness probe's (""),
/// `/metrics` answers, and SIGTERM ends it with status 0 before the kubelet would kill it
/// (the pod's termination grace less its preStop sleep; the server's own bound,
/// `--shutdown-grace`, starts once it has read the signal). A failure shows the server's log.
#[tokio::test]
async fn deployment_args_start_a_server_that_answers_the_probes() {
    use tonic_health::pb::HealthCheckRequest;
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::health_client::HealthClient;

    let container = deployment_container();
    let args = args(container);
    let metrics_port = common::free_port();
    let local = local_serve_args(metrics_port);
    let local: Vec<&str> = local.iter().map(String::as_str).collect();
    let server = ServerProcess::start(&local);

    let channel = tonic::transport::Endpoint::from_shared(server.url())
        .unwrap()
        .connect()
        .await
        .unwrap_or_else(|e| panic!("connect: {e}; log:\n{}", server.log_so_far()));
    let mut health = HealthClient::new(channel);
    let readiness = container["readinessProbe"]["grpc"]["service"]
        .as_str()
        .unwrap_or("");
    let liveness = container["livenessProbe"]["grpc"]["service"]
        .as_str()
        .unwrap_or("");
    for service in [readiness, liveness] {
        let status = health
            .check(HealthCheckRequest {
                service: service.into(),
            })
            .await
            .unwrap_or_else(|s| {
                panic!(
                    "health for {service:?}: {s:?}; log:\n{}",
                    server.log_so_far()
                )
            })
            .into_inner()
            .status;
        assert_eq!(status, ServingStatus::Serving as i32, "{service:?}");
    }

    // The exporter answers from a task of its own: on a loaded machine it may answer a
    // moment after the gRPC port does, so its port is asked a few times.
    let mut scrape = None;
    for _ in 0..50 {
        scrape = common::http_get(metrics_port, "/metrics");
        if scrape.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let scrape =
        scrape.unwrap_or_else(|| panic!("no 200 from /metrics; log:\n{}", server.log_so_far()));
    assert!(scrape.contains("grpc_server_started_total"), "{scrape}");

    drop(health); // its connection closes, as a probe's does
    let grace: u64 = flag(&args, "--shutdown-grace").unwrap().parse().unwrap();
    let pod = &only("Deployment")["spec"]["template"]["spec"];
    let kill_after = pod["terminationGracePeriodSeconds"].as_u64().unwrap()
        - container["lifecycle"]["preStop"]["sleep"]["seconds"]
            .as_u64()
            .unwrap();
    assert!(
        grace < kill_after,
        "--shutdown-grace {grace} s, SIGKILL after {kill_after} s"
    );
    // Waited for off the runtime, which must keep running to close the client's connection.
    let (server, status, took) = tokio::task::spawn_blocking(move || {
        let mut server = server;
        let start = std::time::Instant::now();
        let status = server.terminate(Duration::from_secs(kill_after));
        (server, status, start.elapsed())
    })
    .await
    .expect("the wait");
    let log = server.log_so_far();
    let status =
        status.unwrap_or_else(|| panic!("still running {took:?} after SIGTERM; log:\n{log}"));
    assert!(
        status.success(),
        "exit status {status:?} {took:?} after SIGTERM; log:\n{log}"
    );
}

/// The Job is Indexed with as many completions as `--shards`, counts `--local`, and its args
/// with n = 16, run once per completion index (`JOB_COMPLETION_INDEX`, as Kubernetes sets
/// it), print lines that `queens sum` adds up to 14,772,512 (1,846,955 classes) over all the
/// shards.
#[test]
fn job_args_count_every_shard_once() {
    let job = only("Job");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let container = only_container(&spec["template"]["spec"]);
    let args = args(container);
    assert_eq!(args.first().map(String::as_str), Some("count"));
    assert!(args.iter().any(|a| a == "--local"), "counts in the pod");
    assert!(args.iter().any(|a| a == "--json"), "prints lines for sum");
    let shards: u64 = flag(&args, "--shards")
        .expect("--shards")
        .parse()
        .expect("a number");
    assert_eq!(
        spec["completions"], shards,
        "completions must equal --shards"
    );

    let mut small = args.clone();
    let n = small
        .iter()
        .position(|a| a.parse::<u32>().is_ok())
        .expect("the board size in the args");
    // n = 16: the smallest board whose shards count on the join, as the Job's n = 20 does.
    small[n] = "16".into();
    let dir = tools::target_dir().join("deploy-manifests");
    std::fs::create_dir_all(&dir).expect("create target/deploy-manifests");
    let lines = dir.join("count-job.jsonl");
    let mut out = String::new();
    for index in 0..shards {
        let run = tools::run_bounded(
            Command::new(common::queens_bin())
                .args(&small)
                .env("JOB_COMPLETION_INDEX", index.to_string()),
            TOOL_LIMIT,
        );
        assert!(run.success(), "index {index}:\n{}", run.output());
        out += &run.stdout;
    }
    std::fs::write(&lines, &out).expect("write the lines");
    let run = tools::run_bounded(
        Command::new(common::queens_bin()).arg("sum").arg(&lines),
        TOOL_LIMIT,
    );
    assert!(run.success(), "queens sum:\n{}", run.output());
    assert!(
        run.stdout.contains(&format!("shards: {shards}\n")),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("solutions: 14772512\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("fundamental: 1846955\n"),
        "{}",
        run.stdout
    );
}
