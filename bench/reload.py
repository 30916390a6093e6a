"""The `reload` mode of bench/run.sh: hot reloads of a 1,000-agent config under load.

  reload.py gen CONFIG AGENTS
      writes CONFIG: bench/agents.yaml (the two nginx agents of the chat turn, paths made absolute)
      followed by AGENTS - 2 generated cards (distinct ids, names, descriptions, keywords; never
      called: their endpoint is nginx's /weather)
  reload.py run CONFIG URL [--reloads 100] [--trigger file|sighup] [--pid PID] [--write rename|inplace]
                [--gap 0.2] [--poll-ms 1] [--timeout 10] [--log SWITCHBOARD_LOG] [--load-until EPOCH]
      RELOADS times: rewrite CONFIG (even reloads change the description of one generated card,
      odd ones add or remove one more card: 1,000 <-> 1,001 agents), then poll GET /v1/config
      until its `version` is the next one, and time it from the write. `--write rename` writes a
      temporary file next to CONFIG and renames it over CONFIG (atomic; the clock starts when
      the rename returns); `inplace` truncates and writes CONFIG (the clock starts before the
      truncation). `--trigger sighup` (for a server started with --no-watch) sends SIGHUP to PID
      right after the write: the reload's own cost, without the file watcher's debounce.
      With `--log`, the server's "config reloaded" log lines give a second measure, write -> swap,
      without the polling's resolution. Prints median / p95 / max.

Stdlib only; every loop is bounded.
"""

import argparse
import calendar
import http.client
import json
import os
import random
import re
import signal
import statistics
import sys
import time
import urllib.parse

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]


def words(rng, count, used):
    """`count` distinct pseudo-words of 3-4 syllables, none in `used` (which they join)."""
    out = []
    while len(out) < count:
        w = "".join(rng.choice(SYLLABLES) for _ in range(rng.choice((3, 4))))
        if w not in used:
            used.add(w)
            out.append(w)
    return out


def fillers(count):
    """`count` generated cards as (id, name, description, keywords, example), deterministic."""
    rng, used, cards = random.Random(13), set(), []
    for i in range(count):
        name_w = words(rng, 2, used)
        kw = words(rng, 3, used)
        obj = words(rng, 2, used)
        cards.append((
            f"gen_{i:04}_{name_w[0]}",
            f"{name_w[0].capitalize()} {name_w[1].capitalize()}",
            f"Looks up {obj[0]} and {obj[1]} records in the {name_w[0]} register",
            kw,
            f"find the {kw[0]} {obj[0]} for reference 42",
        ))
    return cards


def card_yaml(card, description):
    cid, name, _, kw, example = card
    q = json.dumps
    return (
        f"  - id: {cid}\n"
        f"    name: {q(name)}\n"
        f"    description: {q(description)}\n"
        "    enabled: true\n"
        '    endpoint: { url: "http://127.0.0.1:18081/weather", protocol: http, timeout: 10s, retries: 0 }\n'
        f"    keywords: [{', '.join(kw)}]\n"
        f"    examples: [{q(example)}]\n"
        '    input_schema: { "type": "object", "properties": { "ref": { "type": "number" } } }\n'
        '    output_schema: { "type": "object" }\n'
        "    required_semantic_keys:\n"
        "      - { key: ref, description: reference number, extract: { type: number }, example: 42 }\n"
        "    produces: []\n"
    )


class Config:
    """The config's text as a function of its revision state."""

    def __init__(self, agents):
        base = open(os.path.join(BENCH, "agents.yaml"), encoding="utf-8").read()
        # bench/agents.yaml's paths are relative to bench/: make them absolute.
        self.base = re.sub(r"(:\s+)\.\./", lambda m: m.group(1) + ROOT + "/", base).rstrip("\n") + "\n"
        self.cards = fillers(agents - 2)
        self.extra = fillers(agents - 1)[-1]  # one more card, added and removed by odd reloads
        self.revised = {}  # card index -> reload number that last changed its description
        self.with_extra = False

    def text(self):
        parts = [self.base]
        for i, card in enumerate(self.cards):
            desc = card[2] + (f" (revision {self.revised[i]})" if i in self.revised else "")
            parts.append(card_yaml(card, desc))
        if self.with_extra:
            parts.append(card_yaml(self.extra, self.extra[2]))
        return "\n".join(parts)

    def step(self, n):
        """Reload number `n` (1-based): what it changes."""
        if n % 2 == 0:
            i = (n * 37) % len(self.cards)
            self.revised[i] = n
            return f"description of {self.cards[i][0]}"
        self.with_extra = not self.with_extra
        return ("added " if self.with_extra else "removed ") + self.extra[0]

    def agents(self):
        return 2 + len(self.cards) + (1 if self.with_extra else 0)


def write(path, text, how):
    """Writes `text` to `path`; returns the perf_counter and wall-clock times the clock starts at."""
    if how == "rename":
        tmp = os.path.join(os.path.dirname(path), ".agents_config.yaml.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
        return time.perf_counter(), time.time()
    start = time.perf_counter(), time.time()
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return start


class Api:
    """GET /v1/config over one keep-alive connection (reconnecting when it drops)."""

    def __init__(self, url):
        u = urllib.parse.urlsplit(url)
        self.host, self.port, self.conn = u.hostname, u.port, None
        self.polls, self.poll_time = 0, 0.0

    def get(self, path):
        for _ in range(3):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
                t = time.perf_counter()
                self.conn.request("GET", path)
                resp = self.conn.getresponse()
                body = resp.read()
                self.polls += 1
                self.poll_time += time.perf_counter() - t
                if resp.status == 200:
                    return json.loads(body)
            except (OSError, http.client.HTTPException):
                pass
            if self.conn is not None:
                self.conn.close()
            self.conn = None
            time.sleep(0.01)
        raise SystemExit(f"GET {path} failed three times")


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(p / 100 * len(xs) + 0.5) - 1))]


