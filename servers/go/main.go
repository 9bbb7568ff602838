// reverse-text is a minimal MCP server with one tool, reverse_text,
// served over the stdio transport.
package main

import (
	"context"
	"log"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type Input struct {
	Text string `json:"text"`
}

// ReverseText reverses the input by Unicode code points.
func ReverseText(ctx context.Context, req *mcp.CallToolRequest, in Input) (*mcp.CallToolResult, any, error) {
	runes := []rune(in.Text)
	slices.Reverse(runes)
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: string(runes)}},
	}, nil, nil
}

func main() {
	server := mcp.NewServer(&mcp.Implementation{Name: "reverse-text", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{
		Name:        "reverse_text",
		Description: "Reverse text by Unicode code points.",
	}, ReverseText)
	// Serve over stdin/stdout until the client disconnects.
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
