package dev.askuser.client;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The little JSON the client itself needs (an approval's arguments, as a {@link Map}, to and from
 * JSON text), without a JSON library in its dependencies. Values are plain Java: {@link Map}
 * (objects, keys in their order), {@link List} (arrays), {@link String}, {@link Long} (whole numbers
 * that fit), {@link Double} (other numbers), {@link Boolean} and {@code null}.
 */
final class Json {
  private Json() {}

  /** Writes a value (as above; any {@link Number}, {@link Iterable}, array of objects) as JSON text. */
  static String write(Object value) {
    StringBuilder out = new StringBuilder();
    write(value, out);
    return out.toString();
  }

  private static void write(Object value, StringBuilder out) {
    if (value == null) {
      out.append("null");
    } else if (value instanceof String text) {
      string(text, out);
    } else if (value instanceof Boolean bool) {
      out.append(bool);
    } else if (value instanceof Double || value instanceof Float) {
      double number = ((Number) value).doubleValue();
      if (!Double.isFinite(number)) {
        throw new IllegalArgumentException("JSON has no " + number);
      }
      out.append(number == Math.rint(number) && Math.abs(number) < 1e15 ? Long.toString((long) number) : Double.toString(number));
    } else if (value instanceof Long || value instanceof Integer || value instanceof Short || value instanceof Byte
        || value instanceof BigInteger) {
      out.append(value);
    } else if (value instanceof BigDecimal decimal) {
      out.append(decimal.toString());
    } else if (value instanceof Map<?, ?> map) {
      out.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> entry : map.entrySet()) {
        if (!(entry.getKey() instanceof String key)) {
          throw new IllegalArgumentException("a JSON object's keys are strings, not " + entry.getKey());
        }
        if (!first) {
          out.append(',');
        }
        first = false;
        string(key, out);
        out.append(':');
        write(entry.getValue(), out);
      }
      out.append('}');
    } else if (value instanceof Iterable<?> items) {
      out.append('[');
      boolean first = true;
      for (Object item : items) {
        if (!first) {
          out.append(',');
        }
        first = false;
        write(item, out);
      }
      out.append(']');
    } else if (value instanceof Object[] items) {
      write(List.of(items), out);
    } else {
      throw new IllegalArgumentException(
          "cannot write a " + value.getClass().getName() + " as JSON (maps, lists, strings, numbers, booleans, null)");
    }
  }

  private static void string(String text, StringBuilder out) {
    out.append('"');
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        case '\b' -> out.append("\\b");
        case '\f' -> out.append("\\f");
        default -> {
          if (c < 0x20) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    out.append('"');
  }

  /** Parses JSON text; objects come back as unmodifiable maps in their keys' order. */
  static Object parse(String text) {
    Parser parser = new Parser(text);
    parser.space();
    Object value = parser.value();
    parser.space();
    if (parser.at < text.length()) {
      throw parser.error("text after the value");
    }
    return value;
  }

  /** Parses JSON text that must be an object. */
  @SuppressWarnings("unchecked")
  static Map<String, Object> parseObject(String text) {
    Object value = parse(text);
    if (!(value instanceof Map<?, ?>)) {
      throw new IllegalArgumentException("not a JSON object: " + text);
    }
    return (Map<String, Object>) value;
  }

  private static final class Parser {
    private final String text;
    private int at;

    Parser(String text) {
      this.text = text;
    }

    IllegalArgumentException error(String what) {
      return new IllegalArgumentException("bad JSON at " + at + ": " + what);
    }

    void space() {
      while (at < text.length() && " \t\r\n".indexOf(text.charAt(at)) >= 0) {
        at++;
      }
    }

    char peek() {
      if (at >= text.length()) {
        throw error("unexpected end");
      }
      return text.charAt(at);
    }

    void expect(char c) {
      if (peek() != c) {
        throw error("expected '" + c + "'");
      }
      at++;
    }

    Object value() {
      char c = peek();
      switch (c) {
        case '{' -> {
          return object();
        }
        case '[' -> {
          return array();
        }
        case '"' -> {
          return string();
        }
        case 't' -> {
          return literal("true", Boolean.TRUE);
        }
        case 'f' -> {
          return literal("false", Boolean.FALSE);
        }
        case 'n' -> {
          return literal("null", null);
        }
        default -> {
          if (c == '-' || (c >= '0' && c <= '9')) {
            return number();
          }
          throw error("unexpected '" + c + "'");
        }
      }
    }

    Object literal(String word, Object value) {
      if (!text.startsWith(word, at)) {
        throw error("expected " + word);
      }
      at += word.length();
      return value;
    }

    Map<String, Object> object() {
      expect('{');
      Map<String, Object> map = new LinkedHashMap<>();
      space();
      if (peek() == '}') {
        at++;
        return Collections.unmodifiableMap(map);
      }
      while (true) {
        space();
        String key = string();
        space();
        expect(':');
        space();
        map.put(key, value());
        space();
        if (peek() == ',') {
          at++;
          continue;
        }
        expect('}');
        return Collections.unmodifiableMap(map);
      }
    }

    List<Object> array() {
      expect('[');
      List<Object> list = new ArrayList<>();
      space();
      if (peek() == ']') {
        at++;
        return Collections.unmodifiableList(list);
      }
      while (true) {
        space();
        list.add(value());
        space();
        if (peek() == ',') {
          at++;
          continue;
        }
        expect(']');
        return Collections.unmodifiableList(list);
      }
    }

    String string() {
      expect('"');
      StringBuilder out = new StringBuilder();
      while (true) {
        char c = peek();
        at++;
        if (c == '"') {
          return out.toString();
        }
        if (c != '\\') {
          out.append(c);
          continue;
        }
        char escape = peek();
        at++;
        switch (escape) {
          case '"', '\\', '/' -> out.append(escape);
          case 'n' -> out.append('\n');
          case 'r' -> out.append('\r');
          case 't' -> out.append('\t');
          case 'b' -> out.append('\b');
          case 'f' -> out.append('\f');
          case 'u' -> {
            if (at + 4 > text.length()) {
              throw error("short \\u escape");
            }
            try {
              out.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
            } catch (NumberFormatException e) {
              throw error("bad \\u escape");
            }
            at += 4;
          }
          default -> throw error("bad escape \\" + escape);
        }
      }
    }

    Object number() {
      int start = at;
      boolean whole = true;
      while (at < text.length() && "+-0123456789.eE".indexOf(text.charAt(at)) >= 0) {
        char c = text.charAt(at);
        if (c == '.' || c == 'e' || c == 'E') {
          whole = false;
        }
        at++;
      }
      String number = text.substring(start, at);
      try {
        if (whole) {
          try {
            return Long.parseLong(number);
          } catch (NumberFormatException tooBig) {
            return Double.parseDouble(number);
          }
        }
        return Double.parseDouble(number);
      } catch (NumberFormatException e) {
        throw error("bad number " + number);
      }
    }
  }
}
