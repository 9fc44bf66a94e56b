use super::*;

fn err_of(text: &str) -> ConfigError {
    parse_file(Path::new("/r/.owt.toml"), text).unwrap_err()
}

#[test]
fn unknown_key_names_file_key_and_line() {
    let err = err_of("[worktree]\ncopy_files = []\nbase_dir = \"x\"\n");
    let ConfigError::Invalid { line, key, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(*line, 3);
    assert_eq!(key.as_deref(), Some("worktree.base_dir"));
    let text = err.to_string();
    assert!(
        text.starts_with("/r/.owt.toml:3: key `worktree.base_dir`"),
        "{text}"
    );
}

#[test]
fn wrong_type_names_key_and_line() {
    let err = err_of("\n[worktree]\nauto_cleanup_days = \"soon\"\n");
    let ConfigError::Invalid { line, key, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(
        (*line, key.as_deref()),
        (3, Some("worktree.auto_cleanup_days"))
    );
}

#[test]
fn repo_file_wins_key_by_key() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo.toml");
    let user = dir.path().join("user.toml");
    std::fs::write(&repo, "[worktree]\nauto_cleanup_days = 3\n").unwrap();
    std::fs::write(
        &user,
        "[worktree]\nauto_cleanup_days = 9\nbase_directory = \"/wt\"\n[agent]\ndefault_tool = \"codex\"\n",
    )
    .unwrap();
    let loaded = load_files(&[repo.clone(), user.clone()]).unwrap();
    assert_eq!(loaded.config.worktree.auto_cleanup_days, 3);
    assert_eq!(
        loaded.config.worktree.base_directory.as_deref(),
        Some("/wt")
    );
    assert_eq!(loaded.config.agent.default_tool.as_deref(), Some("codex"));
    assert_eq!(loaded.sources, vec![repo, user]);
}

#[test]
fn seed_worktreerc_is_translated() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(".worktreerc.toml"),
        "[worktree]\nbase_directory = \"../wt\"\nauto_cleanup_days = 7\n\n[tmux]\nai_tool = \"codex\"\nauto_start_ai = true\n\n[environment]\nauto_install_deps = true\ncopy_env_file = false\n\n[backend]\nmode = \"tmux\"\n\n[tools.mytool]\nbinary = \"my-ai\"\nprompt_flag = \"-p\"\nsupports_hooks = false\n",
    )
    .unwrap();
    let files = [dir.path().join(".worktreerc.toml")];
    let loaded = load_files(&files).unwrap();
    let c = &loaded.config;
    assert_eq!(c.worktree.base_directory.as_deref(), Some("../wt"));
    assert_eq!(c.worktree.auto_cleanup_days, 7);
    assert_eq!(c.agent.default_tool.as_deref(), Some("codex"));
    assert!(c.environment.auto_install_deps && !c.environment.copy_env_file);
    assert_eq!(c.tools["mytool"].prompt_flag.as_deref(), Some("-p"));
    assert_eq!(loaded.origins["agent.default_tool"], files[0]);
    assert!(
        loaded.ignored.iter().any(|k| k.starts_with("backend")),
        "{:?}",
        loaded.ignored
    );
    assert!(loaded
        .ignored
        .iter()
        .any(|k| k.starts_with("tmux.auto_start_ai")));
}

fn gated(text: &str) -> (Vec<String>, Vec<String>) {
    let table: toml::Table = toml::from_str(text).unwrap();
    let g = gated_keys(&table, Path::new("/home/u/src/app"));
    (
        g.need_trust.iter().map(|k| dotted(k)).collect(),
        g.refused.iter().map(|k| dotted(k)).collect(),
    )
}

#[test]
fn keys_that_run_programs_or_write_elsewhere_need_trust() {
    let (need, refused) = gated(
        "[agent]\ndefault_tool = \"x\"\nenv = { NODE_OPTIONS = \"--require ./evil.js\" }\n\n[tools.x]\nbinary = \"./evil.sh\"\n\n[tools.claude]\nbinary = \"/bin/sh\"\n\n[worktree]\nbase_directory = \"~/.config/autostart\"\ncopy_files = [\".env\"]\n\n[environment]\nauto_install_deps = true\n\n[guard]\nignore = [\"*.lock\"]\n",
    );
    assert_eq!(
        need,
        vec![
            "tools.x",
            "agent.default_tool",
            "agent.env.NODE_OPTIONS",
            "worktree.base_directory",
            "environment.auto_install_deps"
        ]
    );
    assert_eq!(refused, vec!["tools.claude"]);
    // A plain folder beside the repository needs no trust; anything else does.
    for (dir, needs) in [
        ("../app-wt", false),
        ("/home/u/src/wt", false),
        ("../.config", true),
        ("../other/deeper", true),
        ("../..", true),
        ("/tmp/x", true),
    ] {
        let (need, _) = gated(&format!("[worktree]\nbase_directory = {dir:?}\n"));
        assert_eq!(!need.is_empty(), needs, "{dir}");
    }
    let (need, _) = gated("[environment]\nauto_install_deps = false\n");
    assert!(need.is_empty());
    let (need, _) = gated(
        "[agent]\nmax_running = 500\nmin_free_memory = \"0 B\"\nscrollback = 100\n[worktree]\nports = 4\n",
    );
    assert_eq!(
        need,
        vec![
            "agent.max_running",
            "agent.min_free_memory",
            "agent.scrollback"
        ],
        "the machine's limits on agents and what a host keeps need trust; ports do not"
    );
    let (need, _) = gated("[agent]\nauto_resume = true\n");
    assert_eq!(
        need,
        vec!["agent.auto_resume"],
        "resuming agents unasked costs resources"
    );
    let (need, _) = gated("[agent]\nauto_resume = false\n");
    assert!(need.is_empty());
    let config: Config = toml::from_str("[agent]\nauto_resume = true\n").unwrap();
    assert!(config.agent.auto_resume);
    assert!(!Config::default().agent.auto_resume);
    let (need, _) = gated("[notify]\ndesktop = true\ncommand = [\"sh\", \"-c\", \"curl evil\"]\n");
    assert_eq!(
        need,
        vec!["notify.command"],
        "the notify command runs a program; the desktop switch does not"
    );
}

