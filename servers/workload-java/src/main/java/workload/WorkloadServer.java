package workload;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.catalina.Context;
import org.apache.catalina.startup.Tomcat;

import io.modelcontextprotocol.json.McpJsonDefaults;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.server.McpAsyncServerExchange;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.transport.HttpServletStreamableServerTransportProvider;
import io.modelcontextprotocol.server.transport.StdioServerTransportProvider;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.Tool;
import reactor.core.publisher.Mono;

/**
 * workload: the four tools of the Streamable HTTP MCP benchmark (docs/workload-servers.md) on
 * the async server API: over stdio, or with {@code --port PORT} over the SDK's servlet
 * Streamable HTTP transport at http://127.0.0.1:PORT/mcp in an embedded Tomcat (the servlet
 * asynchronous, as the transport's SSE answers need). Typed inputs and outputs: records
 * converted from the arguments, and listed with an input and an output schema; each result
 * is structured content and the same JSON as a text block.
 */
public final class WorkloadServer {

    record FibonacciInput(int n) {}
    record FibonacciOutput(int input, long result) {}
    record FetchInput(String endpoint) {}
    record FetchOutput(String url, int status_code, double response_time_ms, String body) {}
    record ProcessInput(Map<String, Object> data) {}
    record ProcessOutput(List<String> original_keys, Map<String, Object> transformed_data) {}
    record QueryInput(String query, int delay_ms) {}
    record QueryOutput(String query, int delay_ms) {}

    private static final McpJsonMapper JSON = McpJsonDefaults.getMapper();
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    static long fibonacci(int n) {
        return n <= 1 ? n : fibonacci(n - 1) + fibonacci(n - 2);
    }

    static Object upperCase(Object value) {
        if (value instanceof String s) {
            return s.toUpperCase();
        }
        if (value instanceof List<?> items) {
            return items.stream().map(WorkloadServer::upperCase).toList();
        }
        if (value instanceof Map<?, ?> map) {
            var out = new LinkedHashMap<String, Object>();
            map.forEach((key, item) -> out.put((String) key, upperCase(item)));
            return out;
        }
        return value;
    }

