//! `acp-proxy setup zed`: the `agent_servers` entry that wraps an agent in this binary, printed
//! or merged into Zed's settings file.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde_json::{json, Value};

use super::agents::{self, KnownAgent};
use super::zed_settings::{self, Merge};
use super::{absolute, shell_line};

#[derive(clap::Subcommand, Debug)]
pub enum SetupTarget {
    /// Print the `agent_servers` entry that runs an agent through acp-proxy, or merge it into
    /// Zed's settings file with --write.
    ///
    /// Examples:
    ///   acp-proxy setup zed --list
    ///   acp-proxy setup zed --agent claude --write
    ///   acp-proxy setup zed --name "My agent" --write -- my-agent --acp
    #[command(verbatim_doc_comment)]
    Zed(SetupZedArgs),
}

#[derive(clap::Args, Debug)]
pub struct SetupZedArgs {
    /// A known agent: claude, codex, gemini, opencode, qwen, pi, agentpool (see --list).
    #[arg(long, value_name = "NAME", conflicts_with = "command")]
    agent: Option<String>,
    /// The entry's name in Zed's agent menu (default: "<agent> (subagents)").
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// Merge the entry into Zed's settings file (backed up first) instead of printing it.
    #[arg(long)]
    write: bool,
    /// Zed's settings file (default: $XDG_CONFIG_HOME/zed/settings.json, else
    /// ~/.config/zed/settings.json).
    #[arg(long, value_name = "PATH")]
    settings: Option<PathBuf>,
    /// List the known agents, their commands and whether they are installed.
    #[arg(long, conflicts_with_all = ["agent", "command", "write", "name"])]
    list: bool,
    /// The agent to wrap, after `--`: e.g. `-- npx @agentclientprotocol/claude-agent-acp`.
    #[arg(last = true, value_name = "AGENT COMMAND")]
    command: Vec<String>,
}

/// Run `setup <target>`. `config` is the global `--config`, passed on to the entry.
pub fn run(target: SetupTarget, config: Option<&Path>) -> anyhow::Result<i32> {
    let SetupTarget::Zed(args) = target;
    if args.list {
        print_list();
        return Ok(0);
    }
    let (known, command) = match (&args.agent, args.command.is_empty()) {
        (Some(name), _) => {
            let Some(a) = agents::by_name(name) else {
                bail!(
                    "unknown agent `{name}` (known: {}); give any other agent's command after `--`",
                    agents::ids()
                );
            };
            (Some(a), a.command.clone())
        }
        (None, false) => (agents::by_command(&args.command), args.command.clone()),
        (None, true) => bail!(
            "name the agent to wrap: `--agent NAME` ({}) or its command after `--`; \
             `acp-proxy setup zed --list` shows the known ones",
            agents::ids()
        ),
    };
    let name = match (&args.name, known) {
        (Some(n), _) => n.clone(),
        (None, Some(a)) => a.entry_name(),
        (None, None) => agents::entry_name_for(&agents::guess_name(&command)),
    };
    report_installed(known, &command);
    let entry = entry(&command, config)?;
    let settings = match &args.settings {
        Some(p) => p.clone(),
        None => zed_settings::default_path().with_context(|| {
            format!(
                "cannot tell where Zed's settings are ({}): give the file with --settings PATH",
                acp_proxy::platform::paths::Os::CURRENT.config_vars()
            )
        })?,
    };
    if args.write {
        write_entry(&settings, &name, &entry)?;
        say!(
            "Next: open Zed's agent panel and start a new thread with \"{name}\" (restart Zed if \
             it is not listed yet)."
        );
        say!(
            "Check that the agent starts: acp-proxy doctor -- {}",
            shell_line(&command)
        );
    } else {
        let (_, text) = zed_settings::merge("", &name, &entry)?;
        super::emit(text.unwrap_or_default().as_bytes())?;
        // --write would refuse a file it cannot merge into: only offer it when it would work.
        let existing = std::fs::read(&settings).ok();
        let refused = existing
            .as_deref()
            .and_then(|bytes| match std::str::from_utf8(bytes) {
                Err(_) => Some("it is not UTF-8 text".to_owned()),
                Ok(text) => zed_settings::merge(text, &name, &entry)
                    .err()
                    .map(|e| e.to_string()),
            });
        match refused {
            Some(why) => eprintln!(
                "acp-proxy: add this to {} by hand: --write would leave that file alone, as {why}",
                settings.display()
            ),
            None => eprintln!(
                "acp-proxy: add this to {}, or run the same command with --write to merge it \
                 there (the file is backed up first)",
                settings.display()
            ),
        }
    }
    Ok(0)
}

