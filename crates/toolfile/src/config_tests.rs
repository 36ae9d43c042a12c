use super::*;
use crate::document::Format;

fn doc(name: &str, text: &str) -> Document {
    let format = Format::of(Path::new(name)).unwrap();
    Document::parse(Path::new(name), format, text.to_owned()).unwrap()
}

/// Every problem of the files as `line:column: message` (the file left out when there is
/// one file).
fn problems(files: &[(&str, &str)]) -> Vec<String> {
    let docs: Vec<Document> = files.iter().map(|(n, t)| doc(n, t)).collect();
    match read_config(&docs) {
        Ok(_) => Vec::new(),
        Err(e) => e
            .problems()
            .iter()
            .map(|p| {
                let s = p.to_string();
                if files.len() == 1 {
                    s.strip_prefix(&format!("{}:", files[0].0))
                        .unwrap_or(&s)
                        .to_owned()
                } else {
                    s
                }
            })
            .collect(),
    }
}

fn one(yaml: &str) -> Vec<String> {
    problems(&[("gw.yaml", yaml)])
}

/// The one problem of a YAML server body (indented under `servers: {s: ...}`).
fn refused(body: &str, want: &str) {
    let text = format!("servers:\n  s:\n{body}");
    let got = one(&text);
    assert!(
        got.len() == 1 && got[0].contains(want),
        "{body:?}: want {want:?}, got {got:#?}"
    );
}

#[test]
fn a_good_file_loads() {
    let text = r#"
gateway:
  separator: "."
  state_file: state/pins.json
tools:
  - name: hello
    command: [echo, hi]
servers:
  everything:
    command: [npx, -y, "@modelcontextprotocol/server-everything"]
    env: {API_KEY: "${EVERYTHING_KEY}", LITERAL: "{{x}}"}
    inherit_env: [HOME]
    cwd: some/dir
    include: ["echo", "get_*"]
    exclude: ["*_dangerous"]
    rename: {echo: say}
    annotations: {readOnlyHint: false}
    policy: {not_read_only: allow, destructive: confirm}
    contracts: warn
    timeout: 5s
    tools:
      echo:
        title: Say
        arguments: {precision: 3}
        policy: deny
  remote:
    url: https://example.com/mcp
    bearer_env: TOKEN
    ca_cert: certs/ca.pem
    prefix: ""
"#;
    let d = doc("/etc/tw/gw.yaml", text);
    let c = read_config(&[d]).unwrap();
    assert_eq!(c.separator, ".");
    assert_eq!(c.state_file, Path::new("/etc/tw/state/pins.json"));
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let names: Vec<&str> = c.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["everything", "remote"]);
    let ev = &c.servers[0];
    assert_eq!(ev.prefix, "everything");
    match &ev.transport {
        Transport::Stdio { argv, env, cwd, .. } => {
            assert_eq!(argv[0], "npx");
            assert_eq!(env[0].1.env_vars().collect::<Vec<_>>(), ["EVERYTHING_KEY"]);
            assert_eq!(cwd.as_deref(), Some(Path::new("/etc/tw/some/dir")));
        }
        t => panic!("{t:?}"),
    }
    assert!(ev.filter.allows("get_x") && ev.filter.allows("echo"));
    assert!(!ev.filter.allows("get_x_dangerous") && !ev.filter.allows("add"));
    assert_eq!(c.servers[1].prefix, "");
    match &c.servers[1].transport {
        Transport::Http { ca_cert, .. } => {
            assert_eq!(ca_cert.as_deref(), Some(Path::new("/etc/tw/certs/ca.pem")));
        }
        t => panic!("{t:?}"),
    }
    // Defaults.
    let c = read_config(&[doc("gw.yaml", "servers:\n  a:\n    url: http://h/mcp\n")]).unwrap();
    assert_eq!(c.separator, "__");
    assert_eq!(c.state_file, Path::new(".toolwright-pins.json"));
    assert!(c.servers[0].filter.allows("anything"));
}

#[test]
fn an_exchange_loads() {
    let text = "servers:\n  s:\n    url: https://h/mcp\n    bearer_env: SVC\n    exchange:\n      token_endpoint: https://as.example/token\n      audience: https://h/mcp\n      scope: a b\n      client_id: gw\n      client_secret: ${GW_SECRET}\n      client_auth: post\n";
    let docs = [doc("gw.yaml", text)];
    let config = read_config(&docs).unwrap();
    let x = config.server("s").unwrap().exchange.clone().unwrap();
    assert_eq!(x.token_endpoint, "https://as.example/token");
    assert_eq!(x.audience, "https://h/mcp");
    assert_eq!(x.scope.as_deref(), Some("a b"));
    assert_eq!(x.client_id, "gw");
    let secret = x.client_secret.unwrap();
    assert_eq!(secret.env_vars().collect::<Vec<_>>(), ["GW_SECRET"]);
    assert_eq!(x.client_auth, crate::exchange::ClientAuth::Post);
}

