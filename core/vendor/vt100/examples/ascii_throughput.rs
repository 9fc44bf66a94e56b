//! Throughput of this crate and of upstream vt100 0.16.2 (a dev-dependency)
//! on the same byte streams: plain ASCII text, and text with colour escapes
//! and wide characters (which take upstream's path in both).
//!
//!     cargo run --release -p owt-vt100 --example ascii_throughput
//!
//! Prints MB/s per stream and crate: the best of nine runs, the two crates
//! taking turns (so a busy machine slows both alike). Each stream runs
//! without scrollback and with 2000 lines of it (what owt's session host
//! keeps, so every line scrolled off is kept, compact in this crate).
//! With the argument `ours`, runs only this crate (for a profiler).

use std::time::{Duration, Instant};

const ROWS: u16 = 50;
const COLS: u16 = 200;

fn plain() -> Vec<u8> {
    let line = "fn main() { println!(\"hello, world\"); } // some ordinary source text\r\n";
    line.repeat(400_000).into_bytes()
}

fn mixed() -> Vec<u8> {
    let line = "\x1b[32mok\x1b[0m test  \x1b[1mcompiled\x1b[0m 数据 résumé ✓ 12.3s\r\n";
    line.repeat(300_000).into_bytes()
}

fn timed(run: &mut dyn FnMut()) -> Duration {
    let started = Instant::now();
    run();
    started.elapsed()
}

/// The best time of each of `a` and `b` over nine turns each.
fn best(a: &mut dyn FnMut(), b: &mut dyn FnMut()) -> (Duration, Duration) {
    let (mut best_a, mut best_b) = (Duration::MAX, Duration::MAX);
    for _ in 0..9 {
        best_a = best_a.min(timed(a));
        best_b = best_b.min(timed(b));
    }
    (best_a, best_b)
}

fn main() {
    let only_ours = std::env::args().nth(1).as_deref() == Some("ours");
    let streams = [("plain ASCII", plain()), ("colour + wide", mixed())];
    for ((name, bytes), scrollback) in
        streams.iter().flat_map(|s| [(s, 0), (s, 2000)])
    {
        let mb = bytes.len() as f64 / 1e6;
        let (ours, theirs) = best(
            &mut || {
                let mut parser = vt100::Parser::new(ROWS, COLS, scrollback);
                for chunk in bytes.chunks(64 * 1024) {
                    parser.process(chunk);
                }
            },
            &mut || {
                if only_ours {
                    return;
                }
                let mut parser =
                    upstream::Parser::new(ROWS, COLS, scrollback);
                for chunk in bytes.chunks(64 * 1024) {
                    parser.process(chunk);
                }
            },
        );
        let rate = |d: Duration| mb / d.as_secs_f64();
        println!(
            "{name}, scrollback {scrollback}: {mb:.0} MB; owt-vt100 {:.0} MB/s, vt100 0.16.2 {:.0} MB/s, ratio {:.2}",
            rate(ours),
            rate(theirs),
            rate(ours) / rate(theirs)
        );
    }
}
