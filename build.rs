//! Compiles `proto/queens.proto` without a system `protoc`: the pure-Rust `protox`
//! parses it into a descriptor set, `tonic-prost-build` generates the messages and the
//! service from that set, and the set itself is written to `OUT_DIR` for server reflection.

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
        .compile_fds(fds)?;
    Ok(())
}
