//! `acp-proxy replay`: a dump's inputs (what the client and the agent sent) fed through the
//! sans-IO engine offline, with the settings the dump was recorded with (or a given config),
//! and what comes out compared with what the dump recorded.
//!
//! The dump's records are in the order the relay handled them, so every output belongs to
//! the input before it: the comparison is made input by input, and a difference is shown at
//! the input that caused it. Agent lines that came in one read (`same_read`) go to the engine
//! as one run, as they did live; the engine's actions say where each line's outputs start. Child transcripts go to an in-memory store, shared by the dumps
//! of one replay (give the dump of an earlier run first to replay a restart).

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use bytes::Bytes;

use super::cli::ReplayArgs;
use acp_proxy::chain::{self, Chain, Route};
use acp_proxy::config::Config;
use acp_proxy::dump::reader::{FileInfo, Item, ReadOptions, Reader, Record};
use acp_proxy::dump::{recorded_text, Direction};
use acp_proxy::engine::{Action, Engine, EngineConfig};
use acp_proxy::store::{Store, StoreConfig, StoreLocation};

/// One frame or note that came out of the engine (or was recorded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Out {
    pub dir: Direction,
    /// As the dump would record it: the line without its terminator (secrets redacted when
    /// the dump was), or the note's text.
    pub text: String,
}

/// The input being handled, and what it produced live and in the replay.
#[derive(Debug, Default)]
struct Step {
    input: Option<(usize, u64, Direction)>,
    recorded: Vec<(u64, Out)>,
    replayed: Vec<Out>,
}

/// One input whose outputs differ.
#[derive(Debug, Clone)]
pub struct Difference {
    /// The input's position (`file:line`), or the start of the dump.
    pub at: String,
    /// The input: (file index, line, direction).
    pub input: Option<(usize, u64, Direction)>,
    pub input_dir: Option<Direction>,
    /// (the dump's line, what it recorded) and what the replay produced, side by side.
    pub recorded: Vec<(u64, Out)>,
    pub replayed: Vec<Out>,
}

/// What a replay saw and produced.
#[derive(Debug, Default)]
pub struct Report {
    pub inputs: u64,
    /// Agent reads handed to the engine as runs, and the lines in them.
    pub agent_reads: u64,
    pub agent_lines: u64,
    pub to_client: u64,
    pub to_agent: u64,
    pub notes: u64,
    pub differences: Vec<Difference>,
    /// Differences past the ones kept.
    pub more_differences: u64,
    pub lost_frames: u64,
    pub warnings: Vec<String>,
}

/// Differences kept in a report (the rest are counted).
const MAX_DIFFERENCES: usize = 20;

/// Agent lines of one read, gathered until the read ends, then handed to the engine as one
/// run (as the relay does).
#[derive(Debug, Default)]
struct AgentRead {
    run: Vec<u8>,
    now: u64,
    /// The steps of the lines before the last (the last one's is the current step).
    steps: Vec<Step>,
}

/// The engine and what surrounds it in the relay, without the I/O.
pub struct Replayer {
    engine: Engine,
    engine_cfg: EngineConfig,
    store: Store,
    chain: Option<Chain>,
    max_frame: usize,
    redact: bool,
    origin: Option<f64>,
    now: u64,
    /// Per input direction: the last record was a piece of an oversized line.
    continuing: [bool; 2],
    step: Step,
    /// The agent read being gathered.
    read: Option<AgentRead>,
    /// While a read's actions are carried out: the steps of its lines still to come.
    read_steps: Option<VecDeque<Step>>,
    run: Option<String>,
    first_input: bool,
    compare: bool,
    pub report: Report,
    /// Frames out, as they are produced (for printing without a diff).
    pub produced: VecDeque<Out>,
    keep_produced: bool,
}

fn input_index(d: Direction) -> usize {
    usize::from(d == Direction::AgentToProxy)
}

impl Replayer {
    pub fn new(cfg: &Config, compare: bool, keep_produced: bool) -> anyhow::Result<Replayer> {
        let store = Store::open(&StoreConfig {
            location: Some(StoreLocation::Memory),
            background_prune: false,
            ..StoreConfig::default()
        })
        .context("cannot open an in-memory store for the replay")?;
        let engine_cfg = cfg.engine_config();
        Ok(Replayer {
            engine: Engine::new(engine_cfg.clone()),
            engine_cfg,
            store,
            chain: None,
            max_frame: cfg.max_frame_bytes,
            redact: true,
            origin: None,
            now: 0,
            continuing: [false; 2],
            step: Step::default(),
            read: None,
            read_steps: None,
            run: None,
            first_input: true,
            compare,
            report: Report::default(),
            produced: VecDeque::new(),
            keep_produced,
        })
    }

