//! The agents `setup zed` and `doctor` know by name: their usual ACP command, how to install
//! it, and whether it speaks standard ACP subagents (which presets
//! recognise an agent is the presets' own data, `presets/*.toml`). The table is data (`agents.toml`).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::Deserialize;

/// One known agent (a row of `agents.toml`, which documents the fields).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KnownAgent {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    pub command: Vec<String>,
    pub install: String,
    pub agent_info: Vec<String>,
    pub standard: bool,
    #[serde(default)]
    pub standard_since: Option<String>,
    #[serde(default)]
    pub node: Option<u64>,
    #[serde(default)]
    pub note: Option<String>,
}

impl KnownAgent {
    /// The name of its entry in Zed's `agent_servers`.
    pub fn entry_name(&self) -> String {
        entry_name_for(&self.name)
    }

    fn answers_to(&self, name: &str) -> bool {
        std::iter::once(&self.id)
            .chain(std::iter::once(&self.name))
            .chain(&self.aliases)
            .any(|n| n.eq_ignore_ascii_case(name))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    agent: Vec<KnownAgent>,
}

/// Every known agent, in the table's order.
pub fn all() -> &'static [KnownAgent] {
    static TABLE: OnceLock<Vec<KnownAgent>> = OnceLock::new();
    TABLE.get_or_init(|| {
        // The table ships inside the binary and a unit test parses it: a failure here is a
        // build that skipped its tests, so an empty table with a message beats a panic.
        match toml::from_str::<Table>(include_str!("agents.toml")) {
            Ok(t) => t.agent,
            Err(e) => {
                eprintln!("acp-proxy: the built-in agent table is invalid: {e}");
                Vec::new()
            }
        }
    })
}

/// The known agent called `name` (its id, name or an alias, in any case).
pub fn by_name(name: &str) -> Option<&'static KnownAgent> {
    all().iter().find(|a| a.answers_to(name))
}

/// The known agent whose usual command this is (with or without npx's `--yes`).
pub fn by_command(command: &[String]) -> Option<&'static KnownAgent> {
    let plain = |c: &[String]| -> Vec<String> {
        let npx = c.first().is_some_and(|p| p == "npx");
        c.iter()
            .enumerate()
            .filter(|(i, w)| !(npx && *i > 0 && (*w == "--yes" || *w == "-y")))
            .map(|(_, w)| w.clone())
            .collect()
    };
    let wanted = plain(command);
    all().iter().find(|a| plain(&a.command) == wanted)
}

/// The known agent that answers `initialize` with this `agentInfo.name`.
pub fn by_agent_info(name: &str) -> Option<&'static KnownAgent> {
    all()
        .iter()
        .find(|a| a.agent_info.iter().any(|n| n == name))
}