#[test]
fn server_problems_are_refused_and_placed() {
    table! { refused;
        ("    command: [x]\n    url: http://h\n", "4:5: servers.s.url: a server is reached one way");
        ("    prefix: p\n", "2:3: servers.s: no way to reach it");
        ("    command: []\n", "3:5: servers.s.command: an empty command");
        ("    command: ['']\n", "3:15: servers.s.command[0]: the program is empty");
        ("    command: [sh, -c, 'npx server']\n", "3:19: servers.s.command[1]: `sh -c` runs an inline script");
        ("    command: [/usr/bin/env, node, --eval, 'x()']\n", "servers.s.command[2]: `node --eval` runs an inline script");
        ("    command: [cmd.exe, /c, server.bat]\n", "servers.s.command[1]");
        ("    url: ftp://h/mcp\n", "3:5: servers.s.url: \"ftp://h/mcp\" is not an http:// or https:// URL");
        ("    url: https:///mcp\n", "names no host");
        ("    url: http://h\n    env: {A: b}\n", "4:5: servers.s.env: `env` is for a stdio server");
        ("    command: [x]\n    bearer_env: T\n", "servers.s.bearer_env: `bearer_env` is for an HTTP server");
        ("    url: http://h\n    bearer_env: 'a b'\n", "is not a variable's name");
        ("    command: [x]\n    ca_cert: ca.pem\n", "4:5: servers.s.ca_cert: `ca_cert` is for an https:// server (`url`)");
        ("    url: http://h\n    ca_cert: ca.pem\n", "4:5: servers.s.ca_cert: `ca_cert` is for an https:// server; this url is not one");
        ("    url: https://h\n    ca_cert: ''\n", "servers.s.ca_cert: an empty file name");
        ("    command: [x]\n    exchange: {token_endpoint: 'https://a/t', audience: u, client_id: c}\n", "servers.s.exchange: `exchange` is for an HTTP server");
        ("    url: http://h\n    era: legacy\n    exchange: {token_endpoint: 'https://a/t', audience: u, client_id: c}\n", "servers.s.exchange: `exchange` needs a modern");
        ("    url: http://h\n    exchange: {token_endpoint: 'http://as.example/t', audience: u, client_id: c}\n", "servers.s.exchange.token_endpoint: OAuth over plain http://");
        ("    url: http://h\n    exchange: {token_endpoint: 'https://a/t', audience: '', client_id: c}\n", "servers.s.exchange.audience: an empty `audience`");
        ("    url: http://h\n    exchange: {token_endpoint: 'https://a/t', audience: u, client_id: c, client_secret: hunter2}\n", "servers.s.exchange.client_secret: a secret written in the file");
        ("    url: http://h\n    exchange: {token_endpoint: 'https://a/t', audience: u, client_id: c, client_secret: '{x}'}\n", "servers.s.exchange.client_secret: a secret has no arguments");
        ("    url: http://h\n    exchange: {token_endpoint: 'https://a/t', audience: u, client_id: c, client_auth: post}\n", "servers.s.exchange.client_auth: `client_auth` says how");
        ("    url: http://h\n    exchange: {token_endpoint: 'https://a/t', audience: u, client_id: c, client_auth: jwt}\n", "unknown variant `jwt`");
        ("    url: http://h\n    exchange: {token_endpoint: 'https://a/t', audience: u}\n", "missing field `client_id`");
        ("    command: [x]\n    env: {A: '${}'}\n", "4:11: servers.s.env.A: at byte 0: an environment variable's name");
        ("    command: [x]\n    env: {A: '{arg}'}\n", "servers.s.env.A: a server's environment has no arguments");
        ("    command: [x]\n    inherit_env: [OK, '9x']\n", "4:23: servers.s.inherit_env[1]");
        ("    command: [x]\n    prefix: 'a b'\n", "4:5: servers.s.prefix: the prefix contains ' '");
        ("    command: [x]\n    include: ['[a']\n", "4:15: servers.s.include[0]: not a glob");
        ("    command: [x]\n    exclude: [ok, 'a{b']\n", "servers.s.exclude[1]: not a glob");
        ("    command: [x]\n    rename: {a: 'no space'}\n", "4:14: servers.s.rename.a: \"no space\" cannot be a tool's name");
        ("    command: [x]\n    annotations: {readOnlyHint: 'yes'}\n", "servers.s.annotations.readOnlyHint: `readOnlyHint` is true or false");
        ("    command: [x]\n    tools:\n      t:\n        annotations: {destructiveHint: 1}\n", "servers.s.tools.t.annotations.destructiveHint");
        ("    command: [x]\n    policy: {destructive: maybe}\n", "servers.s.policy.destructive: unknown variant `maybe`");
        ("    command: [x]\n    trust: sure\n", "unknown variant `sure`");
        ("    command: [x]\n    comand: [y]\n", "unknown field `comand`");
        ("    command: [x]\n    timeout: 0s\n", "more than zero");
    }
}

