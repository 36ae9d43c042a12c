//! `loadgen`: a raw JSON-RPC load generator for MCP servers (no MCP SDK), the floor
//! responder, and the BENCHMARKS.md report. See `bench/README.md`.
//!
//! ```text
//! loadgen cold-start      [common] [--samples N]                         -- CMD ARGS...
//! loadgen stdio-seq       [common] [--calls N] [--warmup N]              -- CMD ARGS...
//! loadgen stdio-pipelined [common] [--calls N] [--warmup N] [--inflight N] -- CMD ARGS...
//! loadgen tools-list      [common] [--samples N] [--expect N]            -- CMD ARGS...
//! loadgen http            [common] [--clients N] [--calls N] [--warmup N] [--threads N]
//!                         [--header 'Name: value']... [--watch LABEL=PID]...
//!                         [--redis 127.0.0.1:PORT]
//!                         (--url http://127.0.0.1:PORT/mcp | -- CMD ARGS with {port})
//! loadgen floor           [--http 127.0.0.1:PORT]
//! loadgen spawn           [common] [--calls N] [--warmup N] [--concurrency C] -- PROG ARGS...
//! loadgen http-get        [common] [--calls N] [--warmup N] [--concurrency C] --url URL
//!                         [--expect-text S]
//! loadgen pg-query      [common] [--calls N] [--warmup N] [--concurrency C] --url URL
//!                         --statement SQL --param N [--expect-text S]  (the SQL floor: a
//!                         prepared statement on one connection per worker)
//! loadgen json-server     [--addr 127.0.0.1:PORT] [--port-file F] [--max-secs S]
//! loadgen otlp-sink       [--addr 127.0.0.1:PORT] [--port-file F] [--max-secs S]
//!                         (POST /v1/traces counted; GET /stats: requests, spans, bytes)
//! loadgen issuer          [--addr 127.0.0.1:PORT] [--port-file F] --token-file T
//!                         [--audience AUD] [--max-secs S]  (an authorization server
//!                         stand-in: RFC 8414 metadata, a JWKS of one ES256 key; the
//!                         token it mints for AUD is written to T)
//! loadgen report          --results FILE --out FILE --server LABEL=NAME... [--meta K=V]...
//!                         [--note TEXT]... [--summary FILE] [--require-all]
//!                         [--cmd-server LABEL=NAME]... [--http-server LABEL=NAME]...
//!                         [--sql-server LABEL=NAME]...
//!                         [--declared-note TEXT]...  (declared-tool section: floor,
//!                         subject, then peers, in that order)
//!                         [--gw-server CFG:LABEL=NAME]... [--gateway-note TEXT]...
//!                         (gateway section; CFG ss|hh|sh|hs, LABEL gw-direct,
//!                         gw-toolwright or a peer's)
//!                         [--rep-server LABEL=NAME]... [--rep-note TEXT]...
//!                         (replicas section; LABEL rep-a-<era> or rep-b-<era>)
//!                         [--tel-server LABEL=NAME]... [--tel-note TEXT]...
//!                         [--tel-baseline BENCHMARKS.md] (telemetry section; LABEL
//!                         tel-off, tel-metrics or tel-export)
//!                         [--auth-server LABEL=NAME]... [--auth-note TEXT]...
//!                         (access-token section; LABEL auth-static or auth-jwt)
//! common: --era legacy|modern  --protocol-version V  --env K=V  --label NAME  --run N
//!         --max-secs S (measured part)  --timeout-secs S (whole command)  --stderr FILE
//!         --measure NAME (the line's `measure`, default the subcommand)
//! stdio-seq, stdio-pipelined, http: --tool NAME --arguments JSON [--expect-text S] call
//!         that tool instead of `add` (checked: not isError, S in its result); or
//!         --add-as NAME: call `add` under that name (a gateway's `up__add`), sum checked
//! ```
//!
//! Every measurement prints one JSON object on one line to stdout; on failure that
//! object carries an `error` field and the exit code is 1.

mod direct;
mod floor;
mod http;
mod http1;
mod issuer;
mod jsonsrv;
mod otlpsink;
mod pgquery;
mod procs;
mod proto;
mod redis;
mod report;
mod stats;
mod stdio;

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Value, json};

