package interop;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;

/**
 * Kafka's own tables, one JSON line each, for the guard's tests (crates/proxy/tests/
 * kafka_tables.rs) and the codec's (tests/kafka_tables.rs): every API key of {@link ApiKeys}
 * with its name, whether Kafka checks it as a cluster action, the listeners that serve it,
 * its oldest and latest versions (the latest with and without an unstable last version) and
 * its first flexible version (the first whose request header is v2; null when none is) and
 * the request and response header version of each of its versions, oldest first;
 * every error of {@link Errors} (code, name); and every topic config key of
 * {@link TopicConfig} (its public String constants named *_CONFIG).
 */
public final class KafkaTables {
    public static void main(String[] args) throws Exception {
        ObjectMapper json = new ObjectMapper();
        StringBuilder out = new StringBuilder();
        for (ApiKeys key : ApiKeys.values()) {
            ObjectNode line = json.createObjectNode();
            line.put("api_key", key.id);
            line.put("name", key.name);
            line.put("cluster_action", key.clusterAction);
            line.put("forwardable", key.forwardable);
            line.put("oldest_version", key.oldestVersion());
            line.put("latest_version", key.latestVersion(true));
            line.put("latest_stable_version", key.latestVersion(false));
            Short firstFlexible = null;
            for (short v = key.oldestVersion(); v <= key.latestVersion(true); v++) {
                if (key.requestHeaderVersion(v) >= 2) {
                    firstFlexible = v;
                    break;
                }
            }
            if (firstFlexible == null) {
                line.putNull("first_flexible_version");
            } else {
                line.put("first_flexible_version", firstFlexible);
            }
            ArrayNode requestHeaders = line.putArray("request_header_versions");
            ArrayNode responseHeaders = line.putArray("response_header_versions");
            for (short v = key.oldestVersion(); v <= key.latestVersion(true); v++) {
                requestHeaders.add(key.requestHeaderVersion(v));
                responseHeaders.add(key.responseHeaderVersion(v));
            }
            ArrayNode listeners = line.putArray("listeners");
            for (ApiMessageType.ListenerType listener : key.messageType.listeners()) {
                listeners.add(listener.name().toLowerCase());
            }
            out.append(json.writeValueAsString(line)).append('\n');
        }
        for (Errors error : Errors.values()) {
            ObjectNode line = json.createObjectNode();
            line.put("error_code", error.code());
            line.put("error_name", error.name());
            out.append(json.writeValueAsString(line)).append('\n');
        }
        for (Field field : TopicConfig.class.getFields()) {
            int mods = field.getModifiers();
            if (Modifier.isStatic(mods) && field.getType() == String.class
                    && field.getName().endsWith("_CONFIG")) {
                ObjectNode line = json.createObjectNode();
                line.put("topic_config", (String) field.get(null));
                line.put("field", field.getName());
                line.put("deprecated", field.isAnnotationPresent(Deprecated.class));
                out.append(json.writeValueAsString(line)).append('\n');
            }
        }
        System.out.print(out);
    }
}