#[test]
fn every_problem_is_reported_at_once() {
    let got = one(
        "servers:\n  Bad:\n    command: [x]\n  ok:\n    url: ftp://x\n    prefix: 'a/b'\n    include: ['[']\n",
    );
    assert_eq!(got.len(), 4, "{got:#?}");
    assert!(got[0].starts_with("2:3: servers.Bad: \"Bad\" is not a server name"));
    assert!(got[1].contains("servers.ok.url"));
    assert!(got[2].contains("servers.ok.prefix"));
    assert!(got[3].contains("servers.ok.include[0]"));
}

#[test]
fn json_and_toml_are_placed_too() {
    let json = "{\n  \"servers\": {\n    \"s\": {\"command\": [\"bash\", \"-c\", \"x\"]}\n  }\n}";
    assert_eq!(
        problems(&[("gw.json", json)]),
        [
            "3:31: servers.s.command[1]: `bash -c` runs an inline script: a server's command is a program and its arguments, run without a shell; run the server's program directly, or put the script in a file and run that"
        ]
    );
    let toml = "[servers.s]\nurl = \"http://h\"\n\n[servers.t]\ncommand = [\"x\"]\nrename = { a = \"b c\" }\n";
    let dated = "[servers.s]\ncommand = [\"x\"]\n[servers.s.tools.t.arguments]\nsince = 2024-01-01T00:00:00Z\nn = 3\n";
    let got = problems(&[("gw.toml", dated)]);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].starts_with("4:1: servers.s.tools.t.arguments.since: a TOML date-time"),
        "{got:?}"
    );
    let got = problems(&[("gw.toml", toml)]);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].starts_with("6:12: servers.t.rename.a:"), "{got:?}");
}

#[test]
fn files_merge_and_names_are_refused_twice() {
    let a = ("a.yaml", "servers:\n  s:\n    command: [x]\n");
    let b = (
        "b.yaml",
        "tools: []\nservers:\n  t:\n    command: [y]\n  s:\n    url: http://h\n",
    );
    let got = problems(&[a, b]);
    assert_eq!(
        got,
        ["b.yaml:5:3: servers.s: another server is named \"s\" (at a.yaml:2:3)"]
    );
    let c = (
        "c.yaml",
        "gateway: {separator: '-'}\nservers:\n  u:\n    command: [x]\n",
    );
    let docs: Vec<Document> = [a, c].iter().map(|(n, t)| doc(n, t)).collect();
    let config = read_config(&docs).unwrap();
    assert_eq!(config.servers.len(), 2);
    assert_eq!(config.separator, "-");
    // The state file sits next to the first file, whichever holds `gateway:`.
    assert_eq!(config.state_file, Path::new(".toolwright-pins.json"));
    let d = ("d.yaml", "gateway: {separator: '.'}\n");
    let got = problems(&[c, d]);
    assert_eq!(
        got,
        ["d.yaml:1:1: gateway: `gateway:` is set in c.yaml:1:1 already; it belongs in one file"]
    );
}

#[test]
fn prefixes_and_namespaces_are_refused_twice() {
    let got = one(
        "servers:\n  a:\n    command: [x]\n  b:\n    command: [x]\n    prefix: a\n  c:\n    command: [x]\n    prefix: ''\n  d:\n    command: [x]\n    prefix: ''\n",
    );
    assert_eq!(
        got,
        [
            "6:5: servers.b.prefix: server \"a\" (at gw.yaml:2:3) has the prefix \"a\" too; two servers cannot share a namespace"
        ]
    );
    let got = one(
        "tools:\n  - name: a__mine\n    command: [x]\n  - name: a_fine\n    command: [x]\nservers:\n  a:\n    command: [x]\n",
    );
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].starts_with("2:5: tool \"a__mine\" (tools[0]): name: \"a__mine\" is in the namespace of server \"a\""),
        "{got:?}"
    );
}

#[test]
fn gateway_settings_are_checked() {
    assert_eq!(
        one("gateway:\n  separator: '::'\n"),
        ["2:3: gateway.separator: \"::\" is not a separator: say \"__\", \"_\", \".\" or \"-\""]
    );
    let got = one("gateway:\n  seperator: '_'\n");
    assert!(
        got[0].contains("gateway") && got[0].contains("unknown field `seperator`"),
        "{got:?}"
    );
}

#[test]
fn settings_no_tool_can_reach_are_warnings() {
    let d = doc(
        "gw.yaml",
        "servers:\n  s:\n    command: [x]\n    include: ['get_*']\n    rename: {put: p}\n    tools:\n      get_a: {title: A}\n      other: {title: O}\n",
    );
    let c = read_config(&[d]).unwrap();
    let w: Vec<String> = c.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(
        w[0].starts_with(
            "gw.yaml:8:7: servers.s.tools.other: no upstream tool named \"other\" passes"
        ),
        "{w:?}"
    );
    assert!(
        w[1].starts_with("gw.yaml:5:14: servers.s.rename.put:"),
        "{w:?}"
    );
    let d = doc(
        "gw.yaml",
        "servers:\n  s:\n    command: [x]\n    trust: trusted\n    annotations: {readOnlyHint: true}\n",
    );
    let w = read_config(&[d]).unwrap().warnings;
    assert_eq!(w.len(), 1);
    assert!(
        w[0].to_string()
            .contains("servers.s.annotations: a trusted server's own")
    );
}
