//! The monitor thread: the only owner of the store in the host (output,
//! input and screen facts, the git facts the git-facts thread read, the
//! typed first prompt, the screen rules); it also drives the feedback loop
//! and the notifications out.

use super::*;

/// The monitor: sole owner of the store. Records throttled output, input
/// and screen facts and the agent's own notifications, types the prompt
/// when the agent is ready, and records the exit.
pub(super) fn monitor(
    shared: &Arc<Shared>,
    store: Option<Store>,
    mut watchers: Vec<Box<dyn Watcher>>,
    rx: mpsc::Receiver<ToMonitor>,
) {
    let mut monitor = Monitor::new(shared, store);
    loop {
        let mut flushed = None;
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(ToMonitor::Flush(ack)) => flushed = Some(ack),
            Ok(ToMonitor::GitFact(fact)) => monitor.record(kind::HOST_GIT, now_ms(), &fact),
            Ok(ToMonitor::Exited(exit, done)) => {
                monitor.exited(exit);
                if let Some(store) = monitor.store.as_ref() {
                    for watcher in watchers {
                        watcher.exited(store);
                    }
                }
                let _ = done.send(());
                return;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        monitor.tick(flushed);
        reap(&shared.client_threads);
        if let Some(store) = monitor.store.as_ref() {
            for watcher in &mut watchers {
                watcher.poll(store);
            }
        }
    }
}

/// Whether output has been quiet for at least `ms`.
fn quiet_enough(quiet_for: Option<Duration>, ms: u64) -> bool {
    quiet_for.is_some_and(|q| q >= Duration::from_millis(ms))
}

/// What the monitor remembers between ticks.
struct Monitor<'a> {
    shared: &'a Arc<Shared>,
    store: Option<Store>,
    started: Instant,
    recorded_output_at: Option<i64>,
    recorded_input_at: Option<i64>,
    judged_seq: u64,
    judged_at: Option<Instant>,
    /// The last screen fact recorded: its signal, when, and the input it
    /// was judged after.
    recorded_screen: Option<(AgentSignal, Instant, Option<i64>)>,
    /// The question of the permission dialog last recorded (`dialog` fact).
    recorded_dialog: Option<String>,
    native_seq: u64,
    /// The last judgement saw an input box while output still flowed:
    /// judge again once it is quiet.
    input_box_pending: bool,
    first_turn: bool,
    prompt: Option<String>,
    question_noted: bool,
    /// The agent's memory, sampled now and then (`memory` facts; queued
    /// sessions are looked at when it gives back a lot).
    memory: Option<super::super::memory::Sampler>,
    /// The output sequence number last followed by a release of memory,
    /// and when that was.
    released_seq: u64,
    released_at: Option<Instant>,
    /// Whether the last `limit` fact recorded said the agent is limited,
    /// and whether it had the reset time.
    limited: bool,
    limit_resets_known: bool,
    /// `[agent] on_limit = "wait"`: when to type "continue" (Unix ms).
    continue_at: Option<i64>,
}

/// One look at the shared state, taken under its lock.
struct Look {
    out_at: Option<i64>,
    in_at: Option<i64>,
    seq: u64,
    quiet_for: Option<Duration>,
    /// The screen, when it is to be judged or read for the first prompt.
    screen: Option<rules::ScreenText>,
    paste_mode: bool,
    /// The screen model is parked (see [`ScreenModel`]).
    parked: bool,
    /// A native signal not seen yet, and its sequence number.
    native: Option<(Option<(AgentSignal, i64)>, u64)>,
    /// The screen is due for a judgement.
    due: bool,
}

