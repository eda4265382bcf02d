// What the inbox's browser tests run against: the real askuser binary on a real socket (SQLite in a
// temporary directory, --auth keys), Debian's Chromium driven by playwright-core, and the Node
// client (clients/typescript) as the backend that starts runs and answers from elsewhere.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join, normalize } from "node:path";
import { chromium } from "playwright-core";
import { AskUserClient } from "../../clients/typescript/dist/src/index.js";

const ROOT = new URL("../../", import.meta.url).pathname;
const BINARY = process.env.ASKUSER_BIN ?? join(ROOT, "target/debug/askuser");
const AGENTS = new URL("./agents.toml", import.meta.url).pathname;
/** What `@ROOT@` stands for in agents.toml: the repository's root, without its last slash. */
const ROOT_IN_TOML = ROOT.replace(/\/$/, "").replaceAll("\\", "\\\\").replaceAll('"', '\\"');
const SCOPES = "runs:start,runs:read,runs:answer,runs:cancel,tools:execute,agents:read,asks:create";
const DIST = join(ROOT, "ui/dist");

/** Where screenshots go: $ASKUSER_SCREENSHOTS or ui/test-results/. */
export const SCREENSHOTS = process.env.ASKUSER_SCREENSHOTS ?? join(ROOT, "ui/test-results");
mkdirSync(SCREENSHOTS, { recursive: true });

/** What the server's webhook deliveries' links start with (`--public-url`). */
export const PUBLIC_URL = "https://askuser.example.com";
const WEBHOOK_SECRET_ENV = "ASKUSER_UI_TEST_WEBHOOK_SECRET";

/** An askuser server with its own data directory, restartable on the same port. */
export class Server {
  dir = mkdtempSync(join(tmpdir(), "askuser-ui-"));
  port = 0;
  /** The bodies of the `call.suspended` webhooks it delivered, oldest first. */
  webhooks = [];
  #process;
  #receiver;

