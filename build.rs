//! Compiles the askuser.v1 contract with a vendored protoc, so a fresh machine needs no install,
//! and packs the server's relocations where the toolchain can.

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
    pack_relative_relocations()?;
    Ok(())
}

/// The server is a position-independent executable with about 72,000 relative relocations: as
/// plain RELA entries they are 1.7 MB that the loader reads at every start, pages that stay in the
/// server's RSS. Packed as RELR they take 18 kB. That needs binutils 2.38 and glibc 2.36 (older
/// systems, Ubuntu 22.04 among them, refuse or ignore the flag), so it is used only when the linker
/// links a program with it here.
fn pack_relative_relocations() -> Result<(), Box<dyn std::error::Error>> {
    const FLAG: &str = "-Wl,-z,pack-relative-relocs";
    let env = |key: &str| std::env::var(key).unwrap_or_default();
    if env("CARGO_CFG_TARGET_OS") != "linux"
        || env("CARGO_CFG_TARGET_ENV") != "gnu"
        || env("TARGET") != env("HOST")
    {
        return Ok(());
    }
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    let source = out_dir.join("relr_probe.c");
    std::fs::write(&source, "int main(void) { return 0; }\n")?;
    let linker = std::env::var("RUSTC_LINKER").unwrap_or_else(|_| "cc".to_owned());
    let linked = std::process::Command::new(linker)
        .arg(&source)
        .arg("-o")
        .arg(out_dir.join("relr_probe"))
        .arg(FLAG)
        .output()
        .is_ok_and(|output| output.status.success() && output.stderr.is_empty());
    if linked {
        println!("cargo:rustc-link-arg-bin=askuser={FLAG}");
    }
    Ok(())
}
