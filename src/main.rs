//! `acp-proxy`: command-line entry.

// System calls belong to the library's platform layer (`acp_proxy::platform`).
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};

use acp_proxy::config::{self, Config, ConfigSource};
use acp_proxy::dump::Dump;
use acp_proxy::engine::Engine;
use acp_proxy::store::{self, Store, StoreConfig, StoreLocation};
use acp_proxy::transport::relay::{self, RelayOptions};
use acp_proxy_tools::{cli, devtools, dump_tools};

/// An ACP proxy between your editor and any ACP agent: it shows the agent's subagents as real
/// subagents in the editor and relays everything else unchanged.
///
/// Wrap an agent in Zed's settings:
///   "agent_servers": { "Claude (subagents)": { "type": "custom",
///     "command": "/path/to/acp-proxy", "args": ["--", "npx", "--yes", "@agentclientprotocol/claude-agent-acp"] } }
/// or let acp-proxy add it: `acp-proxy setup zed --agent claude --write`.
///
/// Without an agent command, the built-in demo agent is used.
#[derive(Parser, Debug)]
#[command(
    name = "acp-proxy",
    version,
    verbatim_doc_comment,
    override_usage = "acp-proxy <COMMAND> [OPTIONS]\n       acp-proxy [OPTIONS] [-- <AGENT COMMAND>...]"
)]
struct Cli {
    /// Config file (default: $XDG_CONFIG_HOME/acp-proxy/proxy.toml, else
    /// ~/.config/acp-proxy/proxy.toml, if present; never ./proxy.toml).
    #[arg(long, value_name = "PATH")]
    config: Option<PathBuf>,

    /// Write a JSONL dump of all traffic to PATH (mode 0600, secrets redacted by default).
    #[arg(long, value_name = "PATH")]
    dump: Option<PathBuf>,

    /// Log level for stderr: error, warn, info, debug, trace (overrides the config).
    #[arg(long, value_name = "LEVEL")]
    log_level: Option<String>,

    /// Child-transcript store: an SQLite file, or `memory` (overrides `[store] path`).
    #[arg(long, value_name = "PATH")]
    store: Option<StoreLocation>,

    /// How subagents are shown: auto, zed, acp, transcript, off (overrides `display`).
    #[arg(long, value_name = "MODE", value_parser = parse_display)]
    display: Option<acp_proxy::engine::SubagentDisplay>,

    /// The agent to run, after `--`: e.g. `-- npx @agentclientprotocol/claude-agent-acp`.
    #[arg(last = true, value_name = "AGENT COMMAND")]
    agent: Vec<String>,

    #[command(subcommand)]
    command: Option<Command>,
}

/// `--config`, on the commands that read the config (and their own subcommands).
#[derive(clap::Args, Debug)]
struct ConfigArg {
    /// Config file (default: $XDG_CONFIG_HOME/acp-proxy/proxy.toml, else
    /// ~/.config/acp-proxy/proxy.toml, if present; never ./proxy.toml).
    #[arg(long, value_name = "PATH", global = true)]
    config: Option<PathBuf>,
}

/// `--log-level`, on the commands that log.
#[derive(clap::Args, Debug)]
struct LogArg {
    /// Log level for stderr: error, warn, info, debug, trace (overrides the config).
    #[arg(long, value_name = "LEVEL", global = true)]
    log_level: Option<String>,
}

