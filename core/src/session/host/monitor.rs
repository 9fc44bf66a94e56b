//! The monitor thread: the only owner of the store in the host (output,
//! input and screen facts, the git facts the git-facts thread read, the
//! typed first prompt, the screen rules).

use super::*;

/// The monitor: sole owner of the store. Records throttled output, input
/// and screen facts and the agent's own notifications, types the prompt
/// when the agent is ready, and records the exit.
pub(super) fn monitor(shared: &Arc<Shared>, store: Option<Store>, rx: mpsc::Receiver<ToMonitor>) {
    let id = shared.spec.session_id;
    let provider = shared.spec.provider.as_str();
    let record = |kind: &str, at: i64, value: &dyn erased::Value| {
        if let Some(store) = &store {
            if let Err(e) = value.record(store, id, kind, at) {
                tracing::warn!("recording a {kind} fact: {e}");
            }
        }
    };
    let started = Instant::now();
    let mut recorded_output_at: Option<i64> = None;
    let mut recorded_input_at: Option<i64> = None;
    let mut judged_seq = 0u64;
    let mut judged_at: Option<Instant> = None;
    // The last screen fact recorded: its signal, when, and the input it
    // was judged after.
    let mut recorded_screen: Option<(AgentSignal, Instant, Option<i64>)> = None;
    let mut native_seq = 0u64;
    // The last judgement saw an input box while output still flowed: judge
    // again once it is quiet.
    let mut input_box_pending = false;
    let mut first_turn = shared.spec.prompt_in_argv
        && !shared.spec.headless
        && rules::input_box_before_argv_task(provider);
    let mut prompt = shared.spec.typed_prompt.clone().filter(|p| !p.is_empty());
    let mut question_noted = false;
    // The agent's memory, sampled now and then (`memory` facts; queued
    // sessions are looked at when it gives back a lot).
    let mut memory = shared.agent_pid.map(super::super::memory::Sampler::new);
    // The output sequence number last followed by a release of memory, and
    // when that was.
    let mut released_seq = 0u64;
    let mut released_at: Option<Instant> = None;
    loop {
        let mut flushed = None;
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(ToMonitor::Flush(ack)) => flushed = Some(ack),
            Ok(ToMonitor::GitFact(fact)) => record(kind::HOST_GIT, now_ms(), &fact),
            Ok(ToMonitor::Exited(exit, done)) => {
                let (out_at, in_at) = {
                    let s = lock(&shared.state);
                    (s.last_output_at, s.last_input_at)
                };
                if let Some(at) = out_at.filter(|at| Some(*at) != recorded_output_at) {
                    record(kind::OUTPUT, at, &());
                }
                if let Some(at) = in_at.filter(|at| Some(*at) != recorded_input_at) {
                    record(kind::INPUT, at, &());
                }
                let fact = ExitFact {
                    code: exit.code,
                    signal: exit.signal,
                };
                record(kind::EXIT, now_ms(), &fact);
                // Its place on the machine is free: a queued session may start.
                if let Some(store) = &store {
                    super::super::admit_if_queued(store, &shared.spec.home);
                }
                let _ = done.send(());
                return;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if let Some(sample) = memory.as_mut().and_then(|m| m.poll()) {
            if let (Some(fact), Some(store)) = (sample.record, &store) {
                record(kind::MEMORY, now_ms(), &fact);
                if let Err(e) =
                    store.record_agent_peak(&shared.spec.short_id, provider, fact.peak_bytes)
                {
                    tracing::warn!("recording the agent's peak memory: {e}");
                }
            }
            if let (true, Some(store)) = (sample.freed, &store) {
                super::super::admit_if_queued(store, &shared.spec.home);
            }
        }
        let now = now_ms();
        let quiet_enough =
            |q: Option<Duration>, ms: u64| q.is_some_and(|q| q >= Duration::from_millis(ms));
        let prompt_deadline = if provider == "aider" {
            PROMPT_DEADLINE_KNOWN_MS
        } else {
            PROMPT_DEADLINE_MS
        };
        let late = started.elapsed() >= Duration::from_millis(prompt_deadline);
        let (out_at, in_at, seq, quiet_for, screen, paste_mode, native, due) = {
            let s = lock(&shared.state);
            let quiet_for = s.last_output.map(|t| t.elapsed());
            // Judge when output settles, and at least every REJUDGE_MS
            // while it never does (animated TUIs); never a screen that
            // does not show the last input's effect yet (no output since).
            let shows_input = s.last_input_at <= s.last_output_at;
            let due = shows_input
                && ((s.output_seq != judged_seq
                    && (quiet_enough(quiet_for, rules::SETTLE_MS)
                        || judged_at.is_none_or(|t| {
                            t.elapsed() >= Duration::from_millis(rules::REJUDGE_MS)
                        })))
                    || (input_box_pending && quiet_enough(quiet_for, INPUT_BOX_QUIET_MS)));
            let for_prompt = prompt.is_some() && (quiet_enough(quiet_for, PROMPT_QUIET_MS) || late);
            let screen =
                (due || for_prompt).then(|| rules::ScreenText::from_screen(s.parser.screen()));
            let native = (s.native_seq != native_seq).then_some((s.native, s.native_seq));
            (
                s.last_output_at,
                s.last_input_at,
                s.output_seq,
                quiet_for,
                screen,
                s.parser.screen().bracketed_paste(),
                native,
                due,
            )
        };
        // A burst of output is over: its buffers go back, and the binary's
        // pages mapped to start the agent and parse its output too.
        if seq != released_seq
            && quiet_enough(quiet_for, RELEASE_QUIET_MS)
            && released_at.is_none_or(|t| t.elapsed() >= RELEASE_INTERVAL)
        {
            released_seq = seq;
            released_at = Some(Instant::now());
            crate::memory::release_after_burst();
        }
        if let Some(at) = out_at {
            let due =
                recorded_output_at.is_none_or(|prev| at > prev && now - prev >= OUTPUT_FACT_MS);
            if due {
                record(kind::OUTPUT, at, &());
                recorded_output_at = Some(at);
            }
        }
        if let Some(at) = in_at.filter(|at| Some(*at) != recorded_input_at) {
            record(kind::INPUT, at, &());
            recorded_input_at = Some(at);
            // The human (or owt send) took over: the screen is honest now.
            first_turn = false;
        }
        if let Some(ack) = flushed.take() {
            let _ = ack.send(());
        }
        if let Some((signal, seq)) = native {
            native_seq = seq;
            if let Some((signal, at)) = signal {
                // What the agent said itself, like a hook.
                record(kind::HOOK, at, &signal);
                first_turn = false;
            }
        }
        if let Some(screen) = screen.as_ref().filter(|_| due) {
            judged_seq = seq;
            judged_at = Some(Instant::now());
            let verdict = rules::screen_verdict(provider, screen);
            let mut signal = verdict.signal();
            input_box_pending = false;
            // Before the agent has its task (a typed prompt still to type),
            // or before it shows that it started on the one on its command
            // line, its idle input box means "starting", not "waiting".
            let grace = started.elapsed() < Duration::from_millis(FIRST_TURN_GRACE_MS);
            if first_turn && !grace {
                first_turn = false;
            }
            let before_task = first_turn || prompt.is_some();
            match verdict {
                rules::Verdict::Working | rules::Verdict::Blocked => first_turn = false,
                rules::Verdict::InputBox | rules::Verdict::Unknown if before_task => {
                    signal = AgentSignal::Working
                }
                rules::Verdict::InputBox if !quiet_enough(quiet_for, INPUT_BOX_QUIET_MS) => {
                    // No opinion yet: the output's recency decides.
                    signal = AgentSignal::Idle;
                    input_box_pending = true;
                }
                _ => {}
            }
            lock(&shared.state).screen_signal = Some(signal);
            let record_it = recorded_screen.is_none_or(|(prev, at, input)| {
                prev != signal
                    || input != in_at
                    || at.elapsed() >= Duration::from_millis(SCREEN_FACT_REFRESH_MS)
            });
            if record_it {
                record(kind::SCREEN, now_ms(), &signal);
                recorded_screen = Some((signal, Instant::now(), in_at));
            }
        }
        if prompt.is_some() {
            let quiet = quiet_enough(quiet_for, PROMPT_QUIET_MS);
            let readiness = screen
                .as_ref()
                .filter(|_| quiet || late)
                .map(|screen| rules::prompt_readiness(provider, screen, paste_mode));
            let type_now = match readiness {
                Some(rules::Readiness::Ready) => true,
                Some(rules::Readiness::Question) => {
                    if !question_noted {
                        tracing::info!(
                            "a question is on screen: the first prompt waits until it is answered"
                        );
                        question_noted = true;
                    }
                    false
                }
                // Never typed into a question, even late.
                Some(rules::Readiness::NotYet) => late,
                None => false,
            };
            if type_now {
                if let Some(p) = prompt.take() {
                    tracing::info!(?readiness, "typing the first prompt");
                    type_text(shared, &p, true);
                }
            }
        }
    }
}
