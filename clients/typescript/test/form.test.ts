// How a form's answer and a reply become the contract's `Answer`, in both entries; no server needed
// (the server's side of forms is the conformance runner's: scenarios 33 to 35).
import assert from "node:assert/strict";
import { test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { v1, type FormValues } from "@askuser/client";
import { AnswerSchema } from "@askuser/client/web";
import { buildAnswer } from "../src/run";
import { buildAnswer as buildWebAnswer } from "../src/web/client";

const RELEASE: FormValues = {
  version: "1.4.2",
  replicas: 3,
  announce: true,
  checks: ["unit", "load"],
  zone: { other: "asia" },
  region: { values: ["eu"], other: "" },
  optional: [],
};

test("each kind of value becomes its FieldValue: text, number, boolean, choices, Other text", () => {
  const answer = buildAnswer("call-1", { form: RELEASE }, { runId: "run-1", answerId: "a-1" });
  assert.equal(answer.runId, "run-1");
  assert.equal(answer.toolCallId, "call-1");
  assert.equal(answer.answerId, "a-1");
  assert.ok(answer.answer?.$case === "form");
  const values: Record<string, v1.FieldValue> = {
    version: { value: { $case: "text", value: "1.4.2" } },
    replicas: { value: { $case: "number", value: 3 } },
    announce: { value: { $case: "boolean", value: true } },
    checks: { value: { $case: "choice", value: { values: ["unit", "load"], other: "" } } },
    zone: { value: { $case: "choice", value: { values: [], other: "asia" } } },
    region: { value: { $case: "choice", value: { values: ["eu"], other: "" } } },
    optional: { value: { $case: "choice", value: { values: [], other: "" } } },
  };
  assert.deepEqual(answer.answer.value, { values });
});

test("values that are falsy still go as values: an empty text, zero, false", () => {
  const answer = buildAnswer("call-1", { form: { note: "", replicas: 0, announce: false } });
  assert.ok(answer.answer?.$case === "form");
  assert.deepEqual(answer.answer.value.values, {
    note: { value: { $case: "text", value: "" } },
    replicas: { value: { $case: "number", value: 0 } },
    announce: { value: { $case: "boolean", value: false } },
  });
});

test("a reply is the answer's reply, not its text", () => {
  const answer = buildAnswer("call-1", { reply: "ask Dana" });
  assert.deepEqual(answer.answer, { $case: "reply", value: "ask Dana" });
});

test("the browser entry sends the same message as the Node entry, for a form and a reply", () => {
  for (const value of [{ form: RELEASE }, { reply: "ask Dana" }]) {
    const node = buildAnswer("call-1", value, { runId: "run-1", answerId: "a-1" });
    const web = toBinary(AnswerSchema, create(AnswerSchema, buildWebAnswer("run-1", "call-1", value, "a-1")));
    assert.deepEqual(v1.Answer.decode(web), node);
  }
});

test("a value of no FormFieldValue shape is a TypeError naming the field, in both entries", () => {
  const wrong: unknown[] = [null, undefined, [1], ["a", 2], { values: "a" }, { other: 3 }, { value: ["a"] }, { values: ["a"], note: "x" }];
  for (const value of wrong) {
    const form = { replicas: value } as unknown as FormValues;
    assert.throws(() => buildAnswer("call-1", { form }), { name: "TypeError", message: /form field "replicas"/ }, JSON.stringify(value));
    assert.throws(() => buildWebAnswer("", "call-1", { form }, ""), TypeError, JSON.stringify(value));
  }
});
