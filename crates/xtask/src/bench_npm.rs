//! `cargo xtask bench npm [--events N] [--levels 1,6] [--concurrency N] [--package DIR]`: the
//! npm importer's throughput. Builds the package (or takes an already built one from `--package`,
//! e.g. a copy of an older build to compare with in the same session), writes the deterministic
//! ~500 B/event file of the core's `bench_core` example (once, kept in `target/bench-npm/`),
//! starts a minimal loopback sink (`bench_npm_sink.js`: gunzips and counts, nothing else) and runs
//! `datadict import` under `/usr/bin/time -v` once per gzip level, printing events/s, MB/s, the
//! importer's peak RSS and the CPU seconds of the importer and of the sink (on a shared machine
//! CPU time compares better than wall time). Not a test: it checks only that every event arrived.

use crate::setup::{self, Need};
use crate::util::{cargo, run, step};
use anyhow::{bail, Context};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const SINK: &str = include_str!("bench_npm_sink.js");

pub fn main(args: &[String]) -> anyhow::Result<()> {
    let mut events: u64 = 1_000_000;
    let mut levels = vec![1u32, 6];
    let mut concurrency: Option<String> = None;
    let mut package: Option<PathBuf> = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--events" => events = it.next().context("--events needs a number")?.parse().context("--events needs a number")?,
            "--levels" => {
                levels = it
                    .next()
                    .context("--levels needs a list such as 1,6")?
                    .split(',')
                    .map(|l| l.trim().parse().context("--levels needs numbers 0-9"))
                    .collect::<anyhow::Result<_>>()?
            }
            "--concurrency" => concurrency = Some(it.next().context("--concurrency needs a number")?.clone()),
            "--package" => package = Some(PathBuf::from(it.next().context("--package needs a folder (a built target/npm)")?)),
            other => bail!("unknown option `{other}`: use --events N, --levels 1,6, --concurrency N and --package DIR"),
        }
    }
    anyhow::ensure!(Path::new("/usr/bin/time").exists(), "/usr/bin/time is missing (apt-get install time): it measures the peak RSS");
    setup::ensure(Need::Run)?;
    let package = match package {
        Some(dir) => {
            anyhow::ensure!(dir.join("bin/datadict.js").is_file(), "{} holds no bin/datadict.js: pass a built package folder", dir.display());
            dir
        }
        None => crate::npm::build()?,
    };
    let dir = PathBuf::from("target/bench-npm");
    std::fs::create_dir_all(&dir)?;
    let input = dir.join(format!("events-{events}.ndjson"));
    if !input.is_file() {
        step("building the core's bench_core example (the deterministic event generator)");
        run(cargo().args(["build", "--release", "-p", "datadict-core", "--example", "bench_core"]))?;
        step(&format!("writing {events} events to {}", input.display()));
        let partial = input.with_extension("partial");
        run(Command::new("target/release/examples/bench_core").arg("gen").arg(&partial).arg(events.to_string()))?;
        std::fs::rename(&partial, &input)?;
    }
    let input_bytes = std::fs::metadata(&input)?.len();
    let sink_js = dir.join("sink.js");
    std::fs::write(&sink_js, SINK)?;

    let load = std::fs::read_to_string("/proc/loadavg").map_or_else(|_| "unknown".to_owned(), |l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
    step("starting the loopback sink");
    let mut sink = Command::new("node").arg(&sink_js).stdout(Stdio::piped()).spawn().context("cannot start node")?;
    let mut lines = BufReader::new(sink.stdout.take().context("no sink stdout")?).lines();
    let first = lines.next().context("the sink printed nothing")??;
    let url = first.strip_prefix("listening on ").context("the sink did not print its address")?.to_owned();

    let cli = package.join("bin/datadict.js");
    let mut rows = Vec::new();
    let result = (|| -> anyhow::Result<()> {
        for level in &levels {
            step(&format!("datadict import, gzip level {level}"));
            let mut cmd = Command::new("/usr/bin/time");
            cmd.arg("-v").arg("node").arg(&cli).arg("import").arg(&input);
            cmd.args(["--base-url", &url, "--project-id", "1", "--username", "bench", "--secret", "bench", "--json"]);
            cmd.args(["--gzip-level", &level.to_string()]);
            if let Some(c) = &concurrency {
                cmd.args(["--concurrency", c]);
            }
            let sink_before = cpu_seconds(sink.id());
            let start = Instant::now();
            let out = cmd.output().context("cannot run /usr/bin/time")?;
            let secs = start.elapsed().as_secs_f64();
            let sink_cpu = cpu_seconds(sink.id()) - sink_before;
            let stderr = String::from_utf8_lossy(&out.stderr);
            anyhow::ensure!(out.status.success(), "datadict import failed:\n{stderr}");
            let stdout = String::from_utf8_lossy(&out.stdout);
            let imported = json_number(&stdout, "\"imported\":").context("no `imported` count in the output")?;
            anyhow::ensure!(imported == events, "the sink counted {imported} events of {events}");
            let rss_kib = stderr
                .lines()
                .find_map(|l| l.trim().strip_prefix("Maximum resident set size (kbytes):"))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .context("no peak RSS in /usr/bin/time's output")?;
            let sent = json_number(&stdout, "\"bytesSent\":").unwrap_or(0);
            let time_field = |name: &str| stderr.lines().find_map(|l| l.trim().strip_prefix(name)).and_then(|v| v.trim().parse::<f64>().ok()).unwrap_or(0.0);
            let cpu = time_field("User time (seconds):") + time_field("System time (seconds):");
            rows.push((*level, secs, rss_kib, sent, cpu, sink_cpu));
        }
        Ok(())
    })();
    let _ = sink.kill();
    let _ = sink.wait();
    result?;

    println!("\n{events} events, {:.1} MB of NDJSON ({} B/event), to a loopback sink that gunzips and counts:", input_bytes as f64 / 1e6, input_bytes / events.max(1));
    println!("load average before the run: {load}");
    println!(
        "{:>10} {:>12} {:>10} {:>14} {:>10} {:>10} {:>12} {:>10}",
        "gzip level", "events/s", "MB/s", "peak RSS MiB", "seconds", "sent MB", "import CPU s", "sink CPU s"
    );
    for (level, secs, rss_kib, sent, cpu, sink_cpu) in rows {
        println!(
            "{level:>10} {:>12.0} {:>10.1} {:>14.1} {secs:>10.2} {:>10.1} {cpu:>12.2} {sink_cpu:>10.2}",
            events as f64 / secs,
            input_bytes as f64 / 1e6 / secs,
            rss_kib as f64 / 1024.0,
            sent as f64 / 1e6
        );
    }
    Ok(())
}

/// User plus system CPU seconds of a live process (Linux `/proc/PID/stat`; 0 elsewhere).
fn cpu_seconds(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return 0.0 };
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.rsplit_once(')').map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name; in clock ticks,
    // 100 a second on Linux.
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// The first number after `key` in a line of JSON (the CLI's `--json` result).
fn json_number(text: &str, key: &str) -> Option<u64> {
    let rest = &text[text.find(key)? + key.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}
