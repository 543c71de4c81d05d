//! Prometheus itself, from Debian's `prometheus` package (installed by the test as root):
//! `promtool check metrics` passes on a scrape of `--metrics-addr` after known calls, and a
//! real Prometheus server, started here with its config and data under `target/`, scrapes the
//! service every second and answers `grpc_server_handled_total` through its HTTP API, and
//! every expression of `deploy/grafana-dashboard.json` against it. What the scrape holds is
//! checked by the everyday suite (`metrics.rs`).

use crate::common::{count_request, free_port, http_get};
use crate::metrics::{dashboard_exprs, metered_server, scrape_after_a_count_and_a_stream};
use crate::tools;
use std::time::{Duration, Instant};

/// The exposition after a Count and an Enumerate is valid for Prometheus's own checker.
#[tokio::test]
#[ignore = "a system test: needs root; `cargo test --test suite system:: -- --ignored`"]
async fn promtool_accepts_the_exposition() {
    tools::apt_packages(&["prometheus"]);
    let text = scrape_after_a_count_and_a_stream().await;
    let scraped = tools::tools_dir().join("scrape.prom");
    std::fs::write(&scraped, &text).expect("write the scrape");
    let checked = tools::run_bounded(
        std::process::Command::new("sh")
            .arg("-c")
            .arg("promtool check metrics < \"$0\"")
            .arg(&scraped),
        Duration::from_secs(60),
    );
    eprintln!("promtool check metrics:{}", checked.output());
    assert!(
        checked.success(),
        "promtool check metrics:\n{}",
        checked.output()
    );
}

/// A real Prometheus server scrapes the service every second; its HTTP API then answers
/// `grpc_server_handled_total` with the calls made.
#[tokio::test]
#[ignore = "a system test: needs root; `cargo test --test suite system:: -- --ignored`"]
async fn prometheus_scrapes_the_service() {
    tools::apt_packages(&["prometheus"]);
    let (port, server, mut client) = metered_server().await;
    for _ in 0..3 {
        client.count(count_request(8)).await.expect("count");
    }
    client.count(count_request(0)).await.unwrap_err();

    let dir = tools::target_dir().join("prometheus-test");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create target/prometheus-test");
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: queens\n    static_configs:\n      \
             - targets: ['127.0.0.1:{port}']\n"
        ),
    )
    .expect("write prometheus.yml");
    let web = free_port();
    let prometheus = Stopped(
        std::process::Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{web}"))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(dir.join("prometheus.log")).expect("log file"))
            .spawn()
            .expect("start prometheus"),
    );

    // `sum by (grpc_code)` of the Count calls, as Prometheus has scraped them.
    let query = "/api/v1/query?query=sum%20by%20(grpc_code)%20(grpc_server_handled_total%7Bgrpc_method%3D%22Count%22%7D)";
    let deadline = Instant::now() + Duration::from_secs(60);
    let answer = loop {
        let answer = http_get(web, query)
            .and_then(|body| serde_json::from_str::<serde_json::Value>(&body).ok());
        if let Some(answer) = &answer
            && answer["data"]["result"]
                .as_array()
                .is_some_and(|r| r.len() == 2)
        {
            break answer.clone();
        }
        assert!(
            Instant::now() < deadline,
            "Prometheus has not scraped the calls within 60 s: {answer:?}\n{}",
            std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    eprintln!("Prometheus answered: {answer}");
    let mut codes: Vec<(String, String)> = answer["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["metric"]["grpc_code"].as_str().unwrap_or("?").to_string(),
                r["value"][1].as_str().unwrap_or("?").to_string(),
            )
        })
        .collect();
    codes.sort();
    assert_eq!(
        codes,
        [
            ("InvalidArgument".to_string(), "1".to_string()),
            ("OK".to_string(), "3".to_string())
        ]
    );

    // Every panel of the dashboard is valid PromQL that this Prometheus answers, and the
    // calls panel shows the calls.
    let mut answered = 0;
    for expr in dashboard_exprs() {
        let expr = expr
            .replace("$__rate_interval", "10s")
            .replace("$job", ".*")
            .replace("$instance", ".*");
        let path = format!("/api/v1/query?query={}", url_encode(&expr));
        // rate() needs two scrapes in its window: the calls panel may take a second or two.
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let answer = http_get(web, &path)
                .and_then(|body| serde_json::from_str::<serde_json::Value>(&body).ok())
                .unwrap_or_else(|| panic!("Prometheus refused the dashboard's {expr}"));
            assert_eq!(answer["status"], "success", "{expr}: {answer}");
            let shown = !answer["data"]["result"].as_array().unwrap().is_empty();
            if shown || !expr.contains("grpc_server_handled_total") {
                break;
            }
            assert!(Instant::now() < deadline, "{expr}: {answer}");
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        answered += 1;
    }
    eprintln!("Prometheus answered all {answered} expressions of the dashboard");
    drop(prometheus);
    drop(server);
}

/// `text` percent-encoded for a URL's query.
fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A child process killed and reaped when dropped (also when the test fails).
struct Stopped(std::process::Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
