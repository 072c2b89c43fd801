//! The `docdb` backend (MongoDB wire protocol). `db_name` is the database; the common
//! methods keep `{_id: key, value}` documents in a collection (`kvstore` unless
//! `col_name` is given); the query methods take the collection first. Filters are
//! checked before they leave: only the spec's operators (`$eq`, `$gt`, `$gte`, `$lt`,
//! `$lte`, `$in`, `$ne`, `$and`, `$or`, plus `$nin`) are sent, so no server-side code
//! (`$where`) or other operator reaches the database.

use super::{KvError, MAX_ITEMS, MAX_VALUE_BYTES, int_param, str_param};
use crate::bson_json::{self, MAX_DEPTH};
use futures_util::TryStreamExt;
use mongodb::bson::{Bson, Document, oid::ObjectId};
use serde_json::{Map, Value as Json};

/// Field-level operators a filter may use.
const FIELD_OPERATORS: &[&str] = &["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin"];
/// Top-level operators a filter may use.
const LOGICAL_OPERATORS: &[&str] = &["$and", "$or"];
/// Deepest nesting of a filter.
const MAX_FILTER_DEPTH: usize = 32;

pub(super) async fn connect(uri: &str) -> Result<mongodb::Client, KvError> {
    let mut options = mongodb::options::ClientOptions::parse(uri)
        .await
        .map_err(|e| KvError::value(format!("kvstore: bad document database URI: {e}")))?;
    options.connect_timeout = Some(super::CONNECT_TIMEOUT);
    options.server_selection_timeout = Some(super::CONNECT_TIMEOUT);
    options.app_name = Some("svc-kvstore".into());
    mongodb::Client::with_options(options)
        .map_err(|e| KvError::value(format!("kvstore: bad document database URI: {e}")))
}

fn failure(e: &mongodb::error::Error) -> KvError {
    use mongodb::error::ErrorKind as K;
    match &*e.kind {
        K::ServerSelection { .. } | K::Io(_) | K::ConnectionPoolCleared { .. } => KvError::new(
            "ConnectionError",
            format!("kvstore: cannot reach the document database: {e}"),
        ),
        _ => KvError::value(format!("kvstore: document database refused: {e}")),
    }
}

fn too_deep(_: bson_json::TooDeep) -> KvError {
    KvError::value(format!(
        "kvstore: document nested more than {MAX_DEPTH} levels deep"
    ))
}

fn to_bson(j: &Json) -> Result<Bson, KvError> {
    bson_json::to_bson(j, MAX_DEPTH).map_err(too_deep)
}

fn to_doc(m: &Map<String, Json>) -> Result<Document, KvError> {
    bson_json::to_doc(m, MAX_DEPTH).map_err(too_deep)
}

fn to_json(b: &Bson) -> Result<Json, KvError> {
    bson_json::to_json(b, MAX_DEPTH).map_err(too_deep)
}

fn doc_json(d: &Document) -> Result<Json, KvError> {
    bson_json::doc_json(d, MAX_DEPTH)
        .map(Json::Object)
        .map_err(too_deep)
}

/// Check a filter's operators, and turn `_id` text that looks like an object id into
/// "that object id or that text".
fn check_filter(f: &Map<String, Json>, depth: usize) -> Result<Document, KvError> {
    if depth > MAX_FILTER_DEPTH {
        return Err(KvError::value("kvstore: filter nested too deeply"));
    }
    let mut out = Document::new();
    for (k, v) in f {
        if k.starts_with('$') {
            if !LOGICAL_OPERATORS.contains(&k.as_str()) {
                return Err(unsupported(k));
            }
            let Json::Array(parts) = v else {
                return Err(KvError::value(format!(
                    "kvstore: {k} takes a list of filters"
                )));
            };
            let mut docs = Vec::with_capacity(parts.len());
            for p in parts {
                let Json::Object(p) = p else {
                    return Err(KvError::value(format!(
                        "kvstore: {k} takes a list of filters"
                    )));
                };
                docs.push(Bson::Document(check_filter(p, depth + 1)?));
            }
            out.insert(k.clone(), Bson::Array(docs));
            continue;
        }
        let cond = match v {
            Json::Object(ops) if ops.keys().any(|o| o.starts_with('$')) => {
                let mut d = Document::new();
                for (op, arg) in ops {
                    if !FIELD_OPERATORS.contains(&op.as_str()) {
                        return Err(unsupported(op));
                    }
                    if matches!(op.as_str(), "$in" | "$nin") && !arg.is_array() {
                        return Err(KvError::value(format!("kvstore: {op} takes a list")));
                    }
                    d.insert(op.clone(), id_value(k, arg)?);
                }
                Bson::Document(d)
            }
            _ => id_value(k, v)?,
        };
        out.insert(k.clone(), cond);
    }
    Ok(out)
}

