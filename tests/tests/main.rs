//! The end-to-end tests, as one test binary (`cargo test -p owt-e2e --test
//! e2e -- MODULE::TEST`): one link of the harness and its dependencies
//! instead of one per file. Every test shares this process with the others;
//! the few that must run alone say so (`owt_e2e::alone`, `tests/src/alone.rs`).

mod session_common;

mod acp_attach;
mod acp_guard_note;
mod acp_owt_agent;
mod acp_protocol;
mod acp_real_agents;
mod agent_env;
mod attach_notify;
mod board_status;
mod board_truth;
mod conductor;
mod control_plane;
mod data_safety;
mod extras;
mod faults;
mod feedback;
mod forge;
mod fork;
mod foundation;
mod guard;
mod guard_warm;
mod helix;
mod limits;
mod lsp;
mod lsp_guard;
mod lsp_permission;
mod lsp_resume;
mod lsp_told;
mod mcp;
mod notify;
mod pre_edit;
mod real_agents;
mod remote;
mod resume;
mod review;
mod scale;
mod security;
mod security_links;
mod security_text;
mod session_attach;
mod session_lifecycle;
mod session_real_agent;
mod session_send;
mod ship;
mod usage_real_agents;
