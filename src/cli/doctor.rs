//! `acp-proxy doctor -- <agent command>`: start the agent once as the proxy would for Zed
//! (Zed's `initialize`, through the proxy's own engine), and report what decides whether Zed
//! shows its subagents: the agent's identity and protocol version, `loadSession`, how its
//! subagents are recognised, the display flavour, and where the store, dump and config are.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

use acp_proxy::config::{Config, Display};
use acp_proxy::engine::{Action, Engine, Mode};
use acp_proxy::store::{self, StoreLocation};
use acp_proxy::transport::child::{self, Agent};
use acp_proxy::transport::framing::{line_body, Frame, LineCodec};

use super::agents::{self, KnownAgent};
use super::{absolute, shell_line};

#[derive(clap::Args, Debug)]
pub struct DoctorArgs {
    /// A known agent instead of a command (see `acp-proxy setup zed --list`).
    #[arg(long, value_name = "NAME", conflicts_with = "command")]
    agent: Option<String>,
    /// How long the agent may take to answer `initialize` (npx may download it first):
    /// seconds, or a number followed by s, m or h.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = store::parse_duration)]
    timeout: Duration,
    /// The agent to check, after `--`: e.g. `-- npx @agentclientprotocol/claude-agent-acp`.
    #[arg(last = true, value_name = "AGENT COMMAND")]
    command: Vec<String>,
}

/// Zed's `initialize` as Zed 1.18 sends it (`clientInfo.name` "zed", its capabilities). The
/// engine then adds what the proxy adds for Zed (the subagents opt-in).
fn zed_initialize() -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": 1,
            "clientCapabilities": {
                "fs": {"readTextFile": true, "writeTextFile": true},
                "terminal": true,
                "_meta": {"terminal_output": true, "terminal-auth": true}
            },
            "clientInfo": {"name": "zed", "title": "Zed", "version": "1.18.0"}
        }
    })
}

/// Lines of the agent's stderr kept to show when it fails.
const STDERR_TAIL: usize = 12;

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
    let (known, command) = match &args.agent {
        Some(name) => {
            let a = agents::by_name(name)
                .with_context(|| format!("unknown agent `{name}` (known: {})", agents::ids()))?;
            (Some(a), a.command.clone())
        }
        None if args.command.is_empty() => anyhow::bail!(
            "give the agent to check after `--` (e.g. `acp-proxy doctor -- npx \
             @agentclientprotocol/claude-agent-acp`), or `--agent NAME` ({})",
            agents::ids()
        ),
        None => (agents::by_command(&args.command), args.command.clone()),
    };
    say!("acp-proxy doctor: {}", shell_line(&command));
    let setup_args = match &args.agent {
        Some(_) => format!("--agent {}", known.map_or("", |a| a.id.as_str())),
        None => format!("-- {}", shell_line(&command)),
    };
    let mut report = Report::default();
    let Some(cfg) = check_config(&mut report, overrides) else {
        return Ok(finish(&report, &setup_args));
    };
    if let Some(program) = check_program(&mut report, known, &command) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        let outcome = runtime.block_on(initialize(&cfg, &command, args.timeout));
        runtime.shutdown_background();
        report_agent(&mut report, &cfg, known, &program, outcome);
    }
    report_store_and_dump(&mut report, &cfg);
    Ok(finish(&report, &setup_args))
}

