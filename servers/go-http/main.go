// reverse-text is a minimal MCP server with one tool, reverse_text, served over the
// Streamable HTTP transport at http://127.0.0.1:PORT/mcp (PORT from --port).
//
// The SDK answers the 2026-07-28 revision only from a stateless handler
// (StreamableHTTPOptions.Stateless; docs/protocol.md, "Stateless Mode"), and the
// handshake era with sessions only from a stateful one, so requests are routed by their
// MCP-Protocol-Version header, which 2026-07-28 requests must carry.
//
// Both handlers raise StreamableHTTPOptions.MaxRequestBodyBytes from its 4 MiB default
// (DefaultMaxRequestBodyBytes, answered 413) to 16 MiB, so the 5 MiB tool call the stdio
// server takes is taken here too.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
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
	port := flag.Int("port", 0, "port to listen on at 127.0.0.1")
	flag.Parse()

	server := mcp.NewServer(&mcp.Implementation{Name: "reverse-text", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{
		Name:        "reverse_text",
		Description: "Reverse text by Unicode code points.",
	}, ReverseText)

	getServer := func(*http.Request) *mcp.Server { return server }
	const maxBody = 16 << 20
	sessions := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{MaxRequestBodyBytes: maxBody})
	stateless := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{Stateless: true, MaxRequestBodyBytes: maxBody})
	http.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("MCP-Protocol-Version") >= "2026-07-28" {
			stateless.ServeHTTP(w, r)
		} else {
			sessions.ServeHTTP(w, r)
		}
	})
	log.Fatal(http.ListenAndServe(fmt.Sprintf("127.0.0.1:%d", *port), nil))
}
