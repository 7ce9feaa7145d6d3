//! `acp-proxy check-config [PATH]`: validate the config and print the effective settings as
//! TOML, in the same form `proxy.toml` takes (so the output can be read back).

use std::path::Path;

use acp_proxy::config::{self, Config, ConfigSource};
use acp_proxy::store::{self, StoreLocation};

/// Global flags that change the effective settings.
pub struct Overrides {
    pub log_level: Option<String>,
    pub store: Option<StoreLocation>,
}

pub fn run(explicit: Option<&Path>, overrides: Overrides) -> anyhow::Result<i32> {
    let source = ConfigSource::locate(explicit);
    if let Some(note) = config::ignored_local_config(&source) {
        eprintln!("acp-proxy: {note}");
    }
    let mut cfg = Config::load_from(&source)?;
    if let Some(level) = overrides.log_level {
        cfg.log_level = level;
    }
    if let Some(location) = overrides.store {
        cfg.store.location = Some(location);
    }
    // A TOML comment, so that the whole output reads back as a config.
    let mut text = format!("# {source}: ok\n");
    text.push_str(&effective_toml(&cfg)?);
    super::emit(text.as_bytes())?;
    Ok(0)
}

/// The settings as TOML, with the store's default path filled in (that is where it goes).
pub fn effective_toml(cfg: &Config) -> anyhow::Result<String> {
    let mut cfg = cfg.clone();
    if cfg.store.location.is_none() {
        if let Ok(path) = store::default_path() {
            cfg.store.location = Some(StoreLocation::Path(path));
        }
    }
    let mut text = String::new();
    if cfg.dump.path.is_none() {
        text.push_str("# [dump] path is unset: no traffic dump\n");
    }
    text.push_str(&toml::to_string(&cfg)?);
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_output_reads_back_as_the_same_settings() {
        let example =
            Config::from_toml(include_str!("../../../../proxy.toml"), Path::new("p.toml"))
                .expect("example parses");
        let changed = Config::from_toml(
            "display = \"zed\"\n[dump]\npath = \"/tmp/d.jsonl\"\nredact = false\n\
             [store]\npath = \"memory\"\nmax_age = \"90m\"\nmax_bytes = 4097\n\
             [subagents]\npresets = [\"qwen\"]\n",
            Path::new("c.toml"),
        )
        .expect("parses");
        for cfg in [Config::default(), example, changed] {
            let text = effective_toml(&cfg).expect("serialises");
            let back = Config::from_toml(&text, Path::new("out.toml"))
                .unwrap_or_else(|e| panic!("output does not read back: {e}\n{text}"));
            assert_eq!(effective_toml(&back).expect("serialises"), text);
        }
    }

    #[test]
    fn units_are_the_ones_proxy_toml_uses() {
        let text = effective_toml(&Config::default()).expect("serialises");
        assert!(text.contains("max_age = \"30d\""), "{text}");
        assert!(text.contains("max_bytes = \"512MiB\""), "{text}");
        assert!(text.contains("[shutdown]\nstdin_grace_ms = 1000"), "{text}");
        assert!(text.contains("live_child_events = \"hide\""), "{text}");
    }
}
