//! The loopback redirect (RFC 8252 §7.3): a listener on 127.0.0.1 at a port the OS picks,
//! the authorization URL printed to stderr and opened with `$BROWSER` when set, and the
//! one redirect that brings the code back, its `state` and `iss` (RFC 9207) checked.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use url::Url;

use super::{Prompt, auth};
use crate::ClientError;

/// How long the user has to finish in the browser.
const WAIT: Duration = Duration::from_secs(300);

/// A bound listener and the redirect URI that reaches it.
pub(crate) struct Loopback {
    listener: TcpListener,
    pub redirect_uri: String,
}

impl Loopback {
    pub async fn bind() -> Result<Loopback, ClientError> {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|e| auth(format!("cannot listen on 127.0.0.1: {e}")))?;
        let port = listener
            .local_addr()
            .map_err(|e| auth(e.to_string()))?
            .port();
        Ok(Loopback {
            listener,
            redirect_uri: format!("http://127.0.0.1:{port}/callback"),
        })
    }

    /// Shows the URL (through `prompt`, else as a warning event; and with `$BROWSER` as a
    /// program, never through a shell, unless `browser` is false), then waits for the
    /// redirect and returns its `code`, having checked `state` and the issuer.
    pub async fn authorize(
        self,
        url: &Url,
        expect: &Expect<'_>,
        browser: bool,
        prompt: Option<&Prompt>,
    ) -> Result<String, ClientError> {
        match prompt {
            Some(p) => p.show(url),
            None => tracing::warn!("open this URL to authorize: {url}"),
        }
        if browser
            && let Some(program) = std::env::var_os("BROWSER").filter(|p| !p.is_empty())
            && let Err(e) = tokio::process::Command::new(&program)
                .arg(url.as_str())
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .kill_on_drop(false)
                .spawn()
        {
            tracing::warn!(
                target: "toolwright_client::oauth",
                "cannot run $BROWSER ({program:?}): {e}"
            );
        }
        tokio::time::timeout(WAIT, self.receive(expect))
            .await
            .map_err(|_| auth(format!("no redirect within {} s", WAIT.as_secs())))?
    }

    async fn receive(self, expect: &Expect<'_>) -> Result<String, ClientError> {
        loop {
            let (mut sock, _) = self
                .listener
                .accept()
                .await
                .map_err(|e| auth(e.to_string()))?;
            let mut buf = Vec::new();
            let mut chunk = [0u8; 2048];
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
                match sock.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            let head = String::from_utf8_lossy(&buf);
            let target = head
                .lines()
                .next()
                .and_then(|l| l.strip_prefix("GET "))
                .and_then(|l| l.split(' ').next())
                .unwrap_or("");
            let outcome = callback(target, expect);
            let (status, text) = match &outcome {
                Some(Ok(_)) => ("200 OK", "Authorized; you may close this window."),
                Some(Err(_)) => ("400 Bad Request", "Authorization failed; see the terminal."),
                None => ("404 Not Found", "Not the callback."),
            };
            let reply = format!(
                "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
            let _ = sock.write_all(reply.as_bytes()).await;
            let _ = sock.shutdown().await;
            if let Some(result) = outcome {
                return result;
            }
        }
    }
}

/// What the authorization response must carry.
pub(crate) struct Expect<'a> {
    /// The `state` the request was sent with.
    pub state: &'a str,
    /// The authorization server's issuer identifier, as its metadata gave it.
    pub issuer: &'a str,
    /// Whether the metadata says `iss` comes with every response
    /// (`authorization_response_iss_parameter_supported`).
    pub iss_required: bool,
}

/// RFC 9207 §2.4: an `iss` in the response must be the issuer, compared as strings (no
/// URL normalization: a trailing slash, a case or a default port makes it another one),
/// whether or not the server said it would send one; and it must be there when the server
/// said so. Otherwise the response may come from another server (a mix-up attack) and its
/// code is not sent anywhere.
pub(crate) fn check_iss(
    iss: Option<&str>,
    issuer: &str,
    iss_required: bool,
) -> Result<(), ClientError> {
    match iss {
        Some(i) if i == issuer => Ok(()),
        Some(i) => Err(auth(format!(
            "the authorization response comes from issuer {i:?}, not {issuer:?} (RFC 9207); its code is not used"
        ))),
        None if iss_required => Err(auth(format!(
            "the authorization response has no iss, which {issuer:?} advertises it sends (RFC 9207); its code is not used"
        ))),
        None => Ok(()),
    }
}

