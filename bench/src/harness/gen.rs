//! Deterministic ACP traffic: what an agent sends during one long `session/prompt` turn.
//!
//! The same seed, profile and size always give the same bytes. A stream is written once to a
//! file next to a one-byte-per-frame "class" file; the agent side writes the stream file, the
//! client side reads the same file to know exactly what must arrive.
//!
//! Frame shapes follow real `claude-agent-acp` traffic (see `tests/fixtures/`): compact JSON as
//! `JSON.stringify` writes it, `_meta.claudeCode.toolName` on tool calls, and in the subagent
//! profiles the legacy child wire (`_meta.claudeCode.parentToolUseId`, spawn `tool_call`s with
//! `toolName` `Agent` or `Task`, the parent-less post-hook `tool_call_update`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;

/// Session id the bench agent hands out; part of every generated frame.
pub(crate) const SESSION_ID: &str = "8d1c1a52-bench-4c4e-9a51-5e55107e0001";

/// Frame classes (one byte per frame in the class file).
pub(crate) const CLASS_KEEP: u8 = 0;
/// A spawn or end-of-spawn frame of a subagent: a `zed` display may add `_meta` to it.
pub(crate) const CLASS_SPAWN: u8 = 1;
/// A child event (legacy wire): a `zed` display diverts it into the child thread.
pub(crate) const CLASS_CHILD: u8 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Profile {
    /// Realistic parent-only traffic: no subagents at all.
    Mix,
    /// The same mix with ~30% of frames being events of several parallel legacy subagents.
    Subagents,
    /// A long session of many short subagents, one after the other (memory profile).
    Churn { subagents: u64 },
    /// Progress floods beside parent traffic: pi-like children whose spinner updates their
    /// spawn card every 80 ms, and AgentPool-like children whose box re-sends the whole
    /// transcript so far on every update. Frames are [`FLOOD_TICK_MS`] apart in the agent's
    /// time (the engine-only run feeds that clock; a relay run sends them as fast as it can).
    Flood,
}

/// Time between two frames of the flood profile, in the agent's clock.
pub(crate) const FLOOD_TICK_MS: u64 = 10;
/// pi's spinner period.
const SPINNER_MS: u64 = 80;

impl Profile {
    pub(crate) fn name(&self) -> String {
        match self {
            Profile::Mix => "mix".into(),
            Profile::Subagents => "subagents".into(),
            Profile::Churn { subagents } => format!("churn{subagents}"),
            Profile::Flood => "flood".into(),
        }
    }

    /// The presets a relay is given for this traffic (`None`: chosen from the bench agent's
    /// `initialize`, the fallback set).
    pub(crate) fn presets(&self) -> Option<&'static [&'static str]> {
        match self {
            Profile::Flood => Some(&["pi", "agentpool"]),
            _ => None,
        }
    }

    pub(crate) fn parse(s: &str) -> anyhow::Result<Profile> {
        match s {
            "mix" => Ok(Profile::Mix),
            "subagents" => Ok(Profile::Subagents),
            "flood" => Ok(Profile::Flood),
            _ => match s.strip_prefix("churn").map(str::parse::<u64>) {
                Some(Ok(n)) if n > 0 => Ok(Profile::Churn { subagents: n }),
                _ => anyhow::bail!("unknown traffic profile `{s}` (mix, subagents, flood, churnN)"),
            },
        }
    }
}

/// What a generated stream holds (also written as `<stream>.meta`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Summary {
    pub bytes: u64,
    pub frames: u64,
    pub permission_requests: u64,
    pub child_frames: u64,
    pub spawn_frames: u64,
    pub subagents: u64,
    pub big_frames: u64,
}

impl Summary {
    fn to_text(&self) -> String {
        format!(
            "bytes={}\nframes={}\npermission_requests={}\nchild_frames={}\nspawn_frames={}\nsubagents={}\nbig_frames={}\n",
            self.bytes,
            self.frames,
            self.permission_requests,
            self.child_frames,
            self.spawn_frames,
            self.subagents,
            self.big_frames
        )
    }

    fn from_text(text: &str) -> Option<Summary> {
        let mut s = Summary::default();
        for line in text.lines() {
            let (k, v) = line.split_once('=')?;
            let v: u64 = v.parse().ok()?;
            match k {
                "bytes" => s.bytes = v,
                "frames" => s.frames = v,
                "permission_requests" => s.permission_requests = v,
                "child_frames" => s.child_frames = v,
                "spawn_frames" => s.spawn_frames = v,
                "subagents" => s.subagents = v,
                "big_frames" => s.big_frames = v,
                _ => return None,
            }
        }
        (s.frames > 0).then_some(s)
    }
}

/// Paths of one generated stream.
#[derive(Debug, Clone)]
pub(crate) struct Stream {
    pub path: PathBuf,
    pub summary: Summary,
    pub profile: Profile,
}

pub(crate) fn class_path(stream: &Path) -> PathBuf {
    stream.with_extension("class")
}