impl<'a> Monitor<'a> {
    fn new(shared: &'a Arc<Shared>, store: Option<Store>) -> Monitor<'a> {
        let provider = shared.spec.provider.as_str();
        Monitor {
            shared,
            store,
            started: Instant::now(),
            recorded_output_at: None,
            recorded_input_at: None,
            judged_seq: 0,
            judged_at: None,
            recorded_screen: None,
            recorded_dialog: None,
            native_seq: 0,
            input_box_pending: false,
            first_turn: shared.spec.prompt_in_argv
                && !shared.spec.headless
                && rules::input_box_before_argv_task(provider),
            prompt: shared.spec.typed_prompt.clone().filter(|p| !p.is_empty()),
            question_noted: false,
            memory: shared.agent_pid.map(super::super::memory::Sampler::new),
            released_seq: 0,
            released_at: None,
            limited: false,
            limit_resets_known: false,
            continue_at: None,
        }
    }

    fn provider(&self) -> &'a str {
        self.shared.spec.provider.as_str()
    }

    fn record(&self, kind: &str, at: i64, value: &dyn erased::Value) {
        if let Some(store) = &self.store {
            if let Err(e) = value.record(store, self.shared.spec.session_id, kind, at) {
                tracing::warn!("recording a {kind} fact: {e}");
            }
        }
    }

    /// The agent exited: the last output and input, the exit, and a queued
    /// session may take its place.
    fn exited(&self, exit: AgentExit) {
        let (out_at, in_at) = {
            let s = self.shared.state.lock();
            (s.last_output_at, s.last_input_at)
        };
        if let Some(at) = out_at.filter(|at| Some(*at) != self.recorded_output_at) {
            self.record(kind::OUTPUT, at, &());
        }
        if let Some(at) = in_at.filter(|at| Some(*at) != self.recorded_input_at) {
            self.record(kind::INPUT, at, &());
        }
        let fact = ExitFact {
            code: exit.code,
            signal: exit.signal,
        };
        self.record(kind::EXIT, now_ms(), &fact);
        // Its place on the machine is free: a queued session may start.
        if let Some(store) = &self.store {
            super::super::admit_if_queued(store, &self.shared.spec.home);
        }
    }

    /// One turn of the loop: memory, output and input facts, the flush
    /// acknowledged, native signals, the screen judged, the prompt typed.
    fn tick(&mut self, flushed: Option<mpsc::Sender<()>>) {
        self.sample_memory();
        let now = now_ms();
        let prompt_deadline = if self.provider() == "aider" {
            PROMPT_DEADLINE_KNOWN_MS
        } else {
            PROMPT_DEADLINE_MS
        };
        let late = self.started.elapsed() >= Duration::from_millis(prompt_deadline);
        let look = self.look(late);
        self.release_after_burst(&look);
        if let Some(at) = look.out_at {
            let due = self
                .recorded_output_at
                .is_none_or(|prev| at > prev && now - prev >= OUTPUT_FACT_MS);
            if due {
                self.record(kind::OUTPUT, at, &());
                self.recorded_output_at = Some(at);
            }
        }
        if let Some(at) = look.in_at.filter(|at| Some(*at) != self.recorded_input_at) {
            self.record(kind::INPUT, at, &());
            self.recorded_input_at = Some(at);
            // The human (or owt send) took over: the screen is honest now.
            self.first_turn = false;
        }
        if let Some(ack) = flushed {
            let _ = ack.send(());
        }
        if let Some((signal, seq)) = look.native {
            self.native_seq = seq;
            if let Some((signal, at)) = signal {
                // What the agent said itself, like a hook.
                self.record(kind::HOOK, at, &signal);
                self.first_turn = false;
            }
        }
        if let Some(screen) = look.screen.as_ref().filter(|_| look.due) {
            self.judge(screen, &look);
        }
        if self.prompt.is_some() {
            self.type_prompt_when_ready(&look, late);
        }
        self.continue_after_limit();
    }

    /// Samples the agent's memory: its `memory` fact and peak, and a queued
    /// session admitted when it gave back a lot.
    fn sample_memory(&mut self) {
        let Some(sample) = self.memory.as_mut().and_then(|m| m.poll()) else {
            return;
        };
        if let (Some(fact), Some(store)) = (sample.record, &self.store) {
            self.record(kind::MEMORY, now_ms(), &fact);
            if let Err(e) = store.record_agent_peak(
                &self.shared.spec.short_id,
                self.provider(),
                fact.peak_bytes,
            ) {
                tracing::warn!("recording the agent's peak memory: {e}");
            }
        }
        if let (true, Some(store)) = (sample.freed, &self.store) {
            super::super::admit_if_queued(store, &self.shared.spec.home);
        }
    }

