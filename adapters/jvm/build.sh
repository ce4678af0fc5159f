#!/usr/bin/env bash
# Compiles the JVM adapters against Debian's jars (libcurator-recipes-java) into build/, and writes
# build/run.args, the java argument file lockbench starts them with. Idempotent.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ -e "$here/build/CuratorAdapter.class" ] && [ "$here/build/run.args" -nt "$here/CuratorAdapter.java" ]; then
  echo "jvm adapters: up to date ($here/build)"
  exit 0
fi
jars=(curator-recipes curator-framework curator-client zookeeper zookeeper-jute guava slf4j-api slf4j-nop
      jackson-databind jackson-core jackson-annotations)
cp=""
for jar in "${jars[@]}"; do
  path="/usr/share/java/$jar.jar"
  [ -e "$path" ] || { echo "jvm adapters: missing $path (apt-get install libcurator-recipes-java)" >&2; exit 2; }
  cp="$cp:$path"
done
mkdir -p "$here/build"
javac -d "$here/build" -cp "${cp#:}" "$here"/*.java
printf -- '-cp\n%s\nCuratorAdapter\n' "$here/build$cp" > "$here/build/run.args"
echo "jvm adapters: built $here/build"
