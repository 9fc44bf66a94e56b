//! A real remote for the end-to-end tests: Debian's OpenSSH server started
//! on a loopback port with a generated host key, a generated user key, and
//! a second local account as "the remote".
//!
//! The tests run as root (as CI does): [`RemoteUser::ensure`] creates the
//! account (`useradd`, once; later runs reuse it — it is idempotent) and
//! empties its home of what an earlier run left, holding a lock on the
//! account so that two runs on one machine take turns. [`Sshd`] runs
//! `/usr/sbin/sshd -D` with its own configuration (public keys only, that
//! user only, no PAM), and writes an `ssh_config` with a `Host` alias for
//! it, given to owt as `OWT_SSH_COMMAND="ssh -F …"` (the user's own `ssh`,
//! pointed at a test configuration). Dropping either kills every process
//! it started (sshd and its connections; the remote user's hosts, agents
//! and bridges).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Why the remote tests cannot run here, if they cannot (not root, no
/// sshd): the caller fails with it — never a silent skip.
pub fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("the remote tests create a local user account and run sshd: run them as root (CI does; scripts/test installs openssh-server)".into());
    }
    if !Path::new(SSHD).exists() {
        return Some(format!(
            "{SSHD} is missing: install Debian's openssh-server (scripts/test does)"
        ));
    }
    None
}

const SSHD: &str = "/usr/sbin/sshd";

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A local account standing for the remote machine.
pub struct RemoteUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub home: PathBuf,
    /// Held while the account is in use: a second test run on the same
    /// machine (another checkout's `scripts/test`) waits for it instead of
    /// killing this run's processes and emptying its home.
    _lock: std::fs::File,
}

/// `useradd` holds a lock on /etc/passwd: one at a time in this process.
static ACCOUNTS: Mutex<()> = Mutex::new(());

impl RemoteUser {
    /// The account `name` (created when missing: `useradd -m`, shell
    /// /bin/sh, no password but usable with a key), with a fresh home:
    /// whatever an earlier run left is killed and removed; `.gitconfig`
    /// holds an identity for commits made there.
    pub fn ensure(name: &str) -> RemoteUser {
        let lock = lock_account(name);
        {
            let _guard = ACCOUNTS.lock().unwrap_or_else(|e| e.into_inner());
            let exists = Command::new("id")
                .arg("-u")
                .arg(name)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !exists {
                run(Command::new("useradd")
                    .args(["-m", "-s", "/bin/sh", "-p", "*"])
                    .arg(name));
            }
        }
        let uid: u32 = run(Command::new("id").arg("-u").arg(name))
            .trim()
            .parse()
            .unwrap();
        let gid: u32 = run(Command::new("id").arg("-g").arg(name))
            .trim()
            .parse()
            .unwrap();
        let home = PathBuf::from(
            run(Command::new("sh")
                .arg("-c")
                .arg(format!("getent passwd {name} | cut -d: -f6")))
            .trim(),
        );
        let user = RemoteUser {
            name: name.to_string(),
            uid,
            gid,
            home,
            _lock: lock,
        };
        user.kill_processes();
        if let Ok(entries) = std::fs::read_dir(&user.home) {
            for entry in entries.flatten() {
                let path = entry.path();
                let _ = if path.is_dir() && !path.is_symlink() {
                    std::fs::remove_dir_all(&path)
                } else {
                    std::fs::remove_file(&path)
                };
            }
        }
        user.write(
            ".gitconfig",
            "[user]\n\tname = Remote Test\n\temail = remote@example.com\n[init]\n\tdefaultBranch = main\n",
            0o644,
        );
        user
    }