    fn look(&self, late: bool) -> Look {
        let mut s = self.shared.state.lock();
        let quiet_for = s.last_output.map(|t| t.elapsed());
        // Judge when output settles, and at least every REJUDGE_MS
        // while it never does (animated TUIs); never a screen that
        // does not show the last input's effect yet (no output since).
        let shows_input = s.last_input_at <= s.last_output_at;
        let due = shows_input
            && ((s.output_seq != self.judged_seq
                && (quiet_enough(quiet_for, rules::SETTLE_MS)
                    || self
                        .judged_at
                        .is_none_or(|t| t.elapsed() >= Duration::from_millis(rules::REJUDGE_MS))))
                || (self.input_box_pending && quiet_enough(quiet_for, INPUT_BOX_QUIET_MS)));
        let for_prompt =
            self.prompt.is_some() && (quiet_enough(quiet_for, PROMPT_QUIET_MS) || late);
        let screen =
            (due || for_prompt).then(|| rules::ScreenText::from_screen(s.parser.live().screen()));
        let native = (s.native_seq != self.native_seq).then_some((s.native, s.native_seq));
        Look {
            out_at: s.last_output_at,
            in_at: s.last_input_at,
            seq: s.output_seq,
            quiet_for,
            screen,
            paste_mode: s.parser.bracketed_paste(),
            parked: s.parser.is_parked(),
            native,
            due,
        }
    }

    /// A burst of output is over: the screen model is parked, the
    /// burst's buffers go back, and the binary's pages mapped to start the
    /// agent and parse its output too. A screen read since (a peek, a
    /// redraw, a resize) is parked again.
    fn release_after_burst(&mut self, look: &Look) {
        if !quiet_enough(look.quiet_for, RELEASE_QUIET_MS)
            || self
                .released_at
                .is_some_and(|t| t.elapsed() < RELEASE_INTERVAL)
        {
            return;
        }
        if look.seq != self.released_seq {
            self.released_seq = look.seq;
            self.released_at = Some(Instant::now());
            self.shared.state.lock().parser.park();
            crate::platform::allocator::release_after_burst();
            crate::platform::allocator::release_stack();
        } else if !look.parked {
            self.released_at = Some(Instant::now());
            self.shared.state.lock().parser.park();
            crate::platform::allocator::trim();
        }
    }

    /// Judges the screen: the signal shared with clients, and a `screen`
    /// fact when it changed (or is old).
    fn judge(&mut self, screen: &rules::ScreenText, look: &Look) {
        self.judged_seq = look.seq;
        self.judged_at = Some(Instant::now());
        let verdict = rules::screen_verdict(self.provider(), screen);
        let mut signal = verdict.signal();
        self.input_box_pending = false;
        // Before the agent has its task (a typed prompt still to type),
        // or before it shows that it started on the one on its command
        // line, its idle input box means "starting", not "waiting".
        let grace = self.started.elapsed() < Duration::from_millis(FIRST_TURN_GRACE_MS);
        if self.first_turn && !grace {
            self.first_turn = false;
        }
        let before_task = self.first_turn || self.prompt.is_some();
        match verdict {
            rules::Verdict::Working | rules::Verdict::Blocked => self.first_turn = false,
            rules::Verdict::InputBox | rules::Verdict::Unknown if before_task => {
                signal = AgentSignal::Working
            }
            rules::Verdict::InputBox if !quiet_enough(look.quiet_for, INPUT_BOX_QUIET_MS) => {
                // No opinion yet: the output's recency decides.
                signal = AgentSignal::Idle;
                self.input_box_pending = true;
            }
            _ => {}
        }
        self.note_limit(rules::limit_on_screen(self.provider(), screen));
        self.shared.state.lock().screen_signal = Some(signal);
        let record_it = self.recorded_screen.is_none_or(|(prev, at, input)| {
            prev != signal
                || input != look.in_at
                || at.elapsed() >= Duration::from_millis(SCREEN_FACT_REFRESH_MS)
        });
        self.record_dialog(screen, signal);
        if record_it {
            self.record(kind::SCREEN, now_ms(), &signal);
            self.recorded_screen = Some((signal, Instant::now(), look.in_at));
        }
    }

