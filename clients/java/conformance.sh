#!/usr/bin/env bash
# Builds the Java client, runs its JUnit tests against a running askuser server, then runs every
# conformance scenario against that server. The server must serve tests/conformance/agents.toml.
#
# Usage: clients/java/conformance.sh HOST:PORT
#
# Credentials and the TLS server come from the environment (ASKUSER_API_KEY, ASKUSER_OTHER_API_KEY,
# ASKUSER_TLS_*), as ./scripts/test sets them; see README.md, "Build and tests".
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 HOST:PORT" >&2
  exit 2
fi
cd "$(dirname "$0")"

# -q silences surefire's test summary along with the rest; this logger setting lets the summary through.
ASKUSER_ADDR="$1" \
  MAVEN_OPTS="${MAVEN_OPTS:-} -Dorg.slf4j.simpleLogger.log.org.apache.maven.plugin.surefire=info" \
  mvn -q -B -Dstyle.color=never package

exec java -cp "target/classes:target/lib/*" dev.askuser.client.conformance.ConformanceRunner \
  "$1" ../../tests/conformance
