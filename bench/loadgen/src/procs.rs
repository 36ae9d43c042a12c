//! Spawning the server under test and reading its CPU time and peak RSS from `/proc`.

use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};

/// How to start a server.
#[derive(Clone, Debug, Default)]
pub struct ServerCmd {
    /// Program and arguments (`{port}` is replaced for HTTP servers).
    pub argv: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Where the server's stderr goes (appended); discarded when `None`.
    pub stderr: Option<String>,
}

impl ServerCmd {
    /// Spawns the server; `piped` gives it stdin/stdout pipes (stdio transport).
    pub fn spawn(&self, piped: bool, port: Option<u16>) -> Result<Child> {
        let argv: Vec<String> = match port {
            Some(p) => self
                .argv
                .iter()
                .map(|a| a.replace("{port}", &p.to_string()))
                .collect(),
            None => self.argv.clone(),
        };
        let (prog, args) = argv
            .split_first()
            .ok_or_else(|| anyhow!("no server command given"))?;
        let mut cmd = Command::new(prog);
        cmd.args(args);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        if piped {
            cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
        } else {
            cmd.stdin(Stdio::null()).stdout(Stdio::null());
        }
        match &self.stderr {
            Some(path) => {
                let f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .with_context(|| format!("opening {path}"))?;
                cmd.stderr(f);
            }
            None => {
                cmd.stderr(Stdio::null());
            }
        }
        let child = cmd.spawn().with_context(|| format!("spawning {prog}"))?;
        live().push(child.id());
        Ok(child)
    }
}

/// Servers spawned and not reaped yet: the watchdog kills them.
fn live() -> std::sync::MutexGuard<'static, Vec<u32>> {
    static LIVE: Mutex<Vec<u32>> = Mutex::new(Vec::new());
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Ends and reaps a server: SIGTERM, then SIGKILL if it has not exited within a grace
/// period. Nothing is measured after this; the grace lets a server finish what it does at
/// exit (a telemetry exporter sends its last batch).
pub fn reap(child: &mut Child) {
    const GRACE: Duration = Duration::from_secs(3);
    let pid = child.id();
    let term = rustix::process::Pid::from_raw(pid as i32)
        .map(|p| rustix::process::kill_process(p, rustix::process::Signal::TERM).is_ok());
    if term == Some(true) {
        let until = Instant::now() + GRACE;
        while matches!(child.try_wait(), Ok(None)) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    live().retain(|&p| p != pid);
}

/// Clock ticks per second for `/proc/<pid>/stat` times.
fn clk_tck() -> u64 {
    static TCK: OnceLock<u64> = OnceLock::new();
    *TCK.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .filter(|&t| t > 0)
            .unwrap_or(100)
    })
}

/// Parses utime+stime (in ticks) out of the text of `/proc/<pid>/stat`.
fn parse_stat_ticks(stat: &str) -> Result<u64> {
    // The command name (field 2) is in parentheses and may contain spaces: split after it.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .ok_or_else(|| anyhow!("bad stat line"))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state); utime is field 14, stime field 15.
    let utime: u64 = fields
        .get(11)
        .ok_or_else(|| anyhow!("short stat line"))?
        .parse()?;
    let stime: u64 = fields
        .get(12)
        .ok_or_else(|| anyhow!("short stat line"))?
        .parse()?;
    Ok(utime + stime)
}

/// CPU time (user + system, all threads) the process has used so far.
pub fn cpu_time(pid: u32) -> Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("reading /proc/{pid}/stat"))?;
    let ticks = parse_stat_ticks(&stat)?;
    Ok(Duration::from_nanos(ticks * 1_000_000_000 / clk_tck()))
}

/// The machine's CPU time so far, from the `cpu` line of `/proc/stat`, in ticks: (busy,
/// all, steal). Busy is everything but idle, iowait and steal.
pub fn machine_ticks() -> Result<(u64, u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").context("reading /proc/stat")?;
    parse_machine_ticks(&stat)
}

fn parse_machine_ticks(stat: &str) -> Result<(u64, u64, u64)> {
    let line = stat
        .lines()
        .find(|l| l.starts_with("cpu "))
        .ok_or_else(|| anyhow!("no cpu line in /proc/stat"))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    if v.len() < 8 {
        bail!("short cpu line in /proc/stat");
    }
    // user nice system idle iowait irq softirq steal
    let all: u64 = v.iter().sum();
    let busy = all - v[3] - v[4] - v[7];
    Ok((busy, all, v[7]))
}

/// Clock ticks per second, for [`machine_ticks`].
pub fn ticks_per_s() -> u64 {
    clk_tck()
}

/// Parses a `kB` line such as `VmHWM:  8123 kB` out of `/proc/<pid>/status` text.
fn parse_status_kb(status: &str, key: &str) -> Result<u64> {
    for line in status.lines() {
        if let Some(rest) = line.strip_prefix(key).and_then(|r| r.strip_prefix(':')) {
            let num = rest.trim().trim_end_matches("kB").trim();
            return Ok(num.parse()?);
        }
    }
    bail!("{key} missing from /proc status")
}

/// Peak resident set size (VmHWM) of the process, in kB.
pub fn peak_rss_kb(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status"))?;
    parse_status_kb(&status, "VmHWM")
}

/// Ends this process, and every server it spawned, if the measurement outlives `limit`:
/// a hung server must never hang the harness. The JSON line `on_timeout` is printed.
pub fn watchdog(limit: Duration, what: String, on_timeout: String) {
    std::thread::spawn(move || {
        std::thread::sleep(limit);
        eprintln!("loadgen: {what} did not finish within {limit:?}; giving up");
        for pid in live().drain(..) {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
        }
        println!("{on_timeout}");
        std::process::exit(3);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_spaces_in_name() {
        let line = "42 (a b) c) S 1 2 3 4 5 6 7 8 9 10 111 222 13 14 15";
        assert_eq!(parse_stat_ticks(line).unwrap(), 333);
    }

    #[test]
    fn stat_too_short() {
        assert!(parse_stat_ticks("42 (x) S 1 2").is_err());
    }

    #[test]
    fn machine_cpu_line() {
        let s = "cpu  100 5 50 800 10 1 4 30 0 0\ncpu0 1 2 3 4 5 6 7 8\n";
        assert_eq!(parse_machine_ticks(s).unwrap(), (160, 1000, 30));
        assert!(parse_machine_ticks("cpu0 1 2\n").is_err());
        assert!(machine_ticks().unwrap().1 > 0);
    }

    #[test]
    fn status_hwm() {
        let s = "Name:\tx\nVmPeak:\t  100 kB\nVmHWM:\t    8123 kB\nVmRSS:\t 7000 kB\n";
        assert_eq!(parse_status_kb(s, "VmHWM").unwrap(), 8123);
    }

    #[test]
    fn status_missing_key() {
        assert!(parse_status_kb("Name: x\n", "VmHWM").is_err());
    }

    #[test]
    fn own_process_is_readable() {
        let pid = std::process::id();
        assert!(peak_rss_kb(pid).unwrap() > 0);
        assert!(cpu_time(pid).is_ok());
    }
}
