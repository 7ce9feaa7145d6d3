//! Which presets a connection uses: the ones `proxy.toml` names, else those whose `agents`
//! name the agent (by `initialize` → `agentInfo.name`, and its version where shapes changed),
//! else the fallback set. The choice comes with a sentence saying why, for the log.

use std::sync::Arc;

use serde::Deserialize;

use super::set::PresetSet;
use super::Preset;

/// How the agent introduced itself in its `initialize` answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentInfo {
    pub name: String,
    pub version: Option<String>,
}

impl AgentInfo {
    /// `result.agentInfo` of an `initialize` response (one JSON-RPC line), if present.
    pub fn from_initialize_response(line: &[u8]) -> Option<AgentInfo> {
        #[derive(Deserialize)]
        struct Response {
            result: Option<Init>,
        }
        #[derive(Deserialize)]
        struct Init {
            #[serde(rename = "agentInfo")]
            agent_info: Option<Info>,
        }
        #[derive(Deserialize)]
        struct Info {
            name: Option<String>,
            version: Option<String>,
        }
        let r: Response = serde_json::from_slice(line).ok()?;
        let info = r.result?.agent_info?;
        Some(AgentInfo {
            name: info.name.filter(|n| !n.is_empty())?,
            version: info.version,
        })
    }
}

/// The presets in force and why.
#[derive(Debug, Clone)]
pub struct Selection {
    pub presets: Vec<Preset>,
    pub reason: String,
}

/// The presets an engine may use, and whether the config fixed them.
#[derive(Debug, Clone)]
pub struct PresetChoice {
    set: Arc<PresetSet>,
    named: Option<Vec<String>>,
}

impl Default for PresetChoice {
    fn default() -> Self {
        PresetChoice::auto(PresetSet::builtin())
    }
}

/// A version as agents write it (`0.24.4`, `v1.2`, `1.3.x`), read leniently: the leading
/// numbers, missing ones taken as 0.
pub fn lenient_version(v: &str) -> Option<semver::Version> {
    let v = v.trim().trim_start_matches(['v', 'V']);
    if let Ok(exact) = semver::Version::parse(v) {
        return Some(exact);
    }
    let mut nums = [0u64; 3];
    let mut parts = v.split('.');
    for (i, n) in nums.iter_mut().enumerate() {
        let Some(part) = parts.next() else { break };
        let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
        match digits.parse() {
            Ok(d) => *n = d,
            Err(_) if i == 0 => return None,
            Err(_) => break,
        }
        if digits.len() != part.len() {
            break;
        }
    }
    Some(semver::Version::new(nums[0], nums[1], nums[2]))
}

