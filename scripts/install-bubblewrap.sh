#!/usr/bin/env bash
# Installs Debian's bubblewrap (bwrap), the OS sandbox every code-grader test
# program runs in, when it is missing, as .ci/run does; then checks that it can
# make the sandbox's namespaces here. Without apt-get or the rights to use it,
# or where the kernel refuses namespaces, it says that code graders will be
# refused (and their tests skipped outside CI) and exits 0.
set -euo pipefail
warn() {
  echo "install-bubblewrap: $1; code graders will be REFUSED and their tests (eval/code*_test.go) SKIPPED." >&2
  echo "install-bubblewrap: install it with 'sudo apt-get install bubblewrap'." >&2
  exit 0
}
if ! command -v bwrap >/dev/null; then
  command -v apt-get >/dev/null || warn "bwrap is missing and apt-get is not available"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo="sudo -n"; else warn "bwrap is missing and installing it needs root"; fi
  fi
  echo "install-bubblewrap: installing Debian's bubblewrap for the code grader's sandbox ..." >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq && $sudo apt-get install -y -qq bubblewrap || warn "apt-get could not install bubblewrap"
fi
bwrap --unshare-all --die-with-parent --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib \
  --symlink usr/lib64 /lib64 --proc /proc --dev /dev -- /usr/bin/true 2>/dev/null ||
  bwrap --unshare-ipc --unshare-pid --unshare-net --unshare-uts --die-with-parent --ro-bind /usr /usr --symlink usr/bin /bin \
    --symlink usr/lib /lib --symlink usr/lib64 /lib64 --proc /proc --dev /dev -- /usr/bin/true ||
  warn "bwrap cannot create namespaces on this machine"
