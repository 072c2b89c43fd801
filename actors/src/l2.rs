//! The L2 anchor cache of the document-database tier (service spec "Memory hierarchy":
//! L1 per run, L2 in the cache store, L3 the document database), when a cache URL
//! resolves and `[scale.database] cache_l2_enabled` is on.
//!
//! Loads go L1 (the run's own graph) → L2 → L3; a miss filled from L3 is written back,
//! and a commit writes the documents it produced (and tombstones for what it deleted)
//! right after the transaction committed, before the call is answered.
//!
//! **Layout.** Per store (`space` = the store's root id, unique per database), one
//! generation key `svc:l2:{space}:gen` (a random number) and one string per anchor,
//! `svc:l2:{space}:<id>` = `<generation>:<version>:<document>`, the document being the
//! anchor's BSON as a load of L3 returns it (at most 65 inline edge ids), so a hit is
//! decoded, alias-resolved and archetype-checked exactly like an L3 read. A tombstone is
//! `<generation>:TOMBSTONE:` (a version above any real one). Every entry expires after
//! `cache_l2_ttl_seconds`.
//!
//! **Why a read never gets an answer the L3 would not have given.**
//! - An entry is valid only under the current generation, which is read with the
//!   entries (one `MGET`).
//! - A fill (after an L3 read) and a post-commit update go through one Lua script that
//!   replaces an entry only with a strictly newer version, so a reader that read an old
//!   version before a writer committed cannot put it back over the writer's entry (the
//!   classic race). A fill also names the generation observed before its L3 read and is
//!   refused when it changed, and is not sent at all once half the TTL has passed since
//!   that observation (the newer entry it must lose against is then still alive).
//! - A delete writes a tombstone at `TOMBSTONE`: no fill wins against it until it expires.
//! - Any failure (connect, timeout, refused) turns L2 off in this process (logged once
//!   per outage): reads, fills and updates skip it while the reconnect backoff (100 ms
//!   doubling to 10 s) runs. Writes made meanwhile are not reflected, so the first
//!   successful reconnect replaces the generation of every store this process used
//!   before anything else: every entry written before becomes unreadable for every
//!   replica. A cache store that restarts empty has no generation key; the first reader
//!   sets a new random one. One that restarts from a snapshot (entries older than L3
//!   now) has another `run_id`: every client must reconnect, and the first one to do so
//!   for a store starts a new generation before anything is read
//!   (`svc:l2:{space}:instance` records the instance the generation belongs to).
//! - Commits stay version-checked in L3 (`CommitSet::read_versions`): a stale entry can
//!   at worst cost a replay, never a lost update. What L2 could serve stale is a
//!   read-only call, and only in the window above: a replica cut off from the cache
//!   store while the others still reach it, until it reconnects or the TTL passes.
//!
//! The connections are blocking (the run workers are plain threads and an L2 round trip
//! costs far less than the hop to the document tier's runtime): a small pool, each with
//! `OP_TIMEOUT` for connecting, reading and writing.

use lang::host::{AnchorId, format_id};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// Default `cache_l2_ttl_seconds`.
pub const DEFAULT_TTL: Duration = Duration::from_secs(60);
/// Longest wait for the cache store (connect, each read and write).
pub const OP_TIMEOUT: Duration = Duration::from_millis(1000);
/// The version of a tombstone: above any real one (and exact in Lua's doubles).
const TOMBSTONE: u64 = (1 << 53) - 1;
/// Keys per command (a bigger batch is split, the parts pipelined).
const CHUNK: usize = 256;
/// Idle connections kept.
const POOL: usize = 16;
/// Reconnect backoff bounds.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(10);

/// Replace each entry only by a strictly newer version. KEYS[1] = the generation key,
/// KEYS[2..] the entries; ARGV[1] = the generation the caller observed ('' = write under
/// the current one: a post-commit update, whose documents are current whenever they
/// land), ARGV[2] = TTL in ms, then `version, document` per entry.
const PUT_NEWER: &str = r"
local g = redis.call('GET', KEYS[1])
if not g then return 0 end
if ARGV[1] ~= '' and g ~= ARGV[1] then return 0 end
local n = 0
for i = 2, #KEYS do
  local v = tonumber(ARGV[2 * i - 1])
  local cur = redis.call('GET', KEYS[i])
  local older = true
  if cur then
    local cg, cv = string.match(cur, '^(%d+):(%d+):')
    if cg == g and tonumber(cv) >= v then older = false end
  end
  if older then
    redis.call('SET', KEYS[i], g .. ':' .. ARGV[2 * i - 1] .. ':' .. ARGV[2 * i], 'PX', ARGV[2])
    n = n + 1
  end
