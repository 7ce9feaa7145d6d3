//! `acp-proxy doctor -- <agent command>` (or `--agent NAME`; without either, the built-in demo
//! agent): start the agent once as the proxy would for Zed (Zed's `initialize`, through the
//! proxy's own engine), and report what decides whether Zed shows its subagents: the agent's
//! identity and protocol version, `loadSession`, whether it advertises standard ACP subagents
//! (and, for an adapter npx runs, the Node.js version behind an old one), how its subagents are
//! recognised, the display flavour, and where the store, dump and config are.

mod places;
mod probe;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use serde_json::Value;

use acp_proxy::config::{self, Config, ConfigSource};
use acp_proxy::engine::Mode;
use acp_proxy::engine::SubagentDisplay as Display;
use acp_proxy::store::StoreLocation;
use acp_proxy::subagents::preset::select::AgentInfo;

use super::agents::{self, KnownAgent};
use super::{absolute, shell_line};
use probe::Outcome;

#[derive(clap::Args, Debug)]
pub struct DoctorArgs {
    /// A known agent instead of a command (see `acp-proxy setup zed --list`).
    #[arg(long, value_name = "NAME", conflicts_with = "command")]
    agent: Option<String>,
    /// How long the agent may take to answer `initialize` (npx may download it first):
    /// seconds, or a number followed by s, m or h.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = acp_proxy::units::parse_duration)]
    timeout: Duration,
    /// The agent to check, after `--`: e.g. `-- npx @agentclientprotocol/claude-agent-acp`.
    /// Without one (and without --agent), the built-in demo agent.
    #[arg(last = true, value_name = "AGENT COMMAND")]
    command: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Ok,
    Info,
    Warn,
    Fail,
}

/// The report, printed as it goes (starting an agent can take a while).
#[derive(Default)]
struct Report {
    problems: usize,
    warnings: usize,
}

impl Report {
    fn line(&mut self, level: Level, what: &str, text: impl AsRef<str>) {
        let tag = match level {
            Level::Ok => "ok",
            Level::Info => "info",
            Level::Warn => {
                self.warnings += 1;
                "warn"
            }
            Level::Fail => {
                self.problems += 1;
                "FAIL"
            }
        };
        let mut lines = text.as_ref().lines();
        say!("  {tag:<5} {what}: {}", lines.next().unwrap_or(""));
        for more in lines {
            self.detail(more);
        }
    }

    fn fix(&self, text: impl AsRef<str>) {
        say!("        fix: {}", text.as_ref());
    }

    fn detail(&self, text: impl AsRef<str>) {
        say!("        {}", text.as_ref());
    }
}

/// Global flags that change the proxy's settings.
pub struct Overrides<'a> {
    pub config: Option<&'a Path>,
    pub store: Option<StoreLocation>,
}

pub fn run(args: DoctorArgs, overrides: Overrides<'_>) -> anyhow::Result<i32> {
    let demo = args.agent.is_none() && args.command.is_empty();
    let (known, command) = match &args.agent {
        Some(name) => {
            let a = agents::by_name(name)
                .with_context(|| format!("unknown agent `{name}` (known: {})", agents::ids()))?;
            (Some(a), a.command.clone())
        }
        // As the proxy does without an agent command: the built-in demo agent.
        None if demo => {
            let me = std::env::current_exe().context("cannot locate the acp-proxy binary")?;
            (
                None,
                vec![me.to_string_lossy().into_owned(), "demo-agent".to_owned()],
            )
        }
        None => (agents::by_command(&args.command), args.command.clone()),
    };
    if demo {
        say!(
            "acp-proxy doctor: no agent given, so the built-in demo agent (what `acp-proxy` runs \
             without one); `--agent NAME` ({}) or `-- <agent command>` checks yours",
            agents::ids()
        );
    } else {
        say!("acp-proxy doctor: {}", shell_line(&command));
    }
    let setup_args = match &args.agent {
        _ if demo => None,
        Some(_) => Some(format!("--agent {}", known.map_or("", |a| a.id.as_str()))),
        None => Some(format!("-- {}", shell_line(&command))),
    };
    let mut report = Report::default();
    report_platform(&mut report);
    let Some(cfg) = check_config(&mut report, overrides) else {
        return Ok(finish(&report, setup_args.as_deref()));
    };
    if let Some(program) = check_program(&mut report, known, &command) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        let outcome = runtime.block_on(probe::initialize(&cfg, &command, args.timeout));
        runtime.shutdown_background();
        report_agent(&mut report, &cfg, known, &command, &program, outcome);
    }
    places::report_store_and_dump(&mut report, &cfg);
    Ok(finish(&report, setup_args.as_deref()))
}

