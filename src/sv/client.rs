//! The per-provider client actor: one per resolved provider, created on a provider's
//! first call and kept in a bounded registry ([`Clients`]). It owns what every call to
//! that provider shares: the keep-alive connection pool, the circuit breaker, and the
//! retry timers. A run worker sends it a [`Call`] (a typed message with a reply channel)
//! on a bounded mailbox and waits for the reply in 50 ms slices, checking its run's
//! cancel flag and the call's deadline; it never waits longer than the call's budget
//! ([`SvSettings::call_budget`]) and a full mailbox is refused at once.
//!
//! Where it runs: every actor is a task on one small tokio runtime of the process
//! (`svc-sv`, one worker thread), started on the first call. Not an actix actor: `svc
//! run` has no actix system, and the storage service and `actors::kvstore` made the same
//! choice for the same reason; one mechanism serves both commands.
//!
//! Pool: at most `pool_max_connections` connections per provider (in use or idle); a
//! call that finds none free waits in the actor's queue for the next one returned. An
//! idle connection is reused last-in first-out, is closed after `pool_idle_seconds`, and
//! is checked (`recv(MSG_PEEK)`) before each reuse. A connection that fails, times out,
//! or whose answer was not read whole is dropped, never reused. A request on a reused
//! connection that the provider closed before answering anything (its keep-alive
//! timeout racing our reuse) is sent again once on a fresh connection, and that neither
//! counts as an attempt nor as a failure.
//!
//! Policy (unchanged from the fresh-connection client): transport failures (connect,
//! reset, a broken answer, no answer within `rpc_timeout`) are retried up to
//! `max_attempts` times with backoff 100 ms, 200 ms, ...; a provider's answer, error
//! statuses included, is never retried. The breaker counts calls that failed on
//! transport after all their attempts: `breaker_failures` in a row open it for
//! `breaker_open_seconds`, during which calls are refused at once; then one call probes
//! (others are refused while it runs) and its outcome closes or re-opens it.

use super::SvSettings;
use super::http::{Answer, Conn, Request, WireError};
use futures_util::StreamExt as _;
use futures_util::future::BoxFuture;
use futures_util::stream::FuturesUnordered;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc as sync_mpsc;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, mpsc};

/// How often a waiting run worker looks at its cancel flag and the deadline.
const POLL: Duration = Duration::from_millis(50);

/// A call's outcome as the actor replies it.
pub type Reply = Result<Answer, String>;

/// The message: one POST to the provider, and where to reply.
pub struct Call {
    /// The endpoint (`/function/add`); the provider's base path is put before it.
    pub path: String,
    pub body: Vec<u8>,
    pub trace_id: String,
    pub authorization: Option<String>,
    /// No attempt starts after it, and a call still waiting for a connection then fails.
    pub deadline: Instant,
    /// Set by the caller when it stops waiting (its run was cancelled, or the deadline
    /// passed): the actor drops the call, an exchange in flight included.
    pub gone: Arc<Gone>,
    pub reply: sync_mpsc::SyncSender<Reply>,
}

/// The caller's "I stopped waiting" flag, with a wake-up for the exchange in flight.
#[derive(Default)]
pub struct Gone {
    flag: AtomicBool,
    notify: Notify,
}

impl Gone {
    pub fn set(&self) {
        self.flag.store(true, Ordering::Release);
        // A stored permit: an exchange that starts waiting later still wakes.
        self.notify.notify_one();
    }

    fn is_set(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }
}

/// `http://host:port[/base]` split once per provider.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    /// The URL as resolved (messages name it).
    pub base: String,
    /// `host:port`.
    pub authority: String,
    /// The base path (`""` or `/api`).
    pub prefix: String,
}

// ---------------------------------------------------------------------------------------
// The registry: one actor per provider, bounded
// ---------------------------------------------------------------------------------------

/// The runtime every client actor runs on (never dropped: a process-wide service, like
/// `actors::kvstore`'s).
fn runtime() -> Result<&'static tokio::runtime::Runtime, String> {
    static RUNTIME: OnceLock<Option<tokio::runtime::Runtime>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("svc-sv")
                .enable_all()
                .build()
                .map_err(|e| tracing::error!("cannot start the sv client runtime: {e}"))
                .ok()
        })
        .as_ref()
        .ok_or_else(|| "the service-to-service client could not start".to_string())
}