end
return n
";

/// Start a new generation when the cache store is not the instance that last checked
/// it (it restarted, possibly from a snapshot holding entries older than L3 now).
/// KEYS[1] = the generation key, KEYS[2] = the instance key; ARGV[1] = the instance's
/// `run_id`, ARGV[2] = a new generation.
const CHECK_INSTANCE: &str = r"
if redis.call('GET', KEYS[2]) ~= ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2])
  redis.call('SET', KEYS[2], ARGV[1])
  return 1
end
return 0
";

/// Where the L2 lives and how long its entries last.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct L2Settings {
    /// The cache store URL (`CACHE_URL` / `[scale.database] cache_url`).
    pub url: String,
    /// `cache_l2_ttl_seconds`: the longest an entry lives (at least 1 s).
    pub ttl: Duration,
}

/// Counters for `/metrics`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct L2Stats {
    /// Anchors answered by L2.
    pub hits: u64,
    /// Anchors looked up in L2 and then read from L3.
    pub misses: u64,
    /// Failed cache-store operations (each turns L2 off until a reconnect).
    pub errors: u64,
}

/// What a read observed: the generation (a fill must find it unchanged) and when.
#[derive(Clone, Debug)]
pub struct Observed {
    generation: String,
    at: Instant,
}

/// One cached document: its version and BSON bytes.
pub type Cached = (u64, Vec<u8>);

/// Outage bookkeeping.
struct Health {
    /// L2 is skipped until then.
    retry_at: Instant,
    backoff: Duration,
    /// Stores whose generation must be replaced on reconnect (writes may have been
    /// missed while off).
    dirty: HashSet<String>,
}

/// The process's L2 client for one cache store (shared by every connection to the
/// document tier through `shared`).
pub struct L2 {
    client: redis::Client,
    shown: String,
    ttl: Duration,
    pool: Mutex<Vec<redis::Connection>>,
    /// Set while L2 is off after a failure (checked with one atomic load).
    down: AtomicBool,
    health: Mutex<Health>,
    /// Every store (space) this process used, for the generation replacement.
    spaces: Mutex<HashSet<String>>,
    /// The cache store instance (`run_id`) the newest connection reached, and per store
    /// the instance it was last checked against (`CHECK_INSTANCE`).
    instance: Mutex<String>,
    checked: Mutex<std::collections::HashMap<String, String>>,
    hits: AtomicU64,
    misses: AtomicU64,
    errors: AtomicU64,
}

impl std::fmt::Debug for L2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("L2")
            .field("cache", &self.shown)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

/// The process's one `L2` per settings (`Err` = why it is off: an unusable URL).
pub fn shared(settings: &L2Settings) -> Result<Arc<L2>, String> {
    static ALL: OnceLock<Mutex<Vec<(L2Settings, Arc<L2>)>>> = OnceLock::new();
    let all = ALL.get_or_init(|| Mutex::new(Vec::new()));
    let mut all = all.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, l2)) = all.iter().find(|(s, _)| s == settings) {
        return Ok(Arc::clone(l2));
    }
    let l2 = Arc::new(L2::new(settings)?);
    all.push((settings.clone(), Arc::clone(&l2)));
    Ok(l2)
}

/// `redis://user:secret@host` → `redis://user:***@host`.
fn redact(url: &str) -> String {
    crate::docstore::redact(url)
}

impl L2 {
    fn new(settings: &L2Settings) -> Result<L2, String> {
        let shown = redact(&settings.url);
        let client = redis::Client::open(settings.url.as_str())
            .map_err(|e| format!("cache URL {shown} is not usable: {e}"))?;
        Ok(L2 {
            client,
            shown,
            ttl: settings.ttl.max(Duration::from_secs(1)),
            pool: Mutex::new(Vec::new()),
            down: AtomicBool::new(false),
            health: Mutex::new(Health {
                retry_at: Instant::now(),
                backoff: BACKOFF_MIN,
                dirty: HashSet::new(),
            }),
            spaces: Mutex::new(HashSet::new()),
            instance: Mutex::new(String::new()),
            checked: Mutex::new(std::collections::HashMap::new()),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            errors: AtomicU64::new(0),
        })
    }

