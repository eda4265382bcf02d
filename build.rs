//! Compiles the askuser.v1 contract with a vendored protoc, so a fresh machine needs no install.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    let well_known = protoc_bin_vendored::include_path()?;
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);

    let mut config = tonic_prost_build::Config::new();
    config.protoc_executable(protoc);
    // `prost::Name` on every message: the terminal client's `--json` finds each message's
    // descriptor by its full name.
    config.enable_type_names();

    tonic_prost_build::configure()
        .codec_path("crate::proto::ProtoCodec")
        .file_descriptor_set_path(out_dir.join("askuser_descriptor.bin"))
        .compile_with_config(
            config,
            &[
                "ask_user.proto",
                "agent.proto",
                "tool.proto",
                "admin.proto",
                "errors.proto",
                "form.proto",
                "human.proto",
            ]
            .map(|file| PathBuf::from("proto/askuser/v1").join(file)),
            &[PathBuf::from("proto"), well_known],
        )?;
    println!("cargo:rerun-if-changed=proto");
    Ok(())
}
