package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The runner must fail a scenario whose expectation is wrong or that it cannot fully check:
// otherwise a passing conformance run would prove nothing. Needs the server conformance.sh starts
// and ASKUSER_API_KEY. The other tenant's client is left out: "as": "other" must then fail.
func TestRunnerFailsWhatItCannotConfirm(t *testing.T) {
	addr := os.Getenv("ASKUSER_ADDR")
	if addr == "" {
		t.Fatal("ASKUSER_ADDR is not set: run clients/go/conformance.sh HOST:PORT")
	}
	client, err := dialWithKey(addr, os.Getenv("ASKUSER_API_KEY"))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	own := clients{own: client}

	const started = `{"start": {"agent_id": "pick", "prompt": "deploy"}}, {"expect": {"kind": "run_started"}},`
	const tool = `{"start": {"agent_id": "status_check", "prompt": "check"}}, {"expect": {"kind": "run_started"}},
		{"expect": {"kind": "tool_call", "arguments": {"service": "api"}}},`
	cases := []struct {
		name  string
		steps string
		// wantErr is a part of the failure message; empty when the scenario must pass.
		wantErr string
	}{
		{"matching frames pass", started + `{"expect": {"kind": "tool_call", "save": "q"}},
			{"expect": {"kind": "tool_call_suspended", "tool_call_id": "$q", "options": ["staging", "production"]}}`, ""},
		{"a wrong value fails", started + `{"expect": {"kind": "tool_call"}},
			{"expect": {"kind": "tool_call_suspended", "question": "Which planet?"}}`, `question is "Which environment?", want "Which planet?"`},
		{"a wrong kind fails", started + `{"expect": {"kind": "tool_call_suspended"}}`, "got tool_call frame"},
		{"a field of another kind fails", started + `{"expect": {"kind": "tool_call", "question": "x"}}`, "question: not a field of this kind of frame"},
		{"an unsaved reference fails", started + `{"expect": {"kind": "tool_call", "tool_call_id": "$nothing"}}`, "$nothing was not saved"},
		{"an unknown step fails", `{"launch": {}}`, "unknown step kind"},
		{"an unknown argument fails", `{"start": {"agent_id": "pick", "prompt": "deploy", "priority": 1}}`, `unknown field "priority"`},
		{"two kinds in a step fail", `{"close": {}, "expect_end": {}}`, "exactly one key"},
		{"a stream that goes on fails expect_end", started + `{"expect_end": {}}`, "want the stream to end, got tool_call frame"},
		{"deltas that do not add up fail", `{"start": {"agent_id": "free_text", "prompt": "hi"}},
			{"expect": {"kind": "run_started"}}, {"expect": {"kind": "tool_call"}},
			{"expect": {"kind": "tool_call_suspended", "save": "q"}}, {"answer": {"tool_call_id": "$q", "text": "Ada"}},
			{"expect": {"kind": "answer_accepted"}}, {"expect": {"kind": "tool_result"}},
			{"expect": {"kind": "text_deltas", "text": "Hello, Bob!"}}`, `text deltas add up to "Hello, Ada!", want "Hello, Bob!"`},
		{"matching client tool checks pass", tool + `{"expect": {"kind": "tool_call_suspended",
			"suspend_kind": "SUSPEND_KIND_CLIENT_TOOL", "arguments": {"service": "api"}, "approval_reason": ""}}`, ""},
		{"a wrong suspend kind fails", tool + `{"expect": {"kind": "tool_call_suspended", "suspend_kind": "SUSPEND_KIND_APPROVAL"}}`,
			`suspend_kind is "SUSPEND_KIND_CLIENT_TOOL", want "SUSPEND_KIND_APPROVAL"`},
		{"wrong arguments fail", tool + `{"expect": {"kind": "tool_call_suspended", "arguments": {"service": "db"}}}`,
			`want {"service":"db"}`},
		{"approve false fails", tool + `{"expect": {"kind": "tool_call_suspended", "save": "c"}},
			{"answer": {"tool_call_id": "$c", "approve": false}}`, `"approve" can only be true`},
		{"two replies fail", tool + `{"expect": {"kind": "tool_call_suspended", "save": "c"}},
			{"answer": {"tool_call_id": "$c", "reject": "", "edit": "{}"}}`, "got 2"},
		{"a claim that should fail but succeeds fails", tool + `{"expect": {"kind": "tool_call_suspended", "save": "c"}},
			{"claim": {"run_id": "$run_id", "tool_call_id": "$c", "claimant": "w", "expect_error": {"code": "FAILED_PRECONDITION"}}}`,
			"want the claim to fail"},
		{"a pending-feed field of another kind fails", `{"watch_pending": {"agent_ids": ["no_such_agent"]}},
			{"expect_pending": {"kind": "snapshot_done", "tool_call_id": "x"}}`, "tool_call_id: not a field of this kind of frame"},
		{"an unknown pending-feed kind fails", `{"watch_pending": {}}, {"expect_pending": {"kind": "call_done"}}`, `unknown kind "call_done"`},
		{"a wrong error reason fails", `{"get_run": {"run_id": "nope", "expect_error": {"code": "NOT_FOUND", "reason": "AGENT_NOT_FOUND"}}}`,
			`reason "RUN_NOT_FOUND", want "AGENT_NOT_FOUND"`},
		{"a call in the snapshot that should be absent fails", started + `{"expect": {"kind": "tool_call", "save": "q"}},
			{"expect": {"kind": "tool_call_suspended"}}, {"watch_pending": {"agent_ids": ["pick"]}},
			{"expect_pending": {"kind": "snapshot_done", "absent": ["$q"]}}`, "the snapshot holds an absent call"},
		{"absent on another kind of check fails", `{"watch_pending": {}}, {"expect_pending": {"kind": "call_pending", "absent": []}}`,
			"absent goes with a snapshot_done check"},
		{"as other without the other key fails", `{"get_run": {"run_id": "nope", "as": "other", "expect_error": {"code": "NOT_FOUND"}}}`,
			"needs ASKUSER_OTHER_API_KEY"},
		{"an unknown caller fails", `{"watch": {"run_id": "nope", "as": "admin", "expect_error": {"code": "NOT_FOUND"}}}`,
			`"as" must be "other"`},
		{"a cancel that should fail but succeeds fails", started + `{"cancel": {"run_id": "$run_id", "expect_error": {"code": "NOT_FOUND"}}}`,
			"want the call to fail"},
		{"a cancel returns the cancelled run", started + `{"cancel": {"run_id": "$run_id", "reason": "done"}}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "scenario.json")
			scenario := `{"name": "probe", "description": "d", "steps": [` + c.steps + `]}`
			if err := os.WriteFile(path, []byte(scenario), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := runFile(own, path, 10*time.Second)
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("want a pass, got %v", err)
			case c.wantErr != "" && err == nil:
				t.Fatalf("want a failure with %q, got a pass", c.wantErr)
			case c.wantErr != "" && !strings.Contains(err.Error(), c.wantErr):
				t.Fatalf("want a failure with %q, got %v", c.wantErr, err)
			}
		})
	}
}
