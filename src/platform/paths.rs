//! Where things are on each platform: the proxy's config and state folders, and Zed's
//! settings folder as Zed itself finds it (its `paths` crate). Plain functions of the
//! environment, so every platform's rules are tested on any platform.
//!
//! | | Linux (and other Unix) | macOS | Windows |
//! |---|---|---|---|
//! | proxy config | `$XDG_CONFIG_HOME/acp-proxy`, else `~/.config/acp-proxy` | the same | `%APPDATA%\acp-proxy` |
//! | proxy state (the store) | `$XDG_STATE_HOME/acp-proxy`, else `~/.local/state/acp-proxy` | `$XDG_STATE_HOME/acp-proxy`, else `~/Library/Application Support/acp-proxy` | `%LOCALAPPDATA%\acp-proxy` |
//! | Zed's settings | `$FLATPAK_XDG_CONFIG_HOME/zed`, else `$XDG_CONFIG_HOME/zed`, else `~/.config/zed` | `~/.config/zed` | `%APPDATA%\Zed` |
//!
//! A relative `XDG_*` value is ignored, as the XDG specification says.

use std::ffi::OsString;
use std::path::PathBuf;

/// The platforms whose conventions differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    /// Linux and the other Unix systems that follow the XDG conventions.
    Linux,
    MacOs,
    Windows,
}

impl Os {
    /// The platform this build is for.
    pub const CURRENT: Os = if cfg!(windows) {
        Os::Windows
    } else if cfg!(target_os = "macos") {
        Os::MacOs
    } else {
        Os::Linux
    };

    /// What the environment lacks when no config folder can be named.
    pub fn config_vars(self) -> &'static str {
        match self {
            Os::Windows => "APPDATA is not set",
            _ => "neither XDG_CONFIG_HOME nor HOME is set",
        }
    }

    /// What the environment lacks when no state folder can be named.
    pub fn state_vars(self) -> &'static str {
        match self {
            Os::Windows => "LOCALAPPDATA is not set",
            _ => "neither XDG_STATE_HOME nor HOME is set",
        }
    }
}

/// The environment variables the paths derive from (empty values count as unset).
#[derive(Debug, Clone, Default)]
pub struct Env {
    pub home: Option<OsString>,
    pub xdg_config_home: Option<OsString>,
    pub xdg_state_home: Option<OsString>,
    pub flatpak_xdg_config_home: Option<OsString>,
    pub appdata: Option<OsString>,
    pub local_appdata: Option<OsString>,
}

impl Env {
    /// This process's environment.
    pub fn current() -> Env {
        let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
        Env {
            home: var("HOME"),
            xdg_config_home: var("XDG_CONFIG_HOME"),
            xdg_state_home: var("XDG_STATE_HOME"),
            flatpak_xdg_config_home: var("FLATPAK_XDG_CONFIG_HOME"),
            appdata: var("APPDATA"),
            local_appdata: var("LOCALAPPDATA"),
        }
    }

    fn home(&self) -> Option<PathBuf> {
        self.home
            .clone()
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
    }

    fn absolute(v: &Option<OsString>) -> Option<PathBuf> {
        v.clone().map(PathBuf::from).filter(|p| p.is_absolute())
    }

    fn set(v: &Option<OsString>) -> Option<PathBuf> {
        v.clone().filter(|v| !v.is_empty()).map(PathBuf::from)
    }
}

/// The folder of the proxy's `proxy.toml`.
pub fn proxy_config_dir(os: Os, env: &Env) -> Option<PathBuf> {
    let base = match os {
        Os::Windows => Env::set(&env.appdata)?,
        // macOS as Zed does it there: the XDG layout under the home folder.
        Os::Linux | Os::MacOs => {
            Env::absolute(&env.xdg_config_home).or_else(|| env.home().map(|h| h.join(".config")))?
        }
    };
    Some(base.join("acp-proxy"))
}

/// The folder of the proxy's state (the store of subagent transcripts).
pub fn proxy_state_dir(os: Os, env: &Env) -> Option<PathBuf> {
    let base = match os {
        Os::Windows => Env::set(&env.local_appdata)?,
        Os::Linux => Env::absolute(&env.xdg_state_home)
            .or_else(|| env.home().map(|h| h.join(".local").join("state")))?,
        // Where Zed keeps its own data on macOS.
        Os::MacOs => Env::absolute(&env.xdg_state_home).or_else(|| {
            env.home()
                .map(|h| h.join("Library").join("Application Support"))
        })?,
    };
    Some(base.join("acp-proxy"))
}

