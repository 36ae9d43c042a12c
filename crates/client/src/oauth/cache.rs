//! The token cache: one JSON file, mode 0600, entries keyed by resource and authorization
//! server, so that a later run starts with the token (or refreshes it) instead of sending
//! the user back to the browser.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

/// The default place: `$XDG_STATE_HOME/toolwright/oauth-tokens.json`, else
/// `~/.local/state/toolwright/oauth-tokens.json`.
pub fn default_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".local/state"))
        })?;
    Some(base.join("toolwright").join("oauth-tokens.json"))
}

/// What is kept of a session.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    /// The MCP endpoint (canonical), which entries are looked up by.
    pub resource: String,
    /// The `resource` parameter sent (the metadata's resource, maybe a parent).
    pub indicator: String,
    pub issuer: String,
    pub token_endpoint: String,
    pub client_id: String,
    pub client_secret: Option<String>,
    pub method: String,
    pub access: String,
    pub refresh: Option<String>,
    pub expires_at: Option<u64>,
    pub scope: Option<String>,
    /// The session's DPoP private key (PKCS#8, base64url), when it has one.
    pub dpop_key: Option<String>,
    /// Whether the access token is bound to that key.
    pub dpop_bound: bool,
}

fn key(resource: &str, issuer: &str) -> String {
    format!("{resource} {issuer}")
}

fn read(path: &Path) -> Map<String, Value> {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default()
}

/// The entry for `resource` (from whichever authorization server last issued one).
pub(crate) fn load(path: &Path, resource: &str) -> Option<Entry> {
    let all = read(path);
    let e = all
        .values()
        .filter(|e| e.get("resource").and_then(Value::as_str) == Some(resource))
        .max_by_key(|e| e.get("saved_at").and_then(Value::as_u64).unwrap_or(0))?;
    let s = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_owned);
    Some(Entry {
        resource: s("resource")?,
        indicator: s("indicator")?,
        issuer: s("issuer")?,
        token_endpoint: s("token_endpoint")?,
        client_id: s("client_id")?,
        client_secret: s("client_secret"),
        method: s("method")?,
        access: s("access_token")?,
        refresh: s("refresh_token"),
        expires_at: e.get("expires_at").and_then(Value::as_u64),
        scope: s("scope"),
        dpop_key: s("dpop_key"),
        dpop_bound: e
            .get("dpop_bound")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

/// Writes `entry` (replacing the one of the same resource and issuer) to a temporary
/// file created with mode 0600, then renames it over the cache.
pub(crate) fn save(path: &Path, entry: &Entry) -> std::io::Result<()> {
    let mut all = read(path);
    all.insert(
        key(&entry.resource, &entry.issuer),
        json!({
            "resource": entry.resource,
            "indicator": entry.indicator,
            "issuer": entry.issuer,
            "token_endpoint": entry.token_endpoint,
            "client_id": entry.client_id,
            "client_secret": entry.client_secret,
            "method": entry.method,
            "access_token": entry.access,
            "refresh_token": entry.refresh,
            "expires_at": entry.expires_at,
            "scope": entry.scope,
            "dpop_key": entry.dpop_key,
            "dpop_bound": entry.dpop_bound,
            "saved_at": now(),
        }),
    );
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    {
        use std::io::Write;
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        let mut f = opts.open(&tmp)?;
        f.write_all(Value::Object(all).to_string().as_bytes())?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(resource: &str, issuer: &str, access: &str) -> Entry {
        Entry {
            resource: resource.into(),
            indicator: resource.into(),
            issuer: issuer.into(),
            token_endpoint: format!("{issuer}/token"),
            client_id: "c".into(),
            client_secret: None,
            method: "none".into(),
            access: access.into(),
            refresh: Some("r".into()),
            expires_at: Some(10),
            scope: None,
            dpop_key: None,
            dpop_bound: false,
        }
    }

    #[test]
    fn saved_entries_load_by_resource_and_the_file_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/oauth-tokens.json");
        assert_eq!(load(&path, "http://a/mcp"), None);
        save(&path, &entry("http://a/mcp", "http://as", "t1")).unwrap();
        save(&path, &entry("http://b/mcp", "http://as", "t2")).unwrap();
        save(&path, &entry("http://a/mcp", "http://as", "t3")).unwrap();
        assert_eq!(load(&path, "http://a/mcp").unwrap().access, "t3");
        assert_eq!(load(&path, "http://b/mcp").unwrap().access, "t2");
        assert_eq!(read(&path).len(), 2);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
