//! The bundled content of `svc mcp`: the `svc://docs/*` and `svc://guide/*` Markdown
//! pages, the example apps served by `list_examples`/`get_example` and `svc://examples/*`,
//! and the `explain_error` catalogue. Everything is compiled into the binary with
//! `include_str!`, so the server needs no files at run time.
//!
//! Conventions the tests hold the Markdown to (`tests/integration/mcp_content.rs`): a
//! fenced block tagged `svc` is a complete program that passes `svc check`; a block that
//! is only a fragment, or shows a mistake on purpose, is tagged `svc fragment`.

mod explain;

pub use explain::{Explanation, explain};

/// One bundled Markdown resource.
pub struct Doc {
    /// `svc://docs/<name>` or `svc://guide/<name>`.
    pub uri: &'static str,
    pub title: &'static str,
    /// One line, shown in listings and search results.
    pub description: &'static str,
    /// The group of the knowledge map (`getting-started`, `language`, ...).
    pub topic: &'static str,
    pub kind: DocKind,
    /// The Markdown text.
    pub body: &'static str,
}

/// What a page is; drives the `[mcp] expose_*` switches.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DocKind {
    Guide,
    Pitfalls,
    Patterns,
    Doc,
}

/// One file of an example app.
pub struct ExampleFile {
    /// Path inside the example (`main.svc`).
    pub path: &'static str,
    pub source: &'static str,
}

/// A bundled example app: a directory `examples/<category>/` of `.svc` files whose entry
/// is `main.svc`.
pub struct Example {
    pub category: &'static str,
    pub description: &'static str,
    pub files: &'static [ExampleFile],
}

macro_rules! page {
    ($kind:ident, $uri:literal, $file:literal, $topic:literal, $title:literal, $description:literal) => {
        Doc {
            uri: $uri,
            title: $title,
            description: $description,
            topic: $topic,
            kind: DocKind::$kind,
            body: include_str!($file),
        }
    };
}

