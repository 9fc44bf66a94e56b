use super::*;

fn tool(template: &str) -> ToolConfig {
    ToolConfig {
        binary: "my-ai".into(),
        command_template: Some(template.into()),
        ..ToolConfig::default()
    }
}

#[test]
fn every_row_of_the_table_is_a_named_builtin() {
    let mut rows = builtin::table_names();
    let mut names = BUILTIN_ORDER.to_vec();
    rows.sort_unstable();
    names.sort_unstable();
    assert_eq!(rows, names);
}

#[test]
fn every_builtin_has_an_entry() {
    for name in BUILTIN_ORDER {
        let p = builtin(name).unwrap_or_else(|| panic!("{name} missing"));
        assert_eq!(p.name, *name);
        assert!(!p.install_hint.is_empty());
    }
}

#[test]
fn task_text_is_one_argument_never_shell() {
    let task = "fix $(rm -rf ~); `id` && echo 'x' \"y\" | cat > /tmp/z";
    let p = Provider::from_config("my", &tool("{binary} --interactive")).unwrap();
    let launch = p
        .launch(Path::new("/bin/my-ai"), task, LaunchMode::Interactive)
        .unwrap();
    assert_eq!(launch.argv, vec!["/bin/my-ai", "--interactive", task]);
}

#[test]
fn prompt_flag_and_placeholder() {
    let mut t = tool("{binary} --mode 'two words'");
    t.prompt_flag = Some("-p".into());
    let p = Provider::from_config("my", &t).unwrap();
    let launch = p
        .launch(Path::new("/x"), "do it", LaunchMode::Interactive)
        .unwrap();
    assert_eq!(
        launch.argv,
        vec!["/x", "--mode", "two words", "-p", "do it"]
    );

    let p = Provider::from_config("my", &tool("{binary} --task={prompt} --go")).unwrap();
    let launch = p
        .launch(Path::new("/x"), "a b", LaunchMode::Interactive)
        .unwrap();
    assert_eq!(launch.argv, vec!["/x", "--task=a b", "--go"]);
}

#[test]
fn typed_prompt_is_not_in_argv() {
    let mut t = tool("{binary}");
    t.prompt_mode = Some(PromptMode::Typed);
    let p = Provider::from_config("my", &t).unwrap();
    let launch = p
        .launch(Path::new("/x"), "hello", LaunchMode::Interactive)
        .unwrap();
    assert_eq!(launch.argv, vec!["/x"]);
    assert_eq!(launch.typed_prompt.as_deref(), Some("hello"));
}

#[test]
fn builtin_forms() {
    let argv = |name: &str, task: &str, mode| {
        builtin(name)
            .unwrap()
            .launch(Path::new(name), task, mode)
            .unwrap()
    };
    assert_eq!(
        argv("claude", "task", LaunchMode::Plan).argv,
        vec!["claude", "--permission-mode", "plan", "--", "task"]
    );
    assert_eq!(
        argv("claude", "task", LaunchMode::Headless).argv,
        vec!["claude", "-p", "--", "task"]
    );
    assert_eq!(
        argv("codex", "t", LaunchMode::Headless).argv,
        vec!["codex", "exec", "--", "t"]
    );
    assert_eq!(
        argv("opencode", "--weird task", LaunchMode::Interactive).argv,
        vec!["opencode", "--prompt=--weird task"]
    );
    assert_eq!(
        argv("pi", "-rf things", LaunchMode::Interactive).argv,
        vec!["pi", " -rf things"],
        "pi rejects `--` and options it does not know"
    );
    assert_eq!(
        argv("gemini", "t", LaunchMode::Headless).argv,
        vec!["gemini", "--prompt=t"]
    );
    let aider = argv("aider", "fix it", LaunchMode::Interactive);
    assert_eq!(aider.argv, vec!["aider"]);
    assert_eq!(aider.typed_prompt.as_deref(), Some("fix it"));
}

#[test]
fn bad_templates_are_errors() {
    assert!(Provider::from_config("my", &tool("my-ai --x")).is_err());
    assert!(Provider::from_config("my", &tool("{binary} 'open")).is_err());
    let mut t = tool("{binary}");
    t.prompt_mode = Some(PromptMode::Flag);
    assert!(Provider::from_config("my", &t).is_err());
}

#[test]
fn unknown_agent_lists_known_ones() {
    let err = resolve(&Config::default(), Some("nope"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("unknown agent `nope`") && err.contains("claude"),
        "{err}"
    );
}

#[test]
fn acp_servers_of_builtins_and_custom_tools() {
    let acp = |name: &str| builtin(name).and_then(|p| p.acp);
    let claude = acp("claude").unwrap();
    assert_eq!(
        (claude.binary.as_str(), claude.args.len()),
        ("claude-agent-acp", 0)
    );
    assert_eq!(acp("codex").unwrap().binary, "codex-acp");
    let opencode = acp("opencode").unwrap();
    assert_eq!(
        (opencode.binary.as_str(), opencode.args.as_slice()),
        ("opencode", &["acp".to_string()][..])
    );
    assert_eq!(acp("gemini").unwrap().args, ["--acp"]);
    assert!(acp("aider").is_none());
    let err = builtin("aider")
        .unwrap()
        .acp_argv()
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("agents with an ACP server: claude, codex, opencode, gemini"),
        "{err}"
    );

    let custom = Provider::from_config(
        "mine",
        &ToolConfig {
            binary: "my-ai".into(),
            acp: Some("{binary} --acp 'a b'".into()),
            ..ToolConfig::default()
        },
    )
    .unwrap();
    let a = custom.acp.unwrap();
    assert_eq!(
        (a.binary.as_str(), a.args.as_slice()),
        ("my-ai", &["--acp".to_string(), "a b".to_string()][..])
    );
    let other = Provider::from_config(
        "mine",
        &ToolConfig {
            binary: "my-ai".into(),
            acp: Some("/opt/x/acp-server".into()),
            ..ToolConfig::default()
        },
    )
    .unwrap();
    assert_eq!(other.acp.unwrap().binary, "/opt/x/acp-server");
    let bad = Provider::from_config(
        "mine",
        &ToolConfig {
            binary: "my-ai".into(),
            acp: Some("'unbalanced".into()),
            ..ToolConfig::default()
        },
    )
    .unwrap_err();
    assert!(bad.to_string().contains("acp: unbalanced quotes"), "{bad}");
}
