//! A Python row at another version: a venv of its own (`.venv` in the install's folder) with
//! `package==version` from PyPI (by the pip of the adapters' venv when there is one), the other packages it brings held to the adapters'
//! `requirements.txt` pins where it takes them, and the shipped adapter script importing in it.

use std::path::Path;
use std::process::Command;

use lockers::peer::catalog::PeerSpec;

use super::telling_line;

/// Installs `package==version` for `base` into a venv in `building`; the venv's packages
/// (`pip freeze`).
pub(super) fn install(
    base: &PeerSpec,
    package: &str,
    version: &str,
    building: &Path,
) -> Result<Vec<String>, String> {
    let wanted = format!("{package}=={version}");
    let venv = building.join(".venv");
    let python = venv.join("bin/python");
    // The adapters' own venv lends its pip (`pip --python`), which spares the new venv its own (a
    // venv without pip is made in a fraction of a second, one with pip in seconds).
    let lender = base.folder().join(".venv/bin/python");
    let mut make_venv = Command::new("python3");
    make_venv.args(["-m", "venv"]);
    if lender.is_file() {
        make_venv.arg("--without-pip");
    }
    run(make_venv.arg(&venv), "python3 -m venv")?;
    let constraints = building.join("constraints.txt");
    std::fs::write(&constraints, other_pins(base, package))
        .map_err(|e| format!("cannot write {} ({e})", constraints.display()))?;
    let pip = |args: &[&str]| {
        let mut command = Command::new(if lender.is_file() { &lender } else { &python });
        command.args(["-m", "pip", "--disable-pip-version-check", "--no-input"]);
        command.arg("--python").arg(&python);
        command.args(args);
        command
    };
    let installed = pip(&["install", "-q", &wanted, "-c"])
        .arg(&constraints)
        .output();
    let installed = installed.map_err(|e| format!("cannot run pip ({e})"))?;
    if !installed.status.success() {
        let line = telling_line(&installed, &["No matching distribution", "ERROR"], "");
        return Err(if line.contains("No matching distribution") {
            format!("PyPI has no {wanted}")
        } else {
            format!("pip could not install {wanted} beside the adapter's other pins ({line})")
        });
    }
    // The adapter script imports its library and reads its version: an API it imports that this
    // version lacks shows here, before anything runs.
    let module = base
        .entry_file()
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let script = format!(
        "import sys; sys.path.insert(0, {:?}); import {module}",
        base.entry_file()
            .parent()
            .unwrap_or(Path::new("."))
            .display()
    );
    run(
        Command::new(&python).args(["-c", &script]),
        &format!(
            "{}'s adapter cannot use {wanted}: importing {module}",
            base.id
        ),
    )?;
    let frozen = pip(&["freeze"])
        .output()
        .map_err(|e| format!("cannot run pip ({e})"))?;
    Ok(String::from_utf8_lossy(&frozen.stdout)
        .lines()
        .map(str::to_owned)
        .collect())
}

/// Runs `command`; an error is `what` and the output's last line (Python's exception).
fn run(command: &mut Command, what: &str) -> Result<(), String> {
    let output = command
        .output()
        .map_err(|e| format!("{what}: cannot run it ({e})"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what} failed ({})",
            telling_line(&output, &[], "")
        ))
    }
}

/// The pins of `requirements.txt` beside `base`'s manifest but `package`'s own (as constraints: only
/// the packages the asked version brings are held to them).
fn other_pins(base: &PeerSpec, package: &str) -> String {
    let normal = |name: &str| name.trim().to_lowercase().replace(['_', '.'], "-");
    let requirements =
        std::fs::read_to_string(base.folder().join("requirements.txt")).unwrap_or_default();
    requirements
        .lines()
        .filter(|line| {
            let name = line
                .split(['=', '<', '>', '~', '!', ';', '[', ' '])
                .next()
                .unwrap_or_default();
            !line.trim_start().starts_with('#') && normal(name) != normal(package)
        })
        .map(|line| format!("{line}\n"))
        .collect()
}