static DOCS: &[Doc] = &[
    // Guides.
    page!(
        Pitfalls,
        "svc://guide/pitfalls",
        "guide/pitfalls.md",
        "guides",
        "Pitfalls",
        "The mistakes people make writing svc: traversal, visit order, report, :pub, access, syntax, imports"
    ),
    page!(
        Patterns,
        "svc://guide/patterns",
        "guide/patterns.md",
        "guides",
        "Idiomatic patterns",
        "How to structure svc apps: per-user data under root, walkers as queries and commands, typed edges, idempotent handlers"
    ),
    page!(
        Guide,
        "svc://guide/walkers",
        "guide/walkers.md",
        "guides",
        "Walkers in depth",
        "The exact traversal rules: the visit queue, entry and exit order, skip and disengage, reports, spawning"
    ),
    page!(
        Guide,
        "svc://guide/http-api",
        "guide/http-api.md",
        "guides",
        "Serving an HTTP API",
        "How walkers and functions become endpoints: paths, methods, parameters, the envelope, auth, @restspec"
    ),
    page!(
        Guide,
        "svc://guide/persistence",
        "guide/persistence.md",
        "guides",
        "Persistence and the graph store",
        "What is saved, when it commits, replicas, conflicts and replays, schema changes, svc db"
    ),
    page!(
        Guide,
        "svc://guide/access-control",
        "guide/access-control.md",
        "guides",
        "Users, roots and access",
        "Per-user roots, the shared root, grant/revoke, access levels and what other users can see"
    ),
    page!(
        Guide,
        "svc://guide/realtime",
        "guide/realtime.md",
        "guides",
        "Events, WebSockets and webhooks",
        "Publishing and subscribing to events, WebSocket walkers, webhook walkers"
    ),
    page!(
        Guide,
        "svc://guide/errors",
        "guide/errors.md",
        "guides",
        "Reading svc errors",
        "Diagnostic codes from svc check, runtime errors, HTTP error codes, and where to look next"
    ),
    page!(
        Guide,
        "svc://guide/limits",
        "guide/limits.md",
        "guides",
        "Limits and bounds",
        "Every limit a run, a request and the tool server enforce, and what happens beyond it"
    ),
    // Getting started.
    page!(
        Doc,
        "svc://docs/welcome",
        "docs/welcome.md",
        "getting-started",
        "Welcome to svc",
        "What svc is, what it does today, and where to read next"
    ),
    page!(
        Doc,
        "svc://docs/install",
        "docs/install.md",
        "getting-started",
        "Install svc",
        "Building the svc binary and checking that it works"
    ),
    page!(
        Doc,
        "svc://docs/core-concepts",
        "docs/core-concepts.md",
        "getting-started",
        "Core concepts",
        "Nodes, edges, walkers, root, reports and the envelope in one page"
    ),
    page!(
        Doc,
        "svc://docs/first-app",
        "docs/first-app.md",
        "getting-started",
        "Your first app",
        "A todo API from an empty directory to curl, step by step"
    ),
    page!(
        Doc,
        "svc://docs/cheatsheet",
        "docs/cheatsheet.md",
        "getting-started",
        "Cheatsheet",
        "The syntax of svc on one page"
    ),
    page!(
        Doc,
        "svc://docs/jac-vs-traditional",
        "docs/jac-vs-traditional.md",
        "getting-started",
        "svc compared with a traditional stack",
        "How a graph of nodes and walkers replaces routes, ORM models and a database schema"
    ),
    page!(
        Doc,
        "svc://docs/faq",
        "docs/faq.md",
        "getting-started",
        "FAQ",
        "Short answers to common questions about svc"
    ),
    // Language specification.
    page!(
        Doc,
        "svc://docs/reference-overview",
        "docs/reference-overview.md",
        "language",
        "Language reference overview",
        "Map of the svc language reference and what svc supports"
    ),
    page!(
        Doc,
        "svc://docs/foundation",
        "docs/foundation.md",
        "language",
        "Foundation: syntax and program structure",
        "Statements, blocks, comments, modules, entry blocks, globals, imports"
    ),
    page!(
        Doc,
        "svc://docs/primitives",
        "docs/primitives.md",
        "language",
        "Primitive types and expressions",
        "int, float, str, bool, None, lists, dicts, sets, tuples, operators and built-in functions"
    ),
    page!(
        Doc,
        "svc://docs/functions-objects",
        "docs/functions-objects.md",
        "language",
        "Functions and objects",
        "def, lambdas, obj, enum, inheritance, methods, impl blocks"
    ),
    page!(
        Doc,
        "svc://docs/osp",
        "docs/osp.md",
        "language",
        "Object-spatial programming",
        "Nodes, edges, walkers, abilities, edge references, visit, report, spawn"
    ),
    page!(
        Doc,
        "svc://docs/concurrency",
        "docs/concurrency.md",
        "language",
        "Concurrency",
        "How svc runs requests in parallel, commits, conflicts and replays; what async means today"
    ),
    page!(
        Doc,
        "svc://docs/advanced",
        "docs/advanced.md",
        "language",
        "Advanced language features",
        "match, comprehensions, try/except, typed edges, access tags, decorators, tests"
    ),
    // Tutorials.
    page!(
        Doc,
        "svc://docs/tutorial-coding-primer",
        "docs/tutorial-coding-primer.md",
        "tutorials",
        "Coding primer",
        "A first taste of programming in svc for newcomers"
    ),
    page!(
        Doc,
        "svc://docs/tutorial-basics",
        "docs/tutorial-basics.md",
        "tutorials",
        "Tutorial: the basics",
        "Variables, control flow, functions and objects, step by step"
    ),
    page!(
        Doc,
        "svc://docs/tutorial-osp",
        "docs/tutorial-osp.md",
        "tutorials",
        "Tutorial: graphs and walkers",
        "Build a small social graph and walk it"
    ),
    // AI integration.
    page!(
        Doc,
        "svc://docs/byllm",
        "docs/byllm.md",
        "ai",
        "LLM calls (not in svc)",
        "svc has no built-in LLM calls; how to call a model service from svc instead"
    ),
    page!(
        Doc,
        "svc://docs/tutorial-ai-quickstart",
        "docs/tutorial-ai-quickstart.md",
        "ai",
        "AI quickstart (not in svc)",
        "svc has no LLM integration; what to use instead"
    ),
    page!(
        Doc,
        "svc://docs/tutorial-ai-structured",
        "docs/tutorial-ai-structured.md",
        "ai",
        "Structured AI output (not in svc)",
        "svc has no LLM-typed functions; validating model output with svc types instead"
    ),
    page!(
        Doc,
        "svc://docs/tutorial-ai-agentic",
        "docs/tutorial-ai-agentic.md",
        "ai",
        "Agentic AI (not in svc)",
        "svc has no agent framework; how walkers can drive an external agent service"
    ),
    page!(
        Doc,
        "svc://docs/tutorial-ai-multimodal",
        "docs/tutorial-ai-multimodal.md",
        "ai",
        "Multimodal AI (not in svc)",
        "svc has no image or audio model support; storing media with store() instead"
    ),
    // Full stack.
    page!(
        Doc,
        "svc://docs/jac-client",
        "docs/jac-client.md",
        "fullstack",
        "Client-side UI (not in svc)",
        "svc has no client-side UI framework; pairing an svc API with any frontend"
    ),
    page!(
        Doc,
        "svc://docs/tutorial-fullstack-setup",
        "docs/tutorial-fullstack-setup.md",
        "fullstack",
        "Full stack: setup",
        "Serving an svc API to a separately built frontend"
    ),
    page!(
        Doc,
        "svc://docs/tutorial-fullstack-components",
        "docs/tutorial-fullstack-components.md",
        "fullstack",
        "Full stack: components (not in svc)",
        "svc has no UI components; shaping API responses for your components"
    ),
    page!(
        Doc,
        "svc://docs/tutorial-fullstack-state",
        "docs/tutorial-fullstack-state.md",
        "fullstack",
        "Full stack: state",
        "Where state lives in an svc app: the graph, walkers, and the client"
    ),
    page!(
        Doc,
        "svc://docs/tutorial-fullstack-backend",
        "docs/tutorial-fullstack-backend.md",
        "fullstack",
        "Full stack: the backend",
        "Building the API a frontend calls: walkers, functions, paths and methods"
    ),
    page!(
        Doc,
        "svc://docs/tutorial-fullstack-auth",
        "docs/tutorial-fullstack-auth.md",
        "fullstack",
        "Full stack: authentication",
        "Register, log in, send the bearer token, per-user data"
    ),
    page!(
        Doc,
        "svc://docs/tutorial-fullstack-routing",
        "docs/tutorial-fullstack-routing.md",
        "fullstack",
        "Full stack: routing",
        "Custom paths, path parameters and methods with @restspec; client routing is the frontend's"
    ),
    // Deployment.
    page!(
        Doc,
        "svc://docs/jac-scale",
        "docs/jac-scale.md",
        "deployment",
        "Scaling out svc",
        "Replicas, the document database, cache invalidation, events and Kubernetes deployment"
    ),
    page!(
        Doc,
        "svc://docs/tutorial-production-local",
        "docs/tutorial-production-local.md",
        "deployment",
        "Production on one machine",
        "Running svc start for real: secrets, host, profiles, health, metrics, replicas"
    ),
    page!(
        Doc,
        "svc://docs/tutorial-production-k8s",
        "docs/tutorial-production-k8s.md",
        "deployment",
        "Production on Kubernetes",
        "svc start --scale: dry run, the objects, secrets, TLS, status and destroy"
    ),
    // Developer workflow.
    page!(
        Doc,
        "svc://docs/cli",
        "docs/cli.md",
        "workflow",
        "Command line",
        "Every svc command and option"
    ),
    page!(
        Doc,
        "svc://docs/config",
        "docs/config.md",
        "workflow",
        "Configuration",
        "svc.toml, profiles, environment variables and the main sections"
    ),
    page!(
        Doc,
        "svc://docs/code-organization",
        "docs/code-organization.md",
        "workflow",
        "Organizing code",
        "Modules, imports, impl blocks and splitting an app into files and services"
    ),
    page!(
        Doc,
        "svc://docs/mcp",
        "docs/mcp.md",
        "workflow",
        "The svc mcp tool server",
        "Tools, prompts, resources and transports of svc mcp for AI clients"
    ),
    page!(
        Doc,
        "svc://docs/testing",
        "docs/testing.md",
        "workflow",
        "Testing svc code",
        "svc check, assert-based scripts, test blocks, and testing the HTTP API"
    ),
    page!(
        Doc,
        "svc://docs/debugging",
        "docs/debugging.md",
        "workflow",
        "Debugging",
        "Reading errors, printing, printgraph, /graph, the store and the access log"
    ),
    // Python integration.
    page!(
        Doc,
        "svc://docs/python-integration",
        "docs/python-integration.md",
        "python",
        "Python integration (not in svc)",
        "svc has no Python underneath: what that means for imports and libraries"
    ),
    page!(
        Doc,
        "svc://docs/library-mode",
        "docs/library-mode.md",
        "python",
        "Library mode (not in svc)",
        "svc cannot be used as a Python library; how to embed svc apps instead"
    ),
    // Quick reference.
    page!(
        Doc,
        "svc://docs/walker-responses",
        "docs/walker-responses.md",
        "reference",
        "Walker responses",
        "What a walker or function call answers over HTTP: the envelope, reports, result, errors"
    ),
    page!(
        Doc,
        "svc://docs/appendices",
        "docs/appendices.md",
        "reference",
        "Appendices",
        "Keywords, operators, built-ins, diagnostic codes and HTTP error codes"
    ),
];

