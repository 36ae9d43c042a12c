//! An upstream tool as a tool of this server: the call path through the gateway.
//!
//! A call goes: standing (denied or quarantined tools are refused with the reason) → fixed
//! arguments injected → arguments validated against the upstream's own `inputSchema` (the
//! server already did, against the same schema, when no fixed argument was taken out of
//! it) → the user's confirmation when the policy asks for it → forwarded, with progress relayed,
//! cancellation passed on, and the upstream's questions (sampling, elicitation, roots)
//! carried to this call's client → `structuredContent` checked against the upstream's
//! `outputSchema`.
//!
//! Era bridging happens here and in the peer: a modern upstream's `input_required` result
//! is answered by asking this call's client ([`ToolContext::request_client`]: a real
//! request to a legacy client, a round trip of its own to a modern one) and retrying the
//! upstream with the answers. A legacy upstream's requests to a legacy client are relayed
//! as requests in the middle of the call. A modern client cannot be asked in the middle of
//! a call, so when a legacy upstream asks it something the upstream call is kept waiting
//! (`park.rs`): this call ends with `input_required` and a token in its sealed
//! `requestState`, and the client's retry answers the upstream's question and awaits the
//! same upstream call, which runs once however many rounds it takes. A retry that finds no
//! call waiting (another replica, past the wait) runs the upstream call again, whose
//! question is then answered at once. An upstream that withdraws its question
//! (`notifications/cancelled`) has the request relayed to a legacy client withdrawn too.
//!
//! An upstream that answers the call with a task (the Tasks extension) has it driven to its
//! end here (`task.rs`): polled, its questions asked of this call's client, cancelled
//! upstream when this call is.

use crate::install::Prepared;
use crate::result::{AsSent, Head, ResultKind, Unreadable};
use crate::upstream::Upstream;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use std::sync::Arc;
use toolwright_client::{BoxFuture, Call, ClientError, Era, PeerHandler, ProgressFn};
use toolwright_jsonrpc::ErrorObject;
use toolwright_protocol::{CallToolResult, LoggingLevel, ProtocolVersion};
use toolwright_schema::format_violations;
use toolwright_server::{
    ClientRequestError, Tool, ToolContext, ToolDefinition, ToolError, ToolFuture,
};
use toolwright_toolfile::servers::ContractMode;

/// Most `input_required` rounds one call goes through with a modern upstream.
const MAX_ROUNDS: usize = 8;

/// Whether and how a tool may be called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Forwarded.
    Allowed,
    /// Forwarded once the user confirms.
    Confirm,
    /// Refused, and not listed: the reason.
    Refused(String),
}

/// An upstream tool served by the gateway: a prepared tool attached to its server.
pub struct UpstreamTool {
    pub(crate) upstream: Arc<Upstream>,
    /// The definition clients see, its schemas compiled, its standing and settings.
    pub(crate) tool: Prepared,
}

impl std::fmt::Debug for UpstreamTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamTool")
            .field("server", &self.upstream.name())
            .field("upstream_name", &self.tool.upstream_name)
            .field("name", &self.tool.definition.name)
            .field("standing", &self.tool.standing)
            .finish_non_exhaustive()
    }
}

impl Tool for UpstreamTool {
    fn definition(&self) -> ToolDefinition {
        self.tool.definition.clone()
    }

    fn listed(&self) -> bool {
        !matches!(self.tool.standing, Standing::Refused(_))
    }

    fn checks_own_output(&self) -> bool {
        true
    }

    fn call(&self, args: Value, ctx: ToolContext) -> ToolFuture<'_> {
        Box::pin(self.run(args, ctx))
    }
}

/// A failure shown to the model: an `isError` result.
fn failed(text: String) -> Result<CallToolResult, ToolError> {
    Ok(CallToolResult::error(text))
}

impl UpstreamTool {
    fn server(&self) -> &str {
        self.upstream.name()
    }

    /// The exposed tool and its server, which a parked call belongs to.
    fn owner(&self) -> String {
        format!("{}\n{}", self.server(), self.tool.definition.name)
    }

