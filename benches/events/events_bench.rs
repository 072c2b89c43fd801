//! Event-streaming benchmark (`benches/events/run.sh`; kept out of CI): events/s from
//! `publish` to the `@subscribe` handler having run, and the latency distribution, for
//! the in-memory broker and the Redis-streams broker, each next to a baseline in the
//! same run (the bare broker without the runtime: in-memory publish/fetch/ack, raw
//! `XADD` pipelines + `XREADGROUP` + `XACK`).
//!
//! The product's `events`, `config` and `metrics` modules are compiled in by path; the handler is
//! `def on_bench(e: Event) { broker.ack(e); }` and the `broker.ack` native is answered by
//! a probe that records the time since the event's publish (the consumer acknowledges
//! for real after the run, as always).
//!
//! Usage: `events_bench [--events N] [--redis URL]` (without `--redis` the Redis rows are
//! skipped).

#![allow(dead_code, clippy::unwrap_used)]

/// The product's modules, by path (their own submodules resolve under `src/`).
#[path = "../../src"]
mod product {
    pub mod config;
    pub mod events;
    pub mod metrics;
}
use product::{config, events, metrics};

/// What `events` uses of the server's WebSocket bridge.
mod server {
    pub mod ws {
        pub mod bridge {
            use std::time::Duration;
            pub const BACKOFF_MAX: Duration = Duration::from_secs(10);
            #[derive(Default)]
            pub struct Backoff(u32);
            impl Backoff {
                pub fn next_delay(&mut self) -> Duration {
                    self.0 = (self.0 + 1).min(7);
                    Duration::from_millis(100 << self.0).min(BACKOFF_MAX)
                }
                pub fn reset(&mut self) {
                    self.0 = 0;
                }
            }
            pub fn redact(url: &str) -> String {
                url.to_string()
            }
        }
    }
}

use actors::natives::{NativeCall, Natives, NativesHandle};
use actors::runtime::{Runtime, RuntimeConfig};
use lang::host::HostError;
use serde_json::{Value as Json, json};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const APP: &str = r#"
@subscribe("bench", group="bench")
def on_bench(e: Event) {
    broker.ack(e);
}
"#;

/// Answers the handler's `broker.ack` by recording the latency; forwards the rest.
struct Probe {
    inner: NativesHandle,
    epoch: Instant,
    handled: AtomicU64,
    latencies_us: Mutex<Vec<u64>>,
}

impl Natives for Probe {
    fn call(
        &self,
        name: &str,
        args: &[Json],
        call: NativeCall<'_>,
    ) -> Option<Result<Json, HostError>> {
        if name == lang::serve::events::natives::ACK {
            let sent = args[0]["data"]["t"].as_u64().unwrap_or(0);
            let now = self.epoch.elapsed().as_micros() as u64;
            self.latencies_us
                .lock()
                .unwrap()
                .push(now.saturating_sub(sent));
            self.handled.fetch_add(1, Ordering::AcqRel);
            return Some(Ok(Json::Bool(true)));
        }
        self.inner.call(name, args, call)
    }
}

struct Row {
    name: String,
    events: u64,
    secs: f64,
    latencies_us: Vec<u64>,
}

