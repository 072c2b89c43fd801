//! Inbound webhooks on the HTTP side (spec "API key endpoints", "Webhook endpoint",
//! "Alternate webhook flavor"; decisions.md "Webhooks"). The keys and their rules live in
//! the identity service (`actors::identity`, messages `CreateApiKey` ...
//! `AuthenticateWalkerKey`); these handlers extract, send and map, and run the walker
//! through `Runtime::call` like any generated endpoint.
//!
//! Layout: `api_keys` the `/api-key/*` routes, `keys` the alternate flavor's key routes
//! (`/webhook/generate-key`, `GET /webhook`, `/webhook/extend/{id}`,
//! `/webhook/delete`), `calls` the two walker routes (`POST /webhook/<walker>` and
//! `POST /webhook/walker/<walker>...`).
//!
//! Paths of the two flavors never collide: a walker name is an identifier, so it cannot
//! be `generate-key`, and the fixed routes other than `/webhook/delete` have two or more
//! segments after `/webhook` or none. `/webhook/delete` answers DELETE (delete keys) and
//! POST (the current-flavor walker named `delete`, if the app has one).

pub mod api_keys;
pub mod calls;
pub mod keys;

use actix_web::web;

/// Mount the `/api-key/*` and `/webhook/*` routes (the fixed ones before the walker
/// routes they would otherwise match).
pub fn configure(cfg: &mut web::ServiceConfig) {
    api_keys::configure(cfg);
    keys::configure(cfg);
    calls::configure(cfg);
}
