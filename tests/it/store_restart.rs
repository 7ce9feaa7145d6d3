//! The durable child-transcript store, end to end through the real proxy binary: a child
//! thread opens after the proxy restarts, survives SIGKILL of the proxy mid-write, and two
//! proxies can share one store file.
//!
//! The test plays Zed (`clientInfo.name = "zed"`) and judges what it receives with the Zed
//! model; the agent is the scripted demo agent speaking Claude's legacy subagent shape.

use std::path::Path;
use std::time::Duration;

use acp_proxy::store::{Store, StoredChild};
use acp_proxy::subagents::ids::child_session_id;
use acp_proxy_tools::zed_model::{Entry, ToolCall, ZedModel};
use serde_json::{json, Value};

use crate::support::proxy;
use crate::support::proxy::{Proxy, Scratch, BIN, FAST_SHUTDOWN};
use crate::support::rng::Rng;
use crate::support::store::open_store;

// ---------------------------------------------------------------------------------------
// Helpers

/// Write an agent script under `name` and return the command that plays it.
fn agent_cmd(scratch: &Scratch, name: &str, steps: &[Value]) -> Vec<String> {
    let text: String = steps.iter().map(|s| format!("{s}\n")).collect();
    let script = scratch.write(name, text);
    vec![
        BIN.to_owned(),
        "demo-agent".to_owned(),
        "--script".to_owned(),
        script,
    ]
}

fn notification(sid: &str, update: &Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "session/update",
           "params": {"sessionId": sid, "update": update}})
}

fn agent_init_steps() -> Vec<Value> {
    vec![
        json!({"expect": "initialize"}),
        json!({"reply": {"protocolVersion": 1, "agentCapabilities": {"loadSession": true},
                         "agentInfo": {"name": "fake-claude", "version": "0"}}}),
    ]
}

fn spawn_call(spawn: &str) -> Value {
    json!({"sessionUpdate": "tool_call", "toolCallId": spawn, "title": "Task", "kind": "think",
           "status": "pending", "rawInput": {}, "_meta": {"claudeCode": {"toolName": "Agent"}}})
}

fn spawn_task(spawn: &str, task: &str, prompt: &str) -> Value {
    json!({"sessionUpdate": "tool_call_update", "toolCallId": spawn, "title": task,
           "rawInput": {"description": task, "prompt": prompt, "subagent_type": "general-purpose"},
           "_meta": {"claudeCode": {"toolName": "Agent"}}})
}

fn spawn_done(spawn: &str) -> Value {
    json!({"sessionUpdate": "tool_call_update", "toolCallId": spawn, "status": "completed",
           "content": [{"type": "content", "content": {"type": "text", "text": format!("result of {spawn}")}}],
           "_meta": {"claudeCode": {"toolName": "Agent"}}})
}

fn child_call(spawn: &str, id: &str, title: &str) -> Value {
    json!({"sessionUpdate": "tool_call", "toolCallId": id, "title": title, "kind": "read",
           "status": "pending", "rawInput": {"path": title},
           "_meta": {"claudeCode": {"toolName": "Read", "parentToolUseId": spawn}}})
}

fn child_call_done(spawn: &str, id: &str, text: &str) -> Value {
    json!({"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "completed",
           "content": [{"type": "content", "content": {"type": "text", "text": text}}],
           "_meta": {"claudeCode": {"toolName": "Read", "parentToolUseId": spawn}}})
}

fn child_text(spawn: &str, text: &str) -> Value {
    json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text},
           "_meta": {"claudeCode": {"parentToolUseId": spawn}}})
}

/// The first update of every child thread: its task prompt, as the proxy records it.
fn prompt_update(prompt: &str) -> String {
    json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": prompt}})
        .to_string()
}

fn parent_text(text: &str) -> Value {
    json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})
}

fn stored(store: &Store, child: &str) -> Option<StoredChild> {
    store
        .child(child)
        .unwrap_or_else(|e| panic!("cannot read child {child}: {e}"))
}

