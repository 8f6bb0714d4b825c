#!/usr/bin/env bash
# Installs Debian's chromium (the web UI's browser tests drive it) when it is
# missing, as .ci/run does; without apt-get or the rights to use it, it says that
# the browser test will be skipped and how to install chromium, and exits 0.
set -euo pipefail
if [ -n "${CHROMIUM_PATH:-}" ] && [ -x "$CHROMIUM_PATH" ]; then exit 0; fi
[ -x /usr/bin/chromium ] && exit 0
command -v chromium >/dev/null && exit 0

skip() {
  echo "install-chromium: $1; the browser test (web/browser_test.go) will be SKIPPED." >&2
  echo "install-chromium: install it with 'sudo apt-get install chromium' or set CHROMIUM_PATH to a Chrome/Chromium binary." >&2
  exit 0
}
command -v apt-get >/dev/null || skip "chromium is missing and apt-get is not available"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo="sudo -n"; else skip "chromium is missing and installing it needs root"; fi
fi
echo "install-chromium: installing Debian's chromium for the browser test ..." >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq && $sudo apt-get install -y -qq chromium || skip "apt-get could not install chromium"