/// The entry: this binary, `--config` if one was given, then `--` and the agent's command.
fn entry(command: &[String], config: Option<&Path>) -> anyhow::Result<Value> {
    let me = std::env::current_exe().context("cannot locate the acp-proxy binary")?;
    if looks_like_a_build_tree(&me) {
        eprintln!(
            "acp-proxy: warning: {} is a build in a source tree; the entry breaks when that \
             tree is cleaned. `cargo install --path .` puts a lasting copy in ~/.cargo/bin.",
            me.display()
        );
    }
    let mut args: Vec<String> = Vec::new();
    if let Some(config) = config {
        args.push("--config".into());
        args.push(absolute(config)?.to_string_lossy().into_owned());
    }
    args.push("--".into());
    args.extend(command.iter().cloned());
    Ok(json!({
        "type": "custom",
        "command": me.to_string_lossy(),
        "args": args,
        "env": {},
    }))
}

fn looks_like_a_build_tree(exe: &Path) -> bool {
    let parts: Vec<&std::ffi::OsStr> = exe.iter().collect();
    parts
        .windows(2)
        .any(|w| w[0] == "target" && (w[1] == "debug" || w[1] == "release"))
}

/// Say whether the agent's program is on PATH, and how to install it if not.
fn report_installed(known: Option<&KnownAgent>, command: &[String]) {
    let Some(program) = command.first() else {
        return;
    };
    if agents::find_program(program).is_some() {
        return;
    }
    match known {
        Some(a) => eprintln!(
            "acp-proxy: warning: `{program}` is not on PATH, so {} will not start until it is \
             installed: {}",
            a.name, a.install
        ),
        None => eprintln!(
            "acp-proxy: warning: `{program}` is not on PATH: install it, or give its absolute path"
        ),
    }
}

fn print_list() {
    say!("Known agents (acp-proxy setup zed --agent ID):");
    let width = agents::all()
        .iter()
        .map(|a| shell_line(&a.command).len())
        .max()
        .unwrap_or(0);
    for a in agents::all() {
        let command = shell_line(&a.command);
        let program = a.command.first().map(String::as_str).unwrap_or("");
        let status = match agents::find_program(program) {
            Some(path) => format!("installed ({})", path.display()),
            None => format!("not installed: {}", a.install),
        };
        say!("  {:<10} {command:<width$}  {status}", a.id);
    }
    say!("Any other ACP agent: acp-proxy setup zed --name NAME -- <agent command> [args...]");
}