/// The test acting as Zed: requests go out through the Zed model, everything received is
/// fed to it.
struct Zed {
    proxy: Proxy,
    model: ZedModel,
    next_id: u64,
}

impl Zed {
    fn start(dir: &Path, store: &Path, config: &Path, agent: &[String]) -> Zed {
        let store = store.to_str().expect("utf-8 path");
        let config = config.to_str().expect("utf-8 path");
        let proxy = Proxy::start(dir, &["--store", store, "--config", config], agent);
        Zed {
            proxy,
            model: ZedModel::default(),
            next_id: 1,
        }
    }

    /// Send a request and read (feeding the model) until its response; returns it.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.model.client_sent(&msg);
        self.proxy.send_json(&msg);
        loop {
            let got = self.proxy.next_json();
            self.model.received(&got);
            if got.get("method").is_none() && got["id"] == json!(id) {
                assert!(
                    got.get("error").is_none(),
                    "{method} failed: {got}\nstderr:\n{}",
                    self.proxy.stderr()
                );
                return got;
            }
        }
    }

    fn initialize(&mut self) {
        let init = self.request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {"fs": {}},
                   "clientInfo": {"name": "zed", "version": "1.18"}}),
        );
        assert_eq!(
            init["result"]["agentCapabilities"]["loadSession"],
            json!(true)
        );
    }

    fn load(&mut self, sid: &str) {
        self.request(
            "session/load",
            json!({"sessionId": sid, "cwd": "/project", "mcpServers": []}),
        );
    }

    fn card(&self, session: &str, spawn: &str) -> ToolCall {
        self.model.threads[session]
            .card(spawn)
            .cloned()
            .unwrap_or_else(|| panic!("no card {spawn} in {session}"))
    }

    fn entries(&self, session: &str) -> Vec<Entry> {
        self.model.threads[session].entries.clone()
    }

    /// Close stdin and require a clean exit.
    fn close(mut self) -> String {
        self.proxy.close_stdin();
        let code = self.proxy.exit_code();
        let stderr = self.proxy.stderr();
        assert_eq!(code, 0, "proxy exit code; stderr:\n{stderr}");
        assert!(
            self.model.dropped.is_empty() && self.model.rejected.is_empty(),
            "Zed would drop {:?} / reject {:?}",
            self.model.dropped,
            self.model.rejected
        );
        stderr
    }
}

fn describe(entries: &[Entry]) -> Vec<String> {
    entries
        .iter()
        .map(|e| match e {
            Entry::User(t) => format!("user:{t}"),
            Entry::Assistant(t) => format!("agent:{t}"),
            Entry::Tool(t) => format!("tool:{}:{}:{}:{}", t.id, t.title, t.status, t.text),
            other => other.to_string(),
        })
        .collect()
}

/// Store lines of stderr at WARN or ERROR level (the proxy logs without colour to a pipe).
fn store_complaints(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| (l.contains("WARN") || l.contains("ERROR")) && l.contains("store"))
        .collect()
}

// ---------------------------------------------------------------------------------------
// 1. Restart

const S: &str = "sess-restart";
const SPAWN: &str = "toolu_spawn_1";
const TASK: &str = "Survey text files";
const TASK_PROMPT: &str = "List the text files and summarise them";
const USER_PROMPT: &str = "What text files are there?";

/// The live turn: parent prose, the spawn, the child's work, the spawn's completion.
fn live_turn() -> (Vec<Value>, Vec<Value>) {
    let child = vec![
        child_call(SPAWN, "toolu_c1", "Find `*.txt`"),
        // Post-tool hook update: no parent id (attributed by the tool call id).
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "toolu_c1",
               "_meta": {"claudeCode": {"toolResponse": {"numFiles": 2}, "toolName": "Glob"}}}),
        child_call_done(SPAWN, "toolu_c1", "a.txt\nb.txt"),
        child_text(SPAWN, "Two files; reading the first."),
        child_call(SPAWN, "toolu_c2", "Read a.txt"),
        child_call_done(SPAWN, "toolu_c2", "hello"),
        child_text(SPAWN, "a.txt says hello."),
    ];
    let mut turn = vec![
        parent_text("I'll delegate the survey."),
        spawn_call(SPAWN),
        spawn_task(SPAWN, TASK, TASK_PROMPT),
    ];
    turn.extend(child.iter().cloned());
    turn.push(spawn_done(SPAWN));
    turn.push(parent_text("The subagent found a.txt and b.txt."));
    (turn, child)
}