    /// The `dialog` fact: what a permission dialog on screen asks (before
    /// the `blocked` screen fact, so that a reader never sees `blocked`
    /// with the question of an earlier dialog); cleared once it is gone.
    fn record_dialog(&mut self, screen: &rules::ScreenText, signal: AgentSignal) {
        let question = (signal == AgentSignal::Blocked)
            .then(|| super::super::dialog::dialog(self.provider(), screen))
            .flatten()
            .map(|d| d.question);
        if question == self.recorded_dialog {
            return;
        }
        match &question {
            Some(q) => self.record(kind::DIALOG, now_ms(), q),
            None => {
                if let Some(store) = &self.store {
                    if let Err(e) = store.clear_fact(self.shared.spec.session_id, kind::DIALOG) {
                        tracing::warn!("clearing the dialog fact: {e}");
                    }
                }
            }
        }
        self.recorded_dialog = question;
    }

    /// A `limit` fact when the screen began or stopped showing a usage or
    /// rate limit as the agent's latest word, or began showing when it
    /// resets (OpenCode draws its "[retrying in 59m …]" after the error).
    fn note_limit(&mut self, seen: Option<rules::LimitSeen>) {
        let resets_known = seen.as_ref().is_some_and(|s| s.resets.is_some());
        let newly_timed = resets_known && !self.limit_resets_known;
        if seen.is_some() == self.limited && !newly_timed {
            return;
        }
        self.limited = seen.is_some();
        self.limit_resets_known = resets_known;
        let now = now_ms();
        let fact = match seen {
            Some(seen) => {
                let resets_at = seen
                    .resets_in_secs
                    .map(|s| now + i64::try_from(s).unwrap_or(i64::MAX / 2_000) * 1_000);
                let waiting = self.shared.spec.on_limit_wait && resets_at.is_some();
                crate::status::limit::LimitFact {
                    active: true,
                    line: seen.line,
                    resets: seen.resets,
                    resets_at,
                    waiting,
                }
            }
            None => crate::status::limit::LimitFact::default(),
        };
        self.continue_at = fact.resets_at.filter(|_| fact.waiting);
        self.record(crate::status::limit::LIMIT, now, &fact);
    }

    /// `[agent] on_limit = "wait"`: the limit reset, "continue" is typed
    /// (once; the agent's next limit is waited out again).
    fn continue_after_limit(&mut self) {
        if self.continue_at.is_some_and(|at| now_ms() >= at) {
            self.continue_at = None;
            tracing::info!("the usage limit reset: typing \"continue\"");
            type_text(self.shared, "continue", true);
        }
    }

    /// Types the first prompt once the screen is ready for it (or it is
    /// late), never into a question.
    fn type_prompt_when_ready(&mut self, look: &Look, late: bool) {
        let quiet = quiet_enough(look.quiet_for, PROMPT_QUIET_MS);
        let readiness = look
            .screen
            .as_ref()
            .filter(|_| quiet || late)
            .map(|screen| rules::prompt_readiness(self.provider(), screen, look.paste_mode));
        let type_now = match readiness {
            Some(rules::Readiness::Ready) => true,
            Some(rules::Readiness::Question) => {
                if !self.question_noted {
                    tracing::info!(
                        "a question is on screen: the first prompt waits until it is answered"
                    );
                    self.question_noted = true;
                }
                false
            }
            // Never typed into a question, even late.
            Some(rules::Readiness::NotYet) => late,
            None => false,
        };
        if type_now {
            if let Some(p) = self.prompt.take() {
                tracing::info!(?readiness, "typing the first prompt");
                type_text(self.shared, &p, true);
            }
        }
    }
}
