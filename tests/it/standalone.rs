//! The repository stands alone: nothing it tracks may read material kept beside the checkout
//! (a user who clones the project has only the clone).

use std::path::{Path, PathBuf};

/// The one pattern: a path that climbs out of the clone into a sibling `shared` folder.
fn needle() -> String {
    // Built at run time so that this file does not match itself.
    ["..", "/shared"].concat()
}

fn tracked_files(root: &Path) -> Vec<PathBuf> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["ls-files", "-z"])
        .output();
    match out {
        Ok(o) if o.status.success() => o
            .stdout
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| root.join(String::from_utf8_lossy(p).as_ref()))
            .collect(),
        // Not a git checkout (a source tarball): walk the tree instead.
        _ => walk(root),
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        if name == "target" || name == ".git" {
            continue;
        }
        if p.is_dir() {
            files.extend(walk(&p));
        } else {
            files.push(p);
        }
    }
    files
}

#[test]
fn no_tracked_file_refers_to_a_folder_beside_the_clone() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let needle = needle();
    let files = tracked_files(root);
    assert!(
        files.len() > 50,
        "found the repository's files ({})",
        files.len()
    );
    let mut hits = Vec::new();
    for f in files {
        let Ok(bytes) = std::fs::read(&f) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        for (n, line) in text.lines().enumerate() {
            if line.contains(&needle) {
                hits.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        hits.is_empty(),
        "tracked files refer to {needle} (copy what they need into the repo):\n{}",
        hits.join("\n")
    );
}
