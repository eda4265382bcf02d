// A service that asks a person before it deploys: an Express-style handler that turns a deploy
// request into an askuser approval, waits for the decision (minutes or days: the request is held by
// askuser, and the wait rides out reconnects), deploys with the approved (or edited) arguments and
// answers with the decision. Nothing here needs Express: with it, the handler is mounted as
//
//   app.use(express.json());
//   app.post("/deploy", approveDeploy(client, deploy));
//
// Run by itself, this file serves the handler with node:http instead:
//
//   npm run build && node dist/examples/approval-service.js [HOST:PORT] [LISTEN_PORT]
//   curl -XPOST localhost:8080/deploy -H 'idempotency-key: deploy-4417' -d '{"service":"api","environment":"production"}'
//   askuser pending; askuser answer RUN CALL --approve      # or approve it in the inbox
//
// Against a server that checks API keys, put a key with the `asks:create` scope in ASKUSER_API_KEY.
import { createServer } from "node:http";
import { AskUserClient, type ApprovalOutcome } from "@askuser/client";

/** The parts of an Express request and response the handler uses. */
export interface HandlerRequest {
  body: unknown;
  headers: Record<string, string | string[] | undefined>;
}
export interface HandlerResponse {
  status(code: number): HandlerResponse;
  json(body: unknown): void;
}

/** What a deploy takes, as the approver sees (and may edit) it. */
export interface DeployArguments {
  service: string;
  environment: string;
  [key: string]: unknown;
}

/** What the service answers: the decision, and what was deployed. */
export interface DeployResult {
  decision: ApprovalOutcome["kind"];
  approvedBy?: string;
  reason?: string;
  deployed?: string;
}

/**
 * The handler of `POST /deploy`: asks for approval of the deploy in the body, deploys (with the
 * approver's edited arguments where they changed them) and answers 200, or 403 with the reason when
 * it was rejected, expired or cancelled. An `Idempotency-Key` header becomes the request id, so a
 * client that retries the HTTP call waits on the same approval instead of asking twice.
 */
export function approveDeploy(client: AskUserClient, deploy: (args: DeployArguments) => Promise<string>) {
  return async (req: HandlerRequest, res: HandlerResponse): Promise<void> => {
    const args = req.body as DeployArguments;
    if (typeof args?.service !== "string" || typeof args.environment !== "string") {
      res.status(400).json({ error: "a deploy names a service and an environment" });
      return;
    }
    const key = req.headers["idempotency-key"];
    const outcome = await client.requestApproval("deploy", args, {
      reason: `${args.service} to ${args.environment}`,
      context: "A deploy requested through the deploy service.",
      requestId: typeof key === "string" ? key : undefined,
      ttlMs: 24 * 60 * 60 * 1000,
    });
    switch (outcome.kind) {
      case "approved":
      case "edited": {
        const deployed = await deploy(outcome.arguments as DeployArguments);
        res.status(200).json({ decision: outcome.kind, approvedBy: outcome.settledBy, deployed } satisfies DeployResult);
        return;
      }
      case "rejected":
        res.status(403).json({ decision: outcome.kind, reason: outcome.reason } satisfies DeployResult);
        return;
      default:
        res.status(403).json({ decision: outcome.kind } satisfies DeployResult);
    }
  };
}

/** Serves the handler on node:http, as Express would (JSON body in, JSON out). */
function main(): void {
  const client = new AskUserClient(process.argv[2] ?? "127.0.0.1:50051", { apiKey: process.env.ASKUSER_API_KEY || undefined });
  const handler = approveDeploy(client, async ({ service, environment }) => `${service}@${environment}`);
  createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const res: HandlerResponse = {
        status(code) {
          response.statusCode = code;
          return res;
        },
        json(body) {
          response.setHeader("content-type", "application/json");
          response.end(JSON.stringify(body));
        },
      };
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString() || "null");
      } catch {
        body = undefined;
      }
      if (request.method !== "POST" || request.url !== "/deploy") {
        res.status(404).json({ error: "POST /deploy" });
        return;
      }
      handler({ body, headers: request.headers }, res).catch((error: unknown) => res.status(502).json({ error: String(error) }));
    });
  }).listen(Number(process.argv[3] ?? 8080));
}

if (require.main === module) main();
