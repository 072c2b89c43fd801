"""Drives `svc mcp` with the official MCP Python SDK client (PyPI `mcp`).

Usage: client.py SCENARIO TRANSPORT TARGET [WORKDIR]
  TRANSPORT stdio: TARGET is the svc binary (started as `svc mcp` in WORKDIR)
  TRANSPORT sse: TARGET is http://127.0.0.1:PORT/sse
  TRANSPORT streamable-http: TARGET is http://127.0.0.1:PORT/mcp
Scenarios: full (every tool, prompt and resource), auto (the high-level `Client`,
stdio or streamable-http only), switches (the [mcp] switches of the
svc.toml in WORKDIR), concurrency (a slow call does not block a quick one).
Prints `ok SCENARIO` and exits 0, or prints the failed check and exits 1.
"""

import asyncio
import json
import sys
import time

from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

TOOLS = {
    "validate_svc", "check_syntax", "lint_svc", "format_svc", "py_to_svc", "svc_to_py",
    "svc_to_js", "explain_error", "list_examples", "get_example", "search_docs", "get_ast",
    "run_svc", "graph_visualize", "understand_svc_and_platform", "get_resource",
    "list_commands", "get_command", "execute_command",
}
PROMPTS = {
    "write_module": ["name", "purpose", "has_impl"],
    "write_impl": ["declarations"],
    "write_walker": ["name", "purpose", "node_types"],
    "write_node": ["name", "fields"],
    "write_test": ["module_name", "functions_to_test"],
    "write_ability": ["name", "signature", "purpose"],
    "debug_error": ["error_output", "code"],
    "fix_type_error": ["error_output", "code"],
    "migrate_python": ["python_code"],
}
# What no compiler-tool output may name.
FORBIDDEN = ["jac-scale", "jaclang", ".jac"]


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def dump(model):
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


class Runner:
    def __init__(self, session):
        self.s = session
        self.compiler_texts = []

    async def call(self, name, args=None, *, compiler=False):
        r = dump(await self.s.call_tool(name, args or {}))
        check(r["content"] and r["content"][0]["type"] == "text", f"{name}: text content")
        body = json.loads(r["content"][0]["text"])
        check(r.get("structuredContent") == body, f"{name}: structuredContent mirrors the text")
        if compiler:
            self.compiler_texts.append(r["content"][0]["text"])
        return body, r.get("isError", False)

    async def ok(self, name, args=None, **kw):
        body, err = await self.call(name, args, **kw)
        check(not err, f"{name}: unexpected isError: {body}")
        return body

    async def err(self, name, args=None):
        body, err = await self.call(name, args)
        check(err, f"{name}: expected isError, got {body}")
        return body