#[test]
fn notify_terminal_follows_desktop_unless_set_and_needs_no_trust() {
    use owt_protocol::host::NoticeStyle;
    let style = |text: &str| {
        toml::from_str::<Config>(text)
            .unwrap()
            .notify
            .terminal_style()
    };
    assert_eq!(style(""), None, "off for a user who set nothing");
    assert_eq!(style("[notify]\ndesktop = true\n"), Some(NoticeStyle::Osc9));
    assert_eq!(
        style("[notify]\ndesktop = true\nterminal = \"off\"\n"),
        None
    );
    assert_eq!(
        style("[notify]\nterminal = \"osc777\"\n"),
        Some(NoticeStyle::Osc777)
    );
    assert_eq!(
        style("[notify]\nterminal = \"osc9\"\n"),
        Some(NoticeStyle::Osc9)
    );
    assert!(toml::from_str::<Config>("[notify]\nterminal = \"osc8\"\n").is_err());
    let (need, _) = gated("[notify]\nterminal = \"osc777\"\n");
    assert!(need.is_empty(), "{need:?}");
}

#[test]
fn a_repositorys_mcp_conductor_keys_need_trust_and_default_to_off() {
    let (need, refused) =
        gated("[mcp]\nconductor = true\nconductor_can_ship = true\nmax_children = 50\n");
    assert_eq!(
        need,
        vec![
            "mcp.conductor",
            "mcp.conductor_can_ship",
            "mcp.max_children"
        ],
        "a conductor starts agents and may ship: a cloned repository may not turn it on"
    );
    assert!(refused.is_empty());
    let config = Config::default();
    assert!(!config.mcp.conductor && !config.mcp.conductor_can_ship);
    assert_eq!(config.mcp.max_children, 8);
}

#[test]
fn a_repositorys_remotes_need_trust_and_parse_with_defaults() {
    let (need, refused) = gated(
        "[remotes.devbox]\nhost = \"me@devbox\"\npath = \"~/src/app\"\n[remotes.gpu]\nhost = \"gpu\"\npath = \"/srv/app\"\nowt = \"/opt/owt/bin/owt\"\n",
    );
    assert_eq!(need, vec!["remotes.devbox", "remotes.gpu"]);
    assert!(refused.is_empty());
    let config: Config =
        toml::from_str("[remotes.devbox]\nhost = \"me@devbox\"\npath = \"~/src/app\"\n").unwrap();
    assert_eq!(
        config.remotes["devbox"],
        RemoteConfig {
            host: "me@devbox".into(),
            path: "~/src/app".into(),
            owt: "owt".into()
        }
    );
    let err = parse_file(
        Path::new("/u/config.toml"),
        "[remotes.devbox]\nhost = \"devbox\"\nport = 22\n",
    )
    .unwrap_err();
    assert!(err.to_string().contains("unknown field `port`"), "{err}");
}

#[test]
fn untrusted_repository_keys_are_withheld_and_builtins_never_redefined() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("app");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(
        root.join(".owt.toml"),
        "[agent]\ndefault_tool = \"x\"\n[tools.x]\nbinary = \"./evil.sh\"\n[tools.claude]\nbinary = \"/bin/sh\"\n[guard]\nignore = [\"*.lock\"]\n",
    )
    .unwrap();
    let untrusted = load(Some(&root), &TrustNothing).unwrap();
    assert!(untrusted.config.tools.is_empty());
    assert_eq!(untrusted.config.agent.default_tool, None);
    assert_eq!(
        untrusted.config.guard.ignore,
        vec!["*.lock"],
        "safe keys apply"
    );
    let withheld = untrusted.withheld.unwrap();
    assert_eq!(withheld.untrusted, vec!["tools.x", "agent.default_tool"]);
    assert_eq!(withheld.refused, vec!["tools.claude"]);
    let trusted = load(Some(&root), &|_: &Path, _: &[u8]| true).unwrap();
    assert_eq!(trusted.config.agent.default_tool.as_deref(), Some("x"));
    assert!(trusted.config.tools.contains_key("x"));
    assert!(
        !trusted.config.tools.contains_key("claude"),
        "never a built-in"
    );
}

