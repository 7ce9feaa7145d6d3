//! The command line of the dump tools: `acp-proxy dump view|stats|check|html` and
//! `acp-proxy replay`.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};

use super::annotate::Tracker;
use super::view::{self, Filter};
use acp_proxy::config::Config;
use acp_proxy::dump::reader::{ReadOptions, Reader};
use acp_proxy::subagents::preset::detect::Detector;

#[derive(Args, Debug)]
pub struct DumpArgs {
    #[command(subcommand)]
    pub command: DumpCommand,
}

#[derive(Subcommand, Debug)]
pub enum DumpCommand {
    /// Print the dump as a timeline: time, direction, kind, id, session, method or update
    /// kind, and a one-line summary; responses with their latency, subagent work indented
    /// under its spawn.
    View(ViewArgs),
    /// Frames and bytes per direction and method, request latencies, prompt turns,
    /// subagents, frames that were not JSON, what the proxy rewrote.
    Stats(StatsArgs),
    /// Validate every frame against the ACP schema and against what Zed does, on both
    /// sides of the proxy. Exit status 1 when something is wrong.
    Check(CheckArgs),
    /// Write a self-contained HTML report: lanes, turns, the subagent tree, each frame
    /// before and after the proxy, the check's findings.
    Html(HtmlArgs),
}

#[derive(Args, Debug)]
pub struct FilesArg {
    /// The dump file(s): the parts of a rotated dump are read in order.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Color {
    Auto,
    Always,
    Never,
}

#[derive(Args, Debug, Default)]
pub struct FilterArgs {
    /// Only this session (a prefix is enough) and its subagents.
    #[arg(long, value_name = "ID")]
    pub session: Vec<String>,
    /// Only this method or `sessionUpdate` kind (`*` is a wildcard: `session/*`).
    #[arg(long, value_name = "METHOD")]
    pub method: Vec<String>,
    /// Only this kind: request, response, error, notification, invalid, note, stderr, or a
    /// `sessionUpdate` kind.
    #[arg(long, value_name = "KIND")]
    pub kind: Vec<String>,
    /// Only frames about this tool call (a spawn's subagent included).
    #[arg(long, value_name = "ID")]
    pub tool_call: Vec<String>,
    /// Only this direction: c2p, p2a, a2p, p2c, stderr, note, or a side: client, agent.
    #[arg(long, value_name = "DIR", value_parser = view::parse_direction)]
    pub direction: Vec<Vec<acp_proxy::dump::Direction>>,
    /// Only errors: JSON-RPC errors, frames that are not JSON-RPC, failed tool calls, losses.
    #[arg(long)]
    pub errors: bool,
    /// Only records containing this text.
    #[arg(long, value_name = "TEXT")]
    pub grep: Vec<String>,
    /// From this time on: seconds after the start (`90`, `1.5m`), a UTC time of day
    /// (`14:03:07`) or `2026-12-01T14:03:07Z`.
    #[arg(long, value_name = "TIME", value_parser = view::parse_time)]
    pub from: Option<view::TimeBound>,
    /// Up to this time (same forms as --from).
    #[arg(long, value_name = "TIME", value_parser = view::parse_time)]
    pub to: Option<view::TimeBound>,
}

impl FilterArgs {
    pub fn filter(&self) -> Filter {
        Filter {
            sessions: self.session.clone(),
            methods: self.method.clone(),
            kinds: self.kind.clone(),
            tool_calls: self.tool_call.clone(),
            directions: self.direction.iter().flatten().copied().collect(),
            errors: self.errors,
            grep: self.grep.clone(),
            from: self.from,
            to: self.to,
        }
    }
}

#[derive(Args, Debug)]
pub struct ViewArgs {
    #[command(flatten)]
    pub files: FilesArg,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Print the matching records as they are in the dump (JSONL; `jq -r .frame` gives
    /// the raw frames).
    #[arg(long)]
    pub json: bool,
    /// Keep reading as the dump grows (and across its rotation).
    #[arg(long, short = 'f')]
    pub follow: bool,
    /// Colour: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, value_enum, default_value = "auto")]
    pub color: Color,
}

#[derive(Args, Debug)]
pub struct StatsArgs {
    #[command(flatten)]
    pub files: FilesArg,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    pub files: FilesArg,
    /// Which side to judge: client (client⇄proxy), agent (proxy⇄agent), or both.
    #[arg(long, value_enum, default_value = "both")]
    pub side: super::check::SideArg,
    /// Print the findings as JSONL.
    #[arg(long)]
    pub json: bool,
    /// Also report what Zed would make of the agent's own frames (without the proxy): the
    /// traffic the proxy exists to fix, so not counted as wrong.
    #[arg(long)]
    pub agent_as_zed: bool,
}

#[derive(Args, Debug)]
pub struct HtmlArgs {
    #[command(flatten)]
    pub files: FilesArg,
    /// Where to write the report.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: PathBuf,
    /// Frames longer than this are shortened in the report (the dump keeps them whole).
    #[arg(long, value_name = "BYTES", default_value_t = 64 * 1024)]
    pub max_frame_chars: usize,
}

#[derive(Args, Debug)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub files: FilesArg,
    /// Compare the replay with what the dump recorded; exit status 1 if they differ.
    #[arg(long)]
    pub diff: bool,
    /// Write a regression case (the dump's inputs with the outputs it recorded as the
    /// expected ones) into DIR, e.g. `tests/replay`, for the test suite to run.
    #[arg(long, value_name = "DIR")]
    pub emit_test: Option<PathBuf>,
    /// The case's name (default: from the dump's file name).
    #[arg(long, value_name = "NAME", requires = "emit_test")]
    pub name: Option<String>,
    /// Print the frames to the agent as well as those to the client.
    #[arg(long)]
    pub both: bool,
}

