//! The `cache` backend (Redis protocol). Keys live under the prefix `<db_name>:` so
//! stores of different names never see each other's keys (nor the server's own
//! `svc:` channels); values are stored as their JSON text, so `get` gives back what `set`
//! stored and `incr` works on a stored int.

use super::{KvError, MAX_ITEMS, encode_value, int_param, str_param};
use serde_json::{Map, Value as Json};

/// Atomically delete the key only when it holds the expected value.
const DELETE_IF_EQUALS: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";

/// Most `SCAN` round trips of one `scan_keys`.
const MAX_SCAN_ROUNDS: usize = 10_000;

pub(super) async fn connect(uri: &str) -> Result<redis::aio::MultiplexedConnection, KvError> {
    let client = redis::Client::open(uri)
        .map_err(|e| KvError::value(format!("kvstore: bad cache URL: {e}")))?;
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(super::CONNECT_TIMEOUT))
        .set_response_timeout(Some(super::OP_TIMEOUT));
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .map_err(|e| {
            let kind = if e.is_timeout() {
                "TimeoutError"
            } else {
                "ConnectionError"
            };
            KvError::new(
                kind,
                format!("kvstore: cannot connect to the cache store: {e}"),
            )
        })
}

fn failure(e: &redis::RedisError) -> KvError {
    if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() {
        KvError::new(
            "ConnectionError",
            format!("kvstore: cache store connection failed: {e}"),
        )
    } else if e.is_timeout() {
        KvError::new(
            "TimeoutError",
            format!("kvstore: cache store timed out: {e}"),
        )
    } else {
        KvError::value(format!("kvstore: cache store refused: {e}"))
    }
}

/// Escape glob characters, so a prefix matches only itself in `SCAN MATCH`.
fn glob_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn ttl_param(params: &Map<String, Json>, name: &str) -> Result<i64, KvError> {
    let ttl = int_param(params, name)?;
    if ttl <= 0 {
        return Err(KvError::value(format!(
            "kvstore: {name} must be a positive number of seconds"
        )));
    }
    Ok(ttl)
}

/// A stored text as a value: its JSON, or the text itself when it is not JSON (a key
/// written by another client).
fn decode(text: Option<String>) -> Json {
    match text {
        None => Json::Null,
        Some(t) => serde_json::from_str(&t).unwrap_or(Json::String(t)),
    }
}

pub(super) async fn run(
    conn: &mut redis::aio::MultiplexedConnection,
    db_name: &str,
    method: &str,
    params: &Map<String, Json>,
) -> Result<Json, KvError> {
    let prefix = format!("{db_name}:");
    let key = || str_param(params, "key").map(|k| format!("{prefix}{k}"));
    let value = |name: &str| encode_value(params.get(name).unwrap_or(&Json::Null));
    let q = |c: &mut redis::Cmd| c.clone();
    Ok(match method {
        "get" => {
            let v: Option<String> = q(redis::cmd("GET").arg(key()?))
                .query_async(conn)
                .await
                .map_err(|e| failure(&e))?;
            decode(v)
        }
        "set" => {
            let () = q(redis::cmd("SET").arg(key()?).arg(value("value")?))
                .query_async(conn)
                .await
                .map_err(|e| failure(&e))?;
            Json::Bool(true)
        }
        "set_with_ttl" => {
            let ttl = ttl_param(params, "ttl")?;
            let () = q(redis::cmd("SET")
                .arg(key()?)
                .arg(value("value")?)
                .arg("EX")
                .arg(ttl))
            .query_async(conn)
            .await
            .map_err(|e| failure(&e))?;
            Json::Bool(true)
        }
        "set_nx_with_ttl" => {
            let ttl = ttl_param(params, "ttl")?;
            let set: Option<String> = q(redis::cmd("SET")
                .arg(key()?)
                .arg(value("value")?)
                .arg("NX")
                .arg("EX")
                .arg(ttl))
            .query_async(conn)
            .await
            .map_err(|e| failure(&e))?;
            Json::Bool(set.is_some())
        }
        "delete_if_equals" => {
            let n: i64 = q(redis::cmd("EVAL")
                .arg(DELETE_IF_EQUALS)
                .arg(1)
                .arg(key()?)
                .arg(value("expected_value")?))
            .query_async(conn)
            .await
            .map_err(|e| failure(&e))?;
            Json::Bool(n > 0)
        }
        "delete" => {
            let n: i64 = q(redis::cmd("DEL").arg(key()?))
                .query_async(conn)
                .await
                .map_err(|e| failure(&e))?;
            Json::Bool(n > 0)
        }
        "exists" => {
            let n: i64 = q(redis::cmd("EXISTS").arg(key()?))
                .query_async(conn)
                .await
                .map_err(|e| failure(&e))?;
            Json::Bool(n > 0)
        }
        "expire" => {
            let secs = ttl_param(params, "seconds")?;
            let n: i64 = q(redis::cmd("EXPIRE").arg(key()?).arg(secs))
                .query_async(conn)
                .await
                .map_err(|e| failure(&e))?;
            Json::Bool(n > 0)
        }
        "incr" => {
            let n: i64 = q(redis::cmd("INCR").arg(key()?))
                .query_async(conn)
                .await
                .map_err(|e| failure(&e))?;
            Json::from(n)
        }
        "scan_keys" => {
            let pattern = str_param(params, "pattern")?;
            let matcher = format!("{}{pattern}", glob_escape(&prefix));
            let mut cursor: u64 = 0;
            let mut keys: Vec<String> = Vec::new();
            for _ in 0..MAX_SCAN_ROUNDS {
                let (next, batch): (u64, Vec<String>) = q(redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(&matcher)
                    .arg("COUNT")
                    .arg(1000))
                .query_async(conn)
                .await
                .map_err(|e| failure(&e))?;
                for k in batch {
                    if let Some(k) = k.strip_prefix(&prefix) {
                        keys.push(k.to_string());
                    }
                }
                if keys.len() > MAX_ITEMS {
                    return Err(KvError::value(format!(
                        "kvstore: scan_keys matched more than {MAX_ITEMS} keys; narrow the pattern"
                    )));
                }
                cursor = next;
                if cursor == 0 {
                    break;
                }
            }
            keys.sort();
            keys.dedup();
            Json::Array(keys.into_iter().map(Json::String).collect())
        }
        other => {
            return Err(KvError::new(
                "NotImplementedError",
                format!("kvstore: the cache backend does not support {other}()"),
            ));
        }
    })
}
