#!/usr/bin/env python3
"""A scripted fake agent for owt's session-host tests.

Raw-mode line editor with bracketed paste. Every submitted line (or paste)
is appended to $FAKE_LOG as one JSON string per line. Commands:
  size        print `stty size` as seen inside the PTY
  env NAME    print `env NAME=value` (or `=<unset>`) of its environment
  exit N      exit with code N
  busy S      show a braille spinner for S seconds, then the prompt
  perm        show a permission dialog ("Do you want to proceed? (y/n)"),
              cleared by the answer (as TUIs do)
  ask         the same question, line-mode: it stays on screen; after `y`
              the agent works for 3 s (a spinner) below it
  anim        a full-screen TUI that redraws every 100 ms, never quiet:
              a permission dialog until answered, then 2 s of work; then
              a still input box
  daemon      start `sleep 300` in a session of its own (a daemon that
              outlives the agent's process group); prints its pid
  query       ask the terminal for the cursor position and print the answer
  draw        paint a coloured box with ANSI escapes
  flood S     for S seconds, write long escape sequences (OSC titles and
              links ended by BEL and by ST, CSI colours, DCS and APC
              strings, multi-byte characters) in odd-sized pieces, so
              that most reads end inside one; then `flood done`
  write F T   work for 1 s, writing T (the rest of the line) to file F
  commit M    `git commit -a -m M` in its worktree
A message owt types after failed checks or CI ("Fix it ... end your turn")
makes it "fix" the work when $FAKE_FIX is `FILE=TEXT`: 1 s of work writing
TEXT to FILE (and committing it with $FAKE_FIX_COMMIT set). Without
$FAKE_FIX it fixes nothing (an agent that gives up).
anything else is echoed back as `got: <text>`.
With $FAKE_RAW set, every byte read from the terminal is appended to that
file as read (to check what reached the PTY, escape sequences included).
"""
import json
import os
import select
import signal
import subprocess
import sys
import termios
import threading
import time
import tty

LOG = os.environ.get("FAKE_LOG")
RAW = os.environ.get("FAKE_RAW")
out = sys.stdout


def w(s):
    out.write(s)
    out.flush()


def log(text):
    if LOG:
        with open(LOG, "a") as f:
            f.write(json.dumps(text) + "\n")


def prompt():
    w("\r\n> ")


def ask_cursor():
    w("\x1b[6n")
    buf = b""
    deadline = time.time() + 5
    while time.time() < deadline:
        r, _, _ = select.select([0], [], [], 0.2)
        if r:
            buf += os.read(0, 64)
            if b"R" in buf:
                return buf.decode(errors="replace").replace("\x1b", "ESC")
    return "no answer"


def on_winch(_sig, _frame):
    cols, rows = os.get_terminal_size(0)
    w(f"\r\nresized {rows}x{cols}")
    prompt()


dialog = False
anim_dialog = None  # None: no animation; True/False: its dialog is up


def spin(seconds):
    frames = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
    end = time.time() + seconds
    i = 0
    while time.time() < end:
        w(f"\r{frames[i % len(frames)]} Thinking (esc to interrupt)")
        i += 1
        time.sleep(0.1)
    w("\r\x1b[2Kdone thinking")


def animate():
    n = 0
    while anim_dialog:
        n += 1
        w(f"\x1b[H\x1b[2Jfake TUI, frame {n}\r\n\r\nBash command\r\n  rm -rf build\r\n"
          "Allow this command?\r\n  > Allow once\r\n    Reject")
        time.sleep(0.1)
    # Answered: it works for 2 s (a spinner), then idles at a still input box.
    end = time.time() + 2
    while time.time() < end:
        n += 1
        w(f"\x1b[H\x1b[2Jfake TUI, frame {n}\r\n\r\n{'⠋⠙⠹⠸'[n % 4]} Working (esc to interrupt)")
        time.sleep(0.1)
    w("\x1b[H\x1b[2Jfake TUI\r\n\r\nReady for your next task.\r\n\r\n> ")


def flood(seconds):
    blob = ("\x1b]0;" + "title " * 150 + "\x07"
            + "\x1b]8;;http://example.com/" + "p" * 400 + "\x1b\\" + "link" + "\x1b]8;;\x1b\\"
            + "\x1b[38;2;10;20;30m" + "é☃🦀" + "\x1b[0m"
            + "\x1bP" + "q" * 600 + "\x1b\\"
            + "\x1b_G" + "a" * 400 + "\x1b\\" + "\r\n").encode()
    end = time.time() + seconds
    while time.time() < end:
        for i in range(0, len(blob), 333):
            os.write(1, blob[i:i + 333])
            time.sleep(0.002)
    w("\r\nflood done")