    static CallToolResult structured(Object output) {
        try {
            return CallToolResult.builder()
                .structuredContent(output)
                .addTextContent(JSON.writeValueAsString(output))
                .build();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static CallToolResult failed(String message) {
        return CallToolResult.builder().addTextContent(message).isError(true).build();
    }

    static Tool tool(String name, String description, String inputSchema, String outputSchema) {
        return Tool.builder().name(name).description(description)
            .inputSchema(JSON, inputSchema).outputSchema(JSON, outputSchema).build();
    }

    static Mono<CallToolResult> calculateFibonacci(McpAsyncServerExchange exchange, CallToolRequest request) {
        var in = JSON.convertValue(request.arguments(), FibonacciInput.class);
        if (in.n() < 0 || in.n() > 40) {
            return Mono.just(failed("n must be between 0 and 40"));
        }
        return Mono.fromSupplier(() -> structured(new FibonacciOutput(in.n(), fibonacci(in.n()))));
    }

    static Mono<CallToolResult> fetchExternalData(McpAsyncServerExchange exchange, CallToolRequest request) {
        var in = JSON.convertValue(request.arguments(), FetchInput.class);
        long start = System.nanoTime();
        var get = HttpRequest.newBuilder(URI.create(in.endpoint())).GET().build();
        return Mono.fromFuture(() -> HTTP.sendAsync(get, HttpResponse.BodyHandlers.ofString()))
            .map(response -> structured(new FetchOutput(in.endpoint(), response.statusCode(),
                    (System.nanoTime() - start) / 1e6, response.body())))
            .onErrorResume(e -> Mono.just(failed("GET " + in.endpoint() + " failed: " + e)));
    }

    static Mono<CallToolResult> processJsonData(McpAsyncServerExchange exchange, CallToolRequest request) {
        var in = JSON.convertValue(request.arguments(), ProcessInput.class);
        @SuppressWarnings("unchecked")
        var transformed = (Map<String, Object>) upperCase(in.data());
        return Mono.just(structured(new ProcessOutput(new ArrayList<>(in.data().keySet()), transformed)));
    }

    static Mono<CallToolResult> simulateDatabaseQuery(McpAsyncServerExchange exchange, CallToolRequest request) {
        var in = JSON.convertValue(request.arguments(), QueryInput.class);
        if (in.delay_ms() < 0 || in.delay_ms() > 5000) {
            return Mono.just(failed("delay_ms must be between 0 and 5000"));
        }
        return Mono.delay(Duration.ofMillis(in.delay_ms()))
            .map(tick -> structured(new QueryOutput(in.query(), in.delay_ms())));
    }

    static <S extends McpServer.AsyncSpecification<S>> void serve(McpServer.AsyncSpecification<S> spec) {
        spec.serverInfo("workload", "1.0.0")
            .toolCall(tool("calculate_fibonacci", "Compute the n-th Fibonacci number recursively (CPU-bound).",
                    """
                    {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 40}},
                     "required": ["n"]}""",
                    """
                    {"type": "object", "properties": {"input": {"type": "integer"}, "result": {"type": "integer"}},
                     "required": ["input", "result"]}"""),
                WorkloadServer::calculateFibonacci)
            .toolCall(tool("fetch_external_data", "GET a URL and return its status and body (I/O-bound).",
                    """
                    {"type": "object", "properties": {"endpoint": {"type": "string"}}, "required": ["endpoint"]}""",
                    """
                    {"type": "object", "properties": {"url": {"type": "string"}, "status_code": {"type": "integer"},
                     "response_time_ms": {"type": "number"}, "body": {"type": "string"}},
                     "required": ["url", "status_code", "response_time_ms", "body"]}"""),
                WorkloadServer::fetchExternalData)
            .toolCall(tool("process_json_data", "Upper-case every string value of a JSON object.",
                    """
                    {"type": "object", "properties": {"data": {"type": "object"}}, "required": ["data"]}""",
                    """
                    {"type": "object", "properties": {"original_keys": {"type": "array", "items": {"type": "string"}},
                     "transformed_data": {"type": "object"}}, "required": ["original_keys", "transformed_data"]}"""),
                WorkloadServer::processJsonData)
            .toolCall(tool("simulate_database_query",
                    "Simulate a database query: wait delay_ms without blocking (I/O-bound).",
                    """
                    {"type": "object", "properties": {"query": {"type": "string"},
                     "delay_ms": {"type": "integer", "minimum": 0, "maximum": 5000}}, "required": ["query", "delay_ms"]}""",
                    """
                    {"type": "object", "properties": {"query": {"type": "string"}, "delay_ms": {"type": "integer"}},
                     "required": ["query", "delay_ms"]}"""),
                WorkloadServer::simulateDatabaseQuery)
            .build();
    }

    public static void main(String[] args) throws Exception {
        int at = List.of(args).indexOf("--port");
        if (at < 0) {
            // The transport serves stdin/stdout on its own threads until stdin closes.
            serve(McpServer.async(new StdioServerTransportProvider(JSON)));
            return;
        }
        var transport = HttpServletStreamableServerTransportProvider.builder()
            .jsonMapper(JSON)
            .mcpEndpoint("/mcp")
            .build();
        serve(McpServer.async(transport));
        var tomcat = new Tomcat();
        // Tomcat's working folder: one for every start (a context without JSPs writes nothing
        // there), not a new temporary folder per start that a killed server would leave.
        tomcat.setBaseDir(Path.of(System.getProperty("java.io.tmpdir"), "workload-tomcat").toString());
        tomcat.setPort(Integer.parseInt(args[at + 1]));
        tomcat.getConnector().setProperty("address", "127.0.0.1");
        Context context = tomcat.addContext("", null);
        Tomcat.addServlet(context, "mcp", transport).setAsyncSupported(true);
        context.addServletMappingDecoded("/mcp", "mcp");
        tomcat.start();
        tomcat.getServer().await();
    }
}
