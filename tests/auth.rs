//! Authentication, against the `queens` binary over real sockets: bearer tokens from `--auth-tokens
//! FILE` (calls without a known token are UNAUTHENTICATED, health checks need none, each token is
//! its own client for the fair share of search slots, and the CLI sends one from `--token` or
//! `QUEENS_TOKEN`), and mutual TLS with `--tls-client-ca` (certificates made at run time with
//! rcgen: a client needs a certificate signed by that CA, from tonic and from the CLI's
//! `--tls-client-cert/--tls-client-key`).

use crate::common;

use common::{ServerProcess, count_request};
use queens::pb::queens_client::QueensClient;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic::{Code, Request, Status};

/// Alice's token (the tokens file's first line).
const ALICE: &str = "alice-7f3a9c1e5b2d4068";
/// Bob's token.
const BOB: &str = "bob-19e0c4a7d25f83b6e1";

/// A directory of its own for one test; removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> TempDir {
        let dir =
            crate::tools::scratch_dir().join(format!("queens-auth-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }

    /// Writes `contents` to `name` in it; returns the path as a string.
    fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, contents).expect("write");
        path.to_str().expect("a UTF-8 path").to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The tokens file: alice and bob, with a comment and a blank line.
fn tokens_file(dir: &TempDir) -> String {
    dir.write(
        "tokens",
        format!("# clients of this server\nalice {ALICE}\n\nbob {BOB}\n"),
    )
}

/// A plaintext client of `url`.
async fn client(url: &str) -> QueensClient<Channel> {
    let channel = Endpoint::from_shared(url.to_string())
        .expect("url")
        .connect_timeout(Duration::from_secs(5))
        .connect()
        .await
        .expect("connect");
    QueensClient::new(channel)
}

/// `message` as a request carrying `authorization` metadata with this value.
fn authorized<T>(message: T, authorization: &str) -> Request<T> {
    let mut request = Request::new(message);
    request
        .metadata_mut()
        .insert("authorization", authorization.parse().expect("ASCII"));
    request
}

/// Asserts an UNAUTHENTICATED refusal whose message speaks of the token.
fn assert_unauthenticated(status: &Status, what: &str) {
    assert_eq!(status.code(), Code::Unauthenticated, "{what}: {status:?}");
    assert!(
        status.message().to_lowercase().contains("token"),
        "{what}: the message says what is missing: {status:?}"
    );
}

/// With `--auth-tokens`, Count and Enumerate without an `authorization` header, with a token
/// the server does not know, with a known token lacking `Bearer `, and with a wrong one that
/// shares a known token's prefix are all UNAUTHENTICATED with a message about the token;
/// `authorization: Bearer <alice's token>` gets Count n = 8 = 92 (and bob's too); and
/// grpc.health.v1.Health/Check answers SERVING without any token.
#[tokio::test]
async fn calls_need_a_known_bearer_token_and_health_does_not() {
    use tonic_health::pb::HealthCheckRequest;
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::health_client::HealthClient;

    let dir = TempDir::new("tokens");
    let server = ServerProcess::start(&["--auth-tokens", &tokens_file(&dir)]);
    let mut client = client(&server.url()).await;

    let status = client.count(count_request(8)).await.unwrap_err();
    assert_unauthenticated(&status, "Count without a token");
    let status = client
        .enumerate(common::enumerate_request(6))
        .await
        .unwrap_err();
    assert_unauthenticated(&status, "Enumerate without a token");

    for (what, authorization) in [
        (
            "an unknown token",
            "Bearer nobody-0000000000000000".to_string(),
        ),
        ("a token without `Bearer `", ALICE.to_string()),
        (
            "a known token's prefix",
            format!("Bearer {}", &ALICE[..ALICE.len() - 1]),
        ),
        ("a known token plus a character", format!("Bearer {ALICE}x")),
        ("a Basic credential", "Basic YWxpY2U6c2VjcmV0".to_string()),
    ] {
        let status = client
            .count(authorized(count_request(8), &authorization))
            .await
            .unwrap_err();
        assert_unauthenticated(&status, what);
    }

    for token in [ALICE, BOB] {
        let response = client
            .count(authorized(count_request(8), &format!("Bearer {token}")))
            .await
            .unwrap_or_else(|s| panic!("a known token is served: {s:?}"))
            .into_inner();
        assert_eq!(response.solutions, 92);
    }

    let channel = Endpoint::from_shared(server.url())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut health = HealthClient::new(channel);
    for service in ["", "queens.v1.Queens"] {
        let response = health
            .check(HealthCheckRequest {
                service: service.into(),
            })
            .await
            .unwrap_or_else(|s| panic!("health needs no token ({service:?}): {s:?}"))
            .into_inner();
        assert_eq!(
            response.status,
            ServingStatus::Serving as i32,
            "{service:?}"
        );
    }
}

/// With tokens on, the fair share of search slots is the token's, not the address's: with
/// `--max-searches 2` (one per client), alice's second n = 32 Count is refused naming
/// `--max-searches-per-client 1`, while bob's Count n = 10 from the same 127.0.0.1 is
/// answered 724.
#[tokio::test]
async fn each_token_is_its_own_client_for_search_slots() {
    let dir = TempDir::new("shares");
    let server =
        ServerProcess::start(&["--max-searches", "2", "--auth-tokens", &tokens_file(&dir)]);
    let alice = client(&server.url()).await;
    let calls: Vec<_> = (0..2)
        .map(|_| {
            let mut alice = alice.clone();
            tokio::spawn(async move {
                match alice
                    .count(authorized(count_request(32), &format!("Bearer {ALICE}")))
                    .await
                {
                    Ok(response) => panic!("n = 32 counted: {:?}", response.into_inner()),
                    Err(status) => status,
                }
            })
        })
        .collect();
    // One of alice's two is refused at once.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !calls.iter().any(|c| c.is_finished()) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let mut bob = client(&server.url()).await;
    let answer = tokio::time::timeout(
        Duration::from_secs(30),
        bob.count(authorized(count_request(10), &format!("Bearer {BOB}"))),
    )
    .await
    .expect("bob's Count n = 10 answered within 30 s");
    match answer {
        Ok(response) => assert_eq!(response.into_inner().solutions, 724),
        Err(status) => panic!("bob was kept out by alice's searches: {status:?}"),
    }

    let (ended, running): (Vec<_>, Vec<_>) = calls.into_iter().partition(|c| c.is_finished());
    assert_eq!(ended.len(), 1, "alice's second search was not refused");
    for call in ended {
        let status = call.await.expect("the call's task");
        assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
        assert!(
            status.message().contains("--max-searches-per-client 1"),
            "the refusal names the per-client limit: {status:?}"
        );
    }
    for call in running {
        call.abort();
    }
}

/// Runs the built `queens` CLI with `args` and, if given, `QUEENS_TOKEN` (otherwise that
/// variable is removed); returns (exit code, stdout, stderr).
fn cli(args: &[&str], env_token: Option<&str>) -> (i32, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_queens"));
    command
        .args(args)
        .stdin(Stdio::null())
        .env_remove("QUEENS_TOKEN");
    if let Some(token) = env_token {
        command.env("QUEENS_TOKEN", token);
    }
    let out = command.output().expect("run queens");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The CLI's `count 8` is answered with `--token` and with `QUEENS_TOKEN`; without a token,
/// or with a wrong one, it exits non-zero saying the call was unauthenticated.
#[test]
fn the_cli_sends_its_token() {
    let dir = TempDir::new("cli");
    let server = ServerProcess::start(&["--auth-tokens", &tokens_file(&dir)]);
    let url = server.url();
    let expected = "solutions: 92\nfundamental: 12\n";

    let (code, out, err) = cli(&["count", "8", "--addr", &url, "--token", ALICE], None);
    assert_eq!((code, out.as_str()), (0, expected), "--token: {err}");
    let (code, out, err) = cli(&["count", "8", "--addr", &url], Some(BOB));
    assert_eq!((code, out.as_str()), (0, expected), "QUEENS_TOKEN: {err}");

    let (code, out, err) = cli(&["count", "8", "--addr", &url], None);
    assert_ne!(code, 0, "served without a token: {out}");
    let lower = err.to_lowercase();
    assert!(
        lower.contains("unauthenticated") || lower.contains("token"),
        "the error says why: {err}"
    );
    let (code, out, err) = cli(
        &[
            "count",
            "8",
            "--addr",
            &url,
            "--token",
            "nobody-0000000000000000",
        ],
        None,
    );
    assert_ne!(code, 0, "served with a wrong token: {out}");
    assert!(err.to_lowercase().contains("unauthenticated"), "{err}");
}

/// PEM files of a test PKI: a CA, a server certificate (localhost, 127.0.0.1) and a client
/// certificate signed by it, and a client certificate signed by another CA.
struct Pki {
    ca: String,
    server_cert: String,
    server_key: String,
    client_cert: String,
    client_key: String,
    stranger_cert: String,
    stranger_key: String,
}

/// A self-signed CA named `name`: its certificate (PEM) and an issuer for signing.
fn new_ca(name: &str) -> (String, Issuer<'static, KeyPair>) {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let key = KeyPair::generate().expect("key");
    let cert = params.self_signed(&key).expect("CA certificate");
    (cert.pem(), Issuer::new(params, key))
}

/// A leaf certificate for `names`, for `usage`, signed by `issuer`: (cert PEM, key PEM).
fn new_leaf(
    common_name: &str,
    names: &[&str],
    usage: ExtendedKeyUsagePurpose,
    issuer: &Issuer<'static, KeyPair>,
) -> (String, String) {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut params = CertificateParams::new(names).expect("params");
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![usage];
    let key = KeyPair::generate().expect("key");
    let cert = params.signed_by(&key, issuer).expect("leaf certificate");
    (cert.pem(), key.serialize_pem())
}

impl Pki {
    /// A server with this PKI's certificate that asks clients for one signed by its CA
    /// (`--tls-client-ca`).
    fn serve(&self) -> ServerProcess {
        ServerProcess::start(&[
            "--tls-cert",
            &self.server_cert,
            "--tls-key",
            &self.server_key,
            "--tls-client-ca",
            &self.ca,
        ])
    }

    /// Makes the PKI and writes its files into `dir`.
    fn new(dir: &TempDir) -> Pki {
        let (ca, issuer) = new_ca("queens test CA");
        let (server_cert, server_key) = new_leaf(
            "queens server",
            &["localhost", "127.0.0.1"],
            ExtendedKeyUsagePurpose::ServerAuth,
            &issuer,
        );
        let (client_cert, client_key) = new_leaf(
            "queens client",
            &[],
            ExtendedKeyUsagePurpose::ClientAuth,
            &issuer,
        );
        let (_, other) = new_ca("some other CA");
        let (stranger_cert, stranger_key) = new_leaf(
            "queens client",
            &[],
            ExtendedKeyUsagePurpose::ClientAuth,
            &other,
        );
        Pki {
            ca: dir.write("ca.pem", ca),
            server_cert: dir.write("server.pem", server_cert),
            server_key: dir.write("server.key", server_key),
            client_cert: dir.write("client.pem", client_cert),
            client_key: dir.write("client.key", client_key),
            stranger_cert: dir.write("stranger.pem", stranger_cert),
            stranger_key: dir.write("stranger.key", stranger_key),
        }
    }
}

/// Why a Count over TLS got no answer. Debug for the transport errors: it shows their
/// sources (the TLS alert).
#[derive(Debug, thiserror::Error)]
enum TlsCountError {
    /// The endpoint or its TLS settings were refused before connecting.
    #[error("endpoint: {0:?}")]
    Setup(tonic::transport::Error),
    /// The connection (TCP or the TLS handshake) failed.
    #[error("connect: {0:?}")]
    Connect(tonic::transport::Error),
    /// The call failed on an open connection.
    #[error("call: {0:?}")]
    Call(Status),
    /// No answer within 10 s.
    #[error("no answer within 10 s")]
    Timeout,
}

/// Counts n = 8 over TLS to `port` trusting `ca`, with the client certificate `identity`
/// (cert and key files) if given; an error if the connection or the call fails (within 10 s).
async fn count_8_over_tls(
    port: u16,
    ca: &str,
    identity: Option<(&str, &str)>,
) -> Result<u64, TlsCountError> {
    let read = |path: &str| std::fs::read(Path::new(path)).expect("read PEM");
    let mut tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(read(ca)))
        .domain_name("localhost");
    if let Some((cert, key)) = identity {
        tls = tls.identity(Identity::from_pem(read(cert), read(key)));
    }
    let attempt = async {
        let channel = Endpoint::from_shared(format!("https://127.0.0.1:{port}"))
            .map_err(TlsCountError::Setup)?
            .tls_config(tls)
            .map_err(TlsCountError::Setup)?
            .connect_timeout(Duration::from_secs(5))
            .connect()
            .await
            .map_err(TlsCountError::Connect)?;
        let response = QueensClient::new(channel)
            .count(count_request(8))
            .await
            .map_err(TlsCountError::Call)?;
        Ok(response.into_inner().solutions)
    };
    tokio::time::timeout(Duration::from_secs(10), attempt)
        .await
        .unwrap_or(Err(TlsCountError::Timeout))
}

/// With `--tls-client-ca`, a tonic client presenting a certificate signed by that CA gets
/// Count n = 8 = 92; one presenting no certificate, or one signed by another CA, gets no
/// answer (the handshake or the call fails).
#[tokio::test]
async fn mutual_tls_needs_a_client_certificate_from_the_ca() {
    let dir = TempDir::new("mtls");
    let pki = Pki::new(&dir);
    let server = pki.serve();
    let port = server.addr.port();

    let answer = count_8_over_tls(port, &pki.ca, Some((&pki.client_cert, &pki.client_key))).await;
    assert!(
        matches!(answer, Ok(92)),
        "a certificate from the CA is served: {answer:?}"
    );

    let answer = count_8_over_tls(port, &pki.ca, None).await;
    assert!(
        answer.is_err(),
        "served without a client certificate: {answer:?}"
    );

    let answer =
        count_8_over_tls(port, &pki.ca, Some((&pki.stranger_cert, &pki.stranger_key))).await;
    assert!(
        answer.is_err(),
        "served a certificate from another CA: {answer:?}"
    );
}

/// The CLI's `--tls-client-cert/--tls-client-key` (with `--ca-cert`) get `count 8` answered
/// by a server with `--tls-client-ca`; without them, or with another CA's certificate, the CLI
/// exits non-zero.
#[test]
fn the_cli_presents_its_client_certificate() {
    let dir = TempDir::new("mtls-cli");
    let pki = Pki::new(&dir);
    let server = pki.serve();
    let url = format!("https://localhost:{}", server.addr.port());
    let tls = ["--addr", url.as_str(), "--ca-cert", pki.ca.as_str()];

    // `count 8` over TLS, presenting this certificate and key (if any).
    let count_as = |cert: Option<(&str, &str)>| {
        let mut args = vec!["count", "8"];
        args.extend(tls);
        if let Some((cert, key)) = cert {
            args.extend(["--tls-client-cert", cert, "--tls-client-key", key]);
        }
        cli(&args, None)
    };

    let (code, out, err) = count_as(Some((&pki.client_cert, &pki.client_key)));
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "solutions: 92\nfundamental: 12\n");

    let (code, out, _) = count_as(None);
    assert_ne!(code, 0, "served without a client certificate: {out}");

    let (code, out, _) = count_as(Some((&pki.stranger_cert, &pki.stranger_key)));
    assert_ne!(code, 0, "served a certificate from another CA: {out}");
}
