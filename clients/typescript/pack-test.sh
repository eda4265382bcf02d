#!/usr/bin/env bash
# Tests the package as its users get it: `npm pack`s it (the `prepack` build included), installs the
# tarball into a new project outside the source tree, type-checks TypeScript programs against the
# declarations it ships, runs examples/quickstart.mjs from that install against the server, checking
# what it prints, and bundles a page's script importing `@askuser/client/web` for the browser (no Node
# built-ins, no grpc-js). test.sh calls it; run it alone as
#
#   clients/typescript/pack-test.sh HOST:PORT
#
# with the server's key in ASKUSER_API_KEY, as test.sh has it.
set -euo pipefail
ADDR="${1:?usage: clients/typescript/pack-test.sh HOST:PORT}"
cd "$(dirname "$0")"
here="$PWD"
work="$(mktemp -d /tmp/askuser-ts-pack.XXXXXX)"
trap 'rm -rf "$work"' EXIT

npm pack --silent --pack-destination "$work" >/dev/null
tarball="$(ls "$work"/*.tgz)"

# What the tarball holds: the built package with its declarations, and none of the tests.
listing="$(tar -tzf "$tarball")"
for file in package/package.json package/README.md package/dist/src/index.js package/dist/src/index.d.ts \
  package/dist/src/web/index.js package/dist/src/web/index.d.ts package/dist/esm/web/index.js package/dist/esm/web/index.d.ts; do
  grep -qx "$file" <<<"$listing" || { echo "pack-test: $file is not in $(basename "$tarball")" >&2; exit 1; }
done
if grep -q -e '^package/dist/test/' -e '^package/src/' <<<"$listing"; then
  echo "pack-test: the tarball holds the tests or the sources" >&2
  exit 1
fi

mkdir "$work/app"
cd "$work/app"
printf '{ "name": "askuser-pack-test", "private": true, "type": "module" }\n' >package.json
npm install --no-audit --no-fund --silent --prefer-offline "$tarball"

# The shipped declarations type-check a user's TypeScript: the terminal quickstart, and the call
# options and run handle. tsc and @types/node come from the source tree's dev dependencies.
cp "$here/examples/quickstart.ts" quickstart.ts
cat >options.ts <<'TS'
import { AskUserClient, AskUserError, type CallOptions, type Run } from "@askuser/client";

const options: CallOptions = { timeoutMs: 1_000, signal: AbortSignal.timeout(5_000), headers: { "x-request-id": "1" } };
export async function started(client: AskUserClient): Promise<string> {
  const run: Run = client.startRun("free_text", "hi", {}, { ...options, requestId: "r-1" });
  await client.listAgents(options);
  await client.getRun(await run.started, options);
  for await (const update of client.watchPendingCalls({ agentIds: ["free_text"], ...options })) {
    if (update.event?.$case === "snapshotDone") break;
  }
  return run.started.catch((error: unknown) => (error instanceof AskUserError ? error.codeName : "?"));
}
TS
cat >tsconfig.json <<JSON
{
  "compilerOptions": {
    "target": "es2022",
    "module": "node16",
    "moduleResolution": "node16",
    "strict": true,
    "noEmit": true,
    "types": ["node"],
    "typeRoots": ["$here/node_modules/@types"]
  },
  "files": ["quickstart.ts", "options.ts"]
}
JSON
"$here/node_modules/.bin/tsc" -p .

# VERSION reads the installed package.json: the version has one place.
version="$(node -p 'require("@askuser/client").VERSION')"
packed="$(node -p 'require(process.argv[1]).version' "$here/package.json")"
if [ "$version" != "$packed" ]; then
  echo "pack-test: VERSION is \"$version\", the package's version \"$packed\"" >&2
  exit 1
fi

# The licence's text ships with the package (prepack copies the root LICENSE).
if ! grep -q "Apache License" node_modules/@askuser/client/LICENSE; then
  echo "pack-test: the package ships no LICENSE" >&2
  exit 1
fi

# The browser entry: a page's script type-checks against its declarations as a browser project would
# (DOM types, no @types/node, a bundler's resolution) and bundles for the browser with esbuild (from
# the ES modules of dist/esm/), which fails on any Node built-in; grpc-js stays out of the bundle.
cat >page.ts <<'TS'
import { AskUserError, AskUserWebClient, SuspendKind, type AnswerValue, type CallOptions } from "@askuser/client/web";

const client = new AskUserWebClient(location.origin, { tokenProvider: () => sessionStorage.getItem("key") ?? undefined });
const options: CallOptions = { timeoutMs: 30_000, signal: new AbortController().signal };
const answer: AnswerValue = { approve: true };
export async function first(): Promise<string> {
  for await (const update of client.watchPendingCalls({ kinds: [SuspendKind.APPROVAL], ...options })) {
    if (update.event.case !== "callPending" || !update.event.value.call) continue;
    const { runId, call } = update.event.value;
    try {
      for await (const frame of client.resumeRun(runId, call.toolCallId, answer, options)) return frame.event.case ?? "";
    } catch (error) {
      if (error instanceof AskUserError) return `${error.codeName} ${error.reason ?? ""} ${error.fieldViolations.length}`;
      throw error;
    }
  }
  return "";
}
TS
cat >tsconfig.web.json <<JSON
{
  "compilerOptions": {
    "target": "es2022",
    "module": "esnext",
    "moduleResolution": "bundler",
    "lib": ["es2022", "dom", "dom.iterable"],
    "strict": true,
    "noEmit": true,
    "types": []
  },
  "files": ["page.ts"]
}
JSON
"$here/node_modules/.bin/tsc" -p tsconfig.web.json
"$here/node_modules/.bin/esbuild" page.ts --bundle --platform=browser --format=esm --minify --log-level=warning --outfile=page.js
if grep -q "grpc-js" page.js; then
  echo "pack-test: the browser bundle holds grpc-js" >&2
  exit 1
fi
# Node loads the entry both ways: `import` (ES modules) and `require` (CommonJS, as test/web.test.ts does).
node --input-type=module -e 'const { AskUserWebClient } = await import("@askuser/client/web"); if (typeof AskUserWebClient !== "function") process.exit(1);'
node -e 'if (typeof require("@askuser/client/web").AskUserWebClient !== "function") process.exit(1);'
echo "pack-test: @askuser/client/web type-checks, loads and bundles for the browser ($(wc -c <page.js) bytes minified)"

cp "$here/examples/quickstart.mjs" quickstart.mjs
expected="started a run: true
asked: What is your name?
result: Hello, Ada!
result: api is healthy
feed aborted: CANCELLED"
actual="$(node quickstart.mjs "$ADDR")"
if [ "$actual" != "$expected" ]; then
  echo "pack-test: the installed quickstart printed something else:" >&2
  diff <(echo "$expected") <(echo "$actual") >&2 || true
  exit 1
fi
echo "pack-test: $(basename "$tarball") installs, type-checks and runs its quickstart"
