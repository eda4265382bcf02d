package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/askuser-dev/askuser/clients/go/askuser"
	pb "github.com/askuser-dev/askuser/clients/go/askuserv1"
)

// scenario is one scenario file.
type scenario struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Steps each hold exactly one key, the step's kind.
	Steps []map[string]json.RawMessage `json:"steps"`
}

func loadScenario(path string) (*scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var sc scenario
	if err := decodeStrict(data, &sc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(sc.Steps) == 0 {
		return nil, fmt.Errorf("%s: no steps", path)
	}
	return &sc, nil
}

// decodeStrict decodes JSON, rejecting fields the target does not have: a scenario field this
// runner does not know would otherwise go unchecked.
func decodeStrict(data []byte, target any) error {
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.DisallowUnknownFields()
	return decoder.Decode(target)
}

// clients are the connections a scenario calls with.
type clients struct {
	// own carries ASKUSER_API_KEY, the key of the tenant "conformance".
	own *askuser.Client
	// other carries ASKUSER_OTHER_API_KEY, for the steps with "as": "other"; nil when it is unset.
	other *askuser.Client
}

// state is a scenario in progress: its saved values and open streams.
type state struct {
	ctx     context.Context
	clients clients
	saved   map[string]string
	streams map[string]*stream
	feeds   map[string]*askuser.PendingCalls
}

// stream is a named RunAgent stream of a scenario.
type stream struct {
	run *askuser.Run
	// openErr is why the stream failed to open; its next read reports it, for expect_stream_error.
	openErr error
}

func (s *stream) recv() (*pb.RunAgentResponse, error) {
	if s.openErr != nil {
		return nil, s.openErr
	}
	return s.run.Recv()
}

// runID is the run the stream started or attached to; empty when it failed to open.
func (s *stream) runID() string {
	if s.run == nil {
		return ""
	}
	return s.run.ID()
}

func (sc *scenario) run(ctx context.Context, c clients) error {
	st := &state{ctx: ctx, clients: c, saved: map[string]string{}, streams: map[string]*stream{},
		feeds: map[string]*askuser.PendingCalls{}}
	defer st.closeStreams()
	for i, raw := range sc.Steps {
		kind, err := st.runStep(raw)
		if err != nil {
			return fmt.Errorf("step %d (%s): %w", i+1, kind, err)
		}
	}
	return nil
}

func (st *state) runStep(raw map[string]json.RawMessage) (string, error) {
	if len(raw) != 1 {
		keys := make([]string, 0, len(raw))
		for key := range raw {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		return strings.Join(keys, "+"), fmt.Errorf("a step has exactly one key, got %d", len(raw))
	}
	var kind string
	var args json.RawMessage
	for kind, args = range raw {
	}
	run, ok := stepKinds[kind]
	if !ok {
		return kind, fmt.Errorf("unknown step kind")
	}
	return kind, run(st, args)
}

func (st *state) closeStreams() {
	for _, s := range st.streams {
		if s.run != nil {
			s.run.Close()
		}
	}
	for _, feed := range st.feeds {
		feed.Close()
	}
}

// caller is the client a step calls with: as is the step's "as", "" for the own tenant.
func (st *state) caller(as string) (*askuser.Client, error) {
	switch {
	case as == "":
		return st.clients.own, nil
	case as != "other":
		return nil, fmt.Errorf(`"as" must be "other", got %q`, as)
	case st.clients.other == nil:
		return nil, errors.New(`"as": "other" needs ASKUSER_OTHER_API_KEY`)
	default:
		return st.clients.other, nil
	}
}

// stream returns the open stream of that name ("" is "main").
func (st *state) stream(name string) (*stream, error) {
	s, ok := st.streams[streamName(name)]
	if !ok {
		return nil, fmt.Errorf("no open stream %q", streamName(name))
	}
	return s, nil
}

func streamName(name string) string {
	if name == "" {
		return "main"
	}
	return name
}

// ref is a scenario string; "$name" stands for a value saved earlier.
type ref string

func (st *state) resolve(r ref) (string, error) {
	name, isRef := strings.CutPrefix(string(r), "$")
	if !isRef {
		return string(r), nil
	}
	value, ok := st.saved[name]
	if !ok {
		return "", fmt.Errorf("$%s was not saved", name)
	}
	return value, nil
}

func (st *state) resolveAll(refs []ref) ([]string, error) {
	values := make([]string, len(refs))
	for i, r := range refs {
		value, err := st.resolve(r)
		if err != nil {
			return nil, err
		}
		values[i] = value
	}
	return values, nil
}

// resolveJSON substitutes saved values for the "$name" strings of a decoded JSON value.
func (st *state) resolveJSON(value any) (any, error) {
	switch v := value.(type) {
	case string:
		return st.resolve(ref(v))
	case []any:
		out := make([]any, len(v))
		for i, item := range v {
			resolved, err := st.resolveJSON(item)
			if err != nil {
				return nil, err
			}
			out[i] = resolved
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for key, item := range v {
			resolved, err := st.resolveJSON(item)
			if err != nil {
				return nil, err
			}
			out[key] = resolved
		}
		return out, nil
	default:
		return value, nil
	}
}

// count is a scenario sequence number: a JSON number, or "$name" for a saved sequence.
type count struct {
	literal uint64
	saved   ref
}

func (c *count) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '"' {
		return json.Unmarshal(data, &c.saved)
	}
	return json.Unmarshal(data, &c.literal)
}

func (st *state) number(c count) (uint64, error) {
	if c.saved == "" {
		return c.literal, nil
	}
	text, err := st.resolve(c.saved)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(text, 10, 64)
}
