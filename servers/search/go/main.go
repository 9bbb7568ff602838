// search serves the search workload's three tools (docs/workload-servers.md, "The search
// workload") over stdio, on the corpus folder given as --root (written by ../corpus.py):
// search_docs ranks the pages by BM25 over the index the corpus ships (index.json, loaded
// before the server answers anything), read_file reads a file confined to the corpus folder
// by os.Root, run_tests runs the corpus's test script and returns the tail of its output.
// Typed inputs and outputs: mcp.AddTool infers both schemas from the structs.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"log"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BM25's parameters: Robertson and Zaragoza, "The Probabilistic Relevance Framework: BM25
// and Beyond" (2009), the values Lucene's BM25Similarity takes by default.
const (
	k1 = 1.2
	b  = 0.75
)

type Doc struct {
	ID     string `json:"id"`
	Path   string `json:"path"`
	Title  string `json:"title"`
	Length int    `json:"length"`
}

// Index is index.json: the pages, and per term the flat list doc, tf, doc, tf, ...
type Index struct {
	Docs     []Doc              `json:"docs"`
	Postings map[string][]int32 `json:"postings"`
	idf      map[string]float64
	norm     []float64 // k1 * (1 - b + b * length / average length), per page
}

func loadIndex(path string) (*Index, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var index Index
	if err := json.Unmarshal(data, &index); err != nil {
		return nil, err
	}
	n, total := float64(len(index.Docs)), 0.0
	for _, doc := range index.Docs {
		total += float64(doc.Length)
	}
	average := total / n
	index.norm = make([]float64, len(index.Docs))
	for i, doc := range index.Docs {
		index.norm[i] = k1 * (1 - b + b*float64(doc.Length)/average)
	}
	index.idf = make(map[string]float64, len(index.Postings))
	for term, postings := range index.Postings {
		df := float64(len(postings) / 2)
		index.idf[term] = math.Log(1 + (n-df+0.5)/(df+0.5))
	}
	return &index, nil
}

// tokens splits text into runs of ASCII letters and digits, lower-cased, as corpus.py does.
func tokens(text string) []string {
	words := strings.FieldsFunc(text, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	})
	for i, word := range words {
		words[i] = strings.ToLower(word)
	}
	return words
}

type Hit struct {
	ID    string  `json:"id"`
	Title string  `json:"title"`
	Path  string  `json:"path"`
	Score float64 `json:"score"`
}

// Search: the pages holding any of the query's terms, by BM25 score, highest first (ties by
// page order), at most limit. Each distinct term is added in the query's order.
func (index *Index) Search(query string, limit int) []Hit {
	scores := map[int32]float64{}
	seen := map[string]bool{}
	for _, term := range tokens(query) {
		if seen[term] {
			continue
		}
		seen[term] = true
		postings, idf := index.Postings[term], index.idf[term]
		for i := 0; i+1 < len(postings); i += 2 {
			doc, tf := postings[i], float64(postings[i+1])
			scores[doc] += idf * (tf * (k1 + 1)) / (tf + index.norm[doc])
		}
	}
	ranked := make([]int32, 0, len(scores))
	for doc := range scores {
		ranked = append(ranked, doc)
	}
	sort.Slice(ranked, func(i, j int) bool {
		si, sj := scores[ranked[i]], scores[ranked[j]]
		return si > sj || si == sj && ranked[i] < ranked[j]
	})
	hits := []Hit{}
	for _, doc := range ranked[:min(limit, len(ranked))] {
		d := index.Docs[doc]
		hits = append(hits, Hit{ID: d.ID, Title: d.Title, Path: d.Path, Score: scores[doc]})
	}
	return hits
}

type SearchInput struct {
	Query string `json:"query" jsonschema:"words to look for"`
	Limit int    `json:"limit" jsonschema:"the most hits to return, 1 to 100"`
}

type SearchOutput struct {
	Hits []Hit `json:"hits"`
}

type ReadInput struct {
	Path string `json:"path" jsonschema:"a file's path relative to the corpus folder"`
}

type TestsInput struct {
	Filter    string `json:"filter" jsonschema:"run the tests whose name holds this text (all when empty)"`
	TailLines int    `json:"tail_lines" jsonschema:"how many of the output's last lines to return, 1 to 1000"`
}

type TestsOutput struct {
	ExitCode int    `json:"exit_code"`
	Lines    int    `json:"lines"`
	Tail     string `json:"tail"`
}

func main() {
	rootPath := flag.String("root", "", "the corpus folder (index.json, docs/, tests/)")
	flag.Parse()
	index, err := loadIndex(filepath.Join(*rootPath, "index.json"))
	if err != nil {
		log.Fatal(err)
	}
	root, err := os.OpenRoot(*rootPath)
	if err != nil {
		log.Fatal(err)
	}

	server := mcp.NewServer(&mcp.Implementation{Name: "search", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "search_docs",
		Description: "Search the documentation pages (BM25); the best hits first."},
		func(ctx context.Context, req *mcp.CallToolRequest, in SearchInput) (*mcp.CallToolResult, SearchOutput, error) {
			if in.Limit < 1 || in.Limit > 100 {
				return nil, SearchOutput{}, errors.New("limit must be between 1 and 100")
			}
			return nil, SearchOutput{Hits: index.Search(in.Query, in.Limit)}, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "read_file",
		Description: "Read a file of the corpus folder (no path outside it)."},
		func(ctx context.Context, req *mcp.CallToolRequest, in ReadInput) (*mcp.CallToolResult, any, error) {
			data, err := root.ReadFile(in.Path)
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(data)}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "run_tests",
		Description: "Run the corpus's tests and return the tail of their output."},
		func(ctx context.Context, req *mcp.CallToolRequest, in TestsInput) (*mcp.CallToolResult, TestsOutput, error) {
			if in.TailLines < 1 || in.TailLines > 1000 {
				return nil, TestsOutput{}, errors.New("tail_lines must be between 1 and 1000")
			}
			cmd := exec.CommandContext(ctx, "sh", "tests/run.sh", in.Filter)
			cmd.Dir = *rootPath
			out, err := cmd.Output()
			var exit *exec.ExitError
			if err != nil && !errors.As(err, &exit) {
				return nil, TestsOutput{}, err
			}
			lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
			if len(out) == 0 {
				lines = nil
			}
			tail := lines[max(0, len(lines)-in.TailLines):]
			return nil, TestsOutput{ExitCode: cmd.ProcessState.ExitCode(), Lines: len(lines),
				Tail: strings.Join(tail, "\n")}, nil
		})

	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
