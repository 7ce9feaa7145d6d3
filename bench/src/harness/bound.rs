//! What one pass over the stream's bytes costs in this process, with no pipes: bounds a
//! relay's own work cannot beat. Each pass is timed over the same bytes in memory (median of
//! `reps`): a copy, the line split alone (`memchr`), the pure relay's `"id"` search per line,
//! the reader thread's reading of each line (`Scanner::scan`: the multi-pattern key search
//! and, for updates the engine will read, the walker), and the same found by sieving whole
//! runs of lines (`Sieve`, `Scanner::scan_run`).

use std::time::Instant;

use acp_proxy::engine::{Engine, EngineConfig, SubagentDisplay};
use acp_proxy::wire::keys;
use acp_proxy::wire::sieve::Sieve;

use super::gen::{self, Profile};

/// One timed pass; returns a count, so the work is not optimised away.
type Pass<'a> = Box<dyn FnMut() -> usize + 'a>;

/// The relay's read size.
const READ: usize = 1 << 20;

pub(crate) fn run(
    dir: &std::path::Path,
    profile: Profile,
    seed: u64,
    bytes: u64,
    reps: usize,
) -> anyhow::Result<()> {
    let stream = gen::ensure(dir, profile, seed, bytes)?;
    let data = std::fs::read(&stream.path)?;
    let engine = Engine::new(EngineConfig {
        display: SubagentDisplay::Zed,
        ..EngineConfig::default()
    });
    let scanner = engine.scanner();
    let lines = |f: &mut dyn FnMut(&[u8])| {
        let mut pos = 0;
        while pos < data.len() {
            let end = memchr::memchr(b'\n', &data[pos..]).map_or(data.len(), |i| pos + i + 1);
            f(&data[pos..end]);
            pos = end;
        }
    };
    // The stream in whole lines of about the relay's read size.
    let runs: Vec<&[u8]> = {
        let mut runs = Vec::new();
        let mut pos = 0;
        while pos < data.len() {
            let want = (pos + READ).min(data.len());
            let end = memchr::memchr(b'\n', &data[want..]).map_or(data.len(), |i| want + i + 1);
            runs.push(&data[pos..end]);
            pos = end;
        }
        runs
    };
    let mut passes: Vec<(&str, Pass<'_>)> = vec![
        (
            "memcpy in 1 MiB blocks",
            Box::new(|| {
                let mut copy = vec![0u8; READ];
                let mut n = 0;
                for c in data.chunks(READ) {
                    copy[..c.len()].copy_from_slice(c);
                    n += copy[c.len() / 2] as usize;
                }
                n
            }),
        ),
        (
            "line split (memchr per line)",
            Box::new(|| {
                let mut n = 0;
                lines(&mut |_| n += 1);
                n
            }),
        ),
        (
            "line split + `\"id\"` search per line",
            Box::new(|| {
                let mut n = 0;
                lines(&mut |l| n += usize::from(keys::has(&keys::ID_KEY, l)));
                n
            }),
        ),
        (
            "line split + Scanner::scan per line (key search, read-ahead)",
            Box::new(|| {
                let mut n = 0;
                lines(&mut |l| n += usize::from(!scanner.scan(l).is_plain()));
                n
            }),
        ),
        (
            "`\"id\"` sieve over 1 MiB runs",
            Box::new(|| runs.iter().map(|r| Sieve::Id.lines(r).count()).sum()),
        ),
        (
            "key sieve over 1 MiB runs (lines with a key found, not scanned)",
            Box::new(|| {
                let sieve = Sieve::Keys(scanner.key_set());
                runs.iter().map(|r| sieve.lines(r).count()).sum()
            }),
        ),
        (
            "key sieve + key search of the lines found, over 1 MiB runs",
            Box::new(|| {
                let (key_set, sieve) = (scanner.key_set(), Sieve::Keys(scanner.key_set()));
                runs.iter()
                    .map(|r| {
                        sieve
                            .lines(r)
                            .filter(|h| !key_set.scan(&r[h.hit..h.end]).is_empty())
                            .count()
                    })
                    .sum()
            }),
        ),
        (
            "Scanner::scan_run over 1 MiB runs (key sieve, read-ahead)",
            Box::new(|| runs.iter().map(|r| scanner.scan_run(r).lines.len()).sum()),
        ),
    ];
    println!(
        "| pass over {} ({:.0} MiB) | GB/s median of {reps} (min–max) | count |",
        profile.name(),
        data.len() as f64 / (1 << 20) as f64
    );
    println!("|---|---|---|");
    for (name, pass) in passes.iter_mut() {
        let mut rates = Vec::new();
        let mut count = 0;
        for _ in 0..reps.max(1) {
            let start = Instant::now();
            count = std::hint::black_box(pass());
            rates.push(data.len() as f64 / 1e9 / start.elapsed().as_secs_f64());
        }
        rates.sort_by(f64::total_cmp);
        println!(
            "| {name} | {:.2} ({:.2}–{:.2}) | {count} |",
            rates[rates.len() / 2],
            rates[0],
            rates[rates.len() - 1]
        );
    }
    Ok(())
}
