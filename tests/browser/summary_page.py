"""`elect-leaders summary --html` in a real headless Chromium, driven by Selenium.

1. The page of corpus/captures/elect-leaders-kafka-4.4.pcap loads with no console error
   and shows the counts of that capture. The expected counts are not written here: they
   are counted from `elect-leaders decode --all` of the same file (one JSON object per
   frame), a different path through the tool than the summary's tallies.
2. The page of a file holding an ElectLeaders request for a topic named
   `<script>alert(1)</script>` (its client id markup too) shows those names as text: no
   script element, no alert, no console error.

Run by tests/browser/run.sh, which makes the venv; ELECT_LEADERS_BIN names the binary.
"""

import collections
import json
import os
import struct
import subprocess
import sys
import tempfile

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

BIN = os.environ["ELECT_LEADERS_BIN"]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CAPTURE = os.path.join(ROOT, "corpus", "captures", "elect-leaders-kafka-4.4.pcap")
TIMEOUT = 20
XSS_TOPIC = "<script>alert(1)</script>"
XSS_CLIENT = "<img src=x onerror=alert(2)>"


def expected_from_decode():
    """The counts the page must show, from `decode --all` of the capture."""
    out = subprocess.run([BIN, "decode", "--all", CAPTURE], check=True,
                         capture_output=True, text=True).stdout
    objects = [json.loads(line) for line in out.splitlines()]
    elect = [o for o in objects if o.get("api_key") == 43]
    outcomes = collections.Counter()
    for o in elect:
        for t in o.get("replica_election_results", []):
            for p in t["partition_result"]:
                outcomes[p["error_name"]] += 1
    return {
        "frames": len(objects),
        "connections": len({o["source"]["connection"] for o in objects}),
        "elect_requests": sum(1 for o in elect if o["kind"] == "request"),
        "elect_responses": sum(1 for o in elect if o["kind"] == "response"),
        # As the timeline colours them: ELECTION_NOT_NEEDED is "not needed", not failed.
        "elected_partitions": outcomes.get("NONE", 0),
        "not_needed_partitions": outcomes.get("ELECTION_NOT_NEEDED", 0),
        "failed_partitions": sum(n for name, n in outcomes.items()
                                 if name not in ("NONE", "ELECTION_NOT_NEEDED")),
        "outcomes": dict(outcomes),
        "client_ids": sorted({o["client_id"] for o in elect if o["kind"] == "request"}),
        "paired": sum(1 for o in elect if "latency_us" in o["source"]),
    }


def string(s):
    return struct.pack(">h", len(s)) + s


def request_frame(topic, client_id):
    """An ElectLeaders v1 request (PREFERRED) for partition 0 of `topic`."""
    body = struct.pack(">hhi", 43, 1, 7) + string(client_id)
    body += struct.pack(">b", 0)
    body += struct.pack(">i", 1) + string(topic) + struct.pack(">ii", 1, 0)
    body += struct.pack(">i", 30000)
    return struct.pack(">i", len(body)) + body


def make_page(tmp, name, args):
    path = os.path.join(tmp, name)
    subprocess.run([BIN, "summary", "--html", path] + args, check=True)
    return path


def browser(tmp):
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
    driver.set_page_load_timeout(TIMEOUT)
    return driver


def console_errors(driver):
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def check_capture_page(driver, path, want):
    failures = []
    driver.get("file://" + path)
    text = lambda id_: driver.find_element(By.ID, id_).text
    checks = {
        "frames": want["frames"],
        "connections": want["connections"],
        "elect-requests": want["elect_requests"],
        "elect-responses": want["elect_responses"],
        "elected-partitions": want["elected_partitions"],
        "not-needed-partitions": want["not_needed_partitions"],
        "failed-partitions": want["failed_partitions"],
        "latency-paired": want["paired"],
        "timeline-dots": want["elect_responses"],  # one topic per response here
    }
    for id_, value in checks.items():
        if text(id_) != str(value):
            failures.append("#%s is %r, expected %r" % (id_, text(id_), value))
    shown = {}
    for row in driver.find_elements(By.CSS_SELECTOR, "#outcomes tr[data-code]"):
        name = row.find_element(By.CLASS_NAME, "error-name").text
        shown[name] = int(row.find_element(By.CLASS_NAME, "partitions").text)
    if shown != want["outcomes"]:
        failures.append("outcomes %r, expected %r" % (shown, want["outcomes"]))
    clients = sorted(json.loads(td.text) for td in
                     driver.find_elements(By.CSS_SELECTOR, "#client-ids td.client-id"))
    if clients != want["client_ids"]:
        failures.append("client ids %r, expected %r" % (clients, want["client_ids"]))
    dots = driver.find_elements(By.CSS_SELECTOR, "#timeline circle")
    if len(dots) != want["elect_responses"] or not all(d.is_displayed() for d in dots):
        failures.append("%d timeline dots shown" % len(dots))
    bars = driver.find_elements(By.CSS_SELECTOR, "#latency-histogram rect.bar")
    if not bars:
        failures.append("no latency histogram")
    errors = console_errors(driver)
    if errors:
        failures.append("console errors: %r" % errors)
    return failures, len(checks) + 5


def check_escaping_page(driver, path):
    failures = []
    driver.get("file://" + path)
    try:
        alert = driver.switch_to.alert
        failures.append("an alert opened: %r" % alert.text)
        alert.dismiss()
    except NoAlertPresentException:
        pass
    if driver.find_elements(By.TAG_NAME, "script"):
        failures.append("the page has a script element")
    if driver.find_elements(By.TAG_NAME, "img"):
        failures.append("the page has an img element")
    topics = [td.text for td in driver.find_elements(By.CSS_SELECTOR, "#topics td.topic")]
    if topics != [json.dumps(XSS_TOPIC)]:
        failures.append("topics shown %r" % topics)
    clients = [td.text for td in driver.find_elements(By.CSS_SELECTOR, "#client-ids td.client-id")]
    if clients != [json.dumps(XSS_CLIENT)]:
        failures.append("client ids shown %r" % clients)
    errors = console_errors(driver)
    if errors:
        failures.append("console errors: %r" % errors)
    return failures, 6


def main():
    want = expected_from_decode()
    with tempfile.TemporaryDirectory() as tmp:
        capture_page = make_page(tmp, "capture.html", [CAPTURE])
        frames = os.path.join(tmp, "xss.bin")
        with open(frames, "wb") as f:
            f.write(request_frame(XSS_TOPIC.encode(), XSS_CLIENT.encode()))
        xss_page = make_page(tmp, "xss.html", [frames])
        driver = browser(tmp)
        try:
            failures, n1 = check_capture_page(driver, capture_page, want)
            more, n2 = check_escaping_page(driver, xss_page)
            failures += more
            if failures:
                for f in failures:
                    print("FAIL:", f)
                return 1
            print("summary page: %d checks passed in %s" %
                  (n1 + n2, driver.capabilities.get("browserVersion")))
            return 0
        finally:
            driver.quit()


if __name__ == "__main__":
    sys.exit(main())