#[test]
fn child_thread_opens_after_the_proxy_restarts() {
    let scratch = Scratch::new();
    let store_path = scratch.path("store.sqlite3");
    let config = scratch.path("proxy.toml");
    std::fs::write(&config, FAST_SHUTDOWN).expect("write config");
    let cid = child_session_id(S, SPAWN);
    let (turn, child_events) = live_turn();
    let user = json!({"sessionUpdate": "user_message_chunk",
                      "content": {"type": "text", "text": USER_PROMPT}});

    // --- First proxy: the live turn, the child opened, the parent reopened in place.
    let mut history = vec![user.clone()];
    history.extend(turn.iter().cloned());
    let mut steps = agent_init_steps();
    steps.push(json!({"expect": "session/new"}));
    steps.push(json!({"reply": {"sessionId": S}}));
    steps.push(json!({"expect": "session/prompt"}));
    steps.extend(turn.iter().map(|u| json!({"send": notification(S, u)})));
    steps.push(json!({"reply": {"stopReason": "end_turn"}}));
    steps.push(json!({"expect": "session/load"}));
    steps.extend(history.iter().map(|u| json!({"send": notification(S, u)})));
    steps.push(json!({"reply": {}}));
    let agent1 = agent_cmd(&scratch, "agent-1.jsonl", &steps);

    let mut zed = Zed::start(scratch.dir.path(), &store_path, &config, &agent1);
    zed.initialize();
    zed.request("session/new", json!({"cwd": "/project", "mcpServers": []}));
    zed.request(
        "session/prompt",
        json!({"sessionId": S, "prompt": [{"type": "text", "text": USER_PROMPT}]}),
    );
    let live_card = zed.card(S, SPAWN);
    let live_info = live_card
        .subagent
        .clone()
        .expect("the card names its child");
    assert_eq!(live_info.session_id, cid);
    assert_eq!(live_card.status, "completed");
    assert_eq!(live_card.title, TASK);
    assert!(
        zed.model.threads[S].tool_calls().all(|t| t.id == SPAWN),
        "no child tool call in the parent thread"
    );
    zed.load(&cid);
    let live_entries = describe(&zed.entries(&cid));
    assert_eq!(
        live_entries,
        vec![
            format!("user:{TASK_PROMPT}"),
            "tool:toolu_c1:Find `*.txt`:completed:a.txt\nb.txt".to_owned(),
            "agent:Two files; reading the first.".to_owned(),
            "tool:toolu_c2:Read a.txt:completed:hello".to_owned(),
            "agent:a.txt says hello.".to_owned(),
        ]
    );
    assert_eq!(
        (live_info.start, live_info.end),
        (0, Some(live_entries.len() as u64 - 1)),
        "the card's indices cover the child thread"
    );

    // Reopening the parent in the same proxy (the agent replays everything, child events
    // included) changes neither the card nor the child thread.
    zed.load(S);
    assert_eq!(
        format!("{:?}", zed.card(S, SPAWN)),
        format!("{live_card:?}")
    );
    zed.load(&cid);
    assert_eq!(
        describe(&zed.entries(&cid)),
        live_entries,
        "parent reload in place"
    );
    let stderr = zed.close();
    assert!(
        store_complaints(&stderr).is_empty(),
        "store trouble:\n{stderr}"
    );

    // What the file holds once the proxy exited.
    {
        let store = open_store(&store_path);
        let c = stored(&store, &cid).expect("the child is stored");
        let mut expected = vec![prompt_update(TASK_PROMPT)];
        expected.extend(child_events.iter().map(Value::to_string));
        assert_eq!(
            c.updates, expected,
            "stored transcript = task prompt + the agent's child events"
        );
        assert_eq!(c.parent_session_id.as_str(), S);
        assert_eq!(
            c.tool_name.as_deref(),
            Some("Agent"),
            "the spawning tool's name"
        );
        assert_eq!(c.spawn_tool_call_id, SPAWN);
        assert_eq!(c.state.as_str(), "completed");
        assert_eq!(c.entry_count as usize, live_entries.len());
    }

    // --- Second proxy, new agent: its replay has the spawn and its completion, not the
    // child's events.
    let mut replay = vec![user];
    replay.extend(turn.iter().filter(|u| !child_events.contains(u)).cloned());
    assert_eq!(replay.len(), history.len() - child_events.len());
    let mut steps = agent_init_steps();
    steps.push(json!({"expect": "session/load"}));
    steps.extend(replay.iter().map(|u| json!({"send": notification(S, u)})));
    steps.push(json!({"reply": {}}));
    steps.push(json!({"record": scratch.p("agent-2-received.jsonl")}));
    let agent2 = agent_cmd(&scratch, "agent-2.jsonl", &steps);

    let mut zed = Zed::start(scratch.dir.path(), &store_path, &config, &agent2);
    zed.initialize();
    zed.load(S);
    let card = zed.card(S, SPAWN);
    assert_eq!(
        format!("{card:?}"),
        format!("{live_card:?}"),
        "the card after a restart"
    );
    assert!(zed.model.threads[S].tool_calls().all(|t| t.id == SPAWN));
    zed.load(&cid);
    assert_eq!(
        describe(&zed.entries(&cid)),
        live_entries,
        "the child after a restart"
    );
    let stderr = zed.close();
    assert!(
        store_complaints(&stderr).is_empty(),
        "store trouble:\n{stderr}"
    );
    let received =
        std::fs::read_to_string(scratch.path("agent-2-received.jsonl")).unwrap_or_default();
    assert!(
        !received.contains(&cid),
        "the child's load reached the agent:\n{received}"
    );

    // --- Third proxy: the child is opened directly, without reloading its parent.
    let mut steps = agent_init_steps();
    steps.push(json!({"record": scratch.p("agent-3-received.jsonl")}));
    let agent3 = agent_cmd(&scratch, "agent-3.jsonl", &steps);
    let mut zed = Zed::start(scratch.dir.path(), &store_path, &config, &agent3);
    zed.initialize();
    zed.load(&cid);
    assert_eq!(
        describe(&zed.entries(&cid)),
        live_entries,
        "the child opened directly"
    );
    zed.close();
    let received =
        std::fs::read_to_string(scratch.path("agent-3-received.jsonl")).unwrap_or_default();
    assert!(
        !received.contains("session/load"),
        "the child's load reached the agent:\n{received}"
    );
}