async def full(s):
    t = Runner(s)
    tools = {x["name"]: x for x in dump(await s.list_tools())["tools"]}
    check(set(tools) == TOOLS - {"get_ast"}, f"default tools: {sorted(tools)}")
    check(tools["validate_svc"]["inputSchema"]["required"] == ["code"], "validate_svc schema")
    check("limit" in tools["search_docs"]["inputSchema"]["properties"], "search_docs schema")

    prompts = {p["name"]: p for p in dump(await s.list_prompts())["prompts"]}
    check(set(prompts) == set(PROMPTS), f"prompts: {sorted(prompts)}")
    for name, args in PROMPTS.items():
        got = [a["name"] for a in prompts[name].get("arguments", [])]
        check(got == args, f"{name} arguments {got}")
        req = {a["name"]: a.get("required", False) for a in prompts[name]["arguments"]}
        check(req.get("has_impl", False) is False, "has_impl optional")
    p = dump(await s.get_prompt("write_walker", {"name": "Counter", "purpose": "count nodes", "node_types": "Item"}))
    text = p["messages"][0]["content"]["text"]
    check("Counter" in text and "Item" in text, "prompt fills its arguments")
    check("svc://guide/pitfalls" in text, "prompt loads the pitfalls guide")
    p = dump(await s.get_prompt("write_module", {"name": "m", "purpose": "p"}))
    check("true" in p["messages"][0]["content"]["text"], "has_impl defaults to true")
    try:
        await s.get_prompt("write_node", {"name": "X"})
        check(False, "prompt without a required argument must fail")
    except MCPError as e:
        check(e.error.code == -32602, f"missing prompt argument code {e.error.code}")
    try:
        await s.get_prompt("no_such_prompt", {})
        check(False, "unknown prompt must fail")
    except MCPError:
        pass

    resources = {r["uri"]: r for r in dump(await s.list_resources())["resources"]}
    for uri in ["svc://grammar/spec", "svc://grammar/tokens", "svc://guide/pitfalls", "svc://guide/patterns"]:
        check(uri in resources, f"resource {uri} listed")
    check(any(u.startswith("svc://examples/") for u in resources), "examples listed")
    for uri in resources:
        contents = dump(await s.read_resource(uri))["contents"]
        check(contents and contents[0]["text"].strip(), f"{uri} readable")
        check(contents[0].get("mimeType") == "text/markdown", f"{uri} is Markdown")
    try:
        await s.read_resource("svc://docs/no-such-page")
        check(False, "unknown resource must fail")
    except MCPError:
        pass

    # validate_svc / check_syntax
    good = "node Item { has n: int = 0; }\nwith entry { root ++> Item(n=1); print(\"ok\"); }\n"
    r = await t.ok("validate_svc", {"code": good}, compiler=True)
    check(r["valid"] is True and r["errors"] == [] and isinstance(r["warnings"], list), f"valid code: {r}")
    r = await t.ok("validate_svc", {"code": "with entry { x = ; }", "filename": "a.svc"}, compiler=True)
    check(r["valid"] is False and r["errors"], f"syntax error found: {r}")
    e = r["errors"][0]
    check(e["line"] == 1 and e["col"] >= 1 and e["message"], f"error position {e}")
    r = await t.ok("validate_svc", {"code": "with entry { print(undefined_name); }"}, compiler=True)
    check(r["valid"] is False, f"the full check finds an undefined name: {r}")
    r = await t.ok("check_syntax", {"code": "with entry { print(undefined_name); }"}, compiler=True)
    check(r["valid"] is True, f"parse-only check passes: {r}")
    r = await t.ok("check_syntax", {"code": "with entry { x = ; }"}, compiler=True)
    check(r["valid"] is False and r["errors"][0]["line"] == 1, f"parse error: {r}")

    # lint / format / translations / ast shape
    r = await t.ok("lint_svc", {"code": good}, compiler=True)
    check(set(r) >= {"violations", "fixed_code", "changed"} and r["fixed_code"] is None, f"lint shape {r}")
    r = await t.ok("lint_svc", {"code": good, "auto_fix": True}, compiler=True)
    check(isinstance(r["fixed_code"], str), f"lint auto_fix gives code {r}")
    r, _ = await t.call("format_svc", {"code": good}, compiler=True)
    check(("formatted" in r and "changed" in r) or "error" in r, f"format shape {r}")
    r = await t.ok("py_to_svc", {"python_code": "def f(x):\n    return x + 1\n"}, compiler=True)
    check(set(r) == {"svc_code", "warnings"}, f"py_to_svc shape {r}")
    r = await t.ok("svc_to_py", {"code": good}, compiler=True)
    check(set(r) == {"python_code", "warnings"}, f"svc_to_py shape {r}")
    r = await t.ok("svc_to_js", {"code": good}, compiler=True)
    check(set(r) == {"js_code", "warnings"}, f"svc_to_js shape {r}")

    # run_svc
    r = await t.ok("run_svc", {"code": "with entry { print(1 + 2); }"}, compiler=True)
    check(r["stdout"] == "3\n" and r["exit_code"] == 0 and "error" not in r, f"run_svc {r}")
    r = await t.ok("run_svc", {"code": "def f() -> int { return 1; }"}, compiler=True)
    check(r["stdout"] == "" and r["exit_code"] == 0, f"no entry block: no output {r}")
    r = await t.ok("run_svc", {"code": "with entry { print(\"a\"); x = 1 / 0; }"}, compiler=True)
    check(r["exit_code"] == 1 and "division by zero" in r["error"] and r["stdout"] == "a\n", f"runtime error {r}")
    walker = (
        "node Item { has n: int = 0; }\n"
        "walker Count { has total: int = 0;\n"
        "  can start with Root entry { visit [-->]; }\n"
        "  can tally with Item entry { self.total += here.n; report here.n; } }\n"
        "with entry { root ++> Item(n=2); root ++> Item(n=5); print(\"built\"); }\n"
    )
    r = await t.ok("run_svc", {"code": walker, "entrypoint": "Count"}, compiler=True)
    check(r["exit_code"] == 0 and r["stdout"].startswith("built\n") and r.get("reports") == [2, 5], f"walker entrypoint {r}")
    r = await t.ok("run_svc", {"code": "def hi() { print(\"hi\"); }", "entrypoint": "hi"}, compiler=True)
    check(r["stdout"] == "hi\n", f"function entrypoint {r}")
    r = await t.ok("run_svc", {"code": "with entry { print(1); }", "entrypoint": "nope"}, compiler=True)
    check(r["exit_code"] == 0 and r["stdout"] == "1\n", f"unknown entrypoint is not an error {r}")
    r = await t.ok("run_svc", {"code": "import from other { thing }\nwith entry { print(1); }"}, compiler=True)
    check(r["exit_code"] == 1, f"no file access: an import fails {r}")
    start = time.monotonic()
    r = await t.ok("run_svc", {"code": "with entry { while True { x = 1; } }", "timeout": 1}, compiler=True)
    took = time.monotonic() - start
    check(r["exit_code"] == 1 and r["error"], f"endless loop stopped {r}")
    check(took < 6, f"endless loop stopped in time ({took:.1f}s)")

    # graph_visualize
    graph = "node A { has x: int = 0; }\nwith entry { a = A(x=1); root ++> a; a ++> A(x=2); root ++> A(x=3); print(\"g\"); }\n"
    r = await t.ok("graph_visualize", {"code": graph}, compiler=True)
    check(r["graph"].startswith("digraph") and r["graph"].count("->") == 3, f"dot graph {r}")
    check(r["program_output"] == "g\n", "program output")
    r = await t.ok("graph_visualize", {"code": graph, "format": "json"}, compiler=True)
    check(len(r["graph"]["nodes"]) == 4 and len(r["graph"]["edges"]) == 3, f"json graph {r}")
    r = await t.ok("graph_visualize", {"code": graph, "format": "json", "depth": 1}, compiler=True)
    check(len(r["graph"]["nodes"]) == 3, f"depth 1 {r}")
    r = await t.ok("graph_visualize", {"code": graph, "format": "json", "node_limit": 1}, compiler=True)
    check(len(r["graph"]["nodes"]) == 1 and r["graph"]["nodes"][0]["type"] == "Root", f"node_limit 1 keeps root {r}")
    r = await t.ok("graph_visualize", {"code": graph, "format": "json", "edge_limit": 1}, compiler=True)
    check(len(r["graph"]["edges"]) == 1, f"edge_limit {r}")
    r = await t.ok("graph_visualize", {"code": graph, "format": "json", "bfs": False}, compiler=True)
    check(len(r["graph"]["nodes"]) == 4, f"dfs {r}")
    r = await t.ok("graph_visualize", {"code": "with entry { x = 1 / 0; }", "format": "json"}, compiler=True)
    check(len(r["graph"]["nodes"]) == 1 and "division by zero" in r["error"], f"failed run still has root {r}")

    # docs, examples, errors
    r = await t.ok("explain_error", {"error_message": "error[E0001]: something"})
    check(set(r) == {"title", "explanation", "suggestion", "example", "docs_uri"}, f"explain_error {r}")
    r = await t.ok("list_examples")
    check(r["examples"] and r["total"] == len(r["examples"]), f"list_examples {r}")
    first = r["examples"][0]["category"]
    r = await t.ok("get_example", {"name": first})
    check(r["category"] == first and r["files"] and all("source" in f for f in r["files"]), f"get_example {r}")
    await t.err("get_example", {"name": "no-such-example"})
    r = await t.ok("search_docs", {"query": "walker node", "limit": 3})
    res = r["results"]
    check(res and len(res) <= 3, f"search_docs results {r}")
    check(all(set(x) >= {"uri", "title", "description", "snippet", "score"} for x in res), "result shape")
    check([x["score"] for x in res] == sorted([x["score"] for x in res], reverse=True), "ranked")
    r = await t.ok("understand_svc_and_platform")
    check("svc://guide/pitfalls" in r["knowledge_map"], "knowledge map lists the pitfalls guide")
    r = await t.ok("get_resource", {"uri": "svc://guide/pitfalls"})
    check(r["uri"] == "svc://guide/pitfalls" and r["content"].strip(), f"get_resource {r}")
    r = await t.err("get_resource", {"uri": "svc://nope"})
    check(r["uri"] == "svc://nope" and r["error"], f"get_resource unknown {r}")

    # commands, from the clap definition
    r = await t.ok("list_commands")
    names = [c["name"] for c in r["commands"]]
    check({"run", "check", "start", "mcp", "db inspect"} <= set(names), f"commands {names}")
    check(r["total"] == len(names) and r["groups"], "total and groups")
    r = await t.ok("get_command", {"name": "mcp"})
    args = {a["name"]: a for a in r["args"]}
    check(set(args) >= {"--transport", "--port", "--host", "--inspect"}, f"mcp args {args}")
    check(args["--transport"]["choices"] == ["stdio", "sse", "streamable-http"], "transport choices")
    check(args["--inspect"]["type"] == "bool" and args["--inspect"]["kind"] == "OPTION", "flag")
    r = await t.ok("get_command", {"name": "run"})
    file_arg = [a for a in r["args"] if a["name"] == "file"][0]
    check(file_arg["kind"] == "POSITIONAL" and file_arg["required"], f"positional {file_arg}")
    await t.err("get_command", {"name": "no-such-command"})
    r = await t.ok("execute_command", {"command": "check", "args": ["ok.svc"]})
    check(r["success"] and r["exit_code"] == 0 and "ok" in r["stdout"], f"execute check {r}")
    r = await t.ok("execute_command", {"command": "check", "args": ["--bogus"]})
    check(not r["success"] and r["exit_code"] == 2, f"usage error is exit 2 {r}")
    r = await t.ok("execute_command", {"command": "run", "args": ["missing.svc"]})
    check(r["exit_code"] == 1, f"runtime failure is exit 1 {r}")

    # error shapes and limits
    for name in ["validate_svc", "run_svc", "format_svc", "graph_visualize"]:
        r = await t.err(name, {})
        check("code" in r["error"], f"{name} names the missing argument: {r}")
    big = "# " + "x" * (100 * 1024) + "\n"
    for name in ["validate_svc", "check_syntax", "run_svc", "lint_svc"]:
        r = await t.err(name, {"code": big})
        check("100 KB" in r["error"], f"{name} input limit: {r}")
    r = await t.err("py_to_svc", {"python_code": big})
    check("100 KB" in r["error"], "py_to_svc input limit")
    r = await t.err("run_svc", {"code": 5})
    check("string" in r["error"], "type of an argument")
    try:
        await s.call_tool("no_such_tool", {})
        check(False, "unknown tool must fail")
    except MCPError as e:
        check(e.error.code == -32602, f"unknown tool code {e.error.code}")

    for text in t.compiler_texts:
        for bad in FORBIDDEN:
            check(bad not in text, f"compiler tool output names {bad!r}: {text[:200]}")


