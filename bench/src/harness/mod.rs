//! The harness: the `acp-bench` command line and the `run` tables; `client` measures one relay
//! on one workload, `agent` plays the agent, `gen` writes the traffic, `engine_only` and
//! `bound` are the profiling subcommands.

mod agent;
mod bound;
mod client;
mod engine_only;
mod gen;
mod mapped;
mod wire;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::{Parser, Subcommand};

use client::{Env, Outcome, Relay, Work};
use gen::Profile;

#[derive(Parser, Debug)]
#[command(
    name = "acp-bench",
    about = "Benchmark acp-proxy against cat and a direct pipe"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Measure every configuration and print the tables.
    Run(RunArgs),
    /// Play the agent side (spawned by `run`, directly or behind the relay under test).
    Agent(agent::AgentArgs),
    /// Write a traffic stream and print its summary.
    Gen {
        #[arg(long, default_value = "mix")]
        profile: String,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long, default_value = "64M")]
        bytes: String,
        #[arg(long, default_value = "target/acp-bench")]
        dir: PathBuf,
    },
    /// Run the engine alone over a stream (no processes, pipes or store), for profiling.
    Engine {
        #[arg(long, default_value = "subagents")]
        profile: String,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long, default_value = "128M")]
        bytes: String,
        /// zed or off
        #[arg(long, default_value = "zed")]
        display: String,
        #[arg(long, default_value_t = 3)]
        reps: usize,
        #[arg(long, default_value = "target/acp-bench")]
        dir: PathBuf,
        /// Also write what the engine did (lines to the client, store writes, other actions)
        /// to this file, to compare two builds' output byte for byte (the rates then include
        /// the writing).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// What single passes over a stream's bytes cost in memory (copy, line split, key
    /// searches): the bounds the relay's own work is measured against.
    Bound {
        #[arg(long, default_value = "mix")]
        profile: String,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long, default_value = "256M")]
        bytes: String,
        #[arg(long, default_value_t = 5)]
        reps: usize,
        #[arg(long, default_value = "target/acp-bench")]
        dir: PathBuf,
    },
}

#[derive(clap::Args, Debug)]
struct RunArgs {
    /// A few MiB, two repetitions: proves the harness works (CI).
    #[arg(long)]
    quick: bool,
    /// Memory profile instead of the throughput/latency tables: peak RSS for a short and a
    /// long stream, and for a session with few and with many finished subagents.
    #[arg(long)]
    memory: bool,
    /// Bytes of traffic per stream run (suffixes K, M, G = KiB, MiB, GiB). Default 1G, quick 8M.
    #[arg(long)]
    bytes: Option<String>,
    /// Repetitions of every configuration. Default 5, quick 2.
    #[arg(long)]
    reps: Option<usize>,
    /// Ping-pong round trips per latency run. Default 20000, quick 2000.
    #[arg(long)]
    pings: Option<u64>,
    /// Seed of the generated traffic.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Relays to run, comma-separated: direct,cat,off,zed (and baseline-off, baseline-zed: see
    /// --baseline-proxy).
    #[arg(long, default_value = "direct,cat,off,zed")]
    relays: String,
    /// Traffic profiles for the stream runs, comma-separated: mix,subagents,flood.
    #[arg(long, default_value = "mix,subagents,flood")]
    traffic: String,
    /// Finished subagents in the long memory-profile session. Default 10000, quick 1000.
    #[arg(long)]
    subagents: Option<u64>,
    /// Where streams, configs and logs go.
    #[arg(long, default_value = "target/acp-bench")]
    workdir: PathBuf,
    /// The acp-proxy binary (default: next to this binary).
    #[arg(long)]
    proxy: Option<PathBuf>,
    /// A second acp-proxy binary, run as relays `baseline-off` / `baseline-zed`: before/after
    /// numbers from the same run.
    #[arg(long)]
    baseline_proxy: Option<PathBuf>,
    /// Where `display = "zed"` keeps child transcripts: `file` (a fresh SQLite file per run,
    /// as users get) or `memory` (SQLite in memory: the store's cost without the disk)
    #[arg(long, default_value = "file", value_parser = ["file", "memory"])]
    store: String,
}