struct Entry {
    target: Target,
    mailbox: mpsc::Sender<Call>,
    last_used: Instant,
}

/// The client actors of one process (what `SvNatives` holds), at most
/// `max_providers`; past that the least recently used one is let go (its mailbox
/// closes, it finishes the calls it holds and stops).
pub struct Clients {
    settings: SvSettings,
    entries: Mutex<HashMap<String, Entry>>,
}

impl Clients {
    pub fn new(settings: SvSettings) -> Clients {
        Clients {
            settings,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The mailbox of `module`'s actor at `target`, made on first use (and again when
    /// the provider's URL changed or its actor stopped).
    fn mailbox(&self, module: &str, target: &Target) -> Result<mpsc::Sender<Call>, String> {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = entries.get_mut(module)
            && entry.target == *target
            && !entry.mailbox.is_closed()
        {
            entry.last_used = Instant::now();
            return Ok(entry.mailbox.clone());
        }
        entries.remove(module);
        if entries.len() >= self.settings.max_providers
            && let Some(oldest) = entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(m, _)| m.clone())
        {
            entries.remove(&oldest);
        }
        let (mailbox, inbox) = mpsc::channel(self.settings.mailbox_capacity);
        let actor = Actor::new(target.clone(), self.settings.clone());
        runtime()?.spawn(actor.run(inbox));
        entries.insert(
            module.to_string(),
            Entry {
                target: target.clone(),
                mailbox: mailbox.clone(),
                last_used: Instant::now(),
            },
        );
        Ok(mailbox)
    }

    /// Send one call to `module`'s actor and wait for its reply (on the calling run
    /// worker's thread): at most the call's budget, less when `cancelled` turns true.
    pub fn call(
        &self,
        module: &str,
        target: &Target,
        request: Outgoing,
        cancelled: &dyn Fn() -> bool,
    ) -> Reply {
        let fail = |message: String| Err(message);
        let budget = self.settings.call_budget();
        let deadline = Instant::now() + budget;
        let gone = Arc::new(Gone::default());
        let (reply, answer) = sync_mpsc::sync_channel(1);
        let mut call = Call {
            path: request.path,
            body: request.body,
            trace_id: request.trace_id,
            authorization: request.authorization,
            deadline,
            gone: Arc::clone(&gone),
            reply,
        };
        // Two tries: the second with a new actor when the first one's mailbox closed.
        for attempt in 0..2 {
            let mailbox = match self.mailbox(module, target) {
                Ok(m) => m,
                Err(e) => return fail(e),
            };
            match mailbox.try_send(call) {
                Ok(()) => break,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    return fail(format!(
                        "the client of provider '{module}' is busy: its mailbox is full ({} calls, \
                         [scale.sv] mailbox_capacity)",
                        self.settings.mailbox_capacity
                    ));
                }
                Err(mpsc::error::TrySendError::Closed(back)) => {
                    if attempt == 1 {
                        return fail("the service-to-service client stopped".into());
                    }
                    self.entries
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .remove(module);
                    call = back;
                }
            }
        }
        // The actor fails a call at its deadline; the grace covers a reply in transit.
        let give_up = deadline + Duration::from_secs(1);
        loop {
            match answer.recv_timeout(POLL) {
                Ok(reply) => return reply,
                Err(sync_mpsc::RecvTimeoutError::Disconnected) => {
                    return fail("the service-to-service client stopped (internal error)".into());
                }
                Err(sync_mpsc::RecvTimeoutError::Timeout) => {
                    if cancelled() {
                        gone.set();
                        return fail("the calling run was cancelled".into());
                    }
                    if Instant::now() >= give_up {
                        gone.set();
                        return Err(format!(
                            "{}: no answer within {} ms ([scale.sv] rpc_timeout_seconds \
                                 x max_attempts)",
                            target.base,
                            budget.as_millis()
                        ));
                    }
                }
            }
        }
    }
}

/// What a run worker sends: the request's parts.
pub struct Outgoing {
    pub path: String,
    pub body: Vec<u8>,
    pub trace_id: String,
    pub authorization: Option<String>,
}

