//! `cargo xtask bench core`: measures the core's import pipeline (read → split → validate → batch
//! → gzip) on a deterministic 1M-event NDJSON file at gzip levels 1 and 6, natively on one core and
//! on both, and through the npm package in Node, beside raw flate2 gzip of the same file measured
//! in the same run; then writes the figures into the "core" section of BENCHMARKS.md. Each case
//! runs in its own process (crates/datadict-core/examples/bench_core.rs, or the Node script
//! crates/datadict-wasm/bench/core.mjs) so each has its own peak RSS. Not a test: nothing asserts
//! a speed.

use crate::util::{cargo, run, step, which};
use anyhow::{bail, Context};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

const EVENTS: u64 = 1_000_000;
const DATA: &str = "target/bench/core-events-1m.ndjson";
const EXAMPLE: &str = "target/release/examples/bench_core";
const NODE_SCRIPT: &str = "crates/datadict-wasm/bench/core.mjs";
const SECTION: &str = "## core";

pub fn main(args: &[String]) -> anyhow::Result<()> {
    let mut events = EVENTS;
    let mut node = true;
    let mut write = true;
    let mut from = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--events" => events = it.next().context("--events needs a number")?.parse().context("--events needs a number")?,
            "--no-node" => node = false,
            "--no-write" => write = false,
            "--from" => from = Some(it.next().context("--from needs a file of output lines")?.clone()),
            other => bail!("unknown option `{other}` of `bench core`: use --events N, --no-node, --no-write, --from FILE"),
        }
    }
    if let Some(file) = from {
        // Re-renders saved output lines (one JSON line per case, as the measuring programs print
        // them) without measuring again, e.g. when the cases were run one by one.
        let text = std::fs::read_to_string(&file).with_context(|| format!("cannot read {file}"))?;
        let rows = text.lines().filter(|l| l.starts_with('{')).map(|l| Row::parse(&label_of(l), l)).collect::<anyhow::Result<Vec<_>>>()?;
        let size = rows.first().map_or(0.0, |r| r.bytes) as u64;
        let table = render(&rows, events, size);
        println!("{table}");
        if write {
            write_section(&table)?;
        }
        return Ok(());
    }
    step("building the bench_core example (release)");
    run(cargo().args(["build", "--release", "-p", "datadict-core", "--example", "bench_core"]))?;
    let data = if events == EVENTS { PathBuf::from(DATA) } else { PathBuf::from(format!("target/bench/core-events-{events}.ndjson")) };
    if !data.exists() {
        step(&format!("generating {} ({events} events)", data.display()));
        std::fs::create_dir_all("target/bench")?;
        run(Command::new(EXAMPLE).args(["gen", &data.to_string_lossy(), &events.to_string()]))?;
    }
    let size = std::fs::metadata(&data)?.len();
    let mut rows = Vec::new();
    let file = data.to_string_lossy().to_string();
    for level in ["1", "6"] {
        for (label, argv) in [
            ("raw flate2 gzip", vec!["raw", &file, level]),
            ("pipeline, one core", vec!["pipeline", &file, level, "0"]),
            ("pipeline, both cores (2 gzip threads)", vec!["pipeline", &file, level, "2"]),
        ] {
            step(&format!("level {level}: {label}"));
            let out = output(Command::new(EXAMPLE).args(&argv))?;
            rows.push(Row::parse(label, &out)?);
        }
        if node {
            step(&format!("level {level}: npm package in Node"));
            match node_case(&file, level) {
                Ok(out) => rows.push(Row::parse("npm package in Node (wasm), one core", &out)?),
                Err(e) => println!("    skipped Node: {e:#}"),
            }
        }
    }
    step("split and check only (no batching, no gzip)");
    rows.push(Row::parse("split + check only", &output(Command::new(EXAMPLE).args(["check", &file]))?)?);
    let table = render(&rows, events, size);
    println!("\n{table}");
    if write {
        write_section(&table)?;
        println!("    wrote the \"core\" section of BENCHMARKS.md");
    }
    Ok(())
}

