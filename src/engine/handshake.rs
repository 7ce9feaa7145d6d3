//! The `initialize` exchange: the output flavour is chosen from what the client says it is,
//! the agent is told what the proxy needs, and the client learns that child threads load.

use bytes::Bytes;
use serde_json::Value;

use super::{Action, Engine, EngineConfig, Mode, NoteLevel, SubagentDisplay};
use crate::subagents::entries::EntryRules;
use crate::subagents::preset::detect::Detector;
use crate::subagents::preset::select::AgentInfo;
use crate::subagents::render::acp::Acp;
use crate::subagents::render::transcript::Transcript;
use crate::subagents::render::zed::Zed;
use crate::subagents::render::Output;
use crate::wire::{self, write};

/// The output of a flavour (Zed's cards until the client's `initialize` chose).
pub(super) fn renderer_for(mode: Option<Mode>, cfg: &EngineConfig) -> Output {
    match mode {
        Some(Mode::Transcript) => Output::Cards(Box::new(Transcript::new(
            cfg.presets
                .set()
                .iter()
                .flat_map(|p| p.boilerplate.iter().cloned())
                .collect(),
        ))),
        Some(Mode::Acp) => Output::Standard(Acp::default()),
        _ => Output::Cards(Box::new(Zed::new(cfg.zed.live_progress))),
    }
}

impl Engine {
    pub(super) fn client_initialize(&mut self, frame: Bytes, out: &mut Vec<Action>) {
        let Some(mut msg) = wire::parse_value(&frame) else {
            out.push(Action::ToAgent(frame));
            return;
        };
        let params = &msg["params"];
        self.sessions.client_initialize(params);
        let advertises_subagents = params.pointer("/clientCapabilities/subagents").is_some();
        let client_name = params
            .pointer("/clientInfo/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let is_zed = client_name.to_ascii_lowercase().contains("zed");
        // Which Zed: the child threads' entries are counted as it counts them.
        let rules = EntryRules::of_client(params);
        self.reg.set_entry_rules(rules);
        // Zed's main branch puts a permission request's tool call into the thread it names.
        self.held
            .set_requests_on_cards(is_zed && rules == EntryRules::Main);
        let link_before = super::quirks::foreign::client_side_rewrites(params);
        let mode = match self.cfg.display {
            // A rewriting link on the client side already does the work: relay.
            _ if link_before => Mode::Off,
            SubagentDisplay::Off => Mode::Off,
            SubagentDisplay::Zed => Mode::Zed,
            SubagentDisplay::Acp => Mode::Acp,
            SubagentDisplay::Transcript => Mode::Transcript,
            SubagentDisplay::Auto if advertises_subagents => Mode::Acp,
            SubagentDisplay::Auto if is_zed => Mode::Zed,
            SubagentDisplay::Auto => Mode::Transcript,
        };
        if self.mode != Some(mode) {
            self.render = renderer_for(Some(mode), &self.cfg);
        }
        self.mode = Some(mode);
        self.note(
            out,
            NoteLevel::Info,
            format!(
                "client `{client_name}`: subagents shown as {mode:?} (display = {:?})",
                self.cfg.display
            ),
        );
        if link_before {
            self.note(
                out,
                NoteLevel::Info,
                "the client side already rewrites subagents (its initialize carries clientCapabilities._meta[\"subagent-transcript\"], an acp-proxy's opt-in): this link relays them as they are".into(),
            );
        }
        if !self.models_subagents() {
            out.push(Action::ToAgent(frame));
            return;
        }
        let mut changed = false;
        if let Some(v) = msg.pointer_mut("/params/protocolVersion") {
            if v.as_u64().is_some_and(|n| n > 1) {
                // The proxy understands v1 shapes only: negotiate v1 rather than let a newer
                // version through silently.
                *v = Value::from(1);
                changed = true;
            }
        }
        // A client that advertised subagents itself asked for them already.
        if self.cfg.zed.opt_in && mode != Mode::Acp {
            if let Some(params) = msg.get_mut("params").and_then(Value::as_object_mut) {
                let caps = params
                    .entry("clientCapabilities")
                    .or_insert_with(|| Value::Object(Default::default()));
                if let Some(caps) = caps.as_object_mut() {
                    if !caps.contains_key("subagents") {
                        caps.insert("subagents".into(), Value::Object(Default::default()));
                        changed = true;
                    }
                    let meta = caps
                        .entry("_meta")
                        .or_insert_with(|| Value::Object(Default::default()));
                    if let Some(meta) = meta.as_object_mut() {
                        meta.insert("subagent-transcript".into(), Value::Bool(true));
                        changed = true;
                    }
                }
            }
        }
        out.push(Action::ToAgent(if changed {
            write::line(&msg)
        } else {
            frame
        }));
    }

    /// The subagent presets for this agent, chosen from its `initialize` answer (unless the
    /// config names them), and a note saying which and why.
    pub(super) fn choose_presets(&mut self, frame: &[u8], out: &mut Vec<Action>) {
        let info = AgentInfo::from_initialize_response(wire::line_body(frame));
        let chosen = self.cfg.presets.choose(info.as_ref());
        self.detector = Detector::new(chosen.presets);
        self.note(out, NoteLevel::Info, chosen.reason);
    }

    /// What the agent's `initialize` answer says of it (its name, whether it loads sessions),
    /// for every flavour that models subagents (Zed's also gets it rewritten,
    /// [`Engine::agent_initialized`]).
    pub(super) fn read_agent_caps(&mut self, frame: &[u8]) {
        #[derive(serde::Deserialize)]
        struct Answer {
            #[serde(default)]
            result: Option<Result>,
        }
        #[derive(serde::Deserialize)]
        struct Result {
            #[serde(rename = "agentCapabilities", default)]
            caps: Option<Caps>,
            #[serde(rename = "agentInfo", default)]
            info: Option<Info>,
        }
        #[derive(serde::Deserialize)]
        struct Info {
            #[serde(default)]
            name: Option<String>,
        }
        #[derive(serde::Deserialize)]
        struct Caps {
            #[serde(rename = "loadSession", default)]
            load_session: Option<bool>,
        }
        let result = serde_json::from_slice::<Answer>(wire::line_body(frame))
            .ok()
            .and_then(|a| a.result);
        let (caps, info) = result.map_or((None, None), |r| (r.caps, r.info));
        self.agent_loads = caps.and_then(|c| c.load_session).unwrap_or(false);
        // What the proxy calls the agent in the notes it writes into child threads.
        self.agent_name = info
            .and_then(|i| i.name)
            .unwrap_or_else(|| "agent".to_owned());
    }

    pub(super) fn agent_initialized(&mut self, frame: Bytes, out: &mut Vec<Action>) {
        let Some(mut msg) = wire::parse_value(&frame) else {
            out.push(Action::ToClient(frame));
            return;
        };
        let Some(result) = msg.get_mut("result").and_then(Value::as_object_mut) else {
            out.push(Action::ToClient(frame));
            return;
        };
        self.agent_name = result
            .get("agentInfo")
            .and_then(|i| i.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("agent")
            .to_owned();
        let caps = result
            .entry("agentCapabilities")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(caps) = caps.as_object_mut() {
            self.agent_loads = caps.get("loadSession").and_then(Value::as_bool) == Some(true);
            // Zed loads child threads only from agents that advertise loadSession; the proxy
            // serves child loads itself and answers parent loads with an error when the
            // agent cannot.
            caps.insert("loadSession".into(), Value::Bool(true));
        }
        out.push(Action::ToClient(write::line(&msg)));
    }
}