/// `--store`, on the commands that look at the store.
#[derive(clap::Args, Debug)]
struct StoreArg {
    /// Child-transcript store: an SQLite file, or `memory` (overrides `[store] path`).
    #[arg(long, value_name = "PATH", global = true)]
    store: Option<StoreLocation>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Validate the config (PATH, else the one the proxy reads) and print the effective
    /// settings as TOML.
    CheckConfig {
        /// Config file to check.
        path: Option<PathBuf>,
        #[command(flatten)]
        config: ConfigArg,
        #[command(flatten)]
        log: LogArg,
        #[command(flatten)]
        store: StoreArg,
    },
    /// Add acp-proxy to an editor's settings: `acp-proxy setup zed --agent claude --write`.
    Setup {
        #[command(flatten)]
        config: ConfigArg,
        #[command(subcommand)]
        target: cli::setup_zed::SetupTarget,
    },
    /// Start an agent once as Zed would and report what Zed will get from it.
    Doctor {
        #[command(flatten)]
        args: cli::doctor::DoctorArgs,
        #[command(flatten)]
        config: ConfigArg,
        #[command(flatten)]
        store: StoreArg,
    },
    /// Print a shell completion script, e.g. `acp-proxy completions bash`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// List the subagent presets (shipped, and from the config) and what each matches.
    Presets {
        #[command(flatten)]
        config: ConfigArg,
    },
    /// Show what Zed would display for the demo agent's subagents.
    ///
    /// A scripted Zed-like client drives the proxy over the built-in demo agent (two
    /// subagents) and prints the parent thread with its subagent cards, then each child
    /// thread with the index range its card points at.
    Demo {
        /// The proxy's own flags, after `--`: --config, --display, --dump, --store (default
        /// `memory`), --log-level (default `warn`); e.g. `acp-proxy demo -- --display transcript`.
        #[arg(last = true)]
        proxy_args: Vec<String>,
    },
    /// Run the built-in scripted ACP agent (used by the demo and the tests).
    #[command(hide = true)]
    DemoAgent {
        /// JSONL script of steps to play instead of the built-in behaviour.
        #[arg(long, value_name = "FILE")]
        script: Option<PathBuf>,
    },
    /// Stop the agent's process group PGID once the proxy that started this process is gone
    /// (started by the proxy itself; see docs/lifecycle.md).
    #[command(hide = true)]
    AgentGuardian {
        pgid: i32,
        stdin_grace_ms: u64,
        term_grace_ms: u64,
    },
    /// Inspect or prune the child-transcript store (`--store PATH` or `[store] path`).
    Store {
        #[command(flatten)]
        config: ConfigArg,
        #[command(flatten)]
        log: LogArg,
        #[command(flatten)]
        store: StoreArg,
        #[command(subcommand)]
        command: StoreCommand,
    },
    /// Read a traffic dump: view, stats, check, html.
    Dump {
        #[command(flatten)]
        config: ConfigArg,
        #[command(subcommand)]
        command: dump_tools::cli::DumpCommand,
    },
    /// Feed a dump's inputs through the engine offline and print what the client gets.
    Replay {
        #[command(flatten)]
        args: dump_tools::cli::ReplayArgs,
        #[command(flatten)]
        config: ConfigArg,
    },
}

impl Command {
    /// The name it is called by, and which of the flags `--config`, `--log-level` and
    /// `--store` it takes (also before its name, as `acp-proxy --store PATH store stats`).
    fn flags(&self) -> (&'static str, [bool; 3]) {
        match self {
            Command::CheckConfig { .. } => ("check-config", [true, true, true]),
            Command::Setup { .. } => ("setup", [true, false, false]),
            Command::Doctor { .. } => ("doctor", [true, false, true]),
            Command::Completions { .. } => ("completions", [false; 3]),
            Command::Presets { .. } => ("presets", [true, false, false]),
            Command::Demo { .. } => ("demo", [false; 3]),
            Command::DemoAgent { .. } => ("demo-agent", [false; 3]),
            Command::AgentGuardian { .. } => ("agent-guardian", [false; 3]),
            Command::Store { .. } => ("store", [true, true, true]),
            Command::Dump { .. } => ("dump", [true, false, false]),
            Command::Replay { .. } => ("replay", [true, false, false]),
        }
    }
}