    async fn run(&self, args: Value, ctx: ToolContext) -> Result<CallToolResult, ToolError> {
        if let Standing::Refused(why) = &self.tool.standing {
            // A tool error to the client, and a policy denial in the audit trail.
            return Err(ToolError::Denied(why.clone()));
        }
        let mut args = match args {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        // Fixed arguments: a literal is set over the caller's; one bound to the caller's
        // identity (`{claims.NAME}`) refuses a call that gives it or carries no such claim.
        let bound =
            self.tool.fixed.iter().filter_map(|(k, v)| {
                toolwright_toolfile::bound::claim_of(v).map(|c| (k.as_str(), c))
            });
        let claim = |c: &str| ctx.identity().and_then(|id| id.claim_text(c));
        if let Err(e) = toolwright_toolfile::bound::fill(&mut args, bound, claim) {
            return failed(e.to_string());
        }
        for (k, v) in &self.tool.fixed {
            if toolwright_toolfile::bound::claim_of(v).is_none() {
                args.insert(k.clone(), v.clone());
            }
        }
        let args = Value::Object(args);
        // The server checked the caller's arguments against the advertised inputSchema,
        // which is the upstream's own unless fixed arguments were taken out of it: only
        // then is there something left to check.
        if !self.tool.fixed.is_empty()
            && let Some(v) = &self.tool.input
            && let Err(violations) = v.validate(&args)
        {
            return failed(format!(
                "the arguments do not match the inputSchema of {} on upstream {}, so the call was not forwarded:\n{}",
                self.tool.upstream_name,
                self.server(),
                format_violations(&violations)
            ));
        }
        // The paths most calls never take (confirmation, token exchange, tasks, parked
        // questions) are boxed where they are awaited: this future is allocated for every
        // call, and unboxed they would make it several kilobytes.
        if self.tool.standing == Standing::Confirm
            && let Some(refusal) = Box::pin(self.confirm(&args, &ctx)).await?
        {
            return Ok(refusal);
        }
        self.forward(args, &ctx).await
    }

    /// Asks the user to confirm the call; `Some` is the refusal to return.
    async fn confirm(
        &self,
        args: &Value,
        ctx: &ToolContext,
    ) -> Result<Option<CallToolResult>, ToolError> {
        let params = crate::policy::confirmation_request(
            self.server(),
            &self.tool.definition.name,
            &self.tool.upstream_name,
            args,
        );
        match ctx.request_client("elicitation/create", params).await {
            Ok(answer) => {
                let answer = crate::policy::read_confirmation(&answer);
                if answer.is_confirmed() {
                    return Ok(None);
                }
                Ok(Some(CallToolResult::error(format!(
                    "the call to {} on upstream {} was not forwarded: {answer}",
                    self.tool.upstream_name,
                    self.server()
                ))))
            }
            Err(ClientRequestError::InputRequired) => Err(ToolError::InputRequired),
            Err(ClientRequestError::NotSupported(_)) => Ok(Some(CallToolResult::error(format!(
                "calling {} on upstream {} needs the user's confirmation, and this client cannot ask for it (it did not declare the elicitation capability)",
                self.tool.upstream_name,
                self.server()
            )))),
            Err(e) => Ok(Some(CallToolResult::error(format!(
                "the confirmation for {} on upstream {} failed: {e}",
                self.tool.upstream_name,
                self.server()
            )))),
        }
    }

    /// Sends the call upstream and answers what the upstream asks on the way; returns the
    /// final result as it goes to this call's client.
    async fn forward(&self, args: Value, ctx: &ToolContext) -> Result<CallToolResult, ToolError> {
        let peer = match self.upstream.peer().await {
            Ok(p) => p,
            Err(e) => return Err(ToolError::Failed(e.to_string())),
        };
        // Connecting lists the server again; what it lists now may refuse this tool.
        if let Some(why) = self.upstream.refusal(&self.tool.upstream_name) {
            return Err(ToolError::Failed(why));
        }
        // The call's own token: the request is cancelled upstream when the client cancels,
        // and when this future is dropped (the request's future cancels it as it goes).
        let cancel = ctx.cancellation().clone();
        let asker = Arc::new(AskClient {
            ctx: ctx.clone(),
            upstream: self.upstream.clone(),
        });
        let mut headers = self.headers(&args, peer.era())?;
        if let Some(x) = self.upstream.exchange() {
            headers = Box::pin(x.authorize(ctx, peer.era(), headers)).await?;
        }
        // One request, built once: a later round changes its params in place.
        let mut call = Call {
            method: "tools/call".into(),
            // Built by hand: `json!` would copy the arguments (it serializes what it is
            // given), and they are moved here instead.
            params: Value::Object(Map::from_iter([
                (
                    "name".to_owned(),
                    Value::String(self.tool.upstream_name.clone()),
                ),
                ("arguments".to_owned(), args),
            ])),
            // Only HTTP has headers to name it in.
            name: matches!(peer.target(), toolwright_client::Target::Http { .. })
                .then(|| self.tool.upstream_name.clone()),
            headers,
            timeout: self.tool.timeout,
            progress: progress_relay(ctx),
            cancel: Some(cancel),
            on_request: Some(asker.clone() as Arc<dyn PeerHandler>),
            observer: crate::observe::Watcher::call(ctx, &self.upstream),
            // Read once, below, for everything the gateway and the client check.
            result_checked_by_caller: true,
        };
        // An earlier run of this call left the upstream's task waiting for answers: this
        // run goes on with it.
        if let Some(r) = crate::task::Resumed::from_context(ctx) {
            let task = self.upstream_task(&peer, r.task_id, r.round, &call);
            let raw = Box::pin(task.finish(ctx)).await?;
            return self.pass_on(raw, peer.protocol_version(), ctx);
        }
        // A legacy upstream asks a modern client its questions through `input_required`
        // rounds, its call kept waiting meanwhile (park.rs).
        let bridged = ctx.protocol_version().is_modern() && peer.era() == Era::Legacy;
        let mut resumed = bridged
            .then(|| crate::park::Bridged::resume(ctx, &self.owner()))
            .flatten();
        for _round in 0..MAX_ROUNDS {
            // Each request upstream is a CLIENT span under the call's span, and the upstream's
            // parent, when telemetry observes the call.
            crate::observe::propagate(&mut call.params, ctx);
            let outcome = match resumed.take() {
                Some(parked) => Box::pin(parked.outcome(ctx)).await?,
                None if bridged => {
                    let owner = self.owner();
                    let started = crate::park::Bridged::start(
                        &peer,
                        call.clone(),
                        ctx,
                        &self.upstream,
                        owner,
                    );
                    Box::pin(started.outcome(ctx)).await?
                }
                None => peer.request_raw(&call).await,
            };
            let raw = match outcome {
                Ok(v) => v,
                Err(_) if ctx.is_cancelled() => return Err(ToolError::Cancelled),
                Err(e) => return Err(ToolError::Failed(self.upstream_failure(&e))),
            };
            // Read once: what the result asks of the gateway, and what passing it on needs.
            let head = Head::read(raw.get(), peer.era())
                .map_err(|why| ToolError::Failed(self.unreadable(&why)))?;
            match head.kind() {
                ResultKind::Final => {
                    let passed = self.decide(&head, raw.get(), peer.protocol_version(), ctx);
                    drop(head);
                    return self.deliver(raw, passed);
                }
                ResultKind::Task(task_id) => {
                    let task = self.upstream_task(&peer, task_id, 0, &call);
                    let raw = Box::pin(task.finish(ctx)).await?;
                    return self.pass_on(raw, peer.protocol_version(), ctx);
                }
                ResultKind::AsksForInput => {}
            }
            let value: Value = serde_json::from_str(raw.get())
                .map_err(|e| ToolError::Failed(self.not_a_result(e)))?;
            let answers = Box::pin(answer_inputs(&value, ctx)).await?;
            let obj = call.params.as_object_mut().expect("params are an object");
            obj.insert("inputResponses".into(), Value::Object(answers));
            match value.get("requestState") {
                Some(state) => obj.insert("requestState".into(), state.clone()),
                None => obj.remove("requestState"),
            };
        }
        Err(ToolError::Failed(format!(
            "upstream {} asked for input more than {MAX_ROUNDS} times in one call",
            self.server()
        )))
    }

    /// The upstream's task `task_id`, made for `call` on `peer`, at question round `round`.
    fn upstream_task<'a>(
        &'a self,
        peer: &'a toolwright_client::Peer,
        task_id: String,
        round: u64,
        call: &Call,
    ) -> crate::task::UpstreamTask<'a> {
        crate::task::UpstreamTask {
            peer,
            task_id,
            server: self.server(),
            tool: &self.tool.upstream_name,
            round,
            observer: call.observer.clone(),
            timeout: self.tool.timeout,
        }
    }

    fn not_a_result(&self, e: serde_json::Error) -> String {
        self.unreadable(&Unreadable::NotAResult(e))
    }

    fn unreadable(&self, why: &Unreadable) -> String {
        format!("upstream {} sent a tools/call result {why}", self.server())
    }

    /// The headers of the call: a modern HTTP upstream wants its `x-mcp-header` arguments
    /// mirrored in them.
    fn headers(&self, args: &Value, era: Era) -> Result<Vec<(String, String)>, ToolError> {
        match (&self.tool.param_headers, era) {
            (Some(p), Era::Modern) => p.headers(args).map_err(|e| {
                ToolError::Failed(format!(
                    "the call to {} on upstream {} cannot carry its arguments in headers: {e}",
                    self.tool.upstream_name,
                    self.server()
                ))
            }),
            _ => Ok(Vec::new()),
        }
    }

    fn upstream_failure(&self, e: &ClientError) -> String {
        match e {
            ClientError::Rpc { code, message, .. } => format!(
                "upstream {} refused the call to {}: {message} ({code})",
                self.server(),
                self.tool.upstream_name
            ),
            other => format!(
                "the call to {} on upstream {} failed: {other}",
                self.tool.upstream_name,
                self.server()
            ),
        }
    }

    /// The upstream's result for this client: `structuredContent` checked against the
    /// upstream's `outputSchema`, then passed on as the bytes the upstream sent when they
    /// suit this client as they stand (the common case), else rebuilt for it.
    fn pass_on(
        &self,
        raw: Box<RawValue>,
        upstream: ProtocolVersion,
        ctx: &ToolContext,
    ) -> Result<CallToolResult, ToolError> {
        let head: Head<'_> =
            serde_json::from_str(raw.get()).map_err(|e| ToolError::Failed(self.not_a_result(e)))?;
        let passed = self.decide(&head, raw.get(), upstream, ctx);
        drop(head);
        self.deliver(raw, passed)
    }

    /// How a final result read as `head` (of `text`, from an upstream of version
    /// `upstream`) goes on: its `structuredContent` checked against the tool's contract,
    /// and the form it reaches this call's client in.
    fn decide(
        &self,
        head: &Head<'_>,
        text: &str,
        upstream: ProtocolVersion,
        ctx: &ToolContext,
    ) -> Passed {
        let is_error = head.is_error == Some(true);
        if !is_error && let Some(problem) = self.contract_problem(head.structured) {
            let text = format!("upstream {} {problem}", self.server());
            match self.tool.contracts {
                ContractMode::Enforce => return Passed::Refused(CallToolResult::error(text)),
                ContractMode::Warn => {
                    tracing::warn!(server = %self.server(), tool = %self.tool.upstream_name, "{text}");
                    ctx.log(
                        LoggingLevel::Warning,
                        Some("toolwright.gateway"),
                        Value::String(text),
                    );
                }
            }
        }
        Passed::On {
            is_error,
            sent: head.as_sent_to(text, ctx.protocol_version(), upstream),
        }
    }

    /// The result `decide` settled on for the upstream's `raw`.
    fn deliver(&self, raw: Box<RawValue>, passed: Passed) -> Result<CallToolResult, ToolError> {
        let (is_error, sent) = match passed {
            Passed::Refused(result) => return Ok(result),
            Passed::On { is_error, sent } => (is_error, sent),
        };
        let text = match sent {
            Some(AsSent::Same) => raw,
            Some(AsSent::WithoutResultType) => {
                return Ok(CallToolResult::forwarded_without_result_type(raw, is_error));
            }
            Some(AsSent::Changed(t)) => match RawValue::from_string(t) {
                Ok(t) => t,
                Err(_) => return self.rebuilt(&raw),
            },
            None => return self.rebuilt(&raw),
        };
        Ok(CallToolResult::forwarded(text, is_error))
    }

    /// The result built from the upstream's text, for a client that cannot take it as sent.
    fn rebuilt(&self, raw: &RawValue) -> Result<CallToolResult, ToolError> {
        serde_json::from_str(raw.get()).map_err(|e| ToolError::Failed(self.not_a_result(e)))
    }

    /// What is wrong with the `structuredContent` of a successful result, if the upstream
    /// declared an `outputSchema`.
    fn contract_problem(&self, structured: Option<&RawValue>) -> Option<String> {
        let validator = self.tool.output.as_ref()?;
        let Some(sc) = structured else {
            return Some(
                "returned no structuredContent although its tool declares an outputSchema".into(),
            );
        };
        let value: Value = match serde_json::from_str(sc.get()) {
            Ok(v) => v,
            Err(e) => return Some(format!("returned structuredContent that is not JSON: {e}")),
        };
        let violations = validator.validate(&value).err()?;
        Some(format!(
            "returned structuredContent that violates the outputSchema of {}:\n{}",
            self.tool.upstream_name,
            format_violations(&violations)
        ))
    }
}

