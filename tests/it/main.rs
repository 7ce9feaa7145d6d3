//! The integration tests, as one crate: one build and one link instead of one per file, and
//! one shared [`support`] module (the binary driver, the engine harness, frame builders and
//! store helpers).
//!
//! Files are modules named for what they test; `tests/fixtures/` holds the captured traffic
//! some of them replay.

// Helpers are `pub` for the modules of this crate; the lint is for the library's API.
#![allow(unreachable_pub)]
// They drive the proxy with Unix signals, `/proc` and `sh` (docs/platforms.md).
#![cfg(unix)]

mod support;

mod acp_subagents;
mod agent_stderr;
mod chain;
mod chain_links;
mod cli_output;
mod config_cli;
mod demo_cli;
mod doctor;
mod dump;
mod dump_html;
mod dump_tools;
mod early_requests;
mod engine_props;
mod faults;
mod folded_reopen;
mod fuzz_corpus;
mod hostile_agents;
mod install;
mod layers;
mod lifecycle;
mod presets_agents;
mod presets_cli;
mod relay_bytes;
mod reopen_store_cards;
mod replay_cases;
mod secrets;
mod setup_zed;
mod soak;
mod standalone;
mod store_cli;
mod store_processes;
mod store_restart;
mod zed_agent_cards;
mod zed_agentpool;
mod zed_bound_children;
mod zed_child_permissions;
mod zed_child_records;
mod zed_droid;
mod zed_dsh;
mod zed_faults;
mod zed_golden;
mod zed_kilo;
mod zed_limits;
mod zed_opencode;
mod zed_reader;
mod zed_replayed_ids;
mod zed_rules;
mod zed_scenarios;
mod zed_timing_agents;
