//! The four tools of the Streamable HTTP MCP benchmark (docs/workload-servers.md) on rmcp, over
//! stdio, or over Streamable HTTP at http://127.0.0.1:PORT/mcp with `--port PORT` (served as
//! servers/rust-http serves reverse_text: axum, the default config, TCP_NODELAY on each
//! connection). Typed inputs (`Parameters<T>`) and typed outputs (`Json<T>`: structured
//! content with its schema, and the same JSON as a text block), as the SDK's README teaches.
//! The GET uses hyper's client (hyper-util), whose crates the SDK's HTTP server already
//! builds; reqwest would add the url/idna/ICU crates to the build.
use axum::serve::ListenerExt;
use rmcp::{
    ErrorData, ServerHandler, ServiceExt,
    handler::server::wrapper::{Json, Parameters},
    schemars, tool, tool_handler, tool_router,
    transport::{
        stdio,
        streamable_http_server::{
            StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
        },
    },
};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::TokioExecutor,
};
use serde_json::{Map, Value};
use std::time::{Duration, Instant};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct FibonacciArgs {
    /// Position in the Fibonacci sequence, 0 to 40.
    n: u32,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct FibonacciOutput {
    input: u32,
    result: u64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct FetchArgs {
    /// The URL to GET.
    endpoint: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct FetchOutput {
    url: String,
    status_code: u16,
    response_time_ms: f64,
    body: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ProcessArgs {
    /// A JSON object; every string value in it is upper-cased.
    data: Map<String, Value>,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct ProcessOutput {
    original_keys: Vec<String>,
    transformed_data: Value,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct QueryArgs {
    /// The query text (not run).
    query: String,
    /// How long the simulated query takes, 0 to 5000 ms.
    delay_ms: u64,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct QueryOutput {
    query: String,
    delay_ms: u64,
}

fn fibonacci(n: u32) -> u64 {
    if n <= 1 { n as u64 } else { fibonacci(n - 1) + fibonacci(n - 2) }
}

fn upper_case(value: Value) -> Value {
    match value {
        Value::String(s) => Value::String(s.to_uppercase()),
        Value::Array(items) => Value::Array(items.into_iter().map(upper_case).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, upper_case(v))).collect()),
        other => other,
    }
}

#[derive(Clone)]
struct Workload {
    http: Client<HttpConnector, Empty<Bytes>>,
}

#[tool_router]
impl Workload {
    #[tool(description = "Compute the n-th Fibonacci number recursively (CPU-bound).")]
    fn calculate_fibonacci(&self, Parameters(args): Parameters<FibonacciArgs>) -> Result<Json<FibonacciOutput>, ErrorData> {
        if args.n > 40 {
            return Err(ErrorData::invalid_params("n must be between 0 and 40", None));
        }
        Ok(Json(FibonacciOutput { input: args.n, result: fibonacci(args.n) }))
    }

    #[tool(description = "GET a URL and return its status and body (I/O-bound).")]
    async fn fetch_external_data(&self, Parameters(args): Parameters<FetchArgs>) -> Result<Json<FetchOutput>, ErrorData> {
        let start = Instant::now();
        let failed = |e: &dyn std::fmt::Display| ErrorData::internal_error(format!("GET {} failed: {e}", args.endpoint), None);
        let uri: hyper::Uri = args.endpoint.parse().map_err(|e| failed(&e))?;
        let response = self.http.get(uri).await.map_err(|e| failed(&e))?;
        let status_code = response.status().as_u16();
        let body = response.into_body().collect().await.map_err(|e| failed(&e))?.to_bytes();
        Ok(Json(FetchOutput {
            status_code,
            body: String::from_utf8_lossy(&body).into_owned(),
            response_time_ms: start.elapsed().as_secs_f64() * 1e3,
            url: args.endpoint,
        }))
    }

    #[tool(description = "Upper-case every string value of a JSON object.")]
    fn process_json_data(&self, Parameters(args): Parameters<ProcessArgs>) -> Json<ProcessOutput> {
        let original_keys = args.data.keys().cloned().collect();
        Json(ProcessOutput { original_keys, transformed_data: upper_case(Value::Object(args.data)) })
    }

    #[tool(description = "Simulate a database query: wait delay_ms without blocking (I/O-bound).")]
    async fn simulate_database_query(&self, Parameters(args): Parameters<QueryArgs>) -> Result<Json<QueryOutput>, ErrorData> {
        if args.delay_ms > 5000 {
            return Err(ErrorData::invalid_params("delay_ms must be between 0 and 5000", None));
        }
        tokio::time::sleep(Duration::from_millis(args.delay_ms)).await;
        Ok(Json(QueryOutput { query: args.query, delay_ms: args.delay_ms }))
    }
}

#[tool_handler(name = "workload", version = "1.0.0")]
impl ServerHandler for Workload {}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let server = Workload { http: Client::builder(TokioExecutor::new()).build_http() };
    let mut args = std::env::args().skip_while(|a| a != "--port").skip(1);
    let Some(port) = args.next() else {
        server.serve(stdio()).await?.waiting().await?;
        return Ok(());
    };
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port.parse::<u16>()?))
        .await?
        .tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
    axum::serve(listener, router).await?;
    Ok(())
}