/// Every `svc://guide/*` and `svc://docs/*` page (not the grammar, not the examples).
pub fn docs() -> &'static [Doc] {
    DOCS
}

macro_rules! example {
    ($category:literal, $description:literal, [$($path:literal),+ $(,)?]) => {
        Example {
            category: $category,
            description: $description,
            files: &[$(ExampleFile {
                path: $path,
                source: include_str!(concat!("examples/", $category, "/", $path)),
            },)+],
        }
    };
}

static EXAMPLES: &[Example] = &[
    example!(
        "basics",
        "The language on its own: functions, objects, enums, control flow, errors; `svc run main.svc`",
        ["main.svc"]
    ),
    example!(
        "todo",
        "A todo API: walkers that add, list, complete and clear todos, per user when called with a token; `svc start main.svc`",
        ["main.svc"]
    ),
    example!(
        "social",
        "A small social network: profiles, typed follow edges, posts and a feed walker",
        ["main.svc", "models.svc"]
    ),
    example!(
        "chat-websocket",
        "A chat room over WebSocket with broadcast, plus an HTTP history endpoint",
        ["main.svc"]
    ),
    example!(
        "events",
        "Publishing events and handling them with @subscribe, at-least-once with deduplication; svc.toml enables the broker",
        ["main.svc", "svc.toml"]
    ),
    example!(
        "kvstore",
        "Page-view counters, a TTL key and a cross-replica lock on the cache store with kvstore() (needs CACHE_URL)",
        ["main.svc"]
    ),
    example!(
        "rest-api",
        "Custom paths, GET with path and query parameters, raw text responses with @restspec",
        ["main.svc"]
    ),
];

