//! How each agent marks subagents on the wire, as data.
//!
//! The detector (`subagents::detect`) only walks these tables; supporting a new agent (or a new
//! version of one) means adding a row, not a code path. Pointers are JSON pointers into a
//! `session/update`'s `update` object (or a permission request's `toolCall`).

/// One agent family's subagent signature.
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    pub name: &'static str,
    /// Where the tool's underlying name is, and which names spawn a subagent.
    pub tool_name_pointers: &'static [&'static str],
    pub spawn_tool_names: &'static [&'static str],
    /// A spawn recognised by shape: `title` equal to one of these (case-sensitive) together
    /// with a `rawInput` holding every key in `spawn_input_keys`, or `rawInput` alone when the
    /// title list is empty.
    pub spawn_titles: &'static [&'static str],
    pub spawn_input_keys: &'static [&'static str],
    /// Where a child event names its spawn's tool call id.
    pub parent_pointers: &'static [&'static str],
    /// Where the spawn carries the task prompt and a short task description.
    pub prompt_pointers: &'static [&'static str],
    pub description_pointers: &'static [&'static str],
    /// A spawn update whose value here is `true` launched a background child: its completion
    /// is only the launch notice, the child keeps running.
    pub background_pointers: &'static [&'static str],
    /// Where a completed spawn carries the child's final answer as content blocks.
    pub result_pointers: &'static [&'static str],
}

/// Claude (`claude-agent-acp` legacy wire, and the parent ids it still sends with standard
/// subagents).
pub const CLAUDE: Preset = Preset {
    name: "claude",
    tool_name_pointers: &["/_meta/claudeCode/toolName"],
    spawn_tool_names: &["Task", "Agent"],
    spawn_titles: &[],
    spawn_input_keys: &[],
    parent_pointers: &["/_meta/claudeCode/parentToolUseId"],
    prompt_pointers: &["/rawInput/prompt"],
    description_pointers: &["/rawInput/description"],
    background_pointers: &["/_meta/claudeCode/toolResponse/isAsync"],
    result_pointers: &["/_meta/claudeCode/toolResponse/content"],
};

/// Qwen Code: child events re-emitted on the parent with `_meta.parentToolCallId`.
pub const QWEN: Preset = Preset {
    name: "qwen",
    tool_name_pointers: &["/_meta/toolName"],
    spawn_tool_names: &["task", "Task", "agent"],
    spawn_titles: &[],
    spawn_input_keys: &[],
    parent_pointers: &["/_meta/parentToolCallId"],
    prompt_pointers: &["/rawInput/prompt"],
    description_pointers: &["/rawInput/description"],
    background_pointers: &[],
    result_pointers: &[],
};

/// OpenCode 1.x: a `task` tool call with `{description, prompt, subagent_type}` input and no
/// child stream (the card gets the prompt and the final result).
pub const OPENCODE: Preset = Preset {
    name: "opencode",
    tool_name_pointers: &[],
    spawn_tool_names: &[],
    spawn_titles: &["task"],
    spawn_input_keys: &["prompt", "subagent_type"],
    parent_pointers: &[],
    prompt_pointers: &["/rawInput/prompt"],
    description_pointers: &["/rawInput/description"],
    background_pointers: &[],
    result_pointers: &[],
};

/// Every preset, tried in order.
pub const ALL: &[Preset] = &[CLAUDE, QWEN, OPENCODE];

/// Names accepted in the config's `presets` list.
pub fn by_name(name: &str) -> Option<Preset> {
    ALL.iter().copied().find(|p| p.name == name)
}
