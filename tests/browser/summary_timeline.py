"""The timeline of `elect-leaders summary --html` in a real headless Chromium (issue 36,
finding 6), on captures made here:

1. One response whose topic `mixed` has 3 partitions elected and 1 failed, another whose
   topic `calm` has 3 elected and 1 ELECTION_NOT_NEEDED: the page's counts are those of the
   timeline's colours (6 elected, 1 not needed, 1 failed), and each dot's tooltip counts its
   partitions by outcome (it said "failed (4 partitions)").
2. 1,200 responses of 100 elected topics each (120,000 results, past the 100,000 dots the
   timeline draws), then one failure 20 s in: the page says, visibly, that it thinned its
   dots; the failure is drawn; the axis runs to the last frame, and the failure's dot is at
   its end (the axis ended at the 100,000th result).

Run by tests/browser/run.sh, which makes the venv; ELECT_LEADERS_BIN names the binary.
"""

import os
import struct
import subprocess
import sys
import tempfile

from selenium.webdriver.common.by import By

from summary_page import browser, console_errors

BIN = os.environ["ELECT_LEADERS_BIN"]
CLIENT, SERVER = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
CPORT, SPORT = 50000, 9092
SYN, FIN, PSH, ACK = 0x02, 0x01, 0x08, 0x10


def string(s):
    return struct.pack(">h", len(s)) + s


def request_v1(correlation_id):
    """ElectLeaders v1 (PREFERRED), partition 0 of topic `asked`."""
    body = struct.pack(">hhi", 43, 1, correlation_id) + string(b"admin")
    body += struct.pack(">b", 0)
    body += struct.pack(">i", 1) + string(b"asked") + struct.pack(">ii", 1, 0)
    body += struct.pack(">i", 30000)
    return struct.pack(">i", len(body)) + body


def response_v1(correlation_id, results):
    """ElectLeaders v1 response; `results`: [(topic, [error code of partition 0, 1, ...])]."""
    body = struct.pack(">iih", correlation_id, 0, 0) + struct.pack(">i", len(results))
    for topic, codes in results:
        body += string(topic) + struct.pack(">i", len(codes))
        for p, code in enumerate(codes):
            body += struct.pack(">ihh", p, code, -1)
    return struct.pack(">i", len(body)) + body


def packet(src, dst, sport, dport, seq, ack, flags, payload):
    tcp = struct.pack(">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF,
                      0x50, flags, 65535, 0, 0) + payload
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 1, 0x4000, 64, 6, 0, src, dst)
    return ip + tcp


def capture(path, exchanges):
    """A pcap (raw IPv4, µs) of one connection: each (ms, results) is a request at ms and
    its answer a millisecond later."""
    cseq, sseq = 1000, 5000
    packets = [(0, packet(CLIENT, SERVER, CPORT, SPORT, cseq, 0, SYN, b"")),
               (0, packet(SERVER, CLIENT, SPORT, CPORT, sseq, cseq + 1, SYN | ACK, b""))]
    cseq, sseq = cseq + 1, sseq + 1
    last = 0
    for k, (ms, results) in enumerate(exchanges):
        req, resp = request_v1(k + 1), response_v1(k + 1, results)
        packets.append((ms, packet(CLIENT, SERVER, CPORT, SPORT, cseq, sseq, ACK | PSH, req)))
        cseq += len(req)
        packets.append((ms + 1, packet(SERVER, CLIENT, SPORT, CPORT, sseq, cseq, ACK | PSH, resp)))
        sseq += len(resp)
        last = ms + 1
    packets.append((last, packet(CLIENT, SERVER, CPORT, SPORT, cseq, sseq, FIN | ACK, b"")))
    packets.append((last, packet(SERVER, CLIENT, SPORT, CPORT, sseq, cseq + 1, FIN | ACK, b"")))
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 101))
        for ms, data in packets:
            secs, usec = 1_800_000_000 + ms // 1000, (ms % 1000) * 1000
            f.write(struct.pack("<IIII", secs, usec, len(data), len(data)) + data)


def page_of(tmp, name, exchanges):
    pcap = os.path.join(tmp, name + ".pcap")
    capture(pcap, exchanges)
    html = os.path.join(tmp, name + ".html")
    subprocess.run([BIN, "summary", "--html", html, pcap], check=True)
    return html