// ---------------------------------------------------------------------------------------
// The breaker
// ---------------------------------------------------------------------------------------

/// A provider's circuit breaker: closed, open until a time, then half-open with one
/// probe call at a time.
pub struct Breaker {
    threshold: u32,
    open_for: Duration,
    failures: u32,
    open_until: Option<Instant>,
    probing: bool,
}

/// How a call was let through the breaker.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Admission {
    Closed,
    /// This call is the half-open breaker's probe.
    Probe,
}

impl Breaker {
    pub fn new(threshold: u32, open_for: Duration) -> Breaker {
        Breaker {
            threshold: threshold.max(1),
            open_for,
            failures: 0,
            open_until: None,
            probing: false,
        }
    }

    /// Let a call through, or the refusal's message.
    pub fn admit(&mut self, now: Instant) -> Result<Admission, String> {
        match self.open_until {
            None => Ok(Admission::Closed),
            Some(t) if now < t => Err(format!(
                "circuit open after {} consecutive failures; retrying in {} ms",
                self.failures,
                t.saturating_duration_since(now).as_millis()
            )),
            Some(_) if self.probing => Err(format!(
                "circuit open after {} consecutive failures; a probe call is in flight",
                self.failures
            )),
            Some(_) => {
                self.probing = true;
                Ok(Admission::Probe)
            }
        }
    }

    /// A call got an answer (any status): the breaker closes.
    pub fn succeeded(&mut self) {
        self.failures = 0;
        self.open_until = None;
        self.probing = false;
    }

    /// A call failed on transport after all its attempts.
    pub fn failed(&mut self, now: Instant) {
        self.failures = self.failures.saturating_add(1);
        self.probing = false;
        if self.failures >= self.threshold {
            self.open_until = Some(now + self.open_for);
        }
    }

    /// A call ended with no verdict (its caller left): a probe's slot is free again.
    pub fn abandoned(&mut self, admission: Admission) {
        if admission == Admission::Probe {
            self.probing = false;
        }
    }
}

// ---------------------------------------------------------------------------------------
// The actor
// ---------------------------------------------------------------------------------------

/// One call as the actor holds it.
struct Job {
    call: Call,
    admission: Admission,
    /// Attempts started so far.
    attempt: u32,
    /// The next attempt must use a new connection (a reused one was found closed).
    fresh: bool,
    /// The one free resend after a stale reused connection was spent.
    resent: bool,
}

/// How one exchange ended.
enum Outcome {
    Answer(Answer, Option<Conn>),
    Wire(WireError),
    Connect(String),
    Timeout,
    Gone,
}

/// An exchange in flight comes back as this.
struct Done {
    job: Job,
    reused: bool,
    outcome: Outcome,
}

struct Idle {
    conn: Conn,
    since: Instant,
}

struct Actor {
    target: Arc<Target>,
    settings: SvSettings,
    breaker: Breaker,
    /// Idle connections, most recently returned last.
    idle: Vec<Idle>,
    /// Connections open: in use, being made, or idle.
    open: usize,
    /// Calls waiting for a connection, oldest first.
    waiting: VecDeque<Job>,
    in_flight: FuturesUnordered<BoxFuture<'static, Done>>,
    /// Calls sleeping out their backoff before the next attempt.
    backoff: FuturesUnordered<BoxFuture<'static, Job>>,
}

impl Actor {
    fn new(target: Target, settings: SvSettings) -> Actor {
        Actor {
            target: Arc::new(target),
            breaker: Breaker::new(settings.breaker_failures, settings.breaker_open),
            settings,
            idle: Vec::new(),
            open: 0,
            waiting: VecDeque::new(),
            in_flight: FuturesUnordered::new(),
            backoff: FuturesUnordered::new(),
        }
    }

