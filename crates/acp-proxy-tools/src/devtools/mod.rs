//! Tools for developing and testing the proxy, not part of it: the `acp-proxy demo` client
//! (`demo`) and the scripted agent behind the demo and the tests (`demo_agent`, the hidden
//! `demo-agent` subcommand).

pub mod demo;
#[allow(unsafe_code)] // signal and descriptor tricks of the scripted agent
pub mod demo_agent;
