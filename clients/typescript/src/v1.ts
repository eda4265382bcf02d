// The generated askuser.v1 messages, enums and service stubs, exported by the package as `v1`.
export * from "./gen/askuser/v1/agent";
export * from "./gen/askuser/v1/ask_user";
export * from "./gen/askuser/v1/errors";
export * from "./gen/askuser/v1/form";
export * from "./gen/askuser/v1/human";
export * from "./gen/askuser/v1/tool";
