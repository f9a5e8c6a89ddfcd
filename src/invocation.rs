//! How this program was started, so that the replay and rerun commands it
//! prints work when pasted where the user is: `cargo run --release --` when
//! cargo ran it, else the path the program was run by (or its bare name
//! when that name on `PATH` is this very file).

use overcast_harness::saved::shell_word;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What [`detect`] reads: the process's first argument, its executable,
/// its working directory and the variables cargo sets for `cargo run`.
#[derive(Clone, Debug, Default)]
pub struct Started {
    /// `argv[0]` as the program was started with it.
    pub argv0: Option<OsString>,
    /// The running executable's path.
    pub exe: Option<PathBuf>,
    /// The working directory.
    pub cwd: Option<PathBuf>,
    /// `CARGO`: the cargo that ran the program, when one did.
    pub cargo: Option<OsString>,
    /// `CARGO_MANIFEST_DIR`: the package cargo ran.
    pub manifest_dir: Option<PathBuf>,
    /// `CARGO_PKG_NAME`: its name.
    pub package: Option<String>,
    /// `PATH`.
    pub path: Option<OsString>,
}

impl Started {
    /// This process.
    pub fn now() -> Started {
        Started {
            argv0: std::env::args_os().next(),
            exe: std::env::current_exe().ok(),
            cwd: std::env::current_dir().ok(),
            cargo: std::env::var_os("CARGO"),
            manifest_dir: std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from),
            package: std::env::var("CARGO_PKG_NAME").ok(),
            path: std::env::var_os("PATH"),
        }
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// `cargo run` of this package: cargo's variables are set, name this
/// package (the folder it was built from), and the executable lies under
/// that folder's build output, `target/PROFILE/` (a program started from
/// another package's cargo process has other variables).
fn cargo_profile(s: &Started) -> Option<String> {
    s.cargo.as_ref()?;
    let dir = s.manifest_dir.as_ref()?;
    if s.package.as_deref() != Some(env!("CARGO_PKG_NAME"))
        || !same_file(dir, Path::new(env!("CARGO_MANIFEST_DIR")))
    {
        return None;
    }
    let exe = s.exe.as_ref()?;
    let profile_dir = exe.parent()?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(|t| dir.join(t))
        .unwrap_or_else(|| dir.join("target"));
    if !same_file(profile_dir.parent()?, &target) {
        return None;
    }
    Some(profile_dir.file_name()?.to_str()?.to_string())
}

/// The words the printed commands start with.
pub fn detect(s: &Started) -> String {
    if let Some(profile) = cargo_profile(s) {
        let mut cmd = String::from("cargo run");
        match profile.as_str() {
            "debug" => {}
            "release" => cmd += " --release",
            other => cmd += &format!(" --profile {}", shell_word(other)),
        }
        // Outside the package's folder cargo needs to be told where it is.
        let inside = match (&s.cwd, &s.manifest_dir) {
            (Some(cwd), Some(dir)) => match (cwd.canonicalize(), dir.canonicalize()) {
                (Ok(cwd), Ok(dir)) => cwd.starts_with(dir),
                _ => false,
            },
            _ => false,
        };
        if !inside {
            if let Some(dir) = &s.manifest_dir {
                let manifest = dir.join("Cargo.toml");
                cmd += &format!(
                    " --manifest-path {}",
                    shell_word(&manifest.to_string_lossy())
                );
            }
        }
        return cmd + " --";
    }
    let exe = s.exe.clone().unwrap_or_else(|| PathBuf::from("overcast"));
    let argv0 = s.argv0.as_ref().map(PathBuf::from);
    // A bare name is found on PATH: say it so when PATH finds this file.
    let name = argv0
        .as_ref()
        .filter(|a| a.components().count() == 1)
        .or(exe
            .file_name()
            .map(Path::new)
            .map(Path::to_path_buf)
            .as_ref())
        .cloned();
    if let (Some(name), Some(path)) = (&name, &s.path) {
        let on_path = std::env::split_paths(path)
            .map(|d| d.join(name))
            .find(|p| p.is_file());
        if on_path.is_some_and(|p| same_file(&p, &exe)) {
            return shell_word(&name.to_string_lossy());
        }
    }
    match argv0 {
        // A path as given works from where the user is.
        Some(a) if a.components().count() > 1 && same_file(&a, &exe) => {
            shell_word(&a.to_string_lossy())
        }
        _ => shell_word(&exe.to_string_lossy()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn started(argv0: &str, exe: &Path) -> Started {
        Started {
            argv0: Some(argv0.into()),
            exe: Some(exe.to_path_buf()),
            cwd: std::env::current_dir().ok(),
            ..Started::default()
        }
    }

    #[test]
    fn a_program_run_by_its_path_prints_that_path() {
        let exe = std::env::current_exe().unwrap();
        let s = started(&exe.to_string_lossy(), &exe);
        assert_eq!(detect(&s), shell_word(&exe.to_string_lossy()));
        // A bare name that PATH does not find as this file: the full path.
        let s = started("overcast", &exe);
        assert_eq!(detect(&s), shell_word(&exe.to_string_lossy()));
    }

    #[test]
    fn a_bare_name_is_kept_when_path_finds_this_very_file() {
        let exe = std::env::current_exe().unwrap();
        let name = exe.file_name().unwrap().to_string_lossy().into_owned();
        let mut s = started(&name, &exe);
        s.path = Some(exe.parent().unwrap().as_os_str().to_owned());
        assert_eq!(detect(&s), shell_word(&name));
    }

    #[test]
    fn cargo_run_is_told_from_its_variables_and_the_build_folder() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let exe = root.join("target/release/overcast");
        let mut s = started("target/release/overcast", &exe);
        s.cargo = Some("cargo".into());
        s.manifest_dir = Some(root.clone());
        s.package = Some(env!("CARGO_PKG_NAME").into());
        s.cwd = Some(root.clone());
        if std::env::var_os("CARGO_TARGET_DIR").is_none() {
            assert_eq!(detect(&s), "cargo run --release --");
            s.cwd = Some(std::env::temp_dir());
            let tail = format!(
                "--manifest-path {} --",
                shell_word(&root.join("Cargo.toml").to_string_lossy())
            );
            assert!(detect(&s).ends_with(&tail), "{}", detect(&s));
        }
        // Another package's cargo: not this one's `cargo run`.
        s.package = Some("other".into());
        assert!(!detect(&s).starts_with("cargo"), "{}", detect(&s));
    }
}