def text_of(driver, id_):
    """The text of the element with this id; None when the page has none."""
    found = driver.find_elements(By.ID, id_)
    return found[0].text if found else None


def title_of(element):
    return element.find_element(By.TAG_NAME, "title").get_attribute("textContent")


def check_counts(driver, path):
    failures = []
    driver.get("file://" + path)
    text = lambda id_: text_of(driver, id_)
    for id_, want in (("elected-partitions", "6"), ("not-needed-partitions", "1"),
                      ("failed-partitions", "1")):
        if text(id_) != want:
            failures.append("#%s is %r, expected %r" % (id_, text(id_), want))
    dots = {d.get_attribute("class"): d for d in
            driver.find_elements(By.CSS_SELECTOR, "#timeline circle")}
    want = {
        "failed": "failed: 3 elected, 0 not needed, 1 failed (4 partitions)",
        "not-needed": "not needed: 3 elected, 1 not needed, 0 failed (4 partitions)",
    }
    for cls, says in want.items():
        dot = dots.get(cls)
        if dot is None or not dot.is_displayed():
            failures.append("no %s dot shown" % cls)
        elif says not in title_of(dot):
            failures.append("the %s dot says %r" % (cls, title_of(dot)))
    failed_rows = driver.find_elements(By.CSS_SELECTOR, "#failed tr")
    if len(failed_rows) != 2:  # its heading and the failure
        failures.append("the failed table has %d rows" % len(failed_rows))
    errors = console_errors(driver)
    if errors:
        failures.append("console errors: %r" % errors)
    return failures, 7


def check_thinned(driver, path):
    failures = []
    driver.get("file://" + path)
    thinned = driver.find_elements(By.ID, "timeline-thinned")
    if not thinned or not thinned[0].is_displayed():
        failures.append("the page does not say it thinned its dots")
    elif "one in 4 drawn (30000 of 120000)" not in thinned[0].text:
        failures.append("thinned: %r" % thinned[0].text)
    if text_of(driver, "timeline-results") != "120001":
        failures.append("#timeline-results is %r" % text_of(driver, "timeline-results"))
    failed = driver.find_elements(By.CSS_SELECTOR, "#timeline circle.failed")
    ends = driver.find_elements(By.ID, "timeline-axis-end")
    if not ends or ends[0].text != "+19.991000 s" or not ends[0].is_displayed():
        failures.append("the axis ends at %r" % (ends[0].text if ends else None))
    elif len(failed) != 1 or not failed[0].is_displayed():
        failures.append("%d failed dots shown" % len(failed))
    else:
        # The failure is the last frame: its dot is at the axis' end (x = 220 + 640).
        cx = float(failed[0].get_attribute("cx"))
        if abs(cx - 860.0) > 0.5:
            failures.append("the failure is drawn at x=%s, not at the axis' end" % cx)
        dot = failed[0].rect
        label = ends[0].rect
        if abs((dot["x"] + dot["width"] / 2) - (label["x"] + label["width"])) > 2:
            failures.append("the failure's dot (%r) is not under the axis' end (%r)" % (dot, label))
    errors = console_errors(driver)
    if errors:
        failures.append("console errors: %r" % errors)
    return failures, 7


def main():
    with tempfile.TemporaryDirectory() as tmp:
        counts = page_of(tmp, "counts", [
            (10, [(b"mixed", [0, 0, 0, 80])]),
            (20, [(b"calm", [0, 0, 0, 84])]),
        ])
        flood = [(b"topic-%d" % t, [0]) for t in range(100)]
        exchanges = [(10 + 10 * k, flood) for k in range(1200)]
        exchanges.append((20000, [(b"topic-7", [0, 80])]))
        thinned = page_of(tmp, "thinned", exchanges)
        driver = browser(tmp)
        try:
            failures, n1 = check_counts(driver, counts)
            more, n2 = check_thinned(driver, thinned)
            failures += more
            if failures:
                for f in failures:
                    print("FAIL:", f)
                return 1
            print("summary timeline: %d checks passed in %s" %
                  (n1 + n2, driver.capabilities.get("browserVersion")))
            return 0
        finally:
            driver.quit()


if __name__ == "__main__":
    sys.exit(main())
