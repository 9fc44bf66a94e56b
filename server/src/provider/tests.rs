use super::*;

fn tool(template: &str) -> ToolConfig {
    ToolConfig {
        binary: "my-ai".into(),
        command_template: Some(template.into()),
        ..ToolConfig::default()
    }
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
    let claude = builtin("claude").unwrap();
    let bin = Path::new("/usr/bin/claude");
    assert_eq!(
        claude.launch(bin, "task", LaunchMode::Plan).unwrap().argv,
        vec!["/usr/bin/claude", "--permission-mode", "plan", "task"]
    );
    assert_eq!(
        claude
            .launch(bin, "task", LaunchMode::Headless)
            .unwrap()
            .argv,
        vec!["/usr/bin/claude", "-p", "task"]
    );
    let codex = builtin("codex").unwrap();
    assert_eq!(
        codex
            .launch(Path::new("codex"), "t", LaunchMode::Headless)
            .unwrap()
            .argv,
        vec!["codex", "exec", "t"]
    );
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
