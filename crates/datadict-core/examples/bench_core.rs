//! The measuring half of `cargo xtask bench core` (the xtask module starts it once per case, so each
//! case gets its own process and its own peak RSS). Not a test: it prints figures, it asserts only
//! that the pipeline saw every event.
//!
//! Usage:
//!   bench_core gen <file> <events>            write the deterministic NDJSON input
//!   bench_core raw <file> <level>             raw flate2 gzip of the file, streamed
//!   bench_core pipeline <file> <level> <workers>
//!                                             read → split → validate → batch → gzip; with
//!                                             workers = 0 the batcher gzips inline (one core),
//!                                             otherwise it hands uncompressed batches to that
//!                                             many compressing threads
//! Each measuring mode prints one JSON line: {"mode","level","workers","bytes","events","secs","rss_kib",...}.

use datadict_core::{BatchOptions, Batcher, Limits};
use flate2::write::GzEncoder;
use flate2::Compression;
use std::io::{BufWriter, Read, Write};
use std::sync::mpsc;
use std::time::Instant;

const CHUNK: usize = 1 << 20;
/// The clock the events are checked against: 2026-01-01T00:00:00Z, after every generated time.
const NOW_MS: i64 = 1_767_225_600_000;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).unwrap_or_else(|| panic!("missing argument {i}; see the usage in the source"));
    match arg(0).as_str() {
        "gen" => generate(arg(1), arg(2).parse().expect("events: a number")),
        "raw" => raw(arg(1), arg(2).parse().expect("level: 0-9")),
        "check" => check_only(arg(1)),
        "pipeline" => pipeline(arg(1), arg(2).parse().expect("level: 0-9"), arg(3).parse().expect("workers: a number")),
        other => panic!("unknown mode `{other}`: use gen, raw or pipeline"),
    }
}

/// xorshift64*: a fixed seed gives the same file on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn word(&mut self, len: usize) -> String {
        const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
        (0..len).map(|_| ALPHABET[self.below(ALPHABET.len() as u64) as usize] as char).collect()
    }
}

/// About 500 bytes per event: strings, integers, floats, booleans, null, a nested object and an
/// array, as the issue asks. Strings come from fixed pools (devices, pages, campaigns, products),
/// as in real analytics data, so the file compresses like real data rather than like noise.
fn generate(path: &str, events: u64) {
    let mut out = BufWriter::with_capacity(CHUNK, std::fs::File::create(path).expect("create the input file"));
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let pool = |rng: &mut Rng, n: usize, len: usize| (0..n).map(|_| rng.word(len)).collect::<Vec<_>>();
    let devices = pool(&mut rng, 20_000, 24);
    let pages = pool(&mut rng, 500, 14);
    let campaigns = pool(&mut rng, 50, 12);
    let skus = pool(&mut rng, 2_000, 10);
    let tags = pool(&mut rng, 30, 6);
    let coupons = pool(&mut rng, 100, 8);
    let pick = |rng: &mut Rng, p: &[String]| p[rng.below(p.len() as u64) as usize].clone();
    const NAMES: [&str; 6] = ["Page View", "Sign Up", "Purchase", "Add To Cart", "Search", "Share"];
    const PLANS: [&str; 3] = ["free", "pro", "enterprise"];
    const SOURCES: [&str; 4] = ["newsletter", "google", "partner", "direct"];
    for i in 0..events {
        let time = 1_735_689_600 + rng.below(31_536_000);
        let line = format!(
            concat!(
                r#"{{"event":"{}","properties":{{"time":{},"distinct_id":"user-{}","$insert_id":"{:016x}-{:08x}","#,
                r#""$device_id":"{}","plan":"{}","price":{}.{:02},"quantity":{},"coupon":{},"first_visit":{},"#,
                r#""page":"/products/{}","utm":{{"source":"{}","medium":"email","campaign":"{}"}},"#,
                r#""items":[{{"sku":"{}","qty":{}}},{{"sku":"{}","qty":{}}}],"tags":["{}","{}","{}"],"#,
                r#""session_ms":{},"score":{}}}}}"#
            ),
            NAMES[rng.below(6) as usize],
            time,
            rng.below(100_000),
            rng.next(),
            i,
            pick(&mut rng, &devices),
            PLANS[rng.below(3) as usize],
            rng.below(500),
            rng.below(100),
            rng.below(10),
            if rng.below(2) == 0 { "null".to_owned() } else { format!("\"{}\"", pick(&mut rng, &coupons)) },
            rng.below(2) == 0,
            pick(&mut rng, &pages),
            SOURCES[rng.below(4) as usize],
            pick(&mut rng, &campaigns),
            pick(&mut rng, &skus),
            rng.below(5),
            pick(&mut rng, &skus),
            rng.below(5),
            pick(&mut rng, &tags),
            pick(&mut rng, &tags),
            pick(&mut rng, &tags),
            rng.below(10_000_000),
            rng.below(1000) as f64 / 7.0,
        );
        out.write_all(line.as_bytes()).unwrap();
        out.write_all(b"\n").unwrap();
    }
    out.flush().unwrap();
}

