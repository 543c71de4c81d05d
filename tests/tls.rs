//! TLS when asked: a certificate made at run time (rcgen), `serve --tls-cert/--tls-key`, the
//! CLI's `--ca-cert` streaming n = 6 over TLS, and plaintext clients refused.

use crate::common;

use common::{queens_cli, self_signed, tls_server};

#[test]
fn streams_over_tls_and_refuses_plaintext() {
    let (dir, cert, server) = tls_server("tls");
    let url = format!("https://localhost:{}", server.addr.port());
    // The CLI with `args`, over TLS to the server, trusting the certificate `ca`.
    let over_tls = |args: &[&str], ca: &std::path::Path| {
        let ca = ca.to_str().unwrap();
        queens_cli(&[args, &["--addr", &url, "--ca-cert", ca]].concat())
    };
    let (code, out, err) = over_tls(&["enumerate", "6", "--compact"], &cert);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "1,3,5,0,2,4\n2,5,1,4,0,3\n3,0,4,1,5,2\n4,2,0,5,3,1\n");
    // Plaintext HTTP/2 to the TLS port fails.
    let (code, _, err) = queens_cli(&["count", "6", "--addr", &server.url()]);
    assert_ne!(code, 0, "plaintext was served: {err}");
    // TLS without trusting the certificate fails too.
    let other = dir.join("other");
    std::fs::create_dir_all(&other).unwrap();
    let (stranger, _) = self_signed(&other);
    let (code, _, _) = over_tls(&["count", "6"], &stranger);
    assert_ne!(code, 0, "an untrusted certificate was accepted");
    let _ = std::fs::remove_dir_all(&dir);
}
