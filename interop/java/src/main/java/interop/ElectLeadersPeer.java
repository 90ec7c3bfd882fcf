package interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.message.ElectLeadersRequestData;
import org.apache.kafka.common.message.ElectLeadersResponseData;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.message.ResponseHeaderData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.types.RawTaggedField;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.RequestAndSize;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.requests.RequestUtils;
import org.apache.kafka.common.requests.ResponseHeader;

import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * Apache Kafka's own ElectLeaders codec behind a JSON-lines pipe, so that one JVM serves
 * thousands of differential cases (tests/kafka_java.rs drives it).
 *
 * <p>One JSON object per input line, one per output line, in order:
 *
 * <ul>
 *   <li>{@code {"op":"decode_request","frame":HEX}}: the broker's path, {@code
 *       RequestHeader.parse} then {@code AbstractRequest.parseRequest}.
 *   <li>{@code {"op":"decode_response","version":V,"frame":HEX}}: the client's path, {@code
 *       ResponseHeader.parse} then {@code AbstractResponse.parseResponse}.
 *   <li>{@code {"op":"encode_request","message":M}} and {@code
 *       {"op":"encode_response","message":M}}: the generated writer ({@code
 *       RequestUtils.serialize}, which {@code serializeWithHeader} calls), header included.
 *   <li>{@code {"op":"api_keys"}}: every API key Kafka defines, {@code
 *       {"ok":true,"api_keys":[{"id":N,"name":S},...]}}.
 * </ul>
 *
 * <p>A frame is hex of the whole frame, int32 size prefix included. A decode answers {@code
 * {"ok":true,"message":M,"trailing":N,"reencoded":HEX}}: the values Kafka read, the bytes
 * left unread inside the frame (Kafka ignores them), and Kafka's writer applied to what it
 * read (or {@code "reencode_error"}). Any exception answers {@code
 * {"ok":false,"error":"Class: message"}}. Messages use the crate's JSON names (snake_case of
 * the schema), every field always present, unknown tagged fields as {@code
 * [{"tag":N,"data":HEX}]}.
 */
public final class ElectLeadersPeer {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HexFormat HEX = HexFormat.of();
    private static final ApiKeys API = ApiKeys.ELECT_LEADERS;

    private ElectLeadersPeer() {}

