//! Compiles `proto/queens.proto` without a system `protoc`: the pure-Rust `protox`
//! parses it into a descriptor set, `tonic-prost-build` generates the messages and the
//! service from that set, and the set itself is written to `OUT_DIR` for server reflection.
//!
//! A second, server-only generation (in `OUT_DIR/encoded/`) maps
//! `queens.v1.EnumerateResponse` to `crate::stream::EncodedBatch`, whose bytes the server
//! writes directly; every other type is the generated one from `crate::pb`, and clients keep
//! the plain generated `EnumerateResponse`.

use prost::Message;
use std::{env, fs, path::PathBuf};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/queens.proto";
    println!("cargo:rerun-if-changed={proto}");
    let fds = protox::compile([proto], ["proto"])?;
    let out = PathBuf::from(env::var("OUT_DIR")?);
    fs::write(out.join("queens_descriptor.bin"), fds.encode_to_vec())?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(fds.clone())?;
    let encoded = out.join("encoded");
    fs::create_dir_all(&encoded)?;
    tonic_prost_build::configure()
        .build_client(false)
        .build_server(true)
        .extern_path(".queens.v1", "crate::pb")
        .extern_path(
            ".queens.v1.EnumerateResponse",
            "crate::stream::EncodedBatch",
        )
        .out_dir(encoded)
        .compile_fds(fds)?;
    Ok(())
}
