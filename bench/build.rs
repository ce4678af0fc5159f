//! Records the git commit lockbench is built from (read from `.git` directly, no `git` needed) as
//! `LOCKBENCH_GIT_COMMIT`, when the source is a git checkout.

use std::fs;
use std::path::Path;

fn main() {
    let git = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.git");
    let head_path = git.join("HEAD");
    println!("cargo:rerun-if-changed={}", head_path.display());
    let Ok(head) = fs::read_to_string(&head_path) else {
        return;
    };
    let head = head.trim();
    let commit = match head.strip_prefix("ref: ") {
        Some(reference) => {
            let ref_path = git.join(reference);
            println!("cargo:rerun-if-changed={}", ref_path.display());
            println!(
                "cargo:rerun-if-changed={}",
                git.join("packed-refs").display()
            );
            fs::read_to_string(&ref_path).ok().or_else(|| {
                let packed = fs::read_to_string(git.join("packed-refs")).ok()?;
                packed.lines().find_map(|line| {
                    let (hash, name) = line.split_once(' ')?;
                    (name == reference).then(|| hash.to_owned())
                })
            })
        }
        None => Some(head.to_owned()),
    };
    if let Some(commit) = commit {
        let commit = commit.trim();
        if commit.len() == 40 && commit.chars().all(|c| c.is_ascii_hexdigit()) {
            println!("cargo:rustc-env=LOCKBENCH_GIT_COMMIT={commit}");
        }
    }
}