fn open(files: &FilesArg, follow: bool) -> anyhow::Result<Reader> {
    Ok(Reader::open(
        &files.files,
        ReadOptions {
            follow,
            // A followed dump has no end to measure progress against.
            progress: !follow,
        },
    )?)
}

/// The settings the dump was recorded with (its header), unless a config is given.
pub fn settings(reader: &Reader, explicit: Option<&Path>) -> anyhow::Result<Config> {
    if let Some(path) = explicit {
        return Ok(Config::from_file(path)?);
    }
    match reader.first().and_then(|f| f.config.clone()) {
        Some(v) => Config::from_settings(v).context(
            "the settings in the dump's header cannot be read: give the config with --config",
        ),
        None => Ok(Config::default()),
    }
}

/// Every preset the config knows (or the ones it names): a dump may hold any agent's traffic.
pub fn tracker_for(cfg: &Config) -> Tracker {
    let set = cfg.subagents.preset_set();
    let presets = match &cfg.subagents.presets {
        Some(names) => names.iter().filter_map(|n| set.get(n).cloned()).collect(),
        None => set.iter().cloned().collect(),
    };
    Tracker::new(Detector::new(presets))
}

/// `acp-proxy dump …`. Returns the exit status.
pub fn dump(args: DumpArgs, config: Option<&Path>) -> anyhow::Result<i32> {
    match args.command {
        DumpCommand::View(a) => {
            let mut reader = open(&a.files, a.follow)?;
            let cfg = settings(&reader, config)?;
            let mut tracker = tracker_for(&cfg);
            let stdout = std::io::stdout();
            let color = match a.color {
                Color::Always => true,
                Color::Never => false,
                Color::Auto => {
                    stdout.is_terminal()
                        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                }
            };
            let output = if a.json {
                view::Output::Records
            } else {
                view::Output::Timeline { color }
            };
            let mut out = std::io::BufWriter::new(stdout.lock());
            match view::run(
                &mut reader,
                &mut tracker,
                &a.filter.filter(),
                output,
                &mut out,
            ) {
                Ok(_) => Ok(0),
                Err(e) if is_broken_pipe(&e) => Ok(0),
                Err(e) => Err(e),
            }
        }
        DumpCommand::Stats(a) => {
            let mut reader = open(&a.files, false)?;
            let cfg = settings(&reader, config)?;
            let mut tracker = tracker_for(&cfg);
            print!("{}", super::stats::run(&mut reader, &mut tracker)?);
            Ok(0)
        }
        DumpCommand::Check(a) => {
            let mut reader = open(&a.files, false)?;
            let cfg = settings(&reader, config)?;
            let mut tracker = tracker_for(&cfg);
            let opts = super::check::Options {
                side: a.side,
                agent_as_zed: a.agent_as_zed,
            };
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            let summary = super::check::run(&mut reader, &mut tracker, &opts, a.json, &mut out)?;
            Ok(if summary.errors > 0 { 1 } else { 0 })
        }
        DumpCommand::Html(a) => {
            let mut reader = open(&a.files, false)?;
            let cfg = settings(&reader, config)?;
            let mut tracker = tracker_for(&cfg);
            let written =
                super::html::write(&mut reader, &mut tracker, &a.output, a.max_frame_chars)?;
            eprintln!(
                "acp-proxy: wrote {} ({} rows, {} findings)",
                a.output.display(),
                written.rows,
                written.findings
            );
            Ok(0)
        }
    }
}

/// `acp-proxy replay …`. Returns the exit status.
pub fn replay(args: ReplayArgs, config: Option<&Path>) -> anyhow::Result<i32> {
    super::replay::command(&args, config)
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
