//! `acp-proxy`: command-line entry.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

use acp_proxy::config::Config;
use acp_proxy::dump::Dump;
use acp_proxy::engine::Engine;
use acp_proxy::transport::relay::{self, RelayOptions};

/// An ACP proxy between your editor and any ACP agent: it shows the agent's subagents as real
/// subagents in the editor and relays everything else unchanged.
///
/// Wrap an agent in Zed's settings:
///   "agent_servers": { "Claude (subagents)": { "type": "custom",
///     "command": "/path/to/acp-proxy", "args": ["--", "npx", "@agentclientprotocol/claude-agent-acp"] } }
///
/// Without an agent command, the built-in demo agent is used.
#[derive(Parser, Debug)]
#[command(
    name = "acp-proxy",
    version,
    verbatim_doc_comment,
    args_conflicts_with_subcommands = true
)]
struct Cli {
    /// Config file (default: ./proxy.toml if present, else built-in defaults).
    #[arg(long, value_name = "PATH", global = true)]
    config: Option<PathBuf>,

    /// Write a JSONL dump of all traffic to PATH (mode 0600, secrets redacted by default).
    #[arg(long, value_name = "PATH")]
    dump: Option<PathBuf>,

    /// Log level for stderr: error, warn, info, debug, trace (overrides the config).
    #[arg(long, value_name = "LEVEL", global = true)]
    log_level: Option<String>,

    /// The agent to run, after `--`: e.g. `-- npx @agentclientprotocol/claude-agent-acp`.
    #[arg(last = true, value_name = "AGENT COMMAND")]
    agent: Vec<String>,

    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Validate a config file (default: ./proxy.toml) and print the effective settings.
    CheckConfig {
        /// Config file to check.
        path: Option<PathBuf>,
    },
    /// Run the built-in scripted ACP agent (used by the demo and the tests).
    #[command(hide = true)]
    DemoAgent {
        /// JSONL script of steps to play instead of the built-in behaviour.
        #[arg(long, value_name = "FILE")]
        script: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match real_main(cli) {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(err) => {
            eprintln!("acp-proxy: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn real_main(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Some(Command::CheckConfig { path }) => {
            let path = path
                .or(cli.config)
                .unwrap_or_else(|| PathBuf::from("proxy.toml"));
            let cfg = Config::from_file(&path)?;
            println!("{}: ok", path.display());
            println!("{cfg:#?}");
            Ok(0)
        }
        Some(Command::DemoAgent { script }) => {
            acp_proxy::demo_agent::run(script.as_deref())?;
            Ok(0)
        }
        None => {
            let mut cfg = Config::load(cli.config.as_deref())?;
            if let Some(level) = cli.log_level {
                cfg.log_level = level;
            }
            init_tracing(&cfg.log_level)?;
            if let Some(path) = cli.dump {
                cfg.dump.path = Some(path);
            }
            let agent = if cli.agent.is_empty() {
                let me = std::env::current_exe().context("cannot locate the acp-proxy binary")?;
                tracing::info!("no agent command given: using the built-in demo agent");
                vec![me.to_string_lossy().into_owned(), "demo-agent".to_owned()]
            } else {
                cli.agent
            };
            run_proxy(cfg, agent)
        }
    }
}

fn init_tracing(level: &str) -> anyhow::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_new(level)
        .with_context(|| format!("invalid log level `{level}`"))?;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    Ok(())
}

fn run_proxy(cfg: Config, agent: Vec<String>) -> anyhow::Result<i32> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let result = runtime.block_on(async move {
        let (dump, dump_task) = match &cfg.dump.path {
            Some(path) => {
                let (d, t) = Dump::open(path, &agent, cfg.dump.redact, cfg.dump.queue_frames)?;
                (Some(d), Some(t))
            }
            None => (None, None),
        };
        let engine_cfg = cfg.engine_config();
        let opts = RelayOptions {
            agent_command: agent,
            max_frame_bytes: cfg.max_frame_bytes,
            shutdown: cfg.shutdown.clone(),
            dump,
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
    result
}