    /// A new dump file: a new run (another proxy process) restarts the engine, over the same
    /// store; the next part of the same run goes on.
    pub fn file(&mut self, info: &FileInfo) {
        self.redact = info.redacted;
        let same_run = info.run.is_some() && info.run == self.run;
        let new_run =
            (!same_run && self.run.is_some()) || (info.run.is_none() && !self.first_input);
        if new_run {
            self.end_read();
            self.close_step();
            self.engine = Engine::new(self.engine_cfg.clone());
            self.chain = None;
            self.origin = None;
            self.first_input = true;
            self.continuing = [false; 2];
        }
        if !same_run && info.part > 1 {
            self.report.warnings.push(format!(
                "{} is part {} of its dump: the replay starts without what came before (give the earlier parts too)",
                info.path.display(),
                info.part
            ));
        }
        self.run = info.run.clone();
    }

    fn ms(&mut self, ts: f64) -> u64 {
        let origin = *self.origin.get_or_insert(ts);
        ((ts - origin) * 1000.0).max(0.0) as u64
    }

    /// One record of the dump.
    pub fn record(&mut self, rec: &Record) {
        let joins = rec.dir.is_input() && self.joins_read(rec);
        if rec.dir.is_input() && !joins {
            self.end_read();
        }
        match rec.dir {
            Direction::ClientToProxy | Direction::AgentToProxy => self.input(rec, joins),
            Direction::ProxyToClient | Direction::ProxyToAgent => {
                self.recorded(rec.line, rec.dir, rec.frame.clone().unwrap_or_default())
            }
            Direction::ProxyNote => {
                if rec.lost_frames > 0 {
                    self.report.lost_frames += rec.lost_frames;
                } else if let Some(n) = &rec.note {
                    self.recorded(rec.line, Direction::ProxyNote, n.clone());
                }
            }
            Direction::AgentStderr => {}
        }
    }

    fn recorded(&mut self, line: u64, dir: Direction, text: String) {
        if self.compare {
            self.step.recorded.push((line, Out { dir, text }));
        }
    }

    /// An input record; `joins`: one more line of the agent read being gathered.
    fn input(&mut self, rec: &Record, joins: bool) {
        let idx = input_index(rec.dir);
        let continuation = self.continuing[idx];
        self.continuing[idx] = rec.partial;
        let now = self.ms(rec.ts);
        if joins {
            // One more line of the read: a step of its own, no time passes.
            self.report.inputs += 1;
            let step = std::mem::take(&mut self.step);
            self.step.input = Some((rec.file, rec.line, rec.dir));
            if let Some(read) = &mut self.read {
                read.steps.push(step);
                read.run
                    .extend_from_slice(rec.frame.as_deref().unwrap_or("").as_bytes());
                read.run.push(b'\n');
            }
            return;
        }
        if !continuation {
            // Time passed before this frame arrived (unless it came in the read before): what
            // waited too long goes first.
            if !rec.same_read {
                self.fire_timers(now);
            }
            self.close_step();
            self.step.input = Some((rec.file, rec.line, rec.dir));
            self.report.inputs += 1;
        }
        self.now = now;
        let text = rec.frame.clone().unwrap_or_default();
        let mut line = text.into_bytes();
        line.push(b'\n');
        let frame = Bytes::from(line);
        let first = std::mem::take(&mut self.first_input);
        if first && rec.dir == Direction::ClientToProxy {
            if let Some(dialect) = chain::chain_initialize(&frame) {
                self.chain = Some(Chain::new(dialect));
            }
        }
        let side = if rec.dir == Direction::ClientToProxy {
            "client"
        } else {
            "agent"
        };
        let mut actions = Vec::new();
        let oversized = rec.partial || continuation || frame.len() > self.max_frame;
        if oversized {
            if self.chain.is_some() {
                // A chain link cannot route a frame it cannot read whole: dropped.
                return;
            }
            if !continuation {
                self.emit(Out {
                    dir: Direction::ProxyNote,
                    text: format!(
                        "a line from the {side} is longer than max_frame_bytes ({}): relayed unchanged in pieces, not inspected",
                        self.max_frame
                    ),
                });
            }
            let body = rec.frame.clone().unwrap_or_default();
            let dest = if rec.dir == Direction::ClientToProxy {
                Direction::ProxyToAgent
            } else {
                Direction::ProxyToClient
            };
            self.emit(Out {
                dir: dest,
                text: body,
            });
            return;
        }
        match &mut self.chain {
            Some(chain) => match chain.route_inbound(frame) {
                Route::Client(inner) => self.engine.from_client(inner, now, &mut actions),
                Route::Agent(inner) => self.engine.from_agent(&inner, None, now, &mut actions),
                Route::Drop(_) => {}
            },
            None if rec.dir == Direction::ClientToProxy => {
                self.engine.from_client(frame, now, &mut actions)
            }
            None => {
                // Handed to the engine when the read ends.
                self.read = Some(AgentRead {
                    run: frame.to_vec(),
                    now,
                    steps: Vec::new(),
                });
                return;
            }
        }
        self.execute(actions);
    }