    /// The actor's loop: messages, finished exchanges, finished backoffs, idle sweeps.
    /// It stops once its mailbox is closed (let go by the registry) and nothing is left.
    async fn run(mut self, mut inbox: mpsc::Receiver<Call>) {
        let every = (self.settings.pool_idle / 2).max(Duration::from_millis(100));
        let mut sweep = tokio::time::interval(every);
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut open_inbox = true;
        loop {
            tokio::select! {
                message = inbox.recv(), if open_inbox => match message {
                    Some(call) => self.admit(call),
                    None => open_inbox = false,
                },
                Some(done) = self.in_flight.next(), if !self.in_flight.is_empty() => {
                    self.finished(done);
                }
                Some(job) = self.backoff.next(), if !self.backoff.is_empty() => {
                    self.dispatch(job);
                }
                _ = sweep.tick() => self.sweep(),
            }
            if !open_inbox
                && self.in_flight.is_empty()
                && self.backoff.is_empty()
                && self.waiting.is_empty()
            {
                break;
            }
        }
    }

    fn admit(&mut self, call: Call) {
        if call.gone.is_set() {
            return;
        }
        match self.breaker.admit(Instant::now()) {
            Ok(admission) => self.dispatch(Job {
                call,
                admission,
                attempt: 0,
                fresh: false,
                resent: false,
            }),
            Err(message) => reply(&call, Err(message)),
        }
    }

    /// Start the job's next attempt on a pooled or new connection, or queue it.
    fn dispatch(&mut self, job: Job) {
        if job.call.gone.is_set() {
            self.breaker.abandoned(job.admission);
            return;
        }
        if Instant::now() >= job.call.deadline {
            self.fail(
                job,
                format!(
                    "{}: no answer within the call's time budget",
                    self.target.base
                ),
            );
            return;
        }
        if !job.fresh
            && let Some(conn) = self.checkout()
        {
            self.start(job, Some(conn));
        } else if self.open < self.settings.pool_max_connections {
            self.open += 1;
            self.start(job, None);
        } else if job.fresh && !self.idle.is_empty() {
            // Its slot goes to a new connection.
            self.idle.remove(0);
            self.start(job, None);
        } else if self.waiting.len() >= self.settings.mailbox_capacity {
            reply(
                &job.call,
                Err(format!(
                    "the client of provider at {} is busy: calls waiting for a connection: {} \
                     ([scale.sv] pool_max_connections, mailbox_capacity)",
                    self.target.base,
                    self.waiting.len()
                )),
            );
            self.breaker.abandoned(job.admission);
        } else {
            self.waiting.push_back(job);
        }
    }

    /// The most recently returned idle connection still fit for use; stale ones closed.
    fn checkout(&mut self) -> Option<Conn> {
        let now = Instant::now();
        while let Some(idle) = self.idle.pop() {
            if now.duration_since(idle.since) < self.settings.pool_idle && idle.conn.is_reusable() {
                return Some(idle.conn);
            }
            self.open -= 1;
        }
        None
    }

    /// Run one attempt as a future of `in_flight` (`conn` None = connect first).
    fn start(&mut self, mut job: Job, conn: Option<Conn>) {
        job.attempt += 1;
        let target = Arc::clone(&self.target);
        let timeout = self.settings.rpc_timeout;
        let max_body = self.settings.max_response_bytes;
        let reused = conn.is_some();
        self.in_flight.push(Box::pin(async move {
            let gone = Arc::clone(&job.call.gone);
            let attempt = async {
                let conn = match conn {
                    Some(conn) => conn,
                    None => match Conn::connect(&target.authority).await {
                        Ok(conn) => conn,
                        Err(e) => return Outcome::Connect(e),
                    },
                };
                let path = format!("{}{}", target.prefix, job.call.path);
                let request = Request {
                    authority: &target.authority,
                    path: &path,
                    trace_id: &job.call.trace_id,
                    authorization: job.call.authorization.as_deref(),
                    body: &job.call.body,
                };
                match conn.exchange(&request, max_body).await {
                    Ok((answer, conn)) => Outcome::Answer(answer, conn),
                    Err(e) => Outcome::Wire(e),
                }
            };
            let outcome = tokio::select! {
                outcome = tokio::time::timeout(timeout, attempt) => {
                    outcome.unwrap_or(Outcome::Timeout)
                }
                () = gone.notify.notified() => Outcome::Gone,
            };
            Done {
                job,
                reused,
                outcome,
            }
        }));
    }