fn meta_path(stream: &Path) -> PathBuf {
    stream.with_extension("meta")
}

pub(crate) fn read_summary(stream: &Path) -> anyhow::Result<Summary> {
    let p = meta_path(stream);
    let text = std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
    Summary::from_text(&text).with_context(|| format!("{} is not a stream summary", p.display()))
}

/// Generate (or reuse, when already there) the stream for these parameters under `dir`.
pub(crate) fn ensure(
    dir: &Path,
    profile: Profile,
    seed: u64,
    bytes: u64,
) -> anyhow::Result<Stream> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let size = match profile {
        Profile::Churn { .. } => "all".to_owned(),
        _ => bytes.to_string(),
    };
    // The version in the name changes whenever the generator's output changes.
    let path = dir.join(format!("v3-{}-s{seed}-{size}.jsonl", profile.name()));
    // The summary is written last: a stream is reused only when its summary exists and both
    // files have the lengths it records (a run killed midway, or another process generating
    // the same stream, never leaves a stream and class file that do not belong together).
    if let Ok(summary) = read_summary(&path) {
        let len = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        if len(&path) == summary.bytes && len(&class_path(&path)) == summary.frames {
            return Ok(Stream {
                path,
                summary,
                profile,
            });
        }
    }
    let _ = std::fs::remove_file(meta_path(&path));
    let unique = format!("partial-{}", std::process::id());
    let tmp = path.with_extension(format!("jsonl.{unique}"));
    let class_tmp = path.with_extension(format!("class.{unique}"));
    let summary = {
        let out = File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
        let class = File::create(&class_tmp)
            .with_context(|| format!("creating {}", class_tmp.display()))?;
        let mut g = Generator::new(
            seed,
            BufWriter::with_capacity(1 << 20, out),
            BufWriter::new(class),
        );
        g.run(profile, bytes)?;
        g.finish()?
    };
    std::fs::rename(&class_tmp, class_path(&path))?;
    std::fs::rename(&tmp, &path)?;
    let meta_tmp = path.with_extension(format!("meta.{unique}"));
    std::fs::write(&meta_tmp, summary.to_text())?;
    std::fs::rename(&meta_tmp, meta_path(&path))?;
    Ok(Stream {
        path,
        summary,
        profile,
    })
}

