package interop;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.protocol.ApiKeys;

/**
 * Kafka's own tables, one JSON line each, for the guard's tests (crates/proxy/tests/
 * kafka_tables.rs): every API key of {@link ApiKeys} with its name, whether Kafka checks it
 * as a cluster action and the listeners that serve it; and every topic config key of
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
            ArrayNode listeners = line.putArray("listeners");
            for (ApiMessageType.ListenerType listener : key.messageType.listeners()) {
                listeners.add(listener.name().toLowerCase());
            }
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