/// What [`UpstreamTool::decide`] settled on for a final result.
enum Passed {
    /// The result broke the tool's contract: this error goes instead.
    Refused(CallToolResult),
    /// The result goes on, as `sent` says (`None`: rebuilt for the client).
    On {
        is_error: bool,
        sent: Option<AsSent>,
    },
}

/// Relays the upstream's progress to this call's client, when it asked for progress.
fn progress_relay(ctx: &ToolContext) -> Option<ProgressFn> {
    ctx.wants_progress().then(|| {
        let ctx = ctx.clone();
        Arc::new(move |p: f64, total: Option<f64>, message: Option<String>| {
            ctx.progress(p, total, message.as_deref());
        }) as ProgressFn
    })
}

/// Answers a modern upstream's `inputRequests` by asking this call's client, every
/// question of the round before giving up, so a modern client gets them all at once.
async fn answer_inputs(result: &Value, ctx: &ToolContext) -> Result<Map<String, Value>, ToolError> {
    let mut answers = Map::new();
    let mut deferred = false;
    let requests = result
        .get("inputRequests")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if requests.is_empty() {
        return Err(ToolError::Failed(
            "the upstream asked for input (input_required) without saying what".into(),
        ));
    }
    for (key, request) in requests {
        let method = request
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let params = request.get("params").cloned().unwrap_or_else(|| json!({}));
        match ctx.request_client(&method, params).await {
            Ok(answer) => {
                answers.insert(key, answer);
            }
            Err(ClientRequestError::InputRequired) => deferred = true,
            Err(e) => {
                return Err(ToolError::Failed(format!(
                    "the upstream asked the client ({method}), which failed: {e}"
                )));
            }
        }
    }
    if deferred {
        return Err(ToolError::InputRequired);
    }
    Ok(answers)
}

