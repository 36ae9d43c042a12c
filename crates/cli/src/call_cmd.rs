//! `toolwright call TOOL` in process: the tool set built as `serve` builds it, one
//! `tools/call` through the server's own dispatch, the reply shown as a client would show
//! it (`call --url` and `call -- CMD` go through the client instead, `client_cmd.rs`).

use crate::args::CallArgs;
use crate::commands::{Settings, build, definitions, runtime};
use crate::logging::init_logging;
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use toolwright_protocol::ProtocolVersion;

/// Closes a gateway's upstreams when dropped.
struct CloseOnDrop(Option<Arc<toolwright_gateway::Gateway>>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        if let Some(g) = &self.0 {
            g.shutdown();
        }
    }
}

pub(crate) fn call(a: CallArgs) -> Result<ExitCode> {
    let given = crate::call_args::Given::parse(a.args_json.as_deref(), &a.pairs)?;
    if a.remote.target.is_given() {
        return crate::client_cmd::call(&a, &given);
    }
    init_logging();
    let built = build(&Settings {
        tools: &a.tools,
        run: &a.run,
        protocol: &crate::args::defaults(),
        telemetry: None,
        exposed: false,
        stdio_view: None,
        shared_limits: None,
        shared_tokens: None,
    })?;
    // The gateway runs the upstreams' connections: it lives until the call is answered,
    // and closes its upstreams however this returns.
    let _upstreams = CloseOnDrop(built.gateway);
    let server = built.server;
    let tools = server.tools();
    let Some(entry) = tools.get(&a.tool) else {
        let names: Vec<String> = definitions(&server).into_iter().map(|d| d.name).collect();
        bail!(
            "unknown tool {:?}; the tools are: {}",
            a.tool,
            names.join(", ")
        );
    };
    let args = given.arguments(&entry.definition.input_schema)?;
    let hint = match entry.input.is_valid(&args) {
        true => None,
        false => given.hint(&args),
    };
    let rt = runtime()?;
    let request = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {
            "name": a.tool, "arguments": args,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": ProtocolVersion::LATEST.as_str(),
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }
    });
    let reply = rt
        .block_on(toolwright_server::dispatch::call_in_process(
            &server, &request,
        ))
        .map_err(|e| anyhow::anyhow!(e.message));
    toolwright_tools::screenshot::close_browsers();
    let reply = reply?;
    report_reply(&a.tool, &reply, hint.as_deref())
}

/// A `tools/call` reply as `call` shows it: the result on stdout (exit 0, or 1 when it is
/// `isError`), or an error reply's message on stderr (exit 1: a result that breaks the
/// tool's outputSchema comes back as one, and is the tool failing as much as `isError` is);
/// then the hint about the arguments, if any.
fn report_reply(tool: &str, reply: &[u8], hint: Option<&str>) -> Result<ExitCode> {
    let v: Value = serde_json::from_slice(reply).context("reading the reply")?;
    let mut err = std::io::stderr().lock();
    if let Some(e) = v.get("error") {
        writeln!(
            err,
            "toolwright: {}: {}",
            tool,
            e["message"].as_str().unwrap_or("error")
        )?;
        if let Some(h) = hint {
            writeln!(err, "toolwright: {h}")?;
        }
        return Ok(ExitCode::from(1));
    }
    let result = &v["result"];
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, result)?;
    writeln!(out)?;
    out.flush()?;
    if let Some(h) = hint {
        writeln!(err, "toolwright: {h}")?;
    }
    let failed = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
