//! One kit end to end: for each scenario of its kit.toml, the model stand-in, the real proxy
//! wrapping the agent (or, with `E2E_RELAY=cat`, a plain `cat` relay), driven as Zed drives it;
//! then a second proxy process that reopens the parent from history. `by_hand` runs one such
//! run into a folder that stays.
//!
//! Environment: `E2E_CACHE` (where install.sh put the agents; scripts/e2e.sh sets it),
//! `E2E_RELAY=cat` (replace the proxy with `cat`: every run must then fail), `E2E_KEEP=1` (keep
//! each run's folder; a failed run's folder is always kept), `E2E_SHOW=1` (print what Zed showed
//! for every run, not only for failed ones), `E2E_ALLOW_NETWORK=1` (run outside a network
//! namespace, for debugging only).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::checks::{self, Checks, Failure};
use crate::client::Client;
use crate::kits::{self, Kit};
use crate::zed::{self, Entry, Thread, ZedRules};

pub(crate) const PROXY: &str = env!("CARGO_BIN_EXE_acp-proxy");
/// After the turn (and any background follow-up), read on until the agent was quiet this long.
const QUIET: Duration = Duration::from_millis(1500);
const CHILD_LOAD: Duration = Duration::from_secs(30);
/// The proxy stops the agent within its shutdown graces (3 s by default).
const CLOSE: Duration = Duration::from_secs(15);

/// What stands between Zed and the agent.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Relay {
    Proxy,
    /// A plain `cat` relay: what the proxy adds is missing, so every run must fail.
    Cat,
    /// Nothing: the agent alone, as Zed runs it without the proxy (by hand only).
    Direct,
}

/// Where a run happens, beside its kit, scenario and Zed.
pub(crate) struct Setup {
    pub(crate) relay: Relay,
    /// Where install.sh put the agents.
    pub(crate) cache: PathBuf,
    /// The proxy binary.
    pub(crate) proxy: PathBuf,
    /// The run's folder, kept whatever the outcome (by hand); none: a temporary one, kept only
    /// when the run failed or `E2E_KEEP=1`.
    pub(crate) folder: Option<PathBuf>,
}

/// Run every scenario of a kit; panics with every failure when one run failed.
pub(crate) fn kit(name: &str) {
    if let Err(e) = kit_inner(name) {
        panic!("e2e {name}: {e:#}");
    }
}

fn kit_inner(name: &str) -> Result<()> {
    isolated()?;
    let kit = Kit::load(name)?;
    let relay = match std::env::var("E2E_RELAY").as_deref() {
        Ok("cat") => Relay::Cat,
        Ok("") | Err(_) => Relay::Proxy,
        Ok(other) => bail!("E2E_RELAY={other}: only `cat` is known"),
    };
    let setup = Setup {
        relay,
        cache: installed(name)?,
        proxy: PathBuf::from(PROXY),
        folder: None,
    };
    let mut runs = Vec::new();
    for scenario in &kit.toml.scenarios {
        // The first scenario also runs as Zed 1.18; every scenario runs as Zed's main branch.
        let mut zeds = vec![ZedRules::Main];
        if scenario == &kit.toml.scenarios[0] {
            zeds.insert(0, ZedRules::V1_18);
        }
        for rules in zeds {
            let started = Instant::now();
            let outcome = Run::new(&kit, scenario, rules, &setup).and_then(|r| r.go());
            let secs = started.elapsed().as_secs_f64();
            runs.push((scenario.clone(), rules, secs, outcome));
        }
    }
    let mut report = String::new();
    let mut failed = false;
    for (scenario, rules, secs, outcome) in &runs {
        let label = format!("{name} {scenario} ({}) in {secs:.1}s", zed::name(*rules));
        failed |= report_run(&kit, relay, scenario, &label, outcome, &mut report) == FAIL;
    }
    eprintln!(
        "\n== e2e {name} ({} {}, relay {relay:?})\n{report}",
        kit.toml.name,
        version(&kit)
    );
    if failed {
        bail!("some runs failed:\n{report}");
    }
    Ok(())
}