fn pct(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

fn print(rows: &[Row]) {
    println!(
        "{:<44} {:>9} {:>12} {:>9} {:>9} {:>9} {:>9}",
        "case", "events", "events/s", "p50 ms", "p90 ms", "p99 ms", "max ms"
    );
    for r in rows {
        let mut l = r.latencies_us.clone();
        l.sort_unstable();
        println!(
            "{:<44} {:>9} {:>12.0} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
            r.name,
            r.events,
            r.events as f64 / r.secs,
            pct(&l, 0.5),
            pct(&l, 0.9),
            pct(&l, 0.99),
            pct(&l, 1.0)
        );
    }
}

fn record(t: u64) -> serde_json::Map<String, Json> {
    let mut m = serde_json::Map::new();
    m.insert("data".into(), json!({ "t": t }));
    m.insert("trace_id".into(), Json::from(""));
    m.insert("event_type".into(), Json::from("bench"));
    m.insert(
        "id".into(),
        Json::from(lang::serve::events::uuid4(
            &mut lang::host::MemoryHost::new(),
        )),
    );
    m.insert("source".into(), Json::from("svc-scale"));
    m.insert("time".into(), Json::from(""));
    m.insert("headers".into(), Json::Object(serde_json::Map::new()));
    m
}

fn events_config() -> config::EventsConfig {
    config::EventsConfig {
        enabled: true,
        max_in_flight: 512,
        delivery_batch: 64,
        publish_queue_capacity: 1 << 20,
        max_retained_events: 1 << 21,
        poll_interval_seconds: 0.2,
        ..config::EventsConfig::default()
    }
}

/// publish → handled through the runtime.
fn through_runtime(name: &str, n: u64, cache_url: Option<&str>) -> Row {
    let dir = std::env::temp_dir().join(format!("svc-events-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("main.svc"), APP).unwrap();
    let cfg = events_config();
    let ev = events::Events::start(&cfg, cache_url).unwrap();
    let probe = Arc::new(Probe {
        inner: ev.natives(),
        epoch: Instant::now(),
        handled: AtomicU64::new(0),
        latencies_us: Mutex::new(Vec::with_capacity(n as usize)),
    });
    let row = actix::System::new().block_on({
        let probe = Arc::clone(&probe);
        let ev = Arc::clone(&ev);
        let dir = dir.clone();
        async move {
            let mut rc =
                RuntimeConfig::new(dir.join("main.svc"), dir.join(".svc/data/anchor_store.db"));
            rc.natives = Some(NativesHandle(probe.clone() as Arc<dyn Natives>));
            rc.queue_capacity = 4096;
            let (runtime, loaded): (Runtime, _) = Runtime::start(rc).unwrap();
            let consumers =
                events::consumer::Consumers::start(&ev, &runtime, &loaded.subscriptions);
            // Let the group be created (start_from latest) before publishing.
            tokio::time::sleep(Duration::from_millis(500)).await;
            let started = Instant::now();
            std::thread::scope(|s| {
                s.spawn(|| {
                    for _ in 0..n {
                        ev.publish("bench", record(probe.epoch.elapsed().as_micros() as u64));
                    }
                });
            });
            let deadline = Instant::now() + Duration::from_secs(300);
            while probe.handled.load(Ordering::Acquire) < n && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            let secs = started.elapsed().as_secs_f64();
            consumers.stop_and_join(Duration::from_secs(10));
            ev.shutdown(Duration::from_secs(2));
            drop(runtime);
            Row {
                name: name.to_string(),
                events: probe.handled.load(Ordering::Acquire),
                secs,
                latencies_us: std::mem::take(&mut *probe.latencies_us.lock().unwrap()),
            }
        }
    });
    let _ = std::fs::remove_dir_all(&dir);
    row
}

/// Baseline: the in-memory broker alone (publish on one thread, fetch + ack on another).
fn local_baseline(n: u64) -> Row {
    let b = Arc::new(events::local::LocalBroker::new(
        1 << 21,
        Duration::from_secs(30),
    ));
    b.ensure_group("base", "g", &events::StartFrom::Latest);
    let epoch = Instant::now();
    let started = Instant::now();
    let consumer = {
        let b = Arc::clone(&b);
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let mut lat = Vec::with_capacity(n as usize);
                while (lat.len() as u64) < n {
                    for d in b.fetch("base", "g", 512, Duration::from_millis(200)).await {
                        let t = d.record["data"]["t"].as_u64().unwrap_or(0);
                        lat.push((epoch.elapsed().as_micros() as u64).saturating_sub(t));
                        b.ack("base", "g", &d.id);
                    }
                }
                lat
            })
        })
    };
    for _ in 0..n {
        b.publish("base", record(epoch.elapsed().as_micros() as u64));
    }
    let lat = consumer.join().unwrap();
    Row {
        name: "baseline: in-memory publish/fetch/ack".into(),
        events: n,
        secs: started.elapsed().as_secs_f64(),
        latencies_us: lat,
    }
}