/// Carries an upstream's requests during one call to that call's client, when it can be
/// asked in the middle of the call (a legacy client; a modern one is [bridged]).
///
/// [bridged]: crate::park::Bridged
struct AskClient {
    ctx: ToolContext,
    /// The upstream asking: what it may be given of roots.
    upstream: Arc<Upstream>,
}

impl PeerHandler for AskClient {
    fn request(
        &self,
        method: String,
        params: Value,
    ) -> BoxFuture<'static, Result<Value, ErrorObject>> {
        // What the upstream's entry gives it of roots: its directories, nothing, or (`roots:
        // client`) what this call's client has.
        if let Some(answer) = crate::park::roots_of_its_own(&method, &self.upstream) {
            return Box::pin(async move { answer });
        }
        let ctx = self.ctx.clone();
        let declared = self
            .ctx
            .capability_for(&method)
            .is_some_and(|(_, declared)| declared);
        if !declared {
            // The client cannot be asked: what the upstream wanted is refused to the
            // upstream (which decides what that means), without failing this call on the
            // client's side.
            let answer = Err(ErrorObject::new(
                toolwright_jsonrpc::code::METHOD_NOT_FOUND,
                format!("the gateway's client does not offer {method}"),
            ));
            return Box::pin(async move { answer });
        }
        Box::pin(async move {
            match ctx.request_client(&method, params).await {
                Ok(v) => Ok(v),
                Err(ClientRequestError::InputRequired) => Err(ErrorObject::internal(
                    "the gateway's client answers only on a retry of its call, and this upstream cannot wait for one",
                )),
                Err(ClientRequestError::NotSupported(cap)) => Err(ErrorObject::new(
                    toolwright_jsonrpc::code::METHOD_NOT_FOUND,
                    format!("the gateway's client did not declare the {cap} capability"),
                )),
                Err(e) => Err(ErrorObject::internal(format!(
                    "the gateway's client could not answer {method}: {e}"
                ))),
            }
        })
    }
}