#[derive(Subcommand, Debug)]
enum StoreCommand {
    /// Print where the store is, its size on disk, and what it holds.
    Stats,
    /// Remove child transcripts not updated within --max-age, then the least recently
    /// updated ones until the store is at most --max-bytes (never one updated within the
    /// last hour), and shrink the file.
    Prune {
        /// Age limit: seconds, or a number followed by s, m, h or d (default: `[store]
        /// max_age`). 0 = no age limit.
        #[arg(long, value_name = "AGE", value_parser = acp_proxy::units::parse_duration)]
        max_age: Option<Duration>,
        /// Size limit: bytes, or a number followed by B, KiB, MiB or GiB (default: `[store]
        /// max_bytes`). 0 = no size limit.
        #[arg(long, value_name = "SIZE", value_parser = acp_proxy::units::parse_bytes)]
        max_bytes: Option<u64>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match real_main(cli) {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(err) => {
            eprintln!("acp-proxy: {}", error_chain(&err));
            ExitCode::from(2)
        }
    }
}

fn real_main(cli: Cli) -> anyhow::Result<i32> {
    // The global flags (--config, --log-level, --store) may come before or after a
    // subcommand; the others only make sense when running the proxy.
    if let Some(command) = &cli.command {
        let (name, takes) = command.flags();
        let given = [
            ("--config", cli.config.is_some()),
            ("--log-level", cli.log_level.is_some()),
            ("--store", cli.store.is_some()),
        ];
        for ((flag, given), takes) in given.into_iter().zip(takes) {
            if given && !takes {
                anyhow::bail!("{flag} means nothing to `acp-proxy {name}`");
            }
        }
        if cli.dump.is_some() {
            anyhow::bail!("--dump applies only when running the proxy, not with a subcommand");
        }
        if cli.display.is_some() {
            anyhow::bail!("--display applies only when running the proxy, not with a subcommand");
        }
        if !cli.agent.is_empty() {
            anyhow::bail!(
                "an agent command applies only when running the proxy, not with a subcommand"
            );
        }
    }
    match cli.command {
        Some(Command::CheckConfig {
            path,
            config,
            log,
            store,
        }) => cli::check_config::run(
            path.or(config.config).or(cli.config).as_deref(),
            cli::check_config::Overrides {
                log_level: log.log_level.or(cli.log_level),
                store: store.store.or(cli.store),
            },
        ),
        Some(Command::Setup { config, target }) => {
            cli::setup_zed::run(target, config.config.or(cli.config).as_deref())
        }
        Some(Command::Doctor {
            args,
            config,
            store,
        }) => cli::doctor::run(
            args,
            cli::doctor::Overrides {
                config: config.config.or(cli.config).as_deref(),
                store: store.store.or(cli.store),
            },
        ),
        Some(Command::Completions { shell }) => {
            use clap::CommandFactory;
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "acp-proxy", &mut script);
            cli::emit(&script)?;
            Ok(0)
        }
        Some(Command::Presets { config }) => {
            let cfg = Config::load(config.config.or(cli.config).as_deref())?;
            let s = &cfg.subagents;
            let text = s.preset_set().render(s.presets.as_deref());
            // Read through `| head`, a closed pipe is the reader's choice, not an error.
            match std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes()) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                r => r.context("cannot write to stdout")?,
            }
            Ok(0)
        }
        Some(Command::Demo { proxy_args }) => {
            devtools::demo::run(&proxy_args)?;
            Ok(0)
        }
        Some(Command::DemoAgent { script }) => {
            devtools::demo_agent::run(script.as_deref())?;
            Ok(0)
        }
        Some(Command::AgentGuardian {
            pgid,
            stdin_grace_ms,
            term_grace_ms,
        }) => Ok(acp_proxy::transport::agent_guardian::run(
            pgid,
            Duration::from_millis(stdin_grace_ms),
            Duration::from_millis(term_grace_ms),
        )),
        Some(Command::Dump { config, command }) => dump_tools::cli::dump(
            dump_tools::cli::DumpArgs { command },
            config.config.or(cli.config).as_deref(),
        ),
        Some(Command::Replay { args, config }) => {
            dump_tools::cli::replay(args, config.config.or(cli.config).as_deref())
        }
        Some(Command::Store {
            config,
            log,
            store,
            command,
        }) => {
            let source = ConfigSource::locate(config.config.or(cli.config).as_deref());
            let mut cfg = Config::load_from(&source)?;
            if let Some(level) = log.log_level.or(cli.log_level) {
                cfg.log_level = level;
            }
            let _log = init_tracing(&cfg.log_level)?;
            warn_if_local_config_ignored(&source);
            if let Some(location) = store.store.or(cli.store) {
                cfg.store.location = Some(location);
            }
            store_command(cfg.store, command)
        }
        None => {
            let source = ConfigSource::locate(cli.config.as_deref());
            let mut cfg = Config::load_from(&source)?;
            if let Some(level) = cli.log_level {
                cfg.log_level = level;
            }
            // Flushes what is queued (briefly) when the proxy ends.
            let _log = init_tracing(&cfg.log_level)?;
            // The built-in demo agent is a demonstration, run where the user happens to be
            // (the repository's own documented `proxy.toml` included): no warning there.
            if !cli.agent.is_empty() {
                warn_if_local_config_ignored(&source);
            }
            if let Some(path) = cli.dump {
                cfg.dump.path = Some(path);
            }
            if let Some(display) = cli.display {
                cfg.display = display;
            }
            if let Some(location) = cli.store {
                cfg.store.location = Some(location);
            }
            if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
                eprintln!("{TERMINAL_NOTE}");
            }
            // Which one runs is decided by the first frame: a chain link runs none.
            let demo_agent = cli.agent.is_empty();
            let agent = if demo_agent {
                let me = std::env::current_exe().context("cannot locate the acp-proxy binary")?;
                vec![me.to_string_lossy().into_owned(), "demo-agent".to_owned()]
            } else {
                cli.agent
            };
            run_proxy(cfg, agent, demo_agent)
        }
    }
}

/// `--display`: the values `display` takes in `proxy.toml`.
fn parse_display(value: &str) -> Result<acp_proxy::engine::SubagentDisplay, String> {
    serde_json::from_value(serde_json::Value::String(value.to_owned()))
        .map_err(|_| "expected auto, zed, acp, transcript or off".to_owned())
}

/// Said on stderr when the proxy is started by hand in a terminal, where it would otherwise
/// wait silently for a client that never comes.
const TERMINAL_NOTE: &str = "acp-proxy speaks ACP (JSON-RPC, one message per line) on stdin and \
stdout: an editor such as Zed starts it. To see what it does, run `acp-proxy demo`; to add it \
to Zed, `acp-proxy setup zed --agent claude --write`; to check an agent, `acp-proxy doctor \
--agent claude`. Waiting for a client on stdin (Ctrl-C quits).";