  /** A local webhook receiver, for the answer links that deliveries carry. */
  async #receive() {
    if (this.#receiver) return;
    this.#receiver = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk) => (body += chunk));
      req.on("end", () => {
        this.webhooks.push(JSON.parse(body));
        res.writeHead(204).end();
      });
    });
    await new Promise((resolve) => this.#receiver.listen(0, "127.0.0.1", resolve));
  }

  /** Makes a key offline, the way an operator makes the first one; returns its secret. */
  key(name, tenant = "default", scopes = SCOPES) {
    return execFileSync(BINARY, ["keys", "--data-dir", join(this.dir, "data"), "create", "--tenant", tenant, "--name", name, "--scopes", scopes], {
      encoding: "utf8",
    }).trim();
  }

  async start() {
    const log = join(this.dir, "server.log");
    const logFile = openSync(log, "a");
    // agents.toml names files of the repository (the MCP fixture server) as @ROOT@/…: the file the
    // server reads has the real root in their place.
    const agents = join(this.dir, "agents.toml");
    await this.#receive();
    const webhook = `\n[[webhook]]\nurl = "http://127.0.0.1:${this.#receiver.address().port}/hook"\nevents = ["call.suspended"]\nsecret_env = "${WEBHOOK_SECRET_ENV}"\n`;
    writeFileSync(agents, readFileSync(AGENTS, "utf8").replaceAll("@ROOT@", ROOT_IN_TOML) + webhook);
    this.#process = spawn(
      BINARY,
      ["serve", "--listen", `127.0.0.1:${this.port}`, "--data-dir", join(this.dir, "data"), "--auth", "keys", "--config", agents, "--public-url", PUBLIC_URL],
      { stdio: ["ignore", "pipe", logFile], env: { ...process.env, [WEBHOOK_SECRET_ENV]: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" } },
    );
    const line = await new Promise((resolve, reject) => {
      let out = "";
      this.#process.stdout.on("data", (chunk) => {
        out += chunk;
        const match = /askuser listening on (\S+)/.exec(out);
        if (match) resolve(match[1]);
      });
      this.#process.on("exit", (code) => reject(new Error(`askuser exited (${code}) before listening; see ${log}`)));
    });
    this.port = Number(line.split(":").pop());
    this.addr = line;
    this.url ??= `http://${line}`;
    if (!this.#checked) {
      this.#checked = true;
      await this.#servePagesOfThisTree();
    }
  }

  #checked = false;
  #proxy;

  /**
   * The binary embeds ui/dist when it is built (scripts/test builds it first). One built before the
   * last scripts/build-ui serves older pages: then the pages of ui/dist are served by a proxy in front
   * of it, which passes every other request (the gRPC-Web calls) to the server, so the tests always
   * drive the pages of this tree. ASKUSER_UI_FROM_BINARY=1 tests the binary's own pages regardless.
   */
  async #servePagesOfThisTree() {
    if (process.env.ASKUSER_UI_FROM_BINARY === "1") return;
    const served = await (await fetch(`http://${this.addr}/assets/app.js`)).text();
    if (served === readFileSync(join(DIST, "assets/app.js"), "utf8")) return;
    console.error("# the binary's embedded pages differ from ui/dist: serving ui/dist through a proxy (rebuild the binary to test its own)");
    const page = await fetch(`http://${this.addr}/`);
    const pageHeaders = {};
    for (const name of ["content-security-policy", "x-content-type-options", "referrer-policy"]) {
      const value = page.headers.get(name);
      if (value) pageHeaders[name] = value;
    }
    const types = { ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml", ".html": "text/html; charset=utf-8" };
    this.#proxy = createServer((req, res) => {
      const path = new URL(req.url, "http://proxy").pathname;
      if (req.method === "GET" && (path === "/" || path === "/answer" || path.startsWith("/runs/") || path.startsWith("/assets/"))) {
        const file = path.startsWith("/assets/") ? join(DIST, normalize(path).replace(/^(\.\.[/\\])+/, "")) : join(DIST, "index.html");
        if (!file.startsWith(DIST) || !existsSync(file)) {
          res.writeHead(404).end();
          return;
        }
        const type = types[file.slice(file.lastIndexOf("."))] ?? "application/octet-stream";
        res.writeHead(200, { ...pageHeaders, "content-type": type, "cache-control": "no-store" }).end(readFileSync(file));
        return;
      }
      const upstream = httpRequest({ host: "127.0.0.1", port: this.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on("error", () => {
        if (!res.headersSent) res.writeHead(502);
        res.end();
      });
      res.on("close", () => upstream.destroy());
      req.pipe(upstream);
    });
    await new Promise((resolve) => this.#proxy.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${this.#proxy.address().port}`;
  }

  /** Stops the server and the pages' proxy, if any, for good; removes the server's directory
   * unless a test failed (`process.exitCode` is set by then), for its log. */
  async close() {
    await this.stop();
    await new Promise((resolve) => (this.#receiver ? this.#receiver.close(resolve) : resolve()));
    this.#proxy?.closeAllConnections();
    await new Promise((resolve) => (this.#proxy ? this.#proxy.close(resolve) : resolve()));
    if (!process.exitCode) rmSync(this.dir, { recursive: true, force: true });
  }

  async stop() {
    if (!this.#process || this.#process.exitCode !== null) return;
    const exited = new Promise((resolve) => this.#process.once("exit", resolve));
    this.#process.kill("SIGTERM");
    await exited;
  }
}

/** Headless Chromium: the system's (Debian's package), or $CHROMIUM. */
export function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu"],
  });
}

/** A Node client acting as `key`'s holder. */
export function backend(server, key) {
  return new AskUserClient(server.addr, { apiKey: key });
}

/** Starts a run of `agentId` and returns its id and the calls it waits for, once it waits for `count`. */
export async function startRun(client, agentId, count, options = {}) {
  const run = client.startRun(agentId, `prompt for ${agentId}`, {}, options);
  const calls = [];
  for await (const frame of run) {
    if (frame.event?.$case === "toolCallSuspended") calls.push(frame.event.value);
    if (calls.length === count) break;
  }
  run.close();
  return { runId: run.runId, calls };
}

/** Waits until `check()` returns a truthy value (polling), or fails with `what`. */
export async function eventually(what, check, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
