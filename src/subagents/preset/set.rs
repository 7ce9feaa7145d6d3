//! How each agent marks subagents on the wire, as data: one TOML file per agent family under
//! `presets/`, shipped in the binary, extended or overridden by `[[subagents.preset]]` in
//! `proxy.toml`. The detector in [`super::detect`] only walks the compiled tables; supporting a
//! new agent (or a new version of one) means a new file or table, not a code path.
//!
//! The schema is [`super::spec`]; `docs/presets.md` documents it key by key.

use std::sync::{Arc, LazyLock};

use super::spec::{PresetFile, PresetSpec};
use super::vocab::PresetError;
use super::{Origin, Preset};

/// `(path, text)` of each named file under `presets/`, compiled into the binary.
macro_rules! shipped {
    ($($name:literal),* $(,)?) => {
        &[$((concat!("presets/", $name, ".toml"), include_str!(concat!("../../../presets/", $name, ".toml")))),*]
    };
}

/// The shipped files, in the order presets are tried. The first three are the fallback (used
/// for an agent no preset names).
const SHIPPED: &[(&str, &str)] = shipped![
    "claude",
    "qwen",
    "opencode",
    "codex",
    "gemini",
    "pi",
    "agentpool",
    "dsh",
    "goose",
    "cursor",
    "fast-agent",
    "kimi",
    "vibe",
    "droid",
    "kilo",
    "copilot",
    "cline"
];

/// Every known preset: the shipped ones, with the user's replacing or added to them.
#[derive(Clone)]
pub struct PresetSet {
    presets: Vec<Preset>,
}

impl std::fmt::Debug for PresetSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(
                self.presets
                    .iter()
                    .map(|p| format!("{} ({})", p.name, p.origin)),
            )
            .finish()
    }
}

static BUILTIN: LazyLock<Arc<PresetSet>> = LazyLock::new(|| {
    // The files are part of the binary and compiled by a unit test
    // (`shipped_presets_compile`): a failure here is a build defect, not bad input.
    Arc::new(PresetSet::shipped().expect("the shipped presets are valid"))
});

impl PresetSet {
    /// The presets shipped in the binary.
    pub fn builtin() -> Arc<PresetSet> {
        BUILTIN.clone()
    }

    /// Parse and compile the shipped files.
    pub fn shipped() -> Result<PresetSet, PresetError> {
        let mut set = PresetSet {
            presets: Vec::new(),
        };
        for (file, text) in SHIPPED {
            let parsed: PresetFile = toml::from_str(text)
                .map_err(|e| PresetError::new(*file, e.to_string().trim_end().to_owned()))?;
            for (i, spec) in parsed.preset.into_iter().enumerate() {
                let key = format!("{file}: preset[{i}]");
                if set.get(&spec.name).is_some() {
                    return Err(PresetError::new(
                        format!("{key}.name"),
                        format!("`{}` is defined twice", spec.name),
                    ));
                }
                set.presets
                    .push(Preset::compile(spec, &key, Origin::Shipped(file))?);
            }
        }
        Ok(set)
    }

    /// This set with the user's presets (`[[subagents.preset]]`, keyed `key[i]` in
    /// messages): one with a known name replaces that preset in place, a new one is added
    /// after the others. `extends` starts from a preset already defined (shipped, or an
    /// earlier one of the user's).
    pub fn with_user(&self, specs: &[PresetSpec], key: &str) -> Result<PresetSet, PresetError> {
        let mut set = self.clone();
        let mut seen: Vec<&str> = Vec::new();
        for (i, spec) in specs.iter().enumerate() {
            let k = format!("{key}[{i}]");
            if seen.contains(&spec.name.as_str()) {
                return Err(PresetError::new(
                    format!("{k}.name"),
                    format!("`{}` is defined twice in the config", spec.name),
                ));
            }
            seen.push(&spec.name);
            let spec = match &spec.extends {
                Some(base) => {
                    let Some(b) = set.get(base) else {
                        return Err(PresetError::new(
                            format!("{k}.extends"),
                            format!("no preset `{base}` (known: {})", set.names().join(", ")),
                        ));
                    };
                    spec.clone().over(&b.spec)
                }
                None => spec.clone(),
            };
            let preset = Preset::compile(spec, &k, Origin::Config(i))?;
            // The user's patterns are few: compile them now, to refuse any too big to compile
            // with its key. The shipped ones compile when first used.
            preset.compile_patterns()?;
            match set.presets.iter().position(|p| p.name == preset.name) {
                Some(at) => set.presets[at] = preset,
                None => set.presets.push(preset),
            }
        }
        Ok(set)
    }

