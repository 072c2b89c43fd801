//! PLACEHOLDER (mcp branch): the "docs" helper owns `src/mcp/content/`; its version (the
//! real guides, documents and example apps) replaces this file at merge. Only the agreed
//! signatures are here, with a handful of short pages so `svc mcp` has something to serve.

pub struct Doc {
    pub uri: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub topic: &'static str,
    pub kind: DocKind,
    pub body: &'static str,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DocKind {
    Guide,
    Pitfalls,
    Patterns,
    Doc,
}

static DOCS: &[Doc] = &[
    Doc {
        uri: "svc://guide/getting-started",
        title: "Getting started",
        description: "Write, check and run a first svc program",
        topic: "Guides",
        kind: DocKind::Guide,
        body: "# Getting started\n\nWrite `main.svc`, check it with `svc check main.svc` and run it with `svc run main.svc`.\n",
    },
    Doc {
        uri: "svc://guide/pitfalls",
        title: "Common pitfalls",
        description: "Mistakes to avoid when writing svc code",
        topic: "Guides",
        kind: DocKind::Pitfalls,
        body: "# Common pitfalls\n\n- Statements end with `;` and blocks use braces.\n- Walkers visit nodes with `visit [-->];`.\n",
    },
    Doc {
        uri: "svc://guide/patterns",
        title: "Patterns",
        description: "Idiomatic svc patterns",
        topic: "Guides",
        kind: DocKind::Patterns,
        body: "# Patterns\n\nBuild the graph from `root` with `root ++> Node();` and walk it with a walker.\n",
    },
    Doc {
        uri: "svc://docs/osp",
        title: "Object-spatial programming",
        description: "Nodes, edges and walkers",
        topic: "Language specification",
        kind: DocKind::Doc,
        body: "# Object-spatial programming\n\nA walker is spawned on a node and visits edges: `root spawn Visitor();`.\n",
    },
];

pub fn docs() -> &'static [Doc] {
    DOCS
}

pub struct ExampleFile {
    pub path: &'static str,
    pub source: &'static str,
}

pub struct Example {
    pub category: &'static str,
    pub description: &'static str,
    pub files: &'static [ExampleFile],
}

static EXAMPLES: &[Example] = &[Example {
    category: "hello",
    description: "Prints a greeting from an entry block",
    files: &[ExampleFile {
        path: "main.svc",
        source: "with entry {\n    print(\"hello\");\n}\n",
    }],
}];

pub fn examples() -> &'static [Example] {
    EXAMPLES
}

pub struct Explanation {
    pub title: String,
    pub explanation: String,
    pub suggestion: String,
    pub example: String,
    pub docs_uri: String,
}

/// Placeholder: the diagnostic code table's row for a code in the message, else a
/// general answer.
pub fn explain(error_message: &str) -> Explanation {
    let found = lang::diag::Code::ALL
        .iter()
        .find(|c| error_message.contains(c.as_str()));
    match found {
        Some(c) => Explanation {
            title: format!("{}: {}", c.as_str(), c.title()),
            explanation: c.explanation().to_string(),
            suggestion: c.explanation().to_string(),
            example: c.example().to_string(),
            docs_uri: "svc://guide/pitfalls".into(),
        },
        None => Explanation {
            title: "Unrecognised error".into(),
            explanation: "No catalogue entry matches this message.".into(),
            suggestion: "Run validate_svc on the code to get the diagnostic code.".into(),
            example: String::new(),
            docs_uri: "svc://guide/pitfalls".into(),
        },
    }
}
