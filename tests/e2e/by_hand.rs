//! One run of one kit by hand, into a folder that stays: what `tests/e2e/tools/run_kit.sh`
//! runs (in a network namespace), with the suite's own Zed client and checks. The folder
//! holds the project, the agent's home, the stand-in's log and requests, each phase's dump,
//! client transcript and stderr, the store, and `summary.json`: the verdict, each failed
//! check, what Zed showed, whether the run passed.
//!
//! Environment (run_kit.sh sets it): `RUN_KIT_AGENT`, `RUN_KIT_SCENARIO`, `RUN_KIT_OUT` (a new
//! or empty folder), `RUN_KIT_ZED` (`main`, the default, or `1.18`), `RUN_KIT_DIRECT=1` (the
//! agent without the proxy: the run then passes when the turn ended with `MAIN-DONE`, as no
//! card can show), `RUN_KIT_PROXY` (another proxy binary than the one cargo built).

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use serde_json::json;

use crate::kits::Kit;
use crate::run::{self, Relay, Run, Setup, FAIL};
use crate::zed::{self, ZedRules};

/// Checks the agent alone passes when its turn went as the scenario says.
const DIRECT_CHECKS: &[&str] = &["turn", "main-text"];

#[test]
#[ignore = "run by tests/e2e/tools/run_kit.sh"]
fn run_kit() {
    match by_hand() {
        Ok(true) => {}
        Ok(false) => panic!("run_kit: the run failed (see above and summary.json)"),
        Err(e) => panic!("run_kit: {e:#}"),
    }
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Whether the run passed.
fn by_hand() -> Result<bool> {
    let need = |name: &str| {
        var(name).with_context(|| format!("{name} is not set (tests/e2e/tools/run_kit.sh sets it)"))
    };
    let (name, scenario) = (need("RUN_KIT_AGENT")?, need("RUN_KIT_SCENARIO")?);
    // Absolute: the project's path is the session's `cwd`.
    let out = std::path::absolute(need("RUN_KIT_OUT")?).context("RUN_KIT_OUT")?;
    let rules = match var("RUN_KIT_ZED").as_deref() {
        None | Some("main") => ZedRules::Main,
        Some("1.18") => ZedRules::V1_18,
        Some(other) => bail!("RUN_KIT_ZED={other}: `main` or `1.18`"),
    };
    let relay = match var("RUN_KIT_DIRECT").as_deref() {
        None | Some("0") => Relay::Proxy,
        Some(_) => Relay::Direct,
    };
    run::isolated()?;
    let kit = Kit::load(&name)?;
    if !kit.toml.scenarios.contains(&scenario) {
        bail!(
            "kit `{name}` has no scenario `{scenario}` (its kit.toml: {:?})",
            kit.toml.scenarios
        );
    }
    let setup = Setup {
        relay,
        cache: run::installed(&name)?,
        proxy: var("RUN_KIT_PROXY").map_or_else(|| PathBuf::from(run::PROXY), PathBuf::from),
        folder: Some(out.clone()),
    };
    // A folder that is not new or empty is an error before anything is written to it.
    let outcome = Run::new(&kit, &scenario, rules, &setup)?.go();
    let label = format!("{name} {scenario} ({})", zed::name(rules));
    let mut report = String::new();
    let verdict = run::report_run(&kit, relay, &scenario, &label, &outcome, &mut report);
    eprintln!(
        "\n== run_kit {name} ({} {}, relay {relay:?})\n{report}",
        kit.toml.name,
        run::version(&kit)
    );
    let mut summary = json!({
        "kit": name,
        "version": run::version(&kit),
        "scenario": scenario,
        "zed": zed::name(rules),
        "relay": format!("{relay:?}").to_lowercase(),
        "verdict": verdict,
    });
    let passed = match &outcome {
        Ok(o) => {
            summary["live_secs"] = json!(o.live_secs);
            summary["reopen_secs"] = json!(o.reopen_secs);
            summary["failures"] = o
                .failures
                .iter()
                .map(|f| {
                    let known = kit.expect.known_bug(&scenario, f).map(|b| b.note);
                    json!({"check": f.check, "detail": f.detail, "known_bug": known})
                })
                .collect();
            summary["shown"] = json!(o.shown);
            match relay {
                Relay::Direct => !o.failures.iter().any(|f| DIRECT_CHECKS.contains(&f.check)),
                _ => verdict != FAIL,
            }
        }
        Err(e) => {
            summary["error"] = json!(format!("{e:#}"));
            false
        }
    };
    summary["passed"] = json!(passed);
    let path = out.join("summary.json");
    let text = serde_json::to_string_pretty(&summary).context("the summary as JSON")?;
    std::fs::write(&path, text + "\n").with_context(|| format!("write {}", path.display()))?;
    Ok(passed)
}
