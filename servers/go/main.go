// reverse-text is a minimal MCP server with one tool, reverse_text,
// served over the stdio transport.
//
// It has the shape of the go-sdk README's first example: a typed input and a
// typed output struct, so the tool lists an outputSchema and answers with
// structuredContent. It also sets the text content to the reversed text
// itself (the README's handler returns nil and lets the SDK fill the text with
// the output's JSON), so a client that reads text sees the answer as is.
package main

import (
	"context"
	"log"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type Input struct {
	Text string `json:"text" jsonschema:"the text to reverse"`
}

type Output struct {
	Reversed string `json:"reversed" jsonschema:"the text reversed by Unicode code points"`
}

// ReverseText reverses the input by Unicode code points.
func ReverseText(ctx context.Context, req *mcp.CallToolRequest, in Input) (*mcp.CallToolResult, Output, error) {
	runes := []rune(in.Text)
	slices.Reverse(runes)
	reversed := string(runes)
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: reversed}},
	}, Output{Reversed: reversed}, nil
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
