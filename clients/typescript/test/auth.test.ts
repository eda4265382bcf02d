// Tests of credentials and TLS against the servers test.sh is given: the plain one in
// ASKUSER_ADDR (with --auth keys; ASKUSER_API_KEY is a key of it) and the mTLS one in ASKUSER_TLS_ADDR
// (its CA, a client certificate and key, and a key of it in ASKUSER_TLS_*). A missing variable fails
// the test that needs it: a run without TLS must not pass as tested.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { status } from "@grpc/grpc-js";
import { AskUserClient, AskUserError, type ClientOptions } from "@askuser/client";

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} must be set (see clients/typescript/test.sh)`);
  return value;
}

/** Runs `use` with a client of `address` and closes it afterwards. */
async function withClient<T>(address: string, options: ClientOptions, use: (client: AskUserClient) => Promise<T>): Promise<T> {
  const client = new AskUserClient(address, options);
  try {
    return await use(client);
  } finally {
    client.close();
  }
}

/** Asserts that `promise` rejects with an AskUserError of `code` and returns it. */
async function rejectsWith(promise: Promise<unknown>, code: status): Promise<AskUserError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof AskUserError, `expected an AskUserError, got ${String(error)}`);
    assert.equal(error.code, code, `expected ${status[code]}, got ${error.message}`);
    return error;
  }
  assert.fail(`expected the call to fail with ${status[code]}`);
}

/** The mTLS server's CA, client certificate and key, as the client's `tls` option. */
function mtls() {
  return {
    ca: readFileSync(env("ASKUSER_TLS_CA")),
    cert: readFileSync(env("ASKUSER_TLS_CLIENT_CERT")),
    key: readFileSync(env("ASKUSER_TLS_CLIENT_KEY")),
  };
}

const CONFORMANCE_AGENTS = ["checks", "deployer", "feed", "form", "free_text", "mcp_deployer", "parallel", "per_run", "pick", "questions", "status_check", "two_step"];

test("a token provider is asked for a token at the start of every call, unary and streaming", async () => {
  const key = env("ASKUSER_API_KEY");
  let calls = 0;
  const tokenProvider = async () => {
    calls += 1;
    return key;
  };
  await withClient(env("ASKUSER_ADDR"), { tokenProvider }, async (client) => {
    await client.listAgents();
    await client.listAgents();
    assert.equal(calls, 2);
    const run = client.startRun("free_text", "who asks?");
    const first = await run[Symbol.asyncIterator]().next();
    assert.equal(first.value?.event?.$case, "runStarted");
    assert.equal(calls, 3, "the RunAgent stream asked for its own token");
    run.close();
    await client.cancelRun(run.runId);
    assert.equal(calls, 4);
  });
});

test("each call sends the provider's current token, so a rotated token takes effect at the next call", async () => {
  let token = "ak_unknown_secret";
  await withClient(env("ASKUSER_ADDR"), { tokenProvider: () => token }, async (client) => {
    const refused = await rejectsWith(client.listAgents(), status.UNAUTHENTICATED);
    assert.equal(refused.reason, "INVALID_CREDENTIALS");
    token = env("ASKUSER_API_KEY");
    assert.deepEqual((await client.listAgents()).map((agent) => agent.agentId), CONFORMANCE_AGENTS);
  });
});

test("a token provider that fails fails the call with UNAUTHENTICATED", async () => {
  const tokenProvider = () => Promise.reject(new Error("the identity provider is down"));
  await withClient(env("ASKUSER_ADDR"), { tokenProvider }, async (client) => {
    const error = await rejectsWith(client.listAgents(), status.UNAUTHENTICATED);
    assert.match(error.details, /the identity provider is down/);
  });
});

test("without credentials a call is UNAUTHENTICATED with the ErrorInfo reason MISSING_CREDENTIALS", async () => {
  await withClient(env("ASKUSER_ADDR"), {}, async (client) => {
    const error = await rejectsWith(client.getRun("no-such-run"), status.UNAUTHENTICATED);
    assert.equal(error.codeName, "UNAUTHENTICATED");
    assert.equal(error.reason, "MISSING_CREDENTIALS");
  });
});

test("an unknown API key fails streams too, with INVALID_CREDENTIALS", async () => {
  await withClient(env("ASKUSER_ADDR"), { apiKey: "ak_unknown_secret" }, async (client) => {
    const error = await rejectsWith(client.startRun("free_text", "hi")[Symbol.asyncIterator]().next(), status.UNAUTHENTICATED);
    assert.equal(error.reason, "INVALID_CREDENTIALS");
  });
});

test("over mTLS, with the CA, a client certificate and an API key, the client lists the agents", async () => {
  const options = { tls: mtls(), apiKey: env("ASKUSER_TLS_API_KEY") };
  await withClient(env("ASKUSER_TLS_ADDR"), options, async (client) => {
    assert.deepEqual((await client.listAgents()).map((agent) => agent.agentId), CONFORMANCE_AGENTS);
  });
});

test("the server name can be overridden: the certificate is checked against it", async () => {
  const address = env("ASKUSER_TLS_ADDR");
  const apiKey = env("ASKUSER_TLS_API_KEY");
  await withClient(address, { tls: { ...mtls(), serverName: "localhost" }, apiKey }, async (client) => {
    assert.deepEqual((await client.listAgents()).map((agent) => agent.agentId), CONFORMANCE_AGENTS);
  });
  // reconnect: false, so that the failure comes at once instead of after 30 s of retries.
  await withClient(address, { tls: { ...mtls(), serverName: "not-the-server.example" }, apiKey, reconnect: false }, async (client) => {
    const error = await rejectsWith(client.listAgents(), status.UNAVAILABLE);
    assert.match(error.details, /altnames/);
  });
});

test("over mTLS without the API key a call is UNAUTHENTICATED", async () => {
  await withClient(env("ASKUSER_TLS_ADDR"), { tls: mtls() }, async (client) => {
    const error = await rejectsWith(client.listAgents(), status.UNAUTHENTICATED);
    assert.equal(error.reason, "MISSING_CREDENTIALS");
  });
});

test("the TLS server is unreachable with the wrong CA, without a client certificate, or in plaintext", async () => {
  const address = env("ASKUSER_TLS_ADDR");
  const apiKey = env("ASKUSER_TLS_API_KEY");
  const { ca, cert, key } = mtls();
  /** The connection's failure: UNAVAILABLE, with the cause in its details (at once: no retries). */
  const unreachable = (options: ClientOptions) =>
    withClient(address, { ...options, apiKey, reconnect: false }, async (client) => (await rejectsWith(client.listAgents(), status.UNAVAILABLE)).details);
  // The system's roots, which never signed the test CA's server certificate.
  assert.match(await unreachable({ tls: { cert, key } }), /unable to verify/);
  // The client's own certificate as the only authority: it did not sign the server's either.
  assert.match(await unreachable({ tls: { ca: cert, cert, key } }), /unable to verify/);
  assert.match(await unreachable({ tls: { ca } }), /certificate required|handshake failure/);
  await unreachable({});
});

test("conflicting options are refused when the client is made", () => {
  const address = "127.0.0.1:1";
  assert.throws(() => new AskUserClient(address, { apiKey: "k", tokenProvider: () => "t" }), TypeError);
  assert.throws(() => new AskUserClient(address, { tls: { cert: "pem" } }), TypeError);
  assert.throws(() => new AskUserClient(address, { tls: {}, credentials: {} as ClientOptions["credentials"] }), TypeError);
});