#[test]
fn disposable_globs_match_names_at_any_depth_and_paths_from_the_root() {
    let mut config = Config::default();
    config.worktree.disposable = vec![
        "node_modules".into(),
        "target/".into(),
        "web/dist".into(),
        "*.tmp".into(),
    ];
    for (rel, disposable) in [
        ("node_modules/", true),
        ("pkg/node_modules/", true),
        ("target/", true),
        ("web/dist/", true),
        ("dist/", false),
        ("a.tmp", true),
        ("build/", false),
        (".env", false),
    ] {
        assert_eq!(config.is_disposable(rel), disposable, "{rel}");
    }
}

#[test]
fn default_base_directory_is_a_sibling() {
    let config = Config::default();
    assert_eq!(
        config.base_directory(Path::new("/src/app")),
        PathBuf::from("/src/app.worktrees")
    );
}

#[test]
fn ctrl_keys() {
    assert_eq!(parse_ctrl_key("ctrl-\\"), Ok(0x1c));
    assert_eq!(parse_ctrl_key("Ctrl-A"), Ok(1));
    assert!(parse_ctrl_key("alt-x").is_err());
}

#[test]
fn guard_symbols_defaults_on_turns_off_and_rejects_a_non_boolean() {
    assert!(Config::default().guard.symbols);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("owt.toml");
    std::fs::write(&file, "[guard]\nsymbols = false\n").unwrap();
    assert!(!load_files(&[file]).unwrap().config.guard.symbols);
    let err = err_of("[guard]\nsymbols = \"no\"\n");
    let ConfigError::Invalid { line, key, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!((*line, key.as_deref()), (2, Some("guard.symbols")));
}

/// Issue 33, item 5: whose pull-request comments reach agents; a
/// repository may narrow it, not widen it, without trust.
#[test]
fn comment_authors_route_collaborators_by_default_and_widening_needs_trust() {
    let default = CommentAuthors::default();
    assert!(default.routes("alice", true));
    assert!(!default.routes("mallory", false));
    let parse = |text: &str| -> CommentAuthors {
        let config: Config = toml::from_str(text).unwrap();
        config.feedback.comment_authors
    };
    let all = parse("[feedback]\ncomment_authors = \"all\"\n");
    assert!(all.routes("mallory", false));
    let list = parse("[feedback]\ncomment_authors = [\"Bot\", \"collaborators\"]\n");
    assert!(list.routes("bot", false) && list.routes("alice", true));
    assert!(!list.routes("mallory", false));
    let only = parse("[feedback]\ncomment_authors = [\"bot\"]\n");
    assert!(!only.routes("alice", true), "a list without collaborators");
    for (value, needs) in [
        ("\"collaborators\"", false),
        ("[\"collaborators\"]", false),
        ("\"all\"", true),
        ("[\"mallory\"]", true),
    ] {
        let (need, _) = gated(&format!("[feedback]\ncomment_authors = {value}\n"));
        assert_eq!(need == vec!["feedback.comment_authors"], needs, "{value}");
    }
}

/// Regression (issue 33, item 9): keys that cost resources or delete files
/// applied from an untrusted `.owt.toml`: `[agent] scrollback`,
/// `[worktree] disposable`, and a `base_directory` into a sibling checkout.
#[test]
fn regression_scrollback_disposable_and_a_sibling_checkout_need_trust() {
    let (need, _) = gated("[agent]\nscrollback = 4294967295\n");
    assert_eq!(need, vec!["agent.scrollback"]);
    let (need, _) = gated("[worktree]\ndisposable = [\"*\"]\n");
    assert_eq!(need, vec!["worktree.disposable"]);

    let root = tempfile::tempdir().unwrap();
    let repo = root.path().join("app");
    let other = root.path().join("other");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(other.join(".git")).unwrap();
    std::fs::create_dir_all(root.path().join("plain")).unwrap();
    std::os::unix::fs::symlink(&other, root.path().join("link")).unwrap();
    let gated_at = |dir: &str| {
        let table: toml::Table =
            toml::from_str(&format!("[worktree]\nbase_directory = {dir:?}\n")).unwrap();
        !gated_keys(&table, &repo).need_trust.is_empty()
    };
    assert!(gated_at("../other"), "a sibling checkout");
    assert!(gated_at("../link"), "a link beside the repository");
    assert!(!gated_at("../plain"), "a plain folder beside it");
    assert!(!gated_at("../app-wt"), "a folder owt will create");
}