/// What a request target on the listener says: `None` when it is not `/callback`.
pub(crate) fn callback(target: &str, expect: &Expect<'_>) -> Option<Result<String, ClientError>> {
    let url = Url::parse(&format!("http://127.0.0.1{target}")).ok()?;
    if url.path() != "/callback" {
        return None;
    }
    let get = |k: &str| {
        url.query_pairs()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.into_owned())
    };
    if let Some(err) = get("error") {
        let desc = get("error_description").unwrap_or_default();
        return Some(Err(auth(format!("{err} {desc}").trim().to_owned())));
    }
    if get("state").as_deref() != Some(expect.state) {
        return Some(Err(auth(
            "the redirect's state does not match the request's",
        )));
    }
    if let Err(e) = check_iss(get("iss").as_deref(), expect.issuer, expect.iss_required) {
        return Some(Err(e));
    }
    Some(get("code").ok_or_else(|| auth("the redirect has no code")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S1: Expect<'static> = Expect {
        state: "s1",
        issuer: "http://as.example",
        iss_required: false,
    };

    #[test]
    fn callback_checks_state_and_takes_the_code() {
        assert_eq!(
            callback("/callback?code=c1&state=s1", &S1)
                .unwrap()
                .unwrap(),
            "c1"
        );
        assert!(
            callback("/callback?code=c1&state=other", &S1)
                .unwrap()
                .is_err()
        );
        assert!(callback("/callback?code=c1", &S1).unwrap().is_err());
        assert!(
            callback("/callback?error=access_denied&state=s1", &S1)
                .unwrap()
                .is_err()
        );
        assert!(callback("/favicon.ico", &S1).is_none());
    }

    /// One case a line: the `iss` received, whether the server advertised it, accepted.
    #[test]
    fn iss_is_compared_as_a_string_and_required_when_advertised() {
        let issuer = "http://as.example:8080";
        for (iss, required, ok) in [
            (Some("http://as.example:8080"), true, true),
            (Some("http://as.example:8080"), false, true),
            (None, false, true),
            (None, true, false),
            (Some("https://evil.example.com"), true, false),
            // Sent though not advertised: still compared.
            (Some("https://evil.example.com"), false, false),
            // Equal only after normalization: a mismatch.
            (Some("http://as.example:8080/"), true, false),
            (Some("HTTP://AS.EXAMPLE:8080"), true, false),
            (Some("http://as.example:8080%2F"), true, false),
            (Some(""), false, false),
        ] {
            assert_eq!(
                check_iss(iss, issuer, required).is_ok(),
                ok,
                "{iss:?} {required}"
            );
        }
    }

    #[test]
    fn the_callback_refuses_a_code_from_another_issuer() {
        let want = Expect {
            state: "s1",
            issuer: "http://as.example",
            iss_required: true,
        };
        let ok = "/callback?code=c1&state=s1&iss=http%3A%2F%2Fas.example";
        assert_eq!(callback(ok, &want).unwrap().unwrap(), "c1");
        let e = callback("/callback?code=c1&state=s1", &want)
            .unwrap()
            .unwrap_err();
        assert!(e.to_string().contains("has no iss"), "{e}");
        let wrong = "/callback?code=c1&state=s1&iss=http%3A%2F%2Fas.example%2F";
        let e = callback(wrong, &want).unwrap().unwrap_err();
        assert!(e.to_string().contains("not \"http://as.example\""), "{e}");
    }

    #[tokio::test]
    async fn a_real_redirect_brings_the_code_back() {
        let lb = Loopback::bind().await.unwrap();
        let uri = Url::parse(&lb.redirect_uri).unwrap();
        let port = uri.port().unwrap();
        let wait = tokio::spawn(async move {
            let want = Expect {
                state: "st",
                issuer: "http://as.example",
                iss_required: false,
            };
            lb.receive(&want).await
        });
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        s.write_all(b"GET /callback?code=abc&state=st HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        assert!(out.starts_with("HTTP/1.1 200"));
        assert_eq!(wait.await.unwrap().unwrap(), "abc");
    }
}