def write_file(path, text):
    """The agent's work: a file written in its worktree, behind a spinner."""
    with open(path, "w") as f:
        f.write(text + "\n")
    spin(1)
    w(f"\r\nwrote {path}")


def fix(line):
    """Told its checks or CI failed: fix the work (if it knows how)."""
    spec = os.environ.get("FAKE_FIX")
    if not spec:
        w("\r\ncannot fix that")
        return
    path, _, text = spec.partition("=")
    write_file(path, text)
    if os.environ.get("FAKE_FIX_COMMIT"):
        subprocess.run(["git", "commit", "-q", "-a", "-m", f"fix {path}"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run(line):
    global dialog, anim_dialog
    log(line)
    if anim_dialog:
        anim_dialog = False
        return
    if dialog == "line":
        dialog = False
        if line.strip() == "y":
            w("\r\nproceeding\r\n")
            spin(3)
        else:
            w("\r\ndenied")
        prompt()
        return
    if dialog:
        # The answer closes the dialog, as real agents do.
        dialog = False
        w("\x1b[2J\x1b[H" + ("allowed" if line.strip() == "y" else "denied"))
        prompt()
        return
    words = line.split()
    cmd = words[0] if words else ""
    if cmd == "size":
        # stty reads the terminal size from its stdin: the PTY.
        size = subprocess.run(["stty", "size"], capture_output=True, text=True).stdout.strip()
        w(f"\r\nstty size: {size}")
    elif cmd == "env" and len(words) >= 2:
        w("\r\nenv " + words[1] + "=" + os.environ.get(words[1], "<unset>"))
    elif cmd == "exit":
        w("\r\nbye")
        termios.tcsetattr(0, termios.TCSADRAIN, saved)
        sys.exit(int(words[1]) if len(words) > 1 else 0)
    elif cmd == "busy":
        spin(float(words[1] if len(words) > 1 else 3))
    elif cmd == "ask":
        w("\r\nBash command: rm -rf build\r\nDo you want to proceed? (y/n) ")
        dialog = "line"
        return
    elif cmd == "anim":
        w("\x1b[?1049h")
        anim_dialog = True
        threading.Thread(target=animate, daemon=True).start()
        return
    elif cmd == "daemon":
        child = subprocess.Popen(["sleep", "300"], start_new_session=True)
        w(f"\r\ndaemon pid {child.pid}")
    elif cmd == "perm":
        w("\r\n\x1b[1mBash command\x1b[0m\r\n  rm -rf build\r\nDo you want to proceed? (y/n)")
        dialog = True
        return
    elif cmd == "query":
        w(f"\r\ncursor answer: {ask_cursor()}")
    elif cmd == "write" and len(words) >= 2:
        write_file(words[1], " ".join(words[2:]))
    elif cmd == "commit":
        subprocess.run(["git", "commit", "-q", "-a", "-m", " ".join(words[1:]) or "work"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        w("\r\ncommitted")
    elif "end your turn" in line and line.startswith("owt:"):
        fix(line)
    elif cmd == "flood":
        flood(float(words[1] if len(words) > 1 else 5))
    elif cmd == "draw":
        w("\r\n\x1b[44;37m+------+\x1b[0m\r\n\x1b[44;37m| box  |\x1b[0m\r\n\x1b[44;37m+------+\x1b[0m")
    else:
        w("\r\ngot: " + line.replace("\n", "\\n"))
    prompt()


saved = termios.tcgetattr(0)
tty.setraw(0)
signal.signal(signal.SIGWINCH, on_winch)
w("\x1b[?2004h")  # bracketed paste on
w("FAKE AGENT READY (pid %d)" % os.getpid())
if os.environ.get("FAKE_QUERY_AT_START"):
    w("\r\nstartup cursor answer: " + ask_cursor())
prompt()

line = b""
pending = b""
while True:
    try:
        data = os.read(0, 4096)
    except InterruptedError:
        continue
    if not data:
        break
    if RAW:
        with open(RAW, "ab") as f:
            f.write(data)
    pending += data
    while pending:
        if pending.startswith(b"\x1b[200~"):
            end = pending.find(b"\x1b[201~")
            if end < 0:
                break  # wait for the rest of the paste
            text = pending[6:end]
            pending = pending[end + 6:]
            line += text
            w(text.decode(errors="replace").replace("\n", "\r\n"))
            continue
        if pending.startswith(b"\x1b") and len(pending) < 6 and b"\x1b[200~".startswith(pending):
            break
        ch = pending[:1]
        pending = pending[1:]
        if ch in (b"\r", b"\n"):
            text, line = line, b""
            run(text.decode(errors="replace"))
        elif ch in (b"\x7f", b"\x08"):
            if line:
                line = line[:-1]
                w("\b \b")
        elif ch == b"\x03":
            w("^C")
            line = b""
            prompt()
        else:
            line += ch
            out.flush()
            os.write(1, ch)