    /// The cache store, password redacted (for logs).
    pub fn shown(&self) -> &str {
        &self.shown
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    pub fn stats(&self) -> L2Stats {
        L2Stats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
        }
    }

    /// `true` while L2 is skipped after a failure.
    pub fn is_down(&self) -> bool {
        self.down.load(Ordering::Acquire)
    }

    /// Look `ids` up: `None` when L2 is off (skipped or failed: read L3), else what was
    /// observed and one slot per id (`None` = miss, tombstones and stale generations
    /// included).
    pub fn read(&self, space: &str, ids: &[AnchorId]) -> Option<(Observed, Vec<Option<Cached>>)> {
        if ids.is_empty() {
            return None;
        }
        self.note_space(space);
        let gen_key = gen_key(space);
        let answer = self.with_conn(space, |conn| {
            let mut found: Vec<Option<Vec<u8>>> = Vec::with_capacity(ids.len());
            let mut generation: Option<Vec<u8>> = None;
            for chunk in ids.chunks(CHUNK) {
                let mut cmd = redis::cmd("MGET");
                cmd.arg(&gen_key);
                for id in chunk {
                    cmd.arg(entry_key(space, *id));
                }
                let mut values: Vec<Option<Vec<u8>>> = cmd.query(conn)?;
                let head = if values.is_empty() {
                    None
                } else {
                    values.remove(0)
                };
                // Every chunk must agree on the generation (else none is trusted).
                match (&generation, head) {
                    (None, Some(g)) => generation = Some(g),
                    (Some(seen), Some(g)) if *seen == g => {}
                    _ => {
                        generation = None;
                        found.clear();
                        break;
                    }
                }
                found.extend(values);
            }
            let generation = match generation {
                Some(g) => g,
                None => {
                    // No generation yet (a fresh or restarted cache store): set one;
                    // everything is a miss under it.
                    let proposed = crate::store::random_id() as u64;
                    let _: Option<String> = redis::cmd("SET")
                        .arg(&gen_key)
                        .arg(proposed.to_string())
                        .arg("NX")
                        .query(conn)?;
                    let now: Option<Vec<u8>> = redis::cmd("GET").arg(&gen_key).query(conn)?;
                    found = vec![None; ids.len()];
                    now.unwrap_or_default()
                }
            };
            Ok((generation, found))
        })?;
        let (generation, found) = answer;
        let generation = String::from_utf8(generation).ok()?;
        let observed = Observed {
            generation,
            at: Instant::now(),
        };
        let slots: Vec<Option<Cached>> = found
            .into_iter()
            .map(|v| v.and_then(|raw| parse_entry(&raw, &observed.generation)))
            .collect();
        let hits = slots.iter().filter(|s| s.is_some()).count() as u64;
        self.hits.fetch_add(hits, Ordering::Relaxed);
        self.misses
            .fetch_add(ids.len() as u64 - hits, Ordering::Relaxed);
        Some((observed, slots))
    }

    /// Write back what a read of L3 found after missing here (`observed` = that read's
    /// L2 lookup). Refused by the script when the generation changed or an entry is as
    /// new; skipped when half the TTL has passed since the lookup.
    pub fn fill(&self, space: &str, observed: &Observed, entries: &[(AnchorId, Cached)]) {
        if entries.is_empty() || observed.at.elapsed() > self.ttl / 2 || self.is_down() {
            return;
        }
        self.put(space, &observed.generation, entries, &[]);
    }

    /// Reflect a successful commit: the documents it wrote, at their new versions, and
    /// tombstones for what it deleted, in one round trip.
    pub fn update(&self, space: &str, entries: &[(AnchorId, Cached)], deleted: &[AnchorId]) {
        if entries.is_empty() && deleted.is_empty() {
            return;
        }
        self.note_space(space);
        if self.is_down() {
            // Not reflected: the generation is replaced on reconnect (the space is
            // already marked dirty by the failure that turned L2 off).
            self.mark_dirty(space);
        }
        self.put(space, "", entries, deleted);
    }