/// Every bundled example app, by category.
pub fn examples() -> &'static [Example] {
    EXAMPLES
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names the spec's table lists under `svc://docs/`.
    const SPEC_DOC_NAMES: &[&str] = &[
        "welcome",
        "install",
        "core-concepts",
        "first-app",
        "cheatsheet",
        "jac-vs-traditional",
        "faq",
        "reference-overview",
        "foundation",
        "primitives",
        "functions-objects",
        "osp",
        "concurrency",
        "advanced",
        "tutorial-coding-primer",
        "tutorial-basics",
        "tutorial-osp",
        "byllm",
        "tutorial-ai-quickstart",
        "tutorial-ai-structured",
        "tutorial-ai-agentic",
        "tutorial-ai-multimodal",
        "jac-client",
        "tutorial-fullstack-setup",
        "tutorial-fullstack-components",
        "tutorial-fullstack-state",
        "tutorial-fullstack-backend",
        "tutorial-fullstack-auth",
        "tutorial-fullstack-routing",
        "jac-scale",
        "tutorial-production-local",
        "tutorial-production-k8s",
        "cli",
        "config",
        "code-organization",
        "mcp",
        "testing",
        "debugging",
        "python-integration",
        "library-mode",
        "walker-responses",
        "appendices",
    ];

    #[test]
    fn every_spec_doc_name_has_a_page() {
        for name in SPEC_DOC_NAMES {
            let uri = format!("svc://docs/{name}");
            assert!(docs().iter().any(|d| d.uri == uri), "no page {uri}");
        }
        assert!(
            docs()
                .iter()
                .any(|d| d.uri == "svc://guide/pitfalls" && d.kind == DocKind::Pitfalls)
        );
        assert!(
            docs()
                .iter()
                .any(|d| d.uri == "svc://guide/patterns" && d.kind == DocKind::Patterns)
        );
    }

    #[test]
    fn pages_are_unique_titled_and_non_empty() {
        let mut seen = std::collections::HashSet::new();
        for d in docs() {
            assert!(seen.insert(d.uri), "{} twice", d.uri);
            assert!(
                d.uri.starts_with("svc://docs/") || d.uri.starts_with("svc://guide/"),
                "{}",
                d.uri
            );
            assert!(!d.title.is_empty() && !d.description.is_empty() && !d.topic.is_empty());
            assert!(
                d.body.starts_with("# "),
                "{} must start with a heading",
                d.uri
            );
            assert!(d.body.len() > 400, "{} is too short", d.uri);
        }
        // The spec: more than 40 resources (pages, examples and the two grammar pages).
        assert!(docs().len() + examples().len() + 2 > 40);
    }

    /// Nothing names the original implementation or its file types; `jac-` survives only
    /// inside the URIs the spec fixes.
    #[test]
    fn content_never_names_the_original() {
        let texts = docs().iter().map(|d| (d.uri, d.body)).chain(
            examples()
                .iter()
                .flat_map(|e| e.files.iter().map(|f| (f.path, f.source))),
        );
        for (name, text) in texts {
            let lower = text
                .to_lowercase()
                .replace("svc://docs/jac-", "svc://docs/-");
            for bad in ["jac", "jaseci", "python original"] {
                assert!(!lower.contains(bad), "{name} mentions {bad:?}");
            }
        }
    }

    /// A page on a feature svc lacks says so in its first paragraph.
    #[test]
    fn pages_on_missing_features_say_so_first() {
        let missing = [
            "byllm",
            "tutorial-ai-quickstart",
            "tutorial-ai-structured",
            "tutorial-ai-agentic",
            "tutorial-ai-multimodal",
            "jac-client",
            "tutorial-fullstack-components",
            "python-integration",
            "library-mode",
        ];
        for name in missing {
            let uri = format!("svc://docs/{name}");
            let doc = docs().iter().find(|d| d.uri == uri).expect("page exists");
            let first = doc.body.split("\n\n").nth(1).unwrap_or_default();
            assert!(
                first.contains("svc has no") || first.contains("svc cannot"),
                "{uri} must say plainly what svc lacks first: {first:?}"
            );
        }
    }

    #[test]
    fn examples_have_an_entry_file() {
        for e in examples() {
            assert!(
                e.files.iter().any(|f| f.path == "main.svc"),
                "{}",
                e.category
            );
            assert!(!e.description.is_empty());
        }
    }
}
