"""musterd's status page in a real browser: Debian's headless Chromium.

A job of three agents joins a real musterd started with --metrics-port. The page
at / is loaded by `chromium --headless --dump-dom` and its DOM read: three member
rows and the generation. Then one agent is killed (SIGKILL, by PID) while a
Chromium driven by chromedriver (WebDriver over HTTP, from the standard library)
keeps the page open: within 2 s the page's DOM shows that node dead and the new
generation in the timeline. The time is measured and printed.

A screenshot of the page is taken after the kill; MUSTER_STATUS_PAGE_SCREENSHOT
names where (docs/images/status_page.png is made this way), else a temporary file.

Skips, saying why, when chromium or chromedriver is not installed
(scripts/install-deps.sh installs both).
"""
import html.parser
import json
import os
import re
import shutil
import signal
import time
import urllib.error
import urllib.request

from elastic_harness import start_musterd, start_agent
from harness import (MUSTER, SOURCE_DIR, Skip, base_env, check, free_port, run, run_tests, start,
                     tempdir, test, wait_for)

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
# What the page must show within this long of a node's death (the bound).
DEAD_SHOWN_WITHIN_S = 2.0


def need_browser(driver=False):
    if CHROMIUM is None:
        raise Skip("chromium is not installed (apt-get install chromium)")
    if driver and CHROMEDRIVER is None:
        raise Skip("chromedriver is not installed (apt-get install chromium-driver)")


def chromium_args(profile):
    # --no-sandbox: tests run as root in containers, where the sandbox cannot start.
    # No crash reporter: its handler leaves the process group, out of the harness's reach.
    return ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--no-first-run", "--hide-scrollbars", "--disable-breakpad", "--disable-crash-reporter",
            f"--user-data-dir={profile}"]


def chromium(args, timeout=90):
    code, out, err = run([CHROMIUM] + chromium_args(tempdir()) + args, timeout=timeout)
    check(code == 0, f"chromium exited {code}", err[-3000:])
    return out


class PageDom(html.parser.HTMLParser):
    """What a test reads from the page's DOM: node rows, generation marks, the run."""

    def __init__(self, text):
        super().__init__()
        self.rows = {}  # data-node -> data-state
        self.generations = []  # (data-generation, data-reason) in timeline order
        self.runs = {}  # data-run -> data-generation
        self.facts = {}  # fact class (run-goodput, ...) -> data-value
        self.compute = {}  # data-node -> (data-compute, data-slow-ranks)
        self.stood_still = {}  # data-generation -> data-stood-still (ms)
        self._row = None
        self.ready = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "tr" and "node" in classes:
            self.rows[a["data-node"]] = a["data-state"]
            self._row = a["data-node"]
        elif tag == "td" and "compute" in classes:
            self.compute[self._row] = (a.get("data-compute"), a.get("data-slow-ranks"))
        elif tag == "div" and "fact" in classes:
            self.facts[[c for c in classes if c != "fact"][0]] = a.get("data-value")
        elif tag == "g" and "gen-mark" in classes:
            self.generations.append((int(a["data-generation"]), a["data-reason"]))
            if a.get("data-stood-still"):
                self.stood_still[int(a["data-generation"])] = int(a["data-stood-still"])
        elif tag == "section" and "run" in classes:
            self.runs[a["data-run"]] = int(a["data-generation"])
        elif tag == "body":
            self.ready = a.get("data-ready") == "true"