fn output(cmd: &mut Command) -> anyhow::Result<String> {
    let out = cmd.output().with_context(|| format!("cannot run {cmd:?}"))?;
    if !out.status.success() {
        bail!("{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8(out.stdout)?.lines().last().unwrap_or_default().to_owned())
}

/// Runs the Node script against the packed package in target/npm (built by `cargo xtask npm`).
fn node_case(file: &str, level: &str) -> anyhow::Result<String> {
    let node = which("node").context("node is not installed")?;
    let pkg = Path::new("target/npm/node/datadict_wasm.js");
    if !pkg.exists() {
        crate::npm::main(&[])?;
    }
    output(Command::new(node).args([NODE_SCRIPT, file, level, &pkg.canonicalize()?.to_string_lossy()]))
}

/// The label of a saved output line, from its `mode` and `workers`.
fn label_of(line: &str) -> String {
    let workers = field(line, "workers").unwrap_or(0.0);
    let mode = line.split("\"mode\":\"").nth(1).and_then(|r| r.split('"').next()).unwrap_or("");
    match (mode, workers > 0.0) {
        ("raw", _) => "raw flate2 gzip".to_owned(),
        ("pipeline", false) => "pipeline, one core".to_owned(),
        ("pipeline", true) => format!("pipeline, both cores ({workers} gzip threads)"),
        ("node", _) => "npm package in Node (wasm), one core".to_owned(),
        ("check", _) => "split + check only".to_owned(),
        (other, _) => other.to_owned(),
    }
}

struct Row {
    label: String,
    level: String,
    bytes: f64,
    events: f64,
    secs: f64,
    cpu_secs: f64,
    rss_kib: f64,
}

/// Reads a number out of the one-line JSON the measuring programs print (kept dependency-free).
fn field(line: &str, key: &str) -> Option<f64> {
    let start = line.find(&format!("\"{key}\":"))? + key.len() + 3;
    let rest = &line[start..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    rest[..end].trim().parse().ok()
}

impl Row {
    fn parse(label: &str, line: &str) -> anyhow::Result<Row> {
        let get = |k: &str| field(line, k).with_context(|| format!("no `{k}` in the output `{line}`"));
        Ok(Row {
            label: label.to_owned(),
            level: get("level").map(|l| if l == 0.0 { "–".to_owned() } else { format!("{l}") })?,
            bytes: get("bytes")?,
            events: get("events")?,
            secs: get("secs")?,
            cpu_secs: field(line, "cpu_secs").unwrap_or(0.0),
            rss_kib: get("rss_kib")?,
        })
    }
}

fn render(rows: &[Row], events: u64, size: u64) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "Input: {events} events, {:.0} MB of NDJSON (~{} B/event), generated deterministically by the example's `gen` mode.\n",
        size as f64 / 1e6,
        size / events.max(1)
    );
    let _ = writeln!(t, "| case | gzip level | MB/s (wall) | events/s (wall) | CPU s | MB per CPU s | peak RSS |");
    let _ = writeln!(t, "|---|---|---|---|---|---|---|");
    for r in rows {
        let events = if r.events > 0.0 { format!("{:.0}", r.events / r.secs) } else { "–".to_owned() };
        let (cpu, per_cpu) = if r.cpu_secs > 0.0 {
            (format!("{:.2}", r.cpu_secs), format!("{:.0}", r.bytes / 1e6 / r.cpu_secs))
        } else {
            ("–".to_owned(), "–".to_owned())
        };
        let _ = writeln!(
            t,
            "| {} | {} | {:.0} | {} | {} | {} | {:.1} MiB |",
            r.label,
            r.level,
            r.bytes / 1e6 / r.secs,
            events,
            cpu,
            per_cpu,
            r.rss_kib / 1024.0
        );
    }
    t
}

/// Replaces the "core" section of BENCHMARKS.md (from its heading to the next `## ` heading),
/// or appends it; other sections are left as they are.
fn write_section(table: &str) -> anyhow::Result<()> {
    let path = Path::new("BENCHMARKS.md");
    let text = std::fs::read_to_string(path).unwrap_or_else(|_| "# Benchmarks\n".to_owned());
    let machine = machine();
    let section = format!(
        "{SECTION}\n\nCommand: `cargo xtask bench core` (crates/xtask/src/bench_core.rs; the native cases run\n\
         crates/datadict-core/examples/bench_core.rs, the Node case crates/datadict-wasm/bench/core.mjs\n\
         against the package built by `cargo xtask npm`). Machine: {machine}. Wall-clock rates count\n\
         time spent waiting for a core on this shared machine; \"CPU s\" is the CPU time of all the\n\
         process's threads, and \"MB per CPU s\" the rate per second of CPU, which is what a single-core\n\
         case would reach on an idle core. \"Raw flate2 gzip\" compresses the same file in the same run,\n\
         the floor the pipeline is measured against.\n\n{table}"
    );
    let new = match text.find(&format!("{SECTION}\n")) {
        Some(start) => {
            let after = start + SECTION.len();
            let end = text[after..].find("\n## ").map_or(text.len(), |i| after + i + 1);
            format!("{}{section}\n{}", &text[..start], &text[end..])
        }
        None => format!("{}\n\n{section}", text.trim_end()),
    };
    std::fs::write(path, new)?;
    Ok(())
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| c.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split(':').nth(1)).map(|s| s.trim().to_owned()))
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg").ok().and_then(|l| l.split_whitespace().next().map(str::to_owned)).unwrap_or_default();
    format!("{cores} cores ({cpu}), load average {load} at the start of the write-up")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_read_from_the_output_line() {
        let line = r#"{"mode":"raw","level":6,"workers":0,"bytes":100,"events":0,"secs":0.5,"cpu_secs":0.4,"rss_kib":2048}"#;
        assert_eq!(field(line, "secs"), Some(0.5));
        assert_eq!(field(line, "rss_kib"), Some(2048.0));
        assert_eq!(field(line, "missing"), None);
        let row = Row::parse("raw", line).unwrap();
        assert_eq!((row.level.as_str(), row.bytes, row.cpu_secs), ("6", 100.0, 0.4));
    }
}
