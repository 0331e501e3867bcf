//! Cassandra's classpath: the server jar and its runtime dependencies, copied from Maven
//! Central by Maven (`java/cassandra-runtime/pom.xml`) into a cache directory on first use and
//! reused afterwards (`~/.m2` keeps the downloads too).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The pom that names Cassandra's version and fetches its jars.
pub fn pom_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../java/cassandra-runtime/pom.xml")
}

/// The Cassandra version the pom pins (`<cassandra.version>`).
pub fn version() -> Result<String, String> {
    let pom = pom_path();
    let text = std::fs::read_to_string(&pom).map_err(|e| format!("cannot read {}: {e}", pom.display()))?;
    let start = text
        .find("<cassandra.version>")
        .ok_or_else(|| format!("{} has no <cassandra.version>", pom.display()))?
        + "<cassandra.version>".len();
    let end = text[start..]
        .find('<')
        .ok_or_else(|| format!("{}: <cassandra.version> is not closed", pom.display()))?;
    Ok(text[start..start + end].trim().to_string())
}

/// The cache directory for `version`: `$XDG_CACHE_HOME/replica-lb/cassandra-VERSION` or
/// `~/.cache/replica-lb/cassandra-VERSION`.
pub fn cache_dir(version: &str) -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("replica-lb").join(format!("cassandra-{version}"))
}

/// The directory holding every jar of Cassandra's classpath, fetched with Maven if it is not
/// cached yet (a marker file is written only after a complete copy). `progress` hears what
/// happens.
pub fn classpath_dir(progress: &mut dyn FnMut(&str)) -> Result<PathBuf, String> {
    let version = version()?;
    let dir = cache_dir(&version);
    let lib = dir.join("lib");
    let marker = dir.join("complete");
    if marker.exists() {
        return Ok(lib);
    }
    progress(&format!(
        "fetching Apache Cassandra {version} and its dependencies with Maven (first use; cached in {})",
        dir.display()
    ));
    let _ = std::fs::remove_dir_all(&lib);
    std::fs::create_dir_all(&lib).map_err(|e| format!("cannot create {}: {e}", lib.display()))?;
    let mut mvn = Command::new("mvn");
    mvn.args(["-B", "-q", "-f"])
        .arg(pom_path())
        .arg("dependency:copy-dependencies")
        .arg(format!("-DoutputDirectory={}", lib.display()));
    run_maven(mvn, &format!("fetch Cassandra {version}"))?;
    let jar = lib.join(format!("cassandra-all-{version}.jar"));
    if !jar.exists() {
        return Err(format!("mvn finished but {} is missing", jar.display()));
    }
    std::fs::write(&marker, b"").map_err(|e| format!("cannot write {}: {e}", marker.display()))?;
    Ok(lib)
}

/// Runs a Maven command to completion; on failure, one line naming `what` it was to do and
/// Maven's first ERROR line.
pub(crate) fn run_maven(mut mvn: Command, what: &str) -> Result<(), String> {
    let out = mvn
        .output()
        .map_err(|e| format!("cannot run mvn (Maven is needed to {what}): {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let line = text
        .lines()
        .find(|l| l.contains("ERROR"))
        .unwrap_or("no error line")
        .trim()
        .to_string();
    Err(format!("mvn could not {what}: {line}"))
}
