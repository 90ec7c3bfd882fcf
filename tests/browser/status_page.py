"""The guard's status page (`elect-leaders proxy --metrics-listen`, `/status`) in a real
headless Chromium, driven by Selenium: it loads with no console error and shows the counts
this test produced.

The broker is a **fake broker** (a few lines below: it answers every request with its
correlation id alone); the guard refuses the test's unclean election itself
(--deny-unclean), so the fake never has to speak ElectLeaders. Run by tests/browser/run.sh,
which makes the venv; ELECT_LEADERS_BIN names the binary.
"""

import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

BIN = os.environ["ELECT_LEADERS_BIN"]
TIMEOUT = 20


def fake_broker():
    """Answers each request with its correlation id; returns its address."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def serve(conn):
        with conn:
            while True:
                head = recv_exact(conn, 4)
                if head is None:
                    return
                body = recv_exact(conn, struct.unpack(">i", head)[0])
                if body is None:
                    return
                conn.sendall(struct.pack(">i", 4) + body[4:8])

    def accept():
        while True:
            conn, _ = server.accept()
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return server.getsockname()


def recv_exact(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def string(s):
    return struct.pack(">h", len(s)) + s


def unclean_election(correlation_id, topic, partitions):
    """An ElectLeaders v1 request (UNCLEAN) for `partitions` of `topic`."""
    body = struct.pack(">hhi", 43, 1, correlation_id) + string(b"status-page-test")
    body += struct.pack(">b", 1)  # UNCLEAN
    body += struct.pack(">i", 1) + string(topic)
    body += struct.pack(">i", len(partitions)) + b"".join(struct.pack(">i", p) for p in partitions)
    body += struct.pack(">i", 30000)
    return struct.pack(">i", len(body)) + body


def main():
    broker = fake_broker()
    with tempfile.TemporaryDirectory() as tmp:
        guard = subprocess.Popen(
            [BIN, "proxy", "--listen", "127.0.0.1:0", "--upstream", "%s:%d" % broker,
             "--deny-unclean", "--protect-topic", "payments", "--metrics-listen", "127.0.0.1:0",
             "--audit-log", os.path.join(tmp, "audit.jsonl")],
            stdout=subprocess.PIPE, stderr=open(os.path.join(tmp, "guard.log"), "w"), text=True)
        try:
            listen = metrics = None
            deadline = time.time() + TIMEOUT
            while (listen is None or metrics is None) and time.time() < deadline:
                line = guard.stdout.readline()
                if line.startswith("listening "):
                    listen = line.split()[1]
                elif line.startswith("metrics "):
                    metrics = line.split()[1]
            assert listen and metrics, "the guard did not say where it listens"
            host, port = listen.rsplit(":", 1)

            # Two refused elections: 3 partitions, then 2.
            with socket.create_connection((host, int(port)), timeout=TIMEOUT) as c:
                for cid, parts in ((1, [0, 1, 2]), (2, [0, 1])):
                    c.sendall(unclean_election(cid, b"orders", parts))
                    size = struct.unpack(">i", recv_exact(c, 4))[0]
                    answer = recv_exact(c, size)
                    assert struct.unpack(">i", answer[:4])[0] == cid

            options = Options()
            for arg in ("--headless=new", "--no-sandbox", "--disable-gpu",
                        "--disable-dev-shm-usage", "--user-data-dir=" + os.path.join(tmp, "chrome")):
                options.add_argument(arg)
            options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
            binary = os.environ.get("CHROME_BIN")
            if binary:
                options.binary_location = binary
            service = Service(os.environ.get("CHROMEDRIVER", "chromedriver"))
            driver = webdriver.Chrome(options=options, service=service)
            try:
                driver.set_page_load_timeout(TIMEOUT)
                driver.get("http://%s/status" % metrics)
                text = lambda id_: driver.find_element(By.ID, id_).text
                checks = {
                    "refused": "2",
                    "refused-partitions": "5",
                    "forwarded": "0",
                    "connections-accepted": "1",
                }
                failures = []
                for id_, want in checks.items():
                    got = text(id_)
                    if got != want:
                        failures.append("#%s is %r, expected %r" % (id_, got, want))
                rules = driver.find_element(By.ID, "rules").text
                if "payments" not in rules or "deny-unclean true" not in rules:
                    failures.append("the rules table does not show the rules: %r" % rules)
                rows = driver.find_elements(By.CSS_SELECTOR, "#decisions tr")
                if len(rows) != 3:  # the header and two decisions
                    failures.append("%d rows in the decisions table" % len(rows))
                errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
                if errors:
                    failures.append("console errors: %r" % errors)
                if failures:
                    for f in failures:
                        print("FAIL:", f)
                    print(driver.page_source)
                    return 1
                print("status page: %d checks passed in %s" % (len(checks) + 3, driver.capabilities.get("browserVersion")))
                return 0
            finally:
                driver.quit()
        finally:
            guard.terminate()
            try:
                guard.wait(10)
            except subprocess.TimeoutExpired:
                guard.kill()


if __name__ == "__main__":
    sys.exit(main())