/// `setup zed` arguments for the same agent: `--agent NAME` when it was named, else its command.
fn finish(report: &Report, setup_args: &str) -> i32 {
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
    say!("Ready for Zed{warned}. Add it with: acp-proxy setup zed --write {setup_args}");
    0
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

/// How the one `initialize` went.
enum Outcome {
    SpawnFailed(String),
    Answered {
        response: Value,
        elapsed: Duration,
        mode: Option<Mode>,
        noise: Option<String>,
    },
    /// The agent wrote something that is not the answer, then closed stdout or exited.
    Ended {
        status: String,
        stderr: Vec<String>,
        noise: Option<String>,
    },
    TimedOut {
        stderr: Vec<String>,
        noise: Option<String>,
    },
}

/// Spawn the agent, send it what the proxy sends for Zed's `initialize`, wait for the answer,
/// and stop the agent the way the proxy does when Zed goes away.
async fn initialize(cfg: &Config, command: &[String], timeout: Duration) -> Outcome {
    let mut engine = Engine::new(cfg.engine_config());
    let mut actions = Vec::new();
    let request = Bytes::from(format!("{}\n", zed_initialize()));
    engine.from_client(request, 0, &mut actions);
    let to_agent: Vec<Bytes> = actions
        .into_iter()
        .filter_map(|a| match a {
            Action::ToAgent(b) => Some(b),
            _ => None,
        })
        .collect();

    let started = Instant::now();
    let agent = match Agent::spawn(command) {
        Ok(a) => a,
        Err(e) => return Outcome::SpawnFailed(e.to_string()),
    };
    let Agent {
        mut child,
        mut stdin,
        stdout,
        stderr,
        pgid,
    } = agent;
    let tail = Arc::new(Mutex::new(VecDeque::new()));
    let stderr_task = tokio::spawn(keep_tail(stderr, tail.clone()));
    let mut frames =
        tokio_util::codec::FramedRead::new(stdout, LineCodec::new(cfg.max_frame_bytes));
    let mut noise = None;
    for frame in &to_agent {
        // An agent that exits at once closes its stdin: that shows below as its end.
        let _ = stdin.write_all(frame).await;
    }
    let _ = stdin.flush().await;
    let deadline = tokio::time::Instant::now() + timeout;
    let answer = loop {
        let next = match tokio::time::timeout_at(deadline, frames.next()).await {
            Err(_) => break None,
            Ok(None) | Ok(Some(Err(_))) => break Some(None),
            Ok(Some(Ok(frame))) => frame,
        };
        let Frame::Line(line) = next else {
            noise.get_or_insert_with(|| "a line longer than max_frame_bytes".to_owned());
            continue;
        };
        let body = line_body(&line);
        if body.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Value>(body) {
            Ok(msg) if msg.get("id") == Some(&json!(0)) && msg.get("method").is_none() => {
                break Some(Some(msg));
            }
            // Notifications and requests before the answer are allowed; Zed handles them.
            Ok(_) => {}
            Err(_) => {
                noise.get_or_insert_with(|| {
                    let text = String::from_utf8_lossy(body);
                    let short: String = text.chars().take(120).collect();
                    short
                });
            }
        }
    };
    let elapsed = started.elapsed();
    drop(stdin);
    let grace = Duration::from_millis(cfg.shutdown.stdin_grace_ms);
    let term = Duration::from_millis(cfg.shutdown.term_grace_ms);
    let status = child::stop(&mut child, pgid, grace, term).await;
    // The agent is gone: its stderr ends (a grandchild holding it open is not waited for).
    let _ = tokio::time::timeout(Duration::from_secs(1), stderr_task).await;
    let stderr_lines = || {
        tail.lock()
            .map(|t| t.iter().cloned().collect())
            .unwrap_or_default()
    };
    match answer {
        Some(Some(response)) => Outcome::Answered {
            response,
            elapsed,
            mode: engine.mode(),
            noise,
        },
        Some(None) => Outcome::Ended {
            status: match status {
                Ok(s) => child::describe_status(&s),
                Err(e) => format!("unknown ({e})"),
            },
            stderr: stderr_lines(),
            noise,
        },
        None => Outcome::TimedOut {
            stderr: stderr_lines(),
            noise,
        },
    }
}

async fn keep_tail(stderr: tokio::process::ChildStderr, tail: Arc<Mutex<VecDeque<String>>>) {
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Ok(mut t) = tail.lock() {
            if t.len() == STDERR_TAIL {
                t.pop_front();
            }
            t.push_back(line);
        }
    }
}

fn report_agent(
    report: &mut Report,
    cfg: &Config,
    known: Option<&KnownAgent>,
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
    report_subagents(report, cfg, family, advertises);
    report_flavour(report, cfg, mode);
}

