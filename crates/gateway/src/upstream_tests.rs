//! Tests of `upstream.rs`: the backoff, shared connection attempts, variables.

use super::*;

#[test]
fn backoff_doubles_up_to_the_cap() {
    assert_eq!(backoff(1), Duration::from_millis(250));
    assert_eq!(backoff(2), Duration::from_millis(500));
    assert_eq!(backoff(3), Duration::from_secs(1));
    assert_eq!(backoff(20), MAX_BACKOFF);
}

/// Hears nothing.
struct Deaf;

impl Events for Deaf {
    fn notification(&self, _: &str, _: &str, _: &Value) {}
    fn connected(&self, _: &str) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
    fn closed(&self, _: &str, _: &str) {}
    fn request(
        &self,
        _: &str,
        _: String,
        _: Value,
    ) -> BoxFuture<'static, Result<Value, ErrorObject>> {
        Box::pin(async { Err(ErrorObject::internal("no")) })
    }
}

#[test]
fn callers_that_wait_on_a_failed_attempt_share_it() {
    use toolwright_toolfile::{Document, Format, read_config};
    let yaml = "servers:\n  gone:\n    command: [/nonexistent/toolwright-test-server]\n";
    let doc = Document::parse(std::path::Path::new("gw.yaml"), Format::Yaml, yaml.into()).unwrap();
    let server = read_config(&[doc]).unwrap().servers.remove(0);
    // One thread: the three callers all start (and note the attempts seen) before
    // the first attempt can end. On several threads a caller that started after it
    // failed would rightly wait for the next attempt, and the count would be two.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let shared = Shared::new(Chain::check(&[]).unwrap());
    let up = Upstream::new(
        &server,
        Duration::from_secs(5),
        rt.handle().clone(),
        Arc::new(Deaf),
        &shared,
        None,
    )
    .unwrap();
    let errors = rt.block_on(async {
        let calls: Vec<_> = (0..3)
            .map(|_| {
                let up = up.clone();
                tokio::spawn(async move { up.peer().await.map(|_| ()) })
            })
            .collect();
        let mut errors = Vec::new();
        for c in calls {
            errors.push(c.await.unwrap().unwrap_err().to_string());
        }
        errors
    });
    // One attempt, one failure counted (and logged), the same reason for every caller.
    assert_eq!(up.state.lock().failures, 1, "{errors:#?}");
    assert_eq!(up.state.lock().attempts, 1);
    assert!(errors.iter().all(|e| *e == errors[0]), "{errors:#?}");
}

#[test]
fn expand_refuses_unset_variables() {
    let t = Template::parse("${TOOLWRIGHT_SURELY_UNSET_VAR_X}").unwrap();
    let e = expand(&t, "a", "env.K").unwrap_err().to_string();
    assert!(e.contains("TOOLWRIGHT_SURELY_UNSET_VAR_X"), "{e}");
    assert!(e.starts_with("servers.a.env.K: "), "{e}");
    assert_eq!(
        expand(&Template::parse("plain").unwrap(), "a", "x").unwrap(),
        "plain"
    );
}