    /// Whether `rec` is one more line of the agent read being gathered.
    fn joins_read(&self, rec: &Record) -> bool {
        rec.same_read
            && rec.dir == Direction::AgentToProxy
            && self.read.is_some()
            && !rec.partial
            && !self.continuing[input_index(rec.dir)]
            && rec.frame.as_ref().map_or(0, |f| f.len() + 1) <= self.max_frame
    }

    /// The agent read gathered so far goes to the engine as one run, as the relay hands it
    /// over (with what its reader thread finds ahead); each line's outputs are compared with
    /// the ones the dump recorded after that line.
    fn end_read(&mut self) {
        let Some(read) = self.read.take() else {
            return;
        };
        self.report.agent_reads += 1;
        self.report.agent_lines += read.steps.len() as u64 + 1;
        let run = Bytes::from(read.run);
        let ahead = self.engine.models_subagents().then(|| {
            let scanner = self.engine.scanner();
            scanner.reads_new_tool_calls(self.engine.reads_new_tool_calls());
            scanner.scan_run(&run)
        });
        let mut steps: VecDeque<Step> = read.steps.into();
        steps.push_back(std::mem::take(&mut self.step));
        let mut actions = Vec::new();
        self.engine.from_agent(&run, ahead, read.now, &mut actions);
        self.read_steps = Some(steps);
        self.execute(actions);
        // The last line's step stays open: what the proxy did on its own after it (timers)
        // is recorded there.
        if let Some(rest) = self.read_steps.take() {
            for step in rest {
                self.close_step();
                self.step = step;
            }
        }
    }

    /// The engine's outputs now belong to the next line of the read being carried out.
    fn next_line_step(&mut self) {
        let Some(next) = self.read_steps.as_mut().and_then(VecDeque::pop_front) else {
            return;
        };
        self.close_step();
        self.step = next;
    }

    fn fire_timers(&mut self, now: u64) {
        let mut guard = 0;
        while let Some(deadline) = self.engine.poll_timeout() {
            if deadline > now || guard > 10_000 {
                break;
            }
            guard += 1;
            let at = deadline.max(self.now);
            let mut actions = Vec::new();
            self.engine.handle_timeout(at, &mut actions);
            self.now = at;
            self.execute(actions);
        }
    }

    fn emit(&mut self, out: Out) {
        match out.dir {
            Direction::ProxyToClient => self.report.to_client += 1,
            Direction::ProxyToAgent => self.report.to_agent += 1,
            _ => self.report.notes += 1,
        }
        if self.keep_produced {
            self.produced.push_back(out.clone());
        }
        if self.compare {
            self.step.replayed.push(out);
        }
    }

