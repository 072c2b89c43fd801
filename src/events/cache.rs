//! The cache-store stream broker: Redis streams, durable and shared by replicas.
//!
//! A topic is the stream of that name; each event is one entry with one field `event`
//! holding its CloudEvents JSON (`wire.rs`). A subscription's group is a Redis consumer
//! group (`XGROUP CREATE ... MKSTREAM`, at `$` for `latest`, `0` for `earliest`, else the
//! given id; an existing group keeps its position). Reads are `XREADGROUP ... BLOCK`;
//! entries another consumer left unacknowledged longer than the visibility timeout (a
//! replica that crashed mid-event) are taken over with `XAUTOCLAIM`; an acknowledged
//! delivery is `XACK`ed. Publishing is `XADD <topic> MAXLEN ~ <max_retained_events>`.
//!
//! Connections: each consumer actor opens its own two (one blocks in `XREADGROUP`, the
//! other acknowledges and dead-letters) on its own runtime; publishes from run workers
//! go through a bounded queue to the `svc-scale-publisher` thread, which pipelines them;
//! `broker.consume`/`broker.ack` on a run worker use plain blocking connections from a
//! small pool.

use super::wire;
use super::{Delivery, StartFrom};
use redis::Value as RValue;
use serde_json::Value as Json;
use std::sync::Mutex;
use std::time::Duration;

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Idle blocking connections kept for `broker.consume`/`broker.ack` on run workers.
const SYNC_POOL: usize = 8;
/// Longest single blocking read of `broker.consume` (it re-checks cancellation between).
const SYNC_SLICE: Duration = Duration::from_millis(200);
/// The stream entry's field holding the CloudEvents JSON.
pub const FIELD: &str = "event";

pub struct CacheBroker {
    pub client: redis::Client,
    /// The URL with its password hidden, for logs.
    pub shown: String,
    max_retained: usize,
    pub max_event_bytes: usize,
    visibility: Duration,
    /// How long one blocking read waits.
    block: Duration,
    pool: Mutex<Vec<redis::Connection>>,
}

/// One consumer's connections.
pub struct CacheConn {
    reader: redis::aio::MultiplexedConnection,
    /// Acknowledgements, claims, dead letters (cloned into each delivery task).
    pub writer: redis::aio::MultiplexedConnection,
    /// `XAUTOCLAIM` cursor.
    cursor: String,
}

/// What one read found: deliveries, plus entries that are not valid events (their raw
/// text) to be dead-lettered.
pub struct Fetched {
    pub deliveries: Vec<Delivery>,
    pub invalid: Vec<(String, String)>,
}

impl CacheBroker {
    pub fn new(
        client: redis::Client,
        shown: String,
        max_retained: usize,
        max_event_bytes: usize,
        visibility: Duration,
        block: Duration,
    ) -> CacheBroker {
        CacheBroker {
            client,
            shown,
            max_retained,
            max_event_bytes,
            visibility,
            block,
            pool: Mutex::new(Vec::new()),
        }
    }