/// splitmix64: small, fast, and the same everywhere.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed ^ 0x5eed_acb0_0000_0001)
    }
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..=hi`.
    pub(crate) fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
    /// True with probability `p` percent.
    pub(crate) fn pct(&mut self, p: u64) -> bool {
        self.next() % 100 < p
    }
}

const WORDS: &[&str] = &[
    "the", "file", "function", "returns", "value", "error", "test", "config", "module", "we",
    "should", "update", "this", "call", "path", "struct", "async", "handler", "request", "parse",
    "now", "let", "me", "check", "build", "output", "line", "fixed", "it", "and", "a", "to", "in",
    "of", "for", "with", "is", "that", "on", "session", "agent", "client", "proxy", "frame",
    "buffer", "read", "write", "look", "at", "next", "step", "done", "failing", "passes",
    "because", "when", "missing", "field", "type", "import", "from", "use", "const",
];

const CODE: &[&str] = &[
    "    let mut buf = Vec::with_capacity(4096);\\n",
    "    if let Some(x) = map.get(&key) {\\n",
    "        return Err(anyhow!(\\\"bad value: {x}\\\"));\\n",
    "    }\\n",
    "fn handle(req: &Request) -> Result<Response> {\\n",
    "\\tconst value = await fetch(url, { method: \\\"POST\\\" });\\n",
    "import { readFile } from \\\"node:fs/promises\\\";\\n",
    "    for (i, item) in items.iter().enumerate() {\\n",
    "        total += item.len() * 2; // keep the count\\n",
    "}\\n",
    "\\n",
    "    println!(\\\"{} \\u00e9l\\u00e9ments\\\", n);\\n",
    "  \\\"name\\\": \\\"acp-proxy\\\",\\n",
    "def parse(line: str) -> dict:\\n",
    "    return json.loads(line.rstrip(\\\"\\\\n\\\"))\\n",
];

const TOOLS: &[(&str, &str, &str)] = &[
    ("Read", "read", "Read"),
    ("Grep", "search", "Grep"),
    ("Glob", "search", "Find"),
    ("Bash", "execute", "Run"),
    ("Edit", "edit", "Edit"),
    ("WebFetch", "fetch", "Fetch"),
];

/// Writes frames, classes and the running summary.
pub(crate) struct Generator<W: Write, C: Write> {
    rng: Rng,
    out: W,
    class: C,
    line: Vec<u8>,
    summary: Summary,
    next_tool: u64,
    next_msg: u64,
    next_perm: u64,
    /// Running subagents: (spawn tool call id, child events still to send).
    active: Vec<(u64, u64)>,
    /// The parent's latest tool call: updates name a tool call announced before them, as
    /// real agents' do (Zed refuses an update before its tool call; the proxy repairs it).
    last_parent_tool: Option<u64>,
    /// Each running child's latest tool call, which its updates name (the same rule).
    last_child_tool: std::collections::HashMap<u64, u64>,
}

/// A pi-like child of the flood profile: its spinner is due at `due` (agent time, ms).
struct PiChild {
    id: u64,
    due: u64,
    left: u64,
    tool_uses: u64,
}

/// An AgentPool-like child of the flood profile: its box holds the transcript so far
/// (JSON-escaped), re-sent whole on every update.
struct PoolChild {
    id: u64,
    name: String,
    transcript: String,
    left: u64,
}

impl<W: Write, C: Write> Generator<W, C> {
    pub(crate) fn new(seed: u64, out: W, class: C) -> Self {
        Generator {
            rng: Rng::new(seed),
            out,
            class,
            line: Vec::with_capacity(2 << 20),
            summary: Summary::default(),
            next_tool: 1,
            next_msg: 1,
            next_perm: 1,
            active: Vec::new(),
            last_parent_tool: None,
            last_child_tool: std::collections::HashMap::new(),
        }
    }

    pub(crate) fn finish(mut self) -> anyhow::Result<Summary> {
        self.out.flush()?;
        self.class.flush()?;
        Ok(self.summary)
    }

    pub(crate) fn run(&mut self, profile: Profile, bytes: u64) -> anyhow::Result<()> {
        // A 1 MiB frame early on, then one every 32 MiB: "a few" in any size.
        let mut next_big = (bytes / 4).min(2 << 20);
        match profile {
            Profile::Mix | Profile::Subagents => {
                let with_children = profile == Profile::Subagents;
                while self.summary.bytes < bytes {
                    if self.summary.bytes >= next_big {
                        self.big_frame()?;
                        next_big += 32 << 20;
                    } else if with_children && self.rng.pct(30) {
                        self.child_step()?;
                    } else {
                        self.parent_frame()?;
                    }
                }
                while let Some((id, _)) = self.active.pop() {
                    self.end_spawn(id)?;
                }
            }
            Profile::Flood => self.flood(bytes)?,
            Profile::Churn { subagents } => {
                for _ in 0..subagents {
                    let id = self.spawn()?;
                    for _ in 0..self.rng.range(3, 8) {
                        self.child_event(id, false)?;
                    }
                    self.end_spawn(id)?;
                    for _ in 0..self.rng.range(1, 4) {
                        self.message_chunk(None)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn emit(&mut self, class: u8) -> anyhow::Result<()> {
        self.line.push(b'\n');
        self.out.write_all(&self.line)?;
        self.class.write_all(&[class])?;
        self.summary.bytes += self.line.len() as u64;
        self.summary.frames += 1;
        match class {
            CLASS_CHILD => self.summary.child_frames += 1,
            CLASS_SPAWN => self.summary.spawn_frames += 1,
            _ => {}
        }
        self.line.clear();
        Ok(())
    }

    fn begin_update(&mut self) {
        self.line.extend_from_slice(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"",
        );
        self.line.extend_from_slice(SESSION_ID.as_bytes());
        self.line.extend_from_slice(b"\",\"update\":{");
    }

    fn end_update(&mut self) {
        self.line.extend_from_slice(b"}}}");
    }

    fn push(&mut self, s: &str) {
        self.line.extend_from_slice(s.as_bytes());
    }

    fn push_num(&mut self, n: u64) {
        self.line.extend_from_slice(n.to_string().as_bytes());
    }

    /// Prose of about `len` bytes (already JSON-escaped).
    fn prose(&mut self, len: usize) {
        let start = self.line.len();
        while self.line.len() - start < len {
            let w = WORDS[(self.rng.next() % WORDS.len() as u64) as usize];
            self.line.extend_from_slice(w.as_bytes());
            match self.rng.next() % 24 {
                0 => self.line.extend_from_slice(b".\\n\\n"),
                1 => self.line.extend_from_slice(b", "),
                2 => self.line.extend_from_slice(b" `x` "),
                _ => self.line.push(b' '),
            }
        }
    }

    /// Source-like text of about `len` bytes (already JSON-escaped).
    fn code(&mut self, len: usize) {
        let start = self.line.len();
        while self.line.len() - start < len {
            let l = CODE[(self.rng.next() % CODE.len() as u64) as usize];
            self.line.extend_from_slice(l.as_bytes());
        }
    }

    fn tool_id(&mut self) -> u64 {
        self.next_tool += 1;
        self.next_tool
    }

    fn push_tool_id(&mut self, id: u64) {
        self.push("\"toolu_");
        self.line.extend_from_slice(format!("{id:024x}").as_bytes());
        self.push("\"");
    }

    fn meta(&mut self, tool: Option<&str>, parent: Option<u64>) {
        self.push("\"_meta\":{\"claudeCode\":{");
        if let Some(t) = tool {
            self.push("\"toolName\":\"");
            self.push(t);
            self.push("\"");
        }
        if let Some(p) = parent {
            if tool.is_some() {
                self.push(",");
            }
            self.push("\"parentToolUseId\":");
            self.push_tool_id(p);
        }
        self.push("}},");
    }

    /// Size of a tool payload: mostly 1–4 KiB, up to 20 KiB.
    fn payload_len(&mut self) -> usize {
        if self.rng.pct(75) {
            self.rng.range(1024, 4096) as usize
        } else {
            self.rng.range(4096, 20 * 1024) as usize
        }
    }

    fn parent_frame(&mut self) -> anyhow::Result<()> {
        match self.rng.next() % 100 {
            0..=54 => self.message_chunk(None),
            55..=64 => self.thought_chunk(),
            65..=76 => self.tool_call(None).map(|_| ()),
            77..=86 => {
                let id = self.parent_tool()?;
                self.tool_result(id, None)
            }
            87..=91 => self.edit_call(),
            92..=95 => self.small_update(),
            96..=97 => self.usage_or_plan(),
            _ => self.permission_request(),
        }
    }

    fn message_chunk(&mut self, parent: Option<u64>) -> anyhow::Result<()> {
        self.begin_update();
        self.push(
            "\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"",
        );
        let n = self.rng.range(1, 60) as usize;
        self.prose(n);
        self.push("\"}");
        if let Some(p) = parent {
            self.push(",");
            self.meta(None, Some(p));
            self.line.pop();
        }
        self.push(",\"messageId\":\"msg_");
        let m = self.next_msg;
        self.push_num(m);
        self.push("\"");
        self.end_update();
        if self.rng.pct(3) {
            self.next_msg += 1;
        }
        self.emit(if parent.is_some() {
            CLASS_CHILD
        } else {
            CLASS_KEEP
        })
    }

    fn thought_chunk(&mut self) -> anyhow::Result<()> {
        self.begin_update();
        self.push(
            "\"sessionUpdate\":\"agent_thought_chunk\",\"content\":{\"type\":\"text\",\"text\":\"",
        );
        let n = self.rng.range(20, 200) as usize;
        self.prose(n);
        self.push("\"}");
        self.end_update();
        self.emit(CLASS_KEEP)
    }

    fn pick_tool(&mut self) -> (&'static str, &'static str, &'static str) {
        TOOLS[(self.rng.next() % TOOLS.len() as u64) as usize]
    }

    /// A tool call of the parent's that updates may name: the latest, or a new one.
    fn parent_tool(&mut self) -> anyhow::Result<u64> {
        match self.last_parent_tool {
            Some(id) => Ok(id),
            None => self.tool_call(None),
        }
    }

    /// A tool call of a child's that its updates may name: its latest, or a new one.
    fn child_tool(&mut self, parent: u64) -> anyhow::Result<u64> {
        match self.last_child_tool.get(&parent) {
            Some(&id) => Ok(id),
            None => self.tool_call(Some(parent)),
        }
    }

    fn tool_call(&mut self, parent: Option<u64>) -> anyhow::Result<u64> {
        let id = self.tool_id();
        match parent {
            None => self.last_parent_tool = Some(id),
            Some(p) => {
                self.last_child_tool.insert(p, id);
            }
        }
        let (tool, kind, title) = self.pick_tool();
        self.begin_update();
        self.meta(Some(tool), parent);
        self.push("\"toolCallId\":");
        self.push_tool_id(id);
        self.push(",\"sessionUpdate\":\"tool_call\",\"rawInput\":{\"file_path\":\"/home/user/project/src/");
        let n = self.rng.range(4, 24) as usize;
        self.prose(n);
        self.push(".rs\",\"limit\":2000},\"status\":\"pending\",\"title\":\"");
        self.push(title);
        self.push(" `src/module.rs`\",\"kind\":\"");
        self.push(kind);
        self.push(
            "\",\"content\":[],\"locations\":[{\"path\":\"/home/user/project/src/module.rs\"}]",
        );
        self.end_update();
        self.emit(if parent.is_some() {
            CLASS_CHILD
        } else {
            CLASS_KEEP
        })?;
        Ok(id)
    }

    /// A completed tool call with 1–20 KiB of output.
    fn tool_result(&mut self, id: u64, parent: Option<u64>) -> anyhow::Result<()> {
        let (tool, _, _) = self.pick_tool();
        let len = self.payload_len();
        self.begin_update();
        self.meta(Some(tool), parent);
        self.push("\"toolCallId\":");
        self.push_tool_id(id);
        self.push(",\"sessionUpdate\":\"tool_call_update\",\"status\":\"completed\",\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"```\\n");
        self.code(len);
        self.push("```\"}}]");
        self.end_update();
        self.emit(if parent.is_some() {
            CLASS_CHILD
        } else {
            CLASS_KEEP
        })
    }

    /// An edit with 1–20 KiB of `rawInput` and a diff.
    fn edit_call(&mut self) -> anyhow::Result<()> {
        let id = self.tool_id();
        let len = self.payload_len() / 4;
        self.begin_update();
        self.meta(Some("Edit"), None);
        self.push("\"toolCallId\":");
        self.push_tool_id(id);
        self.push(",\"sessionUpdate\":\"tool_call\",\"rawInput\":{\"file_path\":\"/home/user/project/src/relay.rs\",\"old_string\":\"");
        self.code(len);
        self.push("\",\"new_string\":\"");
        self.code(len);
        self.push("\"},\"status\":\"pending\",\"title\":\"Edit `src/relay.rs`\",\"kind\":\"edit\",\"content\":[{\"type\":\"diff\",\"path\":\"/home/user/project/src/relay.rs\",\"oldText\":\"");
        self.code(len);
        self.push("\",\"newText\":\"");
        self.code(len);
        self.push("\"}],\"locations\":[{\"path\":\"/home/user/project/src/relay.rs\"}]");
        self.end_update();
        self.emit(CLASS_KEEP)
    }

    fn small_update(&mut self) -> anyhow::Result<()> {
        let id = self.parent_tool()?;
        self.begin_update();
        self.push("\"toolCallId\":");
        self.push_tool_id(id);
        self.push(",\"sessionUpdate\":\"tool_call_update\",\"status\":\"in_progress\"");
        self.end_update();
        self.emit(CLASS_KEEP)
    }

    fn usage_or_plan(&mut self) -> anyhow::Result<()> {
        self.begin_update();
        if self.rng.pct(50) {
            self.push("\"sessionUpdate\":\"usage_update\",\"used\":");
            let n = self.rng.range(1000, 150_000);
            self.push_num(n);
            self.push(",\"size\":200000,\"cost\":{\"amount\":0.0");
            let n = self.rng.range(100, 9999);
            self.push_num(n);
            self.push(",\"currency\":\"USD\"}");
        } else {
            self.push("\"sessionUpdate\":\"plan\",\"entries\":[");
            for i in 0..self.rng.range(2, 8) {
                if i > 0 {
                    self.push(",");
                }
                self.push("{\"content\":\"");
                let n = self.rng.range(20, 80) as usize;
                self.prose(n);
                self.push("\",\"priority\":\"medium\",\"status\":\"pending\"}");
            }
            self.push("]");
        }
        self.end_update();
        self.emit(CLASS_KEEP)
    }

    fn permission_request(&mut self) -> anyhow::Result<()> {
        // As real agents do, the tool call is announced before its permission request.
        let id = self.tool_call(None)?;
        let perm = self.next_perm;
        self.next_perm += 1;
        self.line
            .extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":\"perm-");
        self.push_num(perm);
        self.push("\",\"method\":\"session/request_permission\",\"params\":{\"sessionId\":\"");
        self.push(SESSION_ID);
        self.push("\",\"toolCall\":{\"toolCallId\":");
        self.push_tool_id(id);
        self.push(",\"rawInput\":{\"command\":\"cargo test --all-targets\",\"description\":\"");
        let n = self.rng.range(20, 120) as usize;
        self.prose(n);
        self.push("\"},\"title\":\"`cargo test --all-targets`\",\"kind\":\"execute\",\"content\":[]},\"options\":[{\"kind\":\"allow_always\",\"name\":\"Always Allow\",\"optionId\":\"allow_always\"},{\"kind\":\"allow_once\",\"name\":\"Allow\",\"optionId\":\"allow\"},{\"kind\":\"reject_once\",\"name\":\"Reject\",\"optionId\":\"reject\"}]}}");
        self.summary.permission_requests += 1;
        self.emit(CLASS_KEEP)
    }

    /// A 1 MiB frame: a large file read.
    fn big_frame(&mut self) -> anyhow::Result<()> {
        let id = self.parent_tool()?;
        self.begin_update();
        self.meta(Some("Read"), None);
        self.push("\"toolCallId\":");
        self.push_tool_id(id);
        self.push(",\"sessionUpdate\":\"tool_call_update\",\"status\":\"completed\",\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"");
        let target = (1 << 20) - self.line.len() - 8;
        self.code(target);
        self.push("\"}}]");
        self.end_update();
        self.summary.big_frames += 1;
        self.emit(CLASS_KEEP)
    }

    /// The two frames that start a subagent (as claude-agent-acp 0.23 sends them).
    fn spawn(&mut self) -> anyhow::Result<u64> {
        let id = self.tool_id();
        let tool = if self.rng.pct(50) { "Agent" } else { "Task" };
        self.begin_update();
        self.meta(Some(tool), None);
        self.push("\"toolCallId\":");
        self.push_tool_id(id);
        self.push(",\"sessionUpdate\":\"tool_call\",\"rawInput\":{},\"status\":\"pending\",\"title\":\"Task\",\"kind\":\"think\",\"content\":[]");
        self.end_update();
        self.emit(CLASS_SPAWN)?;
        self.begin_update();
        self.meta(Some(tool), None);
        self.push("\"toolCallId\":");
        self.push_tool_id(id);
        self.push(
            ",\"sessionUpdate\":\"tool_call_update\",\"rawInput\":{\"description\":\"Survey part ",
        );
        self.push_num(id);
        self.push("\",\"prompt\":\"");
        let n = self.rng.range(40, 400) as usize;
        self.prose(n);
        self.push("\",\"subagent_type\":\"general-purpose\"},\"title\":\"Survey part ");
        self.push_num(id);
        self.push("\",\"kind\":\"think\",\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"Survey the files\"}}]");
        self.end_update();
        self.emit(CLASS_SPAWN)?;
        self.summary.subagents += 1;
        Ok(id)
    }

    /// The post-hook update and the completion of a subagent's spawn tool call.
    fn end_spawn(&mut self, id: u64) -> anyhow::Result<()> {
        self.last_child_tool.remove(&id);
        self.begin_update();
        self.push(
            "\"_meta\":{\"claudeCode\":{\"toolResponse\":{\"status\":\"completed\",\"agentId\":\"a",
        );
        self.line.extend_from_slice(format!("{id:016x}").as_bytes());
        self.push("\",\"content\":[{\"type\":\"text\",\"text\":\"");
        let n = self.rng.range(40, 600) as usize;
        self.prose(n);
        self.push("\"}],\"totalDurationMs\":113,\"totalTokens\":22,\"totalToolUseCount\":1},\"toolName\":\"Agent\"}},\"toolCallId\":");
        self.push_tool_id(id);
        self.push(",\"sessionUpdate\":\"tool_call_update\"");
        self.end_update();
        self.emit(CLASS_SPAWN)?;
        self.begin_update();
        self.meta(Some("Agent"), None);
        self.push("\"toolCallId\":");
        self.push_tool_id(id);
        self.push(",\"sessionUpdate\":\"tool_call_update\",\"status\":\"completed\",\"rawOutput\":[{\"type\":\"text\",\"text\":\"Subagent finished.\"}],\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"Subagent finished.\"}}]");
        self.end_update();
        self.emit(CLASS_SPAWN)
    }

    /// One event of a running child, in the legacy wire shapes.
    fn child_event(&mut self, parent: u64, big: bool) -> anyhow::Result<()> {
        match self.rng.next() % 10 {
            0..=3 => self.message_chunk(Some(parent)),
            4..=6 => self.tool_call(Some(parent)).map(|_| ()),
            7 => {
                // The post-tool hook update of a child tool: no parent id (as in the fixture).
                let id = self.child_tool(parent)?;
                self.begin_update();
                self.push("\"_meta\":{\"claudeCode\":{\"toolResponse\":{\"filenames\":[\"/home/user/project/b.txt\",\"/home/user/project/a.txt\"],\"durationMs\":10,\"numFiles\":2,\"truncated\":false},\"toolName\":\"Glob\"}},\"toolCallId\":");
                self.push_tool_id(id);
                self.push(",\"sessionUpdate\":\"tool_call_update\"");
                self.end_update();
                self.emit(CLASS_CHILD)
            }
            _ => {
                let id = self.child_tool(parent)?;
                if big {
                    self.tool_result(id, Some(parent))
                } else {
                    self.begin_update();
                    self.meta(Some("Glob"), Some(parent));
                    self.push("\"toolCallId\":");
                    self.push_tool_id(id);
                    self.push(",\"sessionUpdate\":\"tool_call_update\",\"status\":\"completed\",\"rawOutput\":\"/home/user/project/b.txt\\n/home/user/project/a.txt\"");
                    self.end_update();
                    self.emit(CLASS_CHILD)
                }
            }
        }
    }

    /// Flood profile: one frame per tick; a due spinner first, else a box update (now and
    /// then), else a parent frame. 2–6 pi-like and 1–2 AgentPool-like children run at once.
    fn flood(&mut self, bytes: u64) -> anyhow::Result<()> {
        let mut pis: Vec<PiChild> = Vec::new();
        let mut pools: Vec<PoolChild> = Vec::new();
        let mut now = 0u64;
        while self.summary.bytes < bytes {
            now += FLOOD_TICK_MS;
            let want = 2 + (self.rng.next() % 5) as usize;
            if pis.len() < want && (pis.is_empty() || self.rng.pct(2)) {
                let id = self.pi_spawn()?;
                let left = self.rng.range(10, 400);
                pis.push(PiChild {
                    id,
                    due: now + SPINNER_MS,
                    left,
                    tool_uses: 0,
                });
                continue;
            }
            if pools.is_empty() || (pools.len() < 2 && self.rng.pct(1)) {
                let child = self.pool_spawn()?;
                pools.push(child);
                continue;
            }
            if let Some(i) = (0..pis.len()).min_by_key(|&i| pis[i].due) {
                if pis[i].due <= now {
                    let c = &mut pis[i];
                    c.due += SPINNER_MS;
                    c.left -= 1;
                    if self.rng.pct(10) {
                        c.tool_uses += 1;
                    }
                    let (id, uses, left) = (c.id, c.tool_uses, c.left);
                    if left == 0 {
                        pis.swap_remove(i);
                        self.pi_end(id, uses)?;
                    } else {
                        self.pi_spinner(id, uses)?;
                    }
                    continue;
                }
            }
            if self.rng.pct(20) {
                let i = (self.rng.next() % pools.len() as u64) as usize;
                pools[i].left -= 1;
                if pools[i].left == 0 {
                    let c = pools.swap_remove(i);
                    self.pool_end(&c)?;
                } else {
                    self.pool_update(&mut pools[i])?;
                }
                continue;
            }
            self.parent_frame()?;
        }
        for c in pis {
            self.pi_end(c.id, c.tool_uses)?;
        }
        for c in pools {
            self.pool_end(&c)?;
        }
        Ok(())
    }

    fn push_pi_id(&mut self, id: u64) {
        self.push("\"call_pi_");
        self.push_num(id);
        self.push("\"");
    }

    /// pi's spawn: the bare tool name as title, the task input (no `_meta`).
    fn pi_spawn(&mut self) -> anyhow::Result<u64> {
        let id = self.tool_id();
        self.begin_update();
        self.push("\"sessionUpdate\":\"tool_call\",\"toolCallId\":");
        self.push_pi_id(id);
        self.push(",\"title\":\"Agent\",\"kind\":\"other\",\"status\":\"pending\",\"rawInput\":{\"prompt\":\"");
        let n = self.rng.range(40, 400) as usize;
        self.prose(n);
        self.push("\",\"description\":\"Survey part ");
        self.push_num(id);
        self.push("\",\"subagent_type\":\"general-purpose\"}");
        self.end_update();
        self.summary.subagents += 1;
        self.emit(CLASS_SPAWN)?;
        Ok(id)
    }

    /// One spinner update of a pi child (as pi-acp 0.0.34 sends it every 80 ms).
    fn pi_spinner(&mut self, id: u64, uses: u64) -> anyhow::Result<()> {
        const ACTIVITY: &[&str] = &[
            "thinking…",
            "reading…",
            "Listing the folder",
            "running bash…",
        ];
        let activity = ACTIVITY[(self.rng.next() % ACTIVITY.len() as u64) as usize];
        self.begin_update();
        self.push("\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":");
        self.push_pi_id(id);
        self.push(",\"status\":\"in_progress\",\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"");
        self.push_num(uses);
        self.push(" tool uses...\"}}],\"rawOutput\":{\"content\":[{\"type\":\"text\",\"text\":\"");
        self.push_num(uses);
        self.push(" tool uses...\"}],\"details\":{\"displayName\":\"Agent\",\"description\":\"Survey part ");
        self.push_num(id);
        self.push("\",\"subagentType\":\"general-purpose\",\"tags\":[\"twin\"],\"toolUses\":");
        self.push_num(uses);
        self.push(",\"tokens\":\"\",\"turnCount\":1,\"durationMs\":");
        let ms = self.rng.range(50, 90_000);
        self.push_num(ms);
        self.push(",\"status\":\"running\",\"activity\":\"");
        self.push(activity);
        self.push("\",\"spinnerFrame\":");
        let f = self.rng.range(0, 9);
        self.push_num(f);
        self.push("}}");
        self.end_update();
        self.emit(CLASS_SPAWN)
    }

    fn pi_end(&mut self, id: u64, uses: u64) -> anyhow::Result<()> {
        self.begin_update();
        self.push("\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":");
        self.push_pi_id(id);
        self.push(",\"status\":\"completed\",\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"Agent completed in 4.2s (");
        self.push_num(uses);
        self.push(" tool uses, 360 token).\\n\\n");
        let n = self.rng.range(40, 600) as usize;
        self.prose(n);
        self.push("\"}}],\"rawOutput\":{\"details\":{\"displayName\":\"Agent\",\"description\":\"Survey part ");
        self.push_num(id);
        self.push("\",\"subagentType\":\"general-purpose\",\"status\":\"completed\"}}");
        self.end_update();
        self.emit(CLASS_SPAWN)
    }

    fn push_box_id(&mut self, name: &str) {
        self.push("\"subagent:");
        self.push(name);
        self.push(":1\"");
    }

    /// AgentPool's `task` spawn and the box that will carry its child's transcript.
    fn pool_spawn(&mut self) -> anyhow::Result<PoolChild> {
        let id = self.tool_id();
        let name = format!("helper{id}");
        self.begin_update();
        self.push(
            "\"sessionUpdate\":\"tool_call\",\"kind\":\"other\",\"rawInput\":{\"agent_or_team\":\"",
        );
        self.push(&name);
        self.push("\",\"prompt\":\"");
        let n = self.rng.range(40, 300) as usize;
        self.prose(n);
        self.push("\",\"description\":\"Read part ");
        self.push_num(id);
        self.push(
            "\"},\"status\":\"pending\",\"title\":\"Calling task\",\"toolCallId\":\"call_task_",
        );
        self.push_num(id);
        self.push("\"");
        self.end_update();
        self.emit(CLASS_SPAWN)?;
        self.begin_update();
        self.push("\"sessionUpdate\":\"tool_call\",\"kind\":\"other\",\"rawInput\":{},\"status\":\"pending\",\"title\":\"🤖 ");
        self.push(&name);
        self.push("\",\"toolCallId\":");
        self.push_box_id(&name);
        self.end_update();
        self.emit(CLASS_SPAWN)?;
        self.summary.subagents += 1;
        Ok(PoolChild {
            id,
            name,
            transcript: String::new(),
            left: self.rng.range(20, 200),
        })
    }

    /// The box grows by a piece of prose or a tool line, and is re-sent whole.
    fn pool_update(&mut self, c: &mut PoolChild) -> anyhow::Result<()> {
        let start = self.line.len();
        match self.rng.next() % 6 {
            0 => self.push("\\n🔧 Using tool: read\\n"),
            1 => self.push("\\n✅ read: hello from a\\n"),
            _ => {
                let n = self.rng.range(20, 160) as usize;
                self.prose(n);
            }
        }
        let piece = String::from_utf8_lossy(&self.line[start..]).into_owned();
        self.line.truncate(start);
        c.transcript.push_str(&piece);
        self.begin_update();
        self.push("\"sessionUpdate\":\"tool_call_update\",\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"");
        self.push(&c.transcript);
        self.push("\"}}],\"status\":\"in_progress\",\"title\":\"🤖 ");
        self.push(&c.name);
        self.push("\",\"toolCallId\":");
        self.push_box_id(&c.name);
        self.end_update();
        self.emit(CLASS_SPAWN)
    }

    fn pool_end(&mut self, c: &PoolChild) -> anyhow::Result<()> {
        self.begin_update();
        self.push(
            "\"sessionUpdate\":\"tool_call_update\",\"status\":\"completed\",\"toolCallId\":",
        );
        self.push_box_id(&c.name);
        self.end_update();
        self.emit(CLASS_SPAWN)?;
        self.begin_update();
        self.push("\"sessionUpdate\":\"tool_call_update\",\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"The part says: hello\"}}],\"rawOutput\":\"The part says: hello\",\"status\":\"completed\",\"toolCallId\":\"call_task_");
        self.push_num(c.id);
        self.push("\"");
        self.end_update();
        self.emit(CLASS_SPAWN)
    }

    /// Subagent profile: keep 2–6 children running and send an event of one of them.
    fn child_step(&mut self) -> anyhow::Result<()> {
        let want = 2 + (self.rng.next() % 5) as usize;
        if self.active.len() < want && (self.active.is_empty() || self.rng.pct(5)) {
            let id = self.spawn()?;
            let events = self.rng.range(20, 300);
            self.active.push((id, events));
            return Ok(());
        }
        let i = (self.rng.next() % self.active.len() as u64) as usize;
        let (id, left) = self.active[i];
        self.child_event(id, true)?;
        if left <= 1 {
            self.active.swap_remove(i);
            self.end_spawn(id)?;
        } else {
            self.active[i].1 = left - 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gen(profile: Profile, seed: u64, bytes: u64) -> (Vec<u8>, Vec<u8>, Summary) {
        let mut out = Vec::new();
        let mut class = Vec::new();
        let mut g = Generator::new(seed, &mut out, &mut class);
        g.run(profile, bytes).expect("gen");
        let s = g.finish().expect("finish");
        (out, class, s)
    }

    #[test]
    fn deterministic_valid_json_and_counted() {
        for profile in [
            Profile::Mix,
            Profile::Subagents,
            Profile::Flood,
            Profile::Churn { subagents: 20 },
        ] {
            let (a, class, s) = gen(profile, 7, 3 << 20);
            let (b, _, _) = gen(profile, 7, 3 << 20);
            assert_eq!(a, b);
            assert_eq!(s.bytes, a.len() as u64);
            assert_eq!(class.len() as u64, s.frames);
            let mut frames = 0;
            let mut children = 0;
            for (line, c) in a.split(|&b| b == b'\n').zip(class.iter()) {
                let v: serde_json::Value = serde_json::from_slice(line).expect("valid json");
                frames += 1;
                let parent = &v["params"]["update"]["_meta"]["claudeCode"]["parentToolUseId"];
                if parent.is_string() {
                    children += 1;
                    assert_eq!(*c, CLASS_CHILD);
                }
            }
            assert_eq!(frames, s.frames);
            assert!(children <= s.child_frames);
            if profile == Profile::Subagents {
                let share = s.child_frames as f64 / s.frames as f64;
                assert!((0.2..0.4).contains(&share), "child share {share}");
                assert!(s.big_frames >= 1);
                assert!(s.permission_requests > 0);
            }
        }
    }
}
