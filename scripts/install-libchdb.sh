#!/usr/bin/env bash
# Installs libchdb.so (the embedded ClickHouse engine used by the default store)
# from the npm package @chdb/lib-linux-x64-gnu, once, to a fixed path.
# Usage: scripts/install-libchdb.sh VERSION TARGET
set -euo pipefail
version=${1:-26.7.3-stable.1}
target=${2:-/usr/local/lib/libchdb.so}

if [ -s "$target" ]; then
  exit 0
fi
case "$(uname -sm)" in
  "Linux x86_64") pkg=@chdb/lib-linux-x64-gnu ;;
  *) echo "install-libchdb: no prebuilt libchdb package for $(uname -sm); build chDB or set CHDB_LIB_PATH" >&2; exit 1 ;;
esac
command -v npm >/dev/null || { echo "install-libchdb: npm is needed to fetch $pkg (apt-get install npm)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "install-libchdb: fetching $pkg@$version (about 180 MB) ..." >&2
(cd "$work" && npm pack --silent "$pkg@$version" >/dev/null)
tar -xzf "$work"/*.tgz -C "$work" package/libchdb.so
mkdir -p "$(dirname "$target")"
mv "$work/package/libchdb.so" "$target.tmp"
mv "$target.tmp" "$target"
echo "install-libchdb: installed $target" >&2
