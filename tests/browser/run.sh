#!/usr/bin/env bash
# The tool's pages in a real headless Chromium: the guard's status page
# (tests/browser/status_page.py) and the page of `summary --html` (summary_page.py).
#
#   tests/browser/run.sh        build the tool, make a venv with Selenium, run the tests
#
# Needs Chromium and its driver (Debian: chromium, chromium-driver; .ci/run installs them).
# Without them it says so in one line and exits 0: the README's test command does not need
# a browser.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DRIVER="$(command -v chromedriver || true)"
BROWSER="$(command -v chromium || command -v chromium-browser || true)"
if [[ -z "$DRIVER" || -z "$BROWSER" ]]; then
    echo "browser test skipped: chromium and chromedriver are needed (Debian: apt-get install chromium chromium-driver)"
    exit 0
fi
VENV="$ROOT/target/browser-venv"
if [[ ! -x "$VENV/bin/python" ]]; then
    python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import selenium" 2>/dev/null; then
    "$VENV/bin/pip" install -q --disable-pip-version-check -r "$HERE/requirements.txt"
fi
(cd "$ROOT" && cargo build -q -p elect-leaders --bin elect-leaders)
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
for test in status_page summary_page summary_timeline; do
    ELECT_LEADERS_BIN="$TARGET_DIR/debug/elect-leaders" CHROMEDRIVER="$DRIVER" CHROME_BIN="$BROWSER" \
        "$VENV/bin/python" -u "$HERE/$test.py"
done
