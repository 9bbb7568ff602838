package reversetext;

import java.util.List;

import io.modelcontextprotocol.json.McpJsonDefaults;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.transport.StdioServerTransportProvider;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.TextContent;
import io.modelcontextprotocol.spec.McpSchema.Tool;

/** reverse-text: a minimal MCP server with one tool, reverse_text, over the stdio transport. */
public final class ReverseTextServer {

    private static final String INPUT_SCHEMA = """
            {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
            """;

    public static void main(String[] args) {
        var jsonMapper = McpJsonDefaults.getMapper();
        var transportProvider = new StdioServerTransportProvider(jsonMapper);
        // The transport serves stdin/stdout on its own threads until stdin closes.
        McpServer.sync(transportProvider)
            .serverInfo("reverse-text", "1.0.0")
            .toolCall(Tool.builder("reverse_text", jsonMapper, INPUT_SCHEMA)
                    .description("Reverse text by Unicode code points.")
                    .build(),
                (exchange, request) -> {
                    String text = (String) request.arguments().get("text");
                    // StringBuilder.reverse keeps surrogate pairs together: code points, not UTF-16 units.
                    String reversed = new StringBuilder(text).reverse().toString();
                    return CallToolResult.builder()
                        .content(List.of(TextContent.builder(reversed).build()))
                        .build();
                })
            .build();
    }
}