class WebDriver:
    """A Chromium session through chromedriver's W3C WebDriver HTTP API."""

    def __init__(self):
        self.proc = start([CHROMEDRIVER, "--port=0"])
        line = ""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "started successfully" not in line:
            line = self.proc.stdout.readline()
            if line == "" and self.proc.poll() is not None:
                raise AssertionError(f"chromedriver exited: {self.proc.stderr.read()[-2000:]}")
        port = re.search(r"on port (\d+)", line)
        check(port is not None, f"chromedriver did not say its port: {line!r}")
        self.base = f"http://127.0.0.1:{port.group(1)}"
        caps = {"capabilities": {"alwaysMatch": {"goog:chromeOptions": {
            "binary": CHROMIUM, "args": chromium_args(tempdir()) + ["--window-size=1280,900"]}}}}
        self.session = self._call("POST", "/session", caps)["sessionId"]

    def _call(self, method, path, body=None):
        data = json.dumps(body if body is not None else {}).encode() if method == "POST" else None
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as reply:
                return json.loads(reply.read())["value"]
        except urllib.error.HTTPError as error:
            raise AssertionError(f"webdriver {method} {path}: {error.read()[:2000]!r}") from None

    def open(self, url):
        self._call("POST", f"/session/{self.session}/url", {"url": url})

    def dom(self):
        """The page's DOM as it is now (document.documentElement.outerHTML), parsed."""
        text = self._call("POST", f"/session/{self.session}/execute/sync",
                          {"script": "return document.documentElement.outerHTML;", "args": []})
        return PageDom(text)

    def close(self):
        try:
            self._call("DELETE", f"/session/{self.session}")
        except Exception:  # noqa: BLE001 - the harness kills the driver by PID anyway
            pass


def three_node_job():
    """musterd with --metrics-port and three agents of two long-running workers each;
    returns (page URL, agents) once generation 1 has formed."""
    metrics_port = free_port()
    daemon, port = start_musterd(extra=["--metrics-port", str(metrics_port)])
    out = tempdir()
    agents = [start_agent(port, out, nnodes="2:3", nproc=2, run_id="train") for _ in range(3)]
    base = f"http://127.0.0.1:{metrics_port}"

    def document():
        try:
            with urllib.request.urlopen(base + "/status.json", timeout=2) as reply:
                return json.loads(reply.read())
        except (OSError, ValueError):
            return None

    def formed():
        doc = document()
        return bool(doc and doc["runs"] and doc["runs"][0]["generation"] == 1
                    and doc["runs"][0]["counts"]["member"] == 3)

    check(wait_for(formed, 30, interval=0.1), "generation 1 of 3 nodes never formed",
          json.dumps(document()))
    return base + "/", agents


def node_of(agent):
    """The node id an agent joined with: HOST:PID:NONCE (launcher/agent/agent_elastic.cc)."""
    return f":{agent.pid}:"


@test
def the_page_shows_three_members_then_a_killed_node_dead_within_2s():
    need_browser(driver=True)
    url, agents = three_node_job()

    # The page as one headless load draws it (virtual time lets its first poll land).
    dom = PageDom(chromium(["--virtual-time-budget=5000", "--dump-dom", url]))
    check(dom.ready, "the page never drew /status.json")
    check(dom.runs == {"train": 1}, f"runs shown: {dom.runs}")
    check(sorted(dom.rows.values()) == ["member"] * 3, f"rows: {dom.rows}")
    check(dom.generations == [(1, "joined")], f"timeline: {dom.generations}")
    for agent in agents:
        check(any(node_of(agent) in node for node in dom.rows), f"agent {agent.pid} has no row")

    browser = WebDriver()
    try:
        browser.open(url)
        check(wait_for(lambda: len(browser.dom().rows) == 3, 20, interval=0.1),
              "the driven page never showed three nodes")
        victim = agents[1]
        killed_at = time.monotonic()
        os.kill(victim.pid, signal.SIGKILL)
        seen = {}

        def shows_dead_and_new_generation():
            dom = browser.dom()
            dead = [n for n, s in dom.rows.items() if s == "dead" and node_of(victim) in n]
            if dead and "dead" not in seen:
                seen["dead"] = time.monotonic() - killed_at
            if (2, "node lost") in dom.generations and "generation" not in seen:
                seen["generation"] = time.monotonic() - killed_at
            seen["dom"] = dom
            return "dead" in seen and "generation" in seen

        shown = wait_for(shows_dead_and_new_generation, 10, interval=0.05)
        dom = seen.get("dom")
        print(f"status page: killed node shown dead after {seen.get('dead', float('nan')):.2f} s, "
              f"generation 2 after {seen.get('generation', float('nan')):.2f} s "
              f"(bound {DEAD_SHOWN_WITHIN_S} s)", flush=True)
        check(shown, "the page never showed the node dead and generation 2",
              f"rows {dom.rows if dom else None}, timeline {dom.generations if dom else None}")
        check(max(seen["dead"], seen["generation"]) <= DEAD_SHOWN_WITHIN_S,
              f"shown after {seen['dead']:.2f} s (dead) and {seen['generation']:.2f} s "
              f"(generation), over {DEAD_SHOWN_WITHIN_S} s")
        states = sorted(dom.rows.values())
        check(states == ["dead", "member", "member"], f"rows after the kill: {dom.rows}")
        check(dom.runs == {"train": 2}, f"runs after the kill: {dom.runs}")
    finally:
        browser.close()

    shot = os.environ.get("MUSTER_STATUS_PAGE_SCREENSHOT") or os.path.join(tempdir(), "page.png")
    chromium(["--virtual-time-budget=5000", f"--screenshot={os.path.abspath(shot)}",
              "--window-size=1280,900", url])
    check(os.path.getsize(shot) > 1000, f"no screenshot at {shot}")
    print(f"screenshot: {shot} ({os.path.getsize(shot)} bytes)", flush=True)


