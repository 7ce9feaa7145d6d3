//! `acp-proxy`: command-line entry.

// System calls belong to the library's platform layer (`acp_proxy::platform`).
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Parser, Subcommand};

use acp_proxy::config::{self, Config, ConfigSource};
use acp_proxy::dump::Dump;
use acp_proxy::engine::Engine;
use acp_proxy::store::{self, Store, StoreConfig, StoreLocation, StoreOp};
use acp_proxy::transport::relay::{self, RelayOptions};

mod cli;

/// An ACP proxy between your editor and any ACP agent: it shows the agent's subagents as real
/// subagents in the editor and relays everything else unchanged.
///
/// Wrap an agent in Zed's settings:
///   "agent_servers": { "Claude (subagents)": { "type": "custom",
///     "command": "/path/to/acp-proxy", "args": ["--", "npx", "@agentclientprotocol/claude-agent-acp"] } }
/// or let acp-proxy add it: `acp-proxy setup zed --agent claude --write`.
///
/// Without an agent command, the built-in demo agent is used.
#[derive(Parser, Debug)]
#[command(name = "acp-proxy", version, verbatim_doc_comment)]
struct Cli {
    /// Config file (default: $XDG_CONFIG_HOME/acp-proxy/proxy.toml, else
    /// ~/.config/acp-proxy/proxy.toml, if present; never ./proxy.toml).
    #[arg(long, value_name = "PATH", global = true)]
    config: Option<PathBuf>,

    /// Write a JSONL dump of all traffic to PATH (mode 0600, secrets redacted by default).
    #[arg(long, value_name = "PATH")]
    dump: Option<PathBuf>,

    /// Log level for stderr: error, warn, info, debug, trace (overrides the config).
    #[arg(long, value_name = "LEVEL", global = true)]
    log_level: Option<String>,

    /// Child-transcript store: an SQLite file, or `memory` (overrides `[store] path`).
    #[arg(long, value_name = "PATH", global = true)]
    store: Option<StoreLocation>,