/// Baseline: raw Redis streams (pipelined XADD; XREADGROUP COUNT 512 + pipelined XACK).
fn redis_baseline(n: u64, url: &str) -> Row {
    let client = redis::Client::open(url).unwrap();
    let mut c = client.get_connection().unwrap();
    let _: redis::Value = redis::cmd("DEL").arg("rawbase").query(&mut c).unwrap();
    let _: redis::Value = redis::cmd("XGROUP")
        .arg("CREATE")
        .arg("rawbase")
        .arg("g")
        .arg("$")
        .arg("MKSTREAM")
        .query(&mut c)
        .unwrap();
    let epoch = Instant::now();
    let started = Instant::now();
    let reader = {
        let client = client.clone();
        std::thread::spawn(move || {
            let mut c = client.get_connection().unwrap();
            let mut lat = Vec::with_capacity(n as usize);
            while (lat.len() as u64) < n {
                let reply: redis::Value = redis::cmd("XREADGROUP")
                    .arg("GROUP")
                    .arg("g")
                    .arg("c")
                    .arg("COUNT")
                    .arg(512)
                    .arg("BLOCK")
                    .arg(200)
                    .arg("STREAMS")
                    .arg("rawbase")
                    .arg(">")
                    .query(&mut c)
                    .unwrap();
                let mut ids = Vec::new();
                if let redis::Value::Array(streams) = reply {
                    for s in streams {
                        let redis::Value::Array(mut kv) = s else {
                            continue;
                        };
                        let Some(redis::Value::Array(entries)) = kv.pop() else {
                            continue;
                        };
                        for e in entries {
                            let redis::Value::Array(mut parts) = e else {
                                continue;
                            };
                            let fields = parts.pop();
                            let id = parts.pop();
                            if let Some(redis::Value::Array(f)) = fields
                                && let Some(redis::Value::BulkString(v)) = f.get(1)
                            {
                                let j: Json = serde_json::from_slice(v).unwrap_or(Json::Null);
                                let t = j["data"]["t"].as_u64().unwrap_or(0);
                                lat.push((epoch.elapsed().as_micros() as u64).saturating_sub(t));
                            }
                            if let Some(redis::Value::BulkString(id)) = id {
                                ids.push(id);
                            }
                        }
                    }
                }
                if !ids.is_empty() {
                    let mut ack = redis::cmd("XACK");
                    ack.arg("rawbase").arg("g");
                    for id in ids {
                        ack.arg(id);
                    }
                    let _: redis::Value = ack.query(&mut c).unwrap();
                }
            }
            lat
        })
    };
    let mut sent = 0;
    while sent < n {
        let batch = (n - sent).min(512);
        let mut pipe = redis::pipe();
        for _ in 0..batch {
            let payload =
                events::wire::encode("rawbase", &record(epoch.elapsed().as_micros() as u64));
            pipe.cmd("XADD")
                .arg("rawbase")
                .arg("*")
                .arg("event")
                .arg(payload)
                .ignore();
        }
        let _: () = pipe.query(&mut c).unwrap();
        sent += batch;
    }
    let lat = reader.join().unwrap();
    Row {
        name: "baseline: raw XADD / XREADGROUP / XACK".into(),
        events: n,
        secs: started.elapsed().as_secs_f64(),
        latencies_us: lat,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |k: &str| {
        args.iter()
            .position(|a| a == k)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let n: u64 = arg("--events")
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let redis_url = arg("--redis");
    let mut rows = vec![
        local_baseline(n),
        through_runtime("in-memory broker: publish -> handler ran", n, None),
    ];
    if let Some(url) = &redis_url {
        let rn = (n / 2).max(1);
        rows.push(redis_baseline(rn, url));
        rows.push(through_runtime(
            "Redis streams: publish -> handler ran",
            rn,
            Some(url),
        ));
    }
    println!(
        "\nworkers: {} (one per core), max_in_flight 512, delivery_batch 64, trivial handler; goals: in-memory \
         >= 200,000 events/s, Redis streams >= 30,000 events/s\n",
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    print(&rows);
}

/// The same global allocator as the `svc` binary (src/main.rs).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