    fn finished(&mut self, done: Done) {
        let Done {
            mut job,
            reused,
            outcome,
        } = done;
        let base = &self.target.base;
        let failure = match outcome {
            Outcome::Answer(answer, conn) => {
                self.give_back(conn);
                self.breaker.succeeded();
                reply(&job.call, Ok(answer));
                return;
            }
            Outcome::Gone => {
                self.give_back(None);
                self.breaker.abandoned(job.admission);
                return;
            }
            Outcome::Wire(WireError::TooLarge) => {
                self.give_back(None);
                // An answer came: not the transport's fault.
                self.breaker.succeeded();
                reply(
                    &job.call,
                    Err(format!(
                        "the answer exceeds {} bytes",
                        self.settings.max_response_bytes
                    )),
                );
                return;
            }
            Outcome::Wire(WireError::NoAnswer(_)) if reused && !job.resent => {
                // The provider closed an idle connection as we reused it: the request
                // never ran. Again, once, on a new connection, for free.
                self.give_back(None);
                job.attempt -= 1;
                job.resent = true;
                job.fresh = true;
                self.dispatch(job);
                return;
            }
            Outcome::Wire(WireError::NoAnswer(m) | WireError::Broken(m)) => format!("{base}: {m}"),
            Outcome::Connect(m) => format!("cannot connect to {base}: {m}"),
            Outcome::Timeout => format!("{base}: no answer within the rpc timeout"),
        };
        self.give_back(None);
        if job.attempt < self.settings.max_attempts && !job.call.gone.is_set() {
            let pause = Duration::from_millis(100 << (job.attempt - 1).min(6));
            if Instant::now() + pause < job.call.deadline {
                job.fresh = true;
                self.backoff.push(Box::pin(async move {
                    tokio::time::sleep(pause).await;
                    job
                }));
                return;
            }
        }
        self.breaker.failed(Instant::now());
        reply(&job.call, Err(failure));
    }

    /// A job that cannot start (its deadline passed) fails as a transport failure.
    fn fail(&mut self, job: Job, message: String) {
        self.breaker.failed(Instant::now());
        reply(&job.call, Err(message));
    }

    /// An exchange ended: its connection (`None` = dropped) goes to the next waiting
    /// call, else to the idle list.
    fn give_back(&mut self, conn: Option<Conn>) {
        match conn {
            Some(conn) => {
                while let Some(job) = self.waiting.pop_front() {
                    if job.call.gone.is_set() {
                        self.breaker.abandoned(job.admission);
                        continue;
                    }
                    self.start(job, Some(conn));
                    return;
                }
                self.idle.push(Idle {
                    conn,
                    since: Instant::now(),
                });
            }
            None => {
                self.open -= 1;
                if let Some(job) = self.waiting.pop_front() {
                    self.dispatch(job);
                }
            }
        }
    }

    /// Close idle connections past `pool_idle`.
    fn sweep(&mut self) {
        let now = Instant::now();
        let before = self.idle.len();
        self.idle
            .retain(|i| now.duration_since(i.since) < self.settings.pool_idle);
        self.open -= before - self.idle.len();
    }
}

fn reply(call: &Call, reply: Reply) {
    // Capacity 1 and one reply per call: never blocks; a caller that left ignores it.
    let _ = call.reply.try_send(reply);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_breaker_opens_and_lets_one_probe() {
        let mut b = Breaker::new(2, Duration::from_millis(50));
        let t0 = Instant::now();
        assert_eq!(b.admit(t0), Ok(Admission::Closed));
        b.failed(t0);
        assert_eq!(b.admit(t0), Ok(Admission::Closed));
        b.failed(t0);
        let refused = b.admit(t0).expect_err("open");
        assert!(refused.starts_with("circuit open after 2 consecutive failures; retrying in "));
        let later = t0 + Duration::from_millis(60);
        assert_eq!(b.admit(later), Ok(Admission::Probe));
        assert!(b.admit(later).is_err(), "one probe at a time");
        b.abandoned(Admission::Probe);
        assert_eq!(b.admit(later), Ok(Admission::Probe));
        b.failed(later);
        assert!(b.admit(later).is_err(), "a failed probe re-opens");
        let much_later = later + Duration::from_millis(60);
        assert_eq!(b.admit(much_later), Ok(Admission::Probe));
        b.succeeded();
        assert_eq!(b.admit(much_later), Ok(Admission::Closed));
        assert_eq!(b.admit(much_later), Ok(Admission::Closed));
    }
}
