//! Runtime side of svc: persistence tiers and (later) the actor system that runs walkers.

pub mod bson_json;
pub mod checkpoint;
pub mod identity;
pub mod kvstore;
pub mod l1;
pub mod l2;
pub mod natives;
pub mod runtime;
pub mod store;
pub mod users;

pub use store::{FORMAT_VERSION, RunHost, SqliteStore, StoreError, random_id};
pub mod docstore;
pub mod tier;

pub use tier::{AnchorStore, StoreTarget};
