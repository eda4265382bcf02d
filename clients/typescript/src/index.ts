// @askuser/client: a Node client of the askuser gRPC service (askuser.v1).
export { credentials } from "@grpc/grpc-js";
export {
  AskUserClient,
  type AskHumanOptions,
  type AskUserInputInit,
  type ClientOptions,
  type ListRunsOptions,
  type RequestApprovalOptions,
  type StartRunOptions,
  type ToolDefinitionInit,
  type WatchPendingCallsOptions,
} from "./client";
export {
  type AnswerValue,
  type CallOptions,
  type ClaimCallOptions,
  type FormFieldValue,
  type FormValues,
  type ResumeRunOptions,
  type TokenProvider,
} from "./common/options";
export { type TlsOptions } from "./credentials";
export {
  type ApprovalInit,
  type ApprovalOutcome,
  type FormOutcomeValue,
  type HumanOutcome,
  type QuestionOutcome,
} from "./common/human";
export {
  HumanRequest,
  type AskApprovalInit,
  type AskFormInit,
  type AskInit,
  type AskOptions,
  type AskQuestionInit,
  type FormInit,
} from "./human";
export { AskUserError } from "./error";
export { Reason } from "./common/reason";
export { PendingCalls } from "./pending";
export { type Reconnect } from "./reconnect";
export { Run, type AnswerOptions, type ToolOutputOptions } from "./run";
export { VERSION } from "./version";
export * as v1 from "./v1";