/// The ids, for messages that list what `--agent` accepts.
pub fn ids() -> String {
    all()
        .iter()
        .map(|a| a.id.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `"<name> (subagents)"`: what Zed's agent menu shows for a wrapped agent.
pub fn entry_name_for(name: &str) -> String {
    format!("{name} (subagents)")
}

/// A name for an agent command that is not in the table: its first word that is not a
/// launcher (`npx`, `uvx`, ...) or an option, without a path or npm scope.
pub fn guess_name(command: &[String]) -> String {
    const LAUNCHERS: &[&str] = &[
        "npx", "bunx", "pnpx", "uvx", "pipx", "node", "bun", "deno", "python", "python3", "env",
    ];
    let word = command
        .iter()
        .map(|w| basename(w))
        .find(|w| !w.starts_with('-') && !LAUNCHERS.contains(w) && !w.contains('='))
        .or_else(|| command.first().map(|w| basename(w)))
        .unwrap_or("agent");
    let word = word.rsplit('/').next().unwrap_or(word);
    word.split('@')
        .find(|s| !s.is_empty())
        .unwrap_or(word)
        .to_owned()
}

fn basename(word: &str) -> &str {
    // An npm package (`@scope/pkg`) keeps its scope here; `guess_name` drops it.
    if word.starts_with('@') {
        return word;
    }
    Path::new(word)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(word)
}

/// Where `program` would be found when spawned: itself if it names a path, else the first
/// executable file of that name on `PATH`.
pub fn find_program(program: &str) -> Option<PathBuf> {
    find_program_in(program, std::env::var_os("PATH").as_deref())
}

fn find_program_in(program: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    if program.is_empty() {
        return None;
    }
    if program.contains('/') {
        let p = PathBuf::from(program);
        return is_executable(&p).then_some(p);
    }
    std::env::split_paths(path?)
        // An empty PATH entry is the current directory (POSIX).
        .map(|dir| {
            if dir.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                dir
            }
        })
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    acp_proxy::platform::is_executable(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn the_table_parses_and_names_are_unique() {
        let toml_text = include_str!("agents.toml");
        let table: Table = toml::from_str(toml_text).expect("agents.toml parses");
        assert!(table.agent.len() >= 7);
        // Each name (case-insensitive) answers for one agent only.
        let mut owner = std::collections::HashMap::new();
        for a in &table.agent {
            let names = std::iter::once(&a.id)
                .chain(std::iter::once(&a.name))
                .chain(&a.aliases);
            for n in names {
                let prev = owner.insert(n.to_ascii_lowercase(), a.id.clone());
                assert!(
                    prev.is_none_or(|p| p == a.id),
                    "`{n}` answers for two agents"
                );
            }
        }
        for a in &table.agent {
            assert!(!a.command.is_empty(), "{}: empty command", a.id);
        }
    }

    /// `agent_info` says which `agentInfo.name`s are this agent; the presets (`presets/*.toml`)
    /// say which they recognise. Every name here must be one the agent's preset (same id) names,
    /// so the two lists cannot drift apart.
    #[test]
    fn agent_info_names_are_the_presets_names() {
        let presets = acp_proxy::subagents::preset::set::PresetSet::builtin();
        for a in all() {
            let preset = presets
                .get(&a.id)
                .unwrap_or_else(|| panic!("no shipped preset named `{}`", a.id));
            for name in &a.agent_info {
                assert!(
                    preset
                        .agents
                        .iter()
                        .any(|m| m.name.eq_ignore_ascii_case(name)),
                    "agents.toml: `{name}` ({}) is not among preset `{}`'s agents",
                    a.id,
                    a.id
                );
            }
            if let Some(v) = &a.standard_since {
                assert!(
                    semver::Version::parse(v).is_ok(),
                    "{}: standard_since {v}",
                    a.id
                );
            }
        }
    }

    #[test]
    fn lookups() {
        assert_eq!(by_name("Claude").map(|a| a.id.as_str()), Some("claude"));
        assert_eq!(by_name("qwen-code").map(|a| a.id.as_str()), Some("qwen"));
        assert!(by_name("nonesuch").is_none());
        assert_eq!(
            by_command(&words("opencode acp")).map(|a| a.id.as_str()),
            Some("opencode")
        );
        // npx's `--yes` or not, it is the same agent.
        for command in [
            "npx @agentclientprotocol/claude-agent-acp",
            "npx --yes @agentclientprotocol/claude-agent-acp",
            "npx -y @agentclientprotocol/claude-agent-acp",
        ] {
            assert_eq!(
                by_command(&words(command)).map(|a| a.id.as_str()),
                Some("claude"),
                "{command}"
            );
        }
        // The entries `setup zed` writes do not depend on the user's npm `yes` setting.
        for a in all().iter().filter(|a| a.command[0] == "npx") {
            assert_eq!(a.command[1], "--yes", "{}", a.id);
        }
        assert_eq!(
            by_agent_info("@zed-industries/claude-agent-acp").map(|a| a.id.as_str()),
            Some("claude")
        );
        assert_eq!(
            by_name("claude").unwrap().entry_name(),
            "Claude (subagents)"
        );
    }

    #[test]
    fn names_for_unknown_commands() {
        assert_eq!(
            guess_name(&words("npx -y @acme/coder-acp@1.2")),
            "coder-acp"
        );
        assert_eq!(guess_name(&words("/opt/bin/my-agent --acp")), "my-agent");
        assert_eq!(guess_name(&words("uvx some-agent serve")), "some-agent");
        assert_eq!(guess_name(&words("node")), "node");
        assert_eq!(guess_name(&[]), "agent");
    }

    #[test]
    #[cfg(unix)] // executable bits; Windows goes by PATHEXT
    fn programs_are_found_on_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let exe = dir.path().join("fake-agent");
        std::fs::write(&exe, "#!/bin/sh\n").expect("write");
        let plain = dir.path().join("not-executable");
        std::fs::write(&plain, "").expect("write");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let path = std::env::join_paths(["/nonexistent", dir.path().to_str().unwrap()]).unwrap();
        assert_eq!(
            find_program_in("fake-agent", Some(&path)),
            Some(exe.clone())
        );
        assert_eq!(find_program_in("not-executable", Some(&path)), None);
        assert_eq!(find_program_in("missing", Some(&path)), None);
        assert_eq!(
            find_program_in(exe.to_str().unwrap(), None),
            Some(exe.clone())
        );
        assert_eq!(find_program_in("fake-agent", None), None);
    }
}