fn unsupported(op: &str) -> KvError {
    KvError::value(format!(
        "kvstore: unsupported filter operator '{op}' (docdb supports $eq, $ne, $gt, $gte, $lt, \
         $lte, $in, $nin, $and, $or)"
    ))
}

/// A filter value of field `field`: for `_id`, 24-hex text also matches that object id.
fn id_value(field: &str, v: &Json) -> Result<Bson, KvError> {
    if field != "_id" {
        return to_bson(v);
    }
    Ok(match v {
        Json::String(s) => id_match(s),
        Json::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for x in items {
                match x {
                    Json::String(s) => {
                        if let Ok(oid) = ObjectId::parse_str(s) {
                            out.push(Bson::ObjectId(oid));
                        }
                        out.push(Bson::String(s.clone()));
                    }
                    other => out.push(to_bson(other)?),
                }
            }
            Bson::Array(out)
        }
        other => to_bson(other)?,
    })
}

/// `_id` equal to `s`, or to the object id `s` spells.
fn id_match(s: &str) -> Bson {
    match ObjectId::parse_str(s) {
        Ok(oid) => {
            let mut d = Document::new();
            d.insert(
                "$in",
                Bson::Array(vec![Bson::ObjectId(oid), Bson::String(s.to_string())]),
            );
            Bson::Document(d)
        }
        Err(_) => Bson::String(s.to_string()),
    }
}

fn id_filter(id: &Json) -> Result<Document, KvError> {
    let mut d = Document::new();
    d.insert(
        "_id",
        match id {
            Json::String(s) => id_match(s),
            other => to_bson(other)?,
        },
    );
    Ok(d)
}

fn dict_param<'a>(
    params: &'a Map<String, Json>,
    name: &str,
) -> Result<&'a Map<String, Json>, KvError> {
    match params.get(name) {
        Some(Json::Object(m)) => Ok(m),
        _ => Err(KvError::new(
            "TypeError",
            format!("kvstore: {name} must be dict"),
        )),
    }
}

/// An update document: `$` operators as given, a plain dict as `$set` of its fields.
fn update_doc(params: &Map<String, Json>) -> Result<Document, KvError> {
    let u = dict_param(params, "update")?;
    if u.is_empty() {
        return Err(KvError::value("kvstore: update must not be empty"));
    }
    let ops = u.keys().filter(|k| k.starts_with('$')).count();
    if ops == 0 {
        let mut d = Document::new();
        d.insert("$set", to_doc(u)?);
        return Ok(d);
    }
    if ops != u.len() {
        return Err(KvError::value(
            "kvstore: an update mixes $ operators and plain fields",
        ));
    }
    to_doc(u)
}

fn checked_doc(m: &Map<String, Json>) -> Result<Document, KvError> {
    let size = Json::Object(m.clone()).to_string().len();
    if size > MAX_VALUE_BYTES {
        return Err(KvError::new(
            "MemoryError",
            format!("kvstore: document of {size} bytes exceeds the limit of {MAX_VALUE_BYTES}"),
        ));
    }
    to_doc(m)
}

