//! The engine alone over a generated stream, with no processes, pipes or store: what the
//! relay's computing costs per byte, to profile it apart from the I/O around it.

use std::time::Instant;

use acp_proxy::engine::{Action, Engine, EngineConfig, SubagentDisplay};
use acp_proxy::store::StoreOp;
use acp_proxy::subagents::preset::select::PresetChoice;
use acp_proxy::subagents::preset::set::PresetSet;
use bytes::Bytes;

use super::gen::{self, Profile, FLOOD_TICK_MS, SESSION_ID};

/// Feed the ACP handshake and then every line of the stream to an engine in `display` mode;
/// print MB/s over `reps` passes (median) and what came out.
pub(crate) fn run(
    dir: &std::path::Path,
    profile: Profile,
    seed: u64,
    bytes: u64,
    display: &str,
    reps: usize,
    out_path: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let mut record = match out_path {
        Some(p) => Some(std::io::BufWriter::new(std::fs::File::create(p)?)),
        None => None,
    };
    let stream = gen::ensure(dir, profile, seed, bytes)?;
    let data = Bytes::from(std::fs::read(&stream.path)?);
    let display = match display {
        "zed" => SubagentDisplay::Zed,
        "off" => SubagentDisplay::Off,
        other => anyhow::bail!("display must be zed or off, not {other}"),
    };
    let presets = match profile.presets() {
        Some(names) => {
            let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
            PresetChoice::named(PresetSet::builtin(), &names).map_err(anyhow::Error::msg)?
        }
        None => PresetChoice::default(),
    };
    // The flood's frames are a tick apart in the agent's time: the engine sees that clock,
    // so progress is paced as it would be live.
    let tick = if profile == Profile::Flood {
        FLOOD_TICK_MS
    } else {
        0
    };
    let mut rates = Vec::new();
    let mut summary = (0usize, 0usize, 0usize, 0usize);
    let mut summary_bytes = 0usize;
    for _ in 0..reps.max(1) {
        let mut engine = Engine::new(EngineConfig {
            display,
            presets: presets.clone(),
            ..EngineConfig::default()
        });
        let mut out: Vec<Action> = Vec::new();
        let client = [
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{},"clientInfo":{"name":"zed"}}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}"#.to_owned(),
        ];
        let agent = [
            r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}"#.to_owned(),
            format!(r#"{{"jsonrpc":"2.0","id":2,"result":{{"sessionId":"{SESSION_ID}"}}}}"#),
        ];
        for (c, a) in client.iter().zip(&agent) {
            engine.from_client(Bytes::from(format!("{c}\n")), 0, &mut out);
            engine.from_agent(&Bytes::from(format!("{a}\n")), None, 0, &mut out);
        }
        out.clear();
        let (mut to_client, mut stored, mut other, mut frames) = (0, 0, 0, 0);
        let mut stored_bytes = 0usize;
        let start = Instant::now();
        let mut pos = 0;
        let mut now = 0;
        while pos < data.len() {
            let end = memchr::memchr(b'\n', &data[pos..]).map_or(data.len(), |i| pos + i + 1);
            now += tick;
            if engine.poll_timeout().is_some_and(|t| t <= now) {
                engine.handle_timeout(now, &mut out);
            }
            engine.from_agent(&data.slice(pos..end), None, now, &mut out);
            frames += 1;
            for a in out.drain(..) {
                if let Some(w) = record.as_mut() {
                    use std::io::Write;
                    match &a {
                        Action::ToClient(b) | Action::Untouched(b) => w.write_all(b)?,
                        other => writeln!(w, "{other:?}")?,
                    }
                }
                match a {
                    Action::ToClient(_) | Action::Untouched(_) => to_client += 1,
                    // A marker: what follows is the line's outcome.
                    Action::Read(_) => {}
                    Action::Store(op) => {
                        stored += 1;
                        if let StoreOp::AppendUpdate { update, .. } = op {
                            stored_bytes += update.len();
                        }
                    }
                    _ => other += 1,
                }
            }
            pos = end;
        }
        let secs = start.elapsed().as_secs_f64();
        rates.push(data.len() as f64 / 1e6 / secs);
        summary = (to_client, stored, other, frames);
        summary_bytes = stored_bytes;
        // One run's record is enough.
        if let Some(mut w) = record.take() {
            use std::io::Write;
            w.flush()?;
        }
    }
    rates.sort_by(f64::total_cmp);
    let median = rates[rates.len() / 2];
    println!(
        "engine alone, {} display, {:.1} MiB: {:.0} MB/s median of {} ({:.0}–{:.0}); {} frames from the agent, {} to the client, {} store writes ({:.2} MiB of updates), {} other actions",
        match display { SubagentDisplay::Zed => "zed", _ => "off" },
        data.len() as f64 / (1024.0 * 1024.0),
        median,
        rates.len(),
        rates[0],
        rates[rates.len() - 1],
        summary.3,
        summary.0,
        summary.1,
        summary_bytes as f64 / (1 << 20) as f64,
        summary.2
    );
    Ok(())
}