async def switches(s):
    t = Runner(s)
    tools = {x["name"] for x in dump(await s.list_tools())["tools"]}
    check("get_ast" in tools, "enable_ast adds get_ast")
    check("search_docs" in tools, "expose_docs keeps search_docs")
    for gone in ["format_svc", "list_examples", "get_example", "validate_svc", "check_syntax", "py_to_svc"]:
        check(gone not in tools, f"{gone} removed")
    resources = [r["uri"] for r in dump(await s.list_resources())["resources"]]
    check(not any(u.startswith("svc://examples/") for u in resources), "examples hidden")
    check(not any(u.startswith("svc://grammar/") for u in resources), "grammar hidden")
    check("svc://guide/pitfalls" not in resources, "pitfalls hidden")
    check(any(u.startswith("svc://docs/") for u in resources), "docs still shown")
    r = await t.ok("get_ast", {"code": "with entry { print(1); }"})
    check(r["format"] == "tree" and r["ast"], f"get_ast tree {r}")
    r = await t.ok("get_ast", {"code": "with entry { print(1); }", "format": "json"})
    check(r["format"] == "json" and r["ast"] is not None, f"get_ast json {r}")
    # Broken code still gets its (partial) tree, with the syntax errors listed first.
    r = await t.ok("get_ast", {"code": "with entry { x = ; }"})
    check("E0001" in r["ast"] and "Error" in r["ast"], f"get_ast of broken code {r}")
    await t.err("get_ast", {"code": "x", "format": "xml"})
    try:
        await s.call_tool("format_svc", {"code": "x"})
        check(False, "a removed tool is unknown")
    except MCPError:
        pass
    r = await t.err("get_resource", {"uri": "svc://guide/pitfalls"})
    check(r["error"], "a hidden resource is not served")
    # Prompts still load the pitfalls guide.
    p = dump(await s.get_prompt("write_impl", {"declarations": "def f() -> int;"}))
    check("svc://guide/pitfalls" in p["messages"][0]["content"]["text"], "prompt loads pitfalls")


