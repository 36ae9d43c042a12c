//! toolwright in front of other MCP servers.
//!
//! The `servers:` of a config file are upstream MCP servers, of either protocol era, over
//! stdio or Streamable HTTP. Their tools join the built-in and declared ones in one tool
//! set, namespaced by server, filtered, renamed and overridden as the file says, with
//! annotations the operator can believe and a policy that is enforced on every call.