/// A `proxy.toml` in the working directory is never read (it may come with a cloned
/// repository): say so, in case the user expected it to apply.
fn warn_if_local_config_ignored(source: &ConfigSource) {
    if let Some(note) = config::ignored_local_config(source) {
        tracing::warn!("{note}");
    }
}

fn store_command(mut cfg: StoreConfig, command: StoreCommand) -> anyhow::Result<i32> {
    // The subcommands report exactly what they see and do: no pruning behind their back.
    cfg.background_prune = false;
    let open_existing = |cfg: &StoreConfig| -> anyhow::Result<Option<Store>> {
        let location = match &cfg.location {
            Some(l) => l.clone(),
            None => StoreLocation::Path(store::default_path()?),
        };
        if location == StoreLocation::Memory {
            println!(
                "store: memory (nothing is stored: an in-memory store lives and ends with the \
                 proxy that uses it)"
            );
            return Ok(None);
        }
        if let StoreLocation::Path(path) = &location {
            if !path.exists() {
                println!("store: {} (does not exist yet)", path.display());
                return Ok(None);
            }
        }
        Ok(Some(Store::open(&StoreConfig {
            location: Some(location),
            ..cfg.clone()
        })?))
    };
    match command {
        StoreCommand::Stats => {
            if let Some(store) = open_existing(&cfg)? {
                print!("{}", cli::store::render_stats(&store.stats()?));
            }
            Ok(0)
        }
        StoreCommand::Prune { max_age, max_bytes } => {
            let max_age = max_age.unwrap_or(cfg.max_age);
            let max_bytes = max_bytes.unwrap_or(cfg.max_bytes);
            if let Some(store) = open_existing(&cfg)? {
                let report = store.prune(max_age, max_bytes)?;
                print!("{}", cli::store::render_prune(store.location(), &report));
            }
            Ok(0)
        }
    }
}

/// The error and its causes on one line, without repeating a cause a message already quotes.
fn error_chain(err: &anyhow::Error) -> String {
    let mut text = err.to_string();
    for cause in err.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}

const LOG_QUEUE_LINES: usize = 4096;

/// Logs go to stderr through a writer thread with a bounded, lossy queue: an editor that
/// stops reading our stderr must never stall the relay. The queue's slots are allocated and
/// touched up front (32 bytes each): the library's default of 128 000 lines would be 4 MiB of
/// resident memory in every proxy, where a few thousand lines cover any burst of logs.
fn init_tracing(level: &str) -> anyhow::Result<tracing_appender::non_blocking::WorkerGuard> {
    let filter = tracing_subscriber::EnvFilter::try_new(level)
        .with_context(|| format!("invalid log level `{level}`"))?;
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(true)
        .buffered_lines_limit(LOG_QUEUE_LINES)
        .thread_name("acp-proxy-log")
        .finish(std::io::stderr());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    Ok(guard)
}

fn run_proxy(cfg: Config, agent: Vec<String>, demo_agent: bool) -> anyhow::Result<i32> {
    // Larger heap blocks for the relay's read buffers, where the allocator allows it.
    acp_proxy::platform::keep_read_buffers_mapped();
    // A pure relay keeps nothing; otherwise child transcripts go to the durable store, or
    // to memory (with a warning) if it cannot be used.
    let store = (cfg.display != acp_proxy::engine::SubagentDisplay::Off).then(|| {
        let (store, warning) = Store::open_or_memory(&cfg.store);
        if let Some(w) = warning {
            tracing::warn!("{w}");
        }
        store
    });
    let relay_store = store.clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let result = runtime.block_on(async move {
        let (dump, dump_task) = match &cfg.dump.path {
            Some(path) => {
                let (d, t) = Dump::open(path, &agent, &cfg.dump, cfg.engine_settings())?;
                (Some(d), Some(t))
            }
            None => (None, None),
        };
        let engine_cfg = cfg.engine_config();
        let opts = RelayOptions {
            agent_command: agent,
            demo_agent,
            max_frame_bytes: cfg.max_frame_bytes,
            shutdown: cfg.shutdown.clone(),
            dump,
            store: relay_store,
        };
        let code = relay::run_stdio(opts, Engine::new(engine_cfg)).await?;
        if let Some(task) = dump_task {
            // The relay dropped its dump handle: the writer finishes what is queued.
            let _ = task.await;
        }
        Ok(code)
    });
    // A blocking read of stdin may still be parked on a worker thread: do not wait for it.
    runtime.shutdown_background();
    // Dropping the last handle waits for the writer to commit what is queued.
    drop(store);
    result
}