    /// Make every entry of `space` unreadable (quarantine recovery, a new alias): a new
    /// generation. If the cache store cannot be reached now, it is done on reconnect.
    pub fn invalidate_all(&self, space: &str) {
        self.note_space(space);
        let done = self.with_conn(space, |conn| bump(conn, space));
        if done.is_none() {
            self.mark_dirty(space);
        }
    }

    fn put(
        &self,
        space: &str,
        generation: &str,
        entries: &[(AnchorId, Cached)],
        deleted: &[AnchorId],
    ) {
        let ttl_ms = self.ttl.as_millis().to_string();
        let gen_key = gen_key(space);
        let tombstones: Vec<(AnchorId, Cached)> = deleted
            .iter()
            .map(|&id| (id, (TOMBSTONE, Vec::new())))
            .collect();
        let all: Vec<&(AnchorId, Cached)> = entries.iter().chain(&tombstones).collect();
        let _ = self.with_conn(space, |conn| {
            let mut pipe = redis::pipe();
            for chunk in all.chunks(CHUNK) {
                let cmd = pipe
                    .cmd("EVAL")
                    .arg(PUT_NEWER)
                    .arg(chunk.len() + 1)
                    .arg(&gen_key);
                for (id, _) in chunk {
                    cmd.arg(entry_key(space, *id));
                }
                cmd.arg(generation).arg(&ttl_ms);
                for (_, (version, doc)) in chunk {
                    cmd.arg(version.to_string()).arg(doc.as_slice());
                }
            }
            let _: Vec<i64> = pipe.query(conn)?;
            Ok(())
        });
    }

    fn note_space(&self, space: &str) {
        let mut spaces = self.spaces.lock().unwrap_or_else(PoisonError::into_inner);
        if !spaces.contains(space) {
            spaces.insert(space.to_string());
        }
    }

    fn mark_dirty(&self, space: &str) {
        let mut health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
        health.dirty.insert(space.to_string());
    }

    /// Run `op` on a pooled connection. `None` when L2 is off (in its backoff, or `op`
    /// or the connection failed: then it turns off, logged once per outage).
    fn with_conn<T>(
        &self,
        space: &str,
        op: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Option<T> {
        let reconnecting = self.is_down();
        if reconnecting {
            let health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
            if Instant::now() < health.retry_at {
                return None;
            }
        }
        let pooled = self
            .pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let outcome = (|| {
            let mut conn = match pooled {
                Some(c) => c,
                None => self.connect()?,
            };
            self.check_instance(&mut conn, space)?;
            if reconnecting {
                self.replace_dirty(&mut conn)?;
            }
            let answer = op(&mut conn)?;
            Ok::<_, redis::RedisError>((conn, answer))
        })();
        match outcome {
            Ok((conn, answer)) => {
                let mut pool = self.pool.lock().unwrap_or_else(PoisonError::into_inner);
                if pool.len() < POOL {
                    pool.push(conn);
                }
                drop(pool);
                if reconnecting {
                    self.back_on();
                }
                Some(answer)
            }
            Err(e) => {
                self.failed(space, &e);
                None
            }
        }
    }

    /// A new connection; notes which cache store instance it reached.
    fn connect(&self) -> redis::RedisResult<redis::Connection> {
        let mut conn = self.client.get_connection_with_timeout(OP_TIMEOUT)?;
        conn.set_read_timeout(Some(OP_TIMEOUT))?;
        conn.set_write_timeout(Some(OP_TIMEOUT))?;
        let info: String = redis::cmd("INFO").arg("server").query(&mut conn)?;
        let run_id = info
            .lines()
            .find_map(|l| l.strip_prefix("run_id:"))
            .map(|r| r.trim().to_string())
            .unwrap_or_default();
        *self.instance.lock().unwrap_or_else(PoisonError::into_inner) = run_id;
        Ok(conn)
    }

    /// Once per store and cache store instance: if the instance is not the one whose
    /// entries this store's generation describes (a restart, maybe from a snapshot), start
    /// a new generation before anything is read. Every client reconnects after a restart,
    /// so no replica reads the restored entries.
    fn check_instance(&self, conn: &mut redis::Connection, space: &str) -> redis::RedisResult<()> {
        let instance = self
            .instance
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let done = self
            .checked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(space)
            .is_some_and(|i| *i == instance);
        if done {
            return Ok(());
        }
        let fresh = crate::store::random_id() as u64;
        let _: i64 = redis::cmd("EVAL")
            .arg(CHECK_INSTANCE)
            .arg(2)
            .arg(gen_key(space))
            .arg(instance_key(space))
            .arg(&instance)
            .arg(fresh.to_string())
            .query(conn)?;
        self.checked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(space.to_string(), instance);
        Ok(())
    }

    /// Replace the generation of every store marked dirty (first thing after an outage).
    fn replace_dirty(&self, conn: &mut redis::Connection) -> redis::RedisResult<()> {
        let dirty: Vec<String> = {
            let health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
            health.dirty.iter().cloned().collect()
        };
        for space in &dirty {
            bump(conn, space)?;
        }
        let mut health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
        for space in &dirty {
            health.dirty.remove(space);
        }
        Ok(())
    }

    fn back_on(&self) {
        let mut health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
        if !health.dirty.is_empty() {
            return;
        }
        health.backoff = BACKOFF_MIN;
        if self.down.swap(false, Ordering::AcqRel) {
            tracing::info!(
                target: "svc::cache",
                "L2 cache: on again (cache store {}); entries written before the outage were \
                 dropped (new generation)",
                self.shown
            );
        }
    }

    fn failed(&self, space: &str, e: &redis::RedisError) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        // Every pooled connection may be as broken as this one.
        self.pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        let spaces: Vec<String> = {
            let mut s: Vec<String> = self
                .spaces
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .cloned()
                .collect();
            s.push(space.to_string());
            s
        };
        let mut health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
        health.dirty.extend(spaces);
        let was_down = self.down.swap(true, Ordering::AcqRel);
        let delay = if was_down {
            health.backoff = (health.backoff * 2).min(BACKOFF_MAX);
            health.backoff
        } else {
            health.backoff = BACKOFF_MIN;
            BACKOFF_MIN
        };
        health.retry_at = Instant::now() + delay;
        drop(health);
        if !was_down {
            tracing::warn!(
                target: "svc::cache",
                "L2 cache: off (cache store {}: {e}); reads go to the document database; \
                 reconnecting with backoff",
                self.shown
            );
        }
    }
}

