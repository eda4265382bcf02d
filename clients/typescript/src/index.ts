// @askuser/client: a Node client of the askuser gRPC service (askuser.v1).
export { credentials } from "@grpc/grpc-js";
export { AskUserClient, type AskUserInputInit, type ClientOptions, type ListRunsOptions, type StartRunOptions } from "./client";
export { AskUserError } from "./error";
export { Run, type AnswerOptions, type AnswerValue } from "./run";
export * as v1 from "./v1";