    public static void main(String[] args) throws IOException {
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out =
                new PrintStream(new BufferedOutputStream(System.out, 1 << 16), false, "UTF-8");
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode reply;
            try {
                reply = handle(JSON.readTree(line));
            } catch (Throwable e) {
                reply = failure(e);
            }
            out.println(JSON.writeValueAsString(reply));
            if (!in.ready()) {
                out.flush();
            }
        }
        out.flush();
    }

    private static ObjectNode handle(JsonNode command) {
        String op = command.path("op").asText();
        switch (op) {
            case "decode_request":
                return decodeRequest(HEX.parseHex(command.get("frame").asText()));
            case "decode_response":
                return decodeResponse(
                        (short) command.get("version").asInt(),
                        HEX.parseHex(command.get("frame").asText()));
            case "encode_request":
                return encodeRequest(command.get("message"));
            case "encode_response":
                return encodeResponse(command.get("message"));
            case "api_keys":
                return apiKeys();
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    private static ObjectNode apiKeys() {
        ObjectNode reply = JSON.createObjectNode();
        reply.put("ok", true);
        ArrayNode keys = reply.putArray("api_keys");
        for (ApiKeys key : ApiKeys.values()) {
            keys.addObject()
                    .put("id", key.id)
                    .put("name", key.name)
                    .put("oldest", key.oldestVersion())
                    .put("latest", key.latestVersion(true));
        }
        return reply;
    }

    private static ObjectNode failure(Throwable e) {
        ObjectNode reply = JSON.createObjectNode();
        reply.put("ok", false);
        reply.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
        return reply;
    }

    /** The bytes after the size prefix, limited to what the prefix declares. */
    private static ByteBuffer body(byte[] frame) {
        ByteBuffer buffer = ByteBuffer.wrap(frame);
        int size = buffer.getInt();
        if (size < 0 || size > buffer.remaining()) {
            throw new IllegalArgumentException(
                    "size prefix " + size + " but " + buffer.remaining() + " bytes follow");
        }
        buffer.limit(4 + size);
        return buffer;
    }

    private static String framed(ByteBuffer message) {
        ByteBuffer frame = ByteBuffer.allocate(4 + message.remaining());
        frame.putInt(message.remaining());
        frame.put(message);
        return HEX.formatHex(frame.array());
    }

    // ---------------------------------------------------------------------------------
    // Requests

    private static ObjectNode decodeRequest(byte[] frame) {
        ByteBuffer buffer = body(frame);
        RequestHeader header = RequestHeader.parse(buffer);
        if (header.apiKey() != API) {
            throw new IllegalArgumentException("api key " + header.apiKey().id + " is not 43");
        }
        short version = header.apiVersion();
        RequestAndSize parsed =
                AbstractRequest.parseRequest(API, version, new ByteBufferAccessor(buffer));
        ElectLeadersRequestData data = (ElectLeadersRequestData) parsed.request.data();
        ObjectNode reply = JSON.createObjectNode();
        reply.put("ok", true);
        reply.set("message", requestJson(header.data(), data));
        reply.put("trailing", buffer.remaining());
        reencode(reply, header.data(), header.headerVersion(), data, version);
        return reply;
    }

    private static ObjectNode requestJson(RequestHeaderData header, ElectLeadersRequestData data) {
        ObjectNode m = JSON.createObjectNode();
        m.put("kind", "request");
        m.put("api_key", header.requestApiKey());
        m.put("api_version", header.requestApiVersion());
        m.put("correlation_id", header.correlationId());
        m.put("client_id", header.clientId());
        m.set("header_tagged_fields", tagsJson(header.unknownTaggedFields()));
        m.put("election_type", data.electionType());
        if (data.topicPartitions() == null) {
            m.putNull("topic_partitions");
        } else {
            ArrayNode topics = m.putArray("topic_partitions");
            for (ElectLeadersRequestData.TopicPartitions t : data.topicPartitions()) {
                ObjectNode topic = topics.addObject();
                topic.put("topic", t.topic());
                ArrayNode partitions = topic.putArray("partitions");
                t.partitions().forEach(partitions::add);
                topic.set("tagged_fields", tagsJson(t.unknownTaggedFields()));
            }
        }
        m.put("timeout_ms", data.timeoutMs());
        m.set("tagged_fields", tagsJson(data.unknownTaggedFields()));
        return m;
    }

    private static ObjectNode encodeRequest(JsonNode m) {
        short version = (short) m.get("api_version").asInt();
        RequestHeaderData header =
                new RequestHeaderData()
                        .setRequestApiKey((short) m.path("api_key").asInt(API.id))
                        .setRequestApiVersion(version)
                        .setCorrelationId(m.get("correlation_id").asInt())
                        .setClientId(text(m.get("client_id")));
        addTags(header.unknownTaggedFields(), m.get("header_tagged_fields"));
        ElectLeadersRequestData data =
                new ElectLeadersRequestData()
                        .setElectionType((byte) m.path("election_type").asInt(0))
                        .setTimeoutMs(m.path("timeout_ms").asInt(60000));
        JsonNode topics = m.get("topic_partitions");
        if (topics == null || topics.isNull()) {
            data.setTopicPartitions(null);
        } else {
            for (JsonNode t : topics) {
                ElectLeadersRequestData.TopicPartitions topic =
                        new ElectLeadersRequestData.TopicPartitions().setTopic(text(t.get("topic")));
                List<Integer> partitions = new ArrayList<>();
                t.get("partitions").forEach(p -> partitions.add(p.asInt()));
                topic.setPartitions(partitions);
                addTags(topic.unknownTaggedFields(), t.get("tagged_fields"));
                data.topicPartitions().add(topic);
            }
        }
        addTags(data.unknownTaggedFields(), m.get("tagged_fields"));
        ObjectNode reply = JSON.createObjectNode();
        reply.put("ok", true);
        reply.put(
                "frame",
                framed(RequestUtils.serialize(header, API.requestHeaderVersion(version), data, version)));
        return reply;
    }

    // ---------------------------------------------------------------------------------
    // Responses

    private static ObjectNode decodeResponse(short version, byte[] frame) {
        ByteBuffer buffer = body(frame);
        short headerVersion = API.responseHeaderVersion(version);
        ResponseHeader header = ResponseHeader.parse(buffer, headerVersion);
        AbstractResponse parsed =
                AbstractResponse.parseResponse(API, new ByteBufferAccessor(buffer), version);
        ElectLeadersResponseData data = (ElectLeadersResponseData) parsed.data();
        ObjectNode reply = JSON.createObjectNode();
        reply.put("ok", true);
        reply.set("message", responseJson(version, header.data(), data));
        reply.put("trailing", buffer.remaining());
        reencode(reply, header.data(), headerVersion, data, version);
        return reply;
    }

    private static ObjectNode responseJson(
            short version, ResponseHeaderData header, ElectLeadersResponseData data) {
        ObjectNode m = JSON.createObjectNode();
        m.put("kind", "response");
        m.put("api_version", version);
        m.put("correlation_id", header.correlationId());
        m.set("header_tagged_fields", tagsJson(header.unknownTaggedFields()));
        m.put("throttle_time_ms", data.throttleTimeMs());
        m.put("error_code", data.errorCode());
        ArrayNode results = m.putArray("replica_election_results");
        for (ElectLeadersResponseData.ReplicaElectionResult r : data.replicaElectionResults()) {
            ObjectNode result = results.addObject();
            result.put("topic", r.topic());
            ArrayNode partitions = result.putArray("partition_result");
            for (ElectLeadersResponseData.PartitionResult p : r.partitionResult()) {
                ObjectNode partition = partitions.addObject();
                partition.put("partition_id", p.partitionId());
                partition.put("error_code", p.errorCode());
                partition.put("error_message", p.errorMessage());
                partition.set("tagged_fields", tagsJson(p.unknownTaggedFields()));
            }
            result.set("tagged_fields", tagsJson(r.unknownTaggedFields()));
        }
        m.set("tagged_fields", tagsJson(data.unknownTaggedFields()));
        return m;
    }

    private static ObjectNode encodeResponse(JsonNode m) {
        short version = (short) m.get("api_version").asInt();
        ResponseHeaderData header =
                new ResponseHeaderData().setCorrelationId(m.get("correlation_id").asInt());
        addTags(header.unknownTaggedFields(), m.get("header_tagged_fields"));
        ElectLeadersResponseData data =
                new ElectLeadersResponseData()
                        .setThrottleTimeMs(m.path("throttle_time_ms").asInt(0))
                        .setErrorCode((short) m.path("error_code").asInt(0));
        for (JsonNode r : m.get("replica_election_results")) {
            ElectLeadersResponseData.ReplicaElectionResult result =
                    new ElectLeadersResponseData.ReplicaElectionResult()
                            .setTopic(text(r.get("topic")));
            for (JsonNode p : r.get("partition_result")) {
                ElectLeadersResponseData.PartitionResult partition =
                        new ElectLeadersResponseData.PartitionResult()
                                .setPartitionId(p.get("partition_id").asInt())
                                .setErrorCode((short) p.get("error_code").asInt())
                                .setErrorMessage(text(p.get("error_message")));
                addTags(partition.unknownTaggedFields(), p.get("tagged_fields"));
                result.partitionResult().add(partition);
            }
            addTags(result.unknownTaggedFields(), r.get("tagged_fields"));
            data.replicaElectionResults().add(result);
        }
        addTags(data.unknownTaggedFields(), m.get("tagged_fields"));
        ObjectNode reply = JSON.createObjectNode();
        reply.put("ok", true);
        reply.put(
                "frame",
                framed(RequestUtils.serialize(header, API.responseHeaderVersion(version), data, version)));
        return reply;
    }

    // ---------------------------------------------------------------------------------
    // Shared pieces

    private static void reencode(
            ObjectNode reply, Message header, short headerVersion, ApiMessage data, short version) {
        try {
            reply.put("reencoded", framed(RequestUtils.serialize(header, headerVersion, data, version)));
        } catch (Throwable e) {
            reply.put("reencode_error", e.getClass().getSimpleName() + ": " + e.getMessage());
        }
    }

    private static String text(JsonNode node) {
        return node == null || node.isNull() ? null : node.asText();
    }

    private static ArrayNode tagsJson(List<RawTaggedField> fields) {
        ArrayNode tags = JSON.createArrayNode();
        for (RawTaggedField f : fields) {
            ObjectNode tag = tags.addObject();
            tag.put("tag", Integer.toUnsignedLong(f.tag()));
            tag.put("data", HEX.formatHex(f.data()));
        }
        return tags;
    }

    /** Unknown tagged fields, in the order given (Kafka's writer checks the order itself). */
    private static void addTags(List<RawTaggedField> into, JsonNode tags) {
        if (tags == null || tags.isNull()) {
            return;
        }
        for (JsonNode t : tags) {
            into.add(new RawTaggedField((int) t.get("tag").asLong(), HEX.parseHex(t.get("data").asText())));
        }
    }
}
