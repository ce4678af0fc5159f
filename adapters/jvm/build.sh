#!/usr/bin/env bash
# Builds the JVM peers: for each row (a profile of pom.xml), copies its pinned jars from Maven Central into
# build/<row>/lib, compiles the shared protocol and the row's adapter against them into build/<row>, and
# writes build/<row>/run.args, the java argument file lockbench starts the row with. Runs after this need
# no network. Idempotent: a row whose run.args is newer than pom.xml and every source is skipped.
#
# build.sh --row ROW --pom POM --out DIR builds one row the same way from another pom (a copy of pom.xml
# whose profile ROW names another version of its library: lockbench's `ROW@version`) into DIR, always.
# Exit 3: mvn could not fetch the jars; exit 4: the adapter does not compile against them.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
for tool in java javac mvn; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "jvm adapters: no $tool (install it with: bash docker/install-deps.sh --with-peers)" >&2
    exit 2
  }
done

# row, main class (its source is <main class>.java), its argument (- for none), other sources it needs
rows=(
  "jvm-curator CuratorAdapter - OwnerThreads"
  "jvm-redisson-3.43 RedissonAdapter jvm-redisson-3.43 OwnerThreads"
  "jvm-redisson RedissonAdapter jvm-redisson OwnerThreads"
  "jvm-redisson-4 RedissonAdapter jvm-redisson-4 OwnerThreads"
  "jvm-spring-jdbc SpringJdbcAdapter - LockRegistryPeer"
  "jvm-spring-redis SpringRedisAdapter - LockRegistryPeer"
  "jvm-shedlock-jdbc ShedLockJdbcAdapter - ShedLockPeer"
  "jvm-shedlock-jdbc-mysql ShedLockJdbcAdapter - ShedLockPeer"
  "jvm-shedlock-redis ShedLockRedisAdapter - ShedLockPeer"
)
# build_row <row> <main class> <argument or -> <other sources> <pom> <output folder>
build_row() {
  local row="$1" main="$2" args="$3" extra="$4" pom="$5" out="$6"
  [ "$args" = - ] && args=""
  local sources=("$here/Protocol.java" "$here/$main.java")
  for name in $extra; do sources+=("$here/$name.java"); done
  rm -rf "$out/lib" "$out/run.args"
  mkdir -p "$out/lib"
  # Maven's output is shown only when it fails.
  local log
  if ! log="$(mvn -B -q -f "$pom" -P "$row" dependency:copy-dependencies \
      -DoutputDirectory="$out/lib" 2>&1)"; then
    printf '%s\n' "$log" >&2
    echo "jvm adapters: mvn could not fetch $row's jars (profile $row of $pom)" >&2
    return 3
  fi
  javac -nowarn -d "$out" -cp "$out/lib/*" "${sources[@]}" || return 4
  # The log (stderr) keeps warnings and errors only.
  printf -- '-Dorg.slf4j.simpleLogger.defaultLogLevel=warn\n-cp\n%s\n%s\n%s\n' \
    "$out:$out/lib/*" "$main" "${args:-}" > "$out/run.args"
}

if [ "${1:-}" = --row ]; then
  [ $# -eq 6 ] && [ "$3" = --pom ] && [ "$5" = --out ] || {
    echo "usage: build.sh [--row ROW --pom POM --out DIR]" >&2
    exit 2
  }
  for spec in "${rows[@]}"; do
    read -r row main args extra <<<"$spec"
    if [ "$row" = "$2" ]; then
      build_row "$row" "$main" "$args" "${extra:-}" "$4" "$6"
      exit
    fi
  done
  echo "jvm adapters: no row $2 in build.sh" >&2
  exit 2
fi

for spec in "${rows[@]}"; do
  read -r row main args extra <<<"$spec"
  sources=("$here/Protocol.java" "$here/$main.java")
  for name in $extra; do sources+=("$here/$name.java"); done
  out="$here/build/$row"
  fresh=1
  for input in "$here/pom.xml" "${sources[@]}"; do
    [ -e "$out/run.args" ] && [ "$out/run.args" -nt "$input" ] || fresh=0
  done
  if [ "$fresh" = 1 ]; then
    echo "jvm adapters: $row up to date ($out)"
    continue
  fi
  rm -rf "$out"
  build_row "$row" "$main" "$args" "${extra:-}" "$here/pom.xml" "$out" || exit 1
  echo "jvm adapters: built $row ($out)"
done