/// `setup zed` arguments for the same agent: `--agent NAME` when it was named, else its command.
fn finish(report: &Report, setup_args: Option<&str>) -> i32 {
    say!("");
    if report.problems > 0 {
        say!(
            "{} problem{} found: Zed cannot use this agent until {} fixed.",
            report.problems,
            if report.problems == 1 { "" } else { "s" },
            if report.problems == 1 {
                "it is"
            } else {
                "they are"
            }
        );
        return 1;
    }
    let warned = match report.warnings {
        0 => String::new(),
        1 => " (with 1 warning above)".to_owned(),
        n => format!(" (with {n} warnings above)"),
    };
    match setup_args {
        Some(args) => {
            say!("Ready for Zed{warned}. Add it with: acp-proxy setup zed --write {args}")
        }
        None => say!(
            "The proxy works{warned}. Check your agent with: acp-proxy doctor --agent NAME (or \
             -- <agent command>)"
        ),
    }
    0
}

/// The platform as built, and where Zed's settings are on it (docs/platforms.md).
fn report_platform(report: &mut Report) {
    report.line(
        Level::Info,
        "platform",
        format!("{} {}", acp_proxy::platform::name(), std::env::consts::ARCH),
    );
    match super::zed_settings::default_path() {
        Some(p) => report.line(Level::Info, "Zed settings", p.display().to_string()),
        None => report.line(
            Level::Info,
            "Zed settings",
            format!(
                "unknown ({})",
                acp_proxy::platform::paths::Os::CURRENT.config_vars()
            ),
        ),
    }
}

fn check_config(report: &mut Report, overrides: Overrides<'_>) -> Option<Config> {
    let file = Config::file_in_effect(overrides.config);
    let shown = file
        .as_deref()
        .map(|p| absolute(p).map_or_else(|_| p.display().to_string(), |a| a.display().to_string()));
    match Config::load(overrides.config) {
        Ok(mut cfg) => {
            match shown {
                Some(p) => report.line(Level::Ok, "config", p),
                None => report.line(Level::Ok, "config", "none, built-in defaults"),
            }
            // As the proxy says when it starts here.
            if let Some(note) =
                config::ignored_local_config(&ConfigSource::locate(overrides.config))
            {
                report.line(Level::Info, "./proxy.toml", note);
            }
            if let Some(location) = overrides.store {
                cfg.store.location = Some(location);
            }
            Some(cfg)
        }
        Err(e) => {
            report.line(Level::Fail, "config", e.to_string());
            report.fix("correct the file; `acp-proxy check-config PATH` checks it");
            None
        }
    }
}

/// The program's path, or `None` (reported) when it cannot be found.
fn check_program(
    report: &mut Report,
    known: Option<&KnownAgent>,
    command: &[String],
) -> Option<PathBuf> {
    let program = command.first()?;
    match agents::find_program(program) {
        Some(path) => {
            report.line(Level::Ok, "agent program", path.display().to_string());
            Some(path)
        }
        None => {
            let where_ = if program.contains('/') {
                "does not exist or is not executable"
            } else {
                "is not on PATH"
            };
            report.line(
                Level::Fail,
                "agent program",
                format!("`{program}` {where_}"),
            );
            match known {
                Some(a) => report.fix(&a.install),
                None => report.fix("install the agent, or give the full path to its program"),
            }
            None
        }
    }
}

