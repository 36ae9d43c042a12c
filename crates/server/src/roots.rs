//! The roots a call may use: the server's, narrowed by the client's (`roots/list`) when it
//! offered some. Every tool that touches files goes through [`for_call`]: `search_files`
//! (`toolwright-tools`), and declared command tools (`toolwright-declared`) for their `cwd`
//! and `{name:path}` arguments, so a client's roots narrow them all the same way. It lives
//! here because it reads the call's [`ToolContext`], which both crates get from the server.

use crate::{ToolContext, ToolError};
use std::path::PathBuf;

/// The roots this call may use (canonical directories, the client's first root first):
/// [`narrow`] of the server's roots by the client's.
///
/// # Errors
///
/// [`ToolError::Failed`] when the client's roots could not be had.
pub async fn for_call(ctx: &ToolContext) -> Result<Vec<PathBuf>, ToolError> {
    let client = ctx
        .client_roots()
        .await
        .map_err(|e| ToolError::Failed(format!("could not get the client's roots: {e}")))?;
    Ok(narrow(ctx.roots(), client.as_deref().map(Vec::as_slice)))
}

/// The local path of a `file://` URI (`None` for other schemes, remote hosts, or a URI
/// that does not parse).
pub fn file_uri_path(uri: &str) -> Option<PathBuf> {
    let url = url::Url::parse(uri).ok()?;
    if url.scheme() != "file" {
        return None;
    }
    url.to_file_path().ok()
}

/// The roots a call may use: the server's, narrowed by the client's when it offered some.
///
/// A client root inside a server root narrows it; a server root inside a client root stays
/// as is; roots that do not overlap give nothing. Client roots that do not exist are
/// dropped. The order follows the client's list (its first root comes first).
pub fn narrow(server: &[PathBuf], client_uris: Option<&[String]>) -> Vec<PathBuf> {
    let Some(uris) = client_uris else {
        return server.to_vec();
    };
    let mut out: Vec<PathBuf> = Vec::new();
    for uri in uris {
        let Some(c) = file_uri_path(uri).and_then(|p| std::fs::canonicalize(p).ok()) else {
            continue;
        };
        for s in server {
            let allowed = if c.starts_with(s) {
                c.clone()
            } else if s.starts_with(&c) {
                s.clone()
            } else {
                continue;
            };
            if !out.contains(&allowed) {
                out.push(allowed);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn client_roots_narrow_server_roots() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let (root, outside) = (base.join("root"), base.join("outside"));
        let sub = root.join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let server = vec![root.clone()];
        let uri = |p: &Path| url::Url::from_file_path(p).unwrap().to_string();
        assert_eq!(narrow(&server, None), server);
        assert_eq!(narrow(&server, Some(&[uri(&sub)])), vec![sub.clone()]);
        assert_eq!(narrow(&server, Some(&[uri(base.as_path())])), server);
        assert!(narrow(&server, Some(&[uri(&outside)])).is_empty());
        assert!(narrow(&server, Some(&["https://example.com/x".into()])).is_empty());
        assert!(narrow(&server, Some(&[uri(&root.join("missing"))])).is_empty());
        assert_eq!(
            narrow(&server, Some(&[uri(&sub), uri(&root)])),
            vec![sub, root.clone()]
        );
    }

    #[test]
    fn file_uris() {
        assert_eq!(
            file_uri_path("file:///tmp/a%20b"),
            Some(PathBuf::from("/tmp/a b"))
        );
        assert_eq!(
            file_uri_path("file://localhost/tmp"),
            Some(PathBuf::from("/tmp"))
        );
        assert_eq!(file_uri_path("file://elsewhere/tmp"), None);
        assert_eq!(file_uri_path("http://x/y"), None);
        assert_eq!(file_uri_path("not a uri"), None);
    }
}