COMPUTE_WORKER = os.path.join(SOURCE_DIR, "tests", "integration", "compute_worker.py")


@test
def the_page_shows_the_slow_rank_the_goodput_and_the_standstill():
    # Two nodes of two ranks stepping together, rank 3 reporting twice the
    # others' compute time (tests/integration/compute_worker.py).
    need_browser()
    metrics_port = free_port()
    _, port = start_musterd(extra=["--metrics-port", str(metrics_port)])
    for _ in range(2):
        start([MUSTER, "--nnodes", "2", "--nproc-per-node", "2", "--rdzv-backend", "c10d",
               "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", "computejob",
               "--rdzv-conf", "last_call_timeout=0.5", "--local-addr", "127.0.0.1",
               COMPUTE_WORKER, "0.05", "60", "20000", "3"], env=base_env())
    base = f"http://127.0.0.1:{metrics_port}"
    seen = {}

    def slow_rank_known():
        try:
            with urllib.request.urlopen(base + "/status.json", timeout=2) as reply:
                seen["doc"] = json.loads(reply.read())
        except (OSError, ValueError):
            return False
        runs = seen["doc"]["runs"]
        return bool(runs and [r["rank"] for r in runs[0].get("slow_ranks", [])] == [3])

    check(wait_for(slow_rank_known, 40, interval=0.5), "rank 3 never slow in /status.json",
          json.dumps(seen.get("doc")))
    dom = PageDom(chromium(["--virtual-time-budget=5000", "--dump-dom", base + "/"]))
    check(dom.ready, "the page never drew /status.json")
    check(dom.facts.get("run-slow-ranks", "").startswith("3 ("), f"facts: {dom.facts}")
    goodput = dom.facts.get("run-goodput", "")
    check(re.fullmatch(r"\d+\.\d %", goodput) and 0 < float(goodput[:-2]) <= 100,
          f"facts: {dom.facts}")
    check(dom.facts.get("run-median-compute") == "20.0 ms", f"facts: {dom.facts}")
    marked = {node: cells for node, cells in dom.compute.items() if cells[1]}
    check(list(marked.values()) == [("40", "3")], f"compute cells: {dom.compute}")
    check(dom.rows[list(marked)[0]] == "straggler", f"rows: {dom.rows}")
    check(1 in dom.stood_still and dom.stood_still[1] > 0, f"standstill: {dom.stood_still}")
    print(f"page: facts {dom.facts}, compute {dom.compute}, standstill {dom.stood_still}",
          flush=True)


@test
def the_page_fetches_nothing_but_status_json():
    # Self-contained: no script, style, font or image from anywhere, the daemon included.
    url, _ = three_node_job()
    with urllib.request.urlopen(url, timeout=5) as reply:
        check(reply.headers.get_content_type() == "text/html", f"type {reply.headers}")
        page = reply.read().decode()
    # The SVG namespace is a name, not an address anything is fetched from.
    page = page.replace('"http://www.w3.org/2000/svg"', "")
    for pattern in (r"\bsrc=", r"\bhref=", r"<link\b", r"@import", r"url\(", r"<img\b",
                    r"https?://"):
        check(re.search(pattern, page) is None, f"the page refers elsewhere: {pattern}")
    check("status.json" in page, "the page does not poll status.json")


if __name__ == "__main__":
    run_tests()
