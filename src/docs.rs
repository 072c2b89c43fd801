//! Documentation endpoints: `GET /openapi.json`, Swagger UI at `/docs`, ReDoc at
//! `/redoc`, and the UI bundles they load under `/docs/assets/`.
//!
//! The bundles are vendored in `src/assets/` (see its README) and embedded in the binary,
//! so the pages work offline. They are served as-is: the app's `Compress` middleware
//! gzips them on the fly. Asset URLs carry `?v=<version>` and are cached for a year; the
//! pages and the document itself are revalidated every time (`no-cache`).
//!
//! The HTTP layer calls [`configure`] only when `docs_enabled` is true.

use actix_web::http::header::{CACHE_CONTROL, ContentType};
use actix_web::{HttpResponse, web};

/// Version of the vendored `swagger-ui-dist`.
pub const SWAGGER_UI_VERSION: &str = "5.35.0";
/// Version of the vendored `redoc`.
pub const REDOC_VERSION: &str = "2.5.4";
/// The paths this module serves pages on (for access-log filtering and the index).
pub const DOC_PATHS: &[&str] = &["/docs", "/redoc", "/openapi.json"];

const ASSET_CACHE: &str = "public, max-age=31536000, immutable";
const PAGE_CACHE: &str = "no-cache";

/// One embedded file under `/docs/assets/`.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
}

const ASSETS: &[Asset] = &[
    Asset {
        name: "swagger-ui-bundle.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("assets/swagger-ui-bundle.js"),
    },
    Asset {
        name: "swagger-ui.css",
        content_type: "text/css; charset=utf-8",
        bytes: include_bytes!("assets/swagger-ui.css"),
    },
    Asset {
        name: "swagger-init.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("assets/swagger-init.js"),
    },
    Asset {
        name: "redoc.standalone.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("assets/redoc.standalone.js"),
    },
];

/// The documentation responses, rendered once at start and shared by every HTTP worker
/// (a clone shares the bytes): the serialized document and the two pages.
#[derive(Clone)]
pub struct Pages {
    spec: web::Bytes,
    swagger: web::Bytes,
    redoc: web::Bytes,
}

impl Pages {
    /// The pages for `openapi` (`openapi::build(..).to_string()`), titled `title` (the
    /// document's `info.title`).
    pub fn new(title: &str, openapi: String) -> Pages {
        Pages {
            spec: web::Bytes::from(openapi),
            swagger: web::Bytes::from(swagger_page(title)),
            redoc: web::Bytes::from(redoc_page(title)),
        }
    }
}

/// Mount the documentation routes.
pub fn configure(cfg: &mut web::ServiceConfig, pages: &Pages) {
    let spec = pages.spec.clone();
    cfg.route(
        "/openapi.json",
        web::get().to(move || {
            let spec = spec.clone();
            async move {
                HttpResponse::Ok()
                    .content_type(ContentType::json())
                    .insert_header((CACHE_CONTROL, PAGE_CACHE))
                    .body(spec)
            }
        }),
    );

    for path in ["/docs", "/docs/"] {
        let page = pages.swagger.clone();
        cfg.route(path, web::get().to(move || html(page.clone())));
    }
    for path in ["/redoc", "/redoc/"] {
        let page = pages.redoc.clone();
        cfg.route(path, web::get().to(move || html(page.clone())));
    }

    for asset in ASSETS {
        cfg.route(
            &format!("/docs/assets/{}", asset.name),
            web::get().to(move || async move {
                HttpResponse::Ok()
                    .insert_header((actix_web::http::header::CONTENT_TYPE, asset.content_type))
                    .insert_header((CACHE_CONTROL, ASSET_CACHE))
                    .body(asset.bytes)
            }),
        );
    }
}

async fn html(page: web::Bytes) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(ContentType::html())
        .insert_header((CACHE_CONTROL, PAGE_CACHE))
        .body(page)
}

fn swagger_page(title: &str) -> String {
    let title = escape_html(title);
    let v = SWAGGER_UI_VERSION;
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} - Swagger UI</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css?v={v}">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js?v={v}"></script>
<script src="/docs/assets/swagger-init.js?v={v}"></script>
</body>
</html>
"#
    )
}

fn redoc_page(title: &str) -> String {
    let title = escape_html(title);
    let v = REDOC_VERSION;
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} - ReDoc</title>
<link rel="icon" href="data:,">
<style>body {{ margin: 0; padding: 0; }}</style>
</head>
<body>
<redoc spec-url="/openapi.json"></redoc>
<script src="/docs/assets/redoc.standalone.js?v={v}"></script>
</body>
</html>
"#
    )
}

fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::App;
    use actix_web::http::header::CONTENT_TYPE;
    use actix_web::test as at;

    const SPEC: &str =
        r#"{"openapi":"3.1.0","info":{"title":"Todo <app>","version":"1"},"paths":{}}"#;

    fn header<B>(
        resp: &actix_web::dev::ServiceResponse<B>,
        name: actix_web::http::header::HeaderName,
    ) -> String {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    }

    #[actix_web::test]
    async fn serves_document_pages_and_assets() {
        let app = at::init_service(
            App::new().configure(|c| configure(c, &Pages::new("Todo <app>", SPEC.to_string()))),
        )
        .await;

        let resp = at::call_service(
            &app,
            at::TestRequest::get().uri("/openapi.json").to_request(),
        )
        .await;
        assert_eq!(resp.status(), 200);
        assert_eq!(header(&resp, CONTENT_TYPE), "application/json");
        assert_eq!(header(&resp, CACHE_CONTROL), "no-cache");
        assert_eq!(at::read_body(resp).await, SPEC.as_bytes());

        for uri in ["/docs", "/docs/"] {
            let resp = at::call_service(&app, at::TestRequest::get().uri(uri).to_request()).await;
            assert_eq!(resp.status(), 200, "{uri}");
            assert!(header(&resp, CONTENT_TYPE).starts_with("text/html"));
            let body =
                String::from_utf8(at::read_body(resp).await.to_vec()).expect("page is UTF-8");
            assert!(
                body.contains(r#"src="/docs/assets/swagger-ui-bundle.js?v=5.35.0""#),
                "{body}"
            );
            assert!(
                body.contains("<title>Todo &lt;app&gt; - Swagger UI</title>"),
                "{body}"
            );
        }
        let resp = at::call_service(&app, at::TestRequest::get().uri("/redoc").to_request()).await;
        assert_eq!(resp.status(), 200);
        let body = String::from_utf8(at::read_body(resp).await.to_vec()).expect("page is UTF-8");
        assert!(
            body.contains(r#"<redoc spec-url="/openapi.json"></redoc>"#),
            "{body}"
        );
        assert!(
            body.contains(r#"src="/docs/assets/redoc.standalone.js?v=2.5.4""#),
            "{body}"
        );

        for asset in ASSETS {
            let uri = format!("/docs/assets/{}?v=1", asset.name);
            let resp = at::call_service(&app, at::TestRequest::get().uri(&uri).to_request()).await;
            assert_eq!(resp.status(), 200, "{uri}");
            assert_eq!(header(&resp, CACHE_CONTROL), ASSET_CACHE);
            assert_eq!(header(&resp, CONTENT_TYPE), asset.content_type);
            assert_eq!(at::read_body(resp).await.len(), asset.bytes.len(), "{uri}");
        }
        let resp = at::call_service(
            &app,
            at::TestRequest::get()
                .uri("/docs/assets/nope.js")
                .to_request(),
        )
        .await;
        assert_eq!(resp.status(), 404);
    }

    #[test]
    fn pages_reference_only_served_assets() {
        for page in [swagger_page("t"), redoc_page("t")] {
            for part in page.split("/docs/assets/").skip(1) {
                let name = part.split('?').next().unwrap_or_default();
                assert!(ASSETS.iter().any(|a| a.name == name), "{name}");
            }
            assert!(
                !page.contains("http://") && !page.contains("https://"),
                "no external URLs"
            );
        }
    }

    /// Renders `/docs` and `/redoc` in headless Chromium against a real server, offline.
    /// Needs `chromium` on PATH (or `SVC_CHROMIUM`): `cargo test -- --ignored docs_render`.
    #[test]
    #[ignore = "needs a headless Chromium"]
    fn docs_render_in_chromium() {
        use actix_web::{HttpServer, middleware::Compress};
        let chromium = std::env::var("SVC_CHROMIUM").unwrap_or_else(|_| "chromium".into());
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("test server");
        let port = listener.local_addr().expect("test server").port();
        let pages = Pages::new(
            "Render check",
            serde_json::json!({
                "openapi": "3.1.0",
                "info": {"title": "Render check", "version": "1"},
                "paths": {"/walker/create_todo": {"post": {
                    "operationId": "walker_create_todo",
                    "summary": "Create a todo item",
                    "tags": ["walkers"],
                    "responses": {"200": {"description": "ok"}},
                }}},
            })
            .to_string(),
        );
        std::thread::spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                let server = HttpServer::new(move || {
                    App::new()
                        .wrap(Compress::default())
                        .configure(|c| configure(c, &pages))
                })
                .workers(1)
                .listen(listener)
                .expect("test server")
                .run();
                server.await.expect("test server");
            });
        });
        for (page, needles) in [
            (
                "docs",
                ["swagger-ui", "walker_create_todo", "Create a todo item"],
            ),
            (
                "redoc",
                ["redoc-wrap", "Render check", "Create a todo item"],
            ),
        ] {
            let out = std::process::Command::new(&chromium)
                .args([
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-background-networking",
                    "--virtual-time-budget=15000",
                    "--dump-dom",
                    &format!("http://127.0.0.1:{port}/{page}"),
                ])
                .output()
                .expect("run chromium (set SVC_CHROMIUM to its path)");
            let dom = String::from_utf8_lossy(&out.stdout);
            for needle in needles {
                assert!(
                    dom.contains(needle),
                    "/{page}: `{needle}` not rendered; DOM:\n{dom}"
                );
            }
        }
    }
}