    /// Writes `rel` under the home (folders created), owned by the user.
    pub fn write(&self, rel: &str, text: &str, mode: u32) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = self.home.join(rel);
        let mut dir = path.parent().map(Path::to_path_buf);
        let mut made = Vec::new();
        while let Some(d) = dir {
            if d.exists() || d == self.home {
                break;
            }
            made.push(d.clone());
            dir = d.parent().map(Path::to_path_buf);
        }
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        for d in made {
            self.chown(&d);
        }
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        self.chown(&path);
        path
    }

    pub fn chown(&self, path: &Path) {
        std::os::unix::fs::chown(path, Some(self.uid), Some(self.gid)).unwrap();
    }

    /// Runs `script` as the user (`setpriv`, its home as HOME), returns
    /// stdout; panics on failure.
    pub fn sh(&self, script: &str) -> String {
        run(Command::new("setpriv")
            .args([
                &format!("--reuid={}", self.uid),
                &format!("--regid={}", self.gid),
                "--init-groups",
                "--",
                "sh",
                "-c",
                script,
            ])
            .env("HOME", &self.home)
            .env("USER", &self.name)
            .env_remove("OWT_HOME")
            .env_remove("GIT_CONFIG_GLOBAL")
            .env_remove("GIT_CONFIG_SYSTEM")
            .env_remove("GIT_CONFIG_NOSYSTEM")
            .current_dir(&self.home))
    }

    /// Pids of the user's processes.
    pub fn processes(&self) -> Vec<i32> {
        use std::os::unix::fs::MetadataExt;
        let mut pids = Vec::new();
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return pids;
        };
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<i32>().ok())
            else {
                continue;
            };
            if std::fs::metadata(entry.path()).is_ok_and(|m| m.uid() == self.uid) {
                pids.push(pid);
            }
        }
        pids
    }

    /// Pids of the user's processes whose argv holds every word of `argv`.
    pub fn processes_running(&self, words: &[&str]) -> Vec<i32> {
        self.processes()
            .into_iter()
            .filter(|pid| {
                let argv = crate::cmdline(*pid as u32);
                words.iter().all(|w| argv.iter().any(|a| a == w))
            })
            .collect()
    }

    /// Kills every process of the account (what tests started there).
    pub fn kill_processes(&self) {
        for pid in self.processes() {
            // SAFETY: kill(2) on a process of the test account.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

impl Drop for RemoteUser {
    fn drop(&mut self) {
        self.kill_processes();
    }
}

/// An exclusive lock on `/run/lock/owt-e2e-<name>.lock` (waits for another
/// holder; the kernel drops it when the holder dies, so nothing stale stays).
fn lock_account(name: &str) -> std::fs::File {
    use std::os::fd::AsRawFd;
    let dir = Path::new("/run/lock");
    let dir = if dir.is_dir() { dir } else { Path::new("/tmp") };
    let path = dir.join(format!("owt-e2e-{name}.lock"));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("opening {}: {e}", path.display()));
    // SAFETY: flock(2) on a descriptor this function owns.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
    assert_eq!(
        rc,
        0,
        "locking {}: {}",
        path.display(),
        std::io::Error::last_os_error()
    );
    file
}

/// An sshd on a loopback port for some accounts, and the client side: a
/// key pair, `known_hosts`, and an `ssh_config` with one alias per account.
pub struct Sshd {
    pub port: u16,
    pub dir: PathBuf,
    child: Option<Child>,
    config: PathBuf,
    /// `-F` file for the client.
    pub client_config: PathBuf,
}

impl Sshd {
    /// Starts sshd in `dir` for `users`; alias `aliases[i]` reaches
    /// `users[i]`.
    pub fn start(dir: &Path, users: &[(&str, &RemoteUser)]) -> Sshd {
        std::fs::create_dir_all(dir).unwrap();
        // sshd's privilege separation folder.
        std::fs::create_dir_all("/run/sshd").unwrap();
        let host_key = dir.join("ssh_host_ed25519_key");
        let user_key = dir.join("id_ed25519");
        for key in [&host_key, &user_key] {
            if !key.exists() {
                run(Command::new("ssh-keygen")
                    .args(["-q", "-t", "ed25519", "-N", "", "-C", "owt-e2e", "-f"])
                    .arg(key));
            }
        }
        let public = std::fs::read_to_string(user_key.with_extension("pub")).unwrap();
        for (_, user) in users {
            user.write(".ssh/authorized_keys", &public, 0o600);
        }
        let port = free_port();
        let config = dir.join("sshd_config");
        let allow: Vec<&str> = users.iter().map(|(_, u)| u.name.as_str()).collect();
        std::fs::write(
            &config,
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nPidFile {}\nAuthorizedKeysFile .ssh/authorized_keys\nPubkeyAuthentication yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPermitRootLogin no\nAllowUsers {}\nPrintMotd no\nLogLevel VERBOSE\nMaxStartups 100:30:200\nMaxSessions 200\n",
                host_key.display(),
                dir.join("sshd.pid").display(),
                allow.join(" ")
            ),
        )
        .unwrap();
        let host_public = std::fs::read_to_string(host_key.with_extension("pub")).unwrap();
        let host_public: Vec<&str> = host_public.split_whitespace().take(2).collect();
        std::fs::write(
            dir.join("known_hosts"),
            format!("[127.0.0.1]:{port} {}\n", host_public.join(" ")),
        )
        .unwrap();
        let mut client = String::new();
        for (alias, user) in users {
            client.push_str(&format!(
                "Host {alias}\n  HostName 127.0.0.1\n  Port {port}\n  User {}\n  IdentityFile {}\n  IdentitiesOnly yes\n  UserKnownHostsFile {}\n  StrictHostKeyChecking yes\n  LogLevel ERROR\n\n",
                user.name,
                user_key.display(),
                dir.join("known_hosts").display()
            ));
        }
        let client_config = dir.join("ssh_config");
        std::fs::write(&client_config, client).unwrap();
        let mut sshd = Sshd {
            port,
            dir: dir.to_path_buf(),
            child: None,
            config,
            client_config,
        };
        sshd.restart();
        sshd
    }

    /// `OWT_SSH_COMMAND` for owt.
    pub fn ssh_command(&self) -> String {
        format!("ssh -F {}", self.client_config.display())
    }

    /// (Re)starts sshd on the same port; returns once it accepts.
    pub fn restart(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("sshd.log"))
            .unwrap();
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(&self.config)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("starting sshd");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "sshd did not listen on port {} within 20 s; its log:\n{}",
                self.port,
                std::fs::read_to_string(self.dir.join("sshd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills sshd and every connection it serves (as when the machine goes
    /// away), and waits until they are gone.
    pub fn kill(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pid = child.id() as i32;
        let mut victims = vec![pid];
        victims.extend(descendants(pid));
        for victim in &victims {
            // SAFETY: kill(2) on sshd (our child) and its own children.
            unsafe { libc::kill(*victim, libc::SIGKILL) };
        }
        let _ = child.wait();
        crate::wait_until("sshd's processes to end", Duration::from_secs(10), || {
            victims.iter().all(|p| !crate::pid_alive(*p as u32))
        });
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("sshd.log")).unwrap_or_default()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Every descendant of `pid` (from `/proc/*/stat` parent links).
pub fn descendants(pid: i32) -> Vec<i32> {
    let mut parents: Vec<(i32, i32)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(p) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<i32>().ok())
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            let Some(rest) = stat.rsplit(')').next() else {
                continue;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            if let Some(ppid) = fields.get(1).and_then(|s| s.parse::<i32>().ok()) {
                parents.push((p, ppid));
            }
        }
    }
    let mut out = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        for (child, ppid) in &parents {
            if *ppid == parent && !out.contains(child) {
                out.push(*child);
                frontier.push(*child);
            }
        }
    }
    out
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    listener.local_addr().unwrap().port()
}
