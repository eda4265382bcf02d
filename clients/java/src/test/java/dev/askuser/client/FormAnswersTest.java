package dev.askuser.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.util.JsonFormat;
import dev.askuser.v1.Answer;
import dev.askuser.v1.FieldValue;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** How {@link FieldValues}, {@link Answers#form} and {@link Answers#reply} build an answer; no server needed. */
class FormAnswersTest {
  @Test
  void eachKindOfValueIsItsFieldValueInTheAnswersForm() throws Exception {
    Answer answer = Answers.form("run-1", "call-1", Map.of(
        "version", FieldValues.text("1.4.2"),
        "replicas", FieldValues.number(3),
        "announce", FieldValues.bool(false),
        "checks", FieldValues.choice("unit", "load"),
        "zone", FieldValues.other("asia"),
        "region", FieldValues.choice(List.of("eu"), "near Dana")));
    assertEquals("run-1", answer.getRunId());
    assertEquals("call-1", answer.getToolCallId());
    assertEquals(Answer.AnswerCase.FORM, answer.getAnswerCase());
    // The proto3 JSON of the answer, as grpcurl and the conformance scenarios write a form.
    JsonNode expected = new ObjectMapper().readTree("""
        {"version": {"text": "1.4.2"}, "replicas": {"number": 3.0}, "announce": {"boolean": false},
         "checks": {"choice": {"values": ["unit", "load"]}}, "zone": {"choice": {"other": "asia"}},
         "region": {"choice": {"values": ["eu"], "other": "near Dana"}}}""");
    JsonNode values = new ObjectMapper().readTree(JsonFormat.printer().print(answer.getForm())).get("values");
    assertEquals(expected, values);
  }

  @Test
  void falseAndZeroAndAnEmptyChoiceAreStillValuesOfTheirKind() {
    assertEquals(FieldValue.ValueCase.BOOLEAN, FieldValues.bool(false).getValueCase());
    assertEquals(FieldValue.ValueCase.NUMBER, FieldValues.number(0).getValueCase());
    assertEquals(FieldValue.ValueCase.TEXT, FieldValues.text("").getValueCase());
    FieldValue none = FieldValues.choice();
    assertEquals(FieldValue.ValueCase.CHOICE, none.getValueCase());
    assertEquals(List.of(), none.getChoice().getValuesList());
    assertEquals("", none.getChoice().getOther());
  }

  @Test
  void choicesKeepTheOrderTheyWereSelectedIn() {
    assertEquals(List.of("load", "unit"), FieldValues.choice(List.of("load", "unit")).getChoice().getValuesList());
  }

  @Test
  void aReplyIsTheAnswersReplyNotItsText() {
    Answer answer = Answers.reply("", "call-1", "ask Dana");
    assertEquals(Answer.AnswerCase.REPLY, answer.getAnswerCase());
    assertEquals("ask Dana", answer.getReply());
  }

  @Test
  void aMissingValueIsRefusedWhenBuilt() {
    assertThrows(NullPointerException.class, () -> FieldValues.text(null));
    assertThrows(NullPointerException.class, () -> FieldValues.choice(Arrays.asList("unit", null)));
  }
}