/// CPU time used by the process so far, all threads included (also those that have exited), in
/// seconds: Linux `/proc/self/stat` user + system time, in clock ticks of 10 ms. On a machine
/// shared with other work, wall time also counts waiting for a core; CPU time does not.
fn cpu_secs() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0.0 };
    // Fields after the command name (which is in parentheses and may hold spaces).
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else { return 0.0 };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line: indexes 11 and 12 counting from the state.
    let ticks: u64 = [11, 12].iter().filter_map(|&i| fields.get(i)?.parse::<u64>().ok()).sum();
    ticks as f64 / 100.0
}

/// The process's peak resident set (Linux `VmHWM`), in KiB; 0 where unknown.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok()))
        .unwrap_or(0)
}

fn open(path: &str) -> std::fs::File {
    std::fs::File::open(path).expect("open the input file (run `gen` first)")
}

/// Split and check only: the cost of the rules without batching or compression.
fn check_only(path: &str) {
    let mut file = open(path);
    let mut buf = vec![0u8; CHUNK];
    let limits = Limits::default();
    let start = Instant::now();
    let mut splitter = datadict_core::RecordSplitter::new(datadict_core::InputFormat::Auto, limits.event_bytes_below - 1);
    let (mut events, mut valid, mut bytes) = (0u64, 0u64, 0u64);
    let mut emit = |r: datadict_core::RawRecord<'_>| {
        events += 1;
        valid += u64::from(datadict_core::check_event(r.bytes, &limits, NOW_MS).is_valid());
    };
    loop {
        let n = file.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        bytes += n as u64;
        splitter.push(&buf[..n], &mut emit).unwrap();
    }
    splitter.finish(&mut emit).unwrap();
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(events, valid, "every generated event is valid");
    println!(r#"{{"mode":"check","level":0,"workers":0,"bytes":{bytes},"events":{events},"secs":{secs:.3},"cpu_secs":{:.3},"rss_kib":{}}}"#, cpu_secs(), peak_rss_kib());
}

fn raw(path: &str, level: u32) {
    let mut file = open(path);
    let mut buf = vec![0u8; CHUNK];
    let start = Instant::now();
    let mut encoder = GzEncoder::new(std::io::sink(), Compression::new(level));
    let mut bytes = 0u64;
    loop {
        let n = file.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        bytes += n as u64;
        encoder.write_all(&buf[..n]).unwrap();
    }
    encoder.finish().unwrap();
    let secs = start.elapsed().as_secs_f64();
    println!(r#"{{"mode":"raw","level":{level},"workers":0,"bytes":{bytes},"events":0,"secs":{secs:.3},"cpu_secs":{:.3},"rss_kib":{}}}"#, cpu_secs(), peak_rss_kib());
}

fn pipeline(path: &str, level: u32, workers: usize) {
    let mut file = open(path);
    let mut buf = vec![0u8; CHUNK];
    let options = BatchOptions {
        limits: Limits::default(),
        gzip_level: (workers == 0).then_some(level),
        now_ms: NOW_MS,
        ..BatchOptions::default()
    };
    let start = Instant::now();
    let mut batcher = Batcher::new(options);
    let (mut gz_bytes, mut events, mut batches) = (0u64, 0u64, 0u64);
    if workers == 0 {
        loop {
            let n = file.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            batcher.push(&buf[..n]).unwrap();
            while let Some(b) = batcher.next_batch() {
                gz_bytes += b.body.len() as u64;
                events += b.events() as u64;
                batches += 1;
            }
        }
        batcher.finish().unwrap();
        while let Some(b) = batcher.next_batch() {
            gz_bytes += b.body.len() as u64;
            events += b.events() as u64;
            batches += 1;
        }
    } else {
        // Bounded queues keep memory flat: the reader waits when the compressors fall behind.
        let (done_tx, done_rx) = mpsc::channel::<(u64, u64)>();
        let mut senders = Vec::new();
        let mut handles = Vec::new();
        for _ in 0..workers {
            let (tx, rx) = mpsc::sync_channel::<datadict_core::Batch>(2);
            let done = done_tx.clone();
            senders.push(tx);
            handles.push(std::thread::spawn(move || {
                for batch in rx {
                    let b = batch.gzip(level);
                    done.send((b.body.len() as u64, b.events() as u64)).unwrap();
                }
            }));
        }
        drop(done_tx);
        let mut next = 0usize;
        let mut send = |batcher: &mut Batcher| {
            while let Some(b) = batcher.next_batch() {
                senders[next % workers].send(b).unwrap();
                next += 1;
            }
        };
        loop {
            let n = file.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            batcher.push(&buf[..n]).unwrap();
            send(&mut batcher);
        }
        batcher.finish().unwrap();
        send(&mut batcher);
        // The closure's borrow of the senders has ended; dropping them closes the channels, which
        // ends the compressing threads.
        drop(senders);
        for h in handles {
            h.join().unwrap();
        }
        for (gz, ev) in done_rx {
            gz_bytes += gz;
            events += ev;
            batches += 1;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let stats = batcher.stats();
    assert_eq!(events, stats.records, "every generated event is valid and batched");
    println!(
        r#"{{"mode":"pipeline","level":{level},"workers":{workers},"bytes":{},"events":{events},"secs":{secs:.3},"cpu_secs":{:.3},"rss_kib":{},"batches":{batches},"gzip_bytes":{gz_bytes}}}"#,
        stats.input_bytes,
        cpu_secs(),
        peak_rss_kib()
    );
}
