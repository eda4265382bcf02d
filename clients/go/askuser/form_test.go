package askuser

import (
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/askuser-dev/askuser/clients/go/askuserv1"
)

// The answers Form and Replied make, as sent: each constructor gives its field kind, a value at its
// zero value ("", 0, false, no choices) still says its kind, and "Other" text rides with the choices.
func TestFormValuesAreSentAsTheirFieldKinds(t *testing.T) {
	answer := newAnswer("r", "c", Form(map[string]FieldValue{
		"version":  TextValue("1.4.2"),
		"empty":    TextValue(""),
		"replicas": NumberValue(3),
		"zero":     NumberValue(0),
		"announce": BoolValue(true),
		"quiet":    BoolValue(false),
		"checks":   ChoiceValue("unit", "load"),
		"none":     ChoiceValue(),
		"rollout":  OtherValue("one zone at a time"),
		"extra":    OtherValue("fuzz", "unit"),
	}), nil)
	text := func(s string) *pb.FieldValue { return &pb.FieldValue{Value: &pb.FieldValue_Text{Text: s}} }
	number := func(f float64) *pb.FieldValue { return &pb.FieldValue{Value: &pb.FieldValue_Number{Number: f}} }
	boolean := func(b bool) *pb.FieldValue { return &pb.FieldValue{Value: &pb.FieldValue_Boolean{Boolean: b}} }
	choice := func(other string, values ...string) *pb.FieldValue {
		return &pb.FieldValue{Value: &pb.FieldValue_Choice{Choice: &pb.ChoiceValue{Values: values, Other: other}}}
	}
	want := &pb.Answer{RunId: "r", ToolCallId: "c", Answer: &pb.Answer_Form{Form: &pb.FormAnswer{Values: map[string]*pb.FieldValue{
		"version": text("1.4.2"), "empty": text(""), "replicas": number(3), "zero": number(0),
		"announce": boolean(true), "quiet": boolean(false), "checks": choice("", "unit", "load"),
		"none": choice(""), "rollout": choice("one zone at a time"), "extra": choice("fuzz", "unit"),
	}}}}
	if !proto.Equal(answer, want) {
		t.Errorf("form answer\n%v\nwant\n%v", answer, want)
	}
	for name, value := range answer.GetForm().GetValues() {
		if value.GetValue() == nil {
			t.Errorf("value %q has no kind", name)
		}
	}

	// No values (a form whose fields are all optional) is still a form answer.
	if empty := newAnswer("r", "c", Form(nil), nil); empty.GetForm() == nil {
		t.Errorf("Form(nil) sent %v, want an empty form answer", empty)
	}
	// The zero FieldValue is sent without a kind, for the server to refuse; never a panic.
	if got := newAnswer("r", "c", Form(map[string]FieldValue{"x": {}}), nil); got.GetForm().GetValues()["x"].GetValue() != nil {
		t.Errorf("a zero FieldValue sent %v", got)
	}
	reply := newAnswer("r", "c", Replied("ask Dana"), []AnswerOption{WithAnswerID("a-1")})
	if reply.GetReply() != "ask Dana" || reply.GetAnswerId() != "a-1" {
		t.Errorf("reply %v", reply)
	}
}