/// Merge the entry into the settings file, backing it up first; a no-op when it is there.
fn write_entry(settings: &Path, name: &str, entry: &Value) -> anyhow::Result<()> {
    // A settings file that is a symlink (dotfile managers) is edited where it points.
    let target = match std::fs::canonicalize(settings) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => settings.to_owned(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", settings.display())),
    };
    let original = match std::fs::read(&target) {
        Ok(bytes) => Some(String::from_utf8(bytes).map_err(|_| {
            anyhow::anyhow!("{} is not UTF-8 text: left as it is", target.display())
        })?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", target.display())),
    };
    let (merge, text) = zed_settings::merge(original.as_deref().unwrap_or(""), name, entry)
        .map_err(|e| {
            anyhow::anyhow!(
                "{} was left as it is: {e}. Fix it in Zed, or add the entry by hand \
                 (`acp-proxy setup zed` without --write prints it)",
                target.display()
            )
        })?;
    let Some(text) = text else {
        let Merge::Unchanged { name: found } = merge else {
            bail!("internal error: a merge changed nothing but did not say so");
        };
        say!(
            "\"{found}\" is already in {} with this command: nothing changed.",
            target.display()
        );
        return Ok(());
    };
    let backup = match &original {
        Some(_) => Some(backup(&target)?),
        None => {
            if let Some(dir) = target.parent() {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
            }
            None
        }
    };
    replace(&target, &text, original.as_deref())?;
    let (what, changes) = match merge {
        Merge::Added => (format!("Added \"{name}\" to"), Vec::new()),
        Merge::Updated { changes } => (format!("Updated \"{name}\" in"), changes),
        Merge::Unchanged { .. } => unreachable!("handled above"),
    };
    match backup {
        Some(b) => say!(
            "{what} {} (the previous file is in {}).",
            target.display(),
            b.display()
        ),
        None => say!("{what} {} (a new file).", target.display()),
    }
    // Exactly what changed; the user's other keys, and their own proxy flags in `args`, stay.
    for c in changes {
        match c.before {
            Some(before) => say!("  {}: {before} -> {}", c.key, c.after),
            None => say!("  {}: (none) -> {}", c.key, c.after),
        }
    }
    Ok(())
}

/// Copy the file beside itself as `NAME.bak.UNIXTIME` (a new name, never over another backup),
/// with the same permissions.
fn backup(path: &Path) -> anyhow::Result<PathBuf> {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let file_name = path
        .file_name()
        .context("the settings path has no file name")?
        .to_string_lossy()
        .into_owned();
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let perms = std::fs::metadata(path)?.permissions();
    for n in 0..100 {
        let suffix = if n == 0 {
            format!("{secs}")
        } else {
            format!("{secs}-{n}")
        };
        let candidate = path.with_file_name(format!("{file_name}.bak.{suffix}"));
        let mut file = match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&candidate)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("cannot create the backup {}", candidate.display()))
            }
        };
        file.write_all(&bytes)
            .and_then(|()| file.sync_all())
            .with_context(|| format!("cannot write the backup {}", candidate.display()))?;
        std::fs::set_permissions(&candidate, perms)?;
        return Ok(candidate);
    }
    bail!("cannot find a free backup name beside {}", path.display())
}

/// Replace the file's contents atomically (a temporary file beside it, renamed over it), with
/// the old file's permissions. Refuses if the file changed since it was read.
fn replace(path: &Path, text: &str, read: Option<&str>) -> anyhow::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let file_name = path
        .file_name()
        .context("the settings path has no file name")?
        .to_string_lossy()
        .into_owned();
    let tmp = dir.join(format!(".{file_name}.acp-proxy-{}", std::process::id()));
    let result = (|| -> anyhow::Result<()> {
        let mut file = std::fs::File::create(&tmp)
            .with_context(|| format!("cannot create {}", tmp.display()))?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        if let Ok(meta) = std::fs::metadata(path) {
            std::fs::set_permissions(&tmp, meta.permissions())?;
        }
        // Zed (or the user) may have saved the file meanwhile: never overwrite that.
        let now = std::fs::read(path).ok();
        if now.as_deref() != read.map(str::as_bytes) {
            bail!(
                "{} changed while it was being merged: nothing written, run again",
                path.display()
            );
        }
        std::fs::rename(&tmp, path)
            .with_context(|| format!("cannot replace {}", path.display()))?;
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_trees_are_noticed() {
        assert!(looks_like_a_build_tree(Path::new(
            "/src/acp-proxy/target/release/acp-proxy"
        )));
        assert!(!looks_like_a_build_tree(Path::new(
            "/home/u/.cargo/bin/acp-proxy"
        )));
    }
}
