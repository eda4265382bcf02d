package dev.askuser.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.askuser.v1.ErrorReason;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** The {@link Reasons} constants against the generated enum; no server needed. */
class ReasonsTest {
  private static Map<String, String> constants() throws IllegalAccessException {
    Map<String, String> constants = new TreeMap<>();
    for (Field field : Reasons.class.getFields()) {
      if (Modifier.isStatic(field.getModifiers()) && field.getType() == String.class) {
        constants.put(field.getName(), (String) field.get(null));
      }
    }
    return constants;
  }

  @Test
  void eachConstantIsAGeneratedNameWithoutThePrefixAndEveryValueHasOne() throws Exception {
    Map<String, String> declared = new TreeMap<>();
    for (ErrorReason reason : ErrorReason.values()) {
      if (reason == ErrorReason.ERROR_REASON_UNSPECIFIED || reason == ErrorReason.UNRECOGNIZED) {
        continue;
      }
      assertTrue(reason.name().startsWith("ERROR_REASON_"), reason.name());
      String bare = reason.name().substring("ERROR_REASON_".length());
      assertEquals(bare, Reasons.name(reason));
      declared.put(bare, bare);
    }
    assertEquals(declared, constants());
  }

  @Test
  void theReasonStringsAreUnique() throws Exception {
    Map<String, String> constants = constants();
    Set<String> distinct = new HashSet<>(constants.values());
    assertEquals(constants.size(), distinct.size());
  }
}
