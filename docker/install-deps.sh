#!/usr/bin/env bash
# Installs what lockbench needs on Debian/Ubuntu, skipping whatever is already present.
# Idempotent: run it as often as you like. Usage: docker/install-deps.sh [--with-browser]
#   --with-browser  also installs Chromium (the report tests open the HTML report headless).
set -euo pipefail

want_browser=0
for arg in "$@"; do
  case "$arg" in
    --with-browser) want_browser=1 ;;
    -h|--help) sed -n '2,5p' "$0"; exit 0 ;;
    *) echo "install-deps: unknown option '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: this installer needs apt-get (Debian/Ubuntu); on macOS see docker/README.md" >&2
  exit 2
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "install-deps: run as root or install sudo" >&2; exit 2; }
  sudo="sudo"
fi

missing=()
need() { # need <command-or-path> <package>
  if command -v "$1" >/dev/null 2>&1 || [ -e "$1" ]; then
    echo "install-deps: have $2 ($1)"
  else
    echo "install-deps: need $2 (no $1)"
    missing+=("$2")
  fi
}
need redis-server redis-server
need redis-cli redis-tools
need etcd etcd-server
need /usr/share/java/zookeeper.jar zookeeper
need java default-jre-headless
need protoc protobuf-compiler
# etcd-client's build also needs the well-known types (google/protobuf/*.proto).
need /usr/include/google/protobuf/descriptor.proto libprotobuf-dev
need pkg-config pkg-config
# redlock's clock-jump fault runs one redis-server under libfaketime.
need /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 faketime
if [ "$want_browser" -eq 1 ]; then
  need chromium chromium
fi

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: everything is present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
# The Debian packages start system services; lockbench starts its own servers on free ports, so stop them.
for svc in redis-server etcd zookeeper; do
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
    $sudo systemctl stop "$svc" || true
  fi
done
echo "install-deps: done"