/// The kit's version that runs: another than the pinned one when E2E_VERSION_<KIT> names it.
pub(crate) fn version(kit: &Kit) -> String {
    let var = format!(
        "E2E_VERSION_{}",
        kit.toml.name.to_ascii_uppercase().replace('-', "_")
    );
    std::env::var(&var)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| kit.toml.version.clone())
}

/// The install cache, once it holds the kit.
pub(crate) fn installed(name: &str) -> Result<PathBuf> {
    let cache = cache_dir()?;
    if !cache.join(name).is_dir() {
        bail!(
            "kit `{name}` is not installed under {} (run scripts/e2e.sh, which installs it)",
            cache.display()
        );
    }
    Ok(cache)
}

/// A run's verdict: no failure, only known bugs', or another.
pub(crate) const OK: &str = "ok";
pub(crate) const KNOWN_BUG: &str = "KNOWN-BUG";
pub(crate) const FAIL: &str = "FAIL";

/// One run's lines of the report; returns its verdict.
pub(crate) fn report_run(
    kit: &Kit,
    relay: Relay,
    scenario: &str,
    label: &str,
    outcome: &Result<Outcome>,
    report: &mut String,
) -> &'static str {
    let o = match outcome {
        Err(e) => {
            *report += &format!("{FAIL} {label}: {e:#}\n");
            return FAIL;
        }
        Ok(o) => o,
    };
    let (known, unknown): (Vec<&Failure>, Vec<&Failure>) = o
        .failures
        .iter()
        .partition(|f| kit.expect.known_bug(scenario, f).is_some());
    // Behind `cat` a known bug's check may not even be reached.
    let fixed: Vec<_> = kit
        .expect
        .known_bugs
        .iter()
        .filter(|b| !b.sometimes && b.applies(scenario))
        .filter(|b| !known.iter().any(|f| b.matches(scenario, f)))
        .filter(|_| relay == Relay::Proxy)
        .collect();
    let ok = unknown.is_empty() && fixed.is_empty();
    let verdict = match (ok, known.is_empty()) {
        (false, _) => FAIL,
        (true, false) => KNOWN_BUG,
        (true, true) => OK,
    };
    let folder = o
        .dir
        .as_ref()
        .map(|d| format!("; folder {}", d.display()))
        .unwrap_or_default();
    *report += &format!(
        "{verdict} {label} (live {:.1}s, reopen {:.1}s){folder}\n",
        o.live_secs, o.reopen_secs
    );
    if std::env::var("E2E_SHOW").as_deref() == Ok("1") || verdict != OK {
        for line in &o.shown {
            *report += &format!("    {line}\n");
        }
    }
    for f in &unknown {
        *report += &format!("    [{}] {}\n", f.check, f.detail);
    }
    for f in &known {
        let note = kit.expect.known_bug(scenario, f).map(|b| b.note);
        *report += &format!(
            "    known bug [{}] {} ({})\n",
            f.check,
            f.detail,
            note.unwrap_or("")
        );
    }
    for b in fixed {
        *report += &format!(
            "    [{}] passes now: remove the known bug from EXPECT ({})\n",
            b.check, b.note
        );
    }
    verdict
}

/// The agents must reach nothing but loopback: the suite runs inside `unshare -n`.
pub(crate) fn isolated() -> Result<()> {
    if std::env::var("E2E_ALLOW_NETWORK").as_deref() == Ok("1") {
        return Ok(());
    }
    // /proc/net/dev lists the links of this process's network namespace (sysfs may show the
    // host's).
    let dev = std::fs::read_to_string("/proc/net/dev").context("read /proc/net/dev")?;
    let links: Vec<String> = dev
        .lines()
        .skip(2)
        .filter_map(|l| l.split(':').next())
        .map(|n| n.trim().to_owned())
        .filter(|n| n != "lo")
        .collect();
    if !links.is_empty() {
        bail!(
            "network links besides loopback ({}): run the suite through scripts/e2e.sh, which \
             runs it in a network namespace (or set E2E_ALLOW_NETWORK=1 to debug)",
            links.join(", ")
        );
    }
    Ok(())
}

