// askuser's ask-user round trip, run on Mastra (@mastra/core with its LibSQL store), so that
// `scripts/bench --compare mastra` shows both in the same run on the same machine.
//
// The workload is askuser-bench's ASK_USER (src/bin/askuser-bench/workload.rs): an agent asks
// "Which environment?" with the options staging / production (single select) through Mastra's
// built-in `askUserTool`; the run suspends; the caller answers "staging"; the run resumes and the
// model says "Deploying to staging"; the caller checks that text. The model is the AI SDK's
// MockLanguageModelV2 (`ai/test`), scripted, no network. The Mastra instance stores its snapshots
// in a LibSQLStore on a real file in a fresh temporary directory for every scenario.
//
// One round trip = `agent.stream()` → its `tool-call-suspended` chunk → the end of that stream →
// `agent.resumeStream("staging", { runId })` → its full stream read to the end, the text checked.
// The caller answers only after the first stream has ended: Mastra 1.71 emits
// `tool-call-suspended` before it writes the suspended snapshot, and the snapshot is written by the
// time the stream ends (both checked on every warm-up run and reported under "suspension"), so
// waiting for the end is what makes the suspension durable before the caller acts, as in askuser.
//
// Every scenario runs in its own Node process (this file with --scenario; the parent starts it
// with --expose-gc), with a warm-up first that is not measured. Every loop is bounded in count
// and time; any run that does not end as expected makes the process exit with status 1.
//
//   bench/mastra/run.sh --out FILE [--quick] [--runs N] [--concurrent-runs N] [--concurrency N]
//                       [--hold N] [--warmup N] [--scenario-seconds S]
//
// The held runs stay in Mastra's process memory as well as in the store (a same-process resume
// reuses them; they expire after MASTRA_SUSPENDED_RUN_TTL_MS, 30 min by default): bytes_per_run
// counts both, as a server holding suspended runs would.
//
// The JSON written to --out (the numbers are examples; times in milliseconds unless the name says
// otherwise; rates in round trips per second; percentiles nearest-rank):
// {
//   "mastra_version": "1.71.0",            // @mastra/core
//   "libsql_version": "1.23.1",            // @mastra/libsql
//   "libsql_client_version": "0.18.0",     // @libsql/client
//   "ai_version": "5.0.277",               // ai (the mock model)
//   "node_version": "v22.23.3",
//   "quick": false,
//   "warmup_runs": 50,                     // per scenario, not measured
//   "suspension": {                        // over the sequential scenario's warm-up runs
//     "checked_runs": 50,
//     "suspended_in_store_at_announce": 0, // snapshot status "suspended" when the chunk arrived
//     "suspended_in_store_at_stream_end": 50, // ... when the first stream had ended (must be all)
//     "deleted_after_completion": 50       // no snapshot left once the resumed stream ended
//   },
//   "sequential": { "runs": 1000, "seconds": 11.2, "rate": 89.1,
//                   "resume_p50_ms": 4.1, "resume_p99_ms": 9.0,
//                   "total_p50_ms": 10.9, "total_p99_ms": 20.3,
//                   "cpu_us_per_run": 12000,  // user + system time of the process, per round trip
//                   "cpu_share": 0.95,        // that time ÷ wall time (below 1: waiting, or no core free)
//                   "event_loop_utilization": 1.0 },  // performance.eventLoopUtilization()
//   "concurrent": { "concurrency": 64, "runs": 3000, "seconds": 40.1, "rate": 74.8,
//                   "resume_p50_ms": 400.0, "resume_p99_ms": 900.0,
//                   "total_p50_ms": 850.0, "total_p99_ms": 1500.0, "cpu_us_per_run": 13000,
//                   "cpu_share": 0.9, "event_loop_utilization": 1.0 },
//   "hold": { "runs": 5000,                // runs started to suspension and left suspended
//             "concurrency": 64,           // starts in flight at once
//             "seconds": 60.0, "starts_per_second": 83.0,
//             "rss_before_bytes": 200000000, "rss_after_bytes": 520000000,
//             "bytes_per_run": 64000,      // (rss_after - rss_before) / runs, both after global.gc()
//             "heap_before_bytes": 90000000, "heap_after_bytes": 380000000,
//             "store_bytes": 70000000,     // the LibSQL file and its -wal, runs held
//             "resumed": 5000 }            // then all answered, each completed text checked
// }

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const QUESTION = 'Which environment?';
const OPTIONS = ['staging', 'production'];
const ANSWER = 'staging';
const EXPECTED = `Deploying to ${ANSWER}`;
/** The longest wait for one leg of a round trip, as askuser-bench's frame timeout. */
const LEG_TIMEOUT_MS = 60_000;