fn report_subagents(
    report: &mut Report,
    cfg: &Config,
    family: Option<&KnownAgent>,
    advertises: bool,
) {
    let enabled = &cfg.subagents.presets;
    let standard = advertises || family.is_some_and(|f| f.standard);
    let mut ways = Vec::new();
    if standard {
        ways.push(if advertises {
            "standard ACP subagents (it advertises them)".to_owned()
        } else {
            "standard ACP subagents".to_owned()
        });
    }
    let presets: &[String] = family.map_or(&[], |f| f.presets.as_slice());
    for p in presets {
        if enabled.contains(p) {
            ways.push(format!("preset `{p}`"));
        }
    }
    let who = family.map_or_else(|| "not a known agent".to_owned(), |f| f.name.clone());
    if ways.is_empty() {
        let text = match family {
            Some(_) => format!("{who}: no enabled preset recognises its subagents"),
            None => format!(
                "{who}: recognised if it speaks standard ACP subagents or its spawns match an \
                 enabled preset ({})",
                enabled.join(", ")
            ),
        };
        report.line(
            if family.is_some() {
                Level::Warn
            } else {
                Level::Info
            },
            "subagents",
            text,
        );
    } else {
        report.line(
            Level::Ok,
            "subagents",
            format!("{who}: {}", ways.join(", ")),
        );
    }
    for p in presets.iter().filter(|p| !enabled.contains(p)) {
        report.line(
            Level::Warn,
            "subagents",
            format!("preset `{p}` is not in `[subagents] presets`"),
        );
        report.fix(format!(
            "add \"{p}\" to `presets` under [subagents] in the config"
        ));
    }
    if standard && !cfg.zed.opt_in {
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

fn report_store_and_dump(report: &mut Report, cfg: &Config) {
    if cfg.display == Display::Off {
        report.line(Level::Info, "store", "not used (display = \"off\")");
    } else {
        let location = match &cfg.store.location {
            Some(l) => Ok(l.clone()),
            None => store::default_path().map(StoreLocation::Path),
        };
        match location {
            Ok(StoreLocation::Memory) => {
                report.line(
                    Level::Warn,
                    "store",
                    "memory: subagents' threads do not open after a restart",
                );
                report.fix(
                    "drop `--store memory` / `[store] path = \"memory\"` to keep them on disk",
                );
            }
            Ok(StoreLocation::Path(path)) => report_store_path(report, &path),
            Err(e) => {
                report.line(
                    Level::Warn,
                    "store",
                    format!("{e}: transcripts stay in memory"),
                );
                report.fix("set `[store] path` in the config, or HOME / XDG_STATE_HOME");
            }
        }
    }
    match &cfg.dump.path {
        Some(p) if cfg.dump.redact => report.line(
            Level::Info,
            "dump",
            format!("{} (secrets redacted)", p.display()),
        ),
        Some(p) => report.line(
            Level::Warn,
            "dump",
            format!(
                "{} with redaction OFF: it holds secrets in clear",
                p.display()
            ),
        ),
        None => report.line(
            Level::Info,
            "dump",
            "off (--dump PATH or `[dump] path` records the traffic for debugging)",
        ),
    }
}

fn report_store_path(report: &mut Report, path: &Path) {
    if path.exists() {
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        if access(path, libc::R_OK | libc::W_OK) {
            report.line(
                Level::Ok,
                "store",
                format!("{} ({} KiB)", path.display(), size.div_ceil(1024)),
            );
        } else {
            report.line(
                Level::Warn,
                "store",
                format!(
                    "{} is not writable: transcripts would stay in memory",
                    path.display()
                ),
            );
            report.fix("fix its permissions, or choose another file with --store PATH");
        }
        return;
    }
    // It will be created with its folders: the nearest folder that exists must be writable.
    let creatable = path
        .ancestors()
        .skip(1)
        .find(|a| a.exists())
        .is_some_and(|a| a.is_dir() && access(a, libc::W_OK | libc::X_OK));
    if creatable {
        report.line(
            Level::Ok,
            "store",
            format!("{} (created at first use)", path.display()),
        );
    } else {
        report.line(
            Level::Warn,
            "store",
            format!(
                "{} cannot be created: transcripts would stay in memory",
                path.display()
            ),
        );
        report.fix("choose a writable place with --store PATH or `[store] path`");
    }
}

fn access(path: &Path, mode: libc::c_int) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    unsafe { libc::access(c.as_ptr(), mode) == 0 }
}