/// Read at most `limit` documents (0 = up to `MAX_ITEMS`, and more is an error).
async fn collect(
    coll: &mongodb::Collection<Document>,
    filter: Document,
    limit: i64,
    sort: Option<Document>,
) -> Result<Vec<Document>, KvError> {
    let cap = MAX_ITEMS as i64;
    if limit > cap {
        return Err(KvError::value(format!(
            "kvstore: limit is at most {MAX_ITEMS}"
        )));
    }
    let fetch = if limit > 0 { limit } else { cap + 1 };
    let mut find = coll.find(filter).limit(fetch);
    if let Some(sort) = sort {
        find = find.sort(sort);
    }
    let mut cursor = find.await.map_err(|e| failure(&e))?;
    let mut out = Vec::new();
    let mut bytes = 0usize;
    while let Some(doc) = cursor.try_next().await.map_err(|e| failure(&e))? {
        bytes += doc.to_string().len();
        if out.len() >= MAX_ITEMS || bytes > MAX_VALUE_BYTES {
            return Err(KvError::value(format!(
                "kvstore: the query matched more than {MAX_ITEMS} documents or \
                 {MAX_VALUE_BYTES} bytes; narrow the filter or pass limit"
            )));
        }
        out.push(doc);
    }
    Ok(out)
}

fn sort_param(params: &Map<String, Json>) -> Result<Option<Document>, KvError> {
    match params.get("sort") {
        None | Some(Json::Null) => Ok(None),
        Some(Json::Object(m)) => {
            let mut d = Document::new();
            for (k, v) in m {
                match v.as_i64() {
                    Some(dir @ (1 | -1)) => d.insert(k.clone(), Bson::Int32(dir as i32)),
                    _ => return Err(KvError::value("kvstore: sort directions are 1 or -1")),
                };
            }
            Ok(Some(d))
        }
        Some(_) => Err(KvError::new("TypeError", "kvstore: sort must be a dict")),
    }
}

/// A `find_nodes` filter: field conditions apply to the node's `fields`.
fn node_filter(f: &Map<String, Json>) -> Map<String, Json> {
    f.iter()
        .map(|(k, v)| {
            if LOGICAL_OPERATORS.contains(&k.as_str()) {
                let parts = match v {
                    Json::Array(items) => Json::Array(
                        items
                            .iter()
                            .map(|p| match p {
                                Json::Object(m) => Json::Object(node_filter(m)),
                                other => other.clone(),
                            })
                            .collect(),
                    ),
                    other => other.clone(),
                };
                (k.clone(), parts)
            } else if k.starts_with('$') {
                (k.clone(), v.clone())
            } else {
                (format!("fields.{k}"), v.clone())
            }
        })
        .collect()
}

