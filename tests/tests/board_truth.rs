//! End-to-end tests of issue #34 ("the board never lies"): an interrupted
//! `owt new` leaves no session that never starts, names and prefixes,
//! `owt list`'s width, what `blocked` says — the real binary, real git
//! repositories, a real store.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use owt_e2e::{pid_alive, wait_until, TestEnv};
use owt_protocol::DoctorReport;

/// A trusted repository whose setup script writes its pid to the returned
/// file, then sleeps 20 s; `owt new "slow setup"` spawned in it, waited
/// until its setup script runs. The child and the script's pid.
fn owt_new_in_slow_setup(env: &TestEnv) -> (PathBuf, Child, u32) {
    let repo = env.repo("app");
    let pid_file = env.path().join("setup.pid");
    std::fs::create_dir_all(repo.join(".owt")).unwrap();
    std::fs::write(
        repo.join(".owt/setup.sh"),
        format!("echo $$ > '{}'; sleep 20\n", pid_file.display()),
    )
    .unwrap();
    env.trust(&repo);
    let child = env
        .owt_cmd(&repo, ["new", "slow setup"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut script = 0;
    wait_until("the setup script to start", Duration::from_secs(30), || {
        script = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0);
        script != 0
    });
    (repo, child, script)
}

fn signal(pid: u32, signal: i32) {
    // SAFETY: kill(2) on a process this test started.
    unsafe { libc::kill(pid as libc::pid_t, signal) };
}

/// Regression (#34.2): Ctrl-C during `owt new`'s 20 s setup script left
/// the session `starting` forever. Now the script is stopped and what
/// `owt new` made is removed, at once.
#[test]
fn sigint_during_setup_removes_the_half_made_session() {
    let env = TestEnv::new();
    let (repo, child, script) = owt_new_in_slow_setup(&env);
    assert_eq!(env.sessions(&repo).sessions.len(), 1, "in setup");
    let interrupted_at = Instant::now();
    signal(child.id(), libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        interrupted_at.elapsed() < Duration::from_secs(10),
        "owt new waited for the setup script: {:?}",
        interrupted_at.elapsed()
    );
    assert!(
        stderr.contains("interrupted: session `slow-setup` was not created"),
        "{stderr}"
    );
    wait_until(
        "the setup script to be stopped",
        Duration::from_secs(5),
        || !pid_alive(script),
    );
    assert!(env.sessions(&repo).sessions.is_empty());
    assert!(!env.path().join("app.worktrees/slow-setup").exists());
    assert_eq!(env.git(&repo, ["branch", "--list", "owt/slow-setup"]), "");
    let report: DoctorReport = env.owt_json(&repo, ["doctor"]);
    assert!(report.findings.is_empty(), "{:?}", report.findings);
}

/// Regression (#34.2): an `owt new` that dies before starting its agent
/// (killed: no chance to clean up) left a session `owt doctor --fix` did
/// not find. Doctor names it, and `--fix` deletes it.
#[test]
fn doctor_finds_and_fixes_a_session_whose_owt_new_died() {
    let env = TestEnv::new();
    let (repo, mut child, script) = owt_new_in_slow_setup(&env);
    signal(child.id(), libc::SIGKILL);
    child.wait().unwrap();
    // The script runs in its own process group, which nobody stopped.
    signal(script, libc::SIGKILL);
    let report: DoctorReport = env.owt_json(&repo, ["doctor"]);
    let found = report
        .findings
        .iter()
        .find(|f| f.kind == "starter-gone")
        .unwrap_or_else(|| panic!("no starter-gone finding: {:?}", report.findings));
    assert_eq!(found.session.as_deref(), Some("slow-setup"));
    assert!(!found.fixed);
    let fixed: DoctorReport = env.owt_json(&repo, ["doctor", "--fix"]);
    assert!(
        fixed
            .findings
            .iter()
            .any(|f| f.kind == "starter-gone" && f.fixed),
        "{:?}",
        fixed.findings
    );
    assert!(env.sessions(&repo).sessions.is_empty());
    assert!(!Path::new(&found.path.clone().unwrap()).exists());
}