async def concurrency(s):
    t = Runner(s)

    async def slow():
        return await t.ok("run_svc", {"code": "with entry { while True { x = 1; } }", "timeout": 4})

    async def quick():
        await asyncio.sleep(0.5)
        start = time.monotonic()
        await t.ok("run_svc", {"code": "with entry { print(7); }"})
        await s.list_tools()
        return time.monotonic() - start

    slow_r, quick_took = await asyncio.gather(slow(), quick())
    check(quick_took < 3, f"quick calls answered while a slow one runs ({quick_took:.1f}s)")
    check(slow_r["exit_code"] == 1, f"slow call stopped by the time limit {slow_r}")


SCENARIOS = {"full": full, "switches": switches, "concurrency": concurrency}


async def auto(transport, target, workdir):
    """The SDK's high-level `Client` in its default mode: it probes `server/discover`
    and falls back to the `initialize` handshake."""
    from mcp import Client

    server = StdioServerParameters(command=target, args=["mcp"], cwd=workdir) if transport == "stdio" else target
    async with Client(server) as c:
        tools = [t.name for t in (await c.list_tools()).tools]
        check("run_svc" in tools and len(tools) == 18, f"tools {tools}")
        r = dump(await c.call_tool("run_svc", {"code": "with entry { print(4); }"}))
        check(r["structuredContent"]["stdout"] == "4\n", f"run_svc {r}")
        check(len((await c.list_prompts()).prompts) == 9, "prompts")
        text = dump(await c.read_resource("svc://guide/pitfalls"))["contents"][0]["text"]
        check(text.strip(), "pitfalls readable")