    /// Carry out the engine's actions as the relay does, the store in memory.
    fn execute(&mut self, actions: Vec<Action>) {
        let mut queue: VecDeque<Action> = actions.into();
        while let Some(action) = queue.pop_front() {
            match action {
                Action::ToClient(bytes) => {
                    let text = recorded_text(Direction::ProxyToClient, &bytes, self.redact);
                    if let Some(chain) = &mut self.chain {
                        let _ = chain.wrap_for_predecessor(bytes);
                    }
                    self.emit(Out {
                        dir: Direction::ProxyToClient,
                        text,
                    });
                }
                Action::Untouched(bytes) => {
                    for (a, b) in acp_proxy::wire::lines(&bytes) {
                        let line = bytes.slice(a..b);
                        self.next_line_step();
                        let text = recorded_text(Direction::ProxyToClient, &line, self.redact);
                        if let Some(chain) = &mut self.chain {
                            let _ = chain.wrap_for_predecessor(line);
                        }
                        self.emit(Out {
                            dir: Direction::ProxyToClient,
                            text,
                        });
                    }
                }
                Action::Read(_) => self.next_line_step(),
                Action::ToAgent(bytes) => {
                    let text = recorded_text(Direction::ProxyToAgent, &bytes, self.redact);
                    if let Some(chain) = &mut self.chain {
                        let _ = chain.wrap_for_successor(bytes);
                    }
                    self.emit(Out {
                        dir: Direction::ProxyToAgent,
                        text,
                    });
                }
                Action::Note(note) => self.emit(Out {
                    dir: Direction::ProxyNote,
                    text: note.message,
                }),
                Action::Store(op) => self.store.submit(op),
                Action::FetchChildren { parent_session_id } => {
                    let children = self
                        .store
                        .flush()
                        .and_then(|_| self.store.children_of(&parent_session_id))
                        .unwrap_or_else(|e| {
                            self.report
                                .warnings
                                .push(format!("the replay's store failed: {e}"));
                            Vec::new()
                        });
                    self.engine.restore(children);
                }
                // The agent's records on disk are not in the dump: what they told the engine
                // is (its card and thread updates, after the note the shell wrote). A record
                // asked for a child's id is answered as not found at once, so that the events
                // held for it go on (where the wire alone puts them).
                Action::FollowRecord(watch) if watch.format.ties_ids() => {
                    let mut more = Vec::new();
                    self.engine.record_read(
                        &watch.child,
                        acp_proxy::subagents::records::Record::default(),
                        self.now,
                        &mut more,
                    );
                    for a in more.into_iter().rev() {
                        queue.push_front(a);
                    }
                }
                Action::FollowRecord(_) => {}
                Action::FetchChild { child_id, request } => {
                    let child = self
                        .store
                        .flush()
                        .and_then(|_| self.store.child(child_id.as_str()))
                        .unwrap_or_else(|e| {
                            self.report
                                .warnings
                                .push(format!("the replay's store failed: {e}"));
                            None
                        });
                    let mut more = Vec::new();
                    self.engine
                        .child_fetched(child, request, self.now, &mut more);
                    for a in more.into_iter().rev() {
                        queue.push_front(a);
                    }
                }
            }
        }
    }

    /// Compare what the current input produced, live and here.
    fn close_step(&mut self) {
        let step = std::mem::take(&mut self.step);
        if !self.compare {
            return;
        }
        let recorded: Vec<&Out> = step.recorded.iter().map(|(_, o)| o).collect();
        let replayed: Vec<&Out> = step.replayed.iter().collect();
        if recorded == replayed {
            return;
        }
        if self.report.differences.len() >= MAX_DIFFERENCES {
            self.report.more_differences += 1;
            return;
        }
        self.report.differences.push(Difference {
            at: "the start".to_owned(),
            input: step.input,
            input_dir: step.input.map(|i| i.2),
            recorded: step.recorded,
            replayed: step.replayed,
        });
    }

    /// The end of the dump: timers still due while the dump was written, and the agent's
    /// end if the dump shows the proxy answering for a dead agent.
    pub fn finish(&mut self, last_ts: Option<f64>) {
        self.end_read();
        if let Some(ts) = last_ts {
            let now = self.ms(ts);
            self.fire_timers(now);
        }
        let gone = self.step.recorded.iter().find_map(|(_, o)| {
            let rest = o
                .text
                .split_once("acp-proxy: the agent exited before answering `")?
                .1;
            let reason = rest.split_once("`: ")?.1;
            let reason = reason.split('"').next()?;
            (o.dir == Direction::ProxyToClient).then(|| unescape(reason))
        });
        if let Some(reason) = gone {
            let already = self.step.replayed.iter().any(|o| {
                o.text
                    .contains("acp-proxy: the agent exited before answering")
            });
            if !already {
                let mut actions = Vec::new();
                self.engine.agent_gone(&reason, &mut actions);
                self.execute(actions);
            }
        }
        self.close_step();
    }
}

/// A JSON string's contents back to text (the reason is quoted inside a frame).
fn unescape(s: &str) -> String {
    serde_json::from_str::<String>(&format!("\"{s}\"")).unwrap_or_else(|_| s.to_owned())
}