fn report_agent(
    report: &mut Report,
    cfg: &Config,
    known: Option<&KnownAgent>,
    command: &[String],
    program: &Path,
    outcome: Outcome,
) {
    let show_stderr = |report: &Report, stderr: &[String]| {
        if stderr.is_empty() {
            report.detail("(nothing on its stderr)");
        } else {
            report.detail("its stderr ended with:");
            for l in stderr {
                report.detail(format!("  {l}"));
            }
        }
    };
    let show_noise = |report: &mut Report, noise: &Option<String>| {
        if let Some(n) = noise {
            report.line(
                Level::Warn,
                "stdout",
                format!("the agent wrote something that is not JSON-RPC: {n:?}"),
            );
            report.fix("stdout must carry protocol messages only: send logs to stderr");
        }
    };
    let (response, elapsed, mode) = match outcome {
        Outcome::SpawnFailed(e) => {
            report.line(Level::Fail, "agent", e);
            report.fix(format!("check that {} can be run", program.display()));
            return;
        }
        Outcome::Ended {
            status,
            stderr,
            noise,
        } => {
            report.line(
                Level::Fail,
                "agent",
                format!("ended without answering `initialize` ({status})"),
            );
            show_stderr(report, &stderr);
            report.fix(
                "run the command in a terminal to see why it stops; an ACP agent reads JSON-RPC \
                 on stdin (some need an option such as --acp)",
            );
            show_noise(report, &noise);
            return;
        }
        Outcome::TimedOut { stderr, noise } => {
            report.line(
                Level::Fail,
                "agent",
                "no answer to `initialize` in time (stopped it)",
            );
            show_stderr(report, &stderr);
            report.fix(
                "check that the command starts an ACP agent on stdin/stdout (some need an option \
                 such as --acp); a first `npx` run may need longer: --timeout 5m",
            );
            show_noise(report, &noise);
            return;
        }
        Outcome::Answered {
            response,
            elapsed,
            mode,
            noise,
        } => {
            show_noise(report, &noise);
            (response, elapsed, mode)
        }
    };
    if let Some(err) = response.get("error") {
        let message = err.get("message").and_then(Value::as_str).unwrap_or("");
        report.line(
            Level::Fail,
            "agent",
            format!("answered `initialize` with an error: {message} ({err})"),
        );
        report.fix("see the agent's own documentation for this error");
        return;
    }
    let result = response.get("result").cloned().unwrap_or(Value::Null);
    let info = result.get("agentInfo");
    let text = |v: Option<&Value>, key: &str| {
        v.and_then(|i| i.get(key))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let name = text(info, "name");
    let secs = format!("answered in {:.1} s", elapsed.as_secs_f64());
    match (&name, text(info, "version")) {
        (Some(n), Some(v)) => {
            let title = text(info, "title")
                .map(|t| format!(" (\"{t}\")"))
                .unwrap_or_default();
            report.line(Level::Ok, "agent", format!("{n} {v}{title}, {secs}"));
        }
        (Some(n), None) => report.line(
            Level::Ok,
            "agent",
            format!("{n} (no version given), {secs}"),
        ),
        (None, _) => report.line(
            Level::Warn,
            "agent",
            format!("no `agentInfo` in its answer: its name and version are unknown; {secs}"),
        ),
    }
    match result.get("protocolVersion").and_then(Value::as_u64) {
        Some(1) => report.line(Level::Ok, "protocol version", "1"),
        other => {
            let v = other.map_or_else(|| "missing".to_owned(), |v| v.to_string());
            report.line(
                Level::Fail,
                "protocol version",
                format!("{v}: Zed and acp-proxy speak ACP version 1"),
            );
            report.fix("use a version of the agent that speaks ACP v1");
        }
    }
    let caps = result.get("agentCapabilities");
    if caps
        .and_then(|c| c.get("loadSession"))
        .and_then(Value::as_bool)
        == Some(true)
    {
        report.line(
            Level::Ok,
            "loadSession",
            "yes: Zed can reopen its threads, and the subagents' threads with them",
        );
    } else {
        report.line(
            Level::Warn,
            "loadSession",
            "no: Zed cannot reopen its threads from history, so a subagent's thread does not \
             open after Zed restarts (its card still shows live)",
        );
        report.fix("use a version of the agent that supports session/load");
    }
    let family = name.as_deref().and_then(agents::by_agent_info).or(known);
    let advertises = caps
        .and_then(|c| c.pointer("/sessionCapabilities/subagents"))
        .is_some();
    let agent = name.as_ref().map(|n| AgentInfo {
        name: n.clone(),
        version: text(info, "version"),
    });
    report_node(report, family, command);
    report_subagents(report, cfg, agent.as_ref(), family, advertises);
    report_flavour(report, cfg, mode);
}

fn report_subagents(
    report: &mut Report,
    cfg: &Config,
    agent: Option<&AgentInfo>,
    family: Option<&KnownAgent>,
    advertises: bool,
) {
    // What this agent says it offers, not what its family offers in general.
    let expected = family.filter(|f| f.standard);
    if advertises {
        report.line(
            Level::Ok,
            "subagents",
            "standard ACP subagents: it advertises `sessionCapabilities.subagents`",
        );
    } else if let Some(f) = expected {
        let mut text = "no standard ACP subagents: it does not advertise \
                        `sessionCapabilities.subagents` (only what a preset recognises is shown)"
            .to_owned();
        let since = f.standard_since.as_deref();
        let version = agent.and_then(|a| a.version.as_deref());
        if let (Some(since), Some(version)) = (since, version) {
            if older_than(version, since) {
                text.push_str(&format!(
                    "\n{version} is older than {since}, the first {} adapter that speaks them",
                    f.name
                ));
            }
        }
        report.line(Level::Warn, "subagents", text);
        let node = f
            .node
            .map(|n| format!(" (it needs Node.js {n} or newer)"))
            .unwrap_or_default();
        match since {
            Some(since) => report.fix(format!(
                "use version {since} or newer of the {} adapter{node}",
                f.name
            )),
            None => report.fix(format!(
                "use a current version of the {} adapter{node}",
                f.name
            )),
        }
    }
    // The same choice the proxy makes when the agent answers `initialize`.
    let selection = cfg.subagents.choice().choose(agent);
    let named = selection.presets.iter().any(|p| {
        agent.is_some_and(|a| {
            p.agents
                .iter()
                .any(|n| n.name.eq_ignore_ascii_case(&a.name))
        })
    });
    let level = if named || advertises || cfg.subagents.presets.is_some() {
        Level::Ok
    } else {
        Level::Info
    };
    report.line(level, "presets", selection.reason);
    if (advertises || expected.is_some()) && !cfg.zed.opt_in {
        report.line(
            Level::Warn,
            "subagents",
            "`[zed] opt_in = false`: the agent is not asked for standard subagents on Zed's behalf",
        );
        report.fix("set `opt_in = true` under [zed]");
    }
    if let Some(note) = family.and_then(|f| f.note.as_deref()) {
        report.detail(note);
    }
}

/// `version < since`, read leniently (`v0.49`, `0.49.0-beta`); unreadable versions are not
/// called old.
fn older_than(version: &str, since: &str) -> bool {
    let read = |v: &str| {
        let v = v.trim().trim_start_matches('v');
        semver::Version::parse(v).ok().or_else(|| {
            let mut parts = v.split(['.', '-', '+']).map(|p| p.parse::<u64>().ok());
            let major = parts.next()??;
            let minor = parts.next().flatten().unwrap_or(0);
            let patch = parts.next().flatten().unwrap_or(0);
            Some(semver::Version::new(major, minor, patch))
        })
    };
    matches!((read(version), read(since)), (Some(v), Some(s)) if v < s)
}

/// When npx runs the agent: the Node.js version, against what the agent's current release
/// needs (on an older Node, npx quietly runs an older release that still installs there).
fn report_node(report: &mut Report, family: Option<&KnownAgent>, command: &[String]) {
    let npx = command
        .first()
        .is_some_and(|p| Path::new(p).file_name().is_some_and(|n| n == "npx"));
    let Some((f, needed)) = family.and_then(|f| Some((f, f.node?))).filter(|_| npx) else {
        return;
    };
    let Some(node) = agents::find_program("node") else {
        report.line(
            Level::Warn,
            "Node.js",
            "`node` is not on PATH (npx needs it)",
        );
        report.fix(format!("install Node.js {needed} or newer"));
        return;
    };
    let version = std::process::Command::new(&node)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    let major = version.as_deref().and_then(|v| {
        v.trim_start_matches('v')
            .split('.')
            .next()?
            .parse::<u64>()
            .ok()
    });
    match (version, major) {
        (Some(v), Some(m)) if m >= needed => report.line(Level::Ok, "Node.js", v),
        (Some(v), Some(_)) => {
            report.line(
                Level::Warn,
                "Node.js",
                format!(
                    "{v}: the current {} adapter needs Node.js {needed} or newer, so npx runs an \
                     older release of it (the version above)",
                    f.name
                ),
            );
            report.fix(format!(
                "install Node.js {needed} or newer, then run this check again"
            ));
        }
        _ => report.line(
            Level::Warn,
            "Node.js",
            format!("cannot tell the version of {}", node.display()),
        ),
    }
}

fn report_flavour(report: &mut Report, cfg: &Config, mode: Option<Mode>) {
    let display = match cfg.display {
        Display::Auto => "auto",
        Display::Zed => "zed",
        Display::Acp => "acp",
        Display::Transcript => "transcript",
        Display::Off => "off",
    };
    let setting = format!("display = \"{display}\"");
    match mode {
        Some(Mode::Zed) => report.line(
            Level::Ok,
            "Zed gets",
            format!("subagent cards with child threads served by the proxy ({setting})"),
        ),
        Some(Mode::Transcript) => report.line(
            Level::Info,
            "Zed gets",
            format!(
                "each subagent's work folded into its spawn card, no child threads ({setting})"
            ),
        ),
        Some(Mode::Acp) => {
            report.line(
                Level::Warn,
                "Zed gets",
                format!(
                    "standard ACP subagent updates as they are ({setting}): Zed 1.18 rejects them"
                ),
            );
            report.fix("set display = \"auto\" (or \"zed\") in the config");
        }
        Some(Mode::Off) => {
            report.line(
                Level::Warn,
                "Zed gets",
                format!("the agent's traffic unchanged, no subagent cards ({setting})"),
            );
            report.fix("set display = \"auto\" in the config");
        }
        None => report.line(
            Level::Warn,
            "Zed gets",
            "undecided (the engine saw no initialize)",
        ),
    }
}