async def main():
    scenario, transport, target = sys.argv[1], sys.argv[2], sys.argv[3]
    workdir = sys.argv[4] if len(sys.argv) > 4 else None
    if scenario == "auto":
        await auto(transport, target, workdir)
        print("ok auto")
        return
    fn = SCENARIOS[scenario]

    async def run(read, write):
        async with ClientSession(read, write) as s:
            info = dump(await s.initialize())
            check(info["serverInfo"]["name"] == "svc", f"server info {info}")
            check(info["capabilities"].get("tools") is not None, "tools capability")
            await fn(s)

    if transport == "stdio":
        params = StdioServerParameters(command=target, args=["mcp"], cwd=workdir)
        async with stdio_client(params) as (read, write):
            await run(read, write)
    elif transport == "sse":
        async with sse_client(target) as (read, write):
            await run(read, write)
    else:
        async with streamable_http_client(target) as (read, write):
            await run(read, write)
    print(f"ok {scenario}")


if __name__ == "__main__":
    try:
        asyncio.run(asyncio.wait_for(main(), 240))
    except BaseException as e:  # noqa: BLE001 - report the first assertion plainly
        while isinstance(e, BaseExceptionGroup) and e.exceptions:
            e = e.exceptions[0]
        print(f"FAILED: {type(e).__name__}: {e}")
        sys.exit(1)
