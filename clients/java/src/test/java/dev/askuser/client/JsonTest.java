package dev.askuser.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The client's own JSON (an approval's arguments), without a server. */
class JsonTest {
  @Test
  void writesAndReadsBackPlainValues() {
    Map<String, Object> value = new LinkedHashMap<>();
    value.put("s", "a \"quoted\" line\\n\u00e9\u0001");
    value.put("n", 3);
    value.put("big", 12345678901L);
    value.put("x", 2.5);
    value.put("whole", 4.0);
    value.put("b", true);
    value.put("none", null);
    value.put("list", List.of(1, "two", Map.of("k", false)));
    String json = Json.write(value);
    assertEquals(
        "{\"s\":\"a \\\"quoted\\\" line\\\\n\u00e9\\u0001\",\"n\":3,\"big\":12345678901,\"x\":2.5,\"whole\":4,"
            + "\"b\":true,\"none\":null,\"list\":[1,\"two\",{\"k\":false}]}",
        json);
    Map<String, Object> back = Json.parseObject(json);
    assertEquals(value.get("s"), back.get("s"));
    assertEquals(3L, back.get("n"));
    assertEquals(12345678901L, back.get("big"));
    assertEquals(2.5, back.get("x"));
    assertEquals(4L, back.get("whole"));
    assertEquals(true, back.get("b"));
    assertEquals(null, back.get("none"));
    assertEquals(Arrays.asList(1L, "two", Map.of("k", false)), back.get("list"));
  }

  @Test
  void readsEscapesAndWhitespaceAndRefusesBadText() {
    assertEquals(Map.of("a", "\u00e9/\t", "e", 1.5e3), Json.parseObject(" { \"a\" : \"\\u00e9\\/\\t\" , \"e\": 1.5e3 } "));
    assertThrows(IllegalArgumentException.class, () -> Json.parseObject("[1]"));
    assertThrows(IllegalArgumentException.class, () -> Json.parse("{\"a\": 1} x"));
    assertThrows(IllegalArgumentException.class, () -> Json.parse("{\"a\": }"));
    assertThrows(IllegalArgumentException.class, () -> Json.write(Map.of("when", new Object())));
    assertThrows(IllegalArgumentException.class, () -> Json.write(Double.NaN));
  }
}