pub(super) async fn run(
    client: &mongodb::Client,
    db_name: &str,
    method: &str,
    params: &Map<String, Json>,
) -> Result<Json, KvError> {
    if db_name.is_empty() || db_name.chars().any(|c| "/\\. \"$\0".contains(c)) {
        return Err(KvError::value(format!(
            "kvstore: '{db_name}' is not a valid database name"
        )));
    }
    let db = client.database(db_name);
    let coll = |name: &str| -> Result<mongodb::Collection<Document>, KvError> {
        if name.is_empty() || name.starts_with("system.") || name.contains('$') {
            return Err(KvError::value(format!(
                "kvstore: '{name}' is not a valid collection name"
            )));
        }
        Ok(db.collection::<Document>(name))
    };
    let col = || str_param(params, "col_name").and_then(coll);
    let filter = || dict_param(params, "filter").and_then(|f| check_filter(f, 0));
    let key_filter = || -> Result<Document, KvError> {
        let mut d = Document::new();
        d.insert("_id", str_param(params, "key")?);
        Ok(d)
    };
    Ok(match method {
        "get" => {
            let doc = col()?
                .find_one(key_filter()?)
                .await
                .map_err(|e| failure(&e))?;
            doc.and_then(|d| d.get("value").map(to_json))
                .transpose()?
                .unwrap_or(Json::Null)
        }
        "set" => {
            let mut doc = key_filter()?;
            let value = params.get("value").unwrap_or(&Json::Null);
            let mut m = Map::new();
            m.insert("value".into(), value.clone());
            doc.extend(checked_doc(&m)?);
            col()?
                .replace_one(key_filter()?, doc)
                .upsert(true)
                .await
                .map_err(|e| failure(&e))?;
            Json::Bool(true)
        }
        "delete" => {
            let r = col()?
                .delete_one(key_filter()?)
                .await
                .map_err(|e| failure(&e))?;
            Json::Bool(r.deleted_count > 0)
        }
        "exists" => {
            let n = col()?
                .count_documents(key_filter()?)
                .limit(1)
                .await
                .map_err(|e| failure(&e))?;
            Json::Bool(n > 0)
        }
        "find_one" => {
            let doc = col()?.find_one(filter()?).await.map_err(|e| failure(&e))?;
            doc.as_ref().map_or(Ok(Json::Null), doc_json)?
        }
        "find" => {
            let limit = int_param(params, "limit")?;
            let docs = collect(&col()?, filter()?, limit, sort_param(params)?).await?;
            Json::Array(docs.iter().map(doc_json).collect::<Result<_, _>>()?)
        }
        "insert_one" => {
            let doc = checked_doc(dict_param(params, "document")?)?;
            let r = col()?.insert_one(doc).await.map_err(|e| failure(&e))?;
            to_json(&r.inserted_id)?
        }
        "insert_many" => {
            let Some(Json::Array(items)) = params.get("documents") else {
                return Err(KvError::new(
                    "TypeError",
                    "kvstore: documents must be a list of dicts",
                ));
            };
            if items.is_empty() {
                return Ok(Json::Array(vec![]));
            }
            if items.len() > MAX_ITEMS {
                return Err(KvError::value(format!(
                    "kvstore: insert_many takes at most {MAX_ITEMS} documents"
                )));
            }
            let mut docs = Vec::with_capacity(items.len());
            for item in items {
                let Json::Object(m) = item else {
                    return Err(KvError::new(
                        "TypeError",
                        "kvstore: documents must be a list of dicts",
                    ));
                };
                docs.push(checked_doc(m)?);
            }
            let r = col()?.insert_many(docs).await.map_err(|e| failure(&e))?;
            let mut ids: Vec<(usize, Bson)> = r.inserted_ids.into_iter().collect();
            ids.sort_by_key(|(i, _)| *i);
            Json::Array(
                ids.iter()
                    .map(|(_, id)| to_json(id))
                    .collect::<Result<_, _>>()?,
            )
        }
        "update_one" | "update_many" => {
            let upsert = params
                .get("upsert")
                .and_then(Json::as_bool)
                .unwrap_or(false);
            let c = col()?;
            let (f, u) = (filter()?, update_doc(params)?);
            let r = if method == "update_one" {
                c.update_one(f, u).upsert(upsert).await
            } else {
                c.update_many(f, u).upsert(upsert).await
            }
            .map_err(|e| failure(&e))?;
            Json::from(r.modified_count + u64::from(r.upserted_id.is_some()))
        }
        "delete_one" | "delete_many" => {
            let c = col()?;
            let f = filter()?;
            let r = if method == "delete_one" {
                c.delete_one(f).await
            } else {
                c.delete_many(f).await
            }
            .map_err(|e| failure(&e))?;
            Json::from(r.deleted_count)
        }
        "find_by_id" => {
            let id = params.get("id").unwrap_or(&Json::Null);
            let doc = col()?
                .find_one(id_filter(id)?)
                .await
                .map_err(|e| failure(&e))?;
            doc.as_ref().map_or(Ok(Json::Null), doc_json)?
        }
        "update_by_id" => {
            let id = params.get("id").unwrap_or(&Json::Null);
            let r = col()?
                .update_one(id_filter(id)?, update_doc(params)?)
                .await
                .map_err(|e| failure(&e))?;
            Json::Bool(r.matched_count > 0)
        }
        "delete_by_id" => {
            let id = params.get("id").unwrap_or(&Json::Null);
            let r = col()?
                .delete_one(id_filter(id)?)
                .await
                .map_err(|e| failure(&e))?;
            Json::Bool(r.deleted_count > 0)
        }
        "find_nodes" => {
            let node_type = str_param(params, "node_type")?;
            let mut f = check_filter(&node_filter(dict_param(params, "filter")?), 0)?;
            f.insert("arch_type", node_type);
            f.insert("kind", "node");
            let docs = collect(&col()?, f, 0, None).await?;
            Json::Array(
                docs.iter()
                    .map(|d| {
                        let mut j = doc_json(d)?;
                        if let Json::Object(m) = &mut j
                            && let Some(id) = m.remove("_id")
                        {
                            m.insert("id".into(), id);
                        }
                        Ok(j)
                    })
                    .collect::<Result<_, KvError>>()?,
            )
        }
        other => {
            return Err(KvError::new(
                "NotImplementedError",
                format!("kvstore: the docdb backend does not support {other}()"),
            ));
        }
    })
}