// ---------------------------------------------------------------------------------------
// 2. SIGKILL while writing

/// A crash run's session: two subagents whose tool calls interleave. Every id contains
/// [`RUN`], replaced by the run number, so the script is built once.
struct CrashPlan {
    /// The agent script.
    script: String,
    /// Per child: (spawn id, the updates the child thread must hold, in order).
    children: Vec<(String, Vec<String>)>,
}

const RUN: &str = "RUN_NUMBER";

impl CrashPlan {
    fn new(calls: usize, pid_file: &str) -> CrashPlan {
        let session = format!("crash-{RUN}");
        let spawns = [format!("toolu_a{RUN}"), format!("toolu_b{RUN}")];
        let mut steps = vec![json!({"pid_file": pid_file})];
        steps.extend(agent_init_steps());
        steps.push(json!({"expect": "session/new"}));
        steps.push(json!({"reply": {"sessionId": session}}));
        steps.push(json!({"expect": "session/prompt"}));
        let mut children: Vec<(String, Vec<String>)> = Vec::new();
        for spawn in &spawns {
            let prompt = format!("work for {spawn}");
            let task = spawn_task(spawn, &format!("task {spawn}"), &prompt);
            steps.push(json!({"send": notification(&session, &spawn_call(spawn))}));
            steps.push(json!({"send": notification(&session, &task)}));
            children.push((spawn.clone(), vec![prompt_update(&prompt)]));
        }
        for k in 0..calls {
            for (spawn, expected) in children.iter_mut() {
                let update = child_call(spawn, &format!("{spawn}_call_{k}"), &format!("file {k}"));
                expected.push(update.to_string());
                steps.push(json!({"send": notification(&session, &update)}));
            }
        }
        for (spawn, expected) in children.iter_mut() {
            let update = child_text(spawn, "done");
            expected.push(update.to_string());
            steps.push(json!({"send": notification(&session, &update)}));
            steps.push(json!({"send": notification(&session, &spawn_done(spawn))}));
        }
        steps.push(json!({"reply": {"stopReason": "end_turn"}}));
        CrashPlan {
            script: steps.iter().map(|s| format!("{s}\n")).collect(),
            children,
        }
    }

