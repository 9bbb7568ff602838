//! The search workload's three tools (docs/workload-servers.md, "The search workload") on rmcp
//! over stdio, on the corpus folder given as `--root DIR` (written by ../corpus.py):
//! `search_docs` ranks the pages by BM25 over the index the corpus ships (index.json, loaded
//! before the server answers anything), `read_file` reads a file whose canonical path lies
//! in the corpus folder, `run_tests` runs the corpus's test script (tokio::process) and
//! returns the tail of its output. Typed inputs (`Parameters<T>`) and outputs (`Json<T>`), as
//! the SDK's README teaches; a refused path is a tool-level error (`CallToolResult::error`).
use rmcp::{
    ErrorData, ServerHandler, ServiceExt,
    handler::server::wrapper::{Json, Parameters},
    model::{CallToolResult, ContentBlock},
    schemars, tool, tool_handler, tool_router,
    transport::stdio,
};
use std::{
    collections::{HashMap, HashSet},
    path::PathBuf,
    sync::Arc,
};

/// BM25's parameters: Robertson and Zaragoza, "The Probabilistic Relevance Framework: BM25
/// and Beyond" (2009), the values Lucene's BM25Similarity takes by default.
const K1: f64 = 1.2;
const B: f64 = 0.75;

#[derive(serde::Deserialize)]
struct Doc {
    id: String,
    path: String,
    title: String,
    length: u32,
}

/// index.json: the pages, and per term the flat list doc, tf, doc, tf, ...
#[derive(serde::Deserialize)]
struct IndexFile {
    docs: Vec<Doc>,
    postings: HashMap<String, Vec<u32>>,
}

struct Index {
    docs: Vec<Doc>,
    /// term -> (its idf, its postings)
    terms: HashMap<String, (f64, Vec<u32>)>,
    /// k1 * (1 - b + b * length / average length), per page
    norm: Vec<f64>,
}

impl Index {
    fn load(path: &std::path::Path) -> anyhow::Result<Self> {
        let file: IndexFile = serde_json::from_slice(&std::fs::read(path)?)?;
        let n = file.docs.len() as f64;
        let total: f64 = file.docs.iter().map(|d| d.length as f64).sum();
        let average = total / n;
        let norm = file.docs.iter().map(|d| K1 * (1.0 - B + B * d.length as f64 / average)).collect();
        let terms = file.postings.into_iter().map(|(term, postings)| {
            let df = (postings.len() / 2) as f64;
            (term, ((1.0 + (n - df + 0.5) / (df + 0.5)).ln(), postings))
        }).collect();
        Ok(Index { docs: file.docs, terms, norm })
    }

    /// The pages holding any of the query's terms, by BM25 score, highest first (ties by page
    /// order), at most `limit`. Each distinct term is added in the query's order.
    fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        let mut scores: HashMap<u32, f64> = HashMap::new();
        let mut seen = HashSet::new();
        for term in tokens(query) {
            if !seen.insert(term.clone()) {
                continue;
            }
            let Some((idf, postings)) = self.terms.get(&term) else { continue };
            for pair in postings.chunks_exact(2) {
                let (doc, tf) = (pair[0], pair[1] as f64);
                *scores.entry(doc).or_insert(0.0) += idf * (tf * (K1 + 1.0)) / (tf + self.norm[doc as usize]);
            }
        }
        let mut ranked: Vec<(u32, f64)> = scores.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.truncate(limit);
        ranked.into_iter().map(|(doc, score)| {
            let d = &self.docs[doc as usize];
            Hit { id: d.id.clone(), title: d.title.clone(), path: d.path.clone(), score }
        }).collect()
    }
}

/// Runs of ASCII letters and digits, lower-cased, as corpus.py splits the pages.
fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| w.to_ascii_lowercase())
        .collect()
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct SearchArgs {
    /// Words to look for.
    query: String,
    /// The most hits to return, 1 to 100.
    limit: usize,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Hit {
    id: String,
    title: String,
    path: String,
    score: f64,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct SearchOutput {
    hits: Vec<Hit>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ReadArgs {
    /// A file's path relative to the corpus folder.
    path: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct TestsArgs {
    /// Run the tests whose name holds this text (all when empty).
    filter: String,
    /// How many of the output's last lines to return, 1 to 1000.
    tail_lines: usize,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct TestsOutput {
    exit_code: i32,
    lines: usize,
    tail: String,
}

#[derive(Clone)]
struct Search {
    index: Arc<Index>,
    root: Arc<PathBuf>,
}

#[tool_router]
impl Search {
    #[tool(description = "Search the documentation pages (BM25); the best hits first.")]
    fn search_docs(&self, Parameters(args): Parameters<SearchArgs>) -> Result<Json<SearchOutput>, ErrorData> {
        if !(1..=100).contains(&args.limit) {
            return Err(ErrorData::invalid_params("limit must be between 1 and 100", None));
        }
        Ok(Json(SearchOutput { hits: self.index.search(&args.query, args.limit) }))
    }

    #[tool(description = "Read a file of the corpus folder (no path outside it).")]
    async fn read_file(&self, Parameters(args): Parameters<ReadArgs>) -> Result<CallToolResult, ErrorData> {
        let refused = |why: String| Ok(CallToolResult::error(vec![ContentBlock::text(why)]));
        let path = match tokio::fs::canonicalize(self.root.join(&args.path)).await {
            Ok(path) if path.starts_with(self.root.as_path()) => path,
            Ok(_) => return refused(format!("{}: outside the corpus folder", args.path)),
            Err(err) => return refused(format!("{}: {err}", args.path)),
        };
        match tokio::fs::read_to_string(&path).await {
            Ok(text) => Ok(CallToolResult::success(vec![ContentBlock::text(text)])),
            Err(err) => refused(format!("{}: {err}", args.path)),
        }
    }

    #[tool(description = "Run the corpus's tests and return the tail of their output.")]
    async fn run_tests(&self, Parameters(args): Parameters<TestsArgs>) -> Result<Json<TestsOutput>, ErrorData> {
        if !(1..=1000).contains(&args.tail_lines) {
            return Err(ErrorData::invalid_params("tail_lines must be between 1 and 1000", None));
        }
        let output = tokio::process::Command::new("sh")
            .args(["tests/run.sh", &args.filter])
            .current_dir(self.root.as_path())
            .output()
            .await
            .map_err(|e| ErrorData::internal_error(format!("sh tests/run.sh: {e}"), None))?;
        let text = String::from_utf8_lossy(&output.stdout);
        let lines: Vec<&str> = match text.strip_suffix('\n').unwrap_or(&text) {
            "" if text.is_empty() => vec![],
            body => body.split('\n').collect(),
        };
        Ok(Json(TestsOutput {
            exit_code: output.status.code().unwrap_or(-1),
            lines: lines.len(),
            tail: lines[lines.len().saturating_sub(args.tail_lines)..].join("\n"),
        }))
    }
}

#[tool_handler(name = "search", version = "1.0.0")]
impl ServerHandler for Search {}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let root = std::env::args().skip_while(|a| a != "--root").nth(1)
        .ok_or_else(|| anyhow::anyhow!("usage: search --root DIR"))?;
    let root = std::fs::canonicalize(root)?;
    let index = Index::load(&root.join("index.json"))?;
    let server = Search { index: Arc::new(index), root: Arc::new(root) };
    server.serve(stdio()).await?.waiting().await?;
    Ok(())
}
