//! `[notify] terminal`: a terminal attached to one session (`owt attach`,
//! the real binary in a real PTY) is told by a desktop notification
//! through the terminal (OSC 9 or OSC 777) when another session of the
//! repository enters NEEDS YOU — never inside one of the attached agent's
//! own escape sequences, even while that agent floods them, in both attach
//! modes (direct: the host writes it; relayed: the client does) — and not
//! at all when the configuration leaves it off.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::session_common::{wait_for, with_timeout, AttachClient, Env};

/// How long a notice may take: the other agent's dialog recognised, the
/// status recorded, the attach's poll (every 0.5 s) seeing the commit.
const TELL: Duration = Duration::from_secs(20);

/// Writes a user configuration under `dir` (for `XDG_CONFIG_HOME`).
fn config_home(env: &Env, dir: &str, notify: &str) -> PathBuf {
    let home = env.dir.path().join(dir);
    std::fs::create_dir_all(home.join("owt")).unwrap();
    let toml = format!("[agent]\nmax_running = 64\n\n[notify]\n{notify}");
    std::fs::write(home.join("owt/config.toml"), toml).unwrap();
    home
}

fn attach(env: &Env, name: &str, mode: &[&str], config: &Path) -> AttachClient {
    let vars = [("XDG_CONFIG_HOME", config.to_string_lossy().into_owned())];
    AttachClient::start_in(env, name, 24, 80, mode, &vars)
}

/// Where `needle` starts in `haystack`, each time.
fn positions(haystack: &[u8], needle: &[u8]) -> Vec<usize> {
    haystack
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .collect()
}

/// Whether a terminal's parser is at the ground state after `stream`: no
/// escape sequence, string or UTF-8 character begun and not finished
/// (the test's own reading, for the sequences the fake agent writes).
fn at_ground(stream: &[u8]) -> bool {
    #[derive(PartialEq)]
    enum S {
        Ground,
        Escape,
        Csi,
        Osc,
        Str,
    }
    let mut s = S::Ground;
    let mut utf8 = 0;
    for &b in stream {
        if b == 0x1b {
            s = S::Escape;
            utf8 = 0;
            continue;
        }
        s = match s {
            S::Ground => {
                if utf8 > 0 && (0x80..0xc0).contains(&b) {
                    utf8 -= 1;
                } else {
                    utf8 = match b {
                        0xc0..=0xdf => 1,
                        0xe0..=0xef => 2,
                        0xf0..=0xf7 => 3,
                        _ => 0,
                    };
                }
                S::Ground
            }
            S::Escape => match b {
                b'[' => S::Csi,
                b']' => S::Osc,
                b'P' | b'_' | b'^' | b'X' => S::Str,
                _ => S::Ground,
            },
            S::Csi if (0x40..=0x7e).contains(&b) => S::Ground,
            S::Csi => S::Csi,
            S::Osc if b == 0x07 => S::Ground,
            S::Osc => S::Osc,
            S::Str => S::Str,
        };
    }
    s == S::Ground && utf8 == 0
}

const TITLE_START: &[u8] = b"\x1b]0;title";

fn told_between_the_flooding_agents_sequences(mode: &'static [&'static str]) {
    with_timeout(Duration::from_secs(120), move || {
        let env = Env::new();
        let config = config_home(&env, "config-on", "terminal = \"osc9\"\n");
        env.spawn_fake("alpha", &[]);
        env.spawn_fake("bee", &[]);
        env.wait_screen("alpha", "FAKE AGENT READY");
        env.wait_screen("bee", "FAKE AGENT READY");
        let client = attach(&env, "alpha", mode, &config);
        client.wait_contains("FAKE AGENT READY");

        // alpha floods escape sequences; bee asks.
        env.ok(&["send", "alpha", "flood 15"]);
        wait_for("alpha's flood in the client", TELL, || {
            let n = positions(&client.raw_bytes(), TITLE_START).len();
            if n >= 3 {
                Ok(())
            } else {
                Err(format!("{n} titles"))
            }
        });
        env.ok(&["send", "bee", "perm"]);
        let notice = b"\x1b]9;owt: bee needs you: blocked\x07";
        let at = wait_for("bee's notice in alpha's terminal", TELL, || {
            let raw = client.raw_bytes();
            positions(&raw, notice)
                .first()
                .copied()
                .ok_or_else(|| format!("{} bytes, no notice", raw.len()))
        });
        // It came while alpha flooded (more of its sequences follow), and
        // at the ground state: not inside any of them.
        wait_for("alpha's flood after the notice", TELL, || {
            let raw = client.raw_bytes();
            if positions(&raw[at..], TITLE_START).len() >= 2 {
                Ok(())
            } else {
                Err(format!("{} bytes after", raw.len() - at))
            }
        });
        let raw = client.raw_bytes();
        assert!(
            at_ground(&raw[..at]),
            "the notice went inside a sequence: {:?}",
            String::from_utf8_lossy(&raw[at.saturating_sub(120)..at + notice.len()])
        );
        // Once, and nothing of bee's about alpha itself.
        client.wait_contains("flood done");
        let raw = client.raw_bytes();
        assert_eq!(positions(&raw, b"\x1b]9;").len(), 1, "one notice only");
        assert!(positions(&raw, b"alpha needs you").is_empty());
    });
}

#[test]
fn a_direct_attach_is_told_between_the_flooding_agents_sequences() {
    told_between_the_flooding_agents_sequences(&[]);
}

#[test]
fn a_relayed_attach_is_told_between_the_flooding_agents_sequences() {
    told_between_the_flooding_agents_sequences(&["--relay"]);
}

/// The default (`terminal = "auto"` without `desktop = true`) tells
/// nothing, while a terminal configured for OSC 777 beside it is told.
#[test]
fn nothing_is_told_when_the_configuration_leaves_it_off() {
    with_timeout(Duration::from_secs(120), || {
        let env = Env::new();
        let off = config_home(&env, "config-off", "command = []\n");
        let explicit_off = config_home(
            &env,
            "config-explicit-off",
            "desktop = true\nterminal = \"off\"\n",
        );
        let on = config_home(&env, "config-on", "terminal = \"osc777\"\n");
        env.spawn_fake("alpha", &[]);
        env.spawn_fake("bee", &[]);
        env.wait_screen("alpha", "FAKE AGENT READY");
        env.wait_screen("bee", "FAKE AGENT READY");
        let quiet = attach(&env, "alpha", &[], &off);
        let quiet_relayed = attach(&env, "alpha", &["--relay"], &explicit_off);
        let told = attach(&env, "alpha", &[], &on);
        for client in [&quiet, &quiet_relayed, &told] {
            client.wait_contains("FAKE AGENT READY");
        }
        env.ok(&["send", "bee", "perm"]);
        let notice = b"\x1b]777;notify;owt: bee needs you;blocked\x07";
        wait_for("bee's notice in the configured terminal", TELL, || {
            let raw = told.raw_bytes();
            if positions(&raw, notice).is_empty() {
                Err(String::from_utf8_lossy(&raw).into_owned())
            } else {
                Ok(())
            }
        });
        // The others had as long, and two of their polls more.
        std::thread::sleep(Duration::from_secs(2));
        for client in [&quiet, &quiet_relayed] {
            let raw = client.raw_bytes();
            assert!(
                positions(&raw, b"\x1b]9;").is_empty() && positions(&raw, b"\x1b]777;").is_empty(),
                "told though off: {:?}",
                String::from_utf8_lossy(&raw)
            );
        }
    });
}