    fn session(run: usize) -> String {
        format!("crash-{run}")
    }

    fn script(&self, run: usize) -> String {
        self.script.replace(RUN, &run.to_string())
    }

    fn children(&self, run: usize) -> Vec<(String, Vec<String>)> {
        let n = run.to_string();
        self.children
            .iter()
            .map(|(spawn, updates)| {
                (
                    spawn.replace(RUN, &n),
                    updates.iter().map(|u| u.replace(RUN, &n)).collect(),
                )
            })
            .collect()
    }
}

fn kill_group(pgid: i32) {
    // SAFETY: killpg has no memory-safety preconditions.
    unsafe {
        libc::killpg(pgid, libc::SIGKILL);
    }
}

/// `stored` is `expected[..stored.len()]`: an exact, in-order prefix.
fn assert_prefix(stored: &[String], expected: &[String], what: &str) {
    assert!(
        stored.len() <= expected.len(),
        "{what}: {} updates stored, only {} emitted",
        stored.len(),
        expected.len()
    );
    for (i, (s, e)) in stored.iter().zip(expected).enumerate() {
        assert_eq!(s, e, "{what}: update {i} differs");
    }
}

#[test]
fn proxy_killed_while_writing_leaves_exact_prefixes() {
    const SEED: u64 = 0xacd0_57a3_2026_0002;
    const RUNS: usize = 50;
    const CALLS: usize = 300;
    let mut rng = Rng(SEED);
    let scratch = Scratch::new();
    let store_path = scratch.path("store.sqlite3");
    let config = scratch.path("proxy.toml");
    std::fs::write(&config, FAST_SHUTDOWN).expect("write config");
    let mut kept: Vec<(String, Vec<String>)> = Vec::new();
    let mut total_stored = 0;
    let plan = CrashPlan::new(CALLS, &scratch.p(&format!("agent-{RUN}.pid")));

    for run in 0..RUNS {
        let pid_file = scratch.p(&format!("agent-{run}.pid"));
        let script = scratch.write(&format!("crash-{run}.jsonl"), plan.script(run));
        let agent = vec![
            BIN.to_owned(),
            "demo-agent".to_owned(),
            "--script".to_owned(),
            script,
        ];
        let session = CrashPlan::session(run);
        // Kill at a random moment of the prompt turn, while the proxy relays and stores.
        let pause = Duration::from_millis(rng.range(0, 150));
        let what = format!("run {run} (seed {SEED:#x}, killed {pause:?} into the turn)");

        let mut zed = Zed::start(scratch.dir.path(), &store_path, &config, &agent);
        zed.initialize();
        let agent_pid = proxy::read_pid(Path::new(&pid_file));
        let _guard = proxy::KillOnPanic(vec![agent_pid]);
        zed.request("session/new", json!({"cwd": "/project", "mcpServers": []}));
        let prompt = json!({"jsonrpc": "2.0", "id": 999, "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}});
        zed.proxy.send_json(&prompt);
        std::thread::sleep(pause);
        // SIGKILL: no destructor, no flush.
        zed.proxy.signal(libc::SIGKILL);
        let status = zed.proxy.wait();
        assert!(
            status.code().is_none(),
            "{what}: the proxy exited by itself"
        );
        // The agent is in its own process group: the proxy cannot clean it up any more.
        kill_group(agent_pid);
        proxy::assert_gone(agent_pid, "the agent");

        let store = open_store(&store_path);
        for (spawn, expected) in &plan.children(run) {
            let cid = child_session_id(&session, spawn);
            let updates = stored(&store, &cid).map(|c| c.updates).unwrap_or_default();
            assert_prefix(&updates, expected, &format!("{what}, child {spawn}"));
            total_stored += updates.len();
            kept.push((cid, updates));
        }
    }

    // Later runs, and recovering from each kill, left earlier children as they were.
    let store = open_store(&store_path);
    for (cid, updates) in &kept {
        let now = stored(&store, cid).map(|c| c.updates).unwrap_or_default();
        assert_eq!(&now, updates, "child {cid} changed after its run");
    }
    assert!(
        total_stored > 0,
        "no run stored anything: the test proves nothing"
    );
}

// ---------------------------------------------------------------------------------------
// 3. Two proxies, one store

struct LongPlan {
    session: String,
    children: Vec<(String, Vec<String>)>,
    steps: Vec<Value>,
}

/// A prompt turn of about `batches × pause` with a subagent after another, each child
/// emitting tool calls in small bursts.
fn long_plan(
    name: &str,
    spawns: usize,
    batches: usize,
    per_batch: usize,
    pause_ms: u64,
) -> LongPlan {
    let session = format!("conc-{name}");
    let mut steps = agent_init_steps();
    steps.push(json!({"expect": "session/new"}));
    steps.push(json!({"reply": {"sessionId": session}}));
    steps.push(json!({"expect": "session/prompt"}));
    let mut children = Vec::new();
    for s in 0..spawns {
        let spawn = format!("toolu_{name}_{s}");
        let prompt = format!("task {s} of {name}");
        steps.push(json!({"send": notification(&session, &spawn_call(&spawn))}));
        steps.push(
            json!({"send": notification(&session, &spawn_task(&spawn, &format!("step {s}"), &prompt))}),
        );
        let mut expected = vec![prompt_update(&prompt)];
        for b in 0..batches {
            for k in 0..per_batch {
                let id = format!("{spawn}_{b}_{k}");
                let call = child_call(&spawn, &id, &format!("file {b}.{k}"));
                let done = child_call_done(&spawn, &id, &format!("contents {b}.{k}"));
                for u in [call, done] {
                    expected.push(u.to_string());
                    steps.push(json!({"send": notification(&session, &u)}));
                }
            }
            steps.push(json!({"sleep_ms": pause_ms}));
        }
        let end = child_text(&spawn, &format!("{spawn} finished"));
        expected.push(end.to_string());
        steps.push(json!({"send": notification(&session, &end)}));
        steps.push(json!({"send": notification(&session, &spawn_done(&spawn))}));
        children.push((spawn, expected));
    }
    steps.push(json!({"reply": {"stopReason": "end_turn"}}));
    LongPlan {
        session,
        children,
        steps,
    }
}

#[test]
fn two_proxies_share_one_store() {
    let scratch = Scratch::new();
    let store_path = scratch.path("store.sqlite3");
    let config = scratch.path("proxy.toml");
    std::fs::write(&config, FAST_SHUTDOWN).expect("write config");
    // About 10 s each: 8 subagents × 50 bursts × 25 ms.
    let plans = [
        long_plan("one", 8, 50, 6, 25),
        long_plan("two", 8, 50, 6, 25),
    ];
    let mut zeds: Vec<Zed> = plans
        .iter()
        .map(|plan| {
            let agent = agent_cmd(&scratch, &format!("{}.jsonl", plan.session), &plan.steps);
            let mut zed = Zed::start(scratch.dir.path(), &store_path, &config, &agent);
            zed.initialize();
            zed.request("session/new", json!({"cwd": "/project", "mcpServers": []}));
            zed
        })
        .collect();
    // Both prompts run at the same time; the test reads each proxy's output on a thread.
    let handles: Vec<_> = zeds
        .drain(..)
        .zip(&plans)
        .map(|(mut zed, plan)| {
            let session = plan.session.clone();
            std::thread::spawn(move || {
                zed.request(
                    "session/prompt",
                    json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
                );
                zed
            })
        })
        .collect();
    let zeds: Vec<Zed> = handles
        .into_iter()
        .map(|h| h.join().expect("prompt thread"))
        .collect();
    for (zed, plan) in zeds.into_iter().zip(&plans) {
        let stderr = zed.close();
        assert!(
            store_complaints(&stderr).is_empty(),
            "{}: store trouble:\n{stderr}",
            plan.session
        );
    }

    let store = open_store(&store_path);
    for plan in &plans {
        for (spawn, expected) in &plan.children {
            let cid = child_session_id(&plan.session, spawn);
            let c = stored(&store, &cid).unwrap_or_else(|| panic!("{spawn} not stored"));
            assert_eq!(c.updates.len(), expected.len(), "{spawn}: update count");
            assert!(c.updates == *expected, "{spawn}: updates differ");
            assert_eq!(c.state.as_str(), "completed", "{spawn}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// 4. Shutdown commits what is queued

#[derive(Debug, Clone, Copy)]
enum Ending {
    ClientEof,
    Signal(i32),
}

/// Wait (bounded) until a process is gone.
fn wait_gone(pid: i32, what: &str) {
    let deadline = std::time::Instant::now() + proxy::TIMEOUT;
    while proxy::alive(pid) {
        assert!(
            std::time::Instant::now() < deadline,
            "{what} (pid {pid}) did not exit"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn proxy_commits_queued_writes_before_it_exits() {
    for ending in [
        Ending::ClientEof,
        Ending::Signal(libc::SIGTERM),
        Ending::Signal(libc::SIGINT),
    ] {
        let scratch = Scratch::new();
        let store_path = scratch.path("store.sqlite3");
        let config = scratch.path("proxy.toml");
        // No retention: the store is left alone but for this turn's writes.
        std::fs::write(
            &config,
            format!("{FAST_SHUTDOWN}[store]\nmax_age = 0\nmax_bytes = 0\n"),
        )
        .expect("write config");
        let (turn, child_events) = live_turn();
        let pid_file = scratch.p("agent.pid");
        let mut steps = vec![json!({"pid_file": pid_file})];
        steps.extend(agent_init_steps());
        steps.push(json!({"expect": "session/new"}));
        steps.push(json!({"reply": {"sessionId": S}}));
        steps.push(json!({"expect": "session/prompt"}));
        steps.extend(turn.iter().map(|u| json!({"send": notification(S, u)})));
        steps.push(json!({"reply": {"stopReason": "end_turn"}}));
        let agent = agent_cmd(&scratch, "agent.jsonl", &steps);

        let mut zed = Zed::start(scratch.dir.path(), &store_path, &config, &agent);
        zed.initialize();
        let agent_pid = proxy::read_pid(Path::new(&pid_file));
        let _guard = proxy::KillOnPanic(vec![agent_pid]);
        zed.request("session/new", json!({"cwd": "/project", "mcpServers": []}));

        // Another process holds the store's write lock: the proxy's writes stay queued.
        let lock = rusqlite::Connection::open(&store_path).expect("open the store file");
        lock.execute_batch("BEGIN IMMEDIATE")
            .expect("take the write lock");
        zed.request(
            "session/prompt",
            json!({"sessionId": S, "prompt": [{"type": "text", "text": USER_PROMPT}]}),
        );
        match ending {
            Ending::ClientEof => zed.proxy.close_stdin(),
            Ending::Signal(sig) => zed.proxy.signal(sig),
        }
        // The relay is done once its agent is gone; give a proxy that would not wait for its
        // store the time to exit.
        wait_gone(agent_pid, "the agent");
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            zed.proxy
                .child
                .try_wait()
                .expect("poll the proxy")
                .is_none(),
            "{ending:?}: the proxy exited with its writes still queued"
        );
        lock.execute_batch("ROLLBACK").expect("release the lock");
        drop(lock);

        let code = zed.proxy.exit_code();
        let expected_code = match ending {
            Ending::ClientEof => 0,
            Ending::Signal(sig) => 128 + sig,
        };
        let stderr = zed.proxy.stderr();
        assert_eq!(code, expected_code, "{ending:?}; stderr:\n{stderr}");
        assert!(
            store_complaints(&stderr).is_empty(),
            "{ending:?}: store trouble:\n{stderr}"
        );
        let store = open_store(&store_path);
        let c = stored(&store, &child_session_id(S, SPAWN))
            .unwrap_or_else(|| panic!("{ending:?}: the child is not stored"));
        let mut expected = vec![prompt_update(TASK_PROMPT)];
        expected.extend(child_events.iter().map(Value::to_string));
        assert_eq!(c.updates, expected, "{ending:?}");
        assert_eq!(c.state.as_str(), "completed", "{ending:?}");
    }
}

#[test]
fn a_full_write_queue_slows_the_relay_and_loses_nothing() {
    let scratch = Scratch::new();
    let store_path = scratch.path("store.sqlite3");
    let config = scratch.path("proxy.toml");
    std::fs::write(
        &config,
        format!("{FAST_SHUTDOWN}[store]\nmax_age = 0\nmax_bytes = 0\nqueue_ops = 2\n"),
    )
    .expect("write config");
    let (turn, child_events) = live_turn();
    let mut steps = agent_init_steps();
    steps.push(json!({"expect": "session/new"}));
    steps.push(json!({"reply": {"sessionId": S}}));
    steps.push(json!({"expect": "session/prompt"}));
    steps.extend(turn.iter().map(|u| json!({"send": notification(S, u)})));
    steps.push(json!({"reply": {"stopReason": "end_turn"}}));
    let agent = agent_cmd(&scratch, "agent.jsonl", &steps);

    let mut zed = Zed::start(scratch.dir.path(), &store_path, &config, &agent);
    zed.initialize();
    zed.request("session/new", json!({"cwd": "/project", "mcpServers": []}));
    let lock = rusqlite::Connection::open(&store_path).expect("open the store file");
    lock.execute_batch("BEGIN IMMEDIATE")
        .expect("take the write lock");
    let prompt = json!({"jsonrpc": "2.0", "id": 77, "method": "session/prompt",
        "params": {"sessionId": S, "prompt": [{"type": "text", "text": USER_PROMPT}]}});
    zed.model.client_sent(&prompt);
    zed.proxy.send_json(&prompt);
    // The writer cannot commit and the queue holds two writes: the relay waits, and says so.
    let deadline = std::time::Instant::now() + proxy::TIMEOUT;
    while !zed.proxy.stderr().contains("write queue full") {
        assert!(
            std::time::Instant::now() < deadline,
            "no word of the full queue; stderr:\n{}",
            zed.proxy.stderr()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    lock.execute_batch("ROLLBACK").expect("release the lock");
    drop(lock);
    loop {
        let got = zed.proxy.next_json();
        zed.model.received(&got);
        if got["id"] == json!(77) {
            assert_eq!(got["result"]["stopReason"], "end_turn", "{got}");
            break;
        }
    }
    assert_eq!(zed.card(S, SPAWN).status, "completed");
    zed.close();
    let store = open_store(&store_path);
    let c = stored(&store, &child_session_id(S, SPAWN)).expect("the child is stored");
    let mut expected = vec![prompt_update(TASK_PROMPT)];
    expected.extend(child_events.iter().map(Value::to_string));
    assert_eq!(c.updates, expected);
    assert_eq!(c.state.as_str(), "completed");
}
