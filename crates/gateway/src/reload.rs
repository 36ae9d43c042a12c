//! `servers:` hot reload: the upstreams of an edited config swapped in while the gateway
//! runs.
//!
//! An entry whose name is new is a new upstream; an entry that is gone is removed; an entry
//! whose settings differ in any way (its command, an `env:` value, a filter, its policy) is
//! a new upstream in place of the old one. Unchanged entries keep their upstream and its
//! connection. The new upstreams are made first, so a config that cannot be used changes
//! nothing. Then, under the state's lock, the list is swapped and the listings of what
//! went are forgotten; new servers are listed as at start-up (an `eager` one or a lazy one
//! without pins is started, a lazy one with pins is listed from them) and, once they are
//! (at most 20 s), every server's tools and catalog are installed once: clients get one
//! `notifications/tools/list_changed`.
//!
//! A replaced or removed upstream is not closed by the reload: a call in flight holds it
//! (through its tool) and finishes on its connection; when the last holder lets it go, its
//! connection is dropped, which ends a stdio server's process group.
//!
//! The gateway's own settings (`gateway.separator`, `gateway.state_file`) are read at
//! start only; a change to them is logged and waits for a restart.

use crate::error::GatewayError;
use crate::gateway::{FIRST_LIST_WAIT, Gateway, State};
use crate::hub::Hub;
use crate::upstream::{Events, Upstream};
use std::collections::BTreeSet;
use std::sync::Arc;
use toolwright_toolfile::config::{GatewayConfig, Server};

/// What a reload changed, by server name.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Reloaded {
    /// Servers new to the config.
    pub added: Vec<String>,
    /// Servers whose entry changed: a new upstream in place of the old.
    pub changed: Vec<String>,
    /// Servers no longer in the config.
    pub removed: Vec<String>,
}

impl Reloaded {
    /// True when the reload changed no upstream.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.changed.is_empty() && self.removed.is_empty()
    }
}

/// Whether two entries are the same in every setting (all of which derive `Debug`, with
/// maps kept in order).
fn same(a: &Server, b: &Server) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

impl Gateway {
    /// Applies `config`'s `servers:` to the running gateway: adds, removes and replaces
    /// upstreams (see the module's documentation), then installs the tool set and catalog
    /// once. Blocks while the new servers are listed (at most 20 s): call it from a thread
    /// that may, such as the file watcher's.
    ///
    /// # Errors
    ///
    /// When a new or changed entry cannot be used (an unset variable, a CA file that does
    /// not read): nothing is changed then.
    pub fn reload(self: &Arc<Self>, config: &GatewayConfig) -> Result<Reloaded, GatewayError> {
        if config.separator != self.separator {
            tracing::warn!(
                "gateway.separator changed to {:?}; it takes effect when toolwright serve is started again",
                config.separator
            );
        }
        if config.state_file != self.state_file {
            tracing::warn!(
                "gateway.state_file changed to {}; it takes effect when toolwright serve is started again",
                config.state_file.display()
            );
        }
        let old = self.upstreams_now();
        let (next, done) = self.next_upstreams(&old, config)?;
        if done.is_empty() {
            return Ok(done);
        }
        let to_list = {
            let mut st = self.state.lock();
            st.reloading = true;
            for name in done.changed.iter().chain(&done.removed) {
                st.listed.remove(name);
                st.linted.remove(name);
                st.offers.remove(name);
                st.catalog_tried.remove(name);
            }
            self.reserve_current(&mut st);
            self.set_upstreams(&mut st, next);
            self.list_from_pins(&mut st)
        };
        drop(old);
        let gw = self.clone();
        let listed = self.wait_off_runtime(
            async move {
                let tasks: Vec<_> = to_list
                    .into_iter()
                    .map(|up| {
                        let gw = gw.clone();
                        tokio::spawn(async move { gw.refresh(&up).await })
                    })
                    .collect();
                for t in tasks {
                    let _ = t.await;
                }
                true
            },
            FIRST_LIST_WAIT,
        );
        if !listed {
            tracing::warn!(
                "some new upstreams were not listed within {FIRST_LIST_WAIT:?}; their tools join when they answer"
            );
        }
        self.state.lock().reloading = false;
        self.install_all();
        self.install_skills();
        self.install_catalog();
        tracing::info!(
            added = ?done.added,
            changed = ?done.changed,
            removed = ?done.removed,
            "reloaded the gateway's servers"
        );
        Ok(done)
    }

    /// Swaps in the upstreams of a reload (under the state's lock, so an install sees
    /// the upstreams and their listings of one moment).
    fn set_upstreams(&self, _st: &mut State, next: Vec<Arc<Upstream>>) {
        *self.upstreams.lock() = Arc::new(next);
    }

