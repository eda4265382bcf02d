#!/usr/bin/env bash
# Builds the Java client and runs its JUnit tests against a running askuser server (which must
# serve tests/conformance/agents.toml), which also builds the client under test (client-under-test,
# run by the conformance runner: tests/conformance/README.md). Then installs the artifact into the
# local Maven repository and builds and runs the quickstart project (examples/quickstart) from that
# install against the same server, as a user would.
#
# Usage: clients/java/test.sh HOST:PORT
#
# Credentials and the TLS server come from the environment (ASKUSER_API_KEY,
# ASKUSER_TLS_*), as ./scripts/test sets them; see README.md, "Build and tests". ReconnectTest
# starts and kills servers of its own: ASKUSER_BIN, by default target/debug/askuser.
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

# The jar just built and tested, into the local repository (~/.m2) as `mvn install` puts it.
mvn -q -B -Dstyle.color=never -DskipTests install
version="$(sed -n 's/^version=//p' target/classes/dev/askuser/client/version.properties)"
echo "installed dev.askuser:askuser-client:$version"
# The jar carries the licence's text.
installed="$HOME/.m2/repository/dev/askuser/askuser-client/$version/askuser-client-$version.jar"
jar tf "$installed" | grep -qx META-INF/LICENSE || {
  echo "the installed jar has no META-INF/LICENSE" >&2
  exit 1
}

# The questions of the demo agent 'deploy' wait for standard input: this server does not run it.
(cd examples/quickstart &&
  mvn -q -B -Dstyle.color=never -Daskuser.version="$version" compile exec:java -Dexec.args="$1" </dev/null)
echo "quickstart from the installed artifact: ok"
