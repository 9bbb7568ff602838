use rmcp::{
    ServerHandler, ServiceExt, handler::server::wrapper::Parameters, schemars, tool, tool_handler,
    tool_router, transport::stdio,
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
    let service = ReverseText.serve(stdio()).await?;
    service.waiting().await?;
    Ok(())
}