fn list(presets: &[Preset]) -> String {
    if presets.is_empty() {
        return "none (standard ACP subagents only)".into();
    }
    presets
        .iter()
        .map(|p| p.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

impl PresetChoice {
    /// Choose from the agent's `initialize`.
    pub fn auto(set: Arc<PresetSet>) -> PresetChoice {
        PresetChoice { set, named: None }
    }

    /// Always these presets, in this order; `Err` names the first unknown one.
    pub fn named(set: Arc<PresetSet>, names: &[String]) -> Result<PresetChoice, String> {
        if let Some(bad) = names.iter().find(|n| set.get(n).is_none()) {
            return Err(bad.clone());
        }
        Ok(PresetChoice {
            set,
            named: Some(names.to_vec()),
        })
    }

    pub fn set(&self) -> &PresetSet {
        &self.set
    }

    /// Whether the config fixed the presets.
    pub fn is_named(&self) -> bool {
        self.named.is_some()
    }

    fn named_presets(&self, names: &[String]) -> Vec<Preset> {
        names
            .iter()
            .filter_map(|n| self.set.get(n))
            .cloned()
            .collect()
    }

    /// The presets in force before the agent introduced itself.
    pub fn initial(&self) -> Vec<Preset> {
        match &self.named {
            Some(names) => self.named_presets(names),
            None => self.set.fallback(),
        }
    }

    /// The presets for this agent (`None`: it sent no `agentInfo`), and why.
    pub fn choose(&self, agent: Option<&AgentInfo>) -> Selection {
        if let Some(names) = &self.named {
            let presets = self.named_presets(names);
            return Selection {
                reason: format!("subagent presets named in the config: {}", list(&presets)),
                presets,
            };
        }
        let fallback = self.set.fallback();
        let Some(agent) = agent else {
            return Selection {
                reason: format!(
                    "the agent did not name itself (no agentInfo in its initialize answer): fallback subagent presets {}",
                    list(&fallback)
                ),
                presets: fallback,
            };
        };
        let version = agent.version.as_deref().and_then(lenient_version);
        let shown = match &agent.version {
            Some(v) => format!("agent `{}` {v}", agent.name),
            None => format!("agent `{}` (no version)", agent.name),
        };
        let mut chosen: Vec<Preset> = Vec::new();
        let mut other_versions: Vec<String> = Vec::new();
        for p in self.set.iter() {
            let mut hit = false;
            for a in p
                .agents
                .iter()
                .filter(|a| a.name.eq_ignore_ascii_case(&agent.name))
            {
                match (&a.versions, &version) {
                    (None, _) => hit = true,
                    (Some(req), Some(v)) if req.matches(v) => hit = true,
                    (Some(req), _) => other_versions.push(format!("{} {req}", p.name)),
                }
            }
            if hit {
                chosen.push(p.clone());
            }
        }
        if !chosen.is_empty() {
            return Selection {
                reason: format!("{shown}: subagent presets {}", list(&chosen)),
                presets: chosen,
            };
        }
        let why = if other_versions.is_empty() {
            "no preset names it".to_owned()
        } else {
            format!(
                "its presets are for other versions ({})",
                other_versions.join(", ")
            )
        };
        Selection {
            reason: format!(
                "{shown}: {why}; fallback subagent presets {} (name others in [subagents] presets)",
                list(&fallback)
            ),
            presets: fallback,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subagents::preset::spec::PresetFile;

    fn names(s: &Selection) -> Vec<&str> {
        s.presets.iter().map(|p| p.name.as_str()).collect()
    }

    fn agent(name: &str, version: Option<&str>) -> AgentInfo {
        AgentInfo {
            name: name.into(),
            version: version.map(Into::into),
        }
    }

    #[test]
    fn reads_agent_info_from_the_initialize_answer() {
        let line = br#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentInfo":{"name":"qwen-code","title":"Qwen Code","version":"0.24.4"}}}"#;
        assert_eq!(
            AgentInfo::from_initialize_response(line),
            Some(agent("qwen-code", Some("0.24.4")))
        );
        assert_eq!(
            AgentInfo::from_initialize_response(br#"{"id":1,"result":{}}"#),
            None
        );
        assert_eq!(AgentInfo::from_initialize_response(b"not json"), None);
        assert_eq!(
            AgentInfo::from_initialize_response(br#"{"id":1,"result":{"agentInfo":{"name":""}}}"#),
            None
        );
    }

    #[test]
    fn versions_are_read_leniently() {
        let v = |s: &str| lenient_version(s).map(|v| v.to_string());
        assert_eq!(v("0.24.4").as_deref(), Some("0.24.4"));
        assert_eq!(v("v1.2").as_deref(), Some("1.2.0"));
        assert_eq!(v("1.3.x").as_deref(), Some("1.3.0"));
        assert_eq!(v("2.6.0-beta.1").as_deref(), Some("2.6.0-beta.1"));
        assert_eq!(v("unknown"), None);
    }

    #[test]
    fn chosen_by_agent_name_and_version() {
        let choice = PresetChoice::default();
        let s = choice.choose(Some(&agent("qwen-code", Some("0.24.4"))));
        assert_eq!(names(&s), ["qwen"]);
        assert!(
            s.reason.contains("qwen-code") && s.reason.contains("qwen"),
            "{}",
            s.reason
        );
        let s = choice.choose(Some(&agent(
            "@zed-industries/claude-agent-acp",
            Some("0.23.1"),
        )));
        assert_eq!(names(&s), ["claude"]);
        let s = choice.choose(Some(&agent("OpenCode", Some("1.18.33"))));
        assert_eq!(names(&s), ["opencode"]);
        let s = choice.choose(Some(&agent("opencode", Some("2.0.0"))));
        assert_eq!(names(&s), ["claude", "qwen", "opencode"], "{}", s.reason);
        assert!(s.reason.contains("other versions"), "{}", s.reason);
        let s = choice.choose(Some(&agent("pi-acp", Some("0.0.34"))));
        assert_eq!(names(&s), ["pi"]);
        let s = choice.choose(Some(&agent(
            "@agentclientprotocol/codex-acp",
            Some("2.6.0"),
        )));
        assert_eq!(names(&s), ["codex"]);
        let s = choice.choose(Some(&agent(
            "@agentclientprotocol/codex-acp",
            Some("1.9.0"),
        )));
        assert_eq!(names(&s), ["claude", "qwen", "opencode"], "{}", s.reason);
        let s = choice.choose(Some(&agent("dsh-acp-interactive", Some("1.3.x"))));
        assert_eq!(names(&s), ["dsh"]);
        let s = choice.choose(Some(&agent("fake", None)));
        assert_eq!(names(&s), ["claude", "qwen", "opencode"]);
        assert!(s.reason.contains("no preset names it"), "{}", s.reason);
        let s = choice.choose(None);
        assert_eq!(names(&s), ["claude", "qwen", "opencode"]);
        assert!(s.reason.contains("agentInfo"), "{}", s.reason);
        assert_eq!(
            choice
                .initial()
                .iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>(),
            ["claude", "qwen", "opencode"]
        );
    }

    #[test]
    fn named_presets_win_over_the_agent() {
        let set = PresetSet::builtin();
        let choice =
            PresetChoice::named(set.clone(), &["opencode".into(), "claude".into()]).expect("known");
        let s = choice.choose(Some(&agent("qwen-code", Some("0.24.4"))));
        assert_eq!(names(&s), ["opencode", "claude"]);
        assert!(s.reason.contains("named in the config"), "{}", s.reason);
        assert_eq!(choice.initial().len(), 2);
        let none = PresetChoice::named(set.clone(), &[]).expect("empty is fine");
        assert!(none.choose(None).presets.is_empty());
        assert_eq!(
            PresetChoice::named(set, &["nope".into()]).expect_err("unknown"),
            "nope"
        );
    }

    #[test]
    fn user_presets_are_chosen_for_their_agents() {
        let user: PresetFile = toml::from_str(
            "[[preset]]\nname = \"madeup\"\nagents = [{ name = \"Madeup-Agent\", versions = \">=2\" }]\n",
        )
        .expect("parses");
        let set = Arc::new(
            PresetSet::builtin()
                .with_user(&user.preset, "subagents.preset")
                .expect("valid"),
        );
        let choice = PresetChoice::auto(set);
        assert_eq!(
            names(&choice.choose(Some(&agent("madeup-agent", Some("2.1"))))),
            ["madeup"]
        );
        assert_eq!(
            names(&choice.choose(Some(&agent("madeup-agent", Some("1.9"))))),
            ["claude", "qwen", "opencode"]
        );
    }
}
