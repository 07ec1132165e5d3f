#!/usr/bin/env bash
# Make sure Debian's Chromium is present for the browser test (tests/test_browser_*.py).
# Installs it with apt-get when running as root on a Debian/Ubuntu machine; otherwise it only
# says how (the browser test then skips, printing the same advice).
set -uo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "[setup] installing Debian's chromium for the browser test"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq chromium >/dev/null && exit 0
    echo "[setup] could not install chromium with apt-get" >&2
    exit 1
fi
echo "[setup] /usr/bin/chromium is missing: run 'sudo apt-get install chromium' to enable the browser test" >&2
exit 0
