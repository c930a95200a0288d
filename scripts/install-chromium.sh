#!/usr/bin/env bash
# Installs Debian's chromium for the HTML report test (headless rendering of index.html).
# Idempotent: does nothing when a Chromium is already on PATH. Exits non-zero when it cannot install
# (not root, no apt-get, no network); the test then skips and says why.
set -euo pipefail

for browser in chromium chromium-browser google-chrome; do
    if command -v "$browser" >/dev/null 2>&1; then
        exit 0
    fi
done
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-chromium: no apt-get on this machine; install Chromium yourself" >&2
    exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install-chromium: installing needs root: sudo apt-get install -y chromium" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; }
command -v chromium >/dev/null