class BenchFailure extends Error {}

function fail(message) {
  throw new BenchFailure(message);
}

function parseArgs(argv) {
  const args = {
    out: null,
    quick: false,
    runs: null,
    concurrentRuns: null,
    concurrency: 64,
    hold: null,
    warmup: 50,
    scenarioSeconds: 900,
    scenario: null,
    result: null,
  };
  const number = (flag, value) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0) fail(`${flag} takes a whole number, not ${value}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) fail(`${flag} takes a value`);
      return argv[++i];
    };
    switch (flag) {
      case '--out': args.out = value(); break;
      case '--quick': args.quick = true; break;
      case '--runs': args.runs = number(flag, value()); break;
      case '--concurrent-runs': args.concurrentRuns = number(flag, value()); break;
      case '--concurrency': args.concurrency = number(flag, value()); break;
      case '--hold': args.hold = number(flag, value()); break;
      case '--warmup': args.warmup = number(flag, value()); break;
      case '--scenario-seconds': args.scenarioSeconds = number(flag, value()); break;
      case '--scenario': args.scenario = value(); break;
      case '--result': args.result = value(); break;
      case '--help':
        console.log(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n')
          .filter((line) => line.startsWith('//')).join('\n'));
        process.exit(0);
        break;
      default: fail(`unknown argument ${flag}`);
    }
  }
  args.runs ??= args.quick ? 200 : 1000;
  args.concurrentRuns ??= args.quick ? 500 : 3000;
  args.hold ??= args.quick ? 1000 : 5000;
  if (args.concurrency < 1) fail('--concurrency must be at least 1');
  return args;
}

function packageVersion(name) {
  return JSON.parse(readFileSync(join(HERE, 'node_modules', name, 'package.json'), 'utf8')).version;
}

/** Nearest-rank percentile of durations in ms. */
function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return round(sorted[rank - 1]);
}

function round(x, digits = 3) {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

function withTimeout(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new BenchFailure(`${what}: nothing for ${LEG_TIMEOUT_MS / 1000} s`)), LEG_TIMEOUT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// ---------------------------------------------------------------- one scenario (child process)

async function setUp() {
  const [{ Mastra }, { Agent }, { askUserTool }, { LibSQLStore }, { MockLanguageModelV2 }] = await Promise.all([
    import('@mastra/core'),
    import('@mastra/core/agent'),
    import('@mastra/core/tools'),
    import('@mastra/libsql'),
    import('ai/test'),
  ]);
  if (!askUserTool) fail('@mastra/core/tools exports no askUserTool');

  const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
  const streamOf = (parts) => new ReadableStream({
    start(controller) {
      for (const part of parts) controller.enqueue(part);
      controller.close();
    },
  });
  let calls = 0;
  // The scripted model: with no tool result yet, one call to ask_user; after it, the text
  // "Deploying to <answer>", the answer read from the tool result Mastra gives the model
  // (askUserTool returns { content: "User answered: <answer>", isError: false }).
  const model = new MockLanguageModelV2({
    provider: 'scripted',
    modelId: 'environment',
    doStream: async ({ prompt }) => {
      // The mock records every call's options; drop them, or they would count as Mastra's memory.
      model.doStreamCalls.length = 0;
      const last = prompt[prompt.length - 1];
      if (last?.role === 'tool') {
        const result = last.content.find((part) => part.type === 'tool-result' && part.toolName === 'ask_user');
        const content = result?.output?.value?.content;
        const match = typeof content === 'string' ? /^User answered: (.*)$/s.exec(content) : null;
        const text = match ? `Deploying to ${match[1]}` : `unexpected tool result: ${JSON.stringify(result?.output)}`;
        return {
          stream: streamOf([
            { type: 'stream-start', warnings: [] },
            { type: 'text-start', id: 'text-1' },
            { type: 'text-delta', id: 'text-1', delta: text },
            { type: 'text-end', id: 'text-1' },
            { type: 'finish', finishReason: 'stop', usage },
          ]),
        };
      }
      calls += 1;
      return {
        stream: streamOf([
          { type: 'stream-start', warnings: [] },
          {
            type: 'tool-call',
            toolCallId: `call-${calls}`,
            toolName: 'ask_user',
            input: JSON.stringify({
              question: QUESTION,
              options: OPTIONS.map((label) => ({ label })),
              selectionMode: 'single_select',
            }),
          },
          { type: 'finish', finishReason: 'tool-calls', usage },
        ]),
      };
    },
  });

  const dir = mkdtempSync(join(tmpdir(), 'askuser-bench-mastra-'));
  const file = join(dir, 'mastra.db');
  const storage = new LibSQLStore({ id: 'bench', url: `file:${file}` });
  const agent = new Agent({
    id: 'environment',
    name: 'environment',
    instructions: 'Ask the user which environment to deploy to, then deploy there.',
    model,
    tools: { ask_user: askUserTool },
  });
  const mastra = new Mastra({ agents: { environment: agent }, storage, logger: false });
  const workflows = await storage.getStore('workflows');
  const snapshotStatus = async (runId) => {
    const snapshot = await workflows.loadWorkflowSnapshot({ workflowName: 'agentic-loop', runId });
    return snapshot ? snapshot.status ?? 'unknown' : null;
  };
  const close = async () => {
    await storage.close?.();
    rmSync(dir, { recursive: true, force: true });
  };
  const storeBytes = () => ['', '-wal', '-shm'].reduce((sum, suffix) => {
    try {
      return sum + statSync(file + suffix).size;
    } catch {
      return sum;
    }
  }, 0);
  return { agent: mastra.getAgent('environment'), snapshotStatus, storeBytes, close };
}

/** Starts a run and reads its stream to the end: the suspension, checked. Returns the runId. */
async function startToSuspension(env, check) {
  const stream = await withTimeout(env.agent.stream('Deploy the service.'), 'stream()');
  let suspended = null;
  let atAnnounce = null;
  const read = (async () => {
    for await (const chunk of stream.fullStream) {
      if (chunk.type === 'error') fail(`run ${stream.runId} failed: ${JSON.stringify(chunk.payload)}`);
      if (chunk.type === 'tool-call-suspended') {
        if (suspended) fail(`run ${stream.runId}: a second suspension`);
        suspended = chunk.payload;
        if (check) atAnnounce = await env.snapshotStatus(stream.runId);
      }
    }
  })();
  await withTimeout(read, 'the first stream');
  if (!suspended) fail(`run ${stream.runId} ended without suspending`);
  const payload = suspended.suspendPayload;
  if (suspended.toolName !== 'ask_user' || payload?.question !== QUESTION
    || JSON.stringify(payload.options?.map((o) => o.label)) !== JSON.stringify(OPTIONS)
    || payload.selectionMode !== 'single_select') {
    fail(`run ${stream.runId} suspended with ${JSON.stringify(suspended)}`);
  }
  const atEnd = check ? await env.snapshotStatus(stream.runId) : null;
  return { runId: stream.runId, atAnnounce, atEnd };
}

/** Answers a suspended run and reads its stream to the end; the text must be EXPECTED. */
async function answer(env, runId) {
  const resumed = await withTimeout(env.agent.resumeStream(ANSWER, { runId }), 'resumeStream()');
  let text = '';
  let finished = false;
  const read = (async () => {
    for await (const chunk of resumed.fullStream) {
      if (chunk.type === 'error') fail(`run ${runId} failed on resume: ${JSON.stringify(chunk.payload)}`);
      if (chunk.type === 'tool-call-suspended') fail(`run ${runId} suspended again`);
      if (chunk.type === 'text-delta') text += chunk.payload.text;
      if (chunk.type === 'finish') finished = true;
    }
  })();
  await withTimeout(read, 'the resumed stream');
  if (!finished) fail(`run ${runId}: the resumed stream ended without finishing`);
  if (text !== EXPECTED) fail(`run ${runId} said ${JSON.stringify(text)}, not ${JSON.stringify(EXPECTED)}`);
}

/** One round trip; its timings in ms. */
async function roundTrip(env, check = false) {
  const start = performance.now();
  const suspension = await startToSuspension(env, check);
  const answered = performance.now();
  await answer(env, suspension.runId);
  const end = performance.now();
  const deleted = check ? (await env.snapshotStatus(suspension.runId)) === null : null;
  return { total: end - start, resume: end - answered, ...suspension, deleted };
}

/** Runs `count` round trips, `concurrency` in flight, before `deadline` (performance.now()). */
async function load(env, count, concurrency, deadline) {
  const totals = [];
  const resumes = [];
  let next = 0;
  const worker = async () => {
    while (next < count) {
      next += 1;
      if (performance.now() > deadline) fail(`time limit reached after ${totals.length} of ${count} round trips`);
      const trip = await roundTrip(env);
      totals.push(trip.total);
      resumes.push(trip.resume);
    }
  };
  const cpu = process.cpuUsage();
  const loop = performance.eventLoopUtilization();
  const start = performance.now();
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  const seconds = (performance.now() - start) / 1000;
  const used = process.cpuUsage(cpu);
  const busy = performance.eventLoopUtilization(loop).utilization;
  if (totals.length !== count) fail(`${totals.length} of ${count} round trips completed`);
  totals.sort((a, b) => a - b);
  resumes.sort((a, b) => a - b);
  return {
    runs: count,
    seconds: round(seconds),
    rate: round(count / seconds, 1),
    resume_p50_ms: percentile(resumes, 50),
    resume_p99_ms: percentile(resumes, 99),
    total_p50_ms: percentile(totals, 50),
    total_p99_ms: percentile(totals, 99),
    cpu_us_per_run: Math.round((used.user + used.system) / count),
    cpu_share: round((used.user + used.system) / 1e6 / seconds),
    event_loop_utilization: round(busy),
  };
}

async function warmUp(env, runs, check) {
  const seen = { checked_runs: 0, suspended_in_store_at_announce: 0, suspended_in_store_at_stream_end: 0, deleted_after_completion: 0 };
  for (let i = 0; i < runs; i++) {
    const trip = await roundTrip(env, check);
    if (!check) continue;
    seen.checked_runs += 1;
    if (trip.atAnnounce === 'suspended') seen.suspended_in_store_at_announce += 1;
    if (trip.atEnd === 'suspended') seen.suspended_in_store_at_stream_end += 1;
    if (trip.deleted) seen.deleted_after_completion += 1;
  }
  return seen;
}

function gc() {
  if (typeof global.gc !== 'function') fail('run node with --expose-gc');
  for (let i = 0; i < 3; i++) global.gc();
}

async function scenario(args) {
  const deadline = performance.now() + args.scenarioSeconds * 1000;
  const env = await setUp();
  try {
    switch (args.scenario) {
      case 'sequential': {
        const suspension = await warmUp(env, args.warmup, true);
        if (suspension.suspended_in_store_at_stream_end !== suspension.checked_runs) {
          fail(`the suspended snapshot was in the store at the stream's end for only ${suspension.suspended_in_store_at_stream_end} of ${suspension.checked_runs} runs`);
        }
        return { suspension, sequential: await load(env, args.runs, 1, deadline) };
      }
      case 'concurrent': {
        await warmUp(env, args.warmup, false);
        return { concurrent: { concurrency: args.concurrency, ...await load(env, args.concurrentRuns, args.concurrency, deadline) } };
      }
      case 'hold': {
        await warmUp(env, args.warmup, false);
        gc();
        const before = process.memoryUsage();
        const runIds = [];
        let next = 0;
        const start = performance.now();
        const starter = async () => {
          while (next < args.hold) {
            next += 1;
            if (performance.now() > deadline) fail(`time limit reached after ${runIds.length} of ${args.hold} starts`);
            runIds.push((await startToSuspension(env, false)).runId);
          }
        };
        await Promise.all(Array.from({ length: Math.min(args.concurrency, args.hold) }, starter));
        const seconds = (performance.now() - start) / 1000;
        gc();
        const after = process.memoryUsage();
        const storeBytes = env.storeBytes();
        let resumed = 0;
        const resumer = async () => {
          while (runIds.length > 0) {
            if (performance.now() > deadline) fail(`time limit reached after ${resumed} of ${args.hold} answers`);
            await answer(env, runIds.pop());
            resumed += 1;
          }
        };
        await Promise.all(Array.from({ length: args.concurrency }, resumer));
        if (resumed !== args.hold) fail(`${resumed} of ${args.hold} held runs completed`);
        return {
          hold: {
            runs: args.hold,
            concurrency: args.concurrency,
            seconds: round(seconds),
            starts_per_second: round(args.hold / seconds, 1),
            rss_before_bytes: before.rss,
            rss_after_bytes: after.rss,
            bytes_per_run: Math.round((after.rss - before.rss) / args.hold),
            heap_before_bytes: before.heapUsed,
            heap_after_bytes: after.heapUsed,
            store_bytes: storeBytes,
            resumed,
          },
        };
      }
      default:
        return fail(`unknown scenario ${args.scenario}`);
    }
  } finally {
    await env.close();
  }
}

