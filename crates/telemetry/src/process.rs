//! Process gauges, read from `/proc/self` at each scrape (Linux; elsewhere none are written).
//!
//! The names are the ones Prometheus's own client libraries use for the same figures
//! (`process_cpu_seconds_total`, `process_resident_memory_bytes`, ...), so dashboards made
//! for them work.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Unit;

/// Clock ticks per second of `/proc/self/stat`'s times: `USER_HZ`, 100 on every Linux
/// architecture Rust targets.
const TICKS_PER_SECOND: f64 = 100.0;

#[derive(Debug)]
pub(crate) struct Process;

/// What one read of `/proc/self` found.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Figures {
    pub cpu_seconds: f64,
    pub threads: i64,
    pub virtual_bytes: i64,
    pub resident_bytes: i64,
    pub start_ticks: Option<u64>,
}

impl Process {
    pub(crate) fn new() -> Self {
        Process
    }
}

/// The figures in the text of `/proc/self/stat` and `/proc/self/status`.
pub(crate) fn parse(stat: &str, status: &str) -> Option<Figures> {
    // The command name (field 2) may hold spaces and parentheses: fields resume after the
    // last `)`, at field 3.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
    let cpu = field(14)? + field(15)?;
    let resident_kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<i64>().ok())
        .unwrap_or(0);
    Some(Figures {
        cpu_seconds: cpu as f64 / TICKS_PER_SECOND,
        threads: field(20)? as i64,
        virtual_bytes: field(23)? as i64,
        resident_bytes: resident_kib * 1024,
        start_ticks: field(22),
    })
}

/// Seconds since the epoch at boot, from `/proc/stat`'s `btime`.
fn boot_time() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

fn gauge(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    value: impl prometheus_client::encoding::EncodeGaugeValue,
) -> Result<(), std::fmt::Error> {
    let g = ConstGauge::new(value);
    let m = encoder.encode_descriptor(name, help, unit, g.metric_type())?;
    g.encode(m)
}

impl Collector for Process {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let (Ok(stat), Ok(status)) = (
            std::fs::read_to_string("/proc/self/stat"),
            std::fs::read_to_string("/proc/self/status"),
        ) else {
            return Ok(());
        };
        let Some(f) = parse(&stat, &status) else {
            return Ok(());
        };
        let cpu = ConstCounter::new(f.cpu_seconds);
        let m = encoder.encode_descriptor(
            "process_cpu",
            "Total user and system CPU time spent in seconds",
            Some(&Unit::Seconds),
            cpu.metric_type(),
        )?;
        cpu.encode(m)?;
        let bytes = Unit::Bytes;
        let resident = "Resident memory size in bytes";
        gauge(
            &mut encoder,
            "process_resident_memory",
            resident,
            Some(&bytes),
            f.resident_bytes,
        )?;
        let virt = "Virtual memory size in bytes";
        gauge(
            &mut encoder,
            "process_virtual_memory",
            virt,
            Some(&bytes),
            f.virtual_bytes,
        )?;
        gauge(
            &mut encoder,
            "process_threads",
            "Number of OS threads",
            None,
            f.threads,
        )?;
        if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
            let open = fds.count() as i64;
            gauge(
                &mut encoder,
                "process_open_fds",
                "Number of open file descriptors",
                None,
                open,
            )?;
        }
        if let (Some(ticks), Some(boot)) = (f.start_ticks, boot_time()) {
            let start = boot as f64 + ticks as f64 / TICKS_PER_SECOND;
            let help = "Start time of the process since unix epoch in seconds";
            gauge(
                &mut encoder,
                "process_start_time",
                help,
                Some(&Unit::Seconds),
                start,
            )?;
        }
        Ok(())
    }
}
