//! Records the git commit the workspace was built from (`RPC_GIT_COMMIT`,
//! read by `stamp::COMMIT`), so every JSON summary says which code
//! produced it. Outside a git checkout (a source tarball) it is "unknown".

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    // Rebuild when HEAD moves: HEAD itself (a checkout) and the ref it
    // names (a commit on the branch).
    if let Some(head) = git(&["rev-parse", "--git-path", "HEAD"]) {
        println!("cargo:rerun-if-changed={head}");
    }
    if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
        if let Some(p) = git(&["rev-parse", "--git-path", &r]) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=RPC_GIT_COMMIT={commit}");
}
