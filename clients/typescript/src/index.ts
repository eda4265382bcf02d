// @askuser/client: a Node client of the askuser gRPC service (askuser.v1).
export { credentials } from "@grpc/grpc-js";
export {
  AskUserClient,
  type AskUserInputInit,
  type ClaimCallOptions,
  type ClientOptions,
  type ListRunsOptions,
  type ResumeRunOptions,
  type StartRunOptions,
  type ToolDefinitionInit,
  type WatchPendingCallsOptions,
} from "./client";
export { type CallOptions } from "./call";
export { type TlsOptions, type TokenProvider } from "./credentials";
export { AskUserError } from "./error";
export { PendingCalls } from "./pending";
export { type Reconnect } from "./reconnect";
export { Run, type AnswerOptions, type AnswerValue, type ToolOutputOptions } from "./run";
export { VERSION } from "./version";
export * as v1 from "./v1";
