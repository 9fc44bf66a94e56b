//! What every part of the owner thread reads: the client and the outbox,
//! the repository context, the client's options and capabilities, the
//! open documents, the sessions as last read, the diagnostics last
//! published, the git refresher and the pull-request watcher, with the
//! lookups handlers share. Each subsystem keeps its own part beside it
//! ([`super::owner::Owner`]); this module names none of them. Only the
//! owner thread touches it ([`super::main_loop`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;

use owt_protocol::lsp::InitializationOptions;
use owt_protocol::SessionView;
use tokio::runtime::Handle;
use tower_lsp_server::ls_types::*;
use tower_lsp_server::Client;

use super::event::Event;
use super::git_refresher::GitRefresher;
use super::outbox::Outbox;
use owt_core::ops::Context;

/// Diagnostics as last published, per document: the live guard's and
/// the review comments', which go out together (one `publishDiagnostics`
/// holds both).
#[derive(Default)]
pub struct Published {
    /// The guard's, with the document version they were published for.
    pub guard: HashMap<Uri, (Option<i32>, Vec<Diagnostic>)>,
    /// The review comments'.
    pub comments: HashMap<Uri, Vec<Diagnostic>>,
}

impl Published {
    /// `diags` with the comment diagnostics of `uri` added.
    pub fn with_comments(&self, uri: &Uri, mut diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
        if let Some(comments) = self.comments.get(uri) {
            diags.extend(comments.iter().cloned());
        }
        diags
    }
}

/// An open document, as the editor has it.
pub struct Document {
    pub text: String,
    pub version: i32,
}

pub struct State {
    pub client: Client,
    pub rt: Handle,
    /// The owner's own queue (for workers, the watcher, the refresher).
    pub tx: Sender<Event>,
    pub outbox: Outbox,
    /// `$OWT_HOME` (the store, the session hosts' sockets), or why there
    /// is none; once a repository is open, `ctx.home`.
    pub home: Result<PathBuf, String>,
    pub root: Option<PathBuf>,
    pub ctx: Option<Context>,
    pub options: InitializationOptions,
    pub progress_supported: bool,
    /// The client shows `relatedInformation` (Helix does not).
    pub related_supported: bool,
    /// The client answers `window/showMessageRequest` (Helix 25.07 does not).
    pub message_actions_supported: bool,
    pub docs: HashMap<Uri, Document>,
    pub published: Published,
    /// Sessions as last read.
    pub sessions: Vec<SessionView>,
    /// Started with the first refresh.
    pub git: Option<GitRefresher>,
    /// The pull-request watcher (`owt watch`'s loop: CI failures, reviews
    /// and new conflicts routed to agents), started with the first refresh.
    pub pr_monitor: Option<owt_core::ops::pr_monitor::Background>,
    pub initialized: bool,
    pub shut_down: bool,
    /// The last error about the store's file shown to the user (shown once).
    pub store_trouble: Option<String>,
    /// What the repository's own files were not allowed to do (trust),
    /// said once the client is initialized.
    pub trust_notice: Option<String>,
    next_token: u64,
}

impl State {
    pub fn new(
        client: Client,
        rt: Handle,
        tx: Sender<Event>,
        home: Result<PathBuf, String>,
    ) -> State {
        let outbox = Outbox::start(client.clone(), &rt);
        State {
            client,
            rt,
            tx,
            outbox,
            home,
            root: None,
            ctx: None,
            options: InitializationOptions::default(),
            progress_supported: false,
            related_supported: false,
            message_actions_supported: false,
            docs: HashMap::new(),
            published: Published::default(),
            sessions: Vec::new(),
            git: None,
            pr_monitor: None,
            initialized: false,
            shut_down: false,
            store_trouble: None,
            trust_notice: None,
            next_token: 0,
        }
    }

    /// Why there is no repository to work with.
    pub fn no_repo_reason(&self) -> String {
        match &self.root {
            Some(root) => format!(
                "{} is not inside a git repository that owt can use",
                root.display()
            ),
            None => "the editor did not name a workspace folder".into(),
        }
    }

    /// The repository context, or why there is none.
    pub fn ctx(&self) -> anyhow::Result<&Context> {
        self.ctx
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("{}", self.no_repo_reason()))
    }

    pub fn next_token(&mut self) -> ProgressToken {
        self.next_token += 1;
        ProgressToken::String(format!("owt/{}/{}", std::process::id(), self.next_token))
    }

    /// The session whose worktree holds `path`, if any.
    pub fn session_of_path(&self, path: &Path) -> Option<&SessionView> {
        self.sessions
            .iter()
            .filter(|s| !s.worktree.is_empty() && path.starts_with(&s.worktree))
            .max_by_key(|s| s.worktree.len())
    }

    /// A session by name, as last read.
    pub fn session_named(&self, name: &str) -> Option<&SessionView> {
        self.sessions.iter().find(|s| s.name == name)
    }

    /// `path` relative to the checkout it is in (the main checkout or a
    /// session's worktree).
    pub fn relative_to_checkout(&self, path: &Path) -> Option<String> {
        if let Some(session) = self.session_of_path(path) {
            return path
                .strip_prefix(&session.worktree)
                .ok()
                .map(|p| p.to_string_lossy().into_owned());
        }
        let root = self.ctx.as_ref()?.repo.main_root().to_path_buf();
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        path.strip_prefix(&root)
            .ok()
            .map(|p| p.to_string_lossy().into_owned())
    }
}
