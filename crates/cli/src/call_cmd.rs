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
use toolwright_jsonrpc::ErrorObject;
use toolwright_protocol::{ProtocolVersion, TaskSupport};

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
        task_mirror: None,
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
    // A tool that runs only as a task is called as one and its task followed to the end.
    let as_task = entry
        .definition
        .execution
        .as_ref()
        .and_then(|e| e.task_support)
        == Some(TaskSupport::Required);
    let caps = match as_task {
        true => json!({"extensions": {toolwright_server::task::EXTENSION: {}}}),
        false => json!({}),
    };
    let request = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": a.tool, "arguments": args, "_meta": meta(&caps)}
    });
    let reply = rt
        .block_on(async {
            let reply = toolwright_server::dispatch::call_in_process(&server, &request).await?;
            match as_task {
                true => follow_task(&server, reply, &caps).await,
                false => Ok(reply),
            }
        })
        .map_err(|e| anyhow::anyhow!(e.message));
    toolwright_tools::screenshot::close_browsers();
    let reply = reply?;
    report_reply(&a.tool, &reply, hint.as_deref())
}

/// The `_meta` of an in-process request with these client capabilities.
fn meta(caps: &Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": ProtocolVersion::LATEST.as_str(),
        "io.modelcontextprotocol/clientCapabilities": caps
    })
}

/// Follows the task a `tools/call` reply created (polling `tasks/get`) and returns the
/// reply the call would have had as a plain call: the task's result or error. Any other
/// reply is returned as it is.
async fn follow_task(
    server: &toolwright_server::Server,
    reply: Vec<u8>,
    caps: &Value,
) -> Result<Vec<u8>, ErrorObject> {
    let v: Value =
        serde_json::from_slice(&reply).map_err(|e| ErrorObject::internal(e.to_string()))?;
    let Some(id) = v["result"]["taskId"]
        .as_str()
        .filter(|_| v["result"]["resultType"] == "task")
    else {
        return Ok(reply);
    };
    let get = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tasks/get",
        "params": {"taskId": id, "_meta": meta(caps)}
    });
    loop {
        let line = toolwright_server::dispatch::call_in_process(server, &get).await?;
        let v: Value =
            serde_json::from_slice(&line).map_err(|e| ErrorObject::internal(e.to_string()))?;
        let task = &v["result"];
        let done = match task["status"].as_str() {
            Some("completed") => json!({"result": task["result"]}),
            Some("failed") => json!({"error": task["error"]}),
            Some("input_required") => {
                return Err(ErrorObject::internal(
                    "the task asks questions, which `toolwright call` cannot answer",
                ));
            }
            Some("cancelled") => return Err(ErrorObject::internal("the task was cancelled")),
            Some(_) => {
                let wait = task["pollIntervalMs"].as_u64().unwrap_or(200).min(1_000);
                tokio::time::sleep(std::time::Duration::from_millis(wait)).await;
                continue;
            }
            None => return Ok(line),
        };
        let mut out = json!({"jsonrpc": "2.0", "id": 1});
        out.as_object_mut()
            .expect("an object")
            .extend(done.as_object().expect("an object").clone());
        return Ok(serde_json::to_vec(&out).expect("serializes"));
    }
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
