//! Integration tests: the real `toolwright` binary over real pipes.
//!
//! `util` spawns the binary and checks every message it writes against the official JSON
//! Schema of the request's protocol era.

mod util;

mod auth_bound;
mod auth_introspect;
mod auth_jwt;
mod auth_keys;
mod auth_session;
mod auth_views;
mod cli;
mod cli_forms;
mod client;
mod client_roots;
mod conformance;
mod conformance_auth;
mod conformance_client;
mod conformance_modern;
mod declared;
mod declared_examples;
mod declared_safety;
mod declared_shape;
mod exit_codes;
mod first_use;
mod gateway;
mod gateway_bridge;
mod gateway_config;
mod gateway_exchange;
mod gateway_first_use;
mod gateway_http_upstream;
mod gateway_live;
mod hardening_process;
mod hardening_surfaces;
mod help_and_errors;
mod http;
mod http_client;
mod http_deploy;
mod http_modern;
mod http_node;
mod http_security;
mod http_shared;
mod http_strict;
mod https;
mod import_openapi;
mod limits;
mod limits_shared;
mod lint;
mod lint_loader;
mod logs;
mod metrics;
mod mrtr;
mod oauth_grants;
mod otlp;
mod otlp_conventions;
mod peer;
mod readme_example;
mod screenshot;
mod search_files;
mod search_files_hardening;
mod server_card;
mod sql;
mod stdio_legacy;
mod stdio_modern;
mod stdio_robustness;
mod trace_propagation;