/// Replay the dump files in order.
pub fn replay_files(
    paths: &[PathBuf],
    config: Option<&Path>,
    compare: bool,
    mut sink: impl FnMut(&Out) -> std::io::Result<()>,
) -> anyhow::Result<(Report, Reader)> {
    let mut reader = Reader::open(
        paths,
        ReadOptions {
            follow: false,
            progress: true,
        },
    )?;
    let cfg = super::cli::settings(&reader, config)?;
    let mut r = Replayer::new(&cfg, compare, true)?;
    let mut last_ts = None;
    while let Some(item) = reader.next_item()? {
        match item {
            Item::File(info) => r.file(&info),
            Item::Record(rec) => {
                last_ts = Some(rec.ts);
                r.record(&rec);
            }
            Item::Bad(b) => r.report.warnings.push(format!(
                "{}: {} (skipped)",
                reader.position(b.file, b.line),
                b.why
            )),
        }
        while let Some(out) = r.produced.pop_front() {
            sink(&out)?;
        }
    }
    r.finish(last_ts);
    while let Some(out) = r.produced.pop_front() {
        sink(&out)?;
    }
    for d in &mut r.report.differences {
        if let Some((file, line, _)) = d.input {
            d.at = reader.position(file, line);
        }
    }
    Ok((r.report, reader))
}

/// Where two texts first differ, shown around that point.
fn first_difference(a: &str, b: &str) -> String {
    let at = a
        .char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map(|((i, _), _)| i)
        .unwrap_or(a.len().min(b.len()));
    let window = |s: &str| {
        let start = s[..at.min(s.len())]
            .char_indices()
            .rev()
            .nth(40)
            .map(|(i, _)| i)
            .unwrap_or(0);
        let tail: String = s[at.min(s.len())..].chars().take(60).collect();
        format!("…{}⟨{}", &s[start..at.min(s.len())], tail)
    };
    format!(
        "first difference at byte {at}:\n      recorded: {}\n      replayed: {}",
        window(a),
        window(b)
    )
}

/// The report of `replay --diff`, for people.
pub fn render_report(report: &Report) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    for w in &report.warnings {
        let _ = writeln!(o, "warning: {w}");
    }
    if report.lost_frames > 0 {
        let _ = writeln!(
            o,
            "warning: the dump lost {} frame(s) while it was written: the replay cannot match it exactly",
            report.lost_frames
        );
    }
    for d in &report.differences {
        let _ = writeln!(
            o,
            "{} ({}): the dump recorded {} output(s), the replay produced {}",
            d.at,
            d.input_dir
                .map(|x| x.as_str())
                .unwrap_or("before any input"),
            d.recorded.len(),
            d.replayed.len()
        );
        let n = d.recorded.len().max(d.replayed.len());
        for i in 0..n {
            let rec = d.recorded.get(i);
            let rep = d.replayed.get(i);
            match (rec, rep) {
                (Some((line, a)), Some(b)) if a == b => {
                    let _ = writeln!(o, "    = line {line} {}", a.dir.as_str());
                }
                (Some((line, a)), Some(b)) => {
                    let _ = writeln!(
                        o,
                        "    - line {line} {}: {}",
                        a.dir.as_str(),
                        super::annotate::preview(&a.text, 160)
                    );
                    let _ = writeln!(
                        o,
                        "    + replay {}: {}",
                        b.dir.as_str(),
                        super::annotate::preview(&b.text, 160)
                    );
                    if a.dir == b.dir {
                        let _ = writeln!(o, "      {}", first_difference(&a.text, &b.text));
                    }
                }
                (Some((line, a)), None) => {
                    let _ = writeln!(
                        o,
                        "    - line {line} {} (not produced by the replay): {}",
                        a.dir.as_str(),
                        super::annotate::preview(&a.text, 160)
                    );
                }
                (None, Some(b)) => {
                    let _ = writeln!(
                        o,
                        "    + replay {} (not in the dump): {}",
                        b.dir.as_str(),
                        super::annotate::preview(&b.text, 160)
                    );
                }
                (None, None) => {}
            }
        }
    }
    if report.more_differences > 0 {
        let _ = writeln!(
            o,
            "… and {} more input(s) whose outputs differ",
            report.more_differences
        );
    }
    let verdict = if report.differences.is_empty() {
        "the replay matches the dump"
    } else {
        "the replay DIFFERS from the dump"
    };
    let _ = writeln!(
        o,
        "{verdict}: {} input(s); {} frame(s) to the client, {} to the agent, {} note(s)",
        report.inputs, report.to_client, report.to_agent, report.notes
    );
    o
}