use procs::ServerCmd;
use proto::{Era, Proto, Work};

/// Parsed command line.
#[derive(Debug)]
struct Args {
    sub: String,
    opts: Vec<(String, String)>,
    flags: Vec<String>,
    cmd: Vec<String>,
}

const FLAGS: &[&str] = &["--require-all", "--help", "-h"];

fn parse_args(argv: &[String]) -> Result<Args> {
    let mut it = argv.iter();
    let sub = it.next().cloned().unwrap_or_else(|| "--help".into());
    let mut a = Args {
        sub,
        opts: Vec::new(),
        flags: Vec::new(),
        cmd: Vec::new(),
    };
    while let Some(arg) = it.next() {
        if arg == "--" {
            a.cmd = it.by_ref().cloned().collect();
        } else if FLAGS.contains(&arg.as_str()) {
            a.flags.push(arg.clone());
        } else if let Some(name) = arg.strip_prefix("--") {
            let value = it.next().ok_or_else(|| anyhow!("--{name} needs a value"))?;
            a.opts.push((name.to_owned(), value.clone()));
        } else {
            bail!("unexpected argument {arg:?} (put the server command after --)");
        }
    }
    Ok(a)
}

impl Args {
    fn get(&self, name: &str) -> Option<&str> {
        self.opts
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn all(&self, name: &str) -> impl Iterator<Item = &str> {
        self.opts
            .iter()
            .filter(move |(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn num<T: std::str::FromStr>(&self, name: &str, default: T) -> Result<T> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| anyhow!("--{name}: not a number: {v:?}")),
        }
    }

    fn pairs(&self, name: &str) -> Result<Vec<(String, String)>> {
        self.all(name)
            .map(|kv| {
                kv.split_once('=')
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .ok_or_else(|| anyhow!("--{name} wants KEY=VALUE, got {kv:?}"))
            })
            .collect()
    }

    fn proto(&self) -> Result<Proto> {
        Ok(Proto {
            era: Era::parse(self.get("era").unwrap_or("legacy"))?,
            legacy_version: self
                .get("protocol-version")
                .unwrap_or("2025-11-25")
                .to_owned(),
        })
    }

    fn server(&self) -> Result<ServerCmd> {
        Ok(ServerCmd {
            argv: self.cmd.clone(),
            env: self.pairs("env")?,
            stderr: self.get("stderr").map(str::to_owned),
        })
    }

    fn work(&self) -> Result<Work> {
        if let Some(name) = self.get("add-as") {
            if self.get("tool").is_some() || self.get("arguments").is_some() {
                bail!("--add-as NAME calls add under another name: no --tool or --arguments");
            }
            return Work::add_as(name);
        }
        match (self.get("tool"), self.get("arguments")) {
            (None, None) if self.get("expect-text").is_none() => Ok(Work::Add),
            (Some(name), args) => Work::tool(name, args.unwrap_or("{}"), self.get("expect-text")),
            _ => bail!("--arguments and --expect-text need --tool NAME"),
        }
    }

    fn max(&self, default: f64) -> Result<Duration> {
        Ok(Duration::from_secs_f64(self.num("max-secs", default)?))
    }
}

fn stdio_opts(a: &Args) -> Result<stdio::StdioOpts> {
    let cmd = a.server()?;
    if cmd.argv.is_empty() {
        bail!("no server command: give it after --");
    }
    Ok(stdio::StdioOpts {
        cmd,
        proto: a.proto()?,
        calls: a.num("calls", 20_000)?,
        warmup: a.num("warmup", 1_000)?,
        max: a.max(5.0)?,
        inflight: a.num("inflight", 64)?,
        samples: a.num("samples", 5)?,
        expect_tools: a.num("expect", 1_000)?,
        work: a.work()?,
    })
}

fn direct_opts(a: &Args) -> Result<direct::DirectOpts> {
    Ok(direct::DirectOpts {
        calls: a.num("calls", 2_000)?,
        warmup: a.num("warmup", 20)?,
        concurrency: a.num("concurrency", 1)?,
        max: a.max(5.0)?,
    })
}

fn measure(a: &Args) -> Result<Value> {
    match a.sub.as_str() {
        "cold-start" => stdio::cold_start(&stdio_opts(a)?),
        "stdio-seq" => stdio::sequential(&stdio_opts(a)?),
        "stdio-pipelined" => {
            let mut o = stdio_opts(a)?;
            o.calls = a.num("calls", 200_000)?;
            o.warmup = a.num("warmup", 5_000)?;
            stdio::pipelined(&o)
        }
        "tools-list" => {
            let mut o = stdio_opts(a)?;
            o.samples = a.num("samples", 50)?;
            stdio::tools_list(&o)
        }
        "spawn" => direct::spawn(&direct_opts(a)?, &a.cmd),
        "http-get" => {
            let url = a
                .get("url")
                .ok_or_else(|| anyhow!("http-get: --url http://127.0.0.1:PORT/PATH"))?;
            direct::http_get(&direct_opts(a)?, url, a.get("expect-text"))
        }
        "pg-query" => {
            let need = |k: &str| {
                a.get(k)
                    .map(str::to_owned)
                    .ok_or_else(|| anyhow!("pg-query: --{k} is needed"))
            };
            let q = pgquery::Query {
                url: need("url")?,
                statement: need("statement")?,
                param: a.num("param", 1)?,
                expect: a.get("expect-text").map(str::to_owned),
            };
            pgquery::run(&direct_opts(a)?, &q)
        }
        "http" => {
            let url = a.get("url").map(str::to_owned);
            let cmd = a.server()?;
            if url.is_none() && !cmd.argv.iter().any(|x| x.contains("{port}")) {
                bail!("http: give --url, or a server command with {{port}} in its arguments");
            }
            http::run(&http::HttpOpts {
                cmd,
                url,
                proto: a.proto()?,
                clients: a.num("clients", 64)?,
                calls: a.num("calls", 1_000_000)?,
                warmup: a.num("warmup", 20)?,
                max: a.max(5.0)?,
                ready: Duration::from_secs_f64(a.num("ready-secs", 60.0)?),
                threads: a.num("threads", 1)?,
                work: a.work()?,
                headers: a.all("header").map(str::to_owned).collect(),
                watch: watch_pids(a)?,
                redis: a.get("redis").map(redis::parse_addr).transpose()?,
            })
        }
        other => bail!("unknown subcommand {other:?} (try --help)"),
    }
}

/// `--watch LABEL=PID` (repeatable; pids of one label are summed): processes whose CPU
/// time over the measured part is reported per call.
fn watch_pids(a: &Args) -> Result<Vec<(String, u32)>> {
    a.pairs("watch")?
        .into_iter()
        .map(|(label, pid)| {
            if label.is_empty()
                || !label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_')
            {
                bail!("--watch {label}={pid}: the label is letters, digits and _");
            }
            let pid: u32 = pid
                .parse()
                .map_err(|_| anyhow!("--watch {label}={pid}: not a pid"))?;
            procs::cpu_time(pid).with_context(|| format!("--watch {label}={pid}"))?;
            Ok((label, pid))
        })
        .collect()
}

fn usage() -> &'static str {
    "loadgen: raw JSON-RPC load generator for MCP servers\n\
     subcommands: cold-start stdio-seq stdio-pipelined tools-list http floor\n\
     \x20            spawn http-get json-server otlp-sink issuer report\n\
     see the top of bench/loadgen/src/main.rs or bench/README.md for options"
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse_args(&argv) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("loadgen: {e:#}\n{}", usage());
            return ExitCode::from(2);
        }
    };
    match args.sub.as_str() {
        "--help" | "-h" | "help" => {
            println!("{}", usage());
            ExitCode::SUCCESS
        }
        "floor" => {
            let r = match args.get("http") {
                Some(addr) => floor::serve_http(addr),
                None => floor::serve_stdio(),
            };
            match r {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("floor: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        "json-server" => run_listener(&args, "json-server", |a, l, b| jsonsrv::run(a, l, b)),
        "otlp-sink" => run_listener(&args, "otlp-sink", |a, l, b| otlpsink::run(a, l, b)),
        "issuer" => run_issuer(&args),
        "report" => run_report(&args),
        _ => run_measure(&args),
    }
}

/// What [`jsonsrv::run`] and [`otlpsink::run`] learn: the address, the lifetime, what to do
/// with the bound port.
type OnBound<'a> = Box<dyn FnOnce(u16) -> Result<()> + 'a>;

fn run_listener(
    a: &Args,
    name: &str,
    run: impl FnOnce(&str, Duration, OnBound<'_>) -> Result<()>,
) -> ExitCode {
    let go = || -> Result<()> {
        let lifetime = a.max(600.0)?;
        let port_file = a.get("port-file").map(str::to_owned);
        let on_bound = move |port| {
            eprintln!("{name}: listening on 127.0.0.1:{port}");
            if let Some(f) = &port_file {
                // Written whole under another name, then renamed: a reader never sees half.
                let tmp = format!("{f}.tmp");
                std::fs::write(&tmp, format!("{port}\n"))?;
                std::fs::rename(&tmp, f)?;
            }
            Ok(())
        };
        run(
            a.get("addr").unwrap_or("127.0.0.1:0"),
            lifetime,
            Box::new(on_bound),
        )
    };
    match go() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Writes `text` to `path` whole: under another name, then renamed.
fn write_whole(path: &str, text: &str) -> Result<()> {
    let tmp = format!("{path}.tmp");
    std::fs::write(&tmp, text).with_context(|| format!("writing {tmp}"))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming {tmp}"))?;
    Ok(())
}

fn run_issuer(a: &Args) -> ExitCode {
    let go = || -> Result<()> {
        let lifetime = a.max(600.0)?;
        let token_file = a
            .get("token-file")
            .ok_or_else(|| anyhow!("issuer: --token-file FILE is required"))?;
        let port_file = a.get("port-file");
        issuer::run(
            a.get("addr").unwrap_or("127.0.0.1:0"),
            lifetime,
            a.get("audience").unwrap_or("urn:toolwright-bench"),
            |port, token| {
                eprintln!("issuer: listening on 127.0.0.1:{port}");
                // The token first: a harness that sees the port finds the token there.
                write_whole(token_file, &format!("{token}\n"))?;
                if let Some(f) = port_file {
                    write_whole(f, &format!("{port}\n"))?;
                }
                Ok(())
            },
        )
    };
    match go() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("issuer: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run_report(a: &Args) -> ExitCode {
    let build = || -> Result<report::ReportOpts> {
        Ok(report::ReportOpts {
            results: a
                .get("results")
                .ok_or_else(|| anyhow!("--results FILE is required"))?
                .into(),
            out: a
                .get("out")
                .ok_or_else(|| anyhow!("--out FILE is required"))?
                .into(),
            summary: a.get("summary").map(Into::into),
            servers: a.pairs("server")?,
            meta: a.pairs("meta")?,
            notes: a.all("note").map(str::to_owned).collect(),
            require_all: a.flags.iter().any(|f| f == "--require-all"),
            cmd_servers: a.pairs("cmd-server")?,
            http_servers: a.pairs("http-server")?,
            sql_servers: a.pairs("sql-server")?,
            declared_notes: a.all("declared-note").map(str::to_owned).collect(),
            gw_servers: a
                .pairs("gw-server")?
                .into_iter()
                .map(|(k, name)| {
                    k.split_once(':')
                        .map(|(c, l)| (c.to_owned(), l.to_owned(), name.clone()))
                        .ok_or_else(|| anyhow!("--gw-server wants CFG:LABEL=NAME, got {k:?}"))
                })
                .collect::<Result<_>>()?,
            gateway_notes: a.all("gateway-note").map(str::to_owned).collect(),
            rep_servers: a.pairs("rep-server")?,
            rep_notes: a.all("rep-note").map(str::to_owned).collect(),
            tel_servers: a.pairs("tel-server")?,
            tel_notes: a.all("tel-note").map(str::to_owned).collect(),
            tel_baseline: a.get("tel-baseline").map(Into::into),
            auth_servers: a.pairs("auth-server")?,
            auth_notes: a.all("auth-note").map(str::to_owned).collect(),
        })
    };
    let o = match build() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("loadgen report: {e:#}");
            return ExitCode::from(2);
        }
    };
    match report::run(&o) {
        Ok(absent) if absent.is_empty() || !o.require_all => {
            if !absent.is_empty() {
                eprintln!("report: {} figure(s) without a value", absent.len());
            }
            ExitCode::SUCCESS
        }
        Ok(absent) => {
            eprintln!("report: figures not produced:");
            for x in absent {
                eprintln!("  {x}");
            }
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("loadgen report: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run_measure(a: &Args) -> ExitCode {
    let label = a.get("label").unwrap_or("server").to_owned();
    let mut line = json!({
        "measure": a.get("measure").unwrap_or(a.sub.as_str()),
        "label": label,
        "run": a.get("run").and_then(|r| r.parse::<u64>().ok()),
        "era": a.get("era").unwrap_or("legacy"),
    });
    let timeout = a.num("timeout-secs", 300.0).unwrap_or(300.0);
    let mut timed_out = line.clone();
    timed_out["error"] = json!(format!("timed out after {timeout} s"));
    procs::watchdog(
        Duration::from_secs_f64(timeout),
        format!("{} of {label}", a.sub),
        timed_out.to_string(),
    );
    let code = match measure(a) {
        Ok(Value::Object(m)) => {
            if let Some(o) = line.as_object_mut() {
                o.extend(m);
            }
            ExitCode::SUCCESS
        }
        Ok(other) => {
            line["value"] = other;
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("loadgen {} ({label}): {e:#}", a.sub);
            line["error"] = json!(format!("{e:#}"));
            ExitCode::FAILURE
        }
    };
    println!("{line}");
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn command_after_dashes() {
        let a = parse_args(&args("stdio-seq --calls 10 -- srv --flag x")).unwrap();
        assert_eq!(
            (a.sub.as_str(), a.get("calls"), a.cmd.len()),
            ("stdio-seq", Some("10"), 3)
        );
    }

    #[test]
    fn repeated_env() {
        let a = parse_args(&args("tools-list --env A=1 --env B=2 -- s")).unwrap();
        assert_eq!(
            a.pairs("env").unwrap(),
            vec![("A".into(), "1".into()), ("B".into(), "2".into())]
        );
    }

    #[test]
    fn missing_value() {
        assert!(parse_args(&args("http --clients")).is_err());
    }
    #[test]
    fn stray_argument() {
        assert!(parse_args(&args("http oops")).is_err());
    }
    #[test]
    fn flag_without_value() {
        assert_eq!(
            parse_args(&args("report --require-all --out x"))
                .unwrap()
                .get("out"),
            Some("x")
        );
    }
    #[test]
    fn bad_number() {
        assert!(
            parse_args(&args("stdio-seq --calls ten"))
                .unwrap()
                .num("calls", 1u64)
                .is_err()
        );
    }
    #[test]
    fn bad_pair() {
        assert!(
            parse_args(&args("x --env AB"))
                .unwrap()
                .pairs("env")
                .is_err()
        );
    }
    #[test]
    fn named_tool_work() {
        let a = parse_args(&args(
            "stdio-seq --tool t --arguments {\"x\":1} --expect-text ok",
        ))
        .unwrap();
        assert!(matches!(a.work().unwrap(), Work::Tool { name, .. } if name == "t"));
        assert!(matches!(
            parse_args(&args("stdio-seq")).unwrap().work().unwrap(),
            Work::Add
        ));
        assert!(
            parse_args(&args("stdio-seq --arguments {}"))
                .unwrap()
                .work()
                .is_err()
        );
    }

    #[test]
    fn watched_processes() {
        let me = std::process::id();
        let a = parse_args(&args(&format!(
            "http --watch nginx={me} --watch nginx={me} --watch r_1={me}"
        )))
        .unwrap();
        let w = watch_pids(&a).unwrap();
        assert_eq!(w.len(), 3);
        assert_eq!(w[2], ("r_1".to_owned(), me));
        for bad in ["x", "a-b=1", "=1", "ok=notapid", "ok=4294967295"] {
            let a = parse_args(&args(&format!("http --watch {bad}"))).unwrap();
            assert!(watch_pids(&a).is_err(), "{bad}");
        }
    }

    #[test]
    fn modern_era() {
        assert_eq!(
            parse_args(&args("x --era modern"))
                .unwrap()
                .proto()
                .unwrap()
                .era,
            Era::Modern
        );
    }
}
