//! Who the client is at an authorization server that does not know it yet: a client ID
//! metadata document URL where the server takes one, else dynamic registration (RFC 7591),
//! as a native application (SEP-837: its redirect goes to a loopback listener).

use serde_json::{Value, json};
use url::Url;

use super::token::secret_method;
use super::{OAuth, Registered, auth, auth_methods, fetch};
use crate::ClientError;

impl OAuth {
    /// The client to authorize as with the code grant: pre-registered, named by its
    /// metadata document, or registered now.
    pub(super) async fn client(
        &self,
        meta: &Value,
        redirect_uri: &str,
        scope: Option<&str>,
    ) -> Result<Registered, ClientError> {
        let supported = auth_methods(meta);
        if self.options.client_id.is_some() {
            return self.preregistered(meta);
        }
        if let Some(doc) = &self.options.client_metadata_url
            && meta.get("client_id_metadata_document_supported") == Some(&Value::Bool(true))
        {
            return Ok(Registered {
                id: doc.clone(),
                secret: None,
                method: "none".into(),
            });
        }
        let Some(reg) = meta.get("registration_endpoint").and_then(Value::as_str) else {
            return Err(auth(
                "the authorization server supports neither dynamic registration nor this client's metadata document: give --client-id",
            ));
        };
        let reg =
            Url::parse(reg).map_err(|e| auth(format!("registration_endpoint {reg:?}: {e}")))?;
        let wanted = secret_method(true, &supported);
        let mut body = json!({
            "client_name": "toolwright",
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            // OpenID Connect Registration's: the redirect goes to this machine's loopback.
            "application_type": "native",
            "token_endpoint_auth_method": wanted,
        });
        if let Some(s) = scope {
            body["scope"] = json!(s);
        }
        let answer = fetch::post_json(&reg, &body).await?;
        let doc = answer
            .json
            .filter(|_| (200..300).contains(&answer.status))
            .ok_or_else(|| {
                auth(format!(
                    "dynamic registration at {reg} answered HTTP {}",
                    answer.status
                ))
            })?;
        let id = doc
            .get("client_id")
            .and_then(Value::as_str)
            .ok_or_else(|| auth("the registration response has no client_id"))?;
        let secret = doc
            .get("client_secret")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let method = doc
            .get("token_endpoint_auth_method")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| secret_method(secret.is_some(), &supported));
        Ok(Registered {
            id: id.to_owned(),
            secret,
            method,
        })
    }
}