/// Write a regression case: the dump's header and every record the replay reads (inputs,
/// the outputs as expected, notes), without the agent's stderr.
pub fn emit_case(paths: &[PathBuf], dir: &Path, name: &str) -> anyhow::Result<PathBuf> {
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !name.starts_with('.');
    if !valid {
        anyhow::bail!("`{name}` is not a case name: use letters, digits, `-`, `_` and `.`");
    }
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the case folder {}", dir.display()))?;
    let path = dir.join(format!("{name}.jsonl"));
    let mut reader = Reader::open(paths, ReadOptions::default())?;
    let tmp = dir.join(format!(".{name}.jsonl.tmp"));
    let file =
        std::fs::File::create(&tmp).with_context(|| format!("cannot write {}", tmp.display()))?;
    let mut out = std::io::BufWriter::new(file);
    let mut last_run: Option<Option<String>> = None;
    while let Some(item) = reader.next_item()? {
        match item {
            Item::File(info) => {
                // One header per run (the parts of one run make one).
                if last_run.as_ref() != Some(&info.run) {
                    last_run = Some(info.run.clone());
                    let header = acp_proxy::dump::Header {
                        format: acp_proxy::dump::FORMAT_NAME.to_owned(),
                        version: info.version,
                        proxy_version: info.proxy_version.clone(),
                        // A case is shared with others: paths are cut to file names.
                        agent_command: info
                            .agent_command
                            .iter()
                            .map(|a| match a.rsplit_once('/') {
                                Some((_, name)) => name.to_owned(),
                                None => a.clone(),
                            })
                            .collect(),
                        started_at: info.started_at.clone(),
                        redacted: info.redacted,
                        run: Some(info.run.clone().unwrap_or_else(|| "case".to_owned())),
                        part: 1,
                        config: info.config.clone(),
                        case: Some(serde_json::json!({"name": name,
                            "from": info.path.file_name().map(|f| f.to_string_lossy().into_owned())})),
                    };
                    writeln!(out, "{}", serde_json::to_string(&header)?)?;
                }
            }
            Item::Record(rec) if rec.dir != Direction::AgentStderr => {
                writeln!(out, "{}", rec.raw)?;
            }
            Item::Record(_) => {}
            Item::Bad(b) => anyhow::bail!(
                "{}: {}: a case must be made of a whole dump",
                reader.position(b.file, b.line),
                b.why
            ),
        }
    }
    out.flush()?;
    drop(out);
    std::fs::rename(&tmp, &path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// The name of a case made from these dumps.
fn default_name(paths: &[PathBuf]) -> String {
    let stem = paths
        .first()
        .and_then(|p| p.file_stem())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "case".to_owned());
    stem.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect::<String>()
        .trim_start_matches('.')
        .to_owned()
}

/// `acp-proxy replay FILE… [--diff] [--emit-test DIR]`.
pub fn command(args: &ReplayArgs, config: Option<&Path>) -> anyhow::Result<i32> {
    let files = &args.files.files;
    if let Some(dir) = &args.emit_test {
        let name = args.name.clone().unwrap_or_else(|| default_name(files));
        let path = emit_case(files, dir, &name)?;
        let (report, _) = replay_files(std::slice::from_ref(&path), config, true, |_| Ok(()))?;
        let status = if report.differences.is_empty() {
            "the replay matches it today; edit the expected frames (proxy→client, proxy→agent records) to what the proxy should have sent to make it a failing test"
        } else {
            "the replay does NOT match it today"
        };
        eprintln!(
            "acp-proxy: wrote the regression case {}: {status}",
            path.display()
        );
        return Ok(0);
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let both = args.both;
    let diff = args.diff;
    let result = replay_files(files, config, diff, |o| {
        if diff {
            return Ok(());
        }
        match o.dir {
            Direction::ProxyToClient if !both => writeln!(out, "{}", o.text),
            Direction::ProxyToClient | Direction::ProxyToAgent if both => writeln!(
                out,
                "{}",
                serde_json::json!({"dir": o.dir, "frame": o.text})
            ),
            _ => Ok(()),
        }
    });
    let report = match result {
        Ok((report, _)) => report,
        // The reader of the output went away (`| head`): nothing more to say.
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            return Ok(0)
        }
        Err(e) => return Err(e),
    };
    if diff {
        write!(out, "{}", render_report(&report))?;
        out.flush()?;
        return Ok(
            if report.differences.is_empty() && report.more_differences == 0 {
                0
            } else {
                1
            },
        );
    }
    out.flush()?;
    for w in &report.warnings {
        eprintln!("acp-proxy: warning: {w}");
    }
    Ok(0)
}
