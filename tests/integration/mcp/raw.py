"""JSON-RPC envelope checks of `svc mcp` over HTTP, below the SDK client.

Usage: raw.py sse http://127.0.0.1:PORT   |   raw.py streamable-http http://127.0.0.1:PORT
Prints `ok` and exits 0, or prints the failed check and exits 1.
"""

import json
import queue
import sys
import threading

import httpx2

INIT = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def sse(base):
    events = queue.Queue()

    def reader():
        with httpx2.Client(timeout=None) as c, c.stream("GET", base + "/sse") as r:
            check(r.status_code == 200, f"GET /sse {r.status_code}")
            check(r.headers["content-type"].startswith("text/event-stream"), "event stream")
            name = None
            for line in r.iter_lines():
                if line.startswith("event:"):
                    name = line[6:].strip()
                elif line.startswith("data:"):
                    events.put((name, line[5:].strip()))

    threading.Thread(target=reader, daemon=True).start()
    name, endpoint = events.get(timeout=10)
    check(name == "endpoint" and endpoint.startswith("/messages/?session_id="), f"endpoint event {endpoint}")
    url = base + endpoint
    c = httpx2.Client(timeout=10)

    def post(body, status=202):
        data = body if isinstance(body, str) else json.dumps(body)
        r = c.post(url, content=data, headers={"content-type": "application/json"})
        check(r.status_code == status, f"POST {data[:80]} -> {r.status_code} {r.text}")
        return r

    def next_message():
        name, data = events.get(timeout=15)
        check(name == "message", f"message event {name}")
        return json.loads(data)

    r = post("{not json", 400)
    check(r.json()["error"]["code"] == -32700, "parse error on the POST")
    post({"jsonrpc": "2.0", "id": 7, "method": "no/such"})
    m = next_message()
    check(m["id"] == 7 and m["error"]["code"] == -32601, f"unknown method {m}")
    post({"id": 8, "method": "ping"})
    m = next_message()
    check(m["id"] == 8 and m["error"]["code"] == -32600, f"no jsonrpc member {m}")
    post({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"})
    m = next_message()
    check(m["id"] is None and m["error"]["code"] == -32600, f"bad id {m}")
    post(INIT)
    m = next_message()
    check(m["id"] == 1 and m["result"]["serverInfo"]["name"] == "svc", f"initialize {m}")
    post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    post({"jsonrpc": "2.0", "method": "notifications/whatever"})
    post({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"arguments": {}}})
    m = next_message()
    check(m["id"] == 9 and m["error"]["code"] == -32602, f"missing tool name {m}")
    post({"jsonrpc": "2.0", "id": 10, "method": "ping"})
    m = next_message()
    check(m == {"jsonrpc": "2.0", "id": 10, "result": {}}, f"notifications are not answered {m}")
    post([
        {"jsonrpc": "2.0", "id": 11, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 12, "method": "no/such"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": {"name": "run_svc", "arguments": {"code": "with entry { print(5); }"}}},
        5,
    ])
    m = next_message()
    check(isinstance(m, list) and len(m) == 4, f"batch answered as one array {m}")
    by_id = {x.get("id"): x for x in m}
    check(len(by_id[11]["result"]["tools"]) >= 18, "tools/list in a batch")
    check(by_id[12]["error"]["code"] == -32601, "unknown method in a batch")
    check(by_id[13]["result"]["structuredContent"]["stdout"] == "5\n", "tool call in a batch")
    check(by_id[None]["error"]["code"] == -32600, "invalid member of a batch")
    post([])
    m = next_message()
    check(m["error"]["code"] == -32600, f"empty batch {m}")
    post([{"jsonrpc": "2.0", "method": "notifications/initialized"}])
    post({"jsonrpc": "2.0", "id": 14, "method": "ping"})
    m = next_message()
    check(m.get("id") == 14, f"a batch of notifications gets no answer {m}")
    r = c.post(base + "/messages/?session_id=nope", content="{}")
    check(r.status_code == 404, f"unknown session {r.status_code}")
    r = c.post(base + "/messages/", content="{}")
    check(r.status_code == 400, f"missing session {r.status_code}")


def streamable(base):
    c = httpx2.Client(timeout=10)
    url = base + "/mcp"
    h = {"content-type": "application/json", "accept": "application/json, text/event-stream"}

    def post(body, headers=h):
        data = body if isinstance(body, str) else json.dumps(body)
        return c.post(url, content=data, headers=headers)

    def payload(r):
        if r.headers.get("content-type", "").startswith("text/event-stream"):
            for line in r.text.splitlines():
                if line.startswith("data:") and line[5:].strip():
                    return json.loads(line[5:])
            raise AssertionError(f"no data in {r.text!r}")
        return r.json()

    r = post("{not json")
    check(r.status_code == 400 and r.json()["error"]["code"] == -32700, f"parse error {r.status_code} {r.text}")
    r = post([INIT])
    check(r.status_code == 400 and r.json()["error"]["code"] == -32600, f"batch refused {r.text}")
    r = post({"id": 3, "method": "ping"})
    check(r.json()["error"]["code"] == -32600 and r.json()["id"] == 3, f"invalid request {r.text}")
    r = post({"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {}})
    check(r.json()["error"]["code"] == -32602 and r.json()["id"] == 4, f"missing uri {r.text}")
    r = post({"jsonrpc": "2.0", "id": 5, "method": "no/such"})
    check(r.json()["error"]["code"] == -32601, f"unknown method {r.text}")
    r = post(INIT)
    check(r.status_code == 200, f"initialize {r.status_code} {r.text}")
    sid = r.headers.get("mcp-session-id")
    check(sid, "session id header")
    check(payload(r)["result"]["serverInfo"]["name"] == "svc", "initialize result")
    hs = dict(h, **{"mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"})
    r = post({"jsonrpc": "2.0", "method": "notifications/initialized"}, hs)
    check(r.status_code == 202, f"notification accepted without an answer {r.status_code}")
    r = post({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "check_syntax", "arguments": {"code": "with entry { }"}}}, hs)
    check(payload(r)["result"]["structuredContent"]["valid"] is True, f"tool call {r.text}")
    r = c.delete(url, headers=hs)
    check(r.status_code in (200, 204), f"session closed {r.status_code}")


if __name__ == "__main__":
    try:
        (sse if sys.argv[1] == "sse" else streamable)(sys.argv[2])
    except Exception as e:  # noqa: BLE001
        print(f"FAILED: {type(e).__name__}: {e}")
        sys.exit(1)
    print("ok")
