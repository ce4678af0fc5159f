//! A JVM row at another version: a copy of the adapters' `pom.xml` whose profile for the row names
//! that version of the artifact `[versions].maven` names, built by the adapters' `build.sh --row`
//! (the jars from Maven Central, the same adapter sources compiled against them, `run.args`).

use std::path::Path;
use std::process::Command;

use lockers::peer::catalog::PeerSpec;

use super::telling_line;

/// Installs `base` against `group:artifact` at `version` into `building`, whose `run.args` is then
/// made to name `dir` (where the install is moved); the jars it holds.
pub(super) fn install(
    base: &PeerSpec,
    (group, artifact): (&str, &str),
    version: &str,
    building: &Path,
    dir: &Path,
) -> Result<Vec<String>, String> {
    let coordinates = format!("{group}:{artifact}:{version}");
    let pom_path = base.folder().join("pom.xml");
    let pom = std::fs::read_to_string(&pom_path)
        .map_err(|e| format!("cannot read {} ({e})", pom_path.display()))?;
    let pom = with_version(&pom, &base.id, group, artifact, version)
        .map_err(|e| format!("{}: {e}", pom_path.display()))?;
    let pom_copy = building.join("pom.xml");
    std::fs::write(&pom_copy, pom)
        .map_err(|e| format!("cannot write {} ({e})", pom_copy.display()))?;
    let output = Command::new("bash")
        .arg(base.folder().join("build.sh"))
        .args(["--row", &base.id, "--pom"])
        .arg(&pom_copy)
        .arg("--out")
        .arg(building)
        .output()
        .map_err(|e| format!("cannot run bash ({e})"))?;
    match output.status.code() {
        Some(0) => {}
        Some(3) => {
            let line = telling_line(&output, &["Could not", "[ERROR]"], "");
            let missing = format!("{group}:{artifact}:jar:{version} was not found");
            return Err(if line.contains(&missing) {
                format!("Maven Central has no {coordinates}")
            } else {
                format!("mvn could not fetch {coordinates} from Maven Central ({line})")
            });
        }
        Some(4) => {
            let line = telling_line(&output, &["error:"], "symbol:");
            let line = line
                .rsplit_once('/')
                .map_or(line.as_str(), |(_, file)| file);
            return Err(format!(
                "{}'s adapter does not compile against {coordinates}, an API it uses is missing ({line})",
                base.id
            ));
        }
        _ => {
            let line = telling_line(&output, &["jvm adapters"], "");
            return Err(format!("the JVM build failed ({line})"));
        }
    }
    let args_path = building.join("run.args");
    let args = std::fs::read_to_string(&args_path)
        .map_err(|e| format!("cannot read {} ({e})", args_path.display()))?;
    let moved = args.replace(&building.display().to_string(), &dir.display().to_string());
    std::fs::write(&args_path, moved)
        .map_err(|e| format!("cannot write {} ({e})", args_path.display()))?;
    let mut jars: Vec<String> = std::fs::read_dir(building.join("lib"))
        .map_err(|e| format!("no jars in {} ({e})", building.display()))?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    jars.sort();
    Ok(jars)
}

/// `pom` with the version of `group:artifact` in profile `row` replaced by `version`; an error names
/// what is missing.
fn with_version(
    pom: &str,
    row: &str,
    group: &str,
    artifact: &str,
    version: &str,
) -> Result<String, String> {
    let id = format!("<id>{row}</id>");
    let profile_start = pom
        .match_indices("<profile>")
        .map(|(at, _)| at)
        .find(|&at| {
            let end = pom[at..].find("</profile>").map_or(pom.len(), |e| at + e);
            pom[at..end].contains(&id)
        })
        .ok_or_else(|| format!("no profile {row}"))?;
    let profile_end = pom[profile_start..]
        .find("</profile>")
        .map_or(pom.len(), |e| profile_start + e);
    let mut at = profile_start;
    while let Some(start) = pom[at..profile_end].find("<dependency>").map(|s| at + s) {
        let end = pom[start..profile_end]
            .find("</dependency>")
            .map_or(profile_end, |e| start + e);
        let dependency = &pom[start..end];
        if dependency.contains(&format!("<groupId>{group}</groupId>"))
            && dependency.contains(&format!("<artifactId>{artifact}</artifactId>"))
        {
            let open = dependency
                .find("<version>")
                .ok_or_else(|| format!("{group}:{artifact} in profile {row} has no <version>"))?;
            let close = dependency[open..]
                .find("</version>")
                .map(|c| open + c)
                .ok_or_else(|| format!("{group}:{artifact} in profile {row} has no </version>"))?;
            let (from, to) = (start + open + "<version>".len(), start + close);
            return Ok(format!("{}{version}{}", &pom[..from], &pom[to..]));
        }
        at = end;
    }
    Err(format!(
        "profile {row} has no dependency {group}:{artifact}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const POM: &str = "<project><profiles>\
        <profile><id>jvm-a</id><dependencies>\
        <dependency><groupId>org.x</groupId><artifactId>x</artifactId><version>1.0</version></dependency>\
        </dependencies></profile>\
        <profile><id>jvm-b</id><dependencies>\
        <dependency><groupId>org.y</groupId><artifactId>y</artifactId><version>2.0</version></dependency>\
        <dependency><groupId>org.x</groupId><artifactId>x</artifactId><version>1.0</version></dependency>\
        </dependencies></profile></profiles></project>";

    #[test]
    fn only_the_rows_profile_changes_and_only_that_artifact() {
        let pom = with_version(POM, "jvm-b", "org.x", "x", "0.9").unwrap_or_default();
        assert_eq!(pom.matches("<version>1.0</version>").count(), 1);
        assert_eq!(pom.matches("<version>0.9</version>").count(), 1);
        assert!(pom.contains("<version>2.0</version>"));
        assert!(pom.rfind("0.9") > pom.find("jvm-b"));
        assert_eq!(
            with_version(POM, "jvm-c", "org.x", "x", "0.9"),
            Err("no profile jvm-c".into())
        );
        assert_eq!(
            with_version(POM, "jvm-a", "org.y", "y", "0.9"),
            Err("profile jvm-a has no dependency org.y:y".into())
        );
    }
}
