package e2e;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ElectLeadersOptions;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka's own Admin client behind a small command line, for the end-to-end tests. Every
 * command prints exactly one JSON line on stdout and exits 0 when the command ran (whatever the
 * cluster answered), non-zero when it could not run.
 *
 * <pre>
 * AdminTool elect    --bootstrap B --type preferred|unclean [--partition topic:N ...] [--client-id ID] [--timeout-ms N]
 *                    (no --partition: all partitions, a null TopicPartitions)
 * AdminTool create   --bootstrap B --topic T --assignment 2,3[/3,2...] [--config k=v ...]
 * AdminTool reassign --bootstrap B --partition topic:N --replicas 3,2
 * AdminTool describe --bootstrap B --topic T ...
 * AdminTool produce  --bootstrap B --partition topic:N [--count N] [--interval-ms N]
 * AdminTool consume  --bootstrap B --partition topic:N --duration-ms N   (from the start; records counted)
 * AdminTool producers --bootstrap B --partition topic:N   (describeProducers: ids, epochs, open transactions)
 * AdminTool delete   --bootstrap B --topic T ...
 * AdminTool cluster  --bootstrap B          (describeCluster: the nodes and the controller as told)
 * AdminTool alter    --bootstrap B --resource topic:T|broker:ID|broker: [--set k=v ...] [--delete k ...]
 *                    (incrementalAlterConfigs; "broker:" is the cluster default)
 * AdminTool configs  --bootstrap B --resource R --key K ...   (describeConfigs: each key's value and source)
 * AdminTool try      --bootstrap B --what reassign|add-partitions|delete|create ...
 *                    reassign --partition t:N --replicas 3,2; add-partitions --topic T --count N;
 *                    delete --topic T; create --topic T --assignment 2,3 [--config k=v]
 *                    (one call, not waited on: {"op":"try","what":..,"error":null|{...}})
 * </pre>
 *
 * Every command also takes {@code --client-config FILE}: client properties (security.protocol,
 * sasl.*, ssl.*) added to the Admin's or the producer's, for a TLS or SASL listener.
 */
public final class AdminTool {
    private AdminTool() {}

    public static void main(String[] argv) throws Exception {
        if (argv.length == 0) {
            System.err.println("usage: AdminTool elect|create|reassign|describe|produce|delete|cluster --bootstrap B ...");
            System.exit(2);
        }
        String cmd = argv[0];
        Map<String, List<String>> opts = parse(argv);
        String bootstrap = one(opts, "bootstrap", null);
        if (bootstrap == null) {
            fail("--bootstrap is required");
        }
        String clientId = one(opts, "client-id", "e2e-java-setup");
        Properties extra = new Properties();
        String clientConfig = one(opts, "client-config", null);
        if (clientConfig != null) {
            try (java.io.Reader r = java.nio.file.Files.newBufferedReader(java.nio.file.Path.of(clientConfig))) {
                extra.load(r);
            }
        }
        int code;
        if (cmd.equals("produce")) {
            code = produce(bootstrap, clientId, extra, opts);
        } else if (cmd.equals("consume")) {
            code = consume(bootstrap, clientId, extra, opts);
        } else {
            Properties p = new Properties();
            p.putAll(extra);
            p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(AdminClientConfig.CLIENT_ID_CONFIG, clientId);
            p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "20000");
            p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
            try (Admin admin = Admin.create(p)) {
                switch (cmd) {
                    case "elect": code = elect(admin, opts); break;
                    case "create": code = create(admin, opts); break;
                    case "reassign": code = reassign(admin, opts); break;
                    case "describe": code = describe(admin, opts); break;
                    case "delete": code = delete(admin, opts); break;
                    case "cluster": code = cluster(admin); break;
                    case "alter": code = alter(admin, opts); break;
                    case "configs": code = configs(admin, opts); break;
                    case "try": code = attempt(admin, opts); break;
                    case "producers": code = producers(admin, opts); break;
                    default: fail("unknown command " + cmd); code = 2;
                }
            }
        }
        System.out.flush();
        System.exit(code);
    }

    // elect: {"op":"elect","type":"PREFERRED","client_id":..,"requested":[..]|null,
    //         "results":[{"topic","partition","error":null|{"code","name","class","message"}}],
    //         "error":null|{...}}  (error: the whole request failed)
    static int elect(Admin admin, Map<String, List<String>> opts) throws Exception {
        String type = one(opts, "type", "preferred");
        ElectionType et = type.equalsIgnoreCase("unclean") ? ElectionType.UNCLEAN : ElectionType.PREFERRED;
        Set<TopicPartition> parts = null;
        if (opts.containsKey("partition")) {
            parts = new HashSet<>();
            for (String s : opts.get("partition")) {
                parts.add(tp(s));
            }
        }
        ElectLeadersOptions o = new ElectLeadersOptions();
        o.timeoutMs(Integer.parseInt(one(opts, "timeout-ms", "30000")));
        StringBuilder out = new StringBuilder("{\"op\":\"elect\",\"type\":").append(q(et.name()));
        out.append(",\"requested\":");
        if (parts == null) {
            out.append("null");
        } else {
            out.append('[');
            boolean first = true;
            for (TopicPartition t : parts) {
                out.append(first ? "" : ",").append("{\"topic\":").append(q(t.topic()))
                        .append(",\"partition\":").append(t.partition()).append('}');
                first = false;
            }
            out.append(']');
        }
        try {
            Map<TopicPartition, Optional<Throwable>> r = admin.electLeaders(et, parts, o).partitions().get();
            out.append(",\"error\":null,\"results\":[");
            boolean first = true;
            for (Map.Entry<TopicPartition, Optional<Throwable>> e : r.entrySet()) {
                out.append(first ? "" : ",").append("{\"topic\":").append(q(e.getKey().topic()))
                        .append(",\"partition\":").append(e.getKey().partition())
                        .append(",\"error\":").append(e.getValue().map(AdminTool::err).orElse("null")).append('}');
                first = false;
            }
            out.append("]}");
        } catch (ExecutionException e) {
            out.append(",\"error\":").append(err(e.getCause())).append(",\"results\":null}");
        }
        System.out.println(out);
        return 0;
    }

    static int create(Admin admin, Map<String, List<String>> opts) throws Exception {
        String topic = one(opts, "topic", null);
        Map<Integer, List<Integer>> assignment = new LinkedHashMap<>();
        int p = 0;
        for (String replicas : one(opts, "assignment", "2,3").split("/")) {
            assignment.put(p++, ints(replicas));
        }
        NewTopic nt = new NewTopic(topic, assignment);
        Map<String, String> configs = new HashMap<>();
        for (String kv : opts.getOrDefault("config", List.of())) {
            String[] s = kv.split("=", 2);
            configs.put(s[0], s[1]);
        }
        nt.configs(configs);
        admin.createTopics(List.of(nt)).all().get(30, TimeUnit.SECONDS);
        // Wait until every partition has its leader, as seen through metadata.
        long deadline = System.currentTimeMillis() + 30000;
        while (true) {
            TopicDescription d = describeOne(admin, topic);
            if (d != null && d.partitions().size() == assignment.size()
                    && d.partitions().stream().allMatch(i -> i.leader() != null && !i.leader().isEmpty())) {
                break;
            }
            if (System.currentTimeMillis() > deadline) {
                fail("topic " + topic + " has no leader after 30s");
            }
            Thread.sleep(100);
        }
        System.out.println("{\"op\":\"create\",\"topic\":" + q(topic) + "}");
        return 0;
    }

    static int reassign(Admin admin, Map<String, List<String>> opts) throws Exception {
        TopicPartition t = tp(one(opts, "partition", null));
        List<Integer> replicas = ints(one(opts, "replicas", null));
        admin.alterPartitionReassignments(Map.of(t, Optional.of(new NewPartitionReassignment(replicas))))
                .all().get(30, TimeUnit.SECONDS);
        long deadline = System.currentTimeMillis() + 30000;
        while (!admin.listPartitionReassignments(Set.of(t)).reassignments().get().isEmpty()) {
            if (System.currentTimeMillis() > deadline) {
                fail("reassignment of " + t + " still running after 30s");
            }
            Thread.sleep(100);
        }
        // Also wait until the new replica order is what metadata reports.
        while (true) {
            TopicDescription d = describeOne(admin, t.topic());
            List<Integer> now = new ArrayList<>();
            for (Node n : d.partitions().get(t.partition()).replicas()) {
                now.add(n.id());
            }
            if (now.equals(replicas)) {
                break;
            }
            if (System.currentTimeMillis() > deadline) {
                fail("replicas of " + t + " are " + now + ", not " + replicas);
            }
            Thread.sleep(100);
        }
        System.out.println("{\"op\":\"reassign\",\"topic\":" + q(t.topic()) + ",\"partition\":" + t.partition()
                + ",\"replicas\":" + replicas + "}");
        return 0;
    }

    // describe: {"op":"describe","topics":{"t":[{"partition","leader","replicas","isr","elr","last_known_elr"}]}}
    // A topic that does not exist: null.
    static int describe(Admin admin, Map<String, List<String>> opts) throws Exception {
        StringBuilder out = new StringBuilder("{\"op\":\"describe\",\"topics\":{");
        boolean first = true;
        for (String topic : opts.getOrDefault("topic", List.of())) {
            out.append(first ? "" : ",").append(q(topic)).append(':');
            first = false;
            TopicDescription d = describeOne(admin, topic);
            if (d == null) {
                out.append("null");
                continue;
            }
            out.append('[');
            boolean firstP = true;
            for (TopicPartitionInfo i : d.partitions()) {
                out.append(firstP ? "" : ",").append("{\"partition\":").append(i.partition())
                        .append(",\"leader\":").append(i.leader() == null || i.leader().isEmpty() ? "null" : i.leader().id())
                        .append(",\"replicas\":").append(ids(i.replicas()))
                        .append(",\"isr\":").append(ids(i.isr()))
                        .append(",\"elr\":").append(ids(i.elr()))
                        .append(",\"last_known_elr\":").append(ids(i.lastKnownElr())).append('}');
                firstP = false;
            }
            out.append(']');
        }
        System.out.println(out.append("}}"));
        return 0;
    }

    static int delete(Admin admin, Map<String, List<String>> opts) throws Exception {
        admin.deleteTopics(opts.getOrDefault("topic", List.of())).all().get(30, TimeUnit.SECONDS);
        System.out.println("{\"op\":\"delete\"}");
        return 0;
    }

    // cluster: {"op":"cluster","cluster_id":..,"controller":null|{"id","host","port"},
    //           "nodes":[{"id","host","port"}]}  (nodes sorted by id)
    static int cluster(Admin admin) throws Exception {
        DescribeClusterResult r = admin.describeCluster();
        List<Node> nodes = new ArrayList<>(r.nodes().get(30, TimeUnit.SECONDS));
        nodes.sort((a, b) -> Integer.compare(a.id(), b.id()));
        Node controller = r.controller().get(30, TimeUnit.SECONDS);
        StringBuilder out = new StringBuilder("{\"op\":\"cluster\",\"cluster_id\":")
                .append(q(r.clusterId().get(30, TimeUnit.SECONDS)))
                .append(",\"controller\":").append(controller == null || controller.isEmpty() ? "null" : node(controller))
                .append(",\"nodes\":[");
        boolean first = true;
        for (Node n : nodes) {
            out.append(first ? "" : ",").append(node(n));
            first = false;
        }
        System.out.println(out.append("]}"));
        return 0;
    }

    static org.apache.kafka.common.config.ConfigResource resource(String spec) {
        int i = spec.indexOf(':');
        String kind = spec.substring(0, i);
        String name = spec.substring(i + 1);
        return new org.apache.kafka.common.config.ConfigResource(kind.equals("topic")
                ? org.apache.kafka.common.config.ConfigResource.Type.TOPIC
                : org.apache.kafka.common.config.ConfigResource.Type.BROKER, name);
    }

    /** The outcome of one Admin call: {"op":OP,...,"error":null|{...}}. */
    static int outcome(String op, String what, org.apache.kafka.common.KafkaFuture<?> f) throws Exception {
        String error;
        try {
            f.get(30, TimeUnit.SECONDS);
            error = "null";
        } catch (ExecutionException e) {
            error = err(e.getCause());
        }
        System.out.println("{\"op\":" + q(op) + (what == null ? "" : ",\"what\":" + q(what))
                + ",\"error\":" + error + "}");
        return 0;
    }

    static int alter(Admin admin, Map<String, List<String>> opts) throws Exception {
        org.apache.kafka.common.config.ConfigResource r = resource(one(opts, "resource", null));
        List<org.apache.kafka.clients.admin.AlterConfigOp> ops = new ArrayList<>();
        for (String kv : opts.getOrDefault("set", List.of())) {
            String[] s = kv.split("=", 2);
            ops.add(new org.apache.kafka.clients.admin.AlterConfigOp(
                    new org.apache.kafka.clients.admin.ConfigEntry(s[0], s[1]),
                    org.apache.kafka.clients.admin.AlterConfigOp.OpType.SET));
        }
        for (String k : opts.getOrDefault("delete", List.of())) {
            ops.add(new org.apache.kafka.clients.admin.AlterConfigOp(
                    new org.apache.kafka.clients.admin.ConfigEntry(k, null),
                    org.apache.kafka.clients.admin.AlterConfigOp.OpType.DELETE));
        }
        return outcome("alter", null, admin.incrementalAlterConfigs(Map.of(r, ops)).all());
    }

    // configs: {"op":"configs","configs":{"key":{"value":..,"source":..}|null}}
    static int configs(Admin admin, Map<String, List<String>> opts) throws Exception {
        org.apache.kafka.common.config.ConfigResource r = resource(one(opts, "resource", null));
        org.apache.kafka.clients.admin.Config c = admin.describeConfigs(List.of(r)).all()
                .get(30, TimeUnit.SECONDS).get(r);
        StringBuilder out = new StringBuilder("{\"op\":\"configs\",\"configs\":{");
        boolean first = true;
        for (String k : opts.getOrDefault("key", List.of())) {
            org.apache.kafka.clients.admin.ConfigEntry e = c.get(k);
            out.append(first ? "" : ",").append(q(k)).append(':');
            out.append(e == null ? "null" : "{\"value\":" + q(e.value()) + ",\"source\":" + q(e.source().name()) + "}");
            first = false;
        }
        System.out.println(out.append("}}"));
        return 0;
    }

    static int attempt(Admin admin, Map<String, List<String>> opts) throws Exception {
        String what = one(opts, "what", "");
        switch (what) {
            case "reassign": {
                TopicPartition t = tp(one(opts, "partition", null));
                List<Integer> replicas = ints(one(opts, "replicas", null));
                return outcome("try", what, admin.alterPartitionReassignments(
                        Map.of(t, Optional.of(new NewPartitionReassignment(replicas)))).all());
            }
            case "add-partitions":
                return outcome("try", what, admin.createPartitions(Map.of(one(opts, "topic", null),
                        org.apache.kafka.clients.admin.NewPartitions.increaseTo(
                                Integer.parseInt(one(opts, "count", "2"))))).all());
            case "delete":
                return outcome("try", what, admin.deleteTopics(opts.getOrDefault("topic", List.of())).all());
            case "create": {
                Map<Integer, List<Integer>> assignment = new LinkedHashMap<>();
                int p = 0;
                for (String replicas : one(opts, "assignment", "2,3").split("/")) {
                    assignment.put(p++, ints(replicas));
                }
                NewTopic nt = new NewTopic(one(opts, "topic", null), assignment);
                Map<String, String> configs = new HashMap<>();
                for (String kv : opts.getOrDefault("config", List.of())) {
                    String[] s = kv.split("=", 2);
                    configs.put(s[0], s[1]);
                }
                nt.configs(configs);
                return outcome("try", what, admin.createTopics(List.of(nt)).all());
            }
            default:
                fail("unknown --what " + what);
                return 2;
        }
    }

    static String node(Node n) {
        return "{\"id\":" + n.id() + ",\"host\":" + q(n.host()) + ",\"port\":" + n.port() + "}";
    }

    static int produce(String bootstrap, String clientId, Properties extra, Map<String, List<String>> opts)
            throws Exception {
        TopicPartition t = tp(one(opts, "partition", null));
        int count = Integer.parseInt(one(opts, "count", "10"));
        long interval = Long.parseLong(one(opts, "interval-ms", "0"));
        Properties p = new Properties();
        p.putAll(extra);
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        p.put(ProducerConfig.ACKS_CONFIG, "1");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "20000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        try (KafkaProducer<String, String> prod = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < count; i++) {
                prod.send(new ProducerRecord<>(t.topic(), t.partition(), "k" + i, "v" + i)).get(20, TimeUnit.SECONDS);
                if (interval > 0) {
                    Thread.sleep(interval);
                }
            }
        }
        System.out.println("{\"op\":\"produce\",\"topic\":" + q(t.topic()) + ",\"partition\":" + t.partition()
                + ",\"count\":" + count + "}");
        return 0;
    }

    // consume: {"op":"consume","topic":..,"partition":N,"count":records read}
    static int consume(String bootstrap, String clientId, Properties extra, Map<String, List<String>> opts)
            throws Exception {
        TopicPartition t = tp(one(opts, "partition", null));
        long duration = Long.parseLong(one(opts, "duration-ms", "5000"));
        Properties p = new Properties();
        p.putAll(extra);
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        long count = 0;
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
            c.assign(List.of(t));
            c.seekToBeginning(List.of(t));
            long end = System.currentTimeMillis() + duration;
            while (System.currentTimeMillis() < end) {
                ConsumerRecords<String, String> records = c.poll(java.time.Duration.ofMillis(200));
                count += records.count();
            }
        }
        System.out.println("{\"op\":\"consume\",\"topic\":" + q(t.topic()) + ",\"partition\":" + t.partition()
                + ",\"count\":" + count + "}");
        return 0;
    }

    // producers: {"op":"producers","producers":[{"producer_id","producer_epoch","coordinator_epoch",
    // "txn_start_offset"}]} (-1 where the broker has none)
    static int producers(Admin admin, Map<String, List<String>> opts) throws Exception {
        TopicPartition t = tp(one(opts, "partition", null));
        List<ProducerState> states = admin.describeProducers(List.of(t)).partitionResult(t)
            .get(30, TimeUnit.SECONDS).activeProducers();
        StringBuilder out = new StringBuilder("{\"op\":\"producers\",\"producers\":[");
        for (int i = 0; i < states.size(); i++) {
            ProducerState s = states.get(i);
            out.append(i == 0 ? "" : ",").append("{\"producer_id\":").append(s.producerId())
                .append(",\"producer_epoch\":").append(s.producerEpoch())
                .append(",\"coordinator_epoch\":").append(s.coordinatorEpoch().orElse(-1))
                .append(",\"txn_start_offset\":").append(s.currentTransactionStartOffset().orElse(-1L))
                .append("}");
        }
        System.out.println(out.append("]}"));
        return 0;
    }

    static TopicDescription describeOne(Admin admin, String topic) throws Exception {
        try {
            return admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic);
        } catch (ExecutionException e) {
            if (Errors.forException(e.getCause()) == Errors.UNKNOWN_TOPIC_OR_PARTITION) {
                return null;
            }
            throw e;
        }
    }

    static String err(Throwable t) {
        Errors e = Errors.forException(t);
        return "{\"code\":" + e.code() + ",\"name\":" + q(e.name()) + ",\"class\":" + q(t.getClass().getName())
                + ",\"message\":" + q(t.getMessage()) + "}";
    }

    static String ids(Collection<Node> nodes) {
        StringBuilder b = new StringBuilder("[");
        boolean first = true;
        for (Node n : nodes) {
            b.append(first ? "" : ",").append(n.id());
            first = false;
        }
        return b.append(']').toString();
    }

    static List<Integer> ints(String s) {
        List<Integer> r = new ArrayList<>();
        for (String x : s.split(",")) {
            r.add(Integer.parseInt(x.trim()));
        }
        return r;
    }

    static TopicPartition tp(String s) {
        int i = s.lastIndexOf(':');
        return new TopicPartition(s.substring(0, i), Integer.parseInt(s.substring(i + 1)));
    }

    static String q(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
            }
        }
        return b.append('"').toString();
    }

    static Map<String, List<String>> parse(String[] argv) {
        Map<String, List<String>> m = new HashMap<>();
        for (int i = 1; i < argv.length; i++) {
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
                fail("bad argument " + argv[i]);
            }
            m.computeIfAbsent(argv[i].substring(2), k -> new ArrayList<>()).add(argv[++i]);
        }
        return m;
    }

    static String one(Map<String, List<String>> m, String k, String dflt) {
        List<String> v = m.get(k);
        return v == null || v.isEmpty() ? dflt : v.get(v.size() - 1);
    }

    static void fail(String msg) {
        System.err.println("AdminTool: " + msg);
        System.exit(2);
    }
}