/// The folder of Zed's `settings.json`, as Zed finds it.
pub fn zed_config_dir(os: Os, env: &Env) -> Option<PathBuf> {
    match os {
        Os::Windows => Some(Env::set(&env.appdata)?.join("Zed")),
        Os::Linux => Some(
            Env::set(&env.flatpak_xdg_config_home)
                .or_else(|| Env::absolute(&env.xdg_config_home))
                .or_else(|| env.home().map(|h| h.join(".config")))?
                .join("zed"),
        ),
        Os::MacOs => Some(env.home()?.join(".config").join("zed")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Env {
        let mut e = Env::default();
        for (k, v) in pairs {
            let v = Some(OsString::from(v));
            match *k {
                "HOME" => e.home = v,
                "XDG_CONFIG_HOME" => e.xdg_config_home = v,
                "XDG_STATE_HOME" => e.xdg_state_home = v,
                "FLATPAK_XDG_CONFIG_HOME" => e.flatpak_xdg_config_home = v,
                "APPDATA" => e.appdata = v,
                "LOCALAPPDATA" => e.local_appdata = v,
                _ => unreachable!("{k}"),
            }
        }
        e
    }
    fn at(s: &str) -> Option<PathBuf> {
        Some(PathBuf::from(s))
    }

    #[test]
    fn the_proxy_config_follows_xdg_on_unix_and_appdata_on_windows() {
        let home = env(&[("HOME", "/home/u")]);
        let xdg = env(&[("HOME", "/home/u"), ("XDG_CONFIG_HOME", "/cfg")]);
        let relative = env(&[("HOME", "/home/u"), ("XDG_CONFIG_HOME", "rel")]);
        for os in [Os::Linux, Os::MacOs] {
            assert_eq!(proxy_config_dir(os, &home), at("/home/u/.config/acp-proxy"));
            assert_eq!(proxy_config_dir(os, &xdg), at("/cfg/acp-proxy"));
            assert_eq!(
                proxy_config_dir(os, &relative),
                at("/home/u/.config/acp-proxy")
            );
            assert_eq!(proxy_config_dir(os, &env(&[("HOME", "")])), None);
            assert_eq!(proxy_config_dir(os, &Env::default()), None);
        }
        let win = env(&[("APPDATA", r"C:\Users\u\AppData\Roaming")]);
        assert_eq!(
            proxy_config_dir(Os::Windows, &win),
            Some(PathBuf::from(r"C:\Users\u\AppData\Roaming").join("acp-proxy"))
        );
        assert_eq!(proxy_config_dir(Os::Windows, &home), None);
    }

    #[test]
    fn the_state_goes_where_each_platform_keeps_application_data() {
        let home = env(&[("HOME", "/home/u")]);
        assert_eq!(
            proxy_state_dir(Os::Linux, &home),
            at("/home/u/.local/state/acp-proxy")
        );
        assert_eq!(
            proxy_state_dir(Os::MacOs, &home),
            at("/home/u/Library/Application Support/acp-proxy")
        );
        let xdg = env(&[("HOME", "/home/u"), ("XDG_STATE_HOME", "/st")]);
        for os in [Os::Linux, Os::MacOs] {
            assert_eq!(proxy_state_dir(os, &xdg), at("/st/acp-proxy"));
        }
        let relative = env(&[("HOME", "/home/u"), ("XDG_STATE_HOME", "rel")]);
        assert_eq!(
            proxy_state_dir(Os::Linux, &relative),
            at("/home/u/.local/state/acp-proxy")
        );
        let win = env(&[("LOCALAPPDATA", r"C:\L"), ("HOME", "/home/u")]);
        assert_eq!(
            proxy_state_dir(Os::Windows, &win),
            Some(PathBuf::from(r"C:\L").join("acp-proxy"))
        );
        assert_eq!(proxy_state_dir(Os::Linux, &Env::default()), None);
        assert_eq!(proxy_state_dir(Os::Windows, &home), None);
    }

    #[test]
    fn zeds_settings_are_found_as_zed_finds_them() {
        let e = env(&[("HOME", "/home/u"), ("XDG_CONFIG_HOME", "/x/cfg")]);
        assert_eq!(zed_config_dir(Os::Linux, &e), at("/x/cfg/zed"));
        let rel = env(&[("HOME", "/home/u"), ("XDG_CONFIG_HOME", "relative")]);
        assert_eq!(zed_config_dir(Os::Linux, &rel), at("/home/u/.config/zed"));
        let flat = env(&[
            ("HOME", "/home/u"),
            ("XDG_CONFIG_HOME", "/x/cfg"),
            ("FLATPAK_XDG_CONFIG_HOME", "/flat"),
        ]);
        assert_eq!(zed_config_dir(Os::Linux, &flat), at("/flat/zed"));
        // macOS: always under the home folder, whatever XDG says.
        assert_eq!(zed_config_dir(Os::MacOs, &flat), at("/home/u/.config/zed"));
        let win = env(&[("APPDATA", r"C:\R"), ("HOME", "/home/u")]);
        assert_eq!(
            zed_config_dir(Os::Windows, &win),
            Some(PathBuf::from(r"C:\R").join("Zed"))
        );
        assert_eq!(zed_config_dir(Os::Linux, &Env::default()), None);
        assert_eq!(zed_config_dir(Os::Windows, &e), None);
    }
}