    pub fn get(&self, name: &str) -> Option<&Preset> {
        self.presets.iter().find(|p| p.name == name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Preset> {
        self.presets.iter()
    }

    pub fn names(&self) -> Vec<&str> {
        self.presets.iter().map(|p| p.name.as_str()).collect()
    }

    /// The presets for an agent no preset names.
    pub fn fallback(&self) -> Vec<Preset> {
        self.presets
            .iter()
            .filter(|p| p.fallback)
            .cloned()
            .collect()
    }

    /// What `acp-proxy presets` prints: how presets are chosen, then each preset with the
    /// agents it is chosen for, its spawn conditions and the other signals it reads.
    pub fn render(&self, named: Option<&[String]>) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let fallback: Vec<String> = self.fallback().iter().map(|p| p.name.clone()).collect();
        match named {
            Some(names) => {
                let names = if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                };
                let _ = writeln!(out, "in use: {names} (named in [subagents] presets)");
            }
            None => {
                let _ = writeln!(
                    out,
                    "in use: chosen per agent from its initialize answer (agentInfo name and \
                     version); for an agent no preset names: {}",
                    fallback.join(", ")
                );
            }
        }
        for p in &self.presets {
            let mut flags = vec![p.origin.to_string()];
            if p.fallback {
                flags.push("fallback".into());
            }
            let _ = writeln!(out, "\n{}  ({})", p.name, flags.join(", "));
            if !p.about.is_empty() {
                let _ = writeln!(out, "  {}", p.about);
            }
            let _ = writeln!(out, "  agents:  {}", p.agents_line());
            let _ = writeln!(out, "  spawn:   {}", p.spawn_line());
            let signals = p.signals_line();
            if !signals.is_empty() {
                let _ = writeln!(out, "  reads:   {signals}");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_presets_compile() {
        let set = PresetSet::shipped().unwrap_or_else(|e| panic!("{e}"));
        let mut patterns = 0;
        for p in set.iter() {
            patterns += p.patterns().len();
            p.compile_patterns().unwrap_or_else(|e| panic!("{e}"));
        }
        assert!(patterns >= 15, "every shipped regex compiles ({patterns})");
        assert_eq!(
            set.names(),
            [
                "claude",
                "qwen",
                "opencode",
                "codex",
                "gemini",
                "pi",
                "agentpool",
                "dsh",
                "goose",
                "cursor",
                "fast-agent",
                "kimi",
                "vibe",
                "droid",
                "kilo",
                "copilot",
                "cline"
            ]
        );
        let fallback: Vec<String> = set.fallback().iter().map(|p| p.name.clone()).collect();
        assert_eq!(
            fallback,
            ["claude", "qwen", "opencode"],
            "today's default set"
        );
        for p in set.iter() {
            assert!(!p.about.is_empty(), "{} says what it is for", p.name);
            assert!(!p.agents.is_empty(), "{} names its agents", p.name);
        }
    }

    #[test]
    fn the_listing_shows_every_preset_and_how_they_are_chosen() {
        let set = PresetSet::builtin();
        let text = set.render(None);
        assert!(text.starts_with("in use: chosen per agent"), "{text}");
        for p in set.iter() {
            assert!(
                text.contains(&format!("\n{}  (shipped (presets/", p.name)),
                "{text}"
            );
        }
        assert!(text.contains("agents:  qwen-code"), "{text}");
        assert!(
            text.contains("spawn:   /_meta/claudeCode/toolName in [\"Task\", \"Agent\"]"),
            "{text}"
        );
        assert!(text.contains("end signals"), "{text}");
        let named = set.render(Some(&["pi".to_owned()]));
        assert!(named.starts_with("in use: pi (named"), "{named}");
    }

    #[test]
    fn user_presets_replace_extend_or_add() {
        let user: PresetFile = toml::from_str(
            r#"
            [[preset]]
            name = "qwen"
            about = "mine"
            [[preset]]
            name = "claude-fork"
            extends = "claude"
            agents = [{ name = "my-claude" }]
            [[preset]]
            name = "madeup"
            parent = ["/_meta/madeupParent"]
            "#,
        )
        .expect("parses");
        let set = PresetSet::builtin()
            .with_user(&user.preset, "subagents.preset")
            .unwrap_or_else(|e| panic!("{e}"));
        let qwen = set.get("qwen").expect("qwen");
        assert_eq!(qwen.about, "mine");
        assert!(qwen.spawn.is_empty(), "a replacement starts from nothing");
        assert_eq!(qwen.origin, Origin::Config(0));
        assert_eq!(set.names()[1], "qwen", "replaced in place");
        let fork = set.get("claude-fork").expect("fork");
        assert_eq!(fork.agents[0].name, "my-claude");
        assert_eq!(
            fork.parent,
            ["/_meta/claudeCode/parentToolUseId"],
            "kept from claude"
        );
        assert_eq!(set.names().last(), Some(&"madeup"));

        // A preset may extend itself: the shipped one with only some keys replaced.
        let same: PresetFile = toml::from_str(
            "[[preset]]\nname = \"claude\"\nextends = \"claude\"\nagents = [{ name = \"my-fork\" }]\n",
        )
        .expect("parses");
        let set = PresetSet::builtin()
            .with_user(&same.preset, "subagents.preset")
            .unwrap_or_else(|e| panic!("{e}"));
        let claude = set.get("claude").expect("claude");
        assert_eq!(claude.agents.len(), 1);
        assert_eq!(claude.spawn.len(), 1, "the spawn rule is kept");
        assert_eq!(set.names()[0], "claude");

        let twice: PresetFile =
            toml::from_str("[[preset]]\nname = \"a\"\n[[preset]]\nname = \"a\"\n").expect("parses");
        let e = PresetSet::builtin()
            .with_user(&twice.preset, "subagents.preset")
            .expect_err("twice");
        assert_eq!(e.key, "subagents.preset[1].name");
        // Too big to compile: refused when the config is read, with its key.
        let big: PresetFile = toml::from_str(
            "[[preset]]\nname = \"a\"\ntitle = [{ at = \"/t\", regex = '\\w{2000}' }]\n",
        )
        .expect("parses");
        let e = PresetSet::builtin()
            .with_user(&big.preset, "subagents.preset")
            .expect_err("too big");
        assert_eq!(e.key, "subagents.preset[0].title[0].regex");
        assert!(e.problem.contains("size limit"), "{e}");
        let bad: PresetFile =
            toml::from_str("[[preset]]\nname = \"a\"\nextends = \"nope\"\n").expect("parses");
        let e = PresetSet::builtin()
            .with_user(&bad.preset, "subagents.preset")
            .expect_err("unknown base");
        assert_eq!(e.key, "subagents.preset[0].extends");
    }
}
