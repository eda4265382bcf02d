// The Reason constants against the generated enums of both entries; no server needed.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Reason, v1 } from "@askuser/client";
import { ErrorReason as WebErrorReason, Reason as WebReason } from "@askuser/client/web";

const PREFIX = "ERROR_REASON_";

test("each Reason is a generated ErrorReason name without the prefix, and every one has its Reason", () => {
  const declared = Object.values(v1.ErrorReason)
    .filter((name) => name !== v1.ErrorReason.ERROR_REASON_UNSPECIFIED && name !== v1.ErrorReason.UNRECOGNIZED)
    .map((name) => name.slice(PREFIX.length));
  assert.ok(Object.values(v1.ErrorReason).every((name) => name === "UNRECOGNIZED" || name.startsWith(PREFIX)));
  assert.deepEqual(Object.entries(Reason).sort(), declared.map((name) => [name, name]).sort());
});

test("the web entry's ErrorReason names the same reasons, and its Reason is the same", () => {
  const web = Object.keys(WebErrorReason).filter((key) => Number.isNaN(Number(key)) && key !== "UNSPECIFIED");
  assert.deepEqual(web.sort(), Object.values(Reason).sort());
  assert.equal(WebReason, Reason);
});

test("the reason strings are unique", () => {
  assert.equal(new Set(Object.values(Reason)).size, Object.keys(Reason).length);
});
