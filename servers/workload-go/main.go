// workload serves the four tools of the Streamable HTTP MCP benchmark
// (docs/workload-servers.md) over stdio, or with --port PORT over Streamable HTTP at
// http://127.0.0.1:PORT/mcp, routed by MCP-Protocol-Version as servers/go-http routes
// reverse_text (2026-07-28 requests to a stateless handler, the handshake era to sessions).
// Typed inputs and outputs: mcp.AddTool infers both schemas from the structs.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type FibonacciInput struct {
	N int `json:"n" jsonschema:"position in the Fibonacci sequence, 0 to 40"`
}

type FibonacciOutput struct {
	Input  int `json:"input"`
	Result int `json:"result"`
}

type FetchInput struct {
	Endpoint string `json:"endpoint" jsonschema:"the URL to GET"`
}

type FetchOutput struct {
	URL            string  `json:"url"`
	StatusCode     int     `json:"status_code"`
	ResponseTimeMs float64 `json:"response_time_ms"`
	Body           string  `json:"body"`
}

type ProcessInput struct {
	Data map[string]any `json:"data" jsonschema:"a JSON object; every string value in it is upper-cased"`
}

type ProcessOutput struct {
	OriginalKeys    []string       `json:"original_keys"`
	TransformedData map[string]any `json:"transformed_data"`
}

type QueryInput struct {
	Query   string `json:"query" jsonschema:"the query text (not run)"`
	DelayMs int    `json:"delay_ms" jsonschema:"how long the simulated query takes, 0 to 5000 ms"`
}

type QueryOutput struct {
	Query   string `json:"query"`
	DelayMs int    `json:"delay_ms"`
}

func fibonacci(n int) int {
	if n <= 1 {
		return n
	}
	return fibonacci(n-1) + fibonacci(n-2)
}

func CalculateFibonacci(ctx context.Context, req *mcp.CallToolRequest, in FibonacciInput) (*mcp.CallToolResult, FibonacciOutput, error) {
	if in.N < 0 || in.N > 40 {
		return nil, FibonacciOutput{}, fmt.Errorf("n must be between 0 and 40")
	}
	return nil, FibonacciOutput{Input: in.N, Result: fibonacci(in.N)}, nil
}

func FetchExternalData(ctx context.Context, req *mcp.CallToolRequest, in FetchInput) (*mcp.CallToolResult, FetchOutput, error) {
	start := time.Now()
	get, err := http.NewRequestWithContext(ctx, http.MethodGet, in.Endpoint, nil)
	if err != nil {
		return nil, FetchOutput{}, err
	}
	resp, err := http.DefaultClient.Do(get)
	if err != nil {
		return nil, FetchOutput{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, FetchOutput{}, err
	}
	return nil, FetchOutput{
		URL:            in.Endpoint,
		StatusCode:     resp.StatusCode,
		ResponseTimeMs: float64(time.Since(start).Microseconds()) / 1e3,
		Body:           string(body),
	}, nil
}

func upperCase(value any) any {
	switch v := value.(type) {
	case string:
		return strings.ToUpper(v)
	case []any:
		out := make([]any, len(v))
		for i, item := range v {
			out[i] = upperCase(item)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for key, item := range v {
			out[key] = upperCase(item)
		}
		return out
	default:
		return v
	}
}

func ProcessJSONData(ctx context.Context, req *mcp.CallToolRequest, in ProcessInput) (*mcp.CallToolResult, ProcessOutput, error) {
	keys := make([]string, 0, len(in.Data))
	for key := range in.Data {
		keys = append(keys, key)
	}
	return nil, ProcessOutput{OriginalKeys: keys, TransformedData: upperCase(in.Data).(map[string]any)}, nil
}

func SimulateDatabaseQuery(ctx context.Context, req *mcp.CallToolRequest, in QueryInput) (*mcp.CallToolResult, QueryOutput, error) {
	if in.DelayMs < 0 || in.DelayMs > 5000 {
		return nil, QueryOutput{}, fmt.Errorf("delay_ms must be between 0 and 5000")
	}
	select {
	case <-time.After(time.Duration(in.DelayMs) * time.Millisecond):
	case <-ctx.Done():
		return nil, QueryOutput{}, ctx.Err()
	}
	return nil, QueryOutput{Query: in.Query, DelayMs: in.DelayMs}, nil
}

func main() {
	port := flag.Int("port", 0, "serve Streamable HTTP on this port at 127.0.0.1 (default: stdio)")
	flag.Parse()

	server := mcp.NewServer(&mcp.Implementation{Name: "workload", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "calculate_fibonacci",
		Description: "Compute the n-th Fibonacci number recursively (CPU-bound)."}, CalculateFibonacci)
	mcp.AddTool(server, &mcp.Tool{Name: "fetch_external_data",
		Description: "GET a URL and return its status and body (I/O-bound)."}, FetchExternalData)
	mcp.AddTool(server, &mcp.Tool{Name: "process_json_data",
		Description: "Upper-case every string value of a JSON object."}, ProcessJSONData)
	mcp.AddTool(server, &mcp.Tool{Name: "simulate_database_query",
		Description: "Simulate a database query: wait delay_ms without blocking (I/O-bound)."}, SimulateDatabaseQuery)

	if *port == 0 {
		if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		return
	}
	getServer := func(*http.Request) *mcp.Server { return server }
	sessions := mcp.NewStreamableHTTPHandler(getServer, nil)
	stateless := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{Stateless: true})
	http.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("MCP-Protocol-Version") >= "2026-07-28" {
			stateless.ServeHTTP(w, r)
		} else {
			sessions.ServeHTTP(w, r)
		}
	})
	log.Fatal(http.ListenAndServe(fmt.Sprintf("127.0.0.1:%d", *port), nil))
}