    fn async_config(&self) -> redis::AsyncConnectionConfig {
        redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(self.block + Duration::from_secs(10)))
    }

    pub async fn connect(&self) -> redis::RedisResult<redis::aio::MultiplexedConnection> {
        self.client
            .get_multiplexed_async_connection_with_config(&self.async_config())
            .await
    }

    /// A consumer's connections.
    pub async fn consumer_conn(&self) -> redis::RedisResult<CacheConn> {
        Ok(CacheConn {
            reader: self.connect().await?,
            writer: self.connect().await?,
            cursor: "0-0".into(),
        })
    }

    /// The `XADD` of one event (pipelined by the publisher).
    pub fn xadd(&self, topic: &str, payload: &str) -> redis::Cmd {
        let mut cmd = redis::cmd("XADD");
        cmd.arg(topic)
            .arg("MAXLEN")
            .arg("~")
            .arg(self.max_retained)
            .arg("*")
            .arg(FIELD)
            .arg(payload);
        cmd
    }

    fn group_create(topic: &str, group: &str, start: &StartFrom) -> redis::Cmd {
        let position = match start {
            StartFrom::Latest => "$",
            StartFrom::Earliest => "0",
            StartFrom::At(id) => id.as_str(),
        };
        let mut cmd = redis::cmd("XGROUP");
        cmd.arg("CREATE")
            .arg(topic)
            .arg(group)
            .arg(position)
            .arg("MKSTREAM");
        cmd
    }

    /// Create the group unless it exists.
    pub async fn ensure_group(
        &self,
        conn: &mut CacheConn,
        topic: &str,
        group: &str,
        start: &StartFrom,
    ) -> redis::RedisResult<()> {
        let r: redis::RedisResult<RValue> = Self::group_create(topic, group, start)
            .query_async(&mut conn.writer)
            .await;
        group_created(r)
    }

    /// Up to `max` deliveries: first entries idle longer than the visibility timeout
    /// (claimed for `consumer`), then new ones (blocking up to the poll interval).
    pub async fn fetch(
        &self,
        conn: &mut CacheConn,
        topic: &str,
        group: &str,
        consumer: &str,
        max: usize,
        claim: bool,
    ) -> redis::RedisResult<Fetched> {
        let mut out = Fetched {
            deliveries: Vec::new(),
            invalid: Vec::new(),
        };
        if claim {
            let reply: RValue = redis::cmd("XAUTOCLAIM")
                .arg(topic)
                .arg(group)
                .arg(consumer)
                .arg(self.visibility.as_millis() as u64)
                .arg(&conn.cursor)
                .arg("COUNT")
                .arg(max)
                .query_async(&mut conn.writer)
                .await?;
            if let RValue::Array(parts) = reply {
                let mut parts = parts.into_iter();
                if let Some(next) = parts.next().and_then(|v| text(&v)) {
                    conn.cursor = next;
                }
                if let Some(entries) = parts.next() {
                    self.entries(entries, topic, group, &mut out);
                }
            }
            // A claimed entry was delivered before: its delivery count (XPENDING, one per
            // XREADGROUP or claim) says how many times.
            for d in &mut out.deliveries {
                let pending: RValue = redis::cmd("XPENDING")
                    .arg(topic)
                    .arg(group)
                    .arg(&d.id)
                    .arg(&d.id)
                    .arg(1)
                    .query_async(&mut conn.writer)
                    .await?;
                d.previous = delivery_count(&pending).saturating_sub(1);
            }
            if !out.deliveries.is_empty() || !out.invalid.is_empty() {
                return Ok(out);
            }
        }
        let reply: RValue = redis::cmd("XREADGROUP")
            .arg("GROUP")
            .arg(group)
            .arg(consumer)
            .arg("COUNT")
            .arg(max)
            .arg("BLOCK")
            .arg(self.block.as_millis().max(1) as u64)
            .arg("STREAMS")
            .arg(topic)
            .arg(">")
            .query_async(&mut conn.reader)
            .await?;
        self.read_reply(reply, topic, group, &mut out);
        Ok(out)
    }

    /// `XREADGROUP` reply: `[[stream, [entry...]]]`, or nil on timeout (RESP3: a map).
    fn read_reply(&self, reply: RValue, topic: &str, group: &str, out: &mut Fetched) {
        let streams = match reply {
            RValue::Array(s) => s
                .into_iter()
                .filter_map(|s| match s {
                    RValue::Array(mut kv) if kv.len() == 2 => kv.pop(),
                    _ => None,
                })
                .collect(),
            RValue::Map(m) => m.into_iter().map(|(_, v)| v).collect(),
            _ => Vec::new(),
        };
        for entries in streams {
            self.entries(entries, topic, group, out);
        }
    }

    /// Entries `[[id, [field, value, ...]], ...]` (a deleted entry's fields are nil).
    fn entries(&self, entries: RValue, topic: &str, group: &str, out: &mut Fetched) {
        let RValue::Array(entries) = entries else {
            return;
        };
        for entry in entries {
            let RValue::Array(mut parts) = entry else {
                continue;
            };
            if parts.len() != 2 {
                continue;
            }
            let fields = parts.pop();
            let Some(id) = parts.pop().as_ref().and_then(text) else {
                continue;
            };
            let mut payload = None;
            if let Some(RValue::Array(fields)) = fields {
                for pair in fields.chunks(2) {
                    if let [k, v] = pair
                        && text(k).as_deref() == Some(FIELD)
                    {
                        payload = text(v);
                    }
                }
            }
            let Some(payload) = payload else {
                out.invalid.push((id, String::new()));
                continue;
            };
            if payload.len() > self.max_event_bytes {
                out.invalid.push((id, String::new()));
                continue;
            }
            match wire::decode(&payload) {
                Ok(mut record) => {
                    record.insert("delivery_id".into(), Json::from(id.as_str()));
                    record.insert("delivery_topic".into(), Json::from(topic));
                    record.insert("delivery_group".into(), Json::from(group));
                    out.deliveries.push(Delivery {
                        id,
                        record,
                        previous: 0,
                    });
                }
                Err(why) => {
                    tracing::warn!(target: "svc::events", topic, id, "stream entry is not a valid event ({why}); dead-lettering it");
                    out.invalid.push((id, payload));
                }
            }
        }
    }

    pub async fn ack(
        &self,
        conn: &mut redis::aio::MultiplexedConnection,
        topic: &str,
        group: &str,
        id: &str,
    ) -> redis::RedisResult<()> {
        let _: RValue = redis::cmd("XACK")
            .arg(topic)
            .arg(group)
            .arg(id)
            .query_async(conn)
            .await?;
        Ok(())
    }

    /// Reset a pending entry's idle time (a handler still working on it).
    /// `XACK` several entries in one command.
    pub async fn ack_many<'a>(
        &self,
        conn: &mut redis::aio::MultiplexedConnection,
        topic: &str,
        group: &str,
        ids: impl IntoIterator<Item = &'a str>,
    ) -> redis::RedisResult<()> {
        let mut cmd = redis::cmd("XACK");
        cmd.arg(topic).arg(group);
        let mut any = false;
        for id in ids {
            cmd.arg(id);
            any = true;
        }
        if any {
            let _: RValue = cmd.query_async(conn).await?;
        }
        Ok(())
    }

    /// `touch` for several entries in one `XCLAIM ... JUSTID`.
    pub async fn touch_many<'a>(
        &self,
        conn: &mut redis::aio::MultiplexedConnection,
        topic: &str,
        group: &str,
        consumer: &str,
        ids: impl IntoIterator<Item = &'a str>,
    ) -> redis::RedisResult<()> {
        let mut cmd = redis::cmd("XCLAIM");
        cmd.arg(topic).arg(group).arg(consumer).arg(0);
        let mut any = false;
        for id in ids {
            cmd.arg(id);
            any = true;
        }
        if any {
            let _: RValue = cmd.arg("JUSTID").query_async(conn).await?;
        }
        Ok(())
    }

    pub async fn touch(
        &self,
        conn: &mut redis::aio::MultiplexedConnection,
        topic: &str,
        group: &str,
        consumer: &str,
        id: &str,
    ) -> redis::RedisResult<()> {
        let _: RValue = redis::cmd("XCLAIM")
            .arg(topic)
            .arg(group)
            .arg(consumer)
            .arg(0)
            .arg(id)
            .arg("JUSTID")
            .query_async(conn)
            .await?;
        Ok(())
    }

    /// Publish an already encoded event (dead-lettering), on the consumer's connection.
    pub async fn publish_raw(
        &self,
        conn: &mut redis::aio::MultiplexedConnection,
        topic: &str,
        payload: &str,
    ) -> redis::RedisResult<()> {
        let _: RValue = self.xadd(topic, payload).query_async(conn).await?;
        Ok(())
    }

    // -- blocking side: `broker.consume` / `broker.ack` on a run worker ------------------

    fn with_sync<T>(
        &self,
        read_timeout: Duration,
        f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> redis::RedisResult<T> {
        let pooled = self.pool.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut conn = match pooled {
            Some(c) => c,
            None => self.client.get_connection_with_timeout(CONNECT_TIMEOUT)?,
        };
        conn.set_read_timeout(Some(read_timeout))?;
        let r = f(&mut conn);
        if r.is_ok() {
            let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
            if pool.len() < SYNC_POOL {
                pool.push(conn);
            }
        }
        r
    }

    /// `broker.consume`: up to `max` deliveries for `group`, waiting up to `wait`.
    pub fn consume_blocking(
        &self,
        topic: &str,
        group: &str,
        consumer: &str,
        start: &StartFrom,
        max: usize,
        wait: Duration,
        cancelled: &dyn Fn() -> bool,
    ) -> redis::RedisResult<Vec<Delivery>> {
        let deadline = std::time::Instant::now() + wait;
        self.with_sync(SYNC_SLICE + Duration::from_secs(5), |conn| {
            group_created(Self::group_create(topic, group, start).query(conn))?;
            let mut out = Fetched {
                deliveries: Vec::new(),
                invalid: Vec::new(),
            };
            let reply: RValue = redis::cmd("XAUTOCLAIM")
                .arg(topic)
                .arg(group)
                .arg(consumer)
                .arg(self.visibility.as_millis() as u64)
                .arg("0-0")
                .arg("COUNT")
                .arg(max)
                .query(conn)?;
            if let RValue::Array(parts) = reply
                && let Some(entries) = parts.into_iter().nth(1)
            {
                self.entries(entries, topic, group, &mut out);
            }
            // Block in slices, so a cancelled run stops waiting soon.
            while out.deliveries.is_empty() {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                let mut read = redis::cmd("XREADGROUP");
                read.arg("GROUP")
                    .arg(group)
                    .arg(consumer)
                    .arg("COUNT")
                    .arg(max);
                // BLOCK 0 would wait forever: a zero wait is a plain read.
                let ms = left.min(SYNC_SLICE).as_millis() as u64;
                if ms > 0 {
                    read.arg("BLOCK").arg(ms);
                }
                let reply: RValue = read.arg("STREAMS").arg(topic).arg(">").query(conn)?;
                self.read_reply(reply, topic, group, &mut out);
                if ms == 0 || cancelled() {
                    break;
                }
            }
            Ok(out.deliveries)
        })
    }

    pub fn ack_blocking(&self, topic: &str, group: &str, id: &str) -> redis::RedisResult<bool> {
        self.with_sync(Duration::from_secs(5), |conn| {
            let n: i64 = redis::cmd("XACK")
                .arg(topic)
                .arg(group)
                .arg(id)
                .query(conn)?;
            Ok(n > 0)
        })
    }
}

/// `XGROUP CREATE` succeeded or the group existed already.
fn group_created(r: redis::RedisResult<RValue>) -> redis::RedisResult<()> {
    match r {
        Ok(_) => Ok(()),
        Err(e) if e.code() == Some("BUSYGROUP") || e.to_string().contains("BUSYGROUP") => Ok(()),
        Err(e) => Err(e),
    }
}

fn text(v: &RValue) -> Option<String> {
    match v {
        RValue::BulkString(b) => String::from_utf8(b.clone()).ok(),
        RValue::SimpleString(s) => Some(s.clone()),
        RValue::VerbatimString { text, .. } => Some(text.clone()),
        _ => None,
    }
}

/// The delivery count of an `XPENDING key group start end 1` reply
/// (`[[id, consumer, idle ms, count]]`); 1 when absent.
fn delivery_count(reply: &RValue) -> u32 {
    let RValue::Array(rows) = reply else {
        return 1;
    };
    match rows.first() {
        Some(RValue::Array(row)) => match row.get(3) {
            Some(RValue::Int(n)) => u32::try_from(*n).unwrap_or(1),
            _ => 1,
        },
        _ => 1,
    }
}
