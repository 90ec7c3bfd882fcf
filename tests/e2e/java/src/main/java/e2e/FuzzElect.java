package e2e;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ElectLeadersOptions;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TimeoutException;

/**
 * The Java child of tests/fuzz-clients/driver.py: a loop of Admin.electLeaders calls
 * against `elect-leaders fuzz --serve`.
 *
 * <pre>FuzzElect BOOTSTRAP CALLS TIMEOUT_MS [driven]</pre>
 *
 * After making an Admin it prints {"admin": g} (g counts the Admins of this process from
 * 0). Before each call it prints {"call": k}, after it {"call": k, "outcome": "accepted",
 * "results": N} or {"call": k, "outcome": "exception", "kind": "class", "message": ".."}
 * (the cause of an ExecutionException), one line each, flushed. Per-partition errors are
 * part of an accepted answer. When the Admin's thread has ended, the outcome line also
 * has "cause": what ended it ("class: message").
 *
 * A response the Admin cannot handle can end its only thread (FUZZING.md, finding 1);
 * every call then fails with "The AdminClient thread has exited." That call is reported as
 * it is (the driver counts it as a dead Admin), then this Admin is closed and a new one made
 * in the same process, announced by the next {"admin": g} line, so that a dead Admin costs
 * a reconnect rather than a new JVM.
 *
 * With "driven" (the driver's mode) it decides nothing itself: after each outcome line it
 * reads one line from standard input, "next" (go on with this Admin) or "renew" (close it,
 * make a new one, print {"admin": g}), and stops at the end of its input. The driver knows
 * from the server's record what this process cannot see: that an Admin has stopped
 * sending requests (e.g. one told by a response to wait 2^31 ms).
 */
public final class FuzzElect {
    /**
     * How KafkaAdminClient's message starts for every call once its thread has ended: the
     * calls it held get " Call: NAME" after it, later ones this alone.
     */
    static final String THREAD_EXITED = "The AdminClient thread has exited.";

    /** The Admin's thread, as KafkaAdminClient names it for our client id. */
    static final String ADMIN_THREAD = "kafka-admin-client-thread | fuzz-java";

    /** What ended the current Admin's thread, if something has. */
    static final AtomicReference<Throwable> CAUSE = new AtomicReference<>();

    /** The current Admin's thread. */
    static final AtomicReference<Thread> THREAD = new AtomicReference<>();

    private FuzzElect() {
    }

    /**
     * The Admin's thread logs what ends it through slf4j (silent here): catch it on the way,
     * for the outcome line, and let the thread's own handler have it too.
     */
    static Admin create(Properties p) {
        Admin admin = Admin.create(p);
        CAUSE.set(null);
        THREAD.set(null);
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().equals(ADMIN_THREAD) && t.isAlive()) {
                THREAD.set(t);
                Thread.UncaughtExceptionHandler own = t.getUncaughtExceptionHandler();
                t.setUncaughtExceptionHandler((thread, e) -> {
                    CAUSE.set(e);
                    if (own != null) {
                        own.uncaughtException(thread, e);
                    }
                });
            }
        }
        return admin;
    }

    /** One line, with "t": the wall clock in ms (the driver attributes responses by it). */
    static void say(String json) {
        System.out.println(json.substring(0, json.length() - 1) + ",\"t\":" + System.currentTimeMillis() + "}");
        System.out.flush();
    }

    public static void main(String[] argv) throws Exception {
        String bootstrap = argv[0];
        int calls = Integer.parseInt(argv[1]);
        int timeoutMs = Integer.parseInt(argv[2]);
        boolean driven = argv.length > 3 && argv[3].equals("driven");
        BufferedReader orders = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, "fuzz-java");
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, Integer.toString(timeoutMs));
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, Integer.toString(timeoutMs));
        p.put(AdminClientConfig.RETRIES_CONFIG, "0");
        p.put(AdminClientConfig.RECONNECT_BACKOFF_MS_CONFIG, "10");
        p.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "50");
        Set<TopicPartition> parts = new HashSet<>();
        parts.add(new TopicPartition("fuzz-a", 0));
        parts.add(new TopicPartition("fuzz-a", 1));
        parts.add(new TopicPartition("fuzz-b", 7));
        int generation = 0;
        Admin admin = create(p);
        say("{\"admin\":" + generation + "}");
        try {
            for (int k = 0; k < calls; k++) {
                say("{\"call\":" + k + "}");
                ElectLeadersOptions o = new ElectLeadersOptions().timeoutMs(timeoutMs);
                Throwable failure = null;
                try {
                    Map<TopicPartition, Optional<Throwable>> r = admin
                            .electLeaders(ElectionType.PREFERRED, parts, o)
                            .partitions().get(timeoutMs + 5000L, TimeUnit.MILLISECONDS);
                    say("{\"call\":" + k + ",\"outcome\":\"accepted\",\"results\":" + r.size() + "}");
                } catch (ExecutionException e) {
                    failure = e.getCause() == null ? e : e.getCause();
                } catch (Exception e) {
                    failure = e;
                }
                if (failure != null) {
                    report(k, failure);
                }
                boolean renew;
                if (driven) {
                    String order = orders.readLine();
                    if (order == null) {
                        break;
                    }
                    renew = order.equals("renew");
                } else {
                    renew = failure instanceof TimeoutException
                            && String.valueOf(failure.getMessage()).startsWith(THREAD_EXITED);
                }
                if (renew) {
                    // No call is in progress: close() returns once the thread has ended (a
                    // dead Admin's already has, closing its network client as it went).
                    admin.close(Duration.ofMillis(timeoutMs));
                    generation++;
                    admin = create(p);
                    say("{\"admin\":" + generation + "}");
                }
            }
        } finally {
            admin.close(Duration.ofMillis(timeoutMs));
        }
        System.exit(0);
    }

    static void report(int k, Throwable t) {
        String message = String.valueOf(t.getMessage());
        if (message.length() > 300) {
            message = message.substring(0, 300);
        }
        String cause = "";
        Thread admin = THREAD.get();
        if (admin != null && message.startsWith(THREAD_EXITED)) {
            // The thread fails its calls on its way out, before its handler runs: wait
            // for its end (it has no more work, so at once).
            try {
                admin.join(5000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        Throwable c = CAUSE.get();
        if (c != null && message.startsWith(THREAD_EXITED)) {
            String m = String.valueOf(c.getMessage());
            cause = ",\"cause\":" + AdminTool.q(c.getClass().getName() + ": "
                    + (m.length() > 300 ? m.substring(0, 300) : m));
        }
        say("{\"call\":" + k + ",\"outcome\":\"exception\",\"kind\":" + AdminTool.q(t.getClass().getName())
                + ",\"message\":" + AdminTool.q(message) + cause + "}");
    }
}
