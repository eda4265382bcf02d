package dev.askuser.client;

import dev.askuser.v1.ChoiceValue;
import dev.askuser.v1.FieldValue;
import java.util.List;

/**
 * Builds the value of one form field for {@link Answers#form} and {@link Run#answerForm}, of the
 * field's kind: {@link #text} for a text field, {@link #number} for a number field, {@link #bool}
 * for a yes/no field; for a choice field, {@link #choice} with the selected choices' values (even a
 * single one), {@link #other} with the person's own text ("Other…") where the field allows it, or
 * both.
 *
 * <pre>{@code
 * Answers.form(runId, toolCallId, Map.of(
 *     "version", FieldValues.text("1.4.2"),
 *     "replicas", FieldValues.number(3),
 *     "announce", FieldValues.bool(true),
 *     "checks", FieldValues.choice("unit", "load"),
 *     "zone", FieldValues.other("asia")));
 * }</pre>
 */
public final class FieldValues {
  private FieldValues() {}

  /** A text field's value. */
  public static FieldValue text(String text) {
    return FieldValue.newBuilder().setText(text).build();
  }

  /** A number field's value (a whole number for an integer field). */
  public static FieldValue number(double number) {
    return FieldValue.newBuilder().setNumber(number).build();
  }

  /** A yes/no field's value. */
  public static FieldValue bool(boolean value) {
    return FieldValue.newBuilder().setBoolean(value).build();
  }

  /** A choice field's selected values, in the order selected; none is a choice of nothing, not an absent value. */
  public static FieldValue choice(String... values) {
    return choice(List.of(values), "");
  }

  /** A choice field's selected values, in the order selected. */
  public static FieldValue choice(List<String> values) {
    return choice(values, "");
  }

  /** A choice field's own text ("Other…"), with no offered choice selected. */
  public static FieldValue other(String text) {
    return choice(List.of(), text);
  }

  /**
   * A choice field's selected values and the person's own text (empty for none); a single-choice
   * field takes either one value or the text, not both.
   */
  public static FieldValue choice(List<String> values, String other) {
    return FieldValue.newBuilder()
        .setChoice(ChoiceValue.newBuilder().addAllValues(values).setOther(other))
        .build();
  }
}