/// A debug build (the bench and, next to it, the proxy): its numbers mean nothing for speed.
const DEBUG_BUILD: bool = cfg!(debug_assertions);

/// A target's verdict: met or missed, or not judged at all in a debug build.
fn mark(ok: bool) -> &'static str {
    match (DEBUG_BUILD, ok) {
        (true, _) => "not judged (debug build)",
        (false, true) => "ok",
        (false, false) => "MISSED",
    }
}

pub(crate) fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Cmd::Run(args) => run(args),
        Cmd::Agent(args) => agent::run(args),
        Cmd::Gen {
            profile,
            seed,
            bytes,
            dir,
        } => (|| {
            let s = gen::ensure(&dir, Profile::parse(&profile)?, seed, parse_size(&bytes)?)?;
            println!("{}\n{:#?}", s.path.display(), s.summary);
            Ok(())
        })(),
        Cmd::Engine {
            profile,
            seed,
            bytes,
            display,
            reps,
            dir,
            out,
        } => (|| {
            let dir = dir.join("traffic");
            let profile = Profile::parse(&profile)?;
            let bytes = parse_size(&bytes)?;
            engine_only::run(&dir, profile, seed, bytes, &display, reps, out.as_deref())
        })(),
        Cmd::Bound {
            profile,
            seed,
            bytes,
            reps,
            dir,
        } => (|| {
            let dir = dir.join("traffic");
            bound::run(
                &dir,
                Profile::parse(&profile)?,
                seed,
                parse_size(&bytes)?,
                reps,
            )
        })(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("acp-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn parse_size(s: &str) -> anyhow::Result<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last() {
        Some('K' | 'k') => (&s[..s.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&s[..s.len() - 1], 1 << 20),
        Some('G' | 'g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    let n: f64 = num
        .parse()
        .with_context(|| format!("`{s}` is not a size (e.g. 8M, 1G)"))?;
    Ok((n * mult as f64) as u64)
}

fn timeout_for(bytes: u64) -> Duration {
    // Generous: only a stalled relay should ever hit it.
    Duration::from_secs(60 + bytes / (5 << 20))
}

struct Stats {
    med: f64,
    min: f64,
    max: f64,
}

fn stats(v: &[f64]) -> Option<Stats> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let med = if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    };
    Some(Stats {
        med,
        min: s[0],
        max: s[n - 1],
    })
}

fn fmt_stats(v: &[f64], prec: usize) -> String {
    match stats(v) {
        Some(s) if v.len() > 1 => format!("{:.p$} ({:.p$}–{:.p$})", s.med, s.min, s.max, p = prec),
        Some(s) => format!("{:.p$}", s.med, p = prec),
        None => "–".into(),
    }
}

fn pct(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i] as f64
}