/// Replace `space`'s generation with a new random one.
fn bump(conn: &mut redis::Connection, space: &str) -> redis::RedisResult<()> {
    let fresh = crate::store::random_id() as u64;
    redis::cmd("SET")
        .arg(gen_key(space))
        .arg(fresh.to_string())
        .query::<()>(conn)
}

fn gen_key(space: &str) -> String {
    format!("svc:l2:{{{space}}}:gen")
}

fn instance_key(space: &str) -> String {
    format!("svc:l2:{{{space}}}:instance")
}

fn entry_key(space: &str, id: AnchorId) -> String {
    format!("svc:l2:{{{space}}}:{}", format_id(id))
}

/// `<generation>:<version>:<document>` under `generation`: the version and document, or
/// `None` (another generation, a tombstone, or not an entry).
fn parse_entry(raw: &[u8], generation: &str) -> Option<Cached> {
    let rest = raw
        .strip_prefix(generation.as_bytes())?
        .strip_prefix(b":")?;
    let colon = rest.iter().position(|&b| b == b':')?;
    let version: u64 = std::str::from_utf8(&rest[..colon]).ok()?.parse().ok()?;
    let doc = &rest[colon + 1..];
    if version == TOMBSTONE || version == 0 || doc.is_empty() {
        return None;
    }
    Some((version, doc.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_parse_only_under_their_generation() {
        assert_eq!(
            parse_entry(b"42:7:\x05\x00:x", "42"),
            Some((7, b"\x05\x00:x".to_vec()))
        );
        assert_eq!(parse_entry(b"42:7:abc", "4"), None, "another generation");
        assert_eq!(parse_entry(b"421:7:abc", "42"), None, "a longer generation");
        let tomb = format!("42:{TOMBSTONE}:");
        assert_eq!(parse_entry(tomb.as_bytes(), "42"), None, "a tombstone");
        assert_eq!(parse_entry(b"42:x:abc", "42"), None);
        assert_eq!(parse_entry(b"", "42"), None);
    }

    #[test]
    fn keys_share_one_hash_slot_per_store() {
        assert_eq!(gen_key("ab"), "svc:l2:{ab}:gen");
        assert_eq!(entry_key("ab", 1), format!("svc:l2:{{ab}}:{:032x}", 1));
    }
}
