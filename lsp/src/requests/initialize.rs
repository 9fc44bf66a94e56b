//! `initialize`: the workspace root, the client's options and
//! capabilities, the repository context, and what the server offers.

use owt_protocol::lsp::InitializationOptions;
use tower_lsp_server::ls_types::*;

use super::super::convert::uri_to_path;
use super::super::event::Reply;
use super::super::state::State;
use owt_core::ops::Context;

pub fn handle(state: &mut State, params: InitializeParams, reply: Reply<InitializeResult>) {
    #[allow(deprecated)]
    let root = params
        .workspace_folders
        .as_ref()
        .and_then(|folders| folders.first())
        .and_then(|folder| uri_to_path(&folder.uri))
        .or_else(|| params.root_uri.as_ref().and_then(uri_to_path))
        .or_else(|| std::env::current_dir().ok());
    if let Some(options) = params.initialization_options {
        match serde_json::from_value::<InitializationOptions>(options) {
            Ok(options) => state.options = options,
            Err(e) => tracing::warn!("ignoring invalid initializationOptions: {e}"),
        }
    }
    state.progress_supported = params
        .capabilities
        .window
        .as_ref()
        .and_then(|w| w.work_done_progress)
        .unwrap_or(false);
    state.message_actions_supported = params
        .capabilities
        .window
        .as_ref()
        .is_some_and(|w| w.show_message.is_some());
    state.related_supported = params
        .capabilities
        .text_document
        .as_ref()
        .and_then(|t| t.publish_diagnostics.as_ref())
        .and_then(|p| p.related_information)
        .unwrap_or(false);
    if let Some(root) = &root {
        let opened = match &state.home {
            Ok(home) => Context::open_in(Some(root), home),
            Err(why) => Err(anyhow::anyhow!("{why}")),
        };
        match opened {
            Ok(ctx) => {
                // What a cloned repository's own files were not allowed to
                // do: said after `initialized` (the client takes messages
                // only then).
                state.trust_notice = owt_core::ops::trust::notice(&ctx);
                if ctx.config.config.agent.auto_resume {
                    resume_lost_sessions(root.clone(), ctx.home.clone());
                }
                state.ctx = Some(ctx)
            }
            Err(e) => tracing::warn!("{}: not an owt workspace: {e:#}", root.display()),
        }
    }
    state.root = root;
    let _ = reply.send(Ok(result()));
}

/// `[agent] auto_resume`: the sessions whose host died are resumed, on a
/// thread of their own (starting hosts takes a while; the client is not
/// kept waiting).
fn resume_lost_sessions(root: std::path::PathBuf, home: std::path::PathBuf) {
    std::thread::spawn(move || match Context::open_in(Some(&root), &home) {
        Ok(mut ctx) => {
            for resumed in owt_core::ops::resume::auto_resume(&mut ctx) {
                match resumed.outcome {
                    Ok(how) => tracing::info!(session = %resumed.name, "auto_resume: {how}"),
                    Err(e) => tracing::warn!(session = %resumed.name, "auto_resume: {e:#}"),
                }
            }
        }
        Err(e) => tracing::warn!("auto_resume: {e:#}"),
    });
}

/// What the server offers.
fn result() -> InitializeResult {
    InitializeResult {
        capabilities: ServerCapabilities {
            text_document_sync: Some(TextDocumentSyncCapability::Options(
                TextDocumentSyncOptions {
                    open_close: Some(true),
                    change: Some(TextDocumentSyncKind::INCREMENTAL),
                    save: Some(TextDocumentSyncSaveOptions::Supported(true)),
                    ..TextDocumentSyncOptions::default()
                },
            )),
            code_action_provider: Some(CodeActionProviderCapability::Simple(true)),
            execute_command_provider: Some(ExecuteCommandOptions {
                commands: owt_protocol::lsp::commands::ALL
                    .iter()
                    .map(|c| c.to_string())
                    .collect(),
                work_done_progress_options: WorkDoneProgressOptions::default(),
            }),
            ..ServerCapabilities::default()
        },
        server_info: Some(ServerInfo {
            name: "owt".into(),
            version: Some(env!("CARGO_PKG_VERSION").into()),
        }),
        offset_encoding: None,
    }
}