    /// The names upstream tools may not take, read again from the server (a reload of the
    /// tool files may have changed the declared tools): every tool it has but ours.
    fn reserve_current(&self, st: &mut State) {
        let Some(server) = self.server.get() else {
            return;
        };
        let ours: BTreeSet<&String> = st.registered.iter().collect();
        st.reserved = server
            .registered()
            .entries()
            .iter()
            .map(|e| e.definition.name.clone())
            .filter(|n| !ours.contains(n))
            .collect();
    }

    /// The upstreams of `config` in its order, each kept from `old` when its entry is the
    /// same, else made anew; and what changed.
    fn next_upstreams(
        self: &Arc<Self>,
        old: &[Arc<Upstream>],
        config: &GatewayConfig,
    ) -> Result<(Vec<Arc<Upstream>>, Reloaded), GatewayError> {
        let events: Arc<dyn Events> = Arc::new(Hub(Arc::downgrade(self)));
        let mut done = Reloaded::default();
        let mut next = Vec::with_capacity(config.servers.len());
        for server in &config.servers {
            let kept = old.iter().find(|u| u.name() == server.name);
            match kept {
                Some(up) if same(up.config(), server) => {
                    next.push(up.clone());
                    continue;
                }
                Some(_) => done.changed.push(server.name.clone()),
                None => done.added.push(server.name.clone()),
            }
            let timeout = server
                .spec
                .timeout
                .map(|d| d.0)
                .unwrap_or(self.settings.call_timeout);
            next.push(Upstream::new(
                server,
                timeout,
                self.handle().clone(),
                events.clone(),
                &self.shared,
                self.settings.telemetry.clone(),
            )?);
        }
        let names: BTreeSet<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
        done.removed = old
            .iter()
            .filter(|u| !names.contains(u.name()))
            .map(|u| u.name().to_owned())
            .collect();
        Ok((next, done))
    }
}

#[cfg(test)]
mod tests {
    use crate::gateway::{Gateway, Settings};
    use std::time::Duration;
    use toolwright_toolfile::{Document, Format, read_config};

    /// A config of servers `name: [program]`, none of which exists (nothing starts).
    fn config(servers: &[(&str, &str)]) -> toolwright_toolfile::GatewayConfig {
        let mut yaml = String::from("servers:\n");
        for (name, program) in servers {
            yaml.push_str(&format!(
                "  {name}:\n    command: [/nonexistent/{program}]\n"
            ));
        }
        let doc = Document::parse(std::path::Path::new("gw.yaml"), Format::Yaml, yaml).unwrap();
        read_config(&[doc]).unwrap()
    }

    fn settings() -> Settings {
        Settings {
            call_timeout: Duration::from_secs(5),
            telemetry: None,
            tokens: None,
        }
    }

    fn names(gw: &Gateway) -> Vec<String> {
        gw.upstreams().iter().map(|u| u.name().to_owned()).collect()
    }

    #[test]
    fn a_reload_adds_replaces_and_removes_by_entry() {
        let gw = Gateway::new(&config(&[("a", "x"), ("b", "y")]), settings()).unwrap();
        let a = gw.upstreams()[0].clone();
        let done = gw
            .reload(&config(&[("a", "x"), ("b", "y2"), ("c", "z")]))
            .unwrap();
        assert_eq!(done.added, ["c"]);
        assert_eq!(done.changed, ["b"]);
        assert!(done.removed.is_empty());
        assert_eq!(names(&gw), ["a", "b", "c"]);
        assert!(gw.is_current(&a), "an unchanged entry keeps its upstream");
        let same = gw
            .reload(&config(&[("a", "x"), ("b", "y2"), ("c", "z")]))
            .unwrap();
        assert!(same.is_empty(), "{same:?}");
        let done = gw.reload(&config(&[("c", "z")])).unwrap();
        assert_eq!(done.removed, ["a", "b"]);
        assert_eq!(names(&gw), ["c"]);
        assert!(!gw.is_current(&a));
    }

    #[test]
    fn an_entry_that_cannot_be_used_changes_nothing() {
        let gw = Gateway::new(&config(&[("a", "x")]), settings()).unwrap();
        let yaml = "servers:\n  a:\n    command: [/nonexistent/x]\n  b:\n    command: [/nonexistent/y]\n    env: {K: \"${TOOLWRIGHT_SURELY_UNSET_RELOAD_VAR}\"}\n";
        let doc =
            Document::parse(std::path::Path::new("gw.yaml"), Format::Yaml, yaml.into()).unwrap();
        let bad = read_config(&[doc]).unwrap();
        let e = gw.reload(&bad).unwrap_err().to_string();
        assert!(e.contains("TOOLWRIGHT_SURELY_UNSET_RELOAD_VAR"), "{e}");
        assert_eq!(names(&gw), ["a"]);
    }
}
