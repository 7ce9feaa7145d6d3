//! Where the proxy keeps things for this config: the store and the dump.

use std::path::Path;

use acp_proxy::config::Config;
use acp_proxy::engine::SubagentDisplay as Display;
use acp_proxy::platform;
use acp_proxy::store::{self, StoreLocation};

use super::{Level, Report};

pub(super) fn report_store_and_dump(report: &mut Report, cfg: &Config) {
    if cfg.display == Display::Off {
        report.line(Level::Info, "store", "not used (display = \"off\")");
    } else {
        let location = match &cfg.store.location {
            Some(l) => Ok(l.clone()),
            None => store::default_path().map(StoreLocation::Path),
        };
        match location {
            Ok(StoreLocation::Memory) => {
                report.line(
                    Level::Warn,
                    "store",
                    "memory: subagents' threads do not open after a restart",
                );
                report.fix(
                    "drop `--store memory` / `[store] path = \"memory\"` to keep them on disk",
                );
            }
            Ok(StoreLocation::Path(path)) => report_store_path(report, &path),
            Err(e) => {
                report.line(
                    Level::Warn,
                    "store",
                    format!("{e}: transcripts stay in memory"),
                );
                report.fix("set `[store] path` in the config, or HOME / XDG_STATE_HOME");
            }
        }
    }
    match &cfg.dump.path {
        Some(p) if cfg.dump.redact => report.line(
            Level::Info,
            "dump",
            format!("{} (secrets redacted)", p.display()),
        ),
        Some(p) => report.line(
            Level::Warn,
            "dump",
            format!(
                "{} with redaction OFF: it holds secrets in clear",
                p.display()
            ),
        ),
        None => report.line(
            Level::Info,
            "dump",
            "off (--dump PATH or `[dump] path` records the traffic for debugging)",
        ),
    }
}

fn report_store_path(report: &mut Report, path: &Path) {
    if path.exists() {
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        if platform::can_read_write(path) {
            report.line(
                Level::Ok,
                "store",
                format!("{} ({} KiB)", path.display(), size.div_ceil(1024)),
            );
        } else {
            report.line(
                Level::Warn,
                "store",
                format!(
                    "{} is not writable: transcripts would stay in memory",
                    path.display()
                ),
            );
            report.fix("fix its permissions, or choose another file with --store PATH");
        }
        return;
    }
    // It will be created with its folders: the nearest folder that exists must be writable.
    let creatable = path
        .ancestors()
        .skip(1)
        .find(|a| a.exists())
        .is_some_and(|a| a.is_dir() && platform::can_create_in(a));
    if creatable {
        report.line(
            Level::Ok,
            "store",
            format!("{} (created at first use)", path.display()),
        );
    } else {
        report.line(
            Level::Warn,
            "store",
            format!(
                "{} cannot be created: transcripts would stay in memory",
                path.display()
            ),
        );
        report.fix("choose a writable place with --store PATH or `[store] path`");
    }
}
