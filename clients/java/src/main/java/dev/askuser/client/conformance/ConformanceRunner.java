package dev.askuser.client.conformance;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;

/**
 * Runs every conformance scenario ({@code tests/conformance/*.json}, sorted by name) against one
 * server and prints {@code N passed, N failed} as its last line; exits 1 when any failed.
 *
 * <p>Usage: {@code ConformanceRunner HOST:PORT [SCENARIO_DIR]}; the folder defaults to {@code
 * ../../tests/conformance}, which is right when run from {@code clients/java}.
 */
public final class ConformanceRunner {
  /** A scenario that hangs (a call the server never answers) fails after this, and the run goes on. */
  private static final long SCENARIO_TIMEOUT_SECONDS = 60;

  private ConformanceRunner() {}

  public static void main(String[] args) throws IOException, InterruptedException {
    if (args.length < 1 || args.length > 2) {
      System.err.println("usage: ConformanceRunner HOST:PORT [SCENARIO_DIR]");
      System.exit(2);
    }
    String target = args[0];
    Path folder = Path.of(args.length == 2 ? args[1] : "../../tests/conformance");
    List<Path> files;
    try (Stream<Path> listing = Files.list(folder)) {
      files = listing.filter(p -> p.getFileName().toString().endsWith(".json")).sorted().toList();
    }
    if (files.isEmpty()) {
      System.out.println("no scenarios in " + folder.toAbsolutePath());
    }

    ObjectMapper json = new ObjectMapper();
    ExecutorService worker = Executors.newSingleThreadExecutor(r -> {
      Thread thread = new Thread(r, "scenario");
      thread.setDaemon(true);
      return thread;
    });
    int passed = 0;
    int failed = 0;
    for (Path file : files) {
      String label = file.getFileName().toString();
      try (Callers callers = new Callers(target)) {
        JsonNode scenario = json.readTree(file.toFile());
        label += " (" + scenario.path("name").asText("?") + ")";
        Future<?> run = worker.submit(() -> {
          new Scenario(callers, scenario).run();
          return null;
        });
        try {
          run.get(SCENARIO_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } finally {
          // Closing the clients (end of this try) cancels a call the scenario may still wait on.
          run.cancel(true);
        }
        System.out.println("PASS " + label);
        passed++;
      } catch (ExecutionException e) {
        System.out.println("FAIL " + label + ": " + describe(e.getCause()));
        failed++;
      } catch (TimeoutException e) {
        System.out.println("FAIL " + label + ": still running after " + SCENARIO_TIMEOUT_SECONDS + "s");
        failed++;
      } catch (IOException e) {
        System.out.println("FAIL " + label + ": cannot read: " + e.getMessage());
        failed++;
      }
    }
    worker.shutdownNow();
    System.out.println(passed + " passed, " + failed + " failed");
    System.exit(failed > 0 || files.isEmpty() ? 1 : 0);
  }

  private static String describe(Throwable failure) {
    return failure instanceof ScenarioFailure ? failure.getMessage() : failure.toString();
  }
}
