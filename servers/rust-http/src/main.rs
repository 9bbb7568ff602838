//! reverse-text over the Streamable HTTP transport at http://127.0.0.1:PORT/mcp (PORT from
//! `--port`), mounted on axum as the SDK's examples do (examples/servers/counter_streamhttp.rs).
//! The default config keeps sessions for the handshake era and serves 2026-07-28 requests
//! statelessly. TCP_NODELAY is set on each connection (axum's `ListenerExt::tap_io` example),
//! as Go's net/http, Node's http and asyncio (under uvicorn) do by default: without it the
//! SSE answer, written in several pieces, waits ~40 ms for the client's delayed ACK on a
//! kept-alive connection. The config's max_request_body_bytes (4 MiB by default, answered
//! 413) is raised to 16 MiB, so the 5 MiB tool call the stdio server takes is taken here too.
use axum::serve::ListenerExt;
use rmcp::{
    ServerHandler, handler::server::wrapper::Parameters, schemars, tool, tool_handler,
    tool_router,
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct ReverseTextArgs {
    text: String,
}

#[derive(Clone)]
struct ReverseText;

#[tool_router]
impl ReverseText {
    #[tool(description = "Reverse text by Unicode code points.")]
    fn reverse_text(&self, Parameters(args): Parameters<ReverseTextArgs>) -> String {
        args.text.chars().rev().collect()
    }
}

#[tool_handler(name = "reverse-text", version = "1.0.0")]
impl ServerHandler for ReverseText {}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip_while(|a| a != "--port").skip(1);
    let port: u16 = args.next().ok_or_else(|| anyhow::anyhow!("usage: reverse-text --port PORT"))?.parse()?;
    let service = StreamableHttpService::new(
        || Ok(ReverseText),
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default().with_max_request_body_bytes(16 << 20),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await?
        .tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
    axum::serve(listener, router).await?;
    Ok(())
}
