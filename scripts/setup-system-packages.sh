#!/bin/sh
# System packages some tests use: Debian's wordnet-base (WordNet 3.0 under /usr/share/wordnet, read by
# zstc.hypotheses.wordnet for the "definition" hypotheses) and chromium (renders the HTML report in its test). Installs only what is missing; where apt is unavailable or
# not permitted it says so and exits 0, and the tests that need WordNet skip with that reason.
set -u

missing=""
[ -f /usr/share/wordnet/data.noun ] || missing="$missing wordnet-base"
command -v chromium >/dev/null 2>&1 || missing="$missing chromium"

[ -z "$missing" ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup-system-packages: apt-get not found; not installing:$missing (tests needing them will skip)" >&2
    exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo -n"
    else
        echo "setup-system-packages: not root and no passwordless sudo; not installing:$missing (tests needing them will skip)" >&2
        exit 0
    fi
fi
# shellcheck disable=SC2086
$SUDO apt-get install -y --no-install-recommends $missing >/dev/null 2>&1 \
    || { $SUDO apt-get update >/dev/null 2>&1 && $SUDO apt-get install -y --no-install-recommends $missing >/dev/null 2>&1; } \
    || echo "setup-system-packages: could not install:$missing (tests needing them will skip)" >&2
exit 0