pub(crate) fn cache_dir() -> Result<PathBuf> {
    if let Some(c) = std::env::var_os("E2E_CACHE").filter(|c| !c.is_empty()) {
        return Ok(PathBuf::from(c));
    }
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|c| !c.is_empty()) {
        Some(x) => PathBuf::from(x),
        None => PathBuf::from(std::env::var_os("HOME").context("no HOME")?).join(".cache"),
    };
    Ok(base.join("acp-proxy-e2e"))
}

pub(crate) struct Outcome {
    pub(crate) failures: Vec<Failure>,
    /// What Zed showed: each card and the child thread it opened.
    pub(crate) shown: Vec<String>,
    pub(crate) live_secs: f64,
    pub(crate) reopen_secs: f64,
    /// The run's folder, when it was kept.
    dir: Option<PathBuf>,
}

/// A run's folder: a temporary one, or one given to keep.
enum Folder {
    Temp(tempfile::TempDir),
    Kept(PathBuf),
}

impl Folder {
    fn path(&self) -> &Path {
        match self {
            Folder::Temp(t) => t.path(),
            Folder::Kept(p) => p,
        }
    }

    /// Keep a temporary folder after the run (a kept one always stays).
    fn keep(&mut self, keep: bool) {
        if let Folder::Temp(t) = self {
            t.disable_cleanup(keep);
        }
    }
}

pub(crate) struct Run<'k> {
    kit: &'k Kit,
    scenario: String,
    rules: ZedRules,
    relay: Relay,
    cache: PathBuf,
    proxy: PathBuf,
    dir: Folder,
    workspace: PathBuf,
    home: PathBuf,
    model: Option<Child>,
    model_url: Option<String>,
    checks: Checks,
    shown: Vec<String>,
}

impl Drop for Run<'_> {
    fn drop(&mut self) {
        if let Some(m) = &mut self.model {
            let _ = m.kill();
            let _ = m.wait();
        }
    }
}

/// The live parent thread, as the reopen phase compares against it.
struct Live {
    parent: String,
    children: Vec<String>,
    /// Each child thread as it opened live, described entry by entry.
    threads: Vec<(String, String)>,
}

