//! Zed, as the suite plays it: the one place that names the library's Zed model and the
//! `initialize` Zed sends (Zed 1.18's and that of Zed's main branch after it).

pub(crate) use acp_proxy_tools::zed_model::{
    initialize_params, Entry, Thread, ToolCall, ZedModel, ZedRules,
};

/// A short name for the report.
pub(crate) fn name(rules: ZedRules) -> &'static str {
    match rules {
        ZedRules::V1_18 => "zed-1.18",
        ZedRules::Main => "zed-main",
    }
}