fn env(args: &RunArgs) -> anyhow::Result<Env> {
    let bench_exe = std::env::current_exe().context("cannot locate the acp-bench binary")?;
    let proxy_exe = match &args.proxy {
        Some(p) => p.clone(),
        None => bench_exe.with_file_name("acp-proxy"),
    };
    if !proxy_exe.is_file() {
        bail!(
            "no acp-proxy binary at {} (build it, or pass --proxy)",
            proxy_exe.display()
        );
    }
    std::fs::create_dir_all(&args.workdir)?;
    let workdir = args.workdir.canonicalize()?;
    // Stores left by an invocation that did not finish.
    for entry in std::fs::read_dir(&workdir)?.flatten() {
        if entry.file_name().to_string_lossy().starts_with("stores-") {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    let stores = workdir.join(format!("stores-{}", std::process::id()));
    std::fs::create_dir_all(&stores)?;
    Ok(Env {
        bench_exe,
        proxy_exe,
        baseline_exe: args.baseline_proxy.clone(),
        store_in_memory: args.store == "memory",
        workdir,
        stores,
        seed: args.seed,
    })
}

/// Removes this invocation's stores when it ends, however it ends.
struct RemoveStores(PathBuf);

impl Drop for RemoveStores {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run(args: RunArgs) -> anyhow::Result<()> {
    let env = env(&args)?;
    let _stores = RemoveStores(env.stores.clone());
    let relays: Vec<Relay> = args
        .relays
        .split(',')
        .map(Relay::parse)
        .collect::<Result<_, _>>()?;
    if args.memory {
        return memory(&args, &env, &relays);
    }
    let bytes = parse_size(
        args.bytes
            .as_deref()
            .unwrap_or(if args.quick { "8M" } else { "1G" }),
    )?;
    let reps = args.reps.unwrap_or(if args.quick { 2 } else { 5 }).max(1);
    let pings = args.pings.unwrap_or(if args.quick { 2000 } else { 20000 });
    let profiles: Vec<Profile> = args
        .traffic
        .split(',')
        .map(Profile::parse)
        .collect::<Result<_, _>>()?;

    let mut streams = Vec::new();
    for p in &profiles {
        eprintln!(
            "generating {} traffic ({} bytes, seed {})…",
            p.name(),
            bytes,
            args.seed
        );
        let s = gen::ensure(&env.workdir.join("traffic"), *p, args.seed, bytes)?;
        eprintln!(
            "  {} frames, {} permission requests, {} child frames ({:.0}%), {} subagents, {} frames of 1 MiB",
            s.summary.frames,
            s.summary.permission_requests,
            s.summary.child_frames,
            100.0 * s.summary.child_frames as f64 / s.summary.frames as f64,
            s.summary.subagents,
            s.summary.big_frames
        );
        streams.push(s);
    }

    // results[(traffic index, relay)] = one Outcome per repetition
    let mut tput: BTreeMap<(usize, usize), Vec<Outcome>> = BTreeMap::new();
    let mut lat: BTreeMap<usize, Vec<Outcome>> = BTreeMap::new();
    let timeout = timeout_for(bytes);
    let mut jobs: Vec<(Option<usize>, usize)> = Vec::new();
    for t in 0..streams.len() {
        for r in 0..relays.len() {
            jobs.push((Some(t), r));
        }
    }
    for r in 0..relays.len() {
        jobs.push((None, r));
    }
    for rep in 0..reps {
        // Rotate the order each repetition so slow drift of the machine hits every config.
        let shift = rep * relays.len() % jobs.len().max(1);
        for k in 0..jobs.len() {
            let (t, r) = jobs[(k + shift) % jobs.len()];
            let relay = relays[r];
            match t {
                Some(t) => {
                    let s = &streams[t];
                    let o =
                        client::run(&env, relay, Work::Stream(s), timeout).with_context(|| {
                            format!("{} on {} traffic", relay.name(), profiles[t].name())
                        })?;
                    eprintln!(
                        "rep {}/{reps} {:>9} {:>9}: {:8.1} MB/s",
                        rep + 1,
                        profiles[t].name(),
                        relay.name(),
                        s.summary.bytes as f64 / o.secs / 1e6
                    );
                    tput.entry((t, r)).or_default().push(o);
                }
                None => {
                    let o = client::run(&env, relay, Work::Pings(pings), timeout)
                        .with_context(|| format!("{} ping-pong", relay.name()))?;
                    eprintln!(
                        "rep {}/{reps}  ping-pong {:>9}: p50 {:.1} µs",
                        rep + 1,
                        relay.name(),
                        pct(&o.rtts, 0.5) / 1e3
                    );
                    lat.entry(r).or_default().push(o);
                }
            }
        }
    }

    let cat = relays.iter().position(|r| *r == Relay::Cat);
    let direct = relays.iter().position(|r| *r == Relay::Direct);
    println!();
    println!(
        "acp-bench: {} per stream run, {reps} repetitions, {pings} ping-pongs per latency run, seed {}, {} CPUs",
        human(bytes),
        args.seed,
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
    );
    println!("medians, (min–max) over repetitions; ratios are per repetition against cat on the same traffic");
    if DEBUG_BUILD {
        println!(
            "DEBUG BUILD: these numbers say only that every relay delivered every frame; they \
             mean nothing for speed, and the targets are not judged (scripts/bench.sh measures \
             the release build)"
        );
    }
    println!();
    println!(
        "| traffic | relay | MB/s | kframes/s | × cat | relay CPU s/GB | peak RSS MiB | target |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (t, s) in streams.iter().enumerate() {
        for (r, relay) in relays.iter().enumerate() {
            let Some(os) = tput.get(&(t, r)) else {
                continue;
            };
            let mbs: Vec<f64> = os
                .iter()
                .map(|o| s.summary.bytes as f64 / o.secs / 1e6)
                .collect();
            let kfs: Vec<f64> = os
                .iter()
                .map(|o| s.summary.frames as f64 / o.secs / 1e3)
                .collect();
            let ratio: Vec<f64> = match cat.and_then(|c| tput.get(&(t, c))) {
                Some(cs) => os.iter().zip(cs).map(|(o, c)| c.secs / o.secs).collect(),
                None => Vec::new(),
            };
            let cpu: Vec<f64> = os
                .iter()
                .filter_map(|o| o.relay_cpu_s)
                .map(|c| c / (s.summary.bytes as f64 / 1e9))
                .collect();
            let rss: Vec<f64> = os
                .iter()
                .filter_map(|o| o.relay_hwm_kib)
                .map(|k| k as f64 / 1024.0)
                .collect();
            // The targets: a median ratio to `cat`, and the peak RSS (MiB) of any repetition.
            let need = match (relay, profiles[t]) {
                (Relay::Off, Profile::Flood) => None,
                (Relay::Off, _) => Some((0.9, 20.0)),
                (Relay::Zed, Profile::Mix) => Some((0.9, 32.0)),
                (Relay::Zed, Profile::Flood) => None,
                (Relay::Zed, _) => Some((0.5, 32.0)),
                _ => None,
            };
            let verdict = match (need, stats(&ratio), stats(&rss)) {
                (Some((n, mib)), Some(st), Some(m)) => {
                    format!(
                        "≥ {n}× {}, ≤ {mib} MiB {}",
                        mark(st.med >= n),
                        mark(m.max <= mib)
                    )
                }
                _ => String::new(),
            };
            let changed: u64 = os.iter().map(|o| o.changed_frames + o.extra_frames).sum();
            let note = if changed > 0 {
                format!(" ({} frames changed/added)", changed / os.len() as u64)
            } else {
                String::new()
            };
            println!(
                "| {} | {}{note} | {} | {} | {} | {} | {} | {verdict} |",
                profiles[t].name(),
                relay.name(),
                fmt_stats(&mbs, 0),
                fmt_stats(&kfs, 0),
                fmt_stats(&ratio, 2),
                fmt_stats(&cpu, 2),
                stats(&rss)
                    .map(|s| format!("{:.1}", s.max))
                    .unwrap_or("–".into()),
            );
        }
    }
    flood_table(&streams, &relays, &tput);
    if lat.is_empty() {
        return Ok(());
    }
    println!();
    println!(
        "| relay | round trip p50 / p99 / max µs | added over direct p50 / p99 / max µs | target |"
    );
    println!("|---|---|---|---|");
    let point =
        |os: &[Outcome], p: f64| -> Vec<f64> { os.iter().map(|o| pct(&o.rtts, p) / 1e3).collect() };
    for (r, relay) in relays.iter().enumerate() {
        let Some(os) = lat.get(&r) else { continue };
        let raw = [0.5, 0.99, 1.0]
            .map(|p| fmt_stats(&point(os, p), 1))
            .join(" / ");
        let (added, verdict) = match direct.and_then(|d| lat.get(&d)) {
            Some(ds) if *relay != Relay::Direct => {
                let add = |p: f64| -> Vec<f64> {
                    os.iter()
                        .zip(ds)
                        .map(|(o, d)| (pct(&o.rtts, p) - pct(&d.rtts, p)) / 1e3)
                        .collect()
                };
                let (a50, a99) = (add(0.5), add(0.99));
                let ok = matches!((stats(&a50), stats(&a99)), (Some(x), Some(y)) if x.med <= 10.0 && y.med <= 25.0);
                let v = if matches!(relay, Relay::Off | Relay::Zed) {
                    format!("≤ 10 / 25 {}", mark(ok))
                } else {
                    String::new()
                };
                (
                    [a50, a99, add(1.0)].map(|v| fmt_stats(&v, 1)).join(" / "),
                    v,
                )
            }
            _ => ("–".into(), String::new()),
        };
        println!("| {} | {raw} | {added} | {verdict} |", relay.name());
    }
    Ok(())
}

/// What the relays made of progress floods: frames the client got for the agent's, and what
/// the store took on disk.
fn flood_table(
    streams: &[gen::Stream],
    relays: &[Relay],
    tput: &BTreeMap<(usize, usize), Vec<Outcome>>,
) {
    let floods: Vec<usize> = (0..streams.len())
        .filter(|&t| streams[t].profile == Profile::Flood)
        .collect();
    if floods.is_empty() {
        return;
    }
    println!();
    println!("| traffic | relay | frames from the agent | frames to the client | store MiB |");
    println!("|---|---|---|---|---|");
    for t in floods {
        let s = &streams[t];
        for (r, relay) in relays.iter().enumerate() {
            let Some(os) = tput.get(&(t, r)) else {
                continue;
            };
            let got: Vec<f64> = os.iter().map(|o| o.received_frames as f64).collect();
            let store: Vec<f64> = os
                .iter()
                .filter_map(|o| o.store_bytes)
                .map(|b| b as f64 / (1 << 20) as f64)
                .collect();
            println!(
                "| {} | {} | {} | {} | {} |",
                s.profile.name(),
                relay.name(),
                s.summary.frames,
                fmt_stats(&got, 0),
                fmt_stats(&store, 2)
            );
        }
    }
}

fn human(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
    } else {
        format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
    }
}

/// Peak RSS for short vs long streams and few vs many finished subagents.
fn memory(args: &RunArgs, env: &Env, relays: &[Relay]) -> anyhow::Result<()> {
    let (small, large) = if args.quick {
        (8u64 << 20, 64u64 << 20)
    } else {
        (100u64 << 20, 1u64 << 30)
    };
    let many = args
        .subagents
        .unwrap_or(if args.quick { 1000 } else { 10_000 });
    let few = (many / 10).max(1);
    let cases = [
        (Profile::Mix, small),
        (Profile::Mix, large),
        (Profile::Subagents, small),
        (Profile::Subagents, large),
        (Profile::Churn { subagents: few }, 0),
        (Profile::Churn { subagents: many }, 0),
    ];
    let relays: Vec<Relay> = relays
        .iter()
        .copied()
        .filter(|r| !matches!(r, Relay::Direct))
        .collect();
    println!("| traffic | size | frames | subagents | relay | peak RSS MiB | MB/s |");
    println!("|---|---|---|---|---|---|---|");
    for (profile, bytes) in cases {
        let s = gen::ensure(&env.workdir.join("traffic"), profile, args.seed, bytes)?;
        for relay in &relays {
            let o = client::run(env, *relay, Work::Stream(&s), timeout_for(s.summary.bytes))
                .with_context(|| format!("{} on {}", relay.name(), profile.name()))?;
            println!(
                "| {} | {} | {} | {} | {} | {} | {:.0} |",
                profile.name(),
                human(s.summary.bytes),
                s.summary.frames,
                s.summary.subagents,
                relay.name(),
                o.relay_hwm_kib
                    .map(|k| format!("{:.1}", k as f64 / 1024.0))
                    .unwrap_or("–".into()),
                s.summary.bytes as f64 / o.secs / 1e6
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod verdict_tests {
    use super::*;

    #[test]
    fn a_debug_build_judges_no_target() {
        if DEBUG_BUILD {
            assert_eq!(mark(false), "not judged (debug build)");
            assert_eq!(mark(true), "not judged (debug build)");
        } else {
            assert_eq!(mark(false), "MISSED");
            assert_eq!(mark(true), "ok");
        }
    }
}
