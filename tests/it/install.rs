//! What `cargo install` needs and builds: `rust-version` in Cargo.toml is the real minimum
//! (the highest `rust-version` among the locked dependencies; one toolchain is installed, so
//! this is checked from the data) and the README states the same; the installed binary is
//! stripped.

use std::process::Command;

use serde_json::Value;

/// `major.minor[.patch]` as numbers, patch 0 when absent.
fn parse(v: &str) -> (u64, u64, u64) {
    let mut parts = v
        .split('.')
        .map(|p| p.parse::<u64>().expect("numeric rust-version"));
    let major = parts.next().unwrap_or(0);
    let minor = parts.next().unwrap_or(0);
    let patch = parts.next().unwrap_or(0);
    (major, minor, patch)
}

#[test]
fn rust_version_is_what_the_locked_dependencies_need() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--locked", "--format-version", "1"])
        .current_dir(root)
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata JSON");
    let members: Vec<&str> = meta["workspace_members"]
        .as_array()
        .expect("workspace_members")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let packages = meta["packages"].as_array().expect("packages");
    let ours = packages
        .iter()
        .find(|p| p["name"] == "acp-proxy")
        .and_then(|p| p["rust_version"].as_str())
        .expect("acp-proxy declares rust-version");
    let (needed, by) = packages
        .iter()
        .filter(|p| !members.contains(&p["id"].as_str().unwrap_or("")))
        .filter_map(|p| {
            let v = p["rust_version"].as_str()?;
            Some((parse(v), format!("{} {}", p["name"], p["version"])))
        })
        .max()
        .expect("some dependency declares rust-version");
    assert_eq!(
        parse(ours),
        needed,
        "Cargo.toml says rust-version = {ours:?}; the locked dependencies need {needed:?} ({by})"
    );
    let readme = std::fs::read_to_string(format!("{root}/README.md")).expect("README.md");
    assert!(
        readme.contains(&format!("Rust {ours} or newer")),
        "README.md must say \"Rust {ours} or newer\""
    );
}

#[test]
fn the_installed_binary_is_stripped() {
    let root = env!("CARGO_MANIFEST_DIR");
    let text = std::fs::read_to_string(format!("{root}/Cargo.toml")).expect("Cargo.toml");
    let manifest: toml::Value = toml::from_str(&text).expect("Cargo.toml parses");
    let release = &manifest["profile"]["release"];
    // `true` is "symbols": no debug info and no symbol table.
    assert_eq!(
        release.get("strip"),
        Some(&toml::Value::Boolean(true)),
        "[profile.release] {release}"
    );
}