impl<'k> Run<'k> {
    pub(crate) fn new(
        kit: &'k Kit,
        scenario: &str,
        rules: ZedRules,
        setup: &Setup,
    ) -> Result<Self> {
        let dir = match &setup.folder {
            Some(path) => {
                std::fs::create_dir_all(path)
                    .with_context(|| format!("create {}", path.display()))?;
                let used = std::fs::read_dir(path)
                    .with_context(|| format!("list {}", path.display()))?
                    .next()
                    .is_some();
                if used {
                    bail!(
                        "{} is not empty: a run needs a folder of its own",
                        path.display()
                    );
                }
                Folder::Kept(path.clone())
            }
            None => Folder::Temp(
                tempfile::Builder::new()
                    .prefix(&format!("e2e-{}-{scenario}-", kit.toml.name))
                    .tempdir()
                    .context("create the run folder")?,
            ),
        };
        let workspace = dir.path().join("project");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&workspace)?;
        std::fs::create_dir_all(&home)?;
        std::fs::write(workspace.join("a.txt"), "hello from a\n")?;
        std::fs::write(workspace.join("b.txt"), "hello from b\n")?;
        // The proxy's defaults, but a dump that keeps every frame as sent: redaction (of keys
        // such as `tokens`) would hide from the accounting what the agent sent. The runs hold
        // no secret.
        std::fs::write(dir.path().join("proxy.toml"), "[dump]\nredact = false\n")?;
        Ok(Run {
            kit,
            scenario: scenario.to_owned(),
            rules,
            relay: setup.relay,
            cache: setup.cache.clone(),
            proxy: setup.proxy.clone(),
            dir,
            workspace,
            home,
            model: None,
            model_url: None,
            checks: Checks::default(),
            shown: Vec::new(),
        })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(self.kit.toml.timeout_secs)
    }

    pub(crate) fn go(mut self) -> Result<Outcome> {
        let (live_secs, reopen_secs) = match self.phases() {
            Ok(secs) => secs,
            Err(e) => {
                self.dir.keep(true);
                return Err(e.context(format!("folder {}", self.dir.path().display())));
            }
        };
        let failures = std::mem::take(&mut self.checks.failures);
        // A known bug alone is no reason to keep the folder.
        let unexpected = failures
            .iter()
            .any(|f| self.kit.expect.known_bug(&self.scenario, f).is_none());
        let keep = unexpected || std::env::var("E2E_KEEP").as_deref() == Ok("1");
        self.dir.keep(keep);
        let kept = keep || matches!(self.dir, Folder::Kept(_));
        Ok(Outcome {
            failures,
            shown: std::mem::take(&mut self.shown),
            live_secs,
            reopen_secs,
            dir: kept.then(|| self.dir.path().to_owned()),
        })
    }

    /// The live phase and the reopen, with their durations in seconds.
    fn phases(&mut self) -> Result<(f64, f64)> {
        if self.kit.toml.model_server {
            self.start_model()?;
        }
        let t = Instant::now();
        let live = self.live()?;
        let live_secs = t.elapsed().as_secs_f64();
        let t = Instant::now();
        self.reopen(&live)?;
        Ok((live_secs, t.elapsed().as_secs_f64()))
    }

    fn start_model(&mut self) -> Result<()> {
        let port_file = self.path("model.port");
        let log = std::fs::File::create(self.path("model.log"))?;
        let python = std::env::var("E2E_STANDIN_PYTHON").unwrap_or_else(|_| "python3".into());
        let child = Command::new(&python)
            .arg(self.kit.dir.join("model.py"))
            .args(["--scenario", &self.scenario, "--workspace"])
            .arg(&self.workspace)
            .arg("--port-file")
            .arg(&port_file)
            .arg("--log-dir")
            .arg(self.path("requests"))
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .with_context(|| format!("start the model stand-in with {python}"))?;
        self.model = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(port) = std::fs::read_to_string(&port_file) {
                self.model_url = Some(format!("http://127.0.0.1:{}", port.trim()));
                return Ok(());
            }
            if let Some(m) = &mut self.model {
                if let Ok(Some(status)) = m.try_wait() {
                    bail!(
                        "the model stand-in exited ({status}): {}",
                        tail(&self.path("model.log"))
                    );
                }
            }
            if Instant::now() > deadline {
                bail!(
                    "the model stand-in did not listen within 20 s: {}",
                    tail(&self.path("model.log"))
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The command Zed runs: the proxy wrapping launch.sh, or a `cat` relay in front of it.
    fn client(&self, phase: &str) -> Result<Client> {
        let launch = self.kit.dir.join("launch.sh");
        let mut cmd = match self.relay {
            Relay::Proxy => {
                let mut c = Command::new(&self.proxy);
                c.arg("--config")
                    .arg(self.path("proxy.toml"))
                    .arg("--dump")
                    .arg(self.path(&format!("dump-{phase}.jsonl")))
                    .arg("--store")
                    .arg(self.path("store.sqlite3"))
                    .arg("--")
                    .arg("bash")
                    .arg(&launch);
                c
            }
            Relay::Cat => {
                let mut c = Command::new("bash");
                c.arg("-c").arg(r#"cat | bash "$0" | cat"#).arg(&launch);
                c
            }
            Relay::Direct => {
                let mut c = Command::new("bash");
                c.arg(&launch);
                c
            }
        };
        cmd.current_dir(self.dir.path())
            .env("E2E_CACHE", &self.cache)
            .env("E2E_HOME", &self.home)
            .env("E2E_WORKSPACE", &self.workspace)
            .env("E2E_SCENARIO", &self.scenario)
            .env("RUST_LOG", "info");
        if let Some(url) = &self.model_url {
            cmd.env("E2E_MODEL_URL", url);
        }
        if self.kit.toml.proxy_home {
            cmd.env("HOME", &self.home);
        }
        Client::start(
            cmd,
            &self.path(&format!("stderr-{phase}.log")),
            &self.path(&format!("client-{phase}.jsonl")),
            self.rules,
            &self.workspace,
        )
    }

    /// `initialize` as Zed sends it; the agent that does not answer did not start.
    fn initialize(&self, c: &mut Client, phase: &str) -> Result<()> {
        let deadline = Instant::now() + self.timeout();
        let r = c
            .call("initialize", zed::initialize_params(self.rules), deadline)
            .with_context(|| {
                format!(
                    "agent `{}` did not start ({phase}); its stderr ends:\n{}",
                    self.kit.toml.name,
                    tail(&self.path(&format!("stderr-{phase}.log")))
                )
            })?;
        if r.pointer("/agentCapabilities/loadSession") != Some(&Value::Bool(true)) {
            bail!(
                "initialize: no loadSession, Zed would not open child threads: {}",
                checks::short(&r)
            );
        }
        Ok(())
    }

    fn live(&mut self) -> Result<Live> {
        let mut c = self.client("live")?;
        self.initialize(&mut c, "live")?;
        let deadline = Instant::now() + self.timeout();
        let new = c
            .call(
                "session/new",
                json!({"cwd": self.workspace, "mcpServers": []}),
                deadline,
            )
            .context("session/new")?;
        let parent = new["sessionId"]
            .as_str()
            .context("session/new gave no sessionId")?
            .to_owned();
        let prompt = json!({"sessionId": parent, "prompt": [{"type": "text",
            "text": format!("SCENARIO:{} survey the text files", self.scenario)}]});
        // Zed's main branch may open a card while its child still runs: in the background scenario
        // it does, as soon as the card shows, and the rest of the child's work must then
        // come live, once.
        let live_load = self.scenario == "background" && self.rules == ZedRules::Main;
        let mut loads: Vec<(String, String)> = Vec::new();
        let prompt_id = c.request("session/prompt", prompt)?;
        loop {
            let progressed = c.pump_until(deadline, |c| {
                c.has_response(&prompt_id) || (live_load && unloaded_card(c, &parent, &loads))
            })?;
            if live_load {
                self.load_new_cards(&mut c, &parent, &mut loads)?;
            }
            if c.has_response(&prompt_id) || !progressed {
                break;
            }
        }
        let r = c.response(&prompt_id, deadline).with_context(|| {
            format!(
                "session/prompt; stderr ends:\n{}",
                tail(&self.path("stderr-live.log"))
            )
        })?;
        self.checks.expect(
            "turn",
            r.get("error").is_none() && r["result"]["stopReason"] == "end_turn",
            || format!("live: the turn ended with {}", checks::short(&r)),
        );
        // A background child, or the main agent's follow-up, may still be on its way.
        let tags = kits::tags(&self.scenario).len();
        let followup = self.scenario != "background" || self.kit.expect.background_followup;
        let settled_now = |c: &Client| {
            let Some(t) = c.zed.threads.get(&parent) else {
                return false;
            };
            let cards = t.cards();
            let open = self.scenario == "background" && self.kit.expect.background_open;
            let ended = cards
                .iter()
                .all(|k| open || matches!(k.status.as_str(), "completed" | "failed"));
            // Without a follow-up, only the cards tell that the background child is done.
            let said = if followup {
                checks::assistant_text(t).contains("MAIN-DONE")
            } else {
                cards.len() >= tags
            };
            ended && said
        };
        let settled = loop {
            let progressed = c.pump_until(deadline, |c| {
                settled_now(c) || (live_load && unloaded_card(c, &parent, &loads))
            })?;
            if live_load {
                self.load_new_cards(&mut c, &parent, &mut loads)?;
            }
            if settled_now(&c) || !progressed {
                break settled_now(&c);
            }
        };
        for (child, id) in &loads {
            match c.response(id, Instant::now() + CHILD_LOAD) {
                Ok(r) if r.get("error").is_none() => {}
                Ok(r) => self.checks.fail(
                    "child-load",
                    format!(
                        "live: session/load of running child {child}: {}",
                        checks::short(&r)
                    ),
                ),
                Err(e) => self.checks.fail(
                    "child-load",
                    format!("live: session/load of running child {child}: {e:#}"),
                ),
            }
        }
        c.pump_quiet(QUIET, deadline)?;
        if !settled {
            self.checks.fail(
                "turn",
                format!(
                    "live: within {}s the cards did not all end{}",
                    self.kit.toml.timeout_secs,
                    if followup {
                        " or the main agent did not say MAIN-DONE"
                    } else {
                        ""
                    }
                ),
            );
        }
        let thread = c.zed.threads.get(&parent).cloned().unwrap_or_default();
        self.shown
            .push(format!("live: parent {}", checks::describe(&thread)));
        self.main_text(&thread);
        let loaded: Vec<String> = loads.into_iter().map(|(child, _)| child).collect();
        let children = self.cards_and_children(&mut c, "live", &parent, &thread, &loaded)?;
        let threads = children
            .iter()
            .map(|id| {
                (
                    id.clone(),
                    c.zed
                        .threads
                        .get(id)
                        .map(checks::describe)
                        .unwrap_or_default(),
                )
            })
            .collect();
        self.close(&mut c, "live");
        self.accounting(&c, "live", None)?;
        Ok(Live {
            parent,
            children,
            threads,
        })
    }

    /// Load, without waiting, every child whose card appeared since the last call.
    fn load_new_cards(
        &self,
        c: &mut Client,
        parent: &str,
        loads: &mut Vec<(String, String)>,
    ) -> Result<()> {
        let fresh: Vec<String> = c
            .zed
            .threads
            .get(parent)
            .map(|t| {
                t.cards()
                    .iter()
                    .filter_map(|k| k.subagent.clone())
                    .map(|i| i.session_id)
                    .collect()
            })
            .unwrap_or_default();
        for child in fresh {
            if loads.iter().any(|(c, _)| *c == child) {
                continue;
            }
            let load = json!({"sessionId": child, "cwd": self.workspace, "mcpServers": []});
            let id = c.request("session/load", load)?;
            loads.push((child, id));
        }
        Ok(())
    }

    /// Zed quits. The proxy must then end (it stops the agent); a bare agent behind `cat` is
    /// Zed's to kill, as here.
    fn close(&mut self, c: &mut Client, phase: &str) {
        if let Err(e) = c.close(Instant::now() + CLOSE) {
            if self.relay == Relay::Proxy {
                self.checks
                    .fail("close", format!("{phase}: the proxy: {e:#}"));
            }
        }
    }

    fn main_text(&mut self, parent: &Thread) {
        let text = checks::assistant_text(parent);
        let want = if self.scenario == "background" && !self.kit.expect.background_followup {
            "MAIN-WAITING"
        } else {
            "MAIN-DONE"
        };
        self.checks.expect("main-text", text.contains(want), || {
            format!(
                "live: the main agent's words lack `{want}`: {:?}",
                checks::short(&text)
            )
        });
        self.checks
            .expect("parent-clean", !text.contains("SUB-ANSWER"), || {
                format!(
                    "live: a child's words are in the parent thread: {:?}",
                    checks::short(&text)
                )
            });
    }

    /// Check the cards, load every child as Zed does, check each child thread. Returns the
    /// child ids, in the order of their cards.
    fn cards_and_children(
        &mut self,
        c: &mut Client,
        phase: &str,
        parent: &str,
        thread: &Thread,
        loaded: &[String],
    ) -> Result<Vec<String>> {
        let tags = kits::tags(&self.scenario);
        let expect = self.kit.expect;
        let open = self.scenario == "background" && expect.background_open;
        let cards: Vec<_> = checks::cards(&mut self.checks, phase, expect, thread, tags, open)
            .into_iter()
            .cloned()
            .collect();
        let mut children = Vec::new();
        for card in &cards {
            let Some(info) = &card.subagent else { continue };
            children.push(info.session_id.clone());
            if loaded.contains(&info.session_id) {
                continue; // Zed does not load a thread it holds again
            }
            let load =
                json!({"sessionId": info.session_id, "cwd": self.workspace, "mcpServers": []});
            if let Err(e) = c.call("session/load", load, Instant::now() + CHILD_LOAD) {
                self.checks.fail(
                    "child-load",
                    format!("{phase}: session/load of child {}: {e:#}", info.session_id),
                );
                continue;
            }
        }
        c.pump_quiet(Duration::from_millis(300), Instant::now() + QUIET)?;
        for card in &cards {
            let thread_now = c.zed.threads.get(parent).cloned().unwrap_or_default();
            let child = card
                .subagent
                .as_ref()
                .and_then(|i| c.zed.threads.get(&i.session_id));
            if let (Some(info), Some(t)) = (&card.subagent, child) {
                self.shown.push(format!(
                    "{phase}: card `{}` {} [{}..={:?}] opens {}",
                    card.title,
                    card.status,
                    info.start,
                    info.end,
                    checks::describe(t)
                ));
            }
            checks::child_thread(
                &mut self.checks,
                phase,
                expect,
                &self.scenario,
                card,
                child,
                &thread_now,
            );
        }
        Ok(children)
    }

    fn accounting(&mut self, c: &Client, phase: &str, only: Option<&str>) -> Result<()> {
        checks::zed_model(&mut self.checks, phase, &c.zed, &c.problems);
        let agent = match self.relay {
            Relay::Proxy => {
                let dump = self.path(&format!("dump-{phase}.jsonl"));
                checks::read_dump(&mut self.checks, phase, &dump)?
            }
            // Without the proxy, what the client read is what the agent sent.
            Relay::Cat | Relay::Direct => c.received.clone(),
        };
        let agent = checks::without_sibling_calls(agent, self.kit.expect.sibling_calls);
        let cards: Vec<String> = c
            .zed
            .threads
            .values()
            .flat_map(|t| t.cards().into_iter().map(|k| k.id.clone()))
            .collect();
        checks::delivered_once(
            &mut self.checks,
            phase,
            &agent,
            &c.accepted,
            &c.received,
            only.map(|parent| (parent, self.kit.expect.child_event_keys)),
            &cards,
        );
        Ok(())
    }

    /// A new proxy process (Zed restarted) reopens the parent from history: the cards come
    /// back with the same children, and each child thread opens again.
    fn reopen(&mut self, live: &Live) -> Result<()> {
        let mut c = self.client("reopen")?;
        self.initialize(&mut c, "reopen")?;
        let deadline = Instant::now() + self.timeout();
        let load = json!({"sessionId": live.parent, "cwd": self.workspace, "mcpServers": []});
        if let Err(e) = c.call("session/load", load, deadline) {
            self.checks.fail(
                "reopen",
                format!("reopen: session/load of the parent: {e:#}"),
            );
            self.close(&mut c, "reopen");
            return Ok(());
        }
        c.pump_quiet(QUIET, deadline)?;
        let thread = c.zed.threads.get(&live.parent).cloned().unwrap_or_default();
        self.shown
            .push(format!("reopen: parent {}", checks::describe(&thread)));
        self.checks.expect(
            "reopen",
            thread
                .entries
                .iter()
                .any(|e| matches!(e, Entry::User(u) if u.contains("SCENARIO:"))),
            || {
                format!(
                    "reopen: the replayed parent lacks the user's prompt: {}",
                    checks::describe(&thread)
                )
            },
        );
        let children = self.cards_and_children(&mut c, "reopen", &live.parent, &thread, &[])?;
        let (mut a, mut b) = (live.children.clone(), children);
        a.sort();
        b.sort();
        self.checks.expect("reopen", a == b, || {
            format!("reopen: the cards open children {b:?}, live they opened {a:?}")
        });
        for (id, before) in &live.threads {
            let now = c
                .zed
                .threads
                .get(id)
                .map(checks::describe)
                .unwrap_or_default();
            self.checks.expect("reopen", &now == before, || {
                format!("reopen: child {id} opens as {now}, live it opened as {before}")
            });
        }
        self.close(&mut c, "reopen");
        self.accounting(&c, "reopen", Some(&live.parent))?;
        Ok(())
    }
}

/// A card whose child has not been loaded yet.
fn unloaded_card(c: &Client, parent: &str, loads: &[(String, String)]) -> bool {
    c.zed.threads.get(parent).is_some_and(|t| {
        t.cards().iter().any(|k| {
            k.subagent
                .as_ref()
                .is_some_and(|i| !loads.iter().any(|(c, _)| *c == i.session_id))
        })
    })
}

/// The last lines of a log file, for error messages.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(25);
    lines[from..].join("\n")
}
