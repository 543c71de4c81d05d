//! The system tests, compiled with the suite but marked ignored: what needs root, Debian's
//! packages or daemons, or a toolchain beyond stable Rust. Each installs what it needs when
//! run as root (Debian's packages through `tools::apt_packages`, PyPI tools under `target/`),
//! or fails with one line saying what to install; none is skipped. Run them with
//! `cargo test --test suite system:: -- --ignored` (the everyday `cargo test` lists them as
//! ignored and builds the same binary, so running them afterwards builds nothing).
//!
//! - `deploy_image`: the container image built from `deploy/Dockerfile` with Docker and run,
//!   and hadolint on the Dockerfile (`deploy_bases`: its Debian base images, made locally);
//! - `deploy_slurm`: the Slurm array script on a one-node cluster, with a requeued task and
//!   with the count cut into several arrays;
//! - `prometheus`: a real Prometheus scraping the server, and `promtool check metrics`;
//! - `contract`: `buf lint`, `buf format` and `buf breaking` on `proto/queens.proto`;
//! - `kubernetes`: `kubernetes-validate --strict` on the manifests under `deploy/`;
//! - `memory`: the server in a memory cgroup (v1 or v2) with the Deployment's limit and args,
//!   and again with 1536 MiB: big counts answered or refused as the memory model says, and
//!   never OOM-killed;
//! - `sanitizer`: the library's unit tests under AddressSanitizer (nightly Rust);
//! - `flight`: the Arrow Flight service read by pyarrow, polars and DuckDB (`examples/flight`:
//!   PyPI's wheels, about 100 MB, are why it is here);
//! - `parquet`: the Parquet files of `enumerate --out` read by pyarrow, polars and DuckDB
//!   (`examples/parquet`, in `flight`'s virtual environment);
//! - `soak`: `queens-load soak` for 2 minutes (it needs nothing beyond the suite; it is here
//!   for its time);
//! - `browser`: the page in headless Chromium (Debian's `chromium`, driven by playwright-core).

mod browser;
mod contract;
mod deploy_bases;
mod deploy_image;
mod deploy_slurm;
mod flight;
mod kubernetes;
mod memory;
mod parquet;
mod prometheus;
mod sanitizer;
mod soak;