    /// The agent to run, after `--`: e.g. `-- npx @agentclientprotocol/claude-agent-acp`.
    #[arg(last = true, value_name = "AGENT COMMAND")]
    agent: Vec<String>,

    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Validate the config (PATH, else the one the proxy reads) and print the effective
    /// settings as TOML.
    CheckConfig {
        /// Config file to check.
        path: Option<PathBuf>,
    },
    /// Add acp-proxy to an editor's settings: `acp-proxy setup zed --agent claude --write`.
    Setup {
        #[command(subcommand)]
        target: cli::setup_zed::SetupTarget,
    },
    /// Start an agent once as Zed would and report what Zed will get from it.
    Doctor(cli::doctor::DoctorArgs),
    /// Print a shell completion script, e.g. `acp-proxy completions bash`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// List the subagent presets (shipped, and from the config) and what each matches.
    Presets,
    /// Show what Zed would display for the demo agent's subagents.
    ///
    /// A scripted Zed-like client drives the proxy over the built-in demo agent (two
    /// subagents) and prints the parent thread with its subagent cards, then each child
    /// thread with the index range its card points at.
    Demo {
        /// Extra proxy flags, e.g. `--config proxy.toml`.
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
        #[command(subcommand)]
        command: StoreCommand,
    },
    /// Read a traffic dump: view, stats, check, html.
    Dump(acp_proxy::dump_tools::cli::DumpArgs),
    /// Feed a dump's inputs through the engine offline and print what the client gets.
    Replay(acp_proxy::dump_tools::cli::ReplayArgs),
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
    /// Append COUNT updates to one child in batches, printing `committed N` after each
    /// committed batch (used by the store's crash and concurrency tests).
    #[command(hide = true)]
    BenchWriter {
        #[arg(long, value_name = "PATH")]
        path: PathBuf,
        #[arg(long, value_name = "CHILD")]
        child: String,
        #[arg(long, value_name = "N")]
        count: u64,
        /// Updates per committed batch.
        #[arg(long, value_name = "N", default_value_t = 7)]
        batch: u64,
        /// Stop after this long even if COUNT is not reached.
        #[arg(long, value_name = "MS")]
        duration_ms: Option<u64>,
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
    if cli.command.is_some() {
        if cli.dump.is_some() {
            anyhow::bail!("--dump applies only when running the proxy, not with a subcommand");
        }
        if !cli.agent.is_empty() {
            anyhow::bail!(
                "an agent command applies only when running the proxy, not with a subcommand"
            );
        }
    }
    match cli.command {
        Some(Command::CheckConfig { path }) => cli::check_config::run(
            path.or(cli.config).as_deref(),
            cli::check_config::Overrides {
                log_level: cli.log_level,
                store: cli.store,
            },
        ),
        Some(Command::Setup { target }) => cli::setup_zed::run(target, cli.config.as_deref()),
        Some(Command::Doctor(args)) => cli::doctor::run(
            args,
            cli::doctor::Overrides {
                config: cli.config.as_deref(),
                store: cli.store,
            },
        ),
        Some(Command::Completions { shell }) => {
            use clap::CommandFactory;
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "acp-proxy", &mut script);
            cli::emit(&script)?;
            Ok(0)
        }
        Some(Command::Presets) => {
            let cfg = Config::load(cli.config.as_deref())?;
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
            acp_proxy::devtools::demo::run(&proxy_args)?;
            Ok(0)
        }
        Some(Command::DemoAgent { script }) => {
            acp_proxy::devtools::demo_agent::run(script.as_deref())?;
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
        Some(Command::Dump(args)) => acp_proxy::dump_tools::cli::dump(args, cli.config.as_deref()),
        Some(Command::Replay(args)) => {
            acp_proxy::dump_tools::cli::replay(args, cli.config.as_deref())
        }
        Some(Command::Store { command }) => {
            let source = ConfigSource::locate(cli.config.as_deref());
            let mut cfg = Config::load_from(&source)?;
            if let Some(level) = cli.log_level {
                cfg.log_level = level;
            }
            let _log = init_tracing(&cfg.log_level)?;
            warn_if_local_config_ignored(&source);
            if let Some(location) = cli.store {
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
            warn_if_local_config_ignored(&source);
            if let Some(path) = cli.dump {
                cfg.dump.path = Some(path);
            }
            if let Some(location) = cli.store {
                cfg.store.location = Some(location);
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
                print!("{}", store::render_stats(&store.stats()?));
            }
            Ok(0)
        }
        StoreCommand::Prune { max_age, max_bytes } => {
            let max_age = max_age.unwrap_or(cfg.max_age);
            let max_bytes = max_bytes.unwrap_or(cfg.max_bytes);
            if let Some(store) = open_existing(&cfg)? {
                let report = store.prune(max_age, max_bytes)?;
                print!("{}", store::render_prune(store.location(), &report));
            }
            Ok(0)
        }
        StoreCommand::BenchWriter {
            path,
            child,
            count,
            batch,
            duration_ms,
        } => {
            cfg.location = Some(StoreLocation::Path(path));
            let store = Store::open(&cfg)?;
            bench_writer(&store, &child, count, batch.max(1), duration_ms)?;
            Ok(0)
        }
    }
}

/// Write `count` updates `{"n":1}`, `{"n":2}`, ... to `child`, flushing every `batch` and
/// printing `committed N` once update N is committed.
fn bench_writer(
    store: &Store,
    child: &str,
    count: u64,
    batch: u64,
    duration_ms: Option<u64>,
) -> anyhow::Result<()> {
    use std::io::Write;
    let deadline = duration_ms.map(|ms| Instant::now() + Duration::from_millis(ms));
    store.submit(StoreOp::UpsertChild {
        child_id: child.to_owned(),
        parent_session_id: "bench".to_owned(),
        spawn_tool_call_id: format!("bench-{child}"),
        agent: "bench-writer".to_owned(),
        cwd: None,
        title: None,
        tool_name: None,
        state: acp_proxy::store::ChildState::Running,
    });
    let mut stdout = std::io::stdout().lock();
    let mut n = 0;
    while n < count && deadline.is_none_or(|d| Instant::now() < d) {
        let end = (n + batch).min(count);
        while n < end {
            n += 1;
            store.submit(StoreOp::AppendUpdate {
                child_id: child.to_owned(),
                update: format!(
                    r#"{{"sessionUpdate":"agent_message_chunk","n":{n},"content":{{"type":"text","text":"update {n} of {child}"}}}}"#
                )
                .into(),
            });
        }
        store.flush().context("flush failed")?;
        writeln!(stdout, "committed {n}")?;
        stdout.flush()?;
    }
    Ok(())
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