// ---------------------------------------------------------------- the parent

function runChild(name, args, resultFile) {
  const childArgs = ['--expose-gc', fileURLToPath(import.meta.url), '--scenario', name, '--result', resultFile,
    '--runs', String(args.runs), '--concurrent-runs', String(args.concurrentRuns),
    '--concurrency', String(args.concurrency), '--hold', String(args.hold),
    '--warmup', String(args.warmup), '--scenario-seconds', String(args.scenarioSeconds)];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, childArgs, { stdio: 'inherit' });
    // The child keeps its own deadline; this one only catches a child that hangs.
    const timer = setTimeout(() => child.kill('SIGKILL'), (args.scenarioSeconds + 120) * 1000);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(JSON.parse(readFileSync(resultFile, 'utf8')));
      else reject(new BenchFailure(`the ${name} scenario failed (${signal ? `signal ${signal}` : `exit status ${code}`})`));
    });
  });
}

function summary(report) {
  const ms = (x) => `${x.toFixed(2)} ms`;
  const s = report.sequential;
  const c = report.concurrent;
  const h = report.hold;
  const k = report.suspension;
  return [
    `Mastra ${report.mastra_version} with @mastra/libsql ${report.libsql_version} (@libsql/client ${report.libsql_client_version}), ai ${report.ai_version}, Node ${report.node_version}`,
    `  suspension: snapshot "suspended" in the store at the announcement for ${k.suspended_in_store_at_announce} of ${k.checked_runs} runs, at the stream's end for ${k.suspended_in_store_at_stream_end}; deleted after completion for ${k.deleted_after_completion}`,
    `  sequential: ${s.runs} round trips in ${s.seconds.toFixed(1)} s = ${s.rate.toFixed(1)}/s; resume p50 ${ms(s.resume_p50_ms)}, p99 ${ms(s.resume_p99_ms)}; round trip p50 ${ms(s.total_p50_ms)}, p99 ${ms(s.total_p99_ms)}; CPU ${(s.cpu_us_per_run / 1000).toFixed(2)} ms per round trip (${Math.round(s.cpu_share * 100)} % of wall time)`,
    `  concurrency ${c.concurrency}: ${c.runs} round trips in ${c.seconds.toFixed(1)} s = ${c.rate.toFixed(1)}/s; resume p50 ${ms(c.resume_p50_ms)}, p99 ${ms(c.resume_p99_ms)}; CPU ${(c.cpu_us_per_run / 1000).toFixed(2)} ms per round trip (${Math.round(c.cpu_share * 100)} % of wall time)`,
    `  hold: ${h.runs} suspended runs (${h.starts_per_second.toFixed(1)} starts/s at ${h.concurrency} in flight): RSS ${(h.rss_before_bytes / 1e6).toFixed(1)} → ${(h.rss_after_bytes / 1e6).toFixed(1)} MB = ${(h.bytes_per_run / 1000).toFixed(1)} KB per run; store ${(h.store_bytes / 1e6).toFixed(1)} MB; ${h.resumed} answered and completed`,
  ].join('\n');
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args.scenario) {
    const result = await scenario(args);
    writeFileSync(args.result, JSON.stringify(result));
    // Mastra's warm-state timers and the LibSQL client may keep the loop alive.
    process.exit(0);
  }
  if (!args.out) fail('--out FILE is required');
  const major = Number(process.versions.node.split('.')[0]);
  if (major < 22) fail(`Mastra needs Node >= 22; this is ${process.version} (run bench/mastra/run.sh)`);
  const dir = mkdtempSync(join(tmpdir(), 'askuser-bench-mastra-results-'));
  try {
    const report = {
      mastra_version: packageVersion('@mastra/core'),
      libsql_version: packageVersion('@mastra/libsql'),
      libsql_client_version: packageVersion('@libsql/client'),
      ai_version: packageVersion('ai'),
      node_version: process.version,
      quick: args.quick,
      warmup_runs: args.warmup,
    };
    for (const name of ['sequential', 'concurrent', 'hold']) {
      console.error(`mastra: ${name}…`);
      Object.assign(report, await runChild(name, args, join(dir, `${name}.json`)));
    }
    writeFileSync(args.out, `${JSON.stringify(report, null, 2)}\n`);
    console.log(summary(report));
    console.log(`  written to ${args.out}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(`mastra bench: ${error instanceof BenchFailure ? error.message : error?.stack ?? error}`);
  process.exit(1);
});
