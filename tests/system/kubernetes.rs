//! `kubernetes-validate --strict` (PyPI, installed by the test) passes every object of the
//! Kubernetes manifests under `deploy/` for Kubernetes 1.34 and 1.37, the newest it knows,
//! with no warning. What the manifests say is checked by the everyday suite
//! (`deploy_manifests.rs`), whose reader this uses.

use crate::deploy_manifests::{TOOL_LIMIT, manifests, validator_bin};
use crate::tools;
use std::path::PathBuf;
use std::process::Command;

/// The Kubernetes versions the manifests must validate for: a widely run one and the newest
/// the validator knows.
const KUBERNETES_VERSIONS: [&str; 2] = ["1.34", "1.37"];

/// Every object of the manifests passes `kubernetes-validate --strict` for each version:
/// one "passed" line per object and version, no warning (an unknown kind only warns).
#[test]
#[ignore = "a system test: needs root; `cargo test --test suite system:: -- --ignored`"]
fn manifests_pass_kubernetes_validate_strict() {
    let exe = validator_bin().join("kubernetes-validate");
    let files: Vec<&PathBuf> = manifests().keys().collect();
    let objects: usize = manifests().values().map(Vec::len).sum();
    for version in KUBERNETES_VERSIONS {
        let run = tools::run_bounded(
            Command::new(&exe)
                .args(["--strict", "--kubernetes-version", version])
                .args(&files)
                .current_dir(tools::repo()),
            TOOL_LIMIT,
        );
        eprintln!(
            "kubernetes-validate {version}:\n{}{}",
            run.stdout, run.stderr
        );
        assert!(
            run.success(),
            "kubernetes-validate {version}:\n{}",
            run.output()
        );
        let all = format!("{}{}", run.stdout, run.stderr);
        let passed = all
            .lines()
            .filter(|l| l.starts_with("INFO ") && l.contains(" passed for resource "))
            .count();
        assert_eq!(passed, objects, "one pass per object:\n{all}");
        assert!(
            !all.lines()
                .any(|l| l.starts_with("WARN") || l.starts_with("ERROR")),
            "warnings or errors:\n{all}"
        );
    }
}