def summary(label, xs):
    if not xs:
        return f"{label}: none"
    return (f"{label}: median {statistics.median(xs):.1f} ms, p95 {pct(xs, 95):.1f} ms, max {max(xs):.1f} ms, "
            f"min {min(xs):.1f} ms (n={len(xs)})")


def swaps_from_log(log):
    """version -> wall-clock time of the server's 'config reloaded' line."""
    out = {}
    if not log or not os.path.exists(log):
        return out
    ansi = re.compile(r"\x1b\[[0-9;]*m")
    for line in open(log, encoding="utf-8", errors="replace"):
        line = ansi.sub("", line)
        if "config reloaded" not in line:
            continue
        ts = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z", line)
        ver = re.search(r"version=(\d+)", line)
        if ts and ver:
            secs = calendar.timegm(time.strptime(ts.group(1), "%Y-%m-%dT%H:%M:%S"))
            out[int(ver.group(1))] = secs + float(ts.group(2) or 0)
    return out


def run(a):
    cfg = Config(a.agents)
    api = Api(a.url)
    status = api.get("/v1/config")
    version = status["version"]
    if status.get("agents") not in (cfg.agents(), cfg.agents() + 1):
        raise SystemExit(f"the server has {status.get('agents')} agents, expected {cfg.agents()}: wrong config?")
    print(f"{cfg.agents()} agents, config {os.path.getsize(a.config) / 1024:.0f} KiB; trigger {a.trigger}, "
          f"write {a.write}, serving version {version}, {a.reloads} reloads {a.gap:.2f} s apart")
    served, writes, lost, late = [], {}, 0, 0
    for n in range(1, a.reloads + 1):
        change = cfg.step(n)
        text = cfg.text()
        t0, wall = write(a.config, text, a.write)
        if a.trigger == "sighup":
            os.kill(a.pid, signal.SIGHUP)
        writes[version + 1] = wall
        deadline = t0 + a.timeout
        while True:
            v = api.get("/v1/config")["version"]
            if v > version:
                dt = (time.perf_counter() - t0) * 1000
                break
            if time.perf_counter() > deadline:
                dt = None
                break
            time.sleep(a.poll_ms / 1000)
        if dt is None:
            lost += 1
            print(f"reload {n} ({change}): not served within {a.timeout} s", file=sys.stderr)
        else:
            if v != version + 1:
                print(f"reload {n}: version went {version} -> {v}", file=sys.stderr)
            served.append(dt)
            version = v
        if a.load_until and time.time() > a.load_until:
            late += 1
        time.sleep(a.gap)
    # What is served at the end is the last text written.
    agents = api.get("/v1/agents")
    want = cfg.agents()
    revised = {cfg.cards[i][0]: cfg.cards[i][2] + f" (revision {r})" for i, r in cfg.revised.items()}
    shown = {x["id"]: x["description"] for x in agents["agents"] if x["id"] in revised}
    ok = len(agents["agents"]) == want and shown == revised
    end = api.get("/v1/config")
    print(summary("write -> new version served (polled GET /v1/config)", served))
    swaps = swaps_from_log(a.log)
    logged = [(swaps[v] - w) * 1000 for v, w in writes.items() if v in swaps]
    if a.log:
        print(summary("write -> 'config reloaded' logged (server clock)", logged))
    print(f"reloads not served within {a.timeout} s: {lost}; GET /v1/config polls: {api.polls}, "
          f"mean {1000 * api.poll_time / max(api.polls, 1):.2f} ms each; final version {version}; "
          f"served registry matches the last write ({want} agents, {len(revised)} revised descriptions): "
          f"{'yes' if ok else 'NO'}; server counts since start: reloads_ok {end.get('reloads_ok')}, "
          f"reloads_failed {end.get('reloads_failed')}")
    if late:
        print(f"warning: {late} reloads ended after the load did (raise RELOAD_WRK_SECONDS)")


def main():
    if sys.argv[1] == "gen":
        cfg = Config(int(sys.argv[3]))
        with open(sys.argv[2], "w", encoding="utf-8") as f:
            f.write(cfg.text())
        return
    p = argparse.ArgumentParser()
    p.add_argument("cmd")
    p.add_argument("config")
    p.add_argument("url")
    p.add_argument("--agents", type=int, default=1000)
    p.add_argument("--reloads", type=int, default=100)
    p.add_argument("--trigger", choices=("file", "sighup"), default="file")
    p.add_argument("--pid", type=int)
    p.add_argument("--write", choices=("rename", "inplace"), default="rename")
    p.add_argument("--gap", type=float, default=0.2)
    p.add_argument("--poll-ms", type=float, default=1.0)
    p.add_argument("--timeout", type=float, default=10.0)
    p.add_argument("--log")
    p.add_argument("--load-until", type=float, default=0)
    run(p.parse_args())


if __name__ == "__main__":
    main()
